//! Check 4: the commitment the values imply, derived in bounded memory —
//! the same pipeline as an import, fed from the live entries instead of a
//! dump.
//!
//! 1. **Storage**: the live slots, in key order, come grouped by account
//!    (storage of an address with no live account is reported and left
//!    out); batches of accounts have their storage tries built on rayon
//!    ([`StorageTrieBuilder`]). Records go to an external sort by record
//!    key, storage roots to one by address.
//! 2. **Code**: each live code is reduced to its [`CodeDigest`], sorted by
//!    address.
//! 3. **Accounts**: the live accounts, in address order, merge with the
//!    storage roots and the code digests (what is left over belongs to no
//!    account); codes are checked; the leaves go to a sort by hashed
//!    address.
//! 4. **Account trie**: the leaves stream into the bulk builder (shared
//!    with the import), its records into the record sort; the root.
//!
//! The caller then compares the stored records with the sorted derived
//! ones as a merge. Peak memory: the sorts' budget, one batch of accounts'
//! storage (at most [`BATCH_SLOTS`] slots beyond one account), and one
//! account's storage up to a fifth of the budget: a larger account is
//! sorted on its own and streamed into its builder.

use std::path::Path;

use alloy_primitives::{Address, B256, U256, keccak256};
use rayon::prelude::*;
use strata_commitment::{AccountLeaf, EMPTY_ROOT, StorageTrieBuilder};

use crate::error::{Error, Result};
use alloy_primitives::hex::encode as hex;
use strata_bulk::account_trie::{
    BuiltStorage, LeafEntry, RepeatedSlot, SlotSort, SlotSortError, build_account_trie,
    build_storage_trie,
};
use strata_bulk::sort::{ExternalSorter, RunError, SortedPairs};
use strata_types::account::{Account, decode_slot_value};
use strata_types::domain::Domain;
use strata_types::keys::{address_key, split_storage_key};
use strata_view::reader::StateReader as ViewReader;

use super::VerifyReport;
use super::code::{CodeDigest, check_account_code, orphan_code};
use super::guard::guarded;

/// Accounts whose storage tries are built together on the rayon pool.
const BATCH_ACCOUNTS: usize = 2048;
/// Storage slots built together (fewer accounts when they are large).
const BATCH_SLOTS: usize = 1 << 16;

/// What the values imply.
pub(super) struct Derived {
    /// The state root computed from every live leaf.
    pub(super) root: B256,
    /// Every commitment record (the root record aside), in key order.
    pub(super) records: SortedPairs,
    /// How many records `records` yields.
    pub(super) record_count: u64,
}

/// Why the commitment could not be derived: problems for the report.
pub(super) type NotDerived = Vec<String>;

/// The sorts of a derivation.
struct Sorts {
    /// Record key → record.
    records: ExternalSorter,
    /// Address → storage root, of the accounts with storage.
    roots: ExternalSorter,
    /// Address → [`CodeDigest`].
    codes: ExternalSorter,
    /// keccak(address) → [`LeafEntry`].
    leaves: ExternalSorter,
    /// Where the runs go.
    dir: std::path::PathBuf,
    /// The budget of one large account's own sort.
    large_budget: usize,
    /// Runs the large accounts' sorts spilled.
    large_runs: usize,
}

impl Sorts {
    fn new(dir: &Path, budget: usize) -> Self {
        Self {
            records: ExternalSorter::new(dir, "records", budget / 100 * 40),
            roots: ExternalSorter::new(dir, "roots", budget / 100 * 10),
            codes: ExternalSorter::new(dir, "codes", budget / 100 * 10),
            leaves: ExternalSorter::new(dir, "leaves", budget / 100 * 20),
            dir: dir.to_path_buf(),
            large_budget: budget / 100 * 20,
            large_runs: 0,
        }
    }
}

