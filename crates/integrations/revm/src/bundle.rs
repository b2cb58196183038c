//! Writing revm's block output as reth's block executor returns it — a
//! [`BundleState`], built by revm's `State` over every transaction of a
//! block — into a [`BlockWriter`].

use std::collections::{BTreeMap, BTreeSet};

use alloy_primitives::{Address, B256, KECCAK256_EMPTY};
use bytes::Bytes;
use revm_database::states::PlainStorageChangeset;
use revm_database::{BundleState, OriginalValuesKnown};
use revm_state::AccountInfo;

use crate::{ApplyStats, RevmError};
use strata_engine::{Account, BlockWriter};

/// Writes the plain-state changes of `bundle` (what reth writes to its
/// tables: [`BundleState::to_plain_state`] with the original values known)
/// into `writer`'s block. Nothing is committed.
///
/// - An account whose storage the bundle wipes (it was destroyed during the
///   block) is deleted first, with its code and storage; what it holds at
///   the end of the block, if anything, is then written anew: info, code and
///   every non-zero slot the bundle lists.
/// - An account the bundle ends without is deleted.
/// - Otherwise its nonce, balance and code hash are written, its code when
///   the hash changed, and every changed slot (zero deletes).
///
/// Bytecode comes from the bundle's contracts, else from the account info,
/// else from the store by hash; none of them having it is
/// [`RevmError::MissingCode`] (the block should then be dropped).
pub fn apply_bundle_state(
    writer: &mut BlockWriter,
    bundle: &BundleState,
) -> Result<ApplyStats, RevmError> {
    let (accounts, storage) = plain_changes(bundle);
    let mut stats = ApplyStats::default();
    for change in accounts.iter().filter(|change| change.wiped) {
        writer.delete_account(change.address);
        stats.accounts_deleted += 1;
    }
    for change in &accounts {
        let Some(info) = &change.info else {
            if !change.wiped {
                writer.delete_account(change.address);
                stats.accounts_deleted += 1;
            }
            continue;
        };
        writer.put_account(
            change.address,
            &Account {
                nonce: info.nonce,
                balance: info.balance,
                code_hash: info.code_hash,
            },
        );
        stats.accounts_written += 1;
        if change.code_changed {
            let code = match bundle_code(bundle, info) {
                Some(code) => code,
                None => writer
                    .reader(strata_engine::Regime::Exec)
                    .code_by_hash(&info.code_hash)?
                    .ok_or(RevmError::MissingCode {
                        address: change.address,
                        code_hash: info.code_hash,
                    })?,
            };
            writer.put_code(change.address, code);
            stats.codes_written += 1;
        }
    }
    for change in &storage {
        for (slot, value) in &change.storage {
            writer.put_storage(change.address, B256::from(*slot), *value);
            stats.slots_written += 1;
        }
    }
    Ok(stats)
}

/// One account of a bundle's plain-state changes, as the store takes it
/// (see [`apply_bundle_state`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountChange {
    /// The account.
    pub address: Address,
    /// Its storage was wiped (it was destroyed during the block): it is
    /// deleted first, with its code and storage, and written anew with
    /// what it holds at the end of the block.
    pub wiped: bool,
    /// What it holds at the end of the block; `None`: it ends the block
    /// absent.
    pub info: Option<AccountInfo>,
    /// Whether its code is written: the code hash changed, or a wiped
    /// account ends the block with code.
    pub code_changed: bool,
}

/// The plain-state changes of `bundle` (what reth writes to its tables:
/// [`BundleState::to_plain_state`] with the original values known): its
/// accounts in address order, a wiped account with what the block left of
/// it whether changed or not, and its storage changes.
pub fn plain_changes(bundle: &BundleState) -> (Vec<AccountChange>, Vec<PlainStorageChangeset>) {
    let changes = bundle.to_plain_state(OriginalValuesKnown::Yes);
    let wiped: BTreeSet<Address> = changes
        .storage
        .iter()
        .filter(|change| change.wipe_storage)
        .map(|change| change.address)
        .collect();
    let mut infos: BTreeMap<Address, Option<AccountInfo>> = changes.accounts.into_iter().collect();
    for address in &wiped {
        // Whatever the block left of it, changed or not.
        let present = bundle.state.get(address).and_then(|a| a.info.clone());
        infos.insert(*address, present);
    }
    let accounts = infos
        .into_iter()
        .map(|(address, info)| {
            let wiped = wiped.contains(&address);
            let original = bundle
                .state
                .get(&address)
                .and_then(|a| a.original_info.as_ref())
                .map_or(KECCAK256_EMPTY, |original| original.code_hash);
            let code_changed = info.as_ref().is_some_and(|info| {
                (wiped && info.code_hash != KECCAK256_EMPTY)
                    || (!wiped && info.code_hash != original)
            });
            AccountChange {
                address,
                wiped,
                info,
                code_changed,
            }
        })
        .collect();
    (accounts, changes.storage)
}

/// The bytecode of `info.code_hash` as the bundle carries it: empty for the
/// empty hash, else from the bundle's contracts or the account info;
/// `None` when neither has it (the caller reads the store by hash).
pub fn bundle_code(bundle: &BundleState, info: &AccountInfo) -> Option<Bytes> {
    if info.code_hash == KECCAK256_EMPTY {
        return Some(Bytes::new());
    }
    bundle
        .contracts
        .get(&info.code_hash)
        .or(info.code.as_ref())
        .map(|code| code.original_bytes().0)
}
