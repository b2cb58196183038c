//! Hooks for benches (feature `test-utils`): the record decoder as the
//! incremental walk drives it, so its cost per record can be measured apart
//! from the walk.

use bytes::Bytes;

use crate::children::Children;
use crate::error::CommitmentError;
use crate::record::{Record, decode_record_into};

/// Decodes stored records into reused child arrays, as a walk does (a walk
/// pops a spare array for each branch record it reads and empties it for
/// reuse after folding the branch). A branch record's cells are checked and
/// located, not built: the walk builds a cell only when it takes it
/// ([`RecordDecoder::decode_built`] builds them all).
#[derive(Default)]
pub struct RecordDecoder {
    #[allow(
        clippy::vec_box,
        reason = "the walk keeps its spare arrays as boxes; the bench does the same"
    )]
    spare: Vec<Box<Children>>,
    kept: Option<Box<Children>>,
}

impl RecordDecoder {
    /// A decoder with no spare arrays yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes the record `bytes` read at nibble `path` (one nibble per byte)
    /// and empties its child array for the next call, as the walk's read
    /// and recycle do. Returns the number of cells decoded (a branch
    /// record's children; 1 for a root cell).
    pub fn decode(&mut self, path: &[u8], bytes: &Bytes) -> Result<usize, CommitmentError> {
        let spare = &mut self.spare;
        let rec = decode_record_into(path, bytes, || spare.pop().unwrap_or_default())?;
        Ok(match rec {
            Record::Branch { children, .. } => self.recycle(children),
            Record::RootCell(_) => 1,
        })
    }

    /// [`RecordDecoder::decode`], then every cell of a branch record built
    /// in memory as the walk builds the ones it descends into (what the
    /// decoder cost before it became lazy). Returns the cells built.
    pub fn decode_built(&mut self, path: &[u8], bytes: &Bytes) -> Result<usize, CommitmentError> {
        let spare = &mut self.spare;
        let rec = decode_record_into(path, bytes, || spare.pop().unwrap_or_default())?;
        Ok(match rec {
            Record::Branch { mut children, .. } => {
                let mut present = children.present();
                while present != 0 {
                    let n = present.trailing_zeros() as usize;
                    present &= present - 1;
                    let cell = children.take(n, path)?;
                    children.set(n, std::hint::black_box(cell));
                }
                self.recycle(children)
            }
            Record::RootCell(_) => 1,
        })
    }

    /// Decodes the branch record `bytes` at `path` once and keeps its
    /// children, for [`RecordDecoder::copy_kept`]. Returns whether it was a
    /// branch record (a root cell is not kept).
    pub fn keep(&mut self, path: &[u8], bytes: &Bytes) -> Result<bool, CommitmentError> {
        Ok(match decode_record_into(path, bytes, Box::default)? {
            Record::Branch { children, .. } => {
                self.kept = Some(children);
                true
            }
            Record::RootCell(_) => false,
        })
    }

    /// Copies the kept children into a reused array and empties it again:
    /// the least a walk would pay per use of a decoded record kept across
    /// blocks (the walk takes the children out of the array it folds).
    /// Returns the number of cells copied (0 with nothing kept).
    pub fn copy_kept(&mut self) -> usize {
        let Some(kept) = &self.kept else {
            return 0;
        };
        let mut children = self.spare.pop().unwrap_or_default();
        children.copy_from(kept);
        self.recycle(children)
    }

    /// Empties `children` back into the spare arrays; returns how many
    /// cells it held.
    fn recycle(&mut self, mut children: Box<Children>) -> usize {
        let n = children.present().count_ones() as usize;
        children.clear();
        self.spare.push(children);
        n
    }
}

/// keccak256 of four messages at once, as the bulk builder and the walk hash
/// sibling nodes (AVX-512VL when the CPU has it).
pub fn keccak256_x4(msgs: [&[u8]; 4]) -> [alloy_primitives::B256; 4] {
    crate::keccak_x4::keccak256_x4(&msgs)
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{Address, KECCAK256_EMPTY, U256};

    use super::*;
    use crate::{AccountLeaf, MemoryBranchStore, MemoryState, TrieUpdate, compute_root};

    #[test]
    fn decodes_and_copies_the_walks_records() {
        let mut state = MemoryState::new();
        let accounts: Vec<Address> = (0..200u64)
            .map(|i| Address::from_word(U256::from(i).into()))
            .collect();
        for (i, a) in accounts.iter().enumerate() {
            let leaf = AccountLeaf {
                nonce: i as u64,
                balance: U256::from(i),
                code_hash: KECCAK256_EMPTY,
            };
            state.set_account(*a, leaf);
        }
        let update = TrieUpdate {
            accounts,
            storage: vec![],
            wiped: vec![],
        };
        let out = compute_root(
            &update,
            &MemoryBranchStore::new(),
            &state,
            &Default::default(),
        )
        .expect("compute");
        let root = out.writes.first().expect("a root record");
        assert!(
            root.0.is_empty(),
            "writes are sorted by path, the root first"
        );
        let bytes = root.1.as_ref().expect("root written");
        let mut dec = RecordDecoder::new();
        assert_eq!(dec.copy_kept(), 0, "nothing kept yet");
        // 200 keys fill all 16 children of the root (with overwhelming odds
        // for keccak keys; these are fixed, so the test is deterministic).
        assert_eq!(dec.decode(&[], bytes).expect("decode"), 16);
        assert_eq!(dec.decode(&[], bytes).expect("decode again"), 16);
        assert_eq!(dec.decode_built(&[], bytes).expect("decode, built"), 16);
        assert!(dec.keep(&[], bytes).expect("keep"));
        assert_eq!(dec.copy_kept(), 16);
        assert_eq!(dec.copy_kept(), 16, "the kept record survives a copy");
        for (path, bytes) in &out.writes {
            let bytes = bytes.as_ref().expect("a fresh trie only writes");
            assert!(
                dec.decode(path, bytes)
                    .expect("every written record decodes")
                    >= 1
            );
        }
        assert!(
            dec.decode(&[], &bytes.slice(..bytes.len() - 1)).is_err(),
            "truncated"
        );
    }
}
