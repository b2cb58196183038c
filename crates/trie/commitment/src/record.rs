//! Trie cells and the byte encoding of persisted records (see `FORMAT.md`).

use alloy_primitives::{Address, B256};

use bytes::Bytes;

use crate::children::{Children, Span};
use crate::error::{CommitmentError, corrupted};
use crate::node::NodeRef;

/// Record tag: a branch node below a sub-trie root.
pub(crate) const TAG_BRANCH: u8 = 1;
/// Record tag: the root of a sub-trie that is a leaf or an extension.
pub(crate) const TAG_ROOT_CELL: u8 = 2;
/// Record tag: the root of a sub-trie that is a branch (carries its own ref).
pub(crate) const TAG_ROOT_BRANCH: u8 = 3;

const KIND_ACCOUNT: u8 = 1;
const KIND_SLOT: u8 = 2;
const KIND_BRANCH: u8 = 3;

/// What a leaf cell's plain key is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LeafKind {
    /// An account leaf: its address and the root of its storage sub-trie.
    Account {
        address: Address,
        storage_root: B256,
    },
    /// A storage leaf: its slot (the address is the sub-trie's account).
    Slot { slot: B256 },
}

/// The longest leaf value: an account's RLP with a 9-byte nonce and a
/// 33-byte balance (2 + 9 + 33 + 33 + 33).
pub(crate) const LEAF_VALUE_MAX: usize = 110;

/// A leaf's value bytes (RLP), held inline so a cell owns no heap memory.
#[derive(Clone, Copy)]
pub(crate) struct LeafValue {
    len: u8,
    bytes: [u8; LEAF_VALUE_MAX],
}

impl LeafValue {
    /// Copies `value` (at most [`LEAF_VALUE_MAX`] bytes).
    #[inline]
    pub(crate) fn from_slice(value: &[u8]) -> Self {
        debug_assert!(
            value.len() <= LEAF_VALUE_MAX,
            "a leaf value of {} bytes is longer than any account or slot value",
            value.len()
        );
        let mut bytes = [0u8; LEAF_VALUE_MAX];
        bytes[..value.len()].copy_from_slice(value);
        Self {
            len: value.len() as u8,
            bytes,
        }
    }
}

impl std::ops::Deref for LeafValue {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl std::fmt::Debug for LeafValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "0x{}", alloy_primitives::hex::encode(&**self))
    }
}

/// Up to 64 nibbles (one per byte) held inline: an extension's path.
#[derive(Clone, Copy)]
pub(crate) struct Ext {
    len: u8,
    nibbles: [u8; 64],
}

impl Ext {
    /// No nibbles.
    pub(crate) const EMPTY: Self = Self {
        len: 0,
        nibbles: [0; 64],
    };

    /// Copies `nibbles` (at most 64).
    #[inline]
    pub(crate) fn from_slice(nibbles: &[u8]) -> Self {
        let mut e = Self::EMPTY;
        e.extend(nibbles);
        e
    }

    /// Appends nibbles; the total stays at most 64 (a key's length).
    #[inline]
    pub(crate) fn extend(&mut self, nibbles: &[u8]) {
        let at = self.len as usize;
        self.nibbles[at..at + nibbles.len()].copy_from_slice(nibbles);
        self.len += nibbles.len() as u8;
    }

    /// Unpacks `len` nibbles stored two per byte, high half first (`None`
    /// when `packed` holds fewer or `len` is over 64).
    #[inline]
    fn from_packed(packed: &[u8], len: usize) -> Option<Self> {
        let mut e = Self::EMPTY;
        for (i, slot) in e.nibbles.get_mut(..len)?.iter_mut().enumerate() {
            let b = *packed.get(i / 2)?;
            *slot = if i % 2 == 0 { b >> 4 } else { b & 0x0f };
        }
        e.len = len as u8;
        Some(e)
    }

    /// Appends one nibble.
    #[inline]
    pub(crate) fn push(&mut self, nibble: u8) {
        self.nibbles[self.len as usize] = nibble;
        self.len += 1;
    }
}

impl std::ops::Deref for Ext {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        &self.nibbles[..self.len as usize]
    }
}

impl std::fmt::Debug for Ext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A leaf cell.
#[derive(Clone, Debug)]
pub(crate) struct Leaf {
    /// The full 32-byte hashed key (`keccak(address)` or `keccak(slot)`).
    pub(crate) hashed: B256,
    pub(crate) kind: LeafKind,
    /// The leaf's value bytes when they are in memory.
    pub(crate) value: Option<LeafValue>,
    /// The leaf node's reference at its current position, when known.
    pub(crate) node_ref: Option<NodeRef>,
}

