//! `verify`: re-check every file, the tiers' agreement, every account's code
//! against its hash, every commitment record against the records the bulk
//! builder derives from the values, the root recomputed from scratch, and
//! (for [`verify_datadir`]) redb's own integrity check on a copy-on-write view of `state.redb`.
//!
//! Verify only reads: [`verify_datadir`] opens the datadir read-only and
//! changes no byte of it; a redb panic on a damaged page becomes a problem
//! naming the table.

mod code;
mod guard;
mod integrity;
mod open;
mod records;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use alloy_primitives::{Address, B256, U256, keccak256};
use bytes::Bytes;
use strata_commitment::{AccountLeaf, SortedAccount, build_from_sorted, record_key};

use crate::account::{Account, decode_slot_value};
use crate::db::value::hex;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::files::{FileSystem, SortedFile};
use crate::inner::Inner;
use crate::keys::{address_key, split_storage_key};
use crate::options::Options;
use crate::snapshot::Snapshot;
use crate::sources::ROOT_RECORD_KEY;
use crate::state_db::DB_FILE;

use self::guard::guarded;
pub use self::integrity::IntegrityTiming;

/// States at least this large are bulk-built on rayon, 16 sub-tries at once.
const PARALLEL_BUILD: usize = 4096;

/// What `verify` checked and what it found wrong.
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    /// The block verified.
    pub block: Option<u64>,
    /// Files whose bytes were re-read and checked.
    pub files_checked: usize,
    /// Bytes of those files.
    pub file_bytes: u64,
    /// Live accounts found across the tiers.
    pub accounts: u64,
    /// Live storage slots found across the tiers.
    pub slots: u64,
    /// Codes hashed and compared with their account's code hash.
    pub codes_checked: u64,
    /// Commitment records stored (the root record aside), each compared
    /// with the record the values imply.
    pub records_checked: u64,
    /// Stored commitment records missing, extra or differing.
    pub record_differences: u64,
    /// The root the store holds for the block.
    pub stored_root: B256,
    /// The root recomputed from every live leaf.
    pub computed_root: B256,
    /// What redb's integrity check of `state.redb` (copy-on-write view) cost, when it
    /// ran ([`verify_datadir`] only).
    pub integrity: Option<IntegrityTiming>,
    /// Every problem found; empty when the store is sound.
    pub problems: Vec<String>,
}

