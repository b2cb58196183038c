//! An in-memory model of the state and its root by alloy-trie's HashBuilder:
//! the oracle the store is checked against.

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, Bytes, KECCAK256_EMPTY, U256, keccak256};
use alloy_trie::{EMPTY_ROOT_HASH, HashBuilder, Nibbles};
use strata_storage::{Account, StateReader};

/// One account of the model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ModelAccount {
    pub(crate) account: Account,
    pub(crate) code: Option<Bytes>,
    pub(crate) storage: BTreeMap<B256, U256>,
}

/// The whole state, as plain maps.
pub(crate) type Model = BTreeMap<Address, ModelAccount>;

/// The Ethereum state root of `model`, computed from scratch.
pub(crate) fn model_root(model: &Model) -> B256 {
    let mut leaves: Vec<(B256, Vec<u8>)> = model
        .iter()
        .map(|(address, entry)| {
            let storage_root = storage_root(&entry.storage);
            let mut out = Vec::new();
            let fields = AccountRlp {
                nonce: entry.account.nonce,
                balance: entry.account.balance,
                storage_root,
                code_hash: entry.account.code_hash,
            };
            alloy_rlp::Encodable::encode(&fields, &mut out);
            (keccak256(address), out)
        })
        .collect();
    leaves.sort();
    let mut builder = HashBuilder::default();
    for (key, value) in &leaves {
        builder.add_leaf(Nibbles::unpack(key), value);
    }
    builder.root()
}

fn storage_root(storage: &BTreeMap<B256, U256>) -> B256 {
    if storage.is_empty() {
        return EMPTY_ROOT_HASH;
    }
    let mut leaves: Vec<(B256, Vec<u8>)> = storage
        .iter()
        .filter(|(_, v)| !v.is_zero())
        .map(|(slot, value)| (keccak256(slot), alloy_rlp::encode(value)))
        .collect();
    leaves.sort();
    let mut builder = HashBuilder::default();
    for (key, value) in &leaves {
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

/// Asserts that every account, slot and code of `addresses` × `slots` reads
/// through `reader` exactly as the model has it.
pub(crate) fn assert_reads_match(
    reader: &StateReader,
    model: &Model,
    addresses: &[Address],
    slots: &[B256],
    context: &str,
) {
    for address in addresses {
        let expected = model.get(address);
        let found = reader.account(address).unwrap();
        assert_eq!(
            found,
            expected.map(|e| e.account),
            "{context}: account {address}"
        );
        let code = reader.code(address).unwrap();
        assert_eq!(
            code.as_deref(),
            expected.and_then(|e| e.code.as_ref()).map(|c| &c[..]),
            "{context}: code of {address}"
        );
        for slot in slots {
            let value = reader.storage(address, slot).unwrap();
            let want = expected
                .and_then(|e| e.storage.get(slot).copied())
                .unwrap_or(U256::ZERO);
            assert_eq!(value, want, "{context}: slot {slot} of {address}");
        }
    }
}

/// keccak of `code`, or the empty hash.
pub(crate) fn code_hash(code: &[u8]) -> B256 {
    if code.is_empty() {
        KECCAK256_EMPTY
    } else {
        keccak256(code)
    }
}

/// Every one of `addresses` and `slots` proven by `prove` against
/// `model`'s root and values with alloy-trie's `verify_proof`, whichever
/// tier holds the records.
pub(crate) fn assert_proofs_match(
    prove: &dyn Fn(&Address, &[B256]) -> strata_storage::Result<strata_storage::AccountProof>,
    model: &Model,
    addresses: &[Address],
    slots: &[B256],
    context: &str,
) {
    use alloy_trie::proof::verify_proof;
    let root = model_root(model);
    for address in addresses {
        let proof = prove(address, slots).unwrap_or_else(|e| panic!("{context}: {address}: {e}"));
        let entry = model.get(address);
        let storage_root = entry.map_or(EMPTY_ROOT_HASH, |e| storage_root(&e.storage));
        assert_eq!(proof.storage_root, storage_root, "{context}: {address}");
        let expected = entry.map(|entry| {
            alloy_rlp::encode(AccountRlp {
                nonce: entry.account.nonce,
                balance: entry.account.balance,
                storage_root,
                code_hash: entry.account.code_hash,
            })
        });
        verify_proof(
            root,
            Nibbles::unpack(keccak256(address)),
            expected,
            &proof.proof,
        )
        .unwrap_or_else(|e| panic!("{context}: proof of {address}: {e}"));
        for slot in &proof.storage {
            let value = entry
                .and_then(|e| e.storage.get(&slot.slot).copied())
                .unwrap_or_default();
            assert_eq!(slot.value, value, "{context}: {address} {}", slot.slot);
            let expected = (!value.is_zero()).then(|| alloy_rlp::encode(value));
            verify_proof(
                storage_root,
                Nibbles::unpack(keccak256(slot.slot)),
                expected,
                &slot.proof,
            )
            .unwrap_or_else(|e| panic!("{context}: proof of {address} {}: {e}", slot.slot));
        }
    }
}
