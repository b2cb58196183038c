//! Read handles: a consistent snapshot of a committed block, opened for a regime.

use std::sync::Arc;

use alloy_primitives::{Address, B256, U256};
use bytes::Bytes;

use crate::error::{ReadError, Result, corrupt_record};
use crate::overlay::Overlay;
use crate::snapshot::{Found, Snapshot, ValueRef};
use crate::value_keys::{code_hash_key, value_key};
use strata_cache::{ValueCache, ValueSource};
use strata_db::tables::BLOCK_HASH_WINDOW;
use strata_telemetry::{ReadMetrics, Tier};
use strata_types::Head;
use strata_types::account::{Account, decode_slot_value};
use strata_types::domain::{Domain, Regime};
use strata_types::keys::storage_key;

/// A consistent view of the last committed block (plus, for a block's own
/// writer, its uncommitted writes), opened for one [`Regime`].
///
/// Cheap to clone; `Send + Sync`, so many threads can read at once. Every
/// read is timed into the store's telemetry under the handle's regime.
///
/// A reader comes from a store (`StateDb::reader`, `reader_at`, or a
/// `ReadOnlyStateDb`'s); the engine's `StateDb` docs show one in use.
#[derive(Clone)]
pub struct StateReader {
    snapshot: Arc<Snapshot>,
    overlay: Option<Arc<Overlay>>,
    /// For a reader at an older block: that block (the overlay undoes the
    /// blocks after it).
    at: Option<Head>,
    /// For a reader at a block older than redb's head, read through redb's
    /// history: then `at` is that block and the overlay takes the state
    /// back to redb's head only ([`StateReader::deep`]).
    deep: bool,
    regime: Regime,
    metrics: Arc<ReadMetrics>,
    /// The store's value cache (none for a read-only store).
    values: Option<Arc<ValueCache<Head>>>,
    /// Whether reads are timed (a prefetch's loads are not).
    timed: bool,
}

impl StateReader {
    /// A reader of `snapshot` (seen through `overlay`, a writer's block in
    /// progress, when given) in `regime`, timing its reads into `metrics`.
    pub fn new(
        snapshot: Arc<Snapshot>,
        overlay: Option<Arc<Overlay>>,
        regime: Regime,
        metrics: Arc<ReadMetrics>,
    ) -> StateReader {
        StateReader {
            snapshot,
            overlay,
            at: None,
            deep: false,
            regime,
            metrics,
            values: None,
            timed: true,
        }
    }

    /// The same handle without timing its reads (a prefetch's loads).
    pub fn untimed(self) -> StateReader {
        StateReader {
            timed: false,
            ..self
        }
    }

    /// Starts timing a read unless this handle is untimed.
    #[inline]
    pub fn start(&self) -> Option<std::time::Instant> {
        if self.timed {
            self.metrics.start()
        } else {
            None
        }
    }

    /// The same handle reading through `values` for the account, storage
    /// and code domains (when it serves this handle's snapshot).
    pub fn with_values(self, values: Arc<ValueCache<Head>>) -> StateReader {
        StateReader {
            values: Some(values),
            ..self
        }
    }

    /// The value cache and the head it must serve for this handle's reads
    /// of `domain` to go through it.
    fn value_cache(&self, domain: Domain) -> Option<(&ValueCache<Head>, Head)> {
        if self.deep {
            // Its view is the head's: a key may have changed since `at`
            // without being in the overlay (which goes back to redb's head).
            return None;
        }
        let values = self.values.as_deref()?;
        let head = self.snapshot.head?;
        (domain != Domain::Commitment && values.is_enabled()).then_some((values, head))
    }

    /// A reader of the state after `at`, an older block than `snapshot`'s
    /// head: `undo` holds, for every key written after it, its value then.
    pub fn at(
        snapshot: Arc<Snapshot>,
        undo: Overlay,
        at: Head,
        regime: Regime,
        metrics: Arc<ReadMetrics>,
    ) -> StateReader {
        StateReader {
            at: Some(at),
            ..StateReader::new(snapshot, Some(Arc::new(undo)), regime, metrics)
        }
    }

