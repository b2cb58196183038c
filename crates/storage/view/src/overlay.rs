//! The memory tier: a block's writes before its commit.

use std::collections::{BTreeMap, BTreeSet};

use alloy_primitives::{Address, B256, U256};
use bytes::Bytes;

use strata_types::account::{Account, encode_slot_value};
use strata_types::domain::Domain;
use strata_types::keys::{STORAGE_KEY_LEN, storage_key};

/// The uncommitted writes of one block. `None` values are deletions.
#[derive(Clone, Debug, Default)]
pub struct Overlay {
    maps: [BTreeMap<Vec<u8>, Option<Bytes>>; 4],
    /// Accounts whose whole storage was deleted in this block, before any
    /// storage write of the block that follows the deletion.
    wiped: BTreeSet<Address>,
    /// The block's hash, when the client gives it.
    pub block_hash: Option<alloy_primitives::B256>,
    /// The block's header (opaque bytes: RLP for Ethereum), when the client
    /// gives it.
    pub block_header: Option<Bytes>,
}

impl Overlay {
    /// What this block says about `key`: `Some(None)` when it deleted it,
    /// `None` when the block did not touch it.
    pub fn get(&self, domain: Domain, key: &[u8]) -> Option<Option<&Bytes>> {
        if let Some(value) = self.maps[domain.index()].get(key) {
            return Some(value.as_ref());
        }
        if domain == Domain::Storage && key.len() == STORAGE_KEY_LEN {
            let address = Address::from_slice(&key[..20]);
            if self.wiped.contains(&address) {
                return Some(None);
            }
        }
        None
    }

    /// Code this block stored, by its hash.
    pub fn code_by_hash(&self, hash: &alloy_primitives::B256) -> Option<&Bytes> {
        self.maps[Domain::Code.index()]
            .values()
            .flatten()
            .find(|code| alloy_primitives::keccak256(code) == *hash)
    }

    /// Records a write (`None` deletes).
    pub fn put(&mut self, domain: Domain, key: Vec<u8>, value: Option<Bytes>) {
        self.maps[domain.index()].insert(key, value);
    }

    /// Sets an account's nonce, balance and code hash.
    pub fn put_account(&mut self, address: Address, account: &Account) {
        self.put(
            Domain::Account,
            address.to_vec(),
            Some(Bytes::from(account.encode())),
        );
    }

    /// Deletes an account with its code and all of its storage.
    pub fn delete_account(&mut self, address: Address) {
        self.put(Domain::Account, address.to_vec(), None);
        self.put(Domain::Code, address.to_vec(), None);
        self.wipe_storage(address);
    }

    /// Sets a storage slot; zero deletes it.
    pub fn put_storage(&mut self, address: Address, slot: B256, value: U256) {
        let key = storage_key(&address, &slot).to_vec();
        let value = (!value.is_zero()).then(|| Bytes::from(encode_slot_value(value)));
        self.put(Domain::Storage, key, value);
    }

    /// Sets an account's bytecode; empty code deletes it.
    pub fn put_code(&mut self, address: Address, code: Bytes) {
        let value = (!code.is_empty()).then_some(code);
        self.put(Domain::Code, address.to_vec(), value);
    }

    /// Deletes all of `address`'s storage, including what this block wrote.
    pub fn wipe_storage(&mut self, address: Address) {
        let map = &mut self.maps[Domain::Storage.index()];
        let mut lo = [0u8; STORAGE_KEY_LEN];
        lo[..20].copy_from_slice(address.as_slice());
        let mut hi = [0xffu8; STORAGE_KEY_LEN];
        hi[..20].copy_from_slice(address.as_slice());
        let doomed: Vec<Vec<u8>> = map
            .range(lo.to_vec()..=hi.to_vec())
            .map(|(k, _)| k.clone())
            .collect();
        for key in doomed {
            map.remove(&key);
        }
        self.wiped.insert(address);
    }

    /// The writes of one domain, in key order.
    pub fn entries(&self, domain: Domain) -> &BTreeMap<Vec<u8>, Option<Bytes>> {
        &self.maps[domain.index()]
    }

    /// Accounts whose storage the block wiped.
    pub fn wiped(&self) -> &BTreeSet<Address> {
        &self.wiped
    }

    /// Total number of keys written.
    pub fn len(&self) -> usize {
        self.maps.iter().map(BTreeMap::len).sum()
    }

    /// Whether the block wrote no key.
    pub fn is_empty(&self) -> bool {
        self.maps.iter().all(BTreeMap::is_empty)
    }
}
