//! The commitment's view of the store: branch records through the branch
//! cache (a decorator over the commitment domain), leaves from the domains.

use std::sync::Arc;

use alloy_primitives::{Address, B256, U256, keccak256};
use bytes::Bytes;
use strata_cache::PrefixCache;
use strata_commitment::{
    AccountLeaf, BranchSource, SourceError, StateSource, TrieUpdate, unpack_nibbles,
};

use crate::reader::StateReader;
use strata_telemetry::Tier;
use strata_types::domain::Domain;

/// Branch records read through the cache, loading misses from the
/// commitment domain of a committed snapshot.
///
/// Warmers coalesce: concurrent misses of one prefix load it once. The
/// commitment does not: on a miss it loads the record itself rather than
/// wait for a warmer's load in flight, since a preempted warmer would stall
/// the root calculation for a scheduler quantum.
pub struct CachedBranches {
    reader: StateReader,
    cache: Arc<dyn PrefixCache>,
    coalesce: bool,
}

impl CachedBranches {
    /// The commitment's view: never waits on another thread's load.
    pub fn for_commitment(reader: StateReader, cache: Arc<dyn PrefixCache>) -> Self {
        CachedBranches {
            reader,
            cache,
            coalesce: false,
        }
    }

    /// The warmers' view: concurrent misses of a prefix load it once.
    pub fn for_warmers(reader: StateReader, cache: Arc<dyn PrefixCache>) -> Self {
        CachedBranches {
            reader,
            cache,
            coalesce: true,
        }
    }

    fn load(&self, path: &[u8]) -> Result<Option<Bytes>, SourceError> {
        let key = strata_commitment::record_key(path);
        Ok(self.reader.get_latest(Domain::Commitment, &key)?)
    }
}

impl BranchSource for CachedBranches {
    fn branch(&self, path: &[u8]) -> Result<Option<Bytes>, SourceError> {
        let metrics = self.reader.metrics();
        let started = self.reader.start();
        let regime = self.reader.regime();
        if !self.coalesce {
            if let Some(value) = self.cache.get(path) {
                metrics.finish(started, Domain::Commitment, Tier::BranchCache, regime);
                return Ok(Some(value));
            }
            // The load records its own tier (db or file).
            let value = self.load(path)?;
            if let Some(value) = &value {
                self.cache.insert(path, value.clone());
            }
            return Ok(value);
        }
        let lookup = self.cache.get_or_load(path, &mut || self.load(path))?;
        if lookup.hit {
            metrics.finish(started, Domain::Commitment, Tier::BranchCache, regime);
        }
        Ok(lookup.value)
    }
}

/// The commitment records of a committed snapshot, read through a reader
/// (no cache: what proofs read).
pub struct ReaderBranches {
    reader: StateReader,
}

impl ReaderBranches {
    /// The records `reader` sees, uncached.
    pub fn new(reader: StateReader) -> Self {
        ReaderBranches { reader }
    }
}

impl BranchSource for ReaderBranches {
    fn branch(&self, path: &[u8]) -> Result<Option<Bytes>, SourceError> {
        let key = strata_commitment::record_key(path);
        Ok(self.reader.get_latest(Domain::Commitment, &key)?)
    }
}

/// Records computed for an older block (`at`: path → record, `None` where
/// the block has none) over the records of the snapshot `below`.
pub struct RecordsOver {
    at: std::collections::HashMap<Vec<u8>, Option<Bytes>>,
    below: ReaderBranches,
}

impl RecordsOver {
    /// `writes` (path → record, `None` for none) over what `below` holds.
    pub fn new(writes: Vec<(Vec<u8>, Option<Bytes>)>, below: StateReader) -> Self {
        RecordsOver {
            at: writes.into_iter().collect(),
            below: ReaderBranches::new(below),
        }
    }
}

impl BranchSource for RecordsOver {
    fn branch(&self, path: &[u8]) -> Result<Option<Bytes>, SourceError> {
        match self.at.get(path) {
            Some(record) => Ok(record.clone()),
            None => self.below.branch(path),
        }
    }
}

/// Account and storage leaves as the block being committed leaves them.
pub struct OverlayState {
    reader: StateReader,
}

impl OverlayState {
    /// The leaves `reader` (a writer's, with its overlay) sees.
    pub fn new(reader: StateReader) -> Self {
        OverlayState { reader }
    }
}

impl StateSource for OverlayState {
    fn account(&self, address: &Address) -> Result<Option<AccountLeaf>, SourceError> {
        Ok(self.reader.account(address)?.map(|a| AccountLeaf {
            nonce: a.nonce,
            balance: a.balance,
            code_hash: a.code_hash,
        }))
    }

    fn storage(&self, address: &Address, slot: &B256) -> Result<Option<U256>, SourceError> {
        let value = self.reader.storage(address, slot)?;
        Ok((!value.is_zero()).then_some(value))
    }
}

/// The hashed trie paths (one nibble per byte) of every touched key, for the warmers.
pub fn hashed_paths(update: &TrieUpdate) -> Vec<Vec<u8>> {
    let mut paths = Vec::with_capacity(update.accounts.len() + update.storage.len());
    for address in &update.accounts {
        paths.push(account_path(address));
    }
    for (address, slot) in &update.storage {
        paths.push(storage_path(&account_path(address), slot));
    }
    paths
}

/// The hashed trie path of an account: `keccak(address)`, one nibble per byte.
pub fn account_path(address: &Address) -> Vec<u8> {
    unpack_nibbles(keccak256(address).as_slice())
}

/// The path of `slot` in the storage of the account at `account_path`.
pub fn storage_path(account_path: &[u8], slot: &B256) -> Vec<u8> {
    let mut path = Vec::with_capacity(account_path.len() + 64);
    path.extend_from_slice(account_path);
    path.extend(unpack_nibbles(keccak256(slot).as_slice()));
    path
}
