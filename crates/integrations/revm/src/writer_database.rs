//! revm's `Database` + `DatabaseCommit` over a block writer: one EVM runs
//! every transaction of a block, each reading the block's earlier ones and
//! committing its own changes into the writer (`transact_commit`).

use alloy_primitives::{Address, B256, U256};
use revm_bytecode::Bytecode;
use revm_database_interface::{Database, DatabaseCommit, DatabaseRef};
use revm_state::{AccountInfo, EvmState};

use crate::{ReaderDatabase, RevmError, apply_evm_state};
use strata_engine::{BlockWriter, Regime};

/// The block being written as revm's database: reads see the last
/// committed block plus every change committed through this database (or
/// written to the writer before), timed as [`Regime::Exec`]; `commit`
/// writes a transaction's changes with [`apply_evm_state`].
///
/// `DatabaseCommit::commit` cannot return an error: a failed write is kept,
/// every later read refuses with [`RevmError::CommitFailed`], and
/// [`WriterDatabase::finish`] returns it, so the block is dropped rather
/// than committed on a partial state.
pub struct WriterDatabase<'w> {
    writer: &'w mut BlockWriter,
    failed: Option<String>,
}

/// revm's database over `writer`'s block (see [`WriterDatabase`]).
pub fn writer_database(writer: &mut BlockWriter) -> WriterDatabase<'_> {
    WriterDatabase {
        writer,
        failed: None,
    }
}

impl WriterDatabase<'_> {
    /// Ends the database: the first failed commit, if any.
    pub fn finish(self) -> Result<(), RevmError> {
        match self.failed {
            Some(failure) => Err(RevmError::CommitFailed(failure)),
            None => Ok(()),
        }
    }

    fn check(&self) -> Result<ReaderDatabase, RevmError> {
        match &self.failed {
            Some(failure) => Err(RevmError::CommitFailed(failure.clone())),
            None => Ok(ReaderDatabase(self.writer.reader(Regime::Exec))),
        }
    }
}

impl Database for WriterDatabase<'_> {
    type Error = RevmError;

    fn basic(&mut self, address: Address) -> Result<Option<AccountInfo>, RevmError> {
        self.check()?.basic_ref(address)
    }

    fn code_by_hash(&mut self, code_hash: B256) -> Result<Bytecode, RevmError> {
        self.check()?.code_by_hash_ref(code_hash)
    }

    fn storage(&mut self, address: Address, index: U256) -> Result<U256, RevmError> {
        self.check()?.storage_ref(address, index)
    }

    fn block_hash(&mut self, number: u64) -> Result<B256, RevmError> {
        self.check()?.block_hash_ref(number)
    }
}

impl DatabaseCommit for WriterDatabase<'_> {
    fn commit(&mut self, changes: EvmState) {
        if self.failed.is_some() {
            return;
        }
        if let Err(error) = apply_evm_state(self.writer, &changes) {
            self.failed = Some(error.to_string());
        }
        // One commit is one transaction (or system call): a streamed root
        // folds it while the next one runs.
        self.writer.end_transaction();
    }
}
