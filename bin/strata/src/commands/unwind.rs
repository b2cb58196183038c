//! `strata unwind --datadir DIR --to N`: restore block N, one of the last
//! blocks whose unwind data the datadir keeps (128 by default), and print
//! the new head as `N 0x…`. It also takes back a block that an older
//! version committed although its root did not match the trace.

use std::path::PathBuf;

use clap::Args;
use strata_storage::Regime;

use super::datadir::{head_line, head_text, inspect_options, open_existing, open_for_reading};
use crate::CliError;
use crate::output::print_text;

/// Arguments of `strata unwind`.
#[derive(Debug, Clone, Args)]
pub struct UnwindArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
    /// The block to restore (at most `unwind_depth` blocks below the head).
    #[arg(long, value_name = "N")]
    pub to: u64,
}

pub(super) fn run(args: UnwindArgs) -> Result<(), CliError> {
    if let Some(head) = refused_or_done(&args)? {
        return print_text(&format!("{head}\n"));
    }
    let db = open_existing(&args.datadir)?;
    let Some(last) = db.last_block() else {
        return Err(nothing_to_unwind(&args.datadir));
    };
    db.unwind_to(args.to)
        .map_err(CliError::storage(&args.datadir))?;
    if args.to < last {
        eprintln!(
            "unwound {} from block {last} to block {}",
            args.datadir.display(),
            args.to
        );
    }
    let head = head_line(&db.reader(Regime::Exec));
    db.close().map_err(CliError::storage(&args.datadir))?;
    print_text(&format!("{head}\n"))
}

/// What a read-only open (nothing changes) tells before the writer's open,
/// which rewrites bytes of the database: an error for a datadir without
/// blocks or a target that is not one of the last `unwind_depth` blocks,
/// the head line when the target is the head already (nothing to do), or
/// `None` when the writer must decide (the window's exact start depends on
/// the journal the writer reads). A datadir the read-only open cannot read
/// is left to the writer's open, which says why or recovers it.
fn refused_or_done(args: &UnwindArgs) -> Result<Option<String>, CliError> {
    let Ok(db) = open_for_reading(&args.datadir) else {
        return Ok(None);
    };
    let (Ok(last), Ok(root)) = (db.last_block(), db.root()) else {
        return Ok(None);
    };
    let Some(last) = last else {
        return Err(nothing_to_unwind(&args.datadir));
    };
    let depth = inspect_options().unwind_depth;
    if args.to == last {
        return Ok(Some(head_text(Some(last), root)));
    }
    if args.to > last || args.to < last.saturating_sub(depth) {
        return Err(CliError::UnwindOutOfReach {
            datadir: args.datadir.clone(),
            target: args.to,
            head: last,
            depth,
        });
    }
    Ok(None)
}

/// The error for a datadir that holds no blocks.
fn nothing_to_unwind(datadir: &std::path::Path) -> CliError {
    CliError::NothingToUnwind {
        datadir: datadir.to_owned(),
    }
}
