//! [`StateRead`]: what a client reads from a store, whether it writes the
//! datadir ([`StateDb`]) or follows its writer from another process
//! ([`ReadOnlyStateDb`]) — one trait, so that a server, a checker or a
//! client's read path is written once over either.

use alloy_primitives::{Address, B256};

use crate::{AccountProof, ReadOnlyStateDb, Regime, Result, StateDb, StateReader};

/// The reads both stores serve, with the same signatures (fallible: a
/// follower may fail to catch up with its writer).
///
/// ```
/// use strata_engine::{Options, Regime, StateDb, StateRead};
///
/// /// The head block and its root, from any store.
/// fn head(store: &impl StateRead) -> strata_engine::Result<(Option<u64>, alloy_primitives::B256)> {
///     Ok((store.last_block()?, store.root()?))
/// }
///
/// let dir = tempfile::tempdir().unwrap();
/// let db = StateDb::open(dir.path(), Options::default()).unwrap();
/// assert_eq!(head(&db).unwrap().0, None);
/// let reader = StateRead::reader(&db, Regime::Exec).unwrap();
/// assert!(reader.account(&alloy_primitives::Address::ZERO).unwrap().is_none());
/// ```
pub trait StateRead {
    /// A reader of the newest block.
    fn reader(&self, regime: Regime) -> Result<StateReader>;

    /// A reader of `block`, one of the blocks of the unwind window.
    fn reader_at(&self, block: u64, regime: Regime) -> Result<StateReader>;

    /// The newest block, `None` before the first commit.
    fn last_block(&self) -> Result<Option<u64>>;

    /// The state root of the newest block.
    fn root(&self) -> Result<B256>;

    /// The Merkle proof (`eth_getProof`) of `address` and `slots` after
    /// `block`, one of the blocks [`StateRead::reader_at`] reads.
    fn proof_at(&self, block: u64, address: &Address, slots: &[B256]) -> Result<AccountProof>;
}

impl StateRead for StateDb {
    fn reader(&self, regime: Regime) -> Result<StateReader> {
        Ok(StateDb::reader(self, regime))
    }

    fn reader_at(&self, block: u64, regime: Regime) -> Result<StateReader> {
        StateDb::reader_at(self, block, regime)
    }

    fn last_block(&self) -> Result<Option<u64>> {
        Ok(StateDb::last_block(self))
    }

    fn root(&self) -> Result<B256> {
        Ok(StateDb::root(self))
    }

    fn proof_at(&self, block: u64, address: &Address, slots: &[B256]) -> Result<AccountProof> {
        StateDb::proof_at(self, block, address, slots)
    }
}

impl StateRead for ReadOnlyStateDb {
    fn reader(&self, regime: Regime) -> Result<StateReader> {
        ReadOnlyStateDb::reader(self, regime)
    }

    fn reader_at(&self, block: u64, regime: Regime) -> Result<StateReader> {
        ReadOnlyStateDb::reader_at(self, block, regime)
    }

    fn last_block(&self) -> Result<Option<u64>> {
        ReadOnlyStateDb::last_block(self)
    }

    fn root(&self) -> Result<B256> {
        ReadOnlyStateDb::root(self)
    }

    fn proof_at(&self, block: u64, address: &Address, slots: &[B256]) -> Result<AccountProof> {
        ReadOnlyStateDb::proof_at(self, block, address, slots)
    }
}
