//! The writer of one block: collects its writes in memory until `commit()`.

use std::sync::Arc;

use alloy_primitives::{Address, B256, U256};
use bytes::Bytes;

use crate::account::{Account, encode_slot_value};
use crate::commit::{CommitInfo, PreparedBlock, persist_block, prepare_block};
use crate::domain::{Domain, Regime};
use crate::error::Result;
use crate::inner::Inner;
use crate::keys::storage_key;
use crate::overlay::Overlay;
use crate::reader::StateReader;
use crate::snapshot::Snapshot;
use crate::writer_slot::WriterTicket;

/// Writes block `number`. Nothing of the block is visible to other readers
/// before [`BlockWriter::commit`]; everything is after. Only one writer is
/// open at a time; dropping it without committing discards the block.
///
/// The writer owns what it needs (it shares the store's insides), so it is
/// `Send` and may be kept beside the [`crate::StateDb`] or handed to another
/// thread (e.g. `spawn_blocking`); it holds the store's write side until it
/// is committed or dropped.
pub struct BlockWriter {
    inner: Arc<Inner>,
    _write_side: WriterTicket,
    number: u64,
    base: Arc<Snapshot>,
    overlay: Arc<Overlay>,
    expected_root: Option<B256>,
    /// The root and records [`BlockWriter::state_root`] computed, until
    /// the next write.
    prepared: Option<PreparedBlock>,
}

impl BlockWriter {
    pub(crate) fn new(inner: &Arc<Inner>, write_side: WriterTicket, number: u64) -> Self {
        let base = inner.current.load_full();
        BlockWriter {
            inner: inner.clone(),
            _write_side: write_side,
            number,
            base,
            overlay: Arc::default(),
            expected_root: None,
            prepared: None,
        }
    }

    /// The block's writes, for a write: a root computed before is stale.
    fn overlay_mut(&mut self) -> &mut Overlay {
        self.prepared = None;
        Arc::make_mut(&mut self.overlay)
    }

    /// The block being written.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Sets an account's nonce, balance and code hash.
    pub fn put_account(&mut self, address: Address, account: &Account) {
        self.overlay_mut().put(
            Domain::Account,
            address.to_vec(),
            Some(Bytes::from(account.encode())),
        );
    }

    /// Deletes an account together with its code and all of its storage, as
    /// selfdestruct does. Writes after this in the same block re-create it.
    pub fn delete_account(&mut self, address: Address) {
        self.overlay_mut()
            .put(Domain::Account, address.to_vec(), None);
        self.overlay_mut().put(Domain::Code, address.to_vec(), None);
        self.overlay_mut().wipe_storage(address);
    }

    /// Sets a storage slot; zero deletes it.
    pub fn put_storage(&mut self, address: Address, slot: B256, value: U256) {
        let key = storage_key(&address, &slot).to_vec();
        let value = (!value.is_zero()).then(|| Bytes::from(encode_slot_value(value)));
        self.overlay_mut().put(Domain::Storage, key, value);
    }

    /// Sets an account's bytecode; empty code deletes it. The account's
    /// `code_hash` is the caller's to keep in step (`put_account`).
    pub fn put_code(&mut self, address: Address, code: Bytes) {
        let value = (!code.is_empty()).then_some(code);
        self.overlay_mut()
            .put(Domain::Code, address.to_vec(), value);
    }

    /// Raw write of a domain key (`None` deletes). The commitment domain is
    /// the commitment's own and cannot be written here.
    pub fn put_raw(&mut self, domain: Domain, key: &[u8], value: Option<Bytes>) -> Result<()> {
        if domain == Domain::Commitment {
            return Err(crate::error::Error::Maintenance(
                "the commitment domain is written by the commitment only".into(),
            ));
        }
        self.overlay_mut().put(domain, key.to_vec(), value);
        Ok(())
    }

    /// Records the block's hash, served by `block_hash` lookups (the last
    /// 256 are kept, as the EVM's BLOCKHASH needs).
    pub fn set_block_hash(&mut self, hash: B256) {
        self.overlay_mut().block_hash = Some(hash);
    }

    /// A read handle over the last committed block plus this block's writes
    /// so far; later writes of the block are not visible through it.
    pub fn reader(&self, regime: Regime) -> StateReader {
        StateReader::new(
            self.base.clone(),
            Some(self.overlay.clone()),
            regime,
            self.inner.metrics.clone(),
        )
    }

    /// Reads `key` as this block sees it now (Exec regime).
    pub fn get_latest(&self, domain: Domain, key: &[u8]) -> Result<Option<Bytes>> {
        self.view().get_latest(domain, key)
    }

    /// The account as this block sees it now.
    pub fn account(&self, address: &Address) -> Result<Option<Account>> {
        self.view().account(address)
    }

    /// A storage slot as this block sees it now.
    pub fn storage(&self, address: &Address, slot: &B256) -> Result<U256> {
        self.view().storage(address, slot)
    }

    fn view(&self) -> StateReader {
        // Shares the overlay; the next write copies it only if this handle is
        // still alive (it is dropped at the end of each read call).
        StateReader::new(
            self.base.clone(),
            Some(self.overlay.clone()),
            Regime::Exec,
            self.inner.metrics.clone(),
        )
    }

    /// Makes [`BlockWriter::commit`] refuse the block, writing nothing,
    /// unless its state root is `root` (e.g. the root of the block's header).
    pub fn expect_root(&mut self, root: B256) {
        self.expected_root = Some(root);
    }

    /// Computes the block's state root over its writes so far without
    /// committing anything (reth's `state_root_with_updates`): a client can
    /// check it against a payload and then [`BlockWriter::commit`] — which
    /// reuses the computed root and commitment records unless the block is
    /// written to again — or drop the writer, which leaves no trace.
    pub fn state_root(&mut self) -> Result<B256> {
        if let Some(prepared) = &self.prepared {
            return Ok(prepared.root());
        }
        let number = self.number;
        let result = self
            .inner
            .check_poisoned()
            .and_then(|()| prepare_block(&self.inner, number, &self.base, self.overlay.clone()));
        let prepared = self
            .inner
            .poison_on_error(result)
            .map_err(|error| error.in_block(number))?;
        let root = prepared.root();
        self.prepared = Some(prepared);
        Ok(root)
    }

    /// Computes the state root (unless [`BlockWriter::state_root`] already
    /// did for these writes), makes the block durable through the journal
    /// with its root and unwind data, and makes it visible.
    ///
    /// With [`BlockWriter::expect_root`] set, a different root refuses the
    /// block with [`crate::Error::BlockRootMismatch`]: nothing is written,
    /// the store stays usable and the block can be begun again. Every error
    /// names the block.
    pub fn commit(self) -> Result<CommitInfo> {
        let number = self.number;
        let inner = self.inner.clone();
        let result = inner.check_poisoned().and_then(|()| {
            let prepared = match self.prepared {
                Some(prepared) => prepared,
                None => prepare_block(&self.inner, number, &self.base, self.overlay)?,
            };
            persist_block(&self.inner, prepared, self.expected_root)
        });
        inner
            .poison_on_error(result)
            .map_err(|error| error.in_block(number))
    }
}
