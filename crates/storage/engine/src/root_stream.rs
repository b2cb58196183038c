//! The state root computed while the block executes (reth's state root
//! task): the writes of each transaction are handed to a root thread that
//! folds them into the trie while the next transaction runs, so that when
//! the last transaction ends only its own writes are left to fold.
//!
//! Each fold is a [`compute_root`] over the keys written since the last
//! one, on top of the records the earlier folds of the block left (a layer
//! over the store's records, [`LayeredBranches`]): the trie's records are
//! canonical, so folding a block's writes in several groups ends at the
//! same root and the same records as folding them at once. The thread folds
//! whatever has arrived each time it is free, so a fast EVM gets fewer,
//! larger folds.
//!
//! The root thread keeps its own copy of the block's writes, fed with the
//! same writes in the same order as the writer's overlay: the leaves it
//! reads are the block's state as of the last handover.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use alloy_primitives::{Address, B256};
use bytes::Bytes;
use strata_commitment::{
    BranchSource, CommitOutput, CommitStats, ComputeOptions, RecordWrite, SourceError, TrieUpdate,
    compute_root, record_key,
};
use strata_types::domain::{Domain, Regime};
use strata_types::keys::{address_key, split_storage_key, storage_key};
use strata_view::overlay::Overlay;
use strata_view::snapshot::Snapshot;
use strata_view::sources::{CachedBranches, OverlayState};

use crate::inner::Inner;

/// The keys written since the last handover.
#[derive(Debug, Default)]
pub(crate) struct Touched {
    accounts: BTreeSet<Address>,
    slots: BTreeSet<(Address, B256)>,
    /// Accounts whose storage was wiped, in the order of the wipes.
    wiped: Vec<Address>,
}

impl Touched {
    /// Every key `overlay` holds: the writes made before the stream began.
    pub(crate) fn everything(overlay: &Overlay) -> Touched {
        let mut touched = Touched::default();
        for key in overlay.entries(Domain::Account).keys() {
            touched.raw(Domain::Account, key);
        }
        for key in overlay.entries(Domain::Storage).keys() {
            touched.raw(Domain::Storage, key);
        }
        touched.wiped.extend(overlay.wiped().iter().copied());
        touched
    }

    /// An account's nonce, balance, code hash or existence was written.
    pub(crate) fn account(&mut self, address: Address) {
        self.accounts.insert(address);
    }

    /// A storage slot was written.
    pub(crate) fn slot(&mut self, address: Address, slot: B256) {
        self.slots.insert((address, slot));
    }

    /// An account's whole storage was deleted.
    pub(crate) fn wipe(&mut self, address: Address) {
        self.accounts.insert(address);
        self.wiped.push(address);
    }

    /// A raw write of `domain`'s `key` (code and other keys leave the trie
    /// as it is: the code hash is in the account).
    pub(crate) fn raw(&mut self, domain: Domain, key: &[u8]) {
        match domain {
            Domain::Account => self.accounts.extend(address_key(key)),
            Domain::Storage => self.slots.extend(split_storage_key(key)),
            Domain::Code | Domain::Commitment => {}
        }
    }

    fn is_empty(&self) -> bool {
        self.accounts.is_empty() && self.slots.is_empty() && self.wiped.is_empty()
    }
}

/// The writes of one handover, with their values in the writer's overlay
/// at that moment.
#[derive(Debug)]
struct Batch {
    /// The keys to fold; its `wiped` accounts are wiped first (a wipe
    /// removes the account's slots written before it; the slots written
    /// after it are among `writes`).
    update: TrieUpdate,
    writes: Vec<(Domain, Vec<u8>, Option<Bytes>)>,
}

enum Message {
    Writes(Batch),
    /// Answer once everything handed over before is folded (tests).
    #[cfg(feature = "test-utils")]
    Folded(std::sync::mpsc::SyncSender<()>),
    /// The block's writes are all handed over.
    End,
}

/// What the root thread leaves for the commit.
pub(crate) struct Streamed {
    /// The block's root and records (the folds' records merged, the last
    /// write of each path kept) and the folds' counters, summed.
    pub(crate) output: CommitOutput,
    /// Time the thread spent folding.
    pub(crate) busy: Duration,
    /// Folds run.
    pub(crate) folds: u64,
    /// When the last fold ended.
    pub(crate) done_at: Instant,
    /// The thread's copy of the block's writes (checked against the
    /// writer's in debug builds).
    pub(crate) overlay: Arc<Overlay>,
}

/// A root thread and the writes not yet handed to it.
pub(crate) struct RootStream {
    sender: Sender<Message>,
    handle: JoinHandle<Result<Streamed>>,
    touched: Touched,
}

