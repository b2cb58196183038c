//! The 16 child positions of a branch, decoded lazily from its record.
//!
//! Decoding a branch record only checks it and notes where each cell lies
//! (a [`Span`]); a cell is built in memory when the walk takes it (to descend
//! into it or change it). An untouched child keeps its stored bytes: its node
//! reference is read from them when the branch is re-hashed, and they are
//! copied as they are into the branch's new record (records are canonical,
//! so an unchanged cell at an unchanged position encodes to the same bytes).

use bytes::Bytes;

use crate::error::{CommitmentError, corrupted};
use crate::node::NodeRef;
use crate::record::{Cell, Ext, materialize, put_cell, stored_ext, stored_ref};

/// Where one stored cell lies in its record: its first byte, the length byte
/// of its node reference (the last field of every cell) and its end.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Span {
    pub(crate) at: u16,
    pub(crate) node_ref: u16,
    pub(crate) end: u16,
}

/// A branch's children: each absent, still as stored in the branch's record,
/// or a cell in memory.
pub(crate) struct Children {
    /// The record the stored children lie in (empty when none is stored).
    record: Bytes,
    /// Whether the record belongs to a storage sub-trie (slot leaves).
    storage: bool,
    /// Children still as stored (bit `n` for nibble `n`).
    stored: u16,
    /// Children held in memory, in `cells` (the other cells are empty).
    live: u16,
    /// Where each stored child lies in `record`.
    spans: [Span; 16],
    cells: [Cell; 16],
}

impl Default for Children {
    fn default() -> Self {
        Self {
            record: Bytes::new(),
            storage: false,
            stored: 0,
            live: 0,
            spans: [Span::default(); 16],
            cells: Default::default(),
        }
    }
}

impl Children {
    /// Makes the children of an empty array the cells of `record` at
    /// `spans` (bit `n` of `stored` set for each), all still as stored.
    pub(crate) fn load(&mut self, record: Bytes, storage: bool, stored: u16, spans: &[Span; 16]) {
        debug_assert!(
            self.stored == 0 && self.live == 0,
            "record children decoded into an array that is not empty"
        );
        self.record = record;
        self.storage = storage;
        self.stored = stored;
        self.spans = *spans;
    }

    /// The record the stored children lie in (empty for a new branch).
    pub(crate) fn record(&self) -> &[u8] {
        &self.record
    }

    /// The children that are not empty (bit `n` for nibble `n`).
    #[inline]
    pub(crate) fn present(&self) -> u16 {
        self.stored | self.live
    }

    /// The nibbles of the children held in memory, lowest first.
    #[inline]
    pub(crate) fn live_nibbles(&self) -> impl Iterator<Item = usize> + use<> {
        let mut bits = self.live;
        std::iter::from_fn(move || {
            let n = (bits != 0).then(|| bits.trailing_zeros() as usize)?;
            bits &= bits - 1;
            Some(n)
        })
    }

    /// Whether child `n` is still as stored.
    #[inline]
    pub(crate) fn is_stored(&self, n: usize) -> bool {
        self.stored & (1 << n) != 0
    }

    /// Takes child `n` out (leaving it empty), building the cell from the
    /// record when it is still as stored; `path` is the record's, for errors.
    pub(crate) fn take(&mut self, n: usize, path: &[u8]) -> Result<Cell, CommitmentError> {
        let bit = 1u16 << n;
        if self.stored & bit != 0 {
            self.stored &= !bit;
            let span = self.spans[n];
            return materialize(&self.record, self.storage, span).ok_or_else(|| {
                corrupted(
                    path,
                    format!("cell at offset {} lies outside its record", span.at),
                )
            });
        }
        self.live &= !bit;
        Ok(std::mem::take(&mut self.cells[n]))
    }

    /// Puts `cell` at child `n` (replacing what was there).
    #[inline]
    pub(crate) fn set(&mut self, n: usize, cell: Cell) {
        let bit = 1u16 << n;
        self.stored &= !bit;
        if matches!(cell, Cell::Empty) {
            self.live &= !bit;
        } else {
            self.live |= bit;
        }
        self.cells[n] = cell;
    }

    /// Child `n` when it is held in memory.
    #[inline]
    pub(crate) fn live_mut(&mut self, n: usize) -> Option<&mut Cell> {
        (self.live & (1 << n) != 0).then(|| &mut self.cells[n])
    }

    /// The extension of child `n` when it is a branch cell still as stored.
    pub(crate) fn stored_branch_ext(&self, n: usize) -> Option<Ext> {
        if !self.is_stored(n) {
            return None;
        }
        stored_ext(&self.record, self.spans[n])
    }

    /// The node reference of child `n` when it is still as stored.
    pub(crate) fn stored_ref(&self, n: usize, path: &[u8]) -> Result<NodeRef, CommitmentError> {
        let span = self.spans[n];
        stored_ref(&self.record, span.node_ref).ok_or_else(|| {
            corrupted(
                path,
                format!(
                    "reference at offset {} lies outside its record",
                    span.node_ref
                ),
            )
        })
    }

    /// The node reference of child `n` as stored or as held in memory (`None`
    /// for an empty child or a cell whose reference is not computed).
    pub(crate) fn node_ref(
        &self,
        n: usize,
        path: &[u8],
    ) -> Result<Option<NodeRef>, CommitmentError> {
        if self.is_stored(n) {
            return self.stored_ref(n, path).map(Some);
        }
        Ok(match &self.cells[n] {
            Cell::Empty => None,
            Cell::Leaf(l) => l.node_ref,
            Cell::Branch(b) => b.node_ref,
        })
    }

    /// Appends child `n` as a record encodes it: a stored child's bytes as
    /// they are, a cell in memory (its references computed) encoded.
    #[inline]
    pub(crate) fn put(&self, n: usize, out: &mut Vec<u8>) {
        if self.is_stored(n) {
            // A stored child's span came from the scan of this record, which
            // found the cell whole inside it.
            let s = self.spans[n];
            out.extend_from_slice(&self.record[s.at as usize..s.end as usize]);
        } else {
            put_cell(out, &self.cells[n]);
        }
    }

    /// Empties every child and lets go of the record, for reuse.
    pub(crate) fn clear(&mut self) {
        for n in self.live_nibbles() {
            self.cells[n] = Cell::Empty;
        }
        self.live = 0;
        self.stored = 0;
        self.record = Bytes::new();
    }

    /// Makes these (empty) children a copy of `other`'s (for the bench's
    /// kept-record copy).
    #[cfg(feature = "test-utils")]
    pub(crate) fn copy_from(&mut self, other: &Children) {
        debug_assert!(
            self.stored == 0 && self.live == 0,
            "children copied into an array that is not empty"
        );
        self.record = other.record.clone();
        self.storage = other.storage;
        self.stored = other.stored;
        self.live = other.live;
        self.spans = other.spans;
        for n in other.live_nibbles() {
            self.cells[n] = other.cells[n].clone();
        }
    }
}
