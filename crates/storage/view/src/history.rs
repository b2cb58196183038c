//! The recent past, kept in memory: for each of the last blocks, the value
//! every state key it wrote held before it (its journal record's unwind
//! data). Undoing the blocks after a target, newest first, gives the state
//! as it was after the target — what [`crate::StateDb::reader_at`] serves
//! for the blocks of the unwind window without touching the journal.
//!
//! Each block's entry is published in the snapshot with the block, so a
//! reader at an older block and the head it undoes from are always the
//! same commit. Keys and values are copied out of the record, so an entry
//! never keeps a journal segment's or a file block's buffer alive.

use std::collections::VecDeque;
use std::sync::Arc;

use alloy_primitives::B256;
use bytes::Bytes;

use crate::overlay::Overlay;
use strata_journal::{BlockRecord, Previous};
use strata_types::domain::Domain;

/// What undoing one block restores.
#[derive(Debug)]
pub struct BlockUndo {
    /// The block undone.
    pub block: u64,
    /// Its state root.
    pub root: B256,
    /// Each account, storage and code key it wrote, with the value before
    /// it (`None`: the key did not exist).
    restores: Vec<(Domain, Bytes, Option<Bytes>)>,
    /// Bytes of keys and values held.
    bytes: usize,
}

impl BlockUndo {
    /// The undo data of `record`, whose write `i` held `previous(i)` before
    /// the block; `None` when the record keeps none (block 0).
    pub fn from_record<'p>(
        record: &BlockRecord,
        previous: impl Fn(usize) -> &'p Previous,
    ) -> Option<BlockUndo> {
        let mut restores = Vec::new();
        let mut bytes = 0;
        for (index, write) in record.writes.iter().enumerate() {
            if write.domain == Domain::Commitment {
                continue;
            }
            let before = match previous(index) {
                Previous::NotKept => return None,
                Previous::Absent => None,
                Previous::Value(value) => Some(Bytes::copy_from_slice(value)),
            };
            bytes += write.key.len() + before.as_ref().map_or(0, Bytes::len);
            restores.push((write.domain, Bytes::copy_from_slice(&write.key), before));
        }
        Some(BlockUndo {
            block: record.block,
            root: record.root,
            restores,
            bytes,
        })
    }

    /// Each account, storage and code key the block wrote, with its value
    /// before the block (`None`: absent).
    pub fn restores(&self) -> impl Iterator<Item = (Domain, &Bytes, Option<&Bytes>)> {
        self.restores
            .iter()
            .map(|(domain, key, before)| (*domain, key, before.as_ref()))
    }

    /// Puts each key this block wrote, with its value before the block,
    /// into `overlay`.
    pub fn apply_to(&self, overlay: &mut Overlay) {
        for (domain, key, before) in &self.restores {
            overlay.put(*domain, key.to_vec(), before.clone());
        }
    }
}

/// The undo data of the last blocks, oldest first, consecutive. Cloning
/// shares it.
#[derive(Clone, Debug, Default)]
pub struct History {
    blocks: Arc<VecDeque<Arc<BlockUndo>>>,
}

impl History {
    /// This history with `undo` (the block after its newest) added, keeping
    /// the newest `keep` blocks. A block that does not follow the newest
    /// starts the history anew.
    pub fn pushed(&self, undo: Arc<BlockUndo>, keep: usize) -> History {
        let mut blocks = (*self.blocks).clone();
        if blocks
            .back()
            .is_some_and(|last| last.block + 1 != undo.block)
        {
            blocks.clear();
        }
        blocks.push_back(undo);
        while blocks.len() > keep {
            blocks.pop_front();
        }
        History {
            blocks: Arc::new(blocks),
        }
    }

    /// This history without the blocks after `block` (an unwind to it).
    pub fn through(&self, block: u64) -> History {
        let mut blocks = (*self.blocks).clone();
        blocks.retain(|undo| undo.block <= block);
        History {
            blocks: Arc::new(blocks),
        }
    }

    /// The oldest block whose state can be rebuilt (the one before the
    /// oldest undone), or `None` when nothing is kept.
    pub fn oldest_reachable(&self) -> Option<u64> {
        self.blocks.front().map(|undo| undo.block.saturating_sub(1))
    }

    /// The undo data of `block` when it is kept here.
    pub fn undo_of(&self, block: u64) -> Option<&Arc<BlockUndo>> {
        let first = self.blocks.front()?.block;
        let index = usize::try_from(block.checked_sub(first)?).ok()?;
        self.blocks.get(index)
    }

    /// The root of `block` when it is kept here.
    pub fn root_of(&self, block: u64) -> Option<B256> {
        let first = self.blocks.front()?.block;
        let index = usize::try_from(block.checked_sub(first)?).ok()?;
        self.blocks.get(index).map(|undo| undo.root)
    }

