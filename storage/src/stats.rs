//! [`DbStats`]: the sizes of a store's tiers, taken from one snapshot (of a
//! [`crate::StateDb`] or a [`crate::ReadOnlyStateDb`]).

use alloy_primitives::B256;
use strata_cache::CacheStats;

use crate::domain::Domain;
use crate::error::Result;
use crate::snapshot::Snapshot;

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
}

/// Sizes of one domain's tiers.
#[derive(Clone, Debug)]
pub struct DomainStats {
    /// The domain.
    pub domain: Domain,
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
pub(crate) fn collect(snapshot: &Snapshot, step_size: u64, cache: CacheStats) -> Result<DbStats> {
    let mut domains = Vec::new();
    for domain in Domain::ALL {
        let files = snapshot.files.files(domain);
        domains.push(DomainStats {
            domain,
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
    })
}
