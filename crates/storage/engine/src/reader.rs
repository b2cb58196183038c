//! [`StateReader`]: what a client holds to read one block. The engine's own
//! handle (the view crate's reader, with its snapshot, overlay and metrics)
//! stays inside; a client sees the reads only.

use alloy_primitives::{Address, B256, U256};
use bytes::Bytes;
use strata_commitment::AccountProof;
use strata_types::{Account, Domain, Regime};
use strata_view::reader::StateReader as ViewReader;

use crate::error::Result;

/// A consistent view of one committed block (plus, for a block's own
/// writer, its uncommitted writes), opened for one [`Regime`].
///
/// Cheap to clone; `Send + Sync`, so many threads can read at once. Every
/// point read is timed into the store's telemetry under the handle's
/// regime. A reader comes from a store: [`crate::StateDb::reader`],
/// [`crate::StateDb::reader_at`], [`crate::BlockWriter::reader`], or a
/// [`crate::ReadOnlyStateDb`]'s ([`crate::StateRead`] names them for both).
///
/// ```
/// use strata_engine::{Options, Regime, StateDb};
///
/// let dir = tempfile::tempdir().unwrap();
/// let db = StateDb::open(dir.path(), Options::default()).unwrap();
/// let reader = db.reader(Regime::Exec);
/// assert_eq!(reader.block(), None);
/// assert!(reader.account(&alloy_primitives::Address::ZERO).unwrap().is_none());
/// ```
#[derive(Clone)]
pub struct StateReader(ViewReader);

impl StateReader {
    /// A client's handle on the engine's reader.
    pub(crate) fn new(inner: ViewReader) -> StateReader {
        StateReader(inner)
    }

    /// The same block, read under another regime.
    pub fn with_regime(&self, regime: Regime) -> StateReader {
        StateReader(self.0.with_regime(regime))
    }

    /// The regime this handle's reads are attributed to.
    pub fn regime(&self) -> Regime {
        self.0.regime()
    }

    /// The committed block this handle shows: the last one, or the one a
    /// reader at a recent block was opened for (`None` before genesis).
    pub fn block(&self) -> Option<u64> {
        self.0.block()
    }

    /// The state root of that block.
    pub fn root(&self) -> B256 {
        self.0.root()
    }

    /// The newest value of `key` in `domain` (raw, as stored): memory, then
    /// redb, then files newest to oldest. `None` when the key does not
    /// exist (or was deleted).
    pub fn get_latest(&self, domain: Domain, key: &[u8]) -> Result<Option<Bytes>> {
        Ok(self.0.get_latest(domain, key)?)
    }

    /// The account at `address`, or `None` when it does not exist.
    pub fn account(&self, address: &Address) -> Result<Option<Account>> {
        Ok(self.0.account(address)?)
    }

    /// The value of `slot` in `address`'s storage (zero when unset).
    pub fn storage(&self, address: &Address, slot: &B256) -> Result<U256> {
        Ok(self.0.storage(address, slot)?)
    }

    /// The bytecode of `address`, or `None` when it has none.
    pub fn code(&self, address: &Address) -> Result<Option<Bytes>> {
        Ok(self.0.code(address)?)
    }

    /// Bytecode by its keccak256 hash, or `None` when no block ever stored
    /// that code.
    pub fn code_by_hash(&self, hash: &B256) -> Result<Option<Bytes>> {
        Ok(self.0.code_by_hash(hash)?)
    }

    /// The hash of block `number`, when it is one of the 256 blocks up to
    /// this handle's block committed with a hash
    /// ([`crate::BlockWriter::set_block_hash`]).
    pub fn block_hash(&self, number: u64) -> Result<Option<B256>> {
        Ok(self.0.block_hash(number)?)
    }

    /// The header of block `number` as its writer gave it
    /// ([`crate::BlockWriter::set_block_header`]), when it is one of the
    /// 256 blocks up to this handle's block and was given one.
    pub fn block_header(&self, number: u64) -> Result<Option<Bytes>> {
        Ok(self.0.block_header(number)?)
    }

    /// The Merkle proof of `address` and of each of `slots` in its storage
    /// against this block's state root (`eth_getProof`), for present and
    /// absent keys alike. Served for the last committed block; a reader at
    /// an older block or a block writer's reader gets
    /// [`crate::Error::ProofUnavailable`] ([`crate::StateRead::proof_at`]
    /// proves at an older block).
    pub fn proof(&self, address: &Address, slots: &[B256]) -> Result<AccountProof> {
        Ok(self.0.proof(address, slots)?)
    }

    /// Up to `limit` accounts in address order, starting at `from`
    /// (inclusive), as this handle's block has them, deleted accounts left
    /// out. Page through the state with the next address after the last one
    /// returned. Not timed as reads (a scan).
    pub fn accounts(&self, from: &Address, limit: usize) -> Result<Vec<(Address, Account)>> {
        Ok(self.0.accounts(from, limit)?)
    }

    /// Up to `limit` non-zero slots of `address` in slot order, starting
    /// at `from` (inclusive), as this handle's block has them
    /// (`debug_storageRangeAt`, snap sync's storage ranges). Not timed as
    /// reads (a scan).
    pub fn storage_range(
        &self,
        address: &Address,
        from: &B256,
        limit: usize,
    ) -> Result<Vec<(B256, U256)>> {
        Ok(self.0.storage_range(address, from, limit)?)
    }
}

impl std::fmt::Debug for StateReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
