//! `strata stats --datadir DIR [--live]`: block, root, the memory tier
//! (unflushed blocks) and the journal, per-domain tiers (memory keys, db
//! entries, files with step ranges, entries and sizes), branch-cache
//! counters, and with `--live` the raw bytes of the live state beside the
//! datadir's bytes on disk.

use std::path::{Path, PathBuf};

use clap::Args;

use super::datadir::{head_text, open_for_reading};
use crate::CliError;

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
}

pub(super) fn run(args: StatsArgs) -> Result<(), CliError> {
    let db = open_for_reading(&args.datadir)?;
    let stats = db.stats().map_err(CliError::storage(&args.datadir))?;
    println!("head {}", head_text(stats.last_block, stats.root));
    println!("step size {} blocks", stats.step_size);
    println!(
        "memory tier: {}, {} bytes of keys and values",
        blocks_text(stats.memory.blocks),
        stats.memory.bytes
    );
    println!(
        "journal: {}, {} bytes on disk",
        blocks_text(stats.journal.blocks),
        stats.journal.bytes
    );
    println!(
        "{:<11} {:>11} {:>11} {:>6} {:>12} {:>14}",
        "domain", "memory keys", "db entries", "files", "file entries", "file bytes"
    );
    let (mut total_files, mut total_bytes) = (0usize, 0u64);
    for domain in &stats.domains {
        let entries: u64 = domain.files.iter().map(|f| f.entries).sum();
        let bytes: u64 = domain.files.iter().map(|f| f.bytes).sum();
        total_files += domain.files.len();
        total_bytes += bytes;
        println!(
            "{:<11} {:>11} {:>11} {:>6} {:>12} {:>14}",
            domain.domain.name(),
            domain.memory_entries,
            domain.db_entries,
            domain.files.len(),
            entries,
            bytes
        );
    }
    for domain in &stats.domains {
        for file in &domain.files {
            println!(
                "  file {} ({} steps {}..{}): {} entries, {} bytes",
                file.name,
                domain.domain.name(),
                file.from_step,
                file.to_step,
                file.entries,
                file.bytes
            );
        }
    }
    println!("files total {total_files}, {total_bytes} bytes");
    let cache = &stats.cache;
    println!(
        "branch cache: {} hits, {} misses ({:.1}% hit rate), {} inserts, {} evictions, {} entries, {} of {} bytes",
        cache.hits,
        cache.misses,
        cache.hit_rate() * 100.0,
        cache.inserts,
        cache.evictions,
        cache.entries,
        cache.weight_bytes,
        cache.capacity_bytes
    );
    if args.live {
        print_live(&db, &args.datadir)?;
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

/// The live state's raw bytes per domain beside the datadir's bytes on disk.
fn print_live(db: &strata_storage::ReadOnlyStateDb, datadir: &Path) -> Result<(), CliError> {
    let sizes = db.live_sizes().map_err(CliError::storage(datadir))?;
    println!(
        "{:<11} {:>11} {:>14} {:>14}",
        "live", "keys", "key bytes", "value bytes"
    );
    let mut raw = 0u64;
    for size in &sizes {
        raw += size.key_bytes + size.value_bytes;
        println!(
            "{:<11} {:>11} {:>14} {:>14}",
            size.domain.name(),
            size.keys,
            size.key_bytes,
            size.value_bytes
        );
    }
    let on_disk = bytes_under(datadir).map_err(|source| CliError::File {
        path: datadir.to_owned(),
        source,
    })?;
    println!(
        "live raw {raw} bytes; datadir {on_disk} bytes on disk ({:.2}x)",
        on_disk as f64 / raw.max(1) as f64
    );
    Ok(())
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