/// A cell holding an (optional) extension followed by a branch node.
#[derive(Clone, Debug)]
pub(crate) struct BranchCell {
    /// Extension nibbles between the cell's position and the branch.
    pub(crate) ext: Ext,
    /// Reference of the branch node itself.
    pub(crate) branch_ref: NodeRef,
    /// Reference of the node at the cell's position (the extension node, or the
    /// branch when `ext` is empty), when known.
    pub(crate) node_ref: Option<NodeRef>,
}

/// What sits at one child position of a branch (or at a sub-trie root).
#[derive(Clone, Debug, Default)]
pub(crate) enum Cell {
    /// Nothing.
    #[default]
    Empty,
    /// A leaf.
    Leaf(Leaf),
    /// An extension (possibly empty) followed by a branch.
    Branch(BranchCell),
}

/// A decoded record.
pub(crate) enum Record {
    /// A branch node; `root_ref` is present for a sub-trie's root branch.
    Branch {
        root_ref: Option<NodeRef>,
        children: Box<Children>,
    },
    /// A sub-trie root that is a leaf or an extension.
    RootCell(Cell),
}

/// Appends a stored reference: length byte, then the bytes.
#[inline]
pub(crate) fn put_ref(out: &mut Vec<u8>, r: &NodeRef) {
    let s = r.as_slice();
    out.push(s.len() as u8);
    out.extend_from_slice(s);
}

/// Appends a leaf cell.
#[inline]
pub(crate) fn put_leaf_cell(out: &mut Vec<u8>, hashed: &B256, kind: &LeafKind, node_ref: &NodeRef) {
    match kind {
        LeafKind::Account {
            address,
            storage_root,
        } => {
            out.push(KIND_ACCOUNT);
            out.extend_from_slice(hashed.as_slice());
            out.extend_from_slice(address.as_slice());
            out.extend_from_slice(storage_root.as_slice());
        }
        LeafKind::Slot { slot } => {
            out.push(KIND_SLOT);
            out.extend_from_slice(hashed.as_slice());
            out.extend_from_slice(slot.as_slice());
        }
    }
    put_ref(out, node_ref);
}

/// Appends a branch cell; `node_ref` (the extension node's ref) is written
/// only when `ext` is not empty.
#[inline]
pub(crate) fn put_branch_cell(
    out: &mut Vec<u8>,
    ext: &[u8],
    branch_ref: &NodeRef,
    node_ref: &NodeRef,
) {
    out.push(KIND_BRANCH);
    out.push(ext.len() as u8);
    for pair in ext.chunks(2) {
        let lo = pair.get(1).copied().unwrap_or(0);
        out.push((pair[0] << 4) | lo);
    }
    put_ref(out, branch_ref);
    if !ext.is_empty() {
        put_ref(out, node_ref);
    }
}

/// Appends `cell`, whose references must be computed; `Empty` writes nothing.
pub(crate) fn put_cell(out: &mut Vec<u8>, cell: &Cell) {
    match cell {
        Cell::Empty => {}
        Cell::Leaf(l) => put_leaf_cell(
            out,
            &l.hashed,
            &l.kind,
            &l.node_ref.expect("leaf ref computed"),
        ),
        Cell::Branch(b) => {
            let node = b.node_ref.expect("branch cell ref computed");
            put_branch_cell(out, &b.ext, &b.branch_ref, &node);
        }
    }
}

