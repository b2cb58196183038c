//! revm's own in-memory state (`CacheDB<EmptyDB>`) and its root by
//! alloy-trie's HashBuilder: the independent side the store is checked against.

use alloy_primitives::{Address, B256, U256, keccak256};
use alloy_rlp::RlpEncodable;
use alloy_trie::{EMPTY_ROOT_HASH, HashBuilder, Nibbles};
use revm::database::{AccountState, CacheDB, DbAccount, EmptyDB};
use revm::state::{AccountInfo, Bytecode};

use strata_genesis::GenesisAlloc;

/// The account leaf: RLP([nonce, balance, storageRoot, codeHash]).
#[derive(RlpEncodable)]
struct Leaf {
    nonce: u64,
    balance: U256,
    storage_root: B256,
    code_hash: B256,
}

/// An in-memory revm database seeded with `alloc`.
pub(super) fn seeded(alloc: &GenesisAlloc) -> CacheDB<EmptyDB> {
    let mut db = CacheDB::new(EmptyDB::new());
    for (&address, account) in alloc {
        let code = Bytecode::new_raw(account.code.clone());
        let info = AccountInfo {
            balance: account.balance,
            nonce: account.nonce,
            code_hash: code.hash_slow(),
            account_id: None,
            code: Some(code),
        };
        db.insert_account_info(address, info);
        for (slot, value) in &account.storage {
            db.insert_account_storage(address, U256::from_be_bytes(slot.0), *value)
                .expect("EmptyDB never fails");
        }
    }
    db
}

/// Whether the account is in the state trie: it exists and is not empty
/// (EIP-161: CacheDB keeps touched empty accounts, the trie does not).
pub(super) fn alive(account: &DbAccount) -> bool {
    let exists = !matches!(account.account_state, AccountState::NotExisting);
    let empty = account.info.is_empty() && account.storage.values().all(|v| v.is_zero());
    exists && !empty
}

/// Every live account of `db`, by address.
pub(super) fn live_accounts(db: &CacheDB<EmptyDB>) -> Vec<(Address, &DbAccount)> {
    let mut out: Vec<_> = db
        .cache
        .accounts
        .iter()
        .filter(|(_, a)| alive(a))
        .map(|(&address, a)| (address, a))
        .collect();
    out.sort_by_key(|(address, _)| *address);
    out
}

/// The state root of `db` computed leaf by leaf.
pub(super) fn state_root(db: &CacheDB<EmptyDB>) -> B256 {
    let mut leaves: Vec<(B256, Vec<u8>)> = live_accounts(db)
        .into_iter()
        .map(|(address, account)| {
            let leaf = Leaf {
                nonce: account.info.nonce,
                balance: account.info.balance,
                storage_root: storage_root(account),
                code_hash: account.info.code_hash,
            };
            (keccak256(address), alloy_rlp::encode(&leaf))
        })
        .collect();
    root_of(&mut leaves)
}

fn storage_root(account: &DbAccount) -> B256 {
    let mut leaves: Vec<(B256, Vec<u8>)> = account
        .storage
        .iter()
        .filter(|(_, value)| !value.is_zero())
        .map(|(slot, value)| (keccak256(B256::from(*slot)), alloy_rlp::encode(value)))
        .collect();
    root_of(&mut leaves)
}

fn root_of(leaves: &mut [(B256, Vec<u8>)]) -> B256 {
    if leaves.is_empty() {
        return EMPTY_ROOT_HASH;
    }
    leaves.sort_by_key(|leaf| leaf.0);
    let mut builder = HashBuilder::default();
    for (key, value) in leaves.iter() {
        builder.add_leaf(Nibbles::unpack(key), value);
    }
    builder.root()
}
