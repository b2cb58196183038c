//! `strata stats --datadir DIR`: block, root, per-domain tiers (db entries,
//! files with step ranges, entries and sizes) and branch-cache counters.

use std::path::PathBuf;

use clap::Args;

use super::datadir::{head_text, open_for_reading};
use crate::CliError;

/// Arguments of `strata stats`.
#[derive(Debug, Clone, Args)]
pub struct StatsArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
}

pub(super) fn run(args: StatsArgs) -> Result<(), CliError> {
    let db = open_for_reading(&args.datadir)?;
    let stats = db.stats().map_err(CliError::storage(&args.datadir))?;
    println!("head {}", head_text(stats.last_block, stats.root));
    println!("step size {} blocks", stats.step_size);
    println!(
        "{:<11} {:>11} {:>6} {:>12} {:>14}",
        "domain", "db entries", "files", "file entries", "file bytes"
    );
    let (mut total_files, mut total_bytes) = (0usize, 0u64);
    for domain in &stats.domains {
        let entries: u64 = domain.files.iter().map(|f| f.entries).sum();
        let bytes: u64 = domain.files.iter().map(|f| f.bytes).sum();
        total_files += domain.files.len();
        total_bytes += bytes;
        println!(
            "{:<11} {:>11} {:>6} {:>12} {:>14}",
            domain.domain.name(),
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
    Ok(())
}