/// A bounds-checked reader over one record.
struct Reader<'a> {
    path: &'a [u8],
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    #[inline]
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], CommitmentError> {
        let Some(s) = self.bytes.get(self.pos..self.pos + n) else {
            return Err(self.truncated(n, what));
        };
        self.pos += n;
        Ok(s)
    }

    /// The error of a read past the record's end (kept off the hot path).
    #[cold]
    #[inline(never)]
    fn truncated(&self, n: usize, what: &str) -> CommitmentError {
        corrupted(
            self.path,
            format!(
                "record truncated reading {what} at offset {}: need {n} bytes, {} left",
                self.pos,
                self.bytes.len() - self.pos
            ),
        )
    }

    #[inline]
    fn byte(&mut self, what: &str) -> Result<u8, CommitmentError> {
        Ok(self.take(1, what)?[0])
    }

    /// Checks a stored reference (length byte, then 1..=32 bytes) and moves
    /// past it; returns the offset of its length byte.
    #[inline]
    fn skip_ref(&mut self, what: &str) -> Result<usize, CommitmentError> {
        let at = self.pos;
        let len = self.byte(what)? as usize;
        if len == 0 || len > 32 {
            return Err(self.bad_ref_len(what, at, len));
        }
        self.take(len, what)?;
        Ok(at)
    }

    #[cold]
    #[inline(never)]
    fn bad_ref_len(&self, what: &str, at: usize, len: usize) -> CommitmentError {
        corrupted(
            self.path,
            format!("{what} at offset {at}: length {len} (expected 1..=32)"),
        )
    }

    fn node_ref(&mut self, what: &str) -> Result<NodeRef, CommitmentError> {
        let at = self.skip_ref(what)?;
        stored_ref(self.bytes, at as u16).ok_or_else(|| self.truncated(0, what))
    }

    /// Checks the cell at the current position and moves past it, without
    /// building it: where it lies.
    #[inline]
    fn scan_cell(&mut self, storage: bool) -> Result<Span, CommitmentError> {
        match self.scan_valid_cell(storage) {
            Some(span) => Ok(span),
            None => self.scan_cell_checked(storage),
        }
    }

    /// [`Reader::scan_cell`] for a valid cell, with one bounds check per
    /// field that has a length: `None` for anything else, which
    /// [`Reader::scan_cell_checked`] then reads again to name the fault.
    #[inline]
    fn scan_valid_cell(&mut self, storage: bool) -> Option<Span> {
        let b = self.bytes;
        let at = self.pos;
        let ref_len = |i: usize| -> Option<usize> {
            let len = *b.get(i)? as usize;
            (1..=32).contains(&len).then_some(len)
        };
        let node_ref = match *b.get(at)? {
            KIND_SLOT if storage => at + 1 + 32 + 32,
            KIND_ACCOUNT if !storage => at + 1 + 32 + 20 + 32,
            KIND_BRANCH => {
                let len = *b.get(at + 1)? as usize;
                if len > 64 {
                    return None;
                }
                let branch_ref = at + 2 + len.div_ceil(2);
                if len % 2 == 1 && *b.get(branch_ref - 1)? & 0x0f != 0 {
                    return None;
                }
                if len == 0 {
                    branch_ref
                } else {
                    branch_ref + 1 + ref_len(branch_ref)?
                }
            }
            _ => return None,
        };
        // The node reference is every cell's last field; the fields before
        // it lie below its length byte, which `ref_len` found inside.
        let end = node_ref + 1 + ref_len(node_ref)?;
        if end > b.len() {
            return None;
        }
        self.pos = end;
        // The record's length was checked to fit offsets in 16 bits.
        Some(Span {
            at: at as u16,
            node_ref: node_ref as u16,
            end: end as u16,
        })
    }

    /// [`Reader::scan_cell`] field by field, naming what is wrong.
    #[cold]
    #[inline(never)]
    fn scan_cell_checked(&mut self, storage: bool) -> Result<Span, CommitmentError> {
        let at = self.pos;
        let kind = self.byte("cell kind")?;
        let node_ref = match kind {
            KIND_ACCOUNT | KIND_SLOT => {
                let expected = if storage { KIND_SLOT } else { KIND_ACCOUNT };
                if kind != expected {
                    return Err(corrupted(
                        self.path,
                        format!(
                            "cell at offset {at}: kind {kind} in a {} sub-trie (expected {expected})",
                            if storage { "storage" } else { "account" }
                        ),
                    ));
                }
                self.take(32, "hashed key")?;
                if storage {
                    self.take(32, "slot")?;
                } else {
                    self.take(20, "address")?;
                    self.take(32, "storage root")?;
                }
                self.skip_ref("leaf ref")?
            }
            KIND_BRANCH => {
                let len = self.byte("extension length")? as usize;
                if len > 64 {
                    return Err(corrupted(
                        self.path,
                        format!("cell at offset {at}: extension of {len} nibbles (at most 64)"),
                    ));
                }
                let packed = self.take(len.div_ceil(2), "extension")?;
                // The encoder pads an odd extension with a zero low half;
                // accepting anything else would give one record two encodings.
                if len % 2 == 1 && packed[packed.len() - 1] & 0x0f != 0 {
                    return Err(corrupted(
                        self.path,
                        format!(
                            "cell at offset {at}: extension of {len} nibbles ends in padding \
                             nibble 0x{:x} (expected 0)",
                            packed[packed.len() - 1] & 0x0f
                        ),
                    ));
                }
                let branch_ref = self.skip_ref("branch ref")?;
                if len == 0 {
                    branch_ref
                } else {
                    self.skip_ref("extension ref")?
                }
            }
            other => {
                return Err(corrupted(
                    self.path,
                    format!("cell at offset {at}: unknown kind {other} (expected 1, 2 or 3)"),
                ));
            }
        };
        // The record's length was checked to fit offsets in 16 bits.
        Ok(Span {
            at: at as u16,
            node_ref: node_ref as u16,
            end: self.pos as u16,
        })
    }

    /// Checks and builds the cell at the current position.
    fn cell(&mut self, storage: bool) -> Result<Cell, CommitmentError> {
        let span = self.scan_cell(storage)?;
        materialize(self.bytes, storage, span).ok_or_else(|| self.truncated(0, "cell"))
    }

    /// Checks the bitmap and the cells of a branch record and notes where
    /// each cell lies in `children`, which keeps `record` to build them from.
    fn children(
        &mut self,
        record: &Bytes,
        mut children: Box<Children>,
    ) -> Result<Box<Children>, CommitmentError> {
        let at = self.pos;
        let m = self.take(2, "child bitmap")?;
        let bitmap = u16::from_be_bytes([m[0], m[1]]);
        if bitmap.count_ones() < 2 {
            return Err(corrupted(
                self.path,
                format!("branch bitmap 0x{bitmap:04x} at offset {at} has fewer than 2 children"),
            ));
        }
        let storage = self.storage_flag();
        let mut spans = [Span::default(); 16];
        let mut bits = bitmap;
        while bits != 0 {
            spans[bits.trailing_zeros() as usize] = self.scan_cell(storage)?;
            bits &= bits - 1;
        }
        children.load(record.clone(), storage, bitmap, &spans);
        Ok(children)
    }

    fn storage_flag(&self) -> bool {
        self.path.len() >= 64
    }
}

