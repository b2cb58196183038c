//! Block access lists: what a block reads and writes, known before it runs.
//!
//! [`BlockAccessList`] carries what EIP-7928's block-level access list
//! does, reduced to the state after the block: per account the slots it
//! reads, the slots it writes with their values after the block, and its
//! balance, nonce and code after the block. An EIP-7928 list maps onto it by
//! taking the last entry of each change list (`storage_changes`,
//! `balance_changes`, `nonce_changes`, `code_changes` are ordered by
//! transaction index); its `storage_reads` are the slots read.
//!
//! A [`crate::BlockWriter`] uses one in two ways:
//! [`prefetch`](crate::BlockWriter::prefetch) makes the warmers load every
//! listed account, slot and bytecode into the value cache and every
//! commitment path the writes touch into the branch cache, while the
//! caller executes; [`root_alongside`](crate::BlockWriter::root_alongside)
//! also computes the block's state root from the listed values on a thread
//! of its own, and `commit` then checks that the block wrote what the list
//! says ([`check_writes`]: a write of the value already there is no
//! difference).

use alloy_primitives::{Address, B256, KECCAK256_EMPTY, U256, keccak256};
use bytes::Bytes;

use crate::error::{ReadError, Result};
use crate::overlay::Overlay;
use crate::sources::{account_path, storage_path};
use strata_types::account::Account;
use strata_types::domain::Domain;

/// The accounts a block touches and the state it leaves them in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockAccessList {
    /// Every account the block reads or writes, each once.
    pub accounts: Vec<AccountAccess>,
}

/// One account of a [`BlockAccessList`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccountAccess {
    /// The account.
    pub address: Address,
    /// Slots the block reads (and does not write).
    pub storage_reads: Vec<B256>,
    /// Slots the block writes, with their values after the block (zero:
    /// the slot is deleted).
    pub storage_changes: Vec<(B256, U256)>,
    /// The balance after the block, when the block changes it.
    pub balance: Option<U256>,
    /// The nonce after the block, when the block changes it.
    pub nonce: Option<u64>,
    /// The bytecode after the block, when the block changes it (empty:
    /// the code is removed).
    pub code: Option<Bytes>,
    /// The account and its whole storage were deleted (SELFDESTRUCT)
    /// before the changes above applied. EIP-7928 lists do not carry it
    /// (since Cancun an account is destroyed only in the transaction that
    /// created it, so it never outlives the block); replays of older blocks
    /// need it.
    pub destroyed: bool,
}

impl AccountAccess {
    /// Whether the block changes the account (or its storage).
    pub fn is_written(&self) -> bool {
        self.destroyed || self.sets_fields()
    }

    /// Whether the block sets a field or a slot of the account (which,
    /// after a destruction, re-creates it).
    fn sets_fields(&self) -> bool {
        self.balance.is_some()
            || self.nonce.is_some()
            || self.code.is_some()
            || !self.storage_changes.is_empty()
    }
}

impl BlockAccessList {
    /// Number of account, slot and code entries: what a prefetch loads.
    pub fn len(&self) -> usize {
        self.accounts
            .iter()
            .map(|a| 1 + a.storage_reads.len() + a.storage_changes.len())
            .sum()
    }

    /// Whether the list names nothing.
    pub fn is_empty(&self) -> bool {
        self.accounts.is_empty()
    }
}

/// Writes the list's changes into `overlay`, each account's fields over the
/// account as `current` reads it (the block's state so far): destruction
/// first, then balance, nonce and code (keeping the code hash in step),
/// then the slots. Returns the number of account and slot writes.
pub fn stage(
    list: &BlockAccessList,
    overlay: &mut Overlay,
    current: impl Fn(&Overlay, &Address) -> Result<Option<Account>>,
) -> Result<usize> {
    let mut written = 0;
    for access in &list.accounts {
        let address = access.address;
        if access.destroyed {
            overlay.delete_account(address);
            written += 1;
        }
        if !access.sets_fields() {
            continue;
        }
        let mut account = if access.destroyed {
            Account::default()
        } else {
            current(overlay, &address)?.unwrap_or_default()
        };
        if let Some(balance) = access.balance {
            account.balance = balance;
        }
        if let Some(nonce) = access.nonce {
            account.nonce = nonce;
        }
        if let Some(code) = &access.code {
            account.code_hash = strata_types::account::code_hash(code);
            overlay.put_code(address, code.clone());
        }
        overlay.put_account(address, &account);
        written += 1;
        for (slot, value) in &access.storage_changes {
            overlay.put_storage(address, *slot, *value);
            written += 1;
        }
    }
    Ok(written)
}

