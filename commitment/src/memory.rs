//! In-memory implementations of the two sources, for tests, benches and
//! small tools: a [`MemoryBranchStore`] of records and a [`MemoryState`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use alloy_primitives::{Address, B256, U256};
use bytes::Bytes;

use crate::compute::RecordWrite;
use crate::source::{AccountLeaf, BranchSource, SourceError, StateSource};

/// The in-memory commitment store: nibble path → record bytes. Counts the
/// reads made through [`BranchSource`].
#[derive(Debug, Default)]
pub struct MemoryBranchStore {
    records: HashMap<Vec<u8>, Bytes>,
    reads: AtomicU64,
}

impl MemoryBranchStore {
    /// An empty store (the empty trie).
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies the writes of a [`compute_root`](crate::compute_root) call.
    pub fn apply(&mut self, writes: &[RecordWrite]) {
        for (path, value) in writes {
            match value {
                Some(v) => {
                    self.records.insert(path.clone(), v.clone());
                }
                None => {
                    self.records.remove(path);
                }
            }
        }
    }

    /// Stores one record (the bulk builder's sink).
    pub fn insert(&mut self, path: Vec<u8>, record: Bytes) {
        self.records.insert(path, record);
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
        self.records.get(path)
    }

    /// All records, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&Vec<u8>, &Bytes)> {
        self.records.iter()
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
        Ok(self.records.get(path).cloned())
    }
}

/// An in-memory account and storage state.
#[derive(Clone, Debug, Default)]
pub struct MemoryState {
    accounts: HashMap<Address, AccountLeaf>,
    storage: HashMap<Address, HashMap<B256, U256>>,
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
