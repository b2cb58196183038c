//! Merging per-transaction results into one block's reads and writes.

use std::collections::{BTreeMap, btree_map::Entry};

use alloy_primitives::{Address, B256, U256, keccak256};
use alloy_trie::KECCAK_EMPTY;

use super::frames::{DiffFrame, TxFrames};
use super::{GethAccount, GethError};
use crate::{AccountRead, AccountWrite, TraceBlock};

/// The pre-block value of everything a transaction modified, taken from the
/// diff of the first transaction that modified it.
#[derive(Debug, Default)]
struct FirstPre {
    /// Account → its state before the block (`None`: it did not exist).
    accounts: BTreeMap<Address, Option<GethAccount>>,
    /// (account, slot) → value before the block.
    slots: BTreeMap<(Address, B256), U256>,
    /// Accounts an earlier transaction deleted: their other slots' pre-block
    /// values are unknown (a later read sees zero).
    deleted: std::collections::BTreeSet<Address>,
}

impl FirstPre {
    fn record(&mut self, diff: &DiffFrame) {
        for (address, pre) in &diff.pre {
            self.accounts
                .entry(*address)
                .or_insert_with(|| Some(pre.clone()));
        }
        for (address, post) in &diff.post {
            self.accounts.entry(*address).or_insert(None);
            let pre_storage = diff.pre.get(address).map(|p| &p.storage);
            for slot in post.storage.keys() {
                let before = pre_storage
                    .and_then(|s| s.get(slot))
                    .copied()
                    .unwrap_or_default();
                self.slots.entry((*address, *slot)).or_insert(before);
            }
        }
        for address in diff.pre.keys() {
            if !diff.post.contains_key(address) {
                self.deleted.insert(*address);
            }
        }
        for (address, pre) in &diff.pre {
            for (slot, value) in &pre.storage {
                self.slots.entry((*address, *slot)).or_insert(*value);
            }
        }
    }
}

fn to_read(account: &GethAccount) -> AccountRead {
    let code_hash = account.code_hash.or_else(|| {
        account
            .code
            .as_ref()
            .filter(|c| !c.is_empty())
            .map(keccak256)
    });
    AccountRead {
        balance: account.balance.unwrap_or_default(),
        nonce: account.nonce.unwrap_or_default(),
        code_hash,
        code: account.code.clone(),
        storage: BTreeMap::new(),
    }
}

/// Merge the prestate (default mode) and diff results of one block's
/// transactions into a block line. At least one input must be given; with
/// only a diff, the reads are the diff's `pre` values (modified accounts
/// and their non-zero changed slots); with only a prestate, there are no writes.
pub fn merge_block(
    number: u64,
    prestate: Option<&TxFrames<BTreeMap<Address, GethAccount>>>,
    diff: Option<&TxFrames<DiffFrame>>,
) -> Result<TraceBlock, GethError> {
    if let (Some(p), Some(d)) = (prestate, diff) {
        if p.frames.len() != d.frames.len() {
            return Err(GethError::TxCount {
                prestate: p.frames.len(),
                diff: d.frames.len(),
            });
        }
        for (index, (a, b)) in p.hashes.iter().zip(&d.hashes).enumerate() {
            if let (Some(a), Some(b)) = (a, b)
                && !a.eq_ignore_ascii_case(b)
            {
                return Err(GethError::TxHash {
                    index,
                    prestate: a.clone(),
                    diff: b.clone(),
                });
            }
        }
    }
    let txs = prestate
        .map_or(0, |p| p.frames.len())
        .max(diff.map_or(0, |d| d.frames.len()));
    let mut first_pre = FirstPre::default();
    let mut reads: BTreeMap<Address, AccountRead> = BTreeMap::new();
    let mut writes: BTreeMap<Address, AccountWrite> = BTreeMap::new();
    for tx in 0..txs {
        if let Some(frame) = prestate.and_then(|p| p.frames.get(tx)) {
            merge_reads(&mut reads, frame, &first_pre);
        }
        if let Some(frame) = diff.and_then(|d| d.frames.get(tx)) {
            if prestate.is_none() {
                reads_from_diff(&mut reads, frame, &first_pre);
            }
            first_pre.record(frame);
            merge_writes(&mut writes, frame, tx)?;
        }
    }
    writes.retain(|_, w| w.deleted || w.has_fields());
    Ok(TraceBlock {
        number,
        gas_used: None,
        state_root: None,
        reads,
        writes,
        access_list: None,
    })
}

