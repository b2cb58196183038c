//! State and storage roots with alloy-trie's `HashBuilder`: leaves sorted
//! by hashed key, values RLP-encoded (a slot's value as an RLP integer, an
//! account as `[nonce, balance, storage_root, code_hash]`).

use alloy_primitives::{B256, U256, keccak256};
use alloy_trie::{EMPTY_ROOT_HASH, HashBuilder, Nibbles, TrieAccount};

/// The root of one account's storage (zero values are absent slots).
pub fn storage_root<'a>(storage: impl IntoIterator<Item = (&'a U256, &'a U256)>) -> B256 {
    let mut leaves: Vec<(B256, U256)> = storage
        .into_iter()
        .filter(|(_, value)| !value.is_zero())
        .map(|(slot, value)| (keccak256(slot.to_be_bytes::<32>()), *value))
        .collect();
    if leaves.is_empty() {
        return EMPTY_ROOT_HASH;
    }
    leaves.sort_unstable_by_key(|(hashed, _)| *hashed);
    let mut builder = HashBuilder::default();
    let mut value = Vec::with_capacity(33);
    for (hashed, slot_value) in leaves {
        value.clear();
        alloy_rlp::Encodable::encode(&slot_value, &mut value);
        builder.add_leaf(Nibbles::unpack(hashed), &value);
    }
    builder.root()
}

/// The root of the account trie over `accounts`, which must come in
/// ascending order of hashed address (`keccak256(address)`).
pub fn state_root(accounts: impl IntoIterator<Item = (B256, TrieAccount)>) -> B256 {
    let mut builder = HashBuilder::default();
    let mut value = Vec::with_capacity(110);
    let mut any = false;
    for (hashed, account) in accounts {
        any = true;
        value.clear();
        alloy_rlp::Encodable::encode(&account, &mut value);
        builder.add_leaf(Nibbles::unpack(hashed), &value);
    }
    if any { builder.root() } else { EMPTY_ROOT_HASH }
}