impl VerifyReport {
    /// Whether nothing was found wrong.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Verifies the datadir at `datadir` without writing to it: opens it
/// read-only (it may be on a read-only mount, or shared by a running writer
/// that set [`Options::share_with_readers`]), checks its newest commit, then
/// runs redb's integrity check on a copy-on-write view of `state.redb`. Uses
/// `options.db_cache_bytes` only.
///
/// Damaged bytes are problems in the report; an error means the datadir
/// could not be looked at (none there, another format, a writer that does
/// not share it).
pub fn verify_datadir(datadir: impl AsRef<Path>, options: &Options) -> Result<VerifyReport> {
    let datadir = datadir.as_ref();
    let db_path = datadir.join(DB_FILE);
    if !db_path.is_file() {
        return Err(Error::NotADatadir {
            path: datadir.to_path_buf(),
            what: "no state.redb: not a strata datadir",
        });
    }
    let _span = tracing::info_span!("verify", datadir = %datadir.display()).entered();
    let started = std::time::Instant::now();
    let mut report = VerifyReport::default();
    let opened = std::panic::catch_unwind(|| open::open(datadir, options));
    match opened {
        Ok(Ok(opened)) => check_snapshot(&opened.snapshot, opened.fs.as_ref(), false, &mut report),
        Ok(Err(error)) if open::is_access_error(&error) => return Err(error),
        Ok(Err(error)) => report
            .problems
            .push(format!("opening {} read-only: {error}", db_path.display())),
        Err(payload) => report.problems.push(format!(
            "opening {} read-only: the database is damaged (redb panicked: {})",
            db_path.display(),
            guard::panic_message(payload.as_ref())
        )),
    }
    let (timing, problem) = integrity::check_copy(&db_path);
    report.integrity = timing;
    report.problems.extend(problem);
    log_report(&report, started.elapsed());
    Ok(report)
}

/// Verifies the current snapshot of an open store (files re-read from disk;
/// no redb integrity check, which needs the database to itself).
pub(crate) fn verify(inner: &Arc<Inner>) -> Result<VerifyReport> {
    let _span = tracing::info_span!("verify").entered();
    let started = std::time::Instant::now();
    let snapshot = inner.current.load_full();
    let mut report = VerifyReport::default();
    check_snapshot(&snapshot, inner.fs.as_ref(), true, &mut report);
    log_report(&report, started.elapsed());
    Ok(report)
}

/// One log event with what a verification checked and found.
fn log_report(report: &VerifyReport, elapsed: std::time::Duration) {
    let ms = elapsed.as_secs_f64() * 1e3;
    let (block, files, accounts, slots, records) = (
        report.block,
        report.files_checked,
        report.accounts,
        report.slots,
        report.records_checked,
    );
    if report.is_ok() {
        tracing::info!(target: "strata::verify", block, files, accounts, slots, records, ms, "verified");
    } else {
        let problems = report.problems.len();
        tracing::warn!(target: "strata::verify", block, files, accounts, slots, records, problems, ms, "verify found problems");
    }
}

/// Runs every check on `snapshot`, adding what it finds to `report`. With
/// `reopen_files`, every file is opened (and so verified) again.
fn check_snapshot(
    snapshot: &Snapshot,
    fs: &dyn FileSystem,
    reopen_files: bool,
    report: &mut VerifyReport,
) {
    report.block = snapshot.block();
    report.stored_root = snapshot.root();
    for domain in Domain::ALL {
        for file in snapshot.files.files(domain) {
            report.files_checked += 1;
            report.file_bytes += file.size_bytes();
            if reopen_files && let Err(e) = SortedFile::open(fs, file.path()) {
                report.problems.push(e.to_string());
            }
        }
        let what = format!("redb table `{domain}` and the {domain} files");
        match guarded(&what, || check_tiers_agree(snapshot, domain)) {
            Ok(problems) => report.problems.extend(problems),
            Err(problem) => report.problems.push(problem),
        }
    }
    let mut live = |domain: Domain| {
        let what = format!("redb table `{domain}` and the {domain} files");
        guarded(&what, || snapshot.live_entries(domain, |value| value))
            .map_err(|problem| report.problems.push(problem))
            .ok()
    };
    let (accounts, slots, codes, records) = (
        live(Domain::Account),
        live(Domain::Storage),
        live(Domain::Code),
        live(Domain::Commitment),
    );
    let (Some(accounts), Some(slots)) = (accounts, slots) else {
        report.problems.push(
            "the root, the commitment records and the code were not checked: the values could not be read"
                .to_owned(),
        );
        return;
    };
    let (sorted, by_address) = decode_values(&accounts, &slots, report);
    let mut derived: Vec<(Vec<u8>, Bytes)> = Vec::new();
    let built = build_from_sorted(&sorted, sorted.len() >= PARALLEL_BUILD, |path, record| {
        derived.push((record_key(&path), record))
    });
    match built {
        Ok(root) => report.computed_root = root,
        Err(source) => {
            let error = Error::Commitment {
                block: report.block.unwrap_or(0),
                source,
            };
            report
                .problems
                .push(format!("recomputing the root: {error}"));
            return;
        }
    }
    if report.block.is_some() && report.computed_root != report.stored_root {
        report.problems.push(
            Error::RootMismatch {
                block: report.block.unwrap_or(0),
                stored: report.stored_root,
                computed: report.computed_root,
            }
            .to_string(),
        );
    }
    if let Some(records) = records {
        check_records(snapshot, records, derived, report);
    }
    if let Some(codes) = codes {
        check_codes(snapshot, &by_address, codes, report);
    }
}

/// Decodes the live accounts and slots into the bulk builder's input
/// (sorted by hashed address) and the accounts by address.
fn decode_values(
    accounts: &[(Vec<u8>, Bytes)],
    slots: &[(Vec<u8>, Bytes)],
    report: &mut VerifyReport,
) -> (Vec<SortedAccount>, BTreeMap<Address, Account>) {
    let mut storage_of: BTreeMap<Address, Vec<(B256, B256, U256)>> = BTreeMap::new();
    for (key, raw) in slots {
        let Some((address, slot)) = split_storage_key(key) else {
            report
                .problems
                .push(format!("storage key 0x{} is not address ‖ slot", hex(key)));
            continue;
        };
        match decode_slot_value(raw) {
            Ok(value) => {
                storage_of
                    .entry(address)
                    .or_default()
                    .push((keccak256(slot), slot, value))
            }
            Err(what) => report
                .problems
                .push(format!("storage 0x{}: {what}", hex(key))),
        }
        report.slots += 1;
    }
    let mut sorted = Vec::with_capacity(accounts.len());
    let mut by_address = BTreeMap::new();
    for (key, raw) in accounts {
        let Some(address) = address_key(key) else {
            report
                .problems
                .push(format!("account key 0x{} is not an address", hex(key)));
            continue;
        };
        let account = match Account::decode(raw) {
            Ok(account) => account,
            Err(what) => {
                report.problems.push(format!("account {address}: {what}"));
                continue;
            }
        };
        let mut storage = storage_of.remove(&address).unwrap_or_default();
        storage.sort_unstable_by_key(|(hashed, _, _)| *hashed);
        sorted.push(SortedAccount {
            hashed_address: keccak256(address),
            address,
            leaf: AccountLeaf {
                nonce: account.nonce,
                balance: account.balance,
                code_hash: account.code_hash,
            },
            storage,
        });
        by_address.insert(address, account);
        report.accounts += 1;
    }
    for address in storage_of.keys() {
        report
            .problems
            .push(format!("storage of {address} exists without its account"));
    }
    sorted.sort_unstable_by_key(|a| a.hashed_address);
    (sorted, by_address)
}

/// Compares the stored commitment records (and the root record) with the
/// records derived from the values.
fn check_records(
    snapshot: &Snapshot,
    mut stored: Vec<(Vec<u8>, Bytes)>,
    mut derived: Vec<(Vec<u8>, Bytes)>,
    report: &mut VerifyReport,
) {
    let root_record = stored
        .iter()
        .position(|(key, _)| key == ROOT_RECORD_KEY)
        .map(|at| stored.remove(at).1);
    let expected_root_record = snapshot.head.map(|head| head.encode());
    if root_record.as_deref() != expected_root_record.as_ref().map(|r| r.as_slice()) {
        report.problems.push(format!(
            "the commitment domain's root record ({}) does not hold the head ({})",
            root_record.map_or_else(|| "absent".to_owned(), |r| format!("0x{}", hex(&r))),
            expected_root_record.map_or_else(|| "none".to_owned(), |r| format!("0x{}", hex(&r)))
        ));
    }
    derived.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let diff = records::compare(&stored, &derived);
    report.records_checked = diff.stored;
    report.record_differences = diff.total();
    if diff.total() > 0 {
        report.problems.push(format!(
            "{} commitment records differ from those the values imply: {} missing, {} extra, {} differing ({} derived, {} stored; the first {} follow)",
            diff.total(),
            diff.missing,
            diff.extra,
            diff.differing,
            derived.len(),
            diff.stored,
            diff.listed.len()
        ));
        report.problems.extend(diff.listed);
    }
}

/// Checks every account's code against its code hash and `code_by_hash`.
fn check_codes(
    snapshot: &Snapshot,
    accounts: &BTreeMap<Address, Account>,
    codes: Vec<(Vec<u8>, Bytes)>,
    report: &mut VerifyReport,
) {
    let mut by_address = BTreeMap::new();
    for (key, code) in codes {
        match address_key(&key) {
            Some(address) => {
                by_address.insert(address, code);
            }
            None => report
                .problems
                .push(format!("code key 0x{} is not an address", hex(&key))),
        }
    }
    let mut code_by_hash =
        |hash: &B256| guarded("redb table `code_by_hash`", || snapshot.code_by_hash(hash));
    let (checked, problems) = code::check_code(accounts, &by_address, &mut code_by_hash);
    report.codes_checked = checked;
    report.problems.extend(problems);
}

/// A db-tier record must be newer than every file version of its key: a file
/// covering steps after the db record's step would mean the db shadows a
/// newer value.
fn check_tiers_agree(snapshot: &Snapshot, domain: Domain) -> Result<Vec<String>> {
    let files = snapshot.files.files(domain);
    let mut problems = Vec::new();
    if files.is_empty() {
        return Ok(problems);
    }
    for (key, step) in snapshot.db_keys_and_steps(domain)? {
        for file in files {
            if file.meta().from_step > step && file.may_contain(&key) && file.get(&key)?.is_some() {
                problems.push(format!(
                    "{domain} key 0x{}: file {} (steps {}..{}) is newer than the db record at step {step}",
                    hex(&key),
                    file.path().display(),
                    file.meta().from_step,
                    file.meta().to_step
                ));
            }
        }
    }
    Ok(problems)
}
