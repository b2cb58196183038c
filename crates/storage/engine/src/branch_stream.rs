//! Each committed block's branch records, published beside the journal
//! for readers in other processes ([`crate::ReadOnlyStateDb`]): a lean
//! journal record leaves them out, and without them a follower rebuilds
//! them, one commitment walk per block (about 2.8 times the CPU of
//! applying them, measured at 1M accounts). The stream is a journal of its
//! own in [`BRANCHES_DIR`] (segments, checksummed frames, the chain of
//! roots, the datadir's identity) that is never synced and never read by
//! the writer: a crash may cut it anywhere, and the next open deletes it
//! and starts it again at the recovered head. Writing it is best effort: a
//! failure stops the stream with a warning, never a commit, and followers
//! rebuild what it lacks.

use std::path::Path;
use std::sync::Arc;

use alloy_primitives::B256;
use strata_fs::FileSystem;
use strata_journal::{
    BlockRecord, BranchRecords, DatadirId, Journal, JournalError, Link, Tip, is_journal_file_name,
    is_torn_file_name,
};
use strata_types::Head;
use strata_types::datadir::BRANCHES_DIR;

/// The writer's side of the stream.
pub(crate) struct BranchStream {
    journal: Journal,
    buffer: Vec<u8>,
}

impl BranchStream {
    /// Opens the stream of `datadir` afresh: the segments an earlier writer
    /// left are deleted (they may end anywhere), and the next block is the
    /// one after `head`.
    pub(crate) fn open_fresh(
        fs: Arc<dyn FileSystem>,
        datadir: &Path,
        id: DatadirId,
        head: Option<Head>,
        segment_bytes: u64,
    ) -> Result<BranchStream, JournalError> {
        let dir = datadir.join(BRANCHES_DIR);
        match fs.list_dir(&dir) {
            Ok(paths) => {
                for path in paths {
                    let name = strata_fs::file_name_of(&path).unwrap_or_default();
                    if is_journal_file_name(name) || is_torn_file_name(name) {
                        fs.remove(&path).map_err(|source| JournalError::Io {
                            path: path.clone(),
                            op: "remove a branch-record segment of an earlier writer",
                            source,
                        })?;
                    }
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(JournalError::Io {
                    path: dir,
                    op: "list",
                    source,
                });
            }
        }
        let tip = head.map(|h| Tip {
            block: h.block,
            root: h.root,
        });
        let (journal, _) = Journal::open(fs, dir, id, tip, segment_bytes)?;
        Ok(BranchStream {
            journal,
            buffer: Vec::new(),
        })
    }

    /// Appends `record`'s branch records (`parent`: the root before it),
    /// not synced. A block that does not continue the stream (its number
    /// or its parent root: after an unwind, or an open that finished an
    /// interrupted one) starts it again at `record`.
    pub(crate) fn append(
        &mut self,
        record: &BlockRecord,
        parent: B256,
    ) -> Result<u64, JournalError> {
        BranchRecords::encode_from(record, &mut self.buffer);
        let link = Link {
            parent,
            root: record.root,
        };
        // The journal refuses a block that does not continue it (its
        // number or its parent root) before writing anything.
        match self.journal.append(record.block, link, &self.buffer, false) {
            Err(JournalError::Gap { .. } | JournalError::Chain { .. }) => {
                self.journal.discard_all(record.block)?;
                self.journal.append(record.block, link, &self.buffer, false)
            }
            other => other,
        }
    }

    /// Deletes the segments holding only blocks at or below `flushed`.
    pub(crate) fn release_through(&mut self, flushed: u64) -> Result<(), JournalError> {
        self.journal.release_through(flushed)
    }
}