/// Derives the root and the records from the live values `view` reads
/// (the head's tiers, or an old block through the history),
/// sorting in `scratch` within `budget` bytes; counts accounts, slots and
/// codes into `report` and adds the problems of the values (bad keys,
/// undecodable values, orphan storage and code, code that does not match).
pub(super) fn derive(
    view: &ViewReader,
    scratch: &Path,
    budget: usize,
    report: &mut VerifyReport,
) -> std::result::Result<Derived, NotDerived> {
    let block = report.block.unwrap_or(0);
    let mut sorts = Sorts::new(scratch, budget);
    let not_derived = |problem: String| {
        vec![
            problem,
            "the root, the commitment records and the code were not checked: the values could not be read"
                .to_owned(),
        ]
    };
    build_storage_tries(view, block, &mut sorts, report).map_err(not_derived)?;
    let digested = digest_codes(view, &mut sorts.codes, &mut report.problems);
    report.sort_runs += sorts.codes.runs() + sorts.roots.runs();
    let codes = match digested {
        Ok(()) => Some(
            sorts
                .codes
                .finish()
                .map_err(|e| not_derived(e.to_string()))?,
        ),
        Err(problem) => {
            report.problems.push(problem);
            report
                .problems
                .push("the code was not checked: it could not be read".to_owned());
            None
        }
    };
    let roots = sorts
        .roots
        .finish()
        .map_err(|e| not_derived(e.to_string()))?;
    walk_accounts(view, roots, codes, &mut sorts.leaves, report).map_err(not_derived)?;
    report.sort_runs += sorts.leaves.runs();
    let leaves = sorts
        .leaves
        .finish()
        .map_err(|e| not_derived(e.to_string()))?;
    let root = build_account_trie(block, leaves, &mut sorts.records)
        .map_err(|error| vec![format!("recomputing the root: {error}")])?;
    let record_count = sorts.records.pairs();
    report.sort_runs += sorts.records.runs() + sorts.large_runs;
    let records = sorts
        .records
        .finish()
        .map_err(|e| vec![format!("sorting the derived commitment records: {e}")])?;
    Ok(Derived {
        root,
        records,
        record_count,
    })
}

/// One account's live slots, `(slot, value)` in slot order (held while
/// the account is small).
type AccountSlots = (Address, Vec<(B256, U256)>);

/// Step 1: walks the live slots, building each account's storage trie
/// (storage whose account is not live is a problem, left out).
fn build_storage_tries(
    view: &ViewReader,
    block: u64,
    sorts: &mut Sorts,
    report: &mut VerifyReport,
) -> std::result::Result<(), String> {
    let mut tries = StorageTries::new(block, sorts.large_budget);
    let mut failed: Option<Error> = None;
    // The account whose slots are coming, and whether it is live.
    let mut current: Option<(Address, bool)> = None;
    let walked = guarded("redb table `storage` and the storage files", || {
        view.visit_range(Domain::Storage, &[], None, |key, raw| {
            report.slots += 1;
            let Some((address, slot)) = split_storage_key(&key) else {
                report
                    .problems
                    .push(format!("storage key 0x{} is not address ‖ slot", hex(&key)));
                return true;
            };
            let value = match decode_slot_value(&raw) {
                Ok(value) => value,
                Err(what) => {
                    report
                        .problems
                        .push(format!("storage 0x{}: {what}", hex(&key)));
                    return true;
                }
            };
            let live = match current {
                Some((at, live)) if at == address => live,
                _ => {
                    // Storage of no account is not part of the trie.
                    let live = match view.get_latest(Domain::Account, address.as_slice()) {
                        Ok(found) => found.is_some(),
                        Err(e) => {
                            failed = Some(e.into());
                            return false;
                        }
                    };
                    if !live {
                        report.problems.push(orphan_storage(address.as_slice()));
                    }
                    current = Some((address, live));
                    live
                }
            };
            if live && let Err(e) = tries.add(sorts, address, slot, value) {
                failed = Some(e);
                return false;
            }
            true
        })
    });
    walked?;
    if let Some(error) = failed {
        return Err(format!("building the storage tries: {error}"));
    }
    tries
        .finish(sorts)
        .map_err(|e| format!("building the storage tries: {e}"))
}

/// Bytes one slot costs while its account is held in memory (the slot and
/// value, then its hashed copy and its share of the records), for the
/// threshold of a large account.
const HELD_BYTES_PER_SLOT: usize = 64 + 96 + 64;

/// Groups the slots by account and builds each account's storage trie:
/// accounts in batches on rayon, and an account too large to hold (more
/// slots than a fifth of the budget holds) through an external sort of its
/// own, streamed into the builder — so one huge contract does not break the
/// memory bound.
struct StorageTries {
    block: u64,
    batch: Vec<AccountSlots>,
    batch_slots: usize,
    /// Slots above which an account is sorted on its own.
    large_slots: usize,
    large_budget: usize,
    large: Option<LargeAccount>,
}

