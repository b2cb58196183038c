//! The `strata` command line: parses arguments, runs the command, prints
//! errors to stderr and exits non-zero on failure.

use std::process::ExitCode;

use clap::Parser;
use strata_cli::commands::{Cli, run};
use strata_cli::output::is_closed_output;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(error) = strata_cli::logging::init(cli.log_format) {
        eprintln!("strata: error: {error}");
        return ExitCode::FAILURE;
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed stdout (`strata … | head`): the reader wanted no more,
        // which is no failure.
        Err(error) if is_closed_output(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("strata: error: {error}");
            ExitCode::FAILURE
        }
    }
}