/// The stored reference whose length byte is at offset `at` of `record`
/// (`None` when it does not lie inside, or its length is not 1..=32).
#[inline]
pub(crate) fn stored_ref(record: &[u8], at: u16) -> Option<NodeRef> {
    let at = at as usize;
    let len = *record.get(at)? as usize;
    NodeRef::from_stored(record.get(at + 1..at + 1 + len)?)
}

/// The extension of the branch cell a scan found at `span` of `record`
/// (`None` for a leaf).
pub(crate) fn stored_ext(record: &[u8], span: Span) -> Option<Ext> {
    let cell = record.get(span.at as usize..span.end as usize)?;
    if *cell.first()? != KIND_BRANCH {
        return None;
    }
    let len = *cell.get(1)? as usize;
    Ext::from_packed(cell.get(2..2 + len.div_ceil(2))?, len)
}

/// Builds the cell that a scan found at `span` of `record` (`None` when the
/// span does not lie inside the record, which a scan never gives).
pub(crate) fn materialize(record: &[u8], storage: bool, span: Span) -> Option<Cell> {
    let cell = record.get(span.at as usize..span.end as usize)?;
    let node_ref = Some(stored_ref(record, span.node_ref)?);
    Some(match *cell.first()? {
        KIND_BRANCH => {
            let len = *cell.get(1)? as usize;
            let packed = cell.get(2..2 + len.div_ceil(2))?;
            Cell::Branch(BranchCell {
                ext: Ext::from_packed(packed, len)?,
                branch_ref: stored_ref(cell, (2 + packed.len()) as u16)?,
                node_ref,
            })
        }
        _ => {
            let hashed = B256::from_slice(cell.get(1..33)?);
            let kind = if storage {
                LeafKind::Slot {
                    slot: B256::from_slice(cell.get(33..65)?),
                }
            } else {
                LeafKind::Account {
                    address: Address::from_slice(cell.get(33..53)?),
                    storage_root: B256::from_slice(cell.get(53..85)?),
                }
            };
            Cell::Leaf(Leaf {
                hashed,
                kind,
                value: None,
                node_ref,
            })
        }
    })
}

/// The longest record: a root branch's tag and reference, its bitmap and 16
/// account leaves of 118 bytes (the longest cell), so offsets into any valid
/// record fit in 16 bits.
const RECORD_MAX: usize = 1 + 33 + 2 + 16 * 118;