    /// A reader of the state after `at`, a block older than the one
    /// `snapshot`'s redb holds ([`Snapshot::db_head`]): each key reads the
    /// value redb's history recorded before its first change after `at`,
    /// else its value at redb's head — `to_db_head` (the value before the
    /// first write of every key the memory tier's blocks wrote), then redb
    /// and the files, never the memory tier or the value cache. Every
    /// domain reads this way, the commitment's records included, so proofs
    /// come from the records of `at` itself.
    pub fn deep(
        snapshot: Arc<Snapshot>,
        to_db_head: Arc<Overlay>,
        at: Head,
        regime: Regime,
        metrics: Arc<ReadMetrics>,
    ) -> StateReader {
        StateReader {
            at: Some(at),
            deep: true,
            ..StateReader::new(snapshot, Some(to_db_head), regime, metrics)
        }
    }

    /// The block this handle reads at when older than its snapshot's head.
    pub(crate) fn at_block(&self) -> Option<u64> {
        self.at.map(|at| at.block)
    }

    /// Whether this reader reads through redb's history
    /// ([`StateReader::deep`]).
    pub fn is_deep(&self) -> bool {
        self.deep
    }

    /// The same snapshot, read under another regime.
    pub fn with_regime(&self, regime: Regime) -> StateReader {
        StateReader {
            regime,
            ..self.clone()
        }
    }

    /// The regime this handle's reads are attributed to.
    pub fn regime(&self) -> Regime {
        self.regime
    }

    /// The committed block this handle shows: the last one, or the one a
    /// reader at a recent block was opened for (`None` before genesis).
    pub fn block(&self) -> Option<u64> {
        match self.at {
            Some(at) => Some(at.block),
            None => self.snapshot.block(),
        }
    }

    /// The state root of that block.
    pub fn root(&self) -> B256 {
        match self.at {
            Some(at) => at.root,
            None => self.snapshot.root(),
        }
    }

    /// The newest value of `key` in `domain`: memory, then db, then files
    /// newest to oldest. `None` when the key does not exist (or was deleted).
    pub fn get_latest(&self, domain: Domain, key: &[u8]) -> Result<Option<Bytes>> {
        self.read_with(domain, key, |value| value.map(|v| v.to_bytes()))
    }

