//! The account trie of a whole state, built in bounded memory: each
//! account's leaf (with its storage root, built before) goes through an
//! external sort by hashed address as a fixed-size [`LeafEntry`], then
//! streams into the [`BulkBuilder`]. Shared by the import and `verify`.

use alloy_primitives::{Address, B256, U256, keccak256};
use bytes::Bytes;
use strata_commitment::{AccountLeaf, BulkBuilder, StorageTrieBuilder, record_key};

use crate::error::{Error, Result};
use crate::sort::{ExternalSorter, RunError, SortedPairs};

/// One account's storage trie, built on its own.
pub(crate) struct BuiltStorage {
    /// `(keccak(slot), slot, value)` of the non-zero slots, in hashed order.
    pub(crate) slots: Vec<(B256, B256, U256)>,
    /// The storage root.
    pub(crate) root: B256,
    /// The trie's records, `(record key, record)`.
    pub(crate) records: Vec<(Vec<u8>, Bytes)>,
}

/// Builds the storage trie of `address` from its `(slot, value)` pairs in
/// any order (zero values left out), reusing `tries`' buffers.
pub(crate) fn build_storage_trie(
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
        .map_err(|source| Error::Commitment { block, source })?;
    Ok(BuiltStorage {
        slots: hashed,
        root,
        records,
    })
}

/// An account leaf as the sort carries it: address, nonce, balance, code
/// hash and storage root, big-endian, [`LeafEntry::LEN`] bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LeafEntry {
    pub(crate) address: Address,
    pub(crate) leaf: AccountLeaf,
    pub(crate) storage_root: B256,
}

impl LeafEntry {
    /// Bytes of an encoded entry.
    pub(crate) const LEN: usize = 20 + 8 + 32 + 32 + 32;

    /// The entry's bytes.
    pub(crate) fn encode(&self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        out[..20].copy_from_slice(self.address.as_slice());
        out[20..28].copy_from_slice(&self.leaf.nonce.to_be_bytes());
        out[28..60].copy_from_slice(&self.leaf.balance.to_be_bytes::<32>());
        out[60..92].copy_from_slice(self.leaf.code_hash.as_slice());
        out[92..].copy_from_slice(self.storage_root.as_slice());
        out
    }

    /// Decodes what [`LeafEntry::encode`] wrote; `None` for another length.
    pub(crate) fn decode(bytes: &[u8]) -> Option<Self> {
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
/// state root. A repeated hashed address is [`Error::ImportRepeatedAccount`].
pub(crate) fn build_account_trie(
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
            Error::ImportIncomplete(format!(
                "an account leaf of {} bytes in the sort (expected {})",
                entry.len(),
                LeafEntry::LEN
            ))
        })?;
        if previous.as_deref() == Some(hashed.as_slice()) {
            return Err(Error::ImportRepeatedAccount {
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
            .map_err(|source| Error::Commitment { block, source })?;
        previous = Some(hashed);
    }
    let root = builder
        .finish()
        .map_err(|source| Error::Commitment { block, source })?;
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
