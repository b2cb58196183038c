//! The account trie of a whole state, built in bounded memory: each
//! account's leaf (with its storage root, built before) goes through an
//! external sort by hashed address as a fixed-size [`LeafEntry`], then
//! streams into the [`BulkBuilder`]. A storage trie is built in memory
//! ([`build_storage_trie`]) or, for an account too large to hold, through
//! a sort of its own ([`SlotSort`]). Shared by the import and `verify`.

use std::path::Path;

use alloy_primitives::{Address, B256, U256, keccak256};
use bytes::Bytes;
use strata_commitment::{AccountLeaf, BulkBuilder, StorageTrieBuilder, record_key};

use crate::error::{BulkError, Result};
use crate::sort::{ExternalSorter, RunError, SortedPairs};

/// One account's storage trie, built on its own.
pub struct BuiltStorage {
    /// `(keccak(slot), slot, value)` of the non-zero slots, in hashed order.
    pub slots: Vec<(B256, B256, U256)>,
    /// The storage root.
    pub root: B256,
    /// The trie's records, `(record key, record)`.
    pub records: Vec<(Vec<u8>, Bytes)>,
}

/// Builds the storage trie of `address` from its `(slot, value)` pairs in
/// any order (zero values left out), reusing `tries`' buffers.
pub fn build_storage_trie(
    tries: &mut StorageTrieBuilder,
    block: u64,
    address: Address,
    slots: impl IntoIterator<Item = (B256, U256)>,
) -> Result<BuiltStorage> {
    let mut hashed: Vec<(B256, B256, U256)> = slots
        .into_iter()
        .filter(|(_, value)| !value.is_zero())
        .map(|(slot, value)| (keccak256(slot), slot, value))
        .collect();
    hashed.sort_unstable_by_key(|(hashed_slot, _, _)| *hashed_slot);
    let mut records = Vec::new();
    let root = tries
        .build(
            keccak256(address),
            address,
            hashed.iter().copied(),
            |path, record| records.push((record_key(&path), record)),
        )
        .map_err(|source| BulkError::Commitment { block, source })?;
    Ok(BuiltStorage {
        slots: hashed,
        root,
        records,
    })
}

/// One account's slots sorted on disk by hashed slot (keccak(slot) →
/// slot ‖ value), for an account with more slots than memory may hold;
/// [`SlotSort::build`] streams them into the account's storage trie.
pub struct SlotSort {
    slots: ExternalSorter,
}

/// A slot given twice to one [`SlotSort`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepeatedSlot(pub B256);

/// Why [`SlotSort::build`] stopped.
#[derive(Debug)]
pub enum SlotSortError {
    /// A slot came twice (zero values included).
    Repeated(RepeatedSlot),
    /// The sort, the builder or the caller's `each` failed.
    Failed(BulkError),
}

impl From<BulkError> for SlotSortError {
    fn from(e: BulkError) -> Self {
        SlotSortError::Failed(e)
    }
}

impl From<RunError> for SlotSortError {
    fn from(e: RunError) -> Self {
        SlotSortError::Failed(e.into())
    }
}

impl SlotSort {
    /// A sort whose runs go to `dir` as `large-{n}.run`, spilling each
    /// `budget` bytes.
    pub fn new(dir: &Path, budget: usize) -> Self {
        Self {
            slots: ExternalSorter::new(dir, "large", budget),
        }
    }

    /// Adds a slot (zero values too: [`SlotSort::build`] drops them after
    /// the check for repeats).
    pub fn push(&mut self, slot: B256, value: U256) -> std::result::Result<(), RunError> {
        let mut entry = [0u8; 64];
        entry[..32].copy_from_slice(slot.as_slice());
        entry[32..].copy_from_slice(&value.to_be_bytes::<32>());
        self.slots.push(keccak256(slot).as_slice(), &entry)
    }

    /// Runs spilled so far.
    pub fn runs(&self) -> usize {
        self.slots.runs()
    }

