//! `verify`: re-read every file's checksums, check that the tiers agree, and
//! recompute the state root from scratch to compare with the stored one.

use std::collections::BTreeMap;
use std::sync::Arc;

use alloy_primitives::{B256, keccak256};
use bytes::Bytes;
use strata_commitment::{AccountLeaf, SortedAccount, build_from_sorted};

use crate::account::{Account, decode_slot_value};
use crate::db::value::hex;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::files::SortedFile;
use crate::inner::Inner;
use crate::keys::{address_key, split_storage_key};
use crate::snapshot::Snapshot;

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
    /// The root the store holds for the block.
    pub stored_root: B256,
    /// The root recomputed from every live leaf.
    pub computed_root: B256,
    /// Every problem found; empty when the store is sound.
    pub problems: Vec<String>,
}

impl VerifyReport {
    /// Whether nothing was found wrong.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Verifies the current snapshot of the store.
pub(crate) fn verify(inner: &Arc<Inner>) -> Result<VerifyReport> {
    let snapshot = inner.current.load_full();
    let mut report = VerifyReport {
        block: snapshot.block(),
        stored_root: snapshot.root(),
        ..VerifyReport::default()
    };
    for domain in Domain::ALL {
        for file in snapshot.files.files(domain) {
            report.files_checked += 1;
            report.file_bytes += file.size_bytes();
            if let Err(e) = SortedFile::open(inner.fs.as_ref(), file.path()) {
                report.problems.push(e.to_string());
            }
        }
        check_tiers_agree(&snapshot, domain, &mut report)?;
    }

    let accounts = live_entries(&snapshot, Domain::Account)?;
    let slots = live_entries(&snapshot, Domain::Storage)?;
    let mut by_address: BTreeMap<[u8; 20], Vec<(B256, B256, alloy_primitives::U256)>> =
        BTreeMap::new();
    for (key, raw) in &slots {
        let Some((address, slot)) = split_storage_key(key) else {
            report
                .problems
                .push(format!("storage key 0x{} is not address ‖ slot", hex(key)));
            continue;
        };
        match decode_slot_value(raw) {
            Ok(value) => {
                by_address
                    .entry(address.0.0)
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
    for (key, raw) in &accounts {
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
        let mut storage = by_address.remove(&address.0.0).unwrap_or_default();
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
        report.accounts += 1;
    }
    for address in by_address.keys() {
        report.problems.push(format!(
            "storage of 0x{} exists without its account",
            hex(address)
        ));
    }
    sorted.sort_unstable_by_key(|a| a.hashed_address);
    report.computed_root =
        build_from_sorted(&sorted, true, |_, _| {}).map_err(|source| Error::Commitment {
            block: report.block.unwrap_or(0),
            source,
        })?;
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
    Ok(report)
}

/// A db-tier record must be newer than every file version of its key: a file
/// covering steps after the db record's step would mean the db shadows a
/// newer value.
fn check_tiers_agree(snapshot: &Snapshot, domain: Domain, report: &mut VerifyReport) -> Result<()> {
    let files = snapshot.files.files(domain);
    if files.is_empty() {
        return Ok(());
    }
    for (key, step) in snapshot.db_keys_and_steps(domain)? {
        for file in files {
            if file.meta().from_step > step && file.may_contain(&key) && file.get(&key)?.is_some() {
                report.problems.push(format!(
                    "{domain} key 0x{}: file {} (steps {}..{}) is newer than the db record at step {step}",
                    hex(&key),
                    file.path().display(),
                    file.meta().from_step,
                    file.meta().to_step
                ));
            }
        }
    }
    Ok(())
}

/// Every live (key, value) of a domain, newest tier winning.
fn live_entries(snapshot: &Snapshot, domain: Domain) -> Result<Vec<(Vec<u8>, Bytes)>> {
    let mut merged: BTreeMap<Vec<u8>, Option<Bytes>> = BTreeMap::new();
    for file in snapshot.files.files(domain).iter().rev() {
        for entry in file.iter() {
            let (key, value) = entry?;
            merged.insert(key.to_vec(), value.into_value());
        }
    }
    for (key, value) in snapshot.db_entries(domain)? {
        merged.insert(key, value.map(Bytes::from));
    }
    Ok(merged
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect())
}