/// The first key where `found` (the block's writes) differs from
/// `expected` (the access list's), as an [`ReadError::AccessListMismatch`].
/// A key one side writes and the other does not is no difference when the
/// written value is the one `before` (the state before the block) holds:
/// writing what is there changes nothing.
pub fn check_writes(
    block: u64,
    expected: &Overlay,
    found: &Overlay,
    before: impl Fn(Domain, &[u8]) -> Result<Option<Bytes>>,
) -> Result<()> {
    for domain in [Domain::Account, Domain::Storage, Domain::Code] {
        let (listed, written) = (expected.entries(domain), found.entries(domain));
        let mut listed_iter = listed.iter().peekable();
        let mut written_iter = written.iter().peekable();
        loop {
            let (key, listed_value, written_value) = match (listed_iter.peek(), written_iter.peek())
            {
                (None, None) => break,
                (Some((lk, lv)), Some((wk, wv))) if lk == wk => {
                    let out = (lk.to_vec(), Some(*lv), Some(*wv));
                    listed_iter.next();
                    written_iter.next();
                    out
                }
                (Some((lk, lv)), Some((wk, _))) if lk < wk => {
                    let out = (lk.to_vec(), Some(*lv), None);
                    listed_iter.next();
                    out
                }
                (Some((lk, lv)), None) => {
                    let out = (lk.to_vec(), Some(*lv), None);
                    listed_iter.next();
                    out
                }
                (_, Some((wk, wv))) => {
                    let out = (wk.to_vec(), None, Some(*wv));
                    written_iter.next();
                    out
                }
            };
            let unchanged = match (listed_value, written_value) {
                (Some(value), None) | (None, Some(value)) => *value == before(domain, &key)?,
                _ => false,
            };
            if listed_value != written_value && !unchanged {
                return Err(ReadError::AccessListMismatch {
                    block,
                    domain,
                    key: alloy_primitives::hex::encode(&key),
                    listed: describe(listed_value),
                    written: describe(written_value),
                });
            }
        }
    }
    // Wiping the storage of an account that did not exist before the
    // block (a contract created at a fresh address) wipes nothing.
    let mut differing_wipes = expected.wiped().symmetric_difference(found.wiped());
    let first_real_wipe = loop {
        match differing_wipes.next() {
            None => break None,
            Some(address) if before(Domain::Account, address.as_slice())?.is_none() => continue,
            Some(address) => break Some(address),
        }
    };
    if let Some(address) = first_real_wipe {
        let listed = expected.wiped().contains(address);
        return Err(ReadError::AccessListMismatch {
            block,
            domain: Domain::Storage,
            key: address.to_string(),
            listed: if listed {
                "storage wiped"
            } else {
                "storage kept"
            }
            .to_owned(),
            written: if listed {
                "storage kept"
            } else {
                "storage wiped"
            }
            .to_owned(),
        });
    }
    Ok(())
}

/// A write as an error message shows it.
fn describe(write: Option<&Option<Bytes>>) -> String {
    match write {
        None => "not written".to_owned(),
        Some(None) => "deleted".to_owned(),
        Some(Some(value)) if value.len() <= 64 => {
            format!("0x{}", alloy_primitives::hex::encode(value))
        }
        Some(Some(value)) => format!("{} bytes with hash {}", value.len(), keccak256(value)),
    }
}

/// One thing a prefetch loads.
#[derive(Clone, Debug)]
pub enum PrefetchItem {
    /// An account, and its bytecode (by hash) when it has any.
    Account(Address),
    /// A storage slot.
    Slot(Address, B256),
    /// A commitment path (one nibble per byte) the block's writes touch.
    Path(Vec<u8>),
}

/// Loads one prefetch item through `values` (the value cache) or
/// `branches` (the branch cache).
pub fn prefetch_one(
    values: &crate::reader::StateReader,
    branches: &crate::sources::CachedBranches,
    item: &PrefetchItem,
) -> std::result::Result<(), strata_commitment::SourceError> {
    match item {
        PrefetchItem::Account(address) => {
            if let Some(account) = values.account(address)?
                && account.code_hash != KECCAK256_EMPTY
            {
                values.code_by_hash(&account.code_hash)?;
            }
        }
        PrefetchItem::Slot(address, slot) => {
            values.storage(address, slot)?;
        }
        PrefetchItem::Path(path) => {
            strata_commitment::warm_path(branches, path)?;
        }
    }
    Ok(())
}

