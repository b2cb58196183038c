//! The block writer as revm's database ([`StatePath::Writer`]): every
//! transaction reads the block being written and commits its changes into
//! it: the default path, measured faster than the bundle path (README,
//! "Importing a chain"). It does not record the access (values before the
//! block): `--trace-out` runs the bundle path.
//!
//! [`StatePath::Writer`]: crate::StatePath::Writer

use std::time::{Duration, Instant};

use alloy_consensus::TxEnvelope;
use alloy_consensus::transaction::Recovered;
use alloy_evm::eth::dao_fork::{DAO_HARDFORK_ACCOUNTS, DAO_HARDFORK_BENEFICIARY};
use alloy_primitives::{Address, B256, U256};
use revm::bytecode::Bytecode;
use revm::database_interface::{Database, DatabaseCommit};
use revm::state::{AccountInfo, EvmState};
use strata_storage::revm::{RevmError, WriterDatabase, writer_database};
use strata_storage::{BlockWriter, Regime, StateDb, StateReader};

use crate::ChainSpec;
use crate::block::DecodedBlock;
use crate::eip7610::has_storage_only;
use crate::error::{ExecError, InvalidBlock};
use crate::evm_run::{PathRun, check_outcome, label_block, run_error, run_evm};
use crate::parallel::WrittenKeys;

/// The transactions of an Amsterdam block run ahead of their turn from its
/// access list ([`crate::parallel`]).
#[derive(Clone, Copy)]
pub(crate) struct RunAhead<'a> {
    /// The list that came with the block.
    pub(crate) list: &'a alloy_eip7928::BlockAccessList,
    /// Threads running transactions ahead.
    pub(crate) workers: usize,
}

/// Runs `block` with the EVM over its writer (just opened); with
/// `stream_root`, the root is folded as each transaction ends
/// (`BlockWriter::stream_root`); with `ahead`, its transactions run ahead
/// of their turn from its list. `None` when the block creates a contract
/// over an account with storage (EIP-7610): the writer is dropped, and the
/// caller runs the block on the bundle path, which decides the collision.
pub(crate) fn execute(
    db: &StateDb,
    spec: &ChainSpec,
    block: &DecodedBlock,
    transactions: &[Recovered<TxEnvelope>],
    mut writer: BlockWriter,
    stream_root: bool,
    ahead: Option<RunAhead<'_>>,
) -> Result<Option<PathRun>, ExecError> {
    let number = block.number();
    let store = |source| ExecError::Store {
        number,
        source: Box::new(source),
    };
    let started = Instant::now();
    if stream_root {
        writer.stream_root().map_err(store)?;
    }
    if spec.is_dao_block(number) {
        dao_change(&mut writer).map_err(store)?;
    }
    let mut checked = CheckedWriter {
        inner: writer_database(&mut writer),
        head: db.reader(Regime::Exec),
        collision: false,
        written: ahead.map(|_| WrittenKeys::default()),
    };
    let (outcome, ahead) = match ahead {
        Some(RunAhead { list, workers }) => {
            let (outcome, counts) =
                crate::parallel::run(db, spec, block, transactions, list, workers, &mut checked)
                    .map_err(|error| run_error(number, block.hash, error))?;
            (outcome, Some(counts))
        }
        None => (
            run_evm(spec, block, transactions, &mut checked, None)
                .map_err(|error| run_error(number, block.hash, error))?,
            None,
        ),
    };
    let execution = started.elapsed();
    let CheckedWriter {
        inner, collision, ..
    } = checked;
    inner.finish().map_err(|error| ExecError::Database {
        number,
        message: error.to_string(),
    })?;
    if collision {
        return Ok(None);
    }
    check_outcome(spec, block, &outcome).map_err(|reason: InvalidBlock| ExecError::Invalid {
        number,
        hash: block.hash,
        reason: Box::new(reason),
    })?;
    label_block(&mut writer, block);
    Ok(Some(PathRun {
        writer,
        outcome,
        execution,
        apply: Duration::ZERO,
        access: None,
        ahead,
    }))
}

/// The DAO fork's irregular change, before the block's transactions (see
/// `apply_dao_change`): every DAO account drained to the refund contract.
/// As through revm's cache accounts, a drained account stays, empty (an
/// absent one is created empty): before Spurious Dragon nothing clears it.
fn dao_change(writer: &mut BlockWriter) -> Result<(), strata_storage::Error> {
    let mut drained = U256::ZERO;
    for address in DAO_HARDFORK_ACCOUNTS {
        let mut account = writer.account(&address)?.unwrap_or_default();
        drained += account.balance;
        account.balance = U256::ZERO;
        writer.put_account(address, &account);
    }
    let mut beneficiary = writer
        .account(&DAO_HARDFORK_BENEFICIARY)?
        .unwrap_or_default();
    beneficiary.balance += drained;
    writer.put_account(DAO_HARDFORK_BENEFICIARY, &beneficiary);
    Ok(())
}

/// The writer's database, watching each transaction's commit for a
/// contract created over an account that has storage (EIP-7610, which
/// revm 43 does not check): such a block is run again on the bundle path,
/// which decides it.
pub(crate) struct CheckedWriter<'w> {
    pub(crate) inner: WriterDatabase<'w>,
    head: StateReader,
    /// A transaction created a contract over an account that had storage,
    /// or that could not be checked: the bundle path runs the block again
    /// and decides (or reports the store's error).
    collision: bool,
    /// The keys committed so far, when transactions run ahead
    /// ([`crate::parallel`]) need them.
    pub(crate) written: Option<WrittenKeys>,
}

impl std::fmt::Debug for CheckedWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedWriter")
            .field("collision", &self.collision)
            .finish_non_exhaustive()
    }
}

impl Database for CheckedWriter<'_> {
    type Error = RevmError;

    fn basic(&mut self, address: Address) -> Result<Option<AccountInfo>, RevmError> {
        self.inner.basic(address)
    }

    fn code_by_hash(&mut self, code_hash: B256) -> Result<Bytecode, RevmError> {
        self.inner.code_by_hash(code_hash)
    }

    fn storage(&mut self, address: Address, index: U256) -> Result<U256, RevmError> {
        self.inner.storage(address, index)
    }

    fn block_hash(&mut self, number: u64) -> Result<B256, RevmError> {
        self.inner.block_hash(number)
    }
}

impl DatabaseCommit for CheckedWriter<'_> {
    fn commit(&mut self, changes: EvmState) {
        if !self.collision {
            self.collision = changes
                .iter()
                .filter(|(_, account)| account.is_created())
                .any(|(address, _)| has_storage_only(&self.head, address).unwrap_or(true));
        }
        if let Some(written) = &mut self.written {
            written.record(&changes);
        }
        self.inner.commit(changes);
    }
}