    /// Hands the newest value of `key` (the block's own writes, the value
    /// cache, memory, db, files) to `read` without copying it where no
    /// cache is filled; the read is timed, `read` included.
    fn read_with<T>(
        &self,
        domain: Domain,
        key: &[u8],
        read: impl FnOnce(Option<ValueRef<'_>>) -> T,
    ) -> Result<T> {
        let started = self.start();
        if self.deep
            && let Some(at) = self.at
            && let Some(value) = self.snapshot.history_value_at(domain, key, at.block)?
        {
            let value = read(value.as_ref().map(ValueRef::Shared));
            self.metrics.finish(started, domain, Tier::Db, self.regime);
            return Ok(value);
        }
        if let Some(value) = self.overlay.as_ref().and_then(|o| o.get(domain, key)) {
            let value = read(value.map(ValueRef::Shared));
            self.metrics
                .finish(started, domain, Tier::Memory, self.regime);
            return Ok(value);
        }
        if let Some((values, head)) = self.value_cache(domain) {
            let mut found = Found::Nowhere;
            let lookup = values.get_or_load(head, &value_key(domain, key), || {
                let (value, tier) = self.snapshot.get(domain, key)?;
                found = tier;
                Ok::<_, ReadError>(value)
            })?;
            let tier = match lookup.source {
                ValueSource::Cache => Tier::ValueCache,
                ValueSource::Loaded => tier_of(found),
            };
            let value = read(lookup.value.as_ref().map(ValueRef::Shared));
            self.metrics.finish(started, domain, tier, self.regime);
            return Ok(value);
        }
        let (value, found) = if self.deep {
            self.snapshot.get_below_memory_with(domain, key, read)?
        } else {
            self.snapshot.get_with(domain, key, read)?
        };
        self.metrics
            .finish(started, domain, tier_of(found), self.regime);
        Ok(value)
    }

    /// The account at `address`, or `None` when it does not exist.
    pub fn account(&self, address: &Address) -> Result<Option<Account>> {
        self.read_with(Domain::Account, address.as_slice(), |raw| {
            raw.map(|raw| decode_account(address.as_slice(), raw.as_slice()))
        })?
        .transpose()
    }

    /// The value of `slot` in `address`'s storage (zero when unset).
    pub fn storage(&self, address: &Address, slot: &B256) -> Result<U256> {
        let key = storage_key(address, slot);
        let value = self.read_with(Domain::Storage, &key, |raw| {
            raw.map(|raw| decode_slot(&key, raw.as_slice()))
        })?;
        Ok(value.transpose()?.unwrap_or(U256::ZERO))
    }

    /// Bytecode by its keccak256 hash (one read), or `None` when no block
    /// ever stored that code.
    pub fn code_by_hash(&self, hash: &B256) -> Result<Option<Bytes>> {
        if let Some(overlay) = &self.overlay
            && let Some(code) = overlay.code_by_hash(hash)
        {
            return Ok(Some(code.clone()));
        }
        let started = self.start();
        let (code, tier) = match self.value_cache(Domain::Code) {
            Some((values, head)) => {
                let lookup = values.get_or_load(head, &code_hash_key(hash), || {
                    self.snapshot.code_by_hash(hash)
                })?;
                let tier = match lookup.source {
                    ValueSource::Cache => Tier::ValueCache,
                    ValueSource::Loaded => Tier::Db,
                };
                (lookup.value, tier)
            }
            None => (self.snapshot.code_by_hash(hash)?, Tier::Db),
        };
        let tier = if code.is_none() { Tier::Absent } else { tier };
        self.metrics
            .finish(started, Domain::Code, tier, self.regime);
        Ok(code)
    }

    /// The hash of block `number`, when it is one of the 256 blocks up to
    /// this handle's block committed with a hash
    /// (`BlockWriter::set_block_hash`).
    pub fn block_hash(&self, number: u64) -> Result<Option<B256>> {
        if let Some(at) = self.at {
            if number > at.block || number.saturating_add(BLOCK_HASH_WINDOW) <= at.block {
                return Ok(None);
            }
            return self.snapshot.stored_block_hash(number);
        }
        self.snapshot.block_hash(number)
    }

    /// The header of block `number` as its writer gave it
    /// (`BlockWriter::set_block_header`), when it is one of the 256 blocks
    /// up to this handle's block and was given one.
    pub fn block_header(&self, number: u64) -> Result<Option<Bytes>> {
        if let Some(at) = self.at {
            if number > at.block || number.saturating_add(BLOCK_HASH_WINDOW) <= at.block {
                return Ok(None);
            }
            return self.snapshot.stored_block_header(number);
        }
        self.snapshot.block_header(number)
    }

    /// The bytecode of `address`, or `None` when it has none.
    pub fn code(&self, address: &Address) -> Result<Option<Bytes>> {
        self.get_latest(Domain::Code, address.as_slice())
    }

    /// The snapshot this handle reads.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The writes read before the snapshot: a block writer's own, or for
    /// a reader at an older block the undo of the later blocks.
    /// For a reader at an older block: that block and its root.
    pub fn older_block(&self) -> Option<Head> {
        self.at
    }

    /// A reader of this snapshot's head (no overlay, not at an older block)
    /// in the commitment regime.
    pub fn head_commitment_reader(&self) -> StateReader {
        StateReader {
            overlay: None,
            at: None,
            deep: false,
            regime: Regime::Commitment,
            ..self.clone()
        }
    }

    /// The writer's overlay this reader sees through, if any.
    pub fn overlay(&self) -> Option<&Overlay> {
        self.overlay.as_deref()
    }

    /// Where this reader's read latencies go.
    pub fn metrics(&self) -> &Arc<ReadMetrics> {
        &self.metrics
    }
}

impl std::fmt::Debug for StateReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateReader")
            .field("block", &self.block())
            .field("regime", &self.regime)
            .field("uncommitted", &self.overlay.as_ref().map(|o| o.len()))
            .finish()
    }
}

/// The telemetry tier of a value found (or not) in the snapshot's tiers.
fn tier_of(found: Found) -> Tier {
    match found {
        Found::Memory => Tier::Memory,
        Found::Db => Tier::Db,
        Found::File(level) => Tier::File(level.min(u8::MAX as usize) as u8),
        Found::Nowhere => Tier::Absent,
    }
}

/// An account record as stored under `key`, or a corrupt-record error
/// naming the key.
pub fn decode_account(key: &[u8], raw: &[u8]) -> Result<Account> {
    Account::decode(raw).map_err(|what| corrupt_record(Domain::Account, key, what.to_string()))
}

/// A storage slot's value as stored under `key`, or
/// a corrupt-record error naming the key.
pub fn decode_slot(key: &[u8], raw: &[u8]) -> Result<U256> {
    decode_slot_value(raw).map_err(|what| corrupt_record(Domain::Storage, key, what.to_string()))
}
