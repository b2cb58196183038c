//! revm's `DatabaseRef` over a [`StateReader`]: revm reads strata's snapshot
//! directly. The reader is wrapped in [`ReaderDatabase`] because neither the
//! trait (revm's) nor the reader (strata-engine's) belongs to this crate.

use alloy_primitives::{Address, B256, KECCAK256_EMPTY, U256};
use revm_bytecode::Bytecode;
use revm_database_interface::{DatabaseRef, WrapDatabaseRef};
use revm_state::AccountInfo;
use strata_engine::{Regime, StateDb, StateReader};

use crate::RevmError;

/// A [`StateReader`] as revm's [`DatabaseRef`].
///
/// Every read is one domain read of the snapshot the reader was opened on,
/// timed under the reader's regime (open it with [`Regime::Exec`] for
/// execution, as [`exec_database`] does).
///
/// Code is loaded lazily: [`basic_ref`](DatabaseRef::basic_ref) returns
/// `code: None`, and revm asks [`code_by_hash_ref`](DatabaseRef::code_by_hash_ref)
/// (one read of the code-by-hash table) only when it runs or inspects the
/// code. A balance or nonce check therefore costs one account read and no
/// code read.
#[derive(Clone)]
pub struct ReaderDatabase(pub StateReader);

impl ReaderDatabase {
    /// `reader` as revm's `Database` (what `Context::with_db` takes).
    pub fn wrap(reader: StateReader) -> WrapDatabaseRef<ReaderDatabase> {
        WrapDatabaseRef(ReaderDatabase(reader))
    }
}

impl std::fmt::Debug for ReaderDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReaderDatabase")
            .field("block", &self.0.block())
            .finish()
    }
}

impl From<StateReader> for ReaderDatabase {
    fn from(reader: StateReader) -> ReaderDatabase {
        ReaderDatabase(reader)
    }
}

impl DatabaseRef for ReaderDatabase {
    type Error = RevmError;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, RevmError> {
        Ok(self.0.account(&address)?.map(|account| AccountInfo {
            balance: account.balance,
            nonce: account.nonce,
            code_hash: account.code_hash,
            account_id: None,
            code: None,
        }))
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, RevmError> {
        if code_hash == KECCAK256_EMPTY {
            return Ok(Bytecode::default());
        }
        let raw = self
            .0
            .code_by_hash(&code_hash)?
            .ok_or(RevmError::CodeNotFound { hash: code_hash })?;
        Bytecode::new_raw_checked(raw.into()).map_err(|e| RevmError::InvalidCode {
            hash: code_hash,
            reason: e.to_string(),
        })
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, RevmError> {
        Ok(self.0.storage(&address, &B256::from(index))?)
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, RevmError> {
        self.0
            .block_hash(number)?
            .ok_or_else(|| RevmError::BlockHashNotFound {
                number,
                last: self
                    .0
                    .block()
                    .map_or_else(|| "none".to_string(), |b| b.to_string()),
            })
    }
}

/// revm's `Database` over the last committed block of `db`, with every read
/// timed in the [`Regime::Exec`] regime. Read-only: revm's state changes come
/// back from `transact` and are written with [`apply_evm_state`](crate::apply_evm_state).
pub fn exec_database(db: &StateDb) -> WrapDatabaseRef<ReaderDatabase> {
    ReaderDatabase::wrap(db.reader(Regime::Exec))
}
