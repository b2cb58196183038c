//! In-memory implementations of the two sources, for tests, benches and
//! small tools: a [`MemoryBranchStore`] of records and a [`MemoryState`].

use std::sync::atomic::{AtomicU64, Ordering};

use alloy_primitives::map::{AddressHashMap, B256HashMap, HashMap};
use alloy_primitives::{Address, B256, U256};
use bytes::Bytes;

use crate::compute::RecordWrite;
use crate::nibbles::MAX_PATH_NIBBLES;
use crate::source::{AccountLeaf, BranchSource, SourceError, StateSource};

/// A nibble path packed two nibbles a byte, held inline: a map key whose
/// comparison reads no other memory than the map's own bucket.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct PathKey {
    len: u8,
    packed: [u8; MAX_PATH_NIBBLES / 2],
}

impl PathKey {
    /// The key of `path` (one nibble per byte), or `None` when it is no
    /// record path (longer than any, or a byte that is not a nibble).
    #[inline]
    fn of(path: &[u8]) -> Option<Self> {
        if path.len() > MAX_PATH_NIBBLES || path.iter().any(|&n| n > 0x0f) {
            return None;
        }
        let mut packed = [0u8; MAX_PATH_NIBBLES / 2];
        for (byte, pair) in packed.iter_mut().zip(path.chunks(2)) {
            *byte = (pair[0] << 4) | pair.get(1).copied().unwrap_or(0);
        }
        Some(Self {
            len: path.len() as u8,
            packed,
        })
    }

    /// The path again, one nibble per byte.
    fn path(&self) -> Vec<u8> {
        (0..self.len as usize)
            .map(|i| {
                let b = self.packed[i / 2];
                if i % 2 == 0 { b >> 4 } else { b & 0x0f }
            })
            .collect()
    }
}

/// The in-memory commitment store: nibble path → record bytes. Counts the
/// reads made through [`BranchSource`]. Paths are held packed inline and
/// hashed with alloy-primitives' (foldhash) hasher, not SipHash: a block's
/// walk makes thousands of lookups into a map of many records.
///
/// Paths longer than [`MAX_PATH_NIBBLES`] or holding a byte over 15 are no
/// record paths: they are not stored, and reading one finds nothing.
#[derive(Default)]
pub struct MemoryBranchStore {
    records: HashMap<PathKey, Bytes>,
    reads: AtomicU64,
}

impl std::fmt::Debug for MemoryBranchStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBranchStore")
            .field("records", &self.records.len())
            .field("reads", &self.reads())
            .finish()
    }
}

impl MemoryBranchStore {
    /// An empty store (the empty trie).
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies the writes of a [`compute_root`](crate::compute_root) call.
    pub fn apply(&mut self, writes: &[RecordWrite]) {
        for (path, value) in writes {
            let Some(key) = PathKey::of(path) else {
                continue;
            };
            match value {
                Some(v) => {
                    self.records.insert(key, v.clone());
                }
                None => {
                    self.records.remove(&key);
                }
            }
        }
    }

    /// Stores one record (the bulk builder's sink).
    pub fn insert(&mut self, path: Vec<u8>, record: Bytes) {
        if let Some(key) = PathKey::of(&path) {
            self.records.insert(key, record);
        }
    }

    /// Number of records held.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the store holds no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The record at `path`, without counting a read.
    pub fn get(&self, path: &[u8]) -> Option<&Bytes> {
        self.records.get(&PathKey::of(path)?)
    }

    /// All records (nibble path, bytes), in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (Vec<u8>, &Bytes)> {
        self.records.iter().map(|(k, v)| (k.path(), v))
    }

    /// Reads made through [`BranchSource::branch`] since the last reset.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Resets the read counter.
    pub fn reset_reads(&self) {
        self.reads.store(0, Ordering::Relaxed);
    }
}

impl BranchSource for MemoryBranchStore {
    fn branch(&self, path: &[u8]) -> Result<Option<Bytes>, SourceError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        Ok(self.get(path).cloned())
    }
}

/// An in-memory account and storage state.
#[derive(Clone, Debug, Default)]
pub struct MemoryState {
    accounts: AddressHashMap<AccountLeaf>,
    storage: AddressHashMap<B256HashMap<U256>>,
}

impl MemoryState {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Creates or replaces an account (its storage is kept).
    pub fn set_account(&mut self, address: Address, leaf: AccountLeaf) {
        self.accounts.insert(address, leaf);
    }

    /// Deletes an account and all its storage.
    pub fn remove_account(&mut self, address: &Address) {
        self.accounts.remove(address);
        self.storage.remove(address);
    }

    /// Sets a slot; zero deletes it.
    pub fn set_storage(&mut self, address: Address, slot: B256, value: U256) {
        if value.is_zero() {
            if let Some(s) = self.storage.get_mut(&address) {
                s.remove(&slot);
            }
        } else {
            self.storage.entry(address).or_default().insert(slot, value);
        }
    }

    /// Deletes all storage of an account.
    pub fn wipe_storage(&mut self, address: &Address) {
        self.storage.remove(address);
    }

    /// All accounts.
    pub fn accounts(&self) -> impl Iterator<Item = (&Address, &AccountLeaf)> {
        self.accounts.iter()
    }

    /// The non-zero slots of an account.
    pub fn slots(&self, address: &Address) -> impl Iterator<Item = (&B256, &U256)> {
        self.storage.get(address).into_iter().flat_map(|s| s.iter())
    }
}

impl StateSource for MemoryState {
    fn account(&self, address: &Address) -> Result<Option<AccountLeaf>, SourceError> {
        Ok(self.accounts.get(address).copied())
    }

    fn storage(&self, address: &Address, slot: &B256) -> Result<Option<U256>, SourceError> {
        Ok(self.storage.get(address).and_then(|s| s.get(slot)).copied())
    }
}
