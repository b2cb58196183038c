//! The bundle path: the block over a revm `State` that reads strata's
//! snapshot, then the bundle it leaves applied to a `BlockWriter`. It sees
//! each value before the block, which recording the block's access needs.

use std::time::Instant;

use alloy_consensus::TxEnvelope;
use alloy_consensus::transaction::Recovered;
use alloy_primitives::{Address, KECCAK256_EMPTY};
use revm::database::states::bundle_state::BundleRetention;
use revm::database::{BundleState, State};
use strata_storage::revm::{WrapDatabaseRef, apply_bundle_state};
use strata_storage::{BlockWriter, Regime, StateDb};

use crate::ChainSpec;
use crate::access::{BlockAccess, RecordingReader, bundle_writes};
use crate::block::DecodedBlock;
use crate::eip7610::{StorageCollisions, has_storage_only};
use crate::error::{ExecError, InvalidBlock};
use crate::evm_run::{PathRun, apply_dao_change, check_outcome, label_block, run_error, run_evm};

/// The block over a revm `State` reading strata, then its bundle applied
/// to `writer` (just opened).
pub(crate) fn execute(
    db: &StateDb,
    spec: &ChainSpec,
    block: &DecodedBlock,
    transactions: &[Recovered<TxEnvelope>],
    mut writer: BlockWriter,
    record_access: bool,
) -> Result<PathRun, ExecError> {
    let number = block.number();
    let invalid = |reason: InvalidBlock| ExecError::Invalid {
        number,
        hash: block.hash,
        reason: Box::new(reason),
    };
    let started = Instant::now();
    // revm alone first; a block that creates a contract over an account
    // with storage runs again with EIP-7610's rule watched.
    let mut watching = false;
    let (outcome, bundle, reads) = loop {
        let mut state = State::builder()
            .with_database(WrapDatabaseRef(RecordingReader::new(
                db.reader(Regime::Exec),
                record_access,
            )))
            .with_bundle_update()
            .build();
        if spec.is_dao_block(number) {
            apply_dao_change(&mut state).map_err(|error| run_error(number, block.hash, error))?;
        }
        let watcher = watching.then(|| StorageCollisions::new(db.reader(Regime::Exec)));
        let outcome = run_evm(spec, block, transactions, &mut state, watcher)
            .map_err(|error| run_error(number, block.hash, error))?;
        state.merge_transitions(BundleRetention::PlainState);
        let bundle = state.take_bundle();
        let reads = state.database.0.into_reads();
        match storage_collision(db, &bundle)
            .map_err(|message| ExecError::Database { number, message })?
        {
            None => break (outcome, bundle, reads),
            Some(address) if watching => {
                return Err(ExecError::Unsupported {
                    number,
                    reason: format!(
                        "{address} has storage but no code and nonce 0, and the block creates a \
                         contract there even with EIP-7610's rule watched"
                    ),
                });
            }
            Some(_) => watching = true,
        }
    };
    let execution = started.elapsed();
    let access = if record_access {
        let writes = bundle_writes(&bundle, &db.reader(Regime::Exec))
            .map_err(|message| ExecError::Database { number, message })?;
        Some(BlockAccess { reads, writes })
    } else {
        None
    };

    let started = Instant::now();
    check_outcome(spec, block, &outcome).map_err(invalid)?;
    apply_bundle_state(&mut writer, &bundle).map_err(|error| ExecError::Database {
        number,
        message: error.to_string(),
    })?;
    label_block(&mut writer, block);
    Ok(PathRun {
        writer,
        outcome,
        execution,
        apply: started.elapsed(),
        access,
        ahead: None,
    })
}

/// EIP-7610: no contract may be created where an account already has
/// storage. revm 43 looks at the address's nonce and code only, so over an
/// account with storage and neither (a state mainnet holds only from
/// before Spurious Dragon; a few consensus tests do) it creates the
/// contract as if the address were empty. Returns the first account
/// without nonce and code before the block that the block gives a nonce
/// or code and that had storage: the block then runs again with
/// [`StorageCollisions`] watching.
pub(crate) fn storage_collision(
    db: &StateDb,
    bundle: &BundleState,
) -> Result<Option<Address>, String> {
    let reader = db.reader(Regime::Exec);
    for (address, account) in &bundle.state {
        let blank =
            |info: &revm::state::AccountInfo| info.nonce == 0 && info.code_hash == KECCAK256_EMPTY;
        let (Some(before), Some(after)) = (&account.original_info, &account.info) else {
            continue;
        };
        if !blank(before) || blank(after) {
            continue;
        }
        if has_storage_only(&reader, address).map_err(|e| e.to_string())? {
            return Ok(Some(*address));
        }
    }
    Ok(None)
}