    /// Streams the sorted non-zero slots into the storage trie of
    /// `address` (its records into `records`), handing each to `each` as
    /// well; returns the storage root.
    pub fn build(
        self,
        block: u64,
        address: Address,
        records: &mut ExternalSorter,
        mut each: impl FnMut(B256, U256) -> Result<()>,
    ) -> std::result::Result<B256, SlotSortError> {
        let mut stopped: Option<SlotSortError> = None;
        let mut unwritable: Option<RunError> = None;
        let mut previous: Option<B256> = None;
        let mut pairs = self.slots.finish()?;
        let sorted = std::iter::from_fn(|| {
            loop {
                let (hashed, entry) = match pairs.next()? {
                    Ok(pair) => pair,
                    Err(e) => {
                        stopped = Some(e.into());
                        return None;
                    }
                };
                let hashed = B256::from_slice(&hashed);
                let slot = B256::from_slice(&entry[..32]);
                if previous == Some(hashed) {
                    stopped = Some(SlotSortError::Repeated(RepeatedSlot(slot)));
                    return None;
                }
                previous = Some(hashed);
                let value = U256::from_be_slice(&entry[32..]);
                if value.is_zero() {
                    continue;
                }
                if let Err(e) = each(slot, value) {
                    stopped = Some(SlotSortError::Failed(e));
                    return None;
                }
                return Some((hashed, slot, value));
            }
        });
        let root = StorageTrieBuilder::new()
            .build(keccak256(address), address, sorted, |path, record| {
                if unwritable.is_none()
                    && let Err(e) = records.push(&record_key(&path), &record)
                {
                    unwritable = Some(e);
                }
            })
            .map_err(|source| BulkError::Commitment { block, source })?;
        if let Some(e) = stopped {
            return Err(e);
        }
        if let Some(e) = unwritable {
            return Err(e.into());
        }
        Ok(root)
    }
}

/// An account leaf as the sort carries it: address, nonce, balance, code
/// hash and storage root, big-endian, [`LeafEntry::LEN`] bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeafEntry {
    /// The account.
    pub address: Address,
    /// Its nonce, balance and code hash.
    pub leaf: AccountLeaf,
    /// Its storage root.
    pub storage_root: B256,
}

impl LeafEntry {
    /// Bytes of an encoded entry.
    pub const LEN: usize = 20 + 8 + 32 + 32 + 32;

    /// The entry's bytes.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        out[..20].copy_from_slice(self.address.as_slice());
        out[20..28].copy_from_slice(&self.leaf.nonce.to_be_bytes());
        out[28..60].copy_from_slice(&self.leaf.balance.to_be_bytes::<32>());
        out[60..92].copy_from_slice(self.leaf.code_hash.as_slice());
        out[92..].copy_from_slice(self.storage_root.as_slice());
        out
    }

    /// Decodes what [`LeafEntry::encode`] wrote; `None` for another length.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        if bytes.len() != Self::LEN {
            return None;
        }
        Some(Self {
            address: Address::from_slice(&bytes[..20]),
            leaf: AccountLeaf {
                nonce: u64::from_be_bytes(bytes[20..28].try_into().ok()?),
                balance: U256::from_be_slice(&bytes[28..60]),
                code_hash: B256::from_slice(&bytes[60..92]),
            },
            storage_root: B256::from_slice(&bytes[92..]),
        })
    }
}

/// Feeds the leaves (keccak(address) → [`LeafEntry`], in hashed order) to
/// the account trie's builder, its records into `records`; returns the
/// state root. A repeated hashed address is [`BulkError::RepeatedAccount`].
pub fn build_account_trie(
    block: u64,
    leaves: SortedPairs,
    records: &mut ExternalSorter,
) -> Result<B256> {
    let mut failed: Option<RunError> = None;
    let mut builder = BulkBuilder::new(|path: Vec<u8>, record: Bytes| {
        if failed.is_none()
            && let Err(e) = records.push(&record_key(&path), &record)
        {
            failed = Some(e);
        }
    });
    let mut previous: Option<Vec<u8>> = None;
    for pair in leaves {
        let (hashed, entry) = pair?;
        let entry = LeafEntry::decode(&entry).ok_or_else(|| {
            BulkError::Incomplete(format!(
                "an account leaf of {} bytes in the sort (expected {})",
                entry.len(),
                LeafEntry::LEN
            ))
        })?;
        if previous.as_deref() == Some(hashed.as_slice()) {
            return Err(BulkError::RepeatedAccount {
                address: entry.address,
            });
        }
        builder
            .add_account_with_storage_root(
                B256::from_slice(&hashed),
                entry.address,
                &entry.leaf,
                entry.storage_root,
            )
            .map_err(|source| BulkError::Commitment { block, source })?;
        previous = Some(hashed);
    }
    let root = builder
        .finish()
        .map_err(|source| BulkError::Commitment { block, source })?;
    match failed {
        Some(e) => Err(e.into()),
        None => Ok(root),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leaf_entry_round_trips_and_refuses_another_length() {
        let entry = LeafEntry {
            address: Address::repeat_byte(0xab),
            leaf: AccountLeaf {
                nonce: 0x0102_0304_0506_0708,
                balance: U256::from(1u64) << 200,
                code_hash: B256::repeat_byte(0xcd),
            },
            storage_root: B256::repeat_byte(0xef),
        };
        let bytes = entry.encode();
        assert_eq!(LeafEntry::decode(&bytes), Some(entry));
        assert_eq!(LeafEntry::decode(&bytes[1..]), None);
    }
}