/// An account whose slots go through a sort of their own.
struct LargeAccount {
    address: Address,
    slots: SlotSort,
}

impl StorageTries {
    fn new(block: u64, large_budget: usize) -> Self {
        Self {
            block,
            batch: Vec::new(),
            batch_slots: 0,
            large_slots: (large_budget / HELD_BYTES_PER_SLOT).max(1),
            large_budget,
            large: None,
        }
    }

    /// Adds the next live slot (in key order, so grouped by account).
    fn add(&mut self, sorts: &mut Sorts, address: Address, slot: B256, value: U256) -> Result<()> {
        if let Some(large) = &mut self.large {
            if large.address == address {
                return Ok(large.slots.push(slot, value)?);
            }
            self.finish_large(sorts)?;
        }
        match self.batch.last_mut() {
            Some((last, slots)) if *last == address => {
                slots.push((slot, value));
                self.batch_slots += 1;
                if slots.len() >= self.large_slots {
                    let (address, slots) = self.batch.pop().expect("the last account");
                    self.batch_slots -= slots.len();
                    let mut large = LargeAccount {
                        address,
                        slots: SlotSort::new(&sorts.dir, self.large_budget),
                    };
                    for (slot, value) in slots {
                        large.slots.push(slot, value)?;
                    }
                    self.large = Some(large);
                }
            }
            _ => {
                if self.batch.len() >= BATCH_ACCOUNTS || self.batch_slots >= BATCH_SLOTS {
                    build_batch(self.block, &mut self.batch, sorts)?;
                    self.batch_slots = 0;
                }
                self.batch.push((address, vec![(slot, value)]));
                self.batch_slots += 1;
            }
        }
        Ok(())
    }

    /// Builds what is still held.
    fn finish(mut self, sorts: &mut Sorts) -> Result<()> {
        if self.large.is_some() {
            self.finish_large(sorts)?;
        }
        build_batch(self.block, &mut self.batch, sorts)
    }

    /// Streams the large account's sorted slots into its storage trie.
    fn finish_large(&mut self, sorts: &mut Sorts) -> Result<()> {
        let Some(LargeAccount { address, slots }) = self.large.take() else {
            return Ok(());
        };
        sorts.large_runs += slots.runs();
        let root = slots
            .build(self.block, address, &mut sorts.records, |_, _| Ok(()))
            .map_err(|e| match e {
                SlotSortError::Failed(e) => Error::from(e),
                // Live keys are unique: a repeat is a fault of the merge.
                SlotSortError::Repeated(RepeatedSlot(slot)) => Error::Corrupt {
                    table: "storage",
                    what: format!("slot {slot} of {address} came twice from the live range"),
                },
            })?;
        sorts.roots.push(address.as_slice(), root.as_slice())?;
        Ok(())
    }
}

/// Builds the storage tries of `batch` (emptied) on rayon, their records
/// and roots into the sorts.
fn build_batch(block: u64, batch: &mut Vec<AccountSlots>, sorts: &mut Sorts) -> Result<()> {
    let built: Vec<Result<(Address, BuiltStorage)>> = batch
        .par_drain(..)
        .map_init(StorageTrieBuilder::new, |tries, (address, slots)| {
            Ok((address, build_storage_trie(tries, block, address, slots)?))
        })
        .collect();
    for account in built {
        let (address, storage) = account?;
        sorts
            .roots
            .push(address.as_slice(), storage.root.as_slice())?;
        for (key, record) in &storage.records {
            sorts.records.push(key, record)?;
        }
    }
    Ok(())
}

/// Step 2: the digest of every live code, by address (a key that is not
/// an address is a problem in `problems`).
fn digest_codes(
    view: &ViewReader,
    codes: &mut ExternalSorter,
    problems: &mut Vec<String>,
) -> std::result::Result<(), String> {
    let mut failed: Option<RunError> = None;
    guarded("redb table `code` and the code files", || {
        view.visit_range(Domain::Code, &[], None, |key, code| {
            if address_key(&key).is_none() {
                problems.push(format!("code key 0x{} is not an address", hex(&key)));
                return true;
            }
            match codes.push(&key, &CodeDigest::of(&code).encode()) {
                Ok(()) => true,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            }
        })
    })?;
    match failed {
        Some(e) => Err(format!("sorting the code digests: {e}")),
        None => Ok(()),
    }
}

