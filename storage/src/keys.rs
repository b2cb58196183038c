//! Domain keys built from typed Ethereum values.

use alloy_primitives::{Address, B256};

/// Length of a storage-domain key: address ‖ slot.
pub const STORAGE_KEY_LEN: usize = 20 + 32;

/// The storage-domain key of `slot` in `address`'s storage.
pub fn storage_key(address: &Address, slot: &B256) -> [u8; STORAGE_KEY_LEN] {
    let mut key = [0u8; STORAGE_KEY_LEN];
    key[..20].copy_from_slice(address.as_slice());
    key[20..].copy_from_slice(slot.as_slice());
    key
}

/// Splits a storage-domain key into address and slot.
pub fn split_storage_key(key: &[u8]) -> Option<(Address, B256)> {
    (key.len() == STORAGE_KEY_LEN).then(|| {
        (
            Address::from_slice(&key[..20]),
            B256::from_slice(&key[20..]),
        )
    })
}

/// Parses an account- or code-domain key.
pub fn address_key(key: &[u8]) -> Option<Address> {
    (key.len() == 20).then(|| Address::from_slice(key))
}
