//! `strata check-trace TRACE [--genesis FILE]`: replay a trace through the
//! independent in-memory model (no storage engine), checking that every
//! read holds the pre-block value and every stated root is the model's.

use std::io::BufReader;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use strata_storage::genesis::parse_alloc_json;
use strata_trace::model::verify_trace;

use crate::CliError;
use crate::output::print_text;

/// Arguments of `strata check-trace`.
#[derive(Debug, Clone, Args)]
pub struct CheckTraceArgs {
    /// The trace (JSON Lines, see book/src/reference/formats/trace.md).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Genesis file, when the trace has no genesis line.
    #[arg(long, value_name = "FILE")]
    pub genesis: Option<PathBuf>,
}

pub(super) fn run(args: CheckTraceArgs) -> Result<(), CliError> {
    let start = Instant::now();
    let genesis = match &args.genesis {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(CliError::file(path))?;
            Some(parse_alloc_json(&text).map_err(|source| CliError::Genesis {
                path: path.clone(),
                source: Box::new(source),
            })?)
        }
        None => None,
    };
    let file = std::fs::File::open(&args.trace).map_err(CliError::file(&args.trace))?;
    let report = verify_trace(BufReader::new(file), genesis.as_ref()).map_err(|source| {
        CliError::Verify {
            path: args.trace.clone(),
            source: Box::new(source),
        }
    })?;
    print_text(&format!(
        "{}: ok: {} blocks, {} roots and {} account/slot reads checked; final root {}; model roots {:.2?}, total {:.2?}",
        args.trace.display(),
        report.blocks,
        report.roots_checked,
        report.reads_checked,
        report.final_root,
        report.root_time,
        start.elapsed()
    ))
}
