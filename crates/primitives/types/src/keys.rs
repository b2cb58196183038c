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

/// The key right after every key that starts with `bytes` and is as long:
/// `bytes` plus one as a big-endian number (the next address, the next
/// slot, the first key past an account's storage), `None` after the last.
pub fn next_key(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut next = bytes.to_vec();
    let last = next.iter().rposition(|b| *b != u8::MAX)?;
    next[last] += 1;
    next[last + 1..].fill(0);
    Some(next)
}

/// The reserved commitment-domain key holding `(block, root)` of the head
/// ([`Head::encode`](crate::Head::encode)). Record keys are compact nibble
/// paths and never start with 0xff.
pub const ROOT_RECORD_KEY: &[u8] = b"\xffroot";
