//! Writing revm's per-transaction output ([`EvmState`]) into a [`BlockWriter`].

use alloy_primitives::{Address, B256, KECCAK256_EMPTY};
use bytes::Bytes;
use revm_state::{Account as EvmAccount, AccountInfo, EvmState};

use crate::RevmError;
use strata_engine::{Account, BlockWriter};

/// What [`apply_evm_state`] wrote, for logs and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApplyStats {
    /// Accounts written (created, re-created or updated).
    pub accounts_written: usize,
    /// Accounts deleted: selfdestructed, or touched and empty (EIP-161).
    pub accounts_deleted: usize,
    /// Bytecodes written.
    pub codes_written: usize,
    /// Storage slots written (zeros included: they delete the slot).
    pub slots_written: usize,
    /// Entries skipped because revm did not touch them (only loaded).
    pub untouched: usize,
}

/// Writes the state changes of one revm execution (`ResultAndState::state`,
/// from `transact` or `transact_many_finalize`) into `writer`'s block.
/// Nothing is committed: the caller applies every transaction of the block
/// and then calls `writer.commit()?.root` for the state root.
///
/// Per account, following revm's status flags:
/// - not touched (only read): skipped;
/// - selfdestructed: deleted with its code and storage. When the same entry
///   also shows it alive again after the destruction (a journal that ran
///   several transactions, where a later one re-created or re-funded it),
///   its present info and storage are written over the wiped account;
/// - created (CREATE/CREATE2, or an empty account materialised before
///   Spurious Dragon): its old storage is wiped, then account, code and
///   every non-zero slot are written, as a new account starts with empty
///   storage;
/// - touched and empty (nonce 0, balance 0, no code): deleted (EIP-161;
///   revm's `finalize` already unmarks such accounts for pre-Spurious-Dragon
///   specs, so this holds for every spec);
/// - otherwise: nonce, balance and code hash are written, the code when its
///   hash changed (EIP-7702 delegations), and every slot whose present value
///   differs from the original one (zero deletes).
///
/// Fails only when revm's state changes a code hash without carrying the
/// bytecode ([`RevmError::MissingCode`]); the writer may then hold part of
/// the state and the block should be dropped uncommitted.
pub fn apply_evm_state(
    writer: &mut BlockWriter,
    state: &EvmState,
) -> Result<ApplyStats, RevmError> {
    let mut stats = ApplyStats::default();
    for (&address, account) in state {
        apply_account(writer, address, account, &mut stats)?;
    }
    Ok(stats)
}

fn apply_account(
    writer: &mut BlockWriter,
    address: Address,
    account: &EvmAccount,
    stats: &mut ApplyStats,
) -> Result<(), RevmError> {
    if !account.is_touched() {
        stats.untouched += 1;
        return Ok(());
    }
    if account.is_selfdestructed() {
        writer.delete_account(address);
        stats.accounts_deleted += 1;
        // Destroyed by the journal's last transaction that touched it: gone.
        // Otherwise a later transaction cold-loaded it after the destruction
        // (revm then clears info and storage) and what it holds now is new.
        if account.is_selfdestructed_locally() || !lives_on(account) {
            return Ok(());
        }
        return write_fresh(writer, address, account, stats);
    }
    if account.is_created() {
        writer.delete_account(address);
        return write_fresh(writer, address, account, stats);
    }
    if account.is_empty() {
        // EIP-161: a touched empty account goes; one that did not exist
        // before stays absent, with nothing to write.
        if !account.is_loaded_as_not_existing() {
            writer.delete_account(address);
            stats.accounts_deleted += 1;
        }
        return Ok(());
    }
    // An account touched but holding what the block already has (a call's
    // target, a warm read) needs no write. Compared with the block as
    // written so far, not with revm's original: a journal that ran several
    // transactions resets the original when a later one loads the account
    // again, after an earlier one changed it.
    let present = to_account(&account.info);
    if writer.account(&address)?.as_ref() != Some(&present) {
        writer.put_account(address, &present);
        stats.accounts_written += 1;
    }
    if account.info.code_hash != account.original_info().code_hash {
        put_code(writer, address, &account.info, stats)?;
    }
    for (slot, value) in account.changed_storage_slots() {
        writer.put_storage(address, B256::from(*slot), value.present_value());
        stats.slots_written += 1;
    }
    Ok(())
}

/// Whether a destroyed entry holds anything after its destruction.
fn lives_on(account: &EvmAccount) -> bool {
    account.is_created()
        || !account.is_empty()
        || account
            .storage
            .values()
            .any(|slot| !slot.present_value().is_zero())
}

/// Writes an account whose old storage and code are already wiped: its
/// info, its code and every non-zero slot.
fn write_fresh(
    writer: &mut BlockWriter,
    address: Address,
    account: &EvmAccount,
    stats: &mut ApplyStats,
) -> Result<(), RevmError> {
    writer.put_account(address, &to_account(&account.info));
    stats.accounts_written += 1;
    if account.info.code_hash != KECCAK256_EMPTY {
        put_code(writer, address, &account.info, stats)?;
    }
    for (slot, value) in &account.storage {
        let value = value.present_value();
        if !value.is_zero() {
            writer.put_storage(address, B256::from(*slot), value);
            stats.slots_written += 1;
        }
    }
    Ok(())
}

fn put_code(
    writer: &mut BlockWriter,
    address: Address,
    info: &AccountInfo,
    stats: &mut ApplyStats,
) -> Result<(), RevmError> {
    let code = if info.code_hash == KECCAK256_EMPTY {
        Bytes::new()
    } else {
        let code = info.code.as_ref().ok_or(RevmError::MissingCode {
            address,
            code_hash: info.code_hash,
        })?;
        code.original_bytes().0
    };
    writer.put_code(address, code);
    stats.codes_written += 1;
    Ok(())
}

fn to_account(info: &AccountInfo) -> Account {
    Account {
        nonce: info.nonce,
        balance: info.balance,
        code_hash: info.code_hash,
    }
}