impl RootStream {
    /// Starts the root thread of block `number` over `base`; `overlay`
    /// holds the writes made so far (handed over at the next handover).
    pub(crate) fn start(
        inner: &Arc<Inner>,
        number: u64,
        base: &Arc<Snapshot>,
        overlay: &Overlay,
    ) -> Result<RootStream> {
        let (sender, receiver) = channel();
        let (inner, base) = (inner.clone(), base.clone());
        let handle = std::thread::Builder::new()
            .name(format!("strata-root-stream-{number}"))
            .spawn(move || fold_loop(&inner, number, &base, receiver))
            .map_err(|source| Error::Thread {
                what: "start the root stream thread",
                source,
            })?;
        Ok(RootStream {
            sender,
            handle,
            touched: Touched::everything(overlay),
        })
    }

    /// Where the writer records what it writes.
    pub(crate) fn touched(&mut self) -> &mut Touched {
        &mut self.touched
    }

    /// Hands the writes since the last handover, as `overlay` holds them
    /// now, to the root thread.
    pub(crate) fn hand_over(&mut self, overlay: &Overlay) {
        if self.touched.is_empty() {
            return;
        }
        let touched = std::mem::take(&mut self.touched);
        let mut writes = Vec::with_capacity(touched.accounts.len() + touched.slots.len());
        for address in &touched.accounts {
            let key = address.to_vec();
            if let Some(value) = overlay.entries(Domain::Account).get(&key) {
                writes.push((Domain::Account, key, value.clone()));
            }
        }
        for (address, slot) in &touched.slots {
            let key = storage_key(address, slot).to_vec();
            // A slot missing from the overlay was removed by a wipe of
            // this batch, which the thread makes too.
            if let Some(value) = overlay.entries(Domain::Storage).get(&key) {
                writes.push((Domain::Storage, key, value.clone()));
            }
        }
        let update = TrieUpdate {
            accounts: touched.accounts.into_iter().collect(),
            storage: touched.slots.into_iter().collect(),
            wiped: touched.wiped,
        };
        // A thread that stopped has an error for `finish` to return.
        let _ = self.sender.send(Message::Writes(Batch { update, writes }));
    }

    /// Hands over the writes since the last handover and waits until the
    /// root thread has folded them (tests: a fold per handover).
    #[cfg(feature = "test-utils")]
    pub(crate) fn fold_now(&mut self, overlay: &Overlay) {
        self.hand_over(overlay);
        let (reply, folded) = std::sync::mpsc::sync_channel(1);
        if self.sender.send(Message::Folded(reply)).is_ok() {
            let _ = folded.recv();
        }
    }

    /// Hands over the rest of the block's writes and says they are all:
    /// returns the moment the last ones left, and a call that waits for
    /// the root thread's result.
    pub(crate) fn end(mut self, overlay: &Overlay) -> (Instant, StreamEnd) {
        self.hand_over(overlay);
        let ended = Instant::now();
        let _ = self.sender.send(Message::End);
        (
            ended,
            StreamEnd {
                handle: self.handle,
            },
        )
    }

    /// Stops the root thread without a result (a dropped block): it ends
    /// its fold in progress, so no load of it outlives the writer.
    pub(crate) fn abandon(self) {
        drop(self.sender);
        let _ = self.handle.join();
    }
}

/// A root thread told that the block's writes are all handed over.
pub(crate) struct StreamEnd {
    handle: JoinHandle<Result<Streamed>>,
}

impl StreamEnd {
    /// Waits for the block's root.
    pub(crate) fn wait(self) -> Result<Streamed> {
        self.handle.join().map_err(|panic| Error::Panicked {
            what: "computing a root while the block executes",
            message: strata_db::panic_message(&panic),
        })?
    }
}

