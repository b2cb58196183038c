//! The writer of one block: collects its writes in memory until `commit()`.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use alloy_primitives::{Address, B256, U256};
use bytes::Bytes;
use strata_cache::WarmupTicket;

use crate::StateReader;
use crate::commit::{CommitInfo, PreparedBlock, persist_block, prepare_block, prepare_streamed};
use crate::error::{Error, Result};
use crate::inner::Inner;
use crate::root_stream::{RootStream, Touched};
use crate::writer_slot::WriterTicket;
use strata_types::account::Account;
use strata_types::domain::{Domain, Regime};
use strata_view::access_list::{self, BlockAccessList};
use strata_view::overlay::Overlay;
use strata_view::reader::StateReader as ViewReader;
use strata_view::snapshot::Snapshot;

/// Writes block `number`. Nothing of the block is visible to other readers
/// before [`BlockWriter::commit`]; everything is after. Only one writer is
/// open at a time; dropping it without committing discards the block.
///
/// The writer owns what it needs (it shares the store's insides), so it is
/// `Send` and may be kept beside the [`crate::StateDb`] or handed to another
/// thread (e.g. `spawn_blocking`); it holds the store's write side until it
/// is committed or dropped.
///
/// ```
/// use alloy_primitives::{Address, B256, U256};
/// use strata_engine::{Account, Options, Regime, StateDb};
///
/// let dir = tempfile::tempdir().unwrap();
/// let db = StateDb::open(dir.path(), Options::default()).unwrap();
/// let bob = Address::repeat_byte(0xb0);
/// let mut block = db.begin_block(0).unwrap();
/// block.put_account(bob, &Account { nonce: 1, ..Account::default() });
/// block.put_storage(bob, B256::with_last_byte(1), U256::from(9));
/// // The writer reads its own block's writes; others see them after commit.
/// assert_eq!(block.account(&bob).unwrap().unwrap().nonce, 1);
/// assert!(db.reader(Regime::Exec).account(&bob).unwrap().is_none());
/// let committed = block.commit().unwrap();
/// assert_eq!(committed.root, db.root());
///
/// // A block dropped uncommitted leaves nothing.
/// let mut dropped = db.begin_block(1).unwrap();
/// dropped.put_account(bob, &Account { nonce: 2, ..Account::default() });
/// drop(dropped);
/// assert_eq!(db.last_block(), Some(0));
/// ```
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
    /// The warmers' loads of a [`BlockWriter::prefetch`], stopped before
    /// the block is written through to the caches (or dropped), and the
    /// value cache coalescing misses meanwhile.
    prefetch: Option<(WarmupTicket, strata_cache::Coalescing)>,
    /// The root computed from an access list on a thread of its own.
    alongside: Option<JoinHandle<Result<Alongside>>>,
    /// The writes that list describes, once its root was joined: the
    /// block's writes are checked against them until it is committed,
    /// whichever root the commit then uses.
    listed: Option<Arc<Overlay>>,
    /// The root thread of [`BlockWriter::stream_root`], and the keys written
    /// since the last [`BlockWriter::end_transaction`].
    stream: Option<RootStream>,
}