    /// The writes that take the state after `head` back to the state after
    /// `target`: for every key written in `target + 1..=head`, the value
    /// before the first block that wrote it. `None` when those blocks are
    /// not all kept.
    pub fn undo_to(&self, target: u64, head: u64) -> Option<Overlay> {
        let newest = self.blocks.back()?;
        if newest.block != head || self.oldest_reachable()? > target {
            return None;
        }
        let mut overlay = Overlay::default();
        // Newest first, so the value before the oldest write is put last.
        for undo in self.blocks.iter().rev().take_while(|u| u.block > target) {
            undo.apply_to(&mut overlay);
        }
        Some(overlay)
    }

    /// Bytes of keys and values held.
    pub fn bytes(&self) -> usize {
        self.blocks.iter().map(|undo| undo.bytes).sum()
    }

    /// Blocks kept.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether no block is kept.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_journal::RecordWrite;

    fn record(block: u64, writes: &[(&str, Option<&str>, Previous)]) -> BlockRecord {
        BlockRecord {
            block,
            root: B256::with_last_byte(block as u8),
            hash: None,
            header: None,
            writes: writes
                .iter()
                .map(|(key, value, previous)| RecordWrite {
                    domain: Domain::Account,
                    key: Bytes::copy_from_slice(key.as_bytes()),
                    value: value.map(|v| Bytes::copy_from_slice(v.as_bytes())),
                    previous: previous.clone(),
                })
                .collect(),
            branches_omitted: false,
        }
    }

    fn value(text: &str) -> Previous {
        Previous::Value(Bytes::copy_from_slice(text.as_bytes()))
    }

    fn undo(record: &BlockRecord) -> Arc<BlockUndo> {
        Arc::new(BlockUndo::from_record(record, |i| &record.writes[i].previous).unwrap())
    }

    fn get(overlay: &Overlay, key: &str) -> Option<Option<Vec<u8>>> {
        overlay
            .get(Domain::Account, key.as_bytes())
            .map(|v| v.map(|b| b.to_vec()))
    }

    #[test]
    fn undoing_restores_the_value_before_the_first_write_after_the_target() {
        // a: x (before 1) -> y (1) -> z (3); b: absent -> w (2)
        let one = record(1, &[("a", Some("y"), value("x"))]);
        let two = record(2, &[("b", Some("w"), Previous::Absent)]);
        let three = record(3, &[("a", Some("z"), value("y"))]);
        let history = [&one, &two, &three]
            .into_iter()
            .fold(History::default(), |h, r| h.pushed(undo(r), 10));

        let at_one = history.undo_to(1, 3).unwrap();
        assert_eq!(get(&at_one, "a"), Some(Some(b"y".to_vec())));
        assert_eq!(get(&at_one, "b"), Some(None));
        let at_zero = history.undo_to(0, 3).unwrap();
        assert_eq!(get(&at_zero, "a"), Some(Some(b"x".to_vec())));
        assert_eq!(history.root_of(2), Some(B256::with_last_byte(2)));
        assert_eq!(history.oldest_reachable(), Some(0));

        // Not kept: before the oldest, or a head the history does not end at.
        let short = history.through(2).pushed(undo(&three), 2);
        assert_eq!(short.len(), 2);
        assert!(short.undo_to(0, 3).is_none());
        assert!(short.undo_to(1, 3).is_some());
        assert!(history.undo_to(1, 4).is_none());
        // A block that does not follow starts anew.
        assert_eq!(history.pushed(undo(&one), 10).len(), 1);
        // Block 0 keeps no previous values.
        let genesis = record(0, &[("a", Some("x"), Previous::NotKept)]);
        assert!(BlockUndo::from_record(&genesis, |i| &genesis.writes[i].previous).is_none());
    }
}

/// The older states a handle has rebuilt and checked against their root
/// (block, and the root of the head they were rebuilt from), so a reader at
/// a recent block pays the commitment walk of its check once per state.
#[derive(Debug, Default)]
pub struct CheckedStates {
    checked: parking_lot::Mutex<std::collections::HashSet<(u64, alloy_primitives::B256)>>,
}

impl CheckedStates {
    /// States remembered before the set starts over.
    const LIMIT: usize = 4096;

    /// Runs `check` unless `(block, head_root)` passed it before.
    pub fn check_once(
        &self,
        block: u64,
        head_root: alloy_primitives::B256,
        check: impl FnOnce() -> crate::error::Result<()>,
    ) -> crate::error::Result<()> {
        if self.checked.lock().contains(&(block, head_root)) {
            return Ok(());
        }
        check()?;
        let mut checked = self.checked.lock();
        if checked.len() >= Self::LIMIT {
            checked.clear();
        }
        checked.insert((block, head_root));
        Ok(())
    }
}
