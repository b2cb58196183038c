//! `strata completions SHELL`: print the shell completion script, generated
//! from the command line's own definitions (clap_complete).

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::Cli;
use crate::CliError;
use crate::output::print_bytes;

/// Arguments of `strata completions`.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for. Bash: `strata completions bash >
    /// ~/.local/share/bash-completion/completions/strata`; zsh: into a
    /// directory of `$fpath` as `_strata`; fish: into
    /// `~/.config/fish/completions/strata.fish`.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

pub(super) fn run(args: CompletionsArgs) -> Result<(), CliError> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "strata", &mut script);
    print_bytes(&script)
}