/// Decodes the record read at absolute nibble `path` (paths of 64 nibbles or
/// more belong to storage sub-tries).
pub(crate) fn decode_record(path: &[u8], bytes: &Bytes) -> Result<Record, CommitmentError> {
    decode_record_into(path, bytes, Box::default)
}

/// [`decode_record`] whose branch children go into the (empty) array that
/// `children` hands out, so a walk reuses its arrays instead of allocating.
/// The children keep (a reference to) `bytes` and are built from them when
/// taken.
pub(crate) fn decode_record_into(
    path: &[u8],
    bytes: &Bytes,
    children: impl FnOnce() -> Box<Children>,
) -> Result<Record, CommitmentError> {
    if bytes.len() > RECORD_MAX {
        return Err(corrupted(
            path,
            format!("record of {} bytes (at most {RECORD_MAX})", bytes.len()),
        ));
    }
    let mut r = Reader {
        path,
        bytes,
        pos: 0,
    };
    let root_path = path.is_empty() || path.len() == 64;
    let tag = r.byte("tag")?;
    let rec = match tag {
        TAG_BRANCH | TAG_ROOT_BRANCH => {
            if (tag == TAG_ROOT_BRANCH) != root_path {
                return Err(corrupted(
                    path,
                    format!(
                        "tag {tag} at a {} path",
                        if root_path {
                            "sub-trie root"
                        } else {
                            "non-root"
                        }
                    ),
                ));
            }
            let root_ref = if tag == TAG_ROOT_BRANCH {
                Some(r.node_ref("root branch ref")?)
            } else {
                None
            };
            Record::Branch {
                root_ref,
                children: r.children(bytes, children())?,
            }
        }
        TAG_ROOT_CELL => {
            if !root_path {
                return Err(corrupted(
                    path,
                    "root-cell record (tag 2) at a non-root path",
                ));
            }
            let cell = r.cell(path.len() >= 64)?;
            if let Cell::Branch(b) = &cell
                && b.ext.is_empty()
            {
                return Err(corrupted(
                    path,
                    "root-cell record holds a branch without extension (expected tag 3)",
                ));
            }
            Record::RootCell(cell)
        }
        other => {
            return Err(corrupted(
                path,
                format!("unknown record tag {other} (expected 1, 2 or 3)"),
            ));
        }
    };
    if r.pos != bytes.len() {
        return Err(corrupted(
            path,
            format!(
                "{} trailing bytes after the record at offset {}",
                bytes.len() - r.pos,
                r.pos
            ),
        ));
    }
    Ok(rec)
}

/// Decodes the stored record read at nibble `path` and encodes it again.
///
/// This runs the decoder of the on-disk record format (`FORMAT.md`, "Record
/// encoding") that every read of the commitment domain goes through, so
/// checkers and fuzzers can drive it with arbitrary bytes. `path` is the
/// record's nibble path (one nibble per byte, see [`crate::record_path`]); it
/// decides whether a root tag is allowed and whether leaves are account or
/// slot leaves. Returns the record's canonical bytes, which equal `bytes` for
/// every record strata writes, or [`CommitmentError::Corrupted`] naming the
/// path, the offset and what is wrong. Never panics.
pub fn reencode_record(path: &[u8], bytes: &[u8]) -> Result<Vec<u8>, CommitmentError> {
    Ok(match decode_record(path, &Bytes::copy_from_slice(bytes))? {
        Record::Branch {
            root_ref,
            mut children,
        } => {
            // Every cell built and encoded again, not copied as stored.
            let mut built = Box::<Children>::default();
            let mut present = children.present();
            while present != 0 {
                let n = present.trailing_zeros() as usize;
                built.set(n, children.take(n, path)?);
                present &= present - 1;
            }
            let mut out = Vec::with_capacity(bytes.len());
            encode_branch_record(root_ref.as_ref(), &built, &mut out);
            out
        }
        Record::RootCell(cell) => encode_root_cell(&cell),
    })
}

/// Encodes a branch record from its children (references computed); a
/// sub-trie root branch also stores its own reference.
pub(crate) fn encode_branch_record(
    root_ref: Option<&NodeRef>,
    children: &Children,
    out: &mut Vec<u8>,
) {
    out.clear();
    match root_ref {
        Some(r) => {
            out.push(TAG_ROOT_BRANCH);
            put_ref(out, r);
        }
        None => out.push(TAG_BRANCH),
    }
    let bitmap = children.present();
    out.extend_from_slice(&bitmap.to_be_bytes());
    let mut bits = bitmap;
    while bits != 0 {
        children.put(bits.trailing_zeros() as usize, out);
        bits &= bits - 1;
    }
}

