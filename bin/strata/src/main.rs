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
    end_quietly_on_closed_pipe();
    let cli = Cli::parse();
    if let Err(error) = strata_cli::logging::init(cli.log_format) {
        eprintln!("strata: error: {error}");
        return ExitCode::FAILURE;
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // Where SIGPIPE does not exist (Windows) a closed stdout arrives
        // here as an error: the reader wanted no more, which is no failure.
        Err(error) if is_closed_output(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("strata: error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Restores SIGPIPE's default action, so that `strata … | head -1` ends the
/// way `cat` or `seq` do when their reader goes away: killed by SIGPIPE,
/// silently (a shell prints nothing for it). Rust's runtime ignores SIGPIPE,
/// which turns the write into an EPIPE error and `println!` into a panic.
///
/// Writes to sockets are not affected: std sends with `MSG_NOSIGNAL`, so a
/// scraper that hangs up on the `--metrics` endpoint is still an error on
/// that connection, not the end of the replay.
#[cfg(unix)]
#[allow(
    unsafe_code,
    reason = "libc::signal is the one way to reset a signal's disposition"
)]
fn end_quietly_on_closed_pipe() {
    // SAFETY: called first thing in `main`, before any thread of ours
    // exists; SIG_DFL installs no handler (so no async-signal-safety
    // question arises) and SIGPIPE is a valid signal number, so `signal`
    // cannot fail.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// No SIGPIPE here: a closed stdout is an error [`is_closed_output`] accepts.
#[cfg(not(unix))]
fn end_quietly_on_closed_pipe() {}
