//! The command line's error type: every failure of a command, with the file
//! it concerns.

use std::path::PathBuf;

use strata_storage::genesis::GenesisError;

use crate::geth::GethError;
use crate::model::VerifyError;
use crate::trace::TraceError;

/// Why a `strata` command failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Writing to standard output failed.
    #[error("cannot write the output: {0}")]
    Output(#[source] std::io::Error),
    /// A file is not valid JSON.
    #[error("{path}: invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A trace file is malformed.
    #[error("{path}: {source}")]
    Trace {
        /// The trace file.
        path: PathBuf,
        /// What is wrong, with the line.
        #[source]
        source: Box<TraceError>,
    },
    /// A genesis file is malformed.
    #[error("{path}: {source}")]
    Genesis {
        /// The genesis file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: Box<GenesisError>,
    },
    /// geth tracer output could not be imported.
    #[error("{path}: {source}")]
    Geth {
        /// The input file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: Box<GethError>,
    },
    /// A trace does not agree with the model (reads or roots).
    #[error("{path}: {source}")]
    Verify {
        /// The trace file.
        path: PathBuf,
        /// The first disagreement.
        #[source]
        source: Box<VerifyError>,
    },
    /// Bad or missing arguments that clap cannot express.
    #[error("{0}")]
    Usage(String),
    /// The command is declared but not connected to the storage engine yet.
    #[error("`strata {command}` is not wired yet: it needs the StateDb facade of strata-storage")]
    NotWired {
        /// The command name.
        command: &'static str,
    },
}

impl CliError {
    /// A [`CliError::File`] for `path`.
    pub fn file(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::File { path, source }
    }
}

/// Read and parse a JSON file, with the line/column of a syntax error.
pub fn read_json(path: &std::path::Path) -> Result<serde_json::Value, CliError> {
    let text = std::fs::read_to_string(path).map_err(CliError::file(path))?;
    serde_json::from_str(&text).map_err(|e| CliError::Json {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}
