//! State and storage roots with alloy-trie's `HashBuilder`: leaves sorted
//! by hashed key, values RLP-encoded (a slot's value as an RLP integer, an
//! account as `[nonce, balance, storage_root, code_hash]`).

use std::collections::BTreeMap;

use alloy_genesis::GenesisAccount;
use alloy_primitives::{Address, B256, KECCAK256_EMPTY, U256, keccak256};
use alloy_trie::{EMPTY_ROOT_HASH, HashBuilder, Nibbles, TrieAccount};
use rayon::prelude::*;

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

/// The state root of a genesis allocation (zero slots are absent; the
/// storage roots in parallel, then the account trie over the accounts
/// sorted by hashed address).
pub(crate) fn alloc_root(alloc: &BTreeMap<Address, GenesisAccount>) -> B256 {
    let mut accounts: Vec<(B256, TrieAccount)> = alloc
        .par_iter()
        .map(|(address, account)| {
            let storage: Vec<(U256, U256)> = account
                .storage_slots()
                .map(|(slot, value)| (slot.into(), value))
                .collect();
            let code_hash = match &account.code {
                Some(code) if !code.is_empty() => keccak256(code),
                _ => KECCAK256_EMPTY,
            };
            let trie_account = TrieAccount {
                nonce: account.nonce.unwrap_or(0),
                balance: account.balance,
                storage_root: storage_root(storage.iter().map(|(slot, value)| (slot, value))),
                code_hash,
            };
            (keccak256(address), trie_account)
        })
        .collect();
    accounts.par_sort_unstable_by_key(|(hashed, _)| *hashed);
    state_root(accounts)
}