/// Encodes a root-cell record (a sub-trie root that is a leaf or an extension).
pub(crate) fn encode_root_cell(cell: &Cell) -> Vec<u8> {
    let mut out = Vec::with_capacity(160);
    out.push(TAG_ROOT_CELL);
    put_cell(&mut out, cell);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root-cell record holding an extension of `ext_len` nibbles packed
    /// as `packed`, then a 32-byte branch ref and a 32-byte extension ref.
    fn root_extension(ext_len: u8, packed: &[u8]) -> Vec<u8> {
        let mut rec = vec![TAG_ROOT_CELL, KIND_BRANCH, ext_len];
        rec.extend_from_slice(packed);
        for byte in [0xab, 0xcd] {
            rec.push(32);
            rec.extend_from_slice(&[byte; 32]);
        }
        rec
    }

    /// Found by the `branch_record` fuzz target: an odd extension whose
    /// padding nibble was not zero decoded, and re-encoded to other bytes.
    #[test]
    fn odd_extension_padding_must_be_zero() {
        let good = root_extension(3, &[0x12, 0x30]);
        assert_eq!(reencode_record(&[], &good).expect("canonical"), good);
        let bad = root_extension(3, &[0x12, 0x33]);
        let err = reencode_record(&[], &bad).expect_err("padding nibble 3");
        let msg = err.to_string();
        assert!(
            msg.contains("<root>")
                && msg.contains("offset 1")
                && msg.contains("padding nibble 0x3"),
            "{msg}"
        );
        // Even extensions have no padding: every low half is a nibble.
        let even = root_extension(4, &[0x12, 0x3f]);
        assert_eq!(reencode_record(&[], &even).expect("canonical"), even);
    }

    /// The quick scan of a cell accepts only what the field-by-field scan
    /// accepts, and finds the same span: checked on every cell kind, with
    /// every byte of each cell changed to a few values and every cut.
    #[test]
    fn quick_scan_agrees_with_the_checked_scan() {
        let leaf_ref = NodeRef::from_stored(&[0xc5; 20]).expect("embedded ref");
        let hash_ref = NodeRef::from_stored(&[0xab; 32]).expect("hash ref");
        let account = LeafKind::Account {
            address: Address::repeat_byte(0x11),
            storage_root: B256::repeat_byte(0x22),
        };
        let slot = LeafKind::Slot {
            slot: B256::repeat_byte(0x33),
        };
        let mut cells: Vec<(bool, Vec<u8>)> = Vec::new();
        for (storage, kind) in [(false, account), (true, slot)] {
            for r in [leaf_ref, hash_ref] {
                let mut out = Vec::new();
                put_leaf_cell(&mut out, &B256::repeat_byte(0x44), &kind, &r);
                cells.push((storage, out));
            }
        }
        for ext in [&[][..], &[0x3][..], &[0x1, 0x2][..], &[0x7; 64][..]] {
            for storage in [false, true] {
                let mut out = Vec::new();
                put_branch_cell(&mut out, ext, &hash_ref, &leaf_ref);
                cells.push((storage, out));
            }
        }
        let agree = |storage: bool, bytes: &[u8]| {
            let reader = || Reader {
                path: &[],
                bytes,
                pos: 0,
            };
            let quick = reader().scan_valid_cell(storage);
            let checked = reader().scan_cell_checked(storage);
            match (quick, checked) {
                (Some(q), Ok(c)) => assert!(
                    (q.at, q.node_ref, q.end) == (c.at, c.node_ref, c.end),
                    "spans differ on {bytes:02x?}"
                ),
                (Some(_), Err(e)) => panic!("quick scan accepts {bytes:02x?}: {e}"),
                (None, _) => {}
            }
        };
        for (storage, cell) in &cells {
            for cut in 0..=cell.len() {
                agree(*storage, &cell[..cut]);
            }
            for i in 0..cell.len() {
                for v in [
                    0x00, 0x01, 0x02, 0x03, 0x04, 0x0f, 0x20, 0x21, 0x40, 0x41, 0xff,
                ] {
                    let mut bad = cell.clone();
                    bad[i] = v;
                    agree(*storage, &bad);
                }
            }
            // A valid cell is found by the quick scan itself.
            let r = Reader {
                path: &[],
                bytes: cell,
                pos: 0,
            }
            .scan_valid_cell(*storage);
            assert!(r.is_some_and(|s| s.end as usize == cell.len()));
        }
    }
}
