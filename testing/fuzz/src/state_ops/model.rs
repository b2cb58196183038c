//! The oracle: the state as plain maps, and its Ethereum state root computed
//! from scratch by alloy-trie's `HashBuilder` (as
//! `storage/tests/suite/oracle.rs` does for the proptest).

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, Bytes, KECCAK256_EMPTY, U256, keccak256};
use alloy_trie::{EMPTY_ROOT_HASH, HashBuilder, Nibbles};
use strata_storage::Account;

/// One account of the model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelAccount {
    /// Nonce, balance and code hash.
    pub account: Account,
    /// The bytecode, `None` when empty.
    pub code: Option<Bytes>,
    /// Non-zero slots only.
    pub storage: BTreeMap<B256, U256>,
}

/// The whole state of one block.
pub type Model = BTreeMap<Address, ModelAccount>;

/// The Ethereum state root of `model`.
pub fn model_root(model: &Model) -> B256 {
    let mut leaves: Vec<(B256, Vec<u8>)> = model
        .iter()
        .map(|(address, entry)| {
            let fields = AccountRlp {
                nonce: entry.account.nonce,
                balance: entry.account.balance,
                storage_root: storage_root(&entry.storage),
                code_hash: entry.account.code_hash,
            };
            (keccak256(address), alloy_rlp::encode(&fields))
        })
        .collect();
    leaves.sort();
    root_of(&leaves)
}

fn storage_root(storage: &BTreeMap<B256, U256>) -> B256 {
    let mut leaves: Vec<(B256, Vec<u8>)> = storage
        .iter()
        .map(|(slot, value)| (keccak256(slot), alloy_rlp::encode(value)))
        .collect();
    leaves.sort();
    root_of(&leaves)
}

fn root_of(sorted_leaves: &[(B256, Vec<u8>)]) -> B256 {
    if sorted_leaves.is_empty() {
        return EMPTY_ROOT_HASH;
    }
    let mut builder = HashBuilder::default();
    for (key, value) in sorted_leaves {
        builder.add_leaf(Nibbles::unpack(key), value);
    }
    builder.root()
}

#[derive(alloy_rlp::RlpEncodable)]
struct AccountRlp {
    nonce: u64,
    balance: U256,
    storage_root: B256,
    code_hash: B256,
}

/// keccak of `code`, or the hash of empty code.
pub fn code_hash(code: &[u8]) -> B256 {
    if code.is_empty() {
        KECCAK256_EMPTY
    } else {
        keccak256(code)
    }
}