/// Step 3: walks the live accounts in address order beside the storage
/// roots and code digests; checks codes; sorts the leaves.
fn walk_accounts(
    view: &ViewReader,
    mut roots: SortedPairs,
    mut codes: Option<SortedPairs>,
    leaves: &mut ExternalSorter,
    report: &mut VerifyReport,
) -> std::result::Result<(), String> {
    let mut failed: Option<String> = None;
    let mut code_by_hash = |hash: &B256| {
        guarded("redb table `code_by_hash`", || {
            view.snapshot().code_by_hash(hash)
        })
    };
    let mut problems = Vec::new();
    let mut accounts = 0u64;
    let mut codes_checked = 0u64;
    guarded("redb table `account` and the account files", || {
        view.visit_range(Domain::Account, &[], None, |key, raw| {
            let step = (|| -> std::result::Result<(), String> {
                let root = take_up_to(&mut roots, &key, |orphan, _| {
                    problems.push(orphan_storage(orphan))
                })?;
                let code = match codes.as_mut() {
                    Some(codes) => take_up_to(codes, &key, |orphan, digest| {
                        problems.push(orphan_code(orphan, decode_digest(digest)))
                    })?,
                    None => None,
                };
                let Some(address) = address_key(&key) else {
                    problems.push(format!("account key 0x{} is not an address", hex(&key)));
                    return Ok(());
                };
                let account = match Account::decode(&raw) {
                    Ok(account) => account,
                    Err(what) => {
                        problems.push(format!("account {address}: {what}"));
                        // Its storage and code belong to no decodable account.
                        if root.is_some() {
                            problems.push(orphan_storage(&key));
                        }
                        if let Some(code) = code {
                            problems.push(orphan_code(&key, decode_digest(&code)));
                        }
                        return Ok(());
                    }
                };
                if codes.is_some() {
                    let digest = code.as_deref().map(decode_digest);
                    codes_checked += u64::from(check_account_code(
                        address,
                        &account,
                        digest,
                        &mut code_by_hash,
                        &mut problems,
                    ));
                }
                let storage_root = root
                    .as_deref()
                    .map_or(EMPTY_ROOT, |entry| B256::from_slice(entry));
                let leaf = LeafEntry {
                    address,
                    leaf: AccountLeaf {
                        nonce: account.nonce,
                        balance: account.balance,
                        code_hash: account.code_hash,
                    },
                    storage_root,
                };
                leaves
                    .push(keccak256(address).as_slice(), &leaf.encode())
                    .map_err(|e| format!("sorting the account leaves: {e}"))?;
                accounts += 1;
                Ok(())
            })();
            match step {
                Ok(()) => true,
                Err(problem) => {
                    failed = Some(problem);
                    false
                }
            }
        })
    })?;
    if let Some(problem) = failed {
        return Err(problem);
    }
    let end = [0xffu8; 21];
    take_up_to(&mut roots, &end, |orphan, _| {
        problems.push(orphan_storage(orphan))
    })?;
    if let Some(codes) = codes.as_mut() {
        take_up_to(codes, &end, |orphan, digest| {
            problems.push(orphan_code(orphan, decode_digest(digest)))
        })?;
    }
    report.accounts += accounts;
    report.codes_checked += codes_checked;
    report.problems.extend(problems);
    Ok(())
}

/// Takes the entries of `pairs` before `key` (each given to `orphan`) and
/// returns the value at `key`, if any.
fn take_up_to(
    pairs: &mut SortedPairs,
    key: &[u8],
    mut orphan: impl FnMut(&[u8], &[u8]),
) -> std::result::Result<Option<Vec<u8>>, String> {
    while let Some(next) = pairs.peek_key() {
        if next > key {
            break;
        }
        let (found, value) = pairs
            .next()
            .expect("peeked")
            .map_err(|e| format!("reading back a sort: {e}"))?;
        if found == key {
            return Ok(Some(value));
        }
        orphan(&found, &value);
    }
    Ok(None)
}

/// The problem of live storage whose address (`key`) has no account.
fn orphan_storage(key: &[u8]) -> String {
    match address_key(key) {
        Some(address) => format!("storage of {address} exists without its account"),
        None => format!("storage of 0x{} exists without its account", hex(key)),
    }
}

/// A digest the code sort wrote (always [`CodeDigest::LEN`] bytes).
fn decode_digest(bytes: &[u8]) -> CodeDigest {
    CodeDigest::decode(bytes).expect("the code sort holds digests")
}
