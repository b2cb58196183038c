//! `strata man [--out DIR]`: the manual page, rendered from the command
//! line's own definitions (clap_mangen): `strata.1` on standard output, or
//! with `--out` written to DIR beside one page per subcommand
//! (`strata-replay.1`, `strata-get-account.1`, …).

use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory};
use clap_mangen::Man;

use super::Cli;
use crate::CliError;
use crate::output::print_bytes;
use crate::output_file::{OutputFile, Protected};

/// Arguments of `strata man`.
#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// Write `strata.1` and a page per subcommand into this directory
    /// (created if missing) instead of printing `strata.1`.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub(super) fn run(args: ManArgs) -> Result<(), CliError> {
    let mut command = Cli::command().disable_help_subcommand(true);
    // Gives each subcommand its display name ("strata-replay").
    command.build();
    match args.out {
        None => print_bytes(&render(&Man::new(command))?),
        Some(dir) => {
            std::fs::create_dir_all(&dir).map_err(CliError::file(&dir))?;
            let mut written = 0;
            write_pages(&command, &dir, &mut written)?;
            eprintln!("man: wrote {written} pages to {}", dir.display());
            Ok(())
        }
    }
}

/// Writes the page of `command` and of each of its subcommands, recursively.
fn write_pages(command: &clap::Command, dir: &Path, written: &mut usize) -> Result<(), CliError> {
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    let man = Man::new(command.clone());
    let path = dir.join(man.get_filename());
    OutputFile::create("--out", &path, &mut Protected::new())?.write_whole(&render(&man)?)?;
    *written += 1;
    Ok(())
}

/// The roff text of one page.
fn render(man: &Man) -> Result<Vec<u8>, CliError> {
    let mut page = Vec::new();
    // Rendering into memory fails only on a bug in the renderer.
    man.render(&mut page).map_err(CliError::Output)?;
    Ok(page)
}
