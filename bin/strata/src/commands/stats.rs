//! `strata stats --datadir DIR [--live] [--json]`: block, root, the memory
//! tier (unflushed blocks) and the journal, per-domain tiers (memory keys,
//! db entries, files with step ranges, entries and sizes), branch-cache
//! counters, and with `--live` the raw bytes of the live state beside the
//! datadir's bytes on disk.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;
use strata_storage::{DbStats, HistoryStats, LiveSize};

use super::datadir::{head_text, open_for_reading};
use crate::CliError;
use crate::output::{print_json, print_text};

mod json;

/// Arguments of `strata stats`.
#[derive(Debug, Clone, Args)]
pub struct StatsArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
    /// Also count the live keys and their raw bytes per domain (a full scan
    /// of every tier) and compare them with the datadir's size on disk.
    #[arg(long)]
    pub live: bool,
    /// Print one JSON object with the same figures (sizes in bytes, as
    /// numbers; the root as 0x hex).
    #[arg(long)]
    pub json: bool,
}

/// `--live`: the live state's raw bytes per domain and the datadir's bytes on disk.
struct Live {
    sizes: Vec<LiveSize>,
    on_disk: u64,
}

impl Live {
    /// Key and value bytes of every domain's live state.
    fn raw_bytes(&self) -> u64 {
        self.sizes.iter().map(|s| s.key_bytes + s.value_bytes).sum()
    }

    /// Bytes on disk per raw byte.
    fn ratio(&self) -> f64 {
        self.on_disk as f64 / self.raw_bytes().max(1) as f64
    }
}

pub(super) fn run(args: StatsArgs) -> Result<(), CliError> {
    let db = open_for_reading(&args.datadir)?;
    let stats = db.stats().map_err(CliError::storage(&args.datadir))?;
    let history = db
        .history_stats()
        .map_err(CliError::storage(&args.datadir))?;
    let live = if args.live {
        let sizes = db.live_sizes().map_err(CliError::storage(&args.datadir))?;
        let on_disk = bytes_under(&args.datadir).map_err(CliError::file(&args.datadir))?;
        Some(Live { sizes, on_disk })
    } else {
        None
    };
    if args.json {
        print_json(&json::StatsJson::new(
            &stats,
            history.as_ref(),
            live.as_ref(),
        ))
    } else {
        let mut out = text(&stats, live.as_ref());
        if let Some(history) = &history {
            // Writing to a String cannot fail.
            let _ = write_history(&mut out, history);
        }
        print_text(&out)
    }
}

/// The history's lines of the text report.
fn write_history(out: &mut String, history: &HistoryStats) -> std::fmt::Result {
    let from = history
        .from
        .map_or("no block flushed yet".to_string(), |b| {
            format!("from block {b}")
        });
    writeln!(out, "history: keeps {}, {from}", history.retention)?;
    writeln!(
        out,
        "{:<11} {:>6} {:>12} {:>14}",
        "domain", "files", "entries", "bytes"
    )?;
    for domain in &history.domains {
        writeln!(
            out,
            "{:<11} {:>6} {:>12} {:>14}",
            domain.domain.name(),
            domain.files,
            domain.entries,
            domain.bytes
        )?;
    }
    Ok(())
}

/// The text report.
fn text(stats: &DbStats, live: Option<&Live>) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_text(&mut out, stats, live);
    out
}

fn write_text(out: &mut String, stats: &DbStats, live: Option<&Live>) -> std::fmt::Result {
    writeln!(out, "head {}", head_text(stats.last_block, stats.root))?;
    writeln!(out, "step size {} blocks", stats.step_size)?;
    writeln!(
        out,
        "memory tier: {}, {} bytes of keys and values",
        blocks_text(stats.memory.blocks),
        stats.memory.bytes
    )?;
    writeln!(
        out,
        "journal: {}, {} bytes on disk",
        blocks_text(stats.journal.blocks),
        stats.journal.bytes
    )?;
    writeln!(
        out,
        "{:<11} {:>11} {:>11} {:>6} {:>12} {:>14}",
        "domain", "memory keys", "db entries", "files", "file entries", "file bytes"
    )?;
    for domain in &stats.domains {
        writeln!(
            out,
            "{:<11} {:>11} {:>11} {:>6} {:>12} {:>14}",
            domain.domain.name(),
            domain.memory_entries,
            domain.db_entries,
            domain.files.len(),
            domain.files.iter().map(|f| f.entries).sum::<u64>(),
            domain.files.iter().map(|f| f.bytes).sum::<u64>()
        )?;
    }
    for domain in &stats.domains {
        for file in &domain.files {
            writeln!(
                out,
                "  file {} ({} steps {}..{}): {} entries, {} bytes",
                file.name,
                domain.domain.name(),
                file.from_step,
                file.to_step,
                file.entries,
                file.bytes
            )?;
        }
    }
    let files = stats.domains.iter().flat_map(|d| &d.files);
    writeln!(
        out,
        "files total {}, {} bytes",
        files.clone().count(),
        files.map(|f| f.bytes).sum::<u64>()
    )?;
    let cache = &stats.cache;
    writeln!(
        out,
        "branch cache: {} hits, {} misses ({:.1}% hit rate), {} inserts, {} evictions, {} entries, {} of {} bytes",
        cache.hits,
        cache.misses,
        cache.hit_rate() * 100.0,
        cache.inserts,
        cache.evictions,
        cache.entries,
        cache.weight_bytes,
        cache.capacity_bytes
    )?;
    if let Some(live) = live {
        writeln!(
            out,
            "{:<11} {:>11} {:>14} {:>14}",
            "live", "keys", "key bytes", "value bytes"
        )?;
        for size in &live.sizes {
            writeln!(
                out,
                "{:<11} {:>11} {:>14} {:>14}",
                size.domain.name(),
                size.keys,
                size.key_bytes,
                size.value_bytes
            )?;
        }
        writeln!(
            out,
            "live raw {} bytes; datadir {} bytes on disk ({:.2}x)",
            live.raw_bytes(),
            live.on_disk,
            live.ratio()
        )?;
    }
    Ok(())
}

/// "blocks A..=B" (how many), or "no blocks".
fn blocks_text(blocks: Option<(u64, u64)>) -> String {
    match blocks {
        Some((first, last)) => format!("blocks {first}..={last} ({})", last - first + 1),
        None => "no blocks".into(),
    }
}

/// The bytes of every file under `dir`.
fn bytes_under(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            bytes_under(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}