/// Every account and slot of `list`, accounts first (their slots follow
/// them closely in the same warmers' queue), then the commitment paths of
/// the written keys.
pub fn prefetch_items(list: &BlockAccessList) -> Vec<PrefetchItem> {
    let mut items = Vec::with_capacity(list.len() * 2);
    for access in &list.accounts {
        items.push(PrefetchItem::Account(access.address));
        for slot in access
            .storage_reads
            .iter()
            .chain(access.storage_changes.iter().map(|(slot, _)| slot))
        {
            items.push(PrefetchItem::Slot(access.address, *slot));
        }
    }
    for access in list.accounts.iter().filter(|a| a.is_written()) {
        let account_path = account_path(&access.address);
        for (slot, _) in &access.storage_changes {
            items.push(PrefetchItem::Path(storage_path(&account_path, slot)));
        }
        items.push(PrefetchItem::Path(account_path));
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list() -> BlockAccessList {
        BlockAccessList {
            accounts: vec![
                AccountAccess {
                    address: Address::repeat_byte(1),
                    storage_reads: vec![B256::with_last_byte(9)],
                    storage_changes: vec![(B256::with_last_byte(1), U256::from(5))],
                    balance: Some(U256::from(7)),
                    ..AccountAccess::default()
                },
                AccountAccess {
                    address: Address::repeat_byte(2),
                    ..AccountAccess::default()
                },
            ],
        }
    }

    #[test]
    fn staging_writes_only_the_changed_accounts_over_their_current_state() {
        let mut overlay = Overlay::default();
        let written = stage(&list(), &mut overlay, |_, _| {
            Ok(Some(Account {
                nonce: 3,
                ..Account::default()
            }))
        })
        .unwrap();
        assert_eq!(written, 2);
        let raw = overlay
            .get(Domain::Account, Address::repeat_byte(1).as_slice())
            .unwrap()
            .unwrap();
        let account = Account::decode(raw).unwrap();
        assert_eq!((account.nonce, account.balance), (3, U256::from(7)));
        assert!(
            overlay
                .get(Domain::Account, Address::repeat_byte(2).as_slice())
                .is_none()
        );
        assert_eq!(list().len(), 4);
        // 2 accounts + 2 slots, then the written slot's path and its account's.
        assert_eq!(prefetch_items(&list()).len(), 6);
    }

    fn nothing_before(_: Domain, _: &[u8]) -> Result<Option<Bytes>> {
        Ok(None)
    }

    #[test]
    fn a_write_of_the_value_already_there_is_no_difference() {
        let mut listed = Overlay::default();
        stage(&list(), &mut listed, |_, _| Ok(None)).unwrap();
        let mut written = listed.clone();
        let (address, slot) = (Address::repeat_byte(3), B256::ZERO);
        written.put_storage(address, slot, U256::from(1));
        let key = written
            .entries(Domain::Storage)
            .keys()
            .find(|key| key.starts_with(address.as_slice()))
            .cloned()
            .expect("the slot's key");
        let value = written.entries(Domain::Storage)[&key].clone();
        let same = |domain: Domain, at: &[u8]| {
            Ok(if domain == Domain::Storage && at == key.as_slice() {
                value.clone()
            } else {
                None
            })
        };
        check_writes(5, &listed, &written, same).unwrap();
        assert!(check_writes(5, &listed, &written, nothing_before).is_err());
    }

    #[test]
    fn the_first_differing_key_is_named() {
        let mut listed = Overlay::default();
        stage(&list(), &mut listed, |_, _| Ok(None)).unwrap();
        let mut written = listed.clone();
        check_writes(5, &listed, &written, nothing_before).unwrap();
        written.put_storage(
            Address::repeat_byte(1),
            B256::with_last_byte(1),
            U256::from(6),
        );
        let error = check_writes(5, &listed, &written, nothing_before)
            .unwrap_err()
            .to_string();
        assert!(error.contains("block 5"), "{error}");
        assert!(error.contains("0x06"), "{error}");
        let mut extra = listed.clone();
        extra.put_storage(Address::repeat_byte(3), B256::ZERO, U256::from(1));
        let error = check_writes(5, &listed, &extra, nothing_before)
            .unwrap_err()
            .to_string();
        assert!(error.contains("not written"), "{error}");
        let mut wiped = listed.clone();
        wiped.delete_account(Address::repeat_byte(4));
        // Wiping an account that did not exist wipes nothing; one that did, does.
        check_writes(5, &listed, &wiped, nothing_before).unwrap();
        let existed = |domain: Domain, key: &[u8]| {
            Ok(
                (domain == Domain::Account && key == Address::repeat_byte(4).as_slice())
                    .then(|| Bytes::from_static(b"an account")),
            )
        };
        assert!(check_writes(5, &listed, &wiped, existed).is_err());
    }
}
