//! A block's commit: expand deletions, compute the state root, persist the
//! block in one redb write transaction, write branches through to the cache,
//! and publish the new snapshot.

use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256, keccak256};
use bytes::Bytes;
use strata_commitment::{CommitStats, ComputeOptions, TrieUpdate, compute_root};

use crate::db::meta::{self, Head};
use crate::db::tables::{
    BLOCK_HASH_WINDOW, BLOCK_HASHES, CHANGES, CODE_BY_HASH, META, ROOTS, domain_table,
};
use crate::db::{changes, value};
use crate::domain::{Domain, Regime};
use crate::error::{Error, Result, db_err};
use crate::inner::{CommitGuard, Inner};
use crate::keys::split_storage_key;
use crate::overlay::Overlay;
use crate::reader::StateReader;
use crate::snapshot::Snapshot;
use crate::sources::{CachedBranches, OverlayState, ROOT_RECORD_KEY, hashed_paths};

/// What a block's commit did and how long it took.
#[derive(Clone, Debug)]
pub struct CommitInfo {
    /// The committed block.
    pub block: u64,
    /// Its state root.
    pub root: B256,
    /// Keys written across all domains (commitment records included).
    pub keys_written: usize,
    /// The commitment's counters (keccak calls, records read).
    pub commitment: CommitStats,
    /// Time spent computing the root.
    pub commitment_time: Duration,
    /// Time spent in the redb write transaction.
    pub write_time: Duration,
    /// Branch prefixes the warmers loaded for this block.
    pub warmed: u64,
    /// Whether the commit was fsynced.
    pub durable: bool,
}

/// Commits `overlay` as block `number` on top of `base`. With
/// `expected_root`, a block whose root differs is refused before anything
/// is written: no redb transaction, no branch written through to the cache
/// (the cache then holds only records of committed blocks, loaded by the
/// walk and the warmers from `base`), no new snapshot.
pub(crate) fn commit_block(
    inner: &Arc<Inner>,
    number: u64,
    base: Arc<Snapshot>,
    overlay: Arc<Overlay>,
    expected_root: Option<B256>,
) -> Result<CommitInfo> {
    let expected = base.block().map_or(0, |b| b + 1);
    if number != expected {
        return Err(Error::BlockOutOfOrder {
            expected,
            found: number,
        });
    }
    let mut overlay = Arc::unwrap_or_clone(overlay);
    expand_storage_wipes(&base, &mut overlay)?;
    let overlay = Arc::new(overlay);
    let update = trie_update(&overlay);

    // Warm the branches along the touched paths; the commitment reads
    // through the same cache and never waits for the warmers.
    let base_reader = StateReader::new(
        base.clone(),
        None,
        Regime::Commitment,
        inner.metrics.clone(),
    );
    let branches = CachedBranches::for_commitment(base_reader.clone(), inner.cache.clone());
    let ticket = (inner.warmup.warmers() > 0).then(|| {
        let source = Arc::new(CachedBranches::for_warmers(
            base_reader,
            inner.cache.clone(),
        ));
        inner.warmup.warm(
            hashed_paths(&update),
            Arc::new(move |path: &Vec<u8>| {
                strata_commitment::warm_path(source.as_ref(), path).map(|_| ())
            }),
        )
    });

    let started = Instant::now();
    let state = OverlayState::new(StateReader::new(
        base.clone(),
        Some(overlay.clone()),
        Regime::Commitment,
        inner.metrics.clone(),
    ));
    let options = ComputeOptions {
        parallel_threshold: inner.options.parallel_commitment_threshold,
    };
    let output =
        compute_root(&update, &branches, &state, &options).map_err(|source| Error::Commitment {
            block: number,
            source,
        })?;
    let commitment_time = started.elapsed();

    // Stop this block's warmers before the cache is written through, so that
    // no warmer can put a pre-block branch over a post-block one.
    let mut warmed = 0;
    if let Some(ticket) = ticket {
        ticket.cancel();
        let report = ticket.wait();
        warmed = report.items_done;
        for error in &report.errors {
            tracing::warn!(block = number, %error, "warmer read failed");
        }
    }

    if let Some(expected) = expected_root
        && expected != output.root
    {
        tracing::warn!(block = number, %expected, computed = %output.root, "block refused: root mismatch");
        return Err(Error::BlockRootMismatch {
            block: number,
            expected,
            computed: output.root,
        });
    }

    let head = Head {
        block: number,
        root: output.root,
    };
    let record_writes: Vec<(Vec<u8>, Option<Bytes>)> = output
        .writes
        .iter()
        .map(|(path, value)| (strata_commitment::record_key(path), value.clone()))
        .collect();

    let started = Instant::now();
    let commit = inner.lock_commit();
    let durable = inner.next_commit_durable();
    let keys_written = write_block(
        inner,
        &commit,
        &base,
        &overlay,
        &record_writes,
        head,
        durable,
    )?;
    let write_time = started.elapsed();

    for (path, value) in &output.writes {
        match value {
            Some(value) => inner.cache.insert(path, value.clone()),
            None => inner.cache.remove(path),
        }
    }
    publish(inner, &commit, Some(head))?;
    drop(commit);
    inner.maintenance.wake();
    Ok(CommitInfo {
        block: number,
        root: output.root,
        keys_written,
        commitment: output.stats,
        commitment_time,
        write_time,
        warmed: warmed as u64,
        durable,
    })
}

