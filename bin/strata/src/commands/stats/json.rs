//! `strata stats --json`: the figures of the text report as one typed JSON
//! document (sizes and counts as numbers, the root as 0x hex).

use alloy_primitives::B256;
use serde::Serialize;

use crate::commands::cache_json::CacheJson;
use strata_storage::{DbStats, DomainStats, HistoryStats, LiveSize};

use super::Live;

/// The whole document.
#[derive(Debug, Serialize)]
pub(super) struct StatsJson {
    /// The last committed block (`None` before the genesis).
    block: Option<u64>,
    /// Its state root.
    root: B256,
    /// Blocks per step.
    step_size: u64,
    /// Committed blocks not yet flushed to redb.
    memory: BlocksJson,
    /// The block journal on disk.
    journal: BlocksJson,
    /// Per domain, in the order account, storage, code, commitment.
    domains: Vec<DomainJson>,
    /// Immutable files of every domain.
    files_total: usize,
    /// Their bytes.
    file_bytes_total: u64,
    /// Branch-cache counters of this (read-only) handle.
    branch_cache: CacheJson,
    /// With `--live`: the live state against the bytes on disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    live: Option<LiveJson>,
    /// What the datadir's history holds (absent when it keeps none).
    #[serde(skip_serializing_if = "Option::is_none")]
    history: Option<HistoryJson>,
}

/// The datadir's history.
#[derive(Debug, Serialize)]
struct HistoryJson {
    /// `off`, `full` or "N blocks".
    retention: String,
    /// The oldest block it rebuilds (`None` before the first flush with history).
    from: Option<u64>,
    /// Per domain: history files, entries and bytes on disk.
    domains: Vec<HistoryDomainJson>,
}

#[derive(Debug, Serialize)]
struct HistoryDomainJson {
    domain: &'static str,
    files: u64,
    entries: u64,
    bytes: u64,
}

impl HistoryJson {
    fn new(history: &HistoryStats) -> HistoryJson {
        HistoryJson {
            retention: history.retention.to_string(),
            from: history.from,
            domains: history
                .domains
                .iter()
                .map(|d| HistoryDomainJson {
                    domain: d.domain.name(),
                    files: d.files,
                    entries: d.entries,
                    bytes: d.bytes,
                })
                .collect(),
        }
    }
}

/// A tier that holds a range of blocks.
#[derive(Debug, Serialize)]
struct BlocksJson {
    /// Oldest block held.
    first_block: Option<u64>,
    /// Newest block held.
    last_block: Option<u64>,
    /// Bytes (memory tier: raw keys and values; journal: on disk).
    bytes: u64,
}

/// One domain's tiers.
#[derive(Debug, Serialize)]
struct DomainJson {
    domain: &'static str,
    memory_keys: u64,
    db_entries: u64,
    file_entries: u64,
    file_bytes: u64,
    /// Live files, newest first.
    files: Vec<FileJson>,
}

/// One immutable file.
#[derive(Debug, Serialize)]
struct FileJson {
    name: String,
    from_step: u64,
    /// Exclusive.
    to_step: u64,
    entries: u64,
    bytes: u64,
}

#[derive(Debug, Serialize)]
struct LiveJson {
    domains: Vec<LiveDomainJson>,
    /// Key and value bytes of every live entry.
    raw_bytes: u64,
    /// Bytes of every file under the datadir.
    disk_bytes: u64,
    /// `disk_bytes / raw_bytes`.
    disk_per_raw_byte: f64,
}

#[derive(Debug, Serialize)]
struct LiveDomainJson {
    domain: &'static str,
    keys: u64,
    key_bytes: u64,
    value_bytes: u64,
}

impl StatsJson {
    /// The document for `stats` (and `live`, with `--live`).
    pub(super) fn new(
        stats: &DbStats,
        history: Option<&HistoryStats>,
        live: Option<&Live>,
    ) -> StatsJson {
        let domains: Vec<DomainJson> = stats.domains.iter().map(DomainJson::new).collect();
        StatsJson {
            block: stats.last_block,
            root: stats.root,
            step_size: stats.step_size,
            memory: BlocksJson::new(stats.memory.blocks, stats.memory.bytes),
            journal: BlocksJson::new(stats.journal.blocks, stats.journal.bytes),
            files_total: domains.iter().map(|d| d.files.len()).sum(),
            file_bytes_total: domains.iter().map(|d| d.file_bytes).sum(),
            domains,
            branch_cache: CacheJson::from(&stats.cache),
            live: live.map(LiveJson::new),
            history: history.map(HistoryJson::new),
        }
    }
}

impl BlocksJson {
    fn new(blocks: Option<(u64, u64)>, bytes: u64) -> BlocksJson {
        BlocksJson {
            first_block: blocks.map(|(first, _)| first),
            last_block: blocks.map(|(_, last)| last),
            bytes,
        }
    }
}

impl DomainJson {
    fn new(domain: &DomainStats) -> DomainJson {
        let files: Vec<FileJson> = domain
            .files
            .iter()
            .map(|file| FileJson {
                name: file.name.clone(),
                from_step: file.from_step,
                to_step: file.to_step,
                entries: file.entries,
                bytes: file.bytes,
            })
            .collect();
        DomainJson {
            domain: domain.domain.name(),
            memory_keys: domain.memory_entries,
            db_entries: domain.db_entries,
            file_entries: files.iter().map(|f| f.entries).sum(),
            file_bytes: files.iter().map(|f| f.bytes).sum(),
            files,
        }
    }
}

impl LiveJson {
    fn new(live: &Live) -> LiveJson {
        LiveJson {
            domains: live.sizes.iter().map(LiveDomainJson::new).collect(),
            raw_bytes: live.raw_bytes(),
            disk_bytes: live.on_disk,
            disk_per_raw_byte: live.ratio(),
        }
    }
}

impl LiveDomainJson {
    fn new(size: &LiveSize) -> LiveDomainJson {
        LiveDomainJson {
            domain: size.domain.name(),
            keys: size.keys,
            key_bytes: size.key_bytes,
            value_bytes: size.value_bytes,
        }
    }
}
