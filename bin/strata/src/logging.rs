//! Logs: `tracing` events of the CLI and the storage engine go to stderr,
//! filtered by `RUST_LOG` (default `info`), as text or JSON lines. Stdout
//! stays the commands' own output.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;

use crate::CliError;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per event (timestamp, level, target, fields, spans).
    Json,
}

/// Installs the global subscriber: `RUST_LOG` directives (default `info`),
/// stderr, `format`. An invalid `RUST_LOG` is an error naming it; a
/// subscriber already installed (a test harness) is left in place.
pub fn init(format: LogFormat) -> Result<(), CliError> {
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::INFO.into())
        .from_env()
        .map_err(|error| CliError::LogFilter {
            filter: std::env::var(EnvFilter::DEFAULT_ENV).unwrap_or_default(),
            reason: error.to_string(),
        })?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder.json().with_current_span(true).try_init(),
    };
    // Only fails when a global subscriber exists already: keep that one.
    drop(installed);
    Ok(())
}