/// Turns each storage wipe into explicit deletions of the slots that exist
/// in the committed tiers (and that the block did not write again).
fn expand_storage_wipes(base: &Snapshot, overlay: &mut Overlay) -> Result<()> {
    let wiped: Vec<Address> = overlay.wiped().iter().copied().collect();
    for address in wiped {
        for key in base.live_storage_keys(&address)? {
            if !overlay
                .entries(Domain::Storage)
                .contains_key(key.as_slice())
            {
                overlay.put(Domain::Storage, key.to_vec(), None);
            }
        }
    }
    Ok(())
}

/// The keys the commitment must revisit.
fn trie_update(overlay: &Overlay) -> TrieUpdate {
    let mut accounts: Vec<Address> = overlay
        .entries(Domain::Account)
        .keys()
        .filter_map(|k| crate::keys::address_key(k))
        .collect();
    accounts.extend(overlay.wiped().iter().copied());
    let storage = overlay
        .entries(Domain::Storage)
        .keys()
        .filter_map(|k| split_storage_key(k))
        .collect();
    TrieUpdate {
        accounts,
        storage,
        wiped: overlay.wiped().iter().copied().collect(),
    }
}

/// The redb write transaction of a block: domain values, commitment
/// records, unwind data, root and head, all or nothing.
fn write_block(
    inner: &Inner,
    _commit: &CommitGuard<'_>,
    base: &Snapshot,
    overlay: &Overlay,
    records: &[(Vec<u8>, Option<Bytes>)],
    head: Head,
    durable: bool,
) -> Result<usize> {
    let step = inner.step_of(head.block);
    let keep_unwind_data = head.block > 0;
    let mut txn = inner.db.begin_write().map_err(db_err("begin write"))?;
    if !durable {
        txn.set_durability(redb::Durability::None)
            .map_err(|e| Error::Maintenance(format!("set durability: {e}")))?;
    }
    let mut written = 0;
    {
        let mut changes_table = txn.open_table(CHANGES).map_err(db_err("open changes"))?;
        let mut write_domain = |domain: Domain,
                                entries: &mut dyn Iterator<Item = (&[u8], Option<&[u8]>)>|
         -> Result<()> {
            let mut table = txn
                .open_table(domain_table(domain))
                .map_err(db_err("open table"))?;
            // Newer than every file, also after an unwind into collated
            // steps (the current manifest's collation is never behind the
            // block's base).
            let step = inner.current.load().files.manifest.db_step(domain, step);
            for (key, new) in entries {
                if keep_unwind_data {
                    let (prev, _) = base.get(domain, key)?;
                    changes_table
                        .insert(
                            changes::key(head.block, domain, key).as_slice(),
                            changes::encode_prev(prev.as_deref()).as_slice(),
                        )
                        .map_err(db_err("write unwind data"))?;
                }
                table
                    .insert(key, value::encode(step, new).as_slice())
                    .map_err(db_err("write value"))?;
                written += 1;
            }
            Ok(())
        };
        for domain in [Domain::Account, Domain::Storage, Domain::Code] {
            let mut entries = overlay
                .entries(domain)
                .iter()
                .map(|(k, v)| (k.as_slice(), v.as_deref()));
            write_domain(domain, &mut entries)?;
        }
        let root_record = head.encode();
        let mut entries = records
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .chain(std::iter::once((
                ROOT_RECORD_KEY,
                Some(root_record.as_slice()),
            )));
        write_domain(Domain::Commitment, &mut entries)?;

        // Unwind data older than the unwind window is dropped.
        if let Some(oldest) = head.block.checked_sub(inner.options.unwind_depth) {
            let end = changes::block_start(oldest);
            changes_table
                .retain_in(..end.as_slice(), |_, _| false)
                .map_err(db_err("drop old unwind data"))?;
        }
    }
    {
        let mut roots = txn.open_table(ROOTS).map_err(db_err("open roots"))?;
        roots
            .insert(head.block, head.root.as_slice())
            .map_err(db_err("write root"))?;
        if let Some(oldest) = head.block.checked_sub(inner.options.unwind_depth) {
            roots
                .retain_in(..oldest, |_, _| false)
                .map_err(db_err("drop old roots"))?;
        }
        let mut meta_table = txn.open_table(META).map_err(db_err("open meta"))?;
        meta::write_head(&mut meta_table, head)?;
        let mut by_hash = txn
            .open_table(CODE_BY_HASH)
            .map_err(db_err("open code by hash"))?;
        for code in overlay.entries(Domain::Code).values().flatten() {
            by_hash
                .insert(keccak256(code).as_slice(), code.as_ref())
                .map_err(db_err("write code by hash"))?;
        }
        let mut hashes = txn
            .open_table(BLOCK_HASHES)
            .map_err(db_err("open block hashes"))?;
        if let Some(hash) = overlay.block_hash {
            hashes
                .insert(head.block, hash.as_slice())
                .map_err(db_err("write block hash"))?;
        }
        if let Some(oldest) = head.block.checked_sub(BLOCK_HASH_WINDOW) {
            hashes
                .retain_in(..=oldest, |_, _| false)
                .map_err(db_err("drop old block hashes"))?;
        }
    }
    txn.commit().map_err(db_err("commit block"))?;
    Ok(written)
}

/// Publishes a snapshot of what redb holds now with the current file set.
pub(crate) fn publish(inner: &Inner, _commit: &CommitGuard<'_>, head: Option<Head>) -> Result<()> {
    let files = inner.current.load().files.clone();
    let snapshot = Snapshot::open(&inner.db, head, files)?;
    inner.current.store(Arc::new(snapshot));
    Ok(())
}
