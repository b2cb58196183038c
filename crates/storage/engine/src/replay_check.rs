//! The blocks an open replays from the journal are checked against the
//! state they sit on, not only against their own checksums: a frame whose
//! bytes were changed and checksummed again (finding CR2), or a record
//! that does not belong on this state, must not become the head.
//!
//! The commitment is walked once along every key the replayed blocks
//! wrote, over the records the open now serves (the replayed ones over
//! redb's and the files') with the leaf values the replayed blocks leave:
//! records are canonical, so the walk must give back the very records it
//! read along those paths and the newest replayed block's root. A changed
//! value, record or root shows up as a difference. (redb below may hold
//! part of a flush a crash interrupted: the same keys with the same
//! values, which is why the walk reads what the open serves.) The cost is
//! one commitment pass over the union of the replayed writes (bounded by
//! `memory_budget_bytes`), paid only at open, and only when a replayed
//! record carried its own commitment records (versions 1 and 2): lean
//! records' are rebuilt by this same walk ([`crate::branches`]), their root
//! checked there.

use crate::error::{Error, Result};
use crate::inner::Inner;
use strata_commitment::{ComputeOptions, compute_root, record_key};
use strata_types::domain::{Domain, Regime};
use strata_view::overlay::Overlay;
use strata_view::sources::{OverlayState, ReaderBranches};
use strata_view::trie_update::trie_update;

/// Checks the blocks the memory tier holds after an open (those replayed
/// from the journal).
pub(crate) fn check_replayed(inner: &Inner) -> Result<()> {
    let current = inner.current.load_full();
    let Some((first, last)) = current.memory.blocks() else {
        return Ok(());
    };
    let started = std::time::Instant::now();
    let corrupt = |what: String| Error::CorruptJournalRecord { block: last, what };
    let mut written = Overlay::default();
    for domain in [Domain::Account, Domain::Storage, Domain::Code] {
        for (key, value) in current.memory.entries(domain) {
            written.put(domain, key.to_vec(), value);
        }
    }
    let update = trie_update(&written);
    let head = inner.reader(current.clone(), None, Regime::Commitment);
    let branches = ReaderBranches::new(head.clone());
    let state = OverlayState::new(head.clone());
    let options = ComputeOptions {
        parallel_threshold: inner.options.parallel_commitment_threshold,
    };
    let output =
        compute_root(&update, &branches, &state, &options).map_err(|source| Error::Commitment {
            block: last,
            source,
        })?;
    if output.root != current.root() {
        return Err(corrupt(format!(
            "the writes of the journaled blocks {first}..={last} give the state root {}, \
             but their records say {}: a record was changed (or belongs to another state)",
            output.root,
            current.root()
        )));
    }
    for (path, value) in &output.writes {
        let key = record_key(path);
        if head.get_latest(Domain::Commitment, &key)? != *value {
            return Err(corrupt(format!(
                "the commitment record at {} is not the one the writes of blocks \
                 {first}..={last} give",
                alloy_primitives::hex::encode(&key)
            )));
        }
    }
    tracing::info!(
        first,
        last,
        keys = update.accounts.len() + update.storage.len(),
        ms = started.elapsed().as_secs_f64() * 1e3,
        "journal: the replayed blocks give their root"
    );
    Ok(())
}

#[cfg(all(test, feature = "test-utils"))]
mod tests {
    use std::path::Path;

    use bytes::Bytes;

    use crate::test_chain::{account, blocks, options, who};
    use crate::{Error, ReadOnlyStateDb, Regime, StateDb};
    use strata_journal::{BlockRecord, Previous};

    /// Block `block`'s record rewritten with `change` and valid checksums.
    fn tamper(dir: &Path, block: u64, change: impl Fn(&mut BlockRecord)) {
        strata_journal::testing::rechecksum_block(dir, block, change);
    }

    fn account_value(nonce: u64) -> Bytes {
        Bytes::from(account(nonce).encode())
    }

    /// CR2: a replayed frame whose value was changed and re-checksummed
    /// was trusted; the open now refuses it naming the block.
    #[test]
    fn a_rechecksummed_unflushed_block_is_refused_at_open() {
        let dir = tempfile::tempdir().unwrap();
        blocks(dir.path(), 5).abandon();
        tamper(dir.path(), 3, |record| {
            let write = record
                .writes
                .iter_mut()
                .find(|w| w.key.as_ref() == who(3).as_slice())
                .unwrap();
            write.value = Some(account_value(77));
        });
        match StateDb::open(dir.path(), options()) {
            Err(Error::CorruptJournalRecord { block, what }) => {
                assert_eq!(block, 4, "{what}");
                assert!(what.contains("state root"), "{what}");
            }
            Err(other) => panic!("refused for another reason: {other}"),
            Ok(db) => panic!(
                "opened at block {:?}, account 3 {:?}",
                db.last_block(),
                db.latest().account(&who(3)).unwrap()
            ),
        }
    }

    /// B5: undo data of a flushed block changed and re-checksummed made
    /// `reader_at` serve a wrong history; the rebuilt state is now checked
    /// against the block's root.
    #[test]
    fn a_rechecksummed_undo_value_is_refused_by_reads_at_a_block() {
        let dir = tempfile::tempdir().unwrap();
        drop(blocks(dir.path(), 5));
        // Block 3 says account 0's nonce was 7 before it (it was 2).
        tamper(dir.path(), 3, |record| {
            let write = record
                .writes
                .iter_mut()
                .find(|w| w.key.as_ref() == who(0).as_slice())
                .unwrap();
            write.previous = Previous::Value(account_value(7));
        });
        let reader = ReadOnlyStateDb::open(dir.path(), options()).unwrap();
        match reader.reader_at(2, Regime::Exec) {
            Err(Error::RootMismatch { block, .. }) => assert_eq!(block, 2),
            Err(other) => panic!("refused for another reason: {other}"),
            Ok(at) => panic!(
                "served account 0 at block 2 as {:?}",
                at.account(&who(0)).unwrap()
            ),
        }
        drop(reader);
        let db = StateDb::open(dir.path(), options()).unwrap();
        match db.reader_at(2, Regime::Exec) {
            Err(Error::RootMismatch { block, .. }) => assert_eq!(block, 2),
            Err(other) => panic!("refused for another reason: {other}"),
            Ok(at) => panic!(
                "served account 0 at block 2 as {:?}",
                at.account(&who(0)).unwrap()
            ),
        }
        // Untouched blocks still read.
        assert!(db.reader_at(3, Regime::Exec).is_ok());
    }
}
