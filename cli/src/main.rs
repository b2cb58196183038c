//! The `strata` command line: parses arguments, runs the command, prints
//! errors to stderr and exits non-zero on failure.

use std::process::ExitCode;

use clap::Parser;
use strata_cli::commands::{Cli, run};

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
        Err(error) => {
            eprintln!("strata: error: {error}");
            ExitCode::FAILURE
        }
    }
}