/// What a root computed alongside execution left for the commit.
struct Alongside {
    /// The writes the access list describes.
    listed: Arc<Overlay>,
    prepared: PreparedBlock,
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
            prefetch: None,
            alongside: None,
            listed: None,
            stream: None,
        }
    }

    /// The block's writes, for a write: a root computed before is stale.
    fn overlay_mut(&mut self) -> &mut Overlay {
        self.prepared = None;
        Arc::make_mut(&mut self.overlay)
    }

    /// Records a write for the root thread, when the root is streamed.
    fn touch(&mut self, record: impl FnOnce(&mut Touched)) {
        if let Some(stream) = &mut self.stream {
            record(stream.touched());
        }
    }

    /// The block being written.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Sets an account's nonce, balance and code hash.
    pub fn put_account(&mut self, address: Address, account: &Account) {
        self.touch(|t| t.account(address));
        self.overlay_mut().put_account(address, account);
    }

    /// Deletes an account together with its code and all of its storage, as
    /// selfdestruct does. Writes after this in the same block re-create it.
    pub fn delete_account(&mut self, address: Address) {
        self.touch(|t| t.wipe(address));
        self.overlay_mut().delete_account(address);
    }

    /// Sets a storage slot; zero deletes it. A value must have an account
    /// to belong to by the end of the block: [`BlockWriter::commit`] refuses
    /// a block that leaves one under no account (the commitment's
    /// `StorageWithoutAccount`), writing nothing, and the store stays usable.
    pub fn put_storage(&mut self, address: Address, slot: B256, value: U256) {
        self.touch(|t| t.slot(address, slot));
        self.overlay_mut().put_storage(address, slot, value);
    }

    /// Sets an account's bytecode; empty code deletes it. The account's
    /// `code_hash` is the caller's to keep in step (`put_account`).
    pub fn put_code(&mut self, address: Address, code: Bytes) {
        self.overlay_mut().put_code(address, code);
    }

    /// Writes what `list` says the block leaves behind: each listed
    /// account's destruction, balance, nonce and code (its code hash kept
    /// in step) over the account as this block sees it now, and its slots.
    /// Returns the number of account and slot writes.
    pub fn apply_access_list(&mut self, list: &BlockAccessList) -> Result<usize> {
        let base = self.inner.reader(self.base.clone(), None, Regime::Exec);
        self.touch(|t| {
            for account in &list.accounts {
                if account.destroyed {
                    t.wipe(account.address);
                }
                t.account(account.address);
                for (slot, _) in &account.storage_changes {
                    t.slot(account.address, *slot);
                }
            }
        });
        Ok(access_list::stage(
            list,
            self.overlay_mut(),
            |overlay, address| read_account(overlay, &base, address),
        )?)
    }

    /// Starts loading everything `list` names while the caller executes the
    /// block: the warmers read each listed account (and its bytecode), each
    /// listed slot, into the value cache and each commitment path of the
    /// listed writes into the branch cache. Returns at once; a read that
    /// arrives before its key is loaded reads the tiers itself, or waits for
    /// a load of the same key already in flight. Does nothing without
    /// warmers ([`crate::Options::warmers`] = 0). Loads are not timed as
    /// reads (the reads they serve are, as value-cache hits).
    pub fn prefetch(&mut self, list: &BlockAccessList) {
        if self.inner.warmup.warmers() == 0 {
            return;
        }
        let values = self
            .inner
            .reader(self.base.clone(), None, Regime::Exec)
            .untimed();
        let branches = strata_view::sources::CachedBranches::for_warmers(
            self.inner
                .reader(self.base.clone(), None, Regime::Commitment)
                .untimed(),
            self.inner.cache.clone(),
        );
        // Before the first load, so that every prefetch load is shared.
        let coalescing = self.inner.values.coalesce();
        let ticket = self.inner.warmup.warm(
            access_list::prefetch_items(list),
            Arc::new(move |item: &access_list::PrefetchItem| {
                access_list::prefetch_one(&values, &branches, item)
            }),
        );
        if let Some((previous, _)) = self.prefetch.replace((ticket, coalescing)) {
            previous.cancel();
        }
    }

    /// Computes the block's state root from `list` on a thread of its own
    /// while the caller executes the block (and [`prefetch`]es it):
    /// `list` must carry the block's post-state. [`BlockWriter::commit`]
    /// (or [`BlockWriter::state_root`]) then waits for that root and checks
    /// that the block wrote what `list` says (a write of the value already
    /// there, or a wipe of storage at an address that had no account, is
    /// no difference) — any other difference refuses the block with
    /// [`Error::AccessListMismatch`], naming the first differing key,
    /// writing nothing and leaving the store usable; a caller that has
    /// checked the list by other means may then
    /// [`discard_list_root`](BlockWriter::discard_list_root) and take the
    /// root of the writes.
    ///
    /// Replaces a [`BlockWriter::stream_root`].
    ///
    /// [`prefetch`]: BlockWriter::prefetch
    pub fn root_alongside(&mut self, list: Arc<BlockAccessList>) -> Result<()> {
        self.inner.check_poisoned()?;
        let (inner, base, number) = (self.inner.clone(), self.base.clone(), self.number);
        let handle = std::thread::Builder::new()
            .name(format!("strata-root-{number}"))
            .spawn(move || {
                let reader = inner.reader(base.clone(), None, Regime::Commitment);
                let mut listed = Overlay::default();
                access_list::stage(&list, &mut listed, |overlay, address| {
                    read_account(overlay, &reader, address)
                })?;
                let listed = Arc::new(listed);
                let prepared = crate::root_stream::on_root_pool(|| {
                    prepare_block(&inner, number, &base, listed.clone())
                })?;
                Ok(Alongside { listed, prepared })
            })
            .map_err(|source| Error::Thread {
                what: "start the root thread",
                source,
            })?;
        if let Some(stream) = self.stream.take() {
            stream.abandon();
        }
        if let Some(previous) = self.alongside.replace(handle) {
            // A second list replaces the first; its root is of no use.
            let _ = previous.join();
        }
        self.prepared = None;
        Ok(())
    }

    /// Drops the root computed alongside from an access list
    /// ([`BlockWriter::root_alongside`]) and its check of the writes: the
    /// next [`BlockWriter::state_root`] or [`BlockWriter::commit`] computes
    /// the root from the block's writes. For a caller that has checked the
    /// list against the block's execution itself (an executor comparing it
    /// with the list execution built), and meets an
    /// [`Error::AccessListMismatch`] that is a difference of form, not of
    /// content: a write the list cannot say (an empty account that EIP-161
    /// removes when touched).
    pub fn discard_list_root(&mut self) {
        if let Some(handle) = self.alongside.take() {
            let _ = handle.join();
        }
        self.listed = None;
        self.prepared = None;
    }

    /// Computes the block's state root while the block is written (reth's
    /// state root task): from now on, each [`BlockWriter::end_transaction`]
    /// hands the writes since the last one to a root thread, which folds
    /// them into the trie while the caller goes on (the writes made before
    /// this call go with the first). [`BlockWriter::commit`] (or
    /// [`BlockWriter::state_root`]) hands over the rest and waits only for
    /// their fold; the root and the commitment records are the ones the
    /// commit computes after the block ([`CommitInfo::root_wait`] says how
    /// long it waited, [`CommitInfo::root_folds`] how many folds ran).
    /// Replaces a [`BlockWriter::root_alongside`].
    pub fn stream_root(&mut self) -> Result<()> {
        self.inner.check_poisoned()?;
        if let Some(handle) = self.alongside.take() {
            let _ = handle.join();
        }
        if self.stream.is_none() {
            self.stream = Some(RootStream::start(
                &self.inner,
                self.number,
                &self.base,
                &self.overlay,
            )?);
        }
        self.prepared = None;
        Ok(())
    }

    /// Ends a transaction (or any group of writes): with
    /// [`BlockWriter::stream_root`], hands the writes since the last call to
    /// the root thread. Cheap, and does nothing without a stream.
    pub fn end_transaction(&mut self) {
        if let Some(stream) = &mut self.stream {
            stream.hand_over(&self.overlay);
        }
    }

    /// With [`BlockWriter::stream_root`]: hands over the writes since the
    /// last handover and waits until the root thread has folded them, so
    /// that each call is a fold of its own (tests). Feature `test-utils`.
    #[cfg(feature = "test-utils")]
    pub fn fold_now(&mut self) {
        if let Some(stream) = &mut self.stream {
            stream.fold_now(&self.overlay);
        }
    }

    /// The block's root and unwind data: from its streamed root, else from
    /// the root computed alongside it, else computed now.
    fn prepare(&mut self) -> Result<PreparedBlock> {
        if let Some(prepared) = self.join_stream()? {
            return Ok(prepared);
        }
        if let Some(prepared) = self.join_alongside()? {
            return Ok(prepared);
        }
        // On the root pool, as the streamed and alongside roots: on the
        // caller's pool the root's work would queue behind whatever the
        // caller runs there meanwhile (an importer's next senders).
        crate::root_stream::on_root_pool(|| {
            prepare_block(&self.inner, self.number, &self.base, self.overlay.clone())
        })
    }

    /// Waits for the root of a [`BlockWriter::stream_root`].
    fn join_stream(&mut self) -> Result<Option<PreparedBlock>> {
        let Some(stream) = self.stream.take() else {
            return Ok(None);
        };
        prepare_streamed(
            &self.inner,
            self.number,
            &self.base,
            self.overlay.clone(),
            stream,
        )
        .map(Some)
    }

    /// Waits for a root computed alongside and keeps its list's writes for
    /// [`BlockWriter::check_listed`]: the prepared block, with the time
    /// waited.
    fn join_alongside(&mut self) -> Result<Option<PreparedBlock>> {
        let Some(handle) = self.alongside.take() else {
            return Ok(None);
        };
        let waited = Instant::now();
        let alongside = handle.join().map_err(|panic| Error::Panicked {
            what: "computing a root alongside execution",
            message: strata_db::panic_message(&panic),
        })??;
        let mut prepared = alongside.prepared;
        prepared.root_wait = Some(waited.elapsed());
        self.listed = Some(alongside.listed);
        Ok(Some(prepared))
    }

    /// Refuses the block if an access list's root was joined and the
    /// block's writes now differ from the list's.
    fn check_listed(&self) -> Result<()> {
        match &self.listed {
            Some(listed) => {
                let before = self
                    .inner
                    .reader(self.base.clone(), None, Regime::Commitment)
                    .untimed();
                Ok(access_list::check_writes(
                    self.number,
                    listed,
                    &self.overlay,
                    |domain, key| before.get_latest(domain, key),
                )?)
            }
            None => Ok(()),
        }
    }

    /// Stops the prefetch's warmers and waits for the ones still loading,
    /// so that none puts a pre-block branch over a written-through one.
    fn stop_prefetch(&mut self) -> u64 {
        let Some((ticket, _coalescing)) = self.prefetch.take() else {
            return 0;
        };
        ticket.cancel();
        let report = ticket.wait();
        for error in &report.errors {
            tracing::warn!(block = self.number, %error, "prefetch read failed");
        }
        report.items_done as u64
    }

    /// Raw write of a domain key (`None` deletes). The commitment domain is
    /// the commitment's own and cannot be written here.
    pub fn put_raw(&mut self, domain: Domain, key: &[u8], value: Option<Bytes>) -> Result<()> {
        if domain == Domain::Commitment {
            return Err(crate::error::Error::CommitmentDomainWrite);
        }
        self.touch(|t| t.raw(domain, key));
        self.overlay_mut().put(domain, key.to_vec(), value);
        Ok(())
    }

    /// Records the block's hash, served by `block_hash` lookups (the last
    /// 256 are kept, as the EVM's BLOCKHASH needs).
    pub fn set_block_hash(&mut self, hash: B256) {
        self.overlay_mut().block_hash = Some(hash);
    }

    /// Records the block's header as the client encodes it (RLP for
    /// Ethereum; the store keeps the bytes as given), served by
    /// `block_header` lookups for the same 256 blocks as the hashes: what
    /// an RPC server needs to run a call at a recent block. It travels in
    /// the block's journal record, so it is as durable as the block.
    pub fn set_block_header(&mut self, header: Bytes) {
        self.overlay_mut().block_header = Some(header);
    }

    /// A read handle over the last committed block plus this block's writes
    /// so far; later writes of the block are not visible through it.
    pub fn reader(&self, regime: Regime) -> StateReader {
        StateReader::new(
            self.inner
                .reader(self.base.clone(), Some(self.overlay.clone()), regime),
        )
    }

    /// Reads `key` as this block sees it now (Exec regime).
    pub fn get_latest(&self, domain: Domain, key: &[u8]) -> Result<Option<Bytes>> {
        Ok(self.view().get_latest(domain, key)?)
    }

    /// The account as this block sees it now.
    pub fn account(&self, address: &Address) -> Result<Option<Account>> {
        Ok(self.view().account(address)?)
    }

    /// A storage slot as this block sees it now.
    pub fn storage(&self, address: &Address, slot: &B256) -> Result<U256> {
        Ok(self.view().storage(address, slot)?)
    }

    fn view(&self) -> ViewReader {
        // Shares the overlay; the next write copies it only if this handle is
        // still alive (it is dropped at the end of each read call).
        self.inner
            .reader(self.base.clone(), Some(self.overlay.clone()), Regime::Exec)
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
        let result = self.inner.check_poisoned().and_then(|()| {
            let prepared = self.prepare()?;
            self.check_listed()?;
            Ok(prepared)
        });
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
    pub fn commit(mut self) -> Result<CommitInfo> {
        let number = self.number;
        let inner = self.inner.clone();
        let result = inner.check_poisoned().and_then(|()| {
            let mut prepared = match self.prepared.take() {
                Some(prepared) => prepared,
                None => self.prepare()?,
            };
            // Also when `state_root` joined the list's root and the block was
            // written to since.
            self.check_listed()?;
            prepared.label_as(&self.overlay);
            let prefetched = self.stop_prefetch();
            let mut info = persist_block(&self.inner, prepared, self.expected_root)?;
            info.prefetched = prefetched;
            // The snapshot the block was written on may be the last to
            // hold blocks a flush moved out of memory meanwhile: freeing
            // them is not the writer's work. Only the blocks go: the rest
            // of the snapshot (its database read transaction, its files)
            // is let go here.
            let base = std::mem::replace(&mut self.base, inner.current.load_full());
            if let Ok(mut base) = Arc::try_unwrap(base) {
                let blocks = (
                    std::mem::take(&mut base.memory),
                    std::mem::take(&mut base.history),
                );
                inner.drop_behind.drop_later(blocks);
            }
            Ok(info)
        });
        inner
            .poison_on_error(result)
            .map_err(|error| error.in_block(number))
    }
}

impl Drop for BlockWriter {
    /// A dropped block leaves no loads behind: its prefetch and its root
    /// thread read the state before the block and fill the caches, so they
    /// end before the writer slot passes to the next block.
    fn drop(&mut self) {
        self.stop_prefetch();
        if let Some(handle) = self.alongside.take() {
            let _ = handle.join();
        }
        if let Some(stream) = self.stream.take() {
            stream.abandon();
        }
    }
}

/// The account as a block sees it: its own write in `overlay`, else what
/// `base` holds.
fn read_account(
    overlay: &Overlay,
    base: &ViewReader,
    address: &Address,
) -> strata_view::error::Result<Option<Account>> {
    match overlay.get(Domain::Account, address.as_slice()) {
        Some(None) => Ok(None),
        Some(Some(raw)) => strata_view::reader::decode_account(address.as_slice(), raw).map(Some),
        None => base.account(address),
    }
}
