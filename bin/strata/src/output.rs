//! Standard output of the commands: written whole and checked, so a failed
//! write is a [`CliError::Output`] rather than `println!`'s panic, and
//! `--json` documents serialized from typed reports.

use std::fmt::Write as _;
use std::io::Write;

use serde::Serialize;

use crate::CliError;

/// Writes `text` to standard output and flushes it.
pub fn print_text(text: &str) -> Result<(), CliError> {
    print_bytes(text.as_bytes())
}

/// Writes `bytes` to standard output and flushes it.
pub fn print_bytes(bytes: &[u8]) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(CliError::Output)
}

/// Writes `value` to standard output as one pretty-printed JSON document
/// followed by a newline.
pub fn print_json<T: Serialize>(value: &T) -> Result<(), CliError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| CliError::Output(e.into()))?;
    text.push('\n');
    print_text(&text)
}

/// Text for standard output, gathered line by line and then written at
/// once with [`Lines::print`]: the commands' one way to print a report, so
/// that a full or failing stdout is the error [`CliError::Output`] (exit 1)
/// and never `println!`'s panic.
#[derive(Debug, Default)]
pub struct Lines(String);

impl Lines {
    /// Appends `text` and a newline.
    pub fn line(&mut self, text: impl std::fmt::Display) {
        // Writing to a String cannot fail.
        let _ = writeln!(self.0, "{text}");
    }

    /// The text gathered so far.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Writes the text gathered to standard output and flushes it.
    pub fn print(self) -> Result<(), CliError> {
        print_text(&self.0)
    }
}

/// Whether `error` is standard output closed by its reader (`strata … |
/// head`): the output was not wanted any more, which is not a failure.
pub fn is_closed_output(error: &CliError) -> bool {
    matches!(error, CliError::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
}
