//! The state root of the model, computed with `alloy_trie::HashBuilder`:
//! storage trie per account over keccak(slot) → RLP(value), account trie
//! over keccak(address) → RLP[nonce, balance, storageRoot, codeHash].

use alloy_primitives::{B256, U256};
use alloy_rlp::{Encodable, Header};
use alloy_trie::{HashBuilder, Nibbles};

use super::{Account, WorldState};

impl Account {
    /// The root of this account's storage trie (cached until the storage changes).
    pub fn storage_root(&mut self) -> B256 {
        if let Some(root) = self.storage_root {
            return root;
        }
        let mut builder = HashBuilder::default();
        let mut value_rlp = Vec::with_capacity(33);
        for (hashed_slot, value) in &self.hashed_storage {
            value_rlp.clear();
            value.encode(&mut value_rlp);
            builder.add_leaf(Nibbles::unpack(hashed_slot), &value_rlp);
        }
        let root = builder.root();
        self.storage_root = Some(root);
        root
    }

    fn leaf(&mut self) -> &[u8] {
        if self.leaf.is_none() {
            let storage_root = self.storage_root();
            self.leaf = Some(account_rlp(
                self.nonce,
                self.balance,
                storage_root,
                self.code_hash,
            ));
        }
        self.leaf.as_deref().unwrap_or_default()
    }
}

impl WorldState {
    /// The Ethereum state root of the whole state. Storage roots and leaf
    /// encodings of accounts unchanged since the last call are reused; the
    /// account trie itself is re-hashed (O(accounts) per call).
    pub fn state_root(&mut self) -> B256 {
        let mut builder = HashBuilder::default();
        for (hashed_address, address) in &self.by_hash {
            if let Some(account) = self.accounts.get_mut(address) {
                builder.add_leaf(Nibbles::unpack(hashed_address), account.leaf());
            }
        }
        builder.root()
    }
}

/// RLP of an account leaf: `[nonce, balance, storageRoot, codeHash]`.
fn account_rlp(nonce: u64, balance: U256, storage_root: B256, code_hash: B256) -> Vec<u8> {
    let payload_length =
        nonce.length() + balance.length() + storage_root.length() + code_hash.length();
    let mut out = Vec::with_capacity(payload_length + 3);
    Header {
        list: true,
        payload_length,
    }
    .encode(&mut out);
    nonce.encode(&mut out);
    balance.encode(&mut out);
    storage_root.encode(&mut out);
    code_hash.encode(&mut out);
    out
}