/// Add what one transaction's default-mode prestate shows, keeping the
/// first (pre-block) value of each account and slot.
fn merge_reads(
    reads: &mut BTreeMap<Address, AccountRead>,
    frame: &BTreeMap<Address, GethAccount>,
    first_pre: &FirstPre,
) {
    for (address, account) in frame {
        let read = match reads.entry(*address) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => match first_pre.accounts.get(address) {
                // Not modified earlier in the block: this is the pre-block value.
                None => e.insert(to_read(account)),
                // Modified earlier: the first modifier's `pre` is the pre-block value.
                Some(Some(pre)) => e.insert(to_read(pre)),
                // Created earlier in the block: it did not exist before it.
                Some(None) => continue,
            },
        };
        for (slot, value) in &account.storage {
            let before = match first_pre.slots.get(&(*address, *slot)) {
                Some(before) => *before,
                // Deleted earlier in the block: the pre-block value is unknown.
                None if first_pre.deleted.contains(address) => continue,
                None => *value,
            };
            read.storage.entry(*slot).or_insert(before);
        }
    }
}

/// Without a default-mode prestate: take reads from the diff's `pre`
/// (accounts the transaction modified, as they were before the block).
fn reads_from_diff(
    reads: &mut BTreeMap<Address, AccountRead>,
    frame: &DiffFrame,
    first_pre: &FirstPre,
) {
    for (address, pre) in &frame.pre {
        let read = match reads.entry(*address) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => match first_pre.accounts.get(address) {
                None => e.insert(to_read(pre)),
                Some(Some(first)) => e.insert(to_read(first)),
                Some(None) => continue,
            },
        };
        for (slot, value) in &pre.storage {
            let before = first_pre
                .slots
                .get(&(*address, *slot))
                .copied()
                .unwrap_or(*value);
            read.storage.entry(*slot).or_insert(before);
        }
    }
}

/// Apply one transaction's diff to the block's writes (last value wins).
fn merge_writes(
    writes: &mut BTreeMap<Address, AccountWrite>,
    frame: &DiffFrame,
    tx: usize,
) -> Result<(), GethError> {
    for address in frame.pre.keys() {
        if !frame.post.contains_key(address) {
            // Rule (b): in pre, absent from post → deleted (with all storage).
            writes.insert(
                *address,
                AccountWrite {
                    deleted: true,
                    ..AccountWrite::default()
                },
            );
        }
    }
    for (address, post) in &frame.post {
        let write = writes.entry(*address).or_default();
        if let Some(balance) = post.balance {
            write.balance = Some(balance);
        }
        if let Some(nonce) = post.nonce {
            write.nonce = Some(nonce);
        }
        match (&post.code, post.code_hash) {
            (Some(code), _) => write.code = Some(code.clone()),
            (None, Some(hash)) if hash != KECCAK_EMPTY => {
                return Err(GethError::MissingCode {
                    index: tx,
                    address: *address,
                    code_hash: hash,
                });
            }
            (None, _) => {}
        }
        for (slot, value) in &post.storage {
            write.storage.insert(*slot, *value);
        }
        // Rule (a): a slot in pre but not in post was set to zero.
        if let Some(pre) = frame.pre.get(address) {
            for slot in pre.storage.keys() {
                if !post.storage.contains_key(slot) {
                    write.storage.insert(*slot, U256::ZERO);
                }
            }
        }
    }
    Ok(())
}
