//! [`DbStats`]: the sizes of a store's tiers, taken from one snapshot (of a
//! [`crate::StateDb`] or a [`crate::ReadOnlyStateDb`]).

use alloy_primitives::B256;
use strata_cache::CacheStats;

use crate::error::Result;
use crate::snapshot::Snapshot;
use strata_types::domain::Domain;

/// Sizes of the tiers of a store.
#[derive(Clone, Debug)]
pub struct DbStats {
    /// The last committed block.
    pub last_block: Option<u64>,
    /// Its root.
    pub root: B256,
    /// Blocks per step.
    pub step_size: u64,
    /// Per domain.
    pub domains: Vec<DomainStats>,
    /// Branch cache counters.
    pub cache: CacheStats,
    /// The committed blocks not yet flushed to redb.
    pub memory: MemoryStats,
    /// The block journal on disk.
    pub journal: JournalStats,
}

/// The memory tier: committed blocks not yet flushed to redb.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Oldest and newest block it holds.
    pub blocks: Option<(u64, u64)>,
    /// Raw bytes of the keys and values it holds.
    pub bytes: u64,
    /// Blocks whose undo data is kept for reads at recent blocks
    /// ([`crate::StateDb::reader_at`]).
    pub history_blocks: usize,
    /// Raw bytes of that undo data's keys and values.
    pub history_bytes: u64,
}

/// The journal: each committed block's record, kept until flushed and out
/// of the unwind window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JournalStats {
    /// Oldest and newest block it holds.
    pub blocks: Option<(u64, u64)>,
    /// Bytes of its segment files.
    pub bytes: u64,
}

/// Sizes of one domain's tiers.
#[derive(Clone, Debug)]
pub struct DomainStats {
    /// The domain.
    pub domain: Domain,
    /// Keys in the memory tier (written by unflushed blocks).
    pub memory_entries: u64,
    /// Entries in redb.
    pub db_entries: u64,
    /// Live files, newest first.
    pub files: Vec<FileStats>,
}

/// One immutable file.
#[derive(Clone, Debug)]
pub struct FileStats {
    /// File name.
    pub name: String,
    /// First step covered.
    pub from_step: u64,
    /// End of the step range (exclusive).
    pub to_step: u64,
    /// Keys held (tombstones included).
    pub entries: u64,
    /// Size on disk.
    pub bytes: u64,
}

/// The sizes of the tiers `snapshot` shows.
pub fn collect(
    snapshot: &Snapshot,
    step_size: u64,
    cache: CacheStats,
    journal: JournalStats,
) -> Result<DbStats> {
    let mut domains = Vec::new();
    for domain in Domain::ALL {
        let files = snapshot.files.files(domain);
        domains.push(DomainStats {
            domain,
            memory_entries: snapshot.memory.len(domain) as u64,
            db_entries: snapshot.db_len(domain)?,
            files: files
                .iter()
                .map(|f| FileStats {
                    name: f
                        .path()
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    from_step: f.meta().from_step,
                    to_step: f.meta().to_step,
                    entries: f.entries(),
                    bytes: f.size_bytes(),
                })
                .collect(),
        });
    }
    Ok(DbStats {
        last_block: snapshot.block(),
        root: snapshot.root(),
        step_size,
        domains,
        cache,
        memory: MemoryStats {
            blocks: snapshot.memory.blocks(),
            bytes: snapshot.memory.bytes(),
            history_blocks: snapshot.history.len(),
            history_bytes: snapshot.history.bytes() as u64,
        },
        journal,
    })
}

/// What a datadir's history holds (`strata stats`): its history files,
/// as one snapshot's manifest lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryStats {
    /// How much history the datadir keeps.
    pub retention: strata_types::HistoryRetention,
    /// The oldest block the history rebuilds (`None` before the first
    /// flush that wrote history).
    pub from: Option<u64>,
    /// Per domain: files, entries and bytes on disk.
    pub domains: Vec<HistoryDomainSize>,
}

/// One domain's history files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistoryDomainSize {
    /// The domain.
    pub domain: Domain,
    /// History files.
    pub files: u64,
    /// Entries: one per key and block that changed it.
    pub entries: u64,
    /// Bytes of the files on disk.
    pub bytes: u64,
}

/// The history `snapshot` shows, from its history files' footers (`None`
/// for a datadir that keeps none).
pub fn history_stats(snapshot: &Snapshot) -> Result<Option<HistoryStats>> {
    let (retention, from) = snapshot.history_kept();
    if !retention.is_on() {
        return Ok(None);
    }
    let domains = Domain::ALL
        .iter()
        .map(|&domain| {
            let files = snapshot.files.history(domain);
            HistoryDomainSize {
                domain,
                files: files.len() as u64,
                entries: files.iter().map(|f| f.entries()).sum(),
                bytes: files.iter().map(|f| f.size_bytes()).sum(),
            }
        })
        .collect();
    Ok(Some(HistoryStats {
        retention,
        from,
        domains,
    }))
}

/// What a domain's live state holds, counted from one snapshot: each key
/// once (its newest value across the tiers), deleted keys left out. The
/// raw size a datadir's bytes on disk are read against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveSize {
    /// The domain.
    pub domain: Domain,
    /// Live keys.
    pub keys: u64,
    /// Bytes of those keys.
    pub key_bytes: u64,
    /// Bytes of their values (as the domain encodes them, without the step).
    pub value_bytes: u64,
}

/// The live size of every domain `snapshot` shows: a merged scan of each
/// domain's tiers in key order, the newest version of a key winning. Holds
/// one entry per tier at a time, whatever the state's size.
pub fn live_sizes(snapshot: &Snapshot) -> Result<Vec<LiveSize>> {
    let mut out = Vec::with_capacity(Domain::ALL.len());
    for domain in Domain::ALL {
        let mut size = LiveSize {
            domain,
            keys: 0,
            key_bytes: 0,
            value_bytes: 0,
        };
        snapshot.visit_live_range(domain, Vec::new(), &[], None, |key, value| {
            size.keys += 1;
            size.key_bytes += key.len() as u64;
            size.value_bytes += value.len() as u64;
            true
        })?;
        out.push(size);
    }
    Ok(out)
}
