//! Writing revm's block output as reth's block executor returns it — a
//! [`BundleState`], built by revm's `State` over every transaction of a
//! block — into a [`BlockWriter`].

use std::collections::{BTreeMap, BTreeSet};

use alloy_primitives::{Address, B256, KECCAK256_EMPTY};
use bytes::Bytes;
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
    let changes = bundle.to_plain_state(OriginalValuesKnown::Yes);
    let mut stats = ApplyStats::default();
    let wiped: BTreeSet<Address> = changes
        .storage
        .iter()
        .filter(|change| change.wipe_storage)
        .map(|change| change.address)
        .collect();
    let mut infos: BTreeMap<Address, Option<AccountInfo>> = changes.accounts.into_iter().collect();
    for address in &wiped {
        writer.delete_account(*address);
        stats.accounts_deleted += 1;
        // Whatever the block left of it, changed or not.
        let present = bundle.state.get(address).and_then(|a| a.info.clone());
        infos.insert(*address, present);
    }
    for (address, info) in infos {
        let Some(info) = info else {
            if !wiped.contains(&address) {
                writer.delete_account(address);
                stats.accounts_deleted += 1;
            }
            continue;
        };
        writer.put_account(
            address,
            &Account {
                nonce: info.nonce,
                balance: info.balance,
                code_hash: info.code_hash,
            },
        );
        stats.accounts_written += 1;
        let original = bundle
            .state
            .get(&address)
            .and_then(|a| a.original_info.as_ref())
            .map_or(KECCAK256_EMPTY, |original| original.code_hash);
        let fresh = wiped.contains(&address);
        if (fresh && info.code_hash != KECCAK256_EMPTY) || (!fresh && info.code_hash != original) {
            let code = code_of(writer, bundle, address, &info)?;
            writer.put_code(address, code);
            stats.codes_written += 1;
        }
    }
    for change in &changes.storage {
        for (slot, value) in &change.storage {
            writer.put_storage(change.address, B256::from(*slot), *value);
            stats.slots_written += 1;
        }
    }
    Ok(stats)
}

/// The bytecode of `info.code_hash` (empty for the empty hash).
fn code_of(
    writer: &BlockWriter,
    bundle: &BundleState,
    address: Address,
    info: &AccountInfo,
) -> Result<Bytes, RevmError> {
    if info.code_hash == KECCAK256_EMPTY {
        return Ok(Bytes::new());
    }
    if let Some(code) = bundle.contracts.get(&info.code_hash).or(info.code.as_ref()) {
        return Ok(code.original_bytes().0);
    }
    let stored = writer
        .reader(strata_engine::Regime::Exec)
        .code_by_hash(&info.code_hash)?;
    stored.ok_or(RevmError::MissingCode {
        address,
        code_hash: info.code_hash,
    })
}
