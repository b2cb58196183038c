//! The book's CLI reference (`book/src/reference/cli.md`), generated from
//! the command line's own definitions, so it cannot drift from them: a test
//! compares the file with [`markdown`] and rewrites it when asked
//! (`STRATA_WRITE_REFERENCE=1`).

use std::fmt::Write as _;

use clap::CommandFactory;

use super::Cli;

/// Columns the help text is wrapped at (fixed, whatever the terminal).
const WIDTH: usize = 100;

/// The reference page: every command's `--help`, in the order `strata
/// --help` lists them.
pub fn markdown() -> String {
    let mut command = Cli::command()
        .term_width(WIDTH)
        .disable_help_subcommand(true);
    command.build();
    let mut page = String::from(
        "# CLI reference\n\n\
         Generated from `strata`'s own definitions by \
         `STRATA_WRITE_REFERENCE=1 cargo test -p strata-cli --test suite reference`; \
         a test fails when this page and the binary differ. The prose of each command \
         is in [Commands in detail](commands.md).\n\n",
    );
    section(&mut page, &mut command, "strata");
    let names: Vec<String> = command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .map(|sub| sub.get_name().to_owned())
        .collect();
    for name in names {
        let sub = command
            .find_subcommand_mut(&name)
            .expect("listed by get_subcommands");
        section(&mut page, sub, &format!("strata {name}"));
    }
    page
}

/// One command's heading and help.
fn section(page: &mut String, command: &mut clap::Command, title: &str) {
    let help = command.render_long_help().to_string();
    let help: Vec<&str> = help.lines().map(str::trim_end).collect();
    // Writing to a String cannot fail.
    let _ = write!(
        page,
        "## `{title}`\n\n```text\n{}\n```\n\n",
        help.join("\n").trim()
    );
}