/// The root thread: folds whatever has arrived each time it is free, until
/// the end of the block (or the writer's drop: an error nobody reads).
fn fold_loop(
    inner: &Arc<Inner>,
    number: u64,
    base: &Arc<Snapshot>,
    receiver: Receiver<Message>,
) -> Result<Streamed> {
    let base_reader = inner.reader(base.clone(), None, Regime::Commitment);
    let below = CachedBranches::for_commitment(base_reader.clone(), inner.cache.clone());
    let options = ComputeOptions {
        parallel_threshold: inner.options.parallel_commitment_threshold,
    };
    let mut overlay = Arc::new(Overlay::default());
    let mut layer: Layer = BTreeMap::new();
    let mut stats = CommitStats::default();
    let mut root = None;
    let (mut busy, mut folds) = (Duration::ZERO, 0);
    loop {
        let first = receiver.recv().map_err(|_| Error::Thread {
            what: "receive a block's writes (the writer was dropped)",
            source: std::io::Error::other("the block writer went away"),
        })?;
        let mut update = TrieUpdate::default();
        let mut ended = false;
        #[cfg(feature = "test-utils")]
        let mut replies = Vec::new();
        for message in std::iter::once(first).chain(receiver.try_iter()) {
            match message {
                Message::Writes(batch) => {
                    let writes = Arc::make_mut(&mut overlay);
                    for address in &batch.update.wiped {
                        writes.wipe_storage(*address);
                    }
                    for (domain, key, value) in batch.writes {
                        writes.put(domain, key, value);
                    }
                    update.accounts.extend(batch.update.accounts);
                    update.storage.extend(batch.update.storage);
                    update.wiped.extend(batch.update.wiped);
                }
                #[cfg(feature = "test-utils")]
                Message::Folded(reply) => replies.push(reply),
                Message::End => ended = true,
            }
        }
        let has_keys =
            !(update.accounts.is_empty() && update.storage.is_empty() && update.wiped.is_empty());
        if has_keys || (ended && root.is_none()) {
            let started = Instant::now();
            let state = OverlayState::new(inner.reader(
                base.clone(),
                Some(overlay.clone()),
                Regime::Commitment,
            ));
            let branches = LayeredBranches {
                layer: &layer,
                below: &below,
            };
            let output = on_root_pool(|| compute_root(&update, &branches, &state, &options))
                .map_err(|source| Error::Commitment {
                    block: number,
                    source,
                })?;
            // The reader shared the overlay: the next batch writes in place.
            drop(state);
            for (path, value) in output.writes {
                match layer.entry(path) {
                    Entry::Vacant(entry) => {
                        entry.insert((value, false));
                    }
                    Entry::Occupied(mut entry) => *entry.get_mut() = (value, true),
                }
            }
            stats.add(&output.stats);
            root = Some(output.root);
            busy += started.elapsed();
            folds += 1;
        }
        #[cfg(feature = "test-utils")]
        for reply in replies {
            let _ = reply.send(());
        }
        if ended {
            // A record an earlier fold created and a later one deleted was
            // never in the store: the block leaves it as it found it. (A
            // record written back to the store's bytes stays: a write of
            // what is there, as the walk after the block also makes.)
            let mut writes: Vec<RecordWrite> = Vec::with_capacity(layer.len());
            for (path, (value, rewritten)) in layer {
                let stored = value.is_some()
                    || !rewritten
                    || base_reader
                        .get_latest(Domain::Commitment, &record_key(&path))?
                        .is_some();
                if stored {
                    writes.push((path, value));
                }
            }
            stats.records_written = writes.iter().filter(|w| w.1.is_some()).count() as u64;
            stats.records_deleted = writes.len() as u64 - stats.records_written;
            return Ok(Streamed {
                output: CommitOutput {
                    root: root.expect("a fold ran at the end"),
                    writes,
                    stats,
                },
                busy,
                folds,
                done_at: Instant::now(),
                overlay,
            });
        }
    }
}

/// Runs `work` on the rayon pool roots computed beside execution hash on
/// ([`RootStream`]'s folds, `BlockWriter::root_alongside`). Not the
/// caller's pool: a caller that waits for the root on a worker of its own
/// pool (a client executing blocks from rayon tasks) would otherwise leave
/// no worker to run the work it waits for. Where that pool cannot be
/// started, `work` runs on the current pool (logged once).
pub(crate) fn on_root_pool<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|index| format!("strata-root-{index}"))
            .build()
            .inspect_err(|error| {
                tracing::warn!(%error, "cannot start the root pool: roots beside execution hash on the caller's pool");
            })
            .ok()
    });
    match pool {
        Some(pool) => pool.install(work),
        None => work(),
    }
}

/// The records the block's folds wrote, by path: the last value, and
/// whether more than one fold wrote it.
type Layer = BTreeMap<Vec<u8>, (Option<Bytes>, bool)>;

/// The records the block's earlier folds wrote, over the store's.
struct LayeredBranches<'a> {
    layer: &'a Layer,
    below: &'a CachedBranches,
}

impl BranchSource for LayeredBranches<'_> {
    fn branch(&self, path: &[u8]) -> std::result::Result<Option<Bytes>, SourceError> {
        match self.layer.get(path) {
            Some((value, _)) => Ok(value.clone()),
            None => self.below.branch(path),
        }
    }
}

/// Whether the root thread's copy of the block's state writes is the
/// writer's (debug builds check it at every streamed commit).
pub(crate) fn same_state_writes(ours: &Overlay, writer: &Overlay) -> bool {
    [Domain::Account, Domain::Storage]
        .into_iter()
        .all(|domain| ours.entries(domain) == writer.entries(domain))
        && ours.wiped() == writer.wiped()
}
