//! The incremental engine: walks the trie along sorted touched keys, loading
//! persisted records, re-reading touched leaves and re-hashing upward.

use alloy_primitives::{Address, B256};
use bytes::Bytes;
use rayon::prelude::*;

use crate::children::Children;
use crate::error::{CommitmentError, corrupted, path_hex};
use crate::nibbles::{common_prefix, nibble, push_key_nibbles};
use crate::node::{
    EMPTY_ROOT, KeccakCount, NodeRef, encode_account, encode_branch, encode_extension,
    encode_key_leaf, encode_storage_value,
};
use crate::record::{
    BranchCell, Cell, Ext, Leaf, LeafKind, LeafValue, Record, decode_record_into,
    encode_branch_record, encode_root_cell,
};
use crate::source::{BranchSource, StateSource};
use crate::stats::CommitStats;

type Result<T> = std::result::Result<T, CommitmentError>;

/// The sub-trie being walked: the account trie (`storage_of == None`) or the
/// storage trie of one account.
#[derive(Clone, Copy)]
pub(crate) struct Sub {
    pub(crate) storage_of: Option<Address>,
}

/// A touched key of a sub-trie.
pub(crate) trait Touch: Sync {
    /// Its 32-byte hashed key.
    fn hashed(&self) -> &B256;
    /// The keys its update walks: 1, plus an account's touched slots.
    fn weight(&self) -> usize {
        1
    }
    /// Rebuilds the leaf at relative `depth` from the state; `existing` is the
    /// leaf the trie held for this key, if any.
    fn update_leaf(
        &self,
        w: &mut Walker<'_>,
        sub: &Sub,
        depth: usize,
        existing: Option<Leaf>,
    ) -> Result<Cell>;
}

/// A branch as persisted before the block: the references its parent held,
/// reused when the branch comes out unchanged. Its record is the one its
/// children were decoded from ([`Children::record`]).
pub(crate) struct OldBranch {
    branch_ref: NodeRef,
    /// The reference of the node in front of it (the extension, or the
    /// branch itself), when stored.
    node_ref: Option<NodeRef>,
}

/// One walk's context: sources, scratch buffers, collected writes and stats.
pub(crate) struct Walker<'a> {
    pub(crate) branches: &'a dyn BranchSource,
    pub(crate) state: &'a dyn StateSource,
    pub(crate) writes: Vec<(Vec<u8>, Option<Bytes>)>,
    pub(crate) stats: CommitStats,
    pub(crate) keccak: KeccakCount,
    /// Absolute nibble path of the current position.
    pub(crate) path: Vec<u8>,
    buf: Vec<u8>,
    /// Scratch for record encoding.
    rec: Vec<u8>,
    /// Scratch for leaf values.
    val: Vec<u8>,
    /// Scratch for the leaf nodes [`Walker::hash_new_leaves`] hashes together.
    batch: Vec<u8>,
    /// RLP of branch nodes whose hashes wait for their siblings' (see
    /// [`NodeRef::deferred`]), by slot.
    deferred: Vec<Vec<u8>>,
    /// The slots of `deferred` not in use.
    free: Vec<usize>,
    /// Empty child arrays kept for reuse: a walk decodes and folds one per
    /// visited branch, and reusing them keeps the allocator off the path.
    #[allow(
        clippy::vec_box,
        reason = "the arrays move in and out as boxes (decoded records hold them), a pointer at a time"
    )]
    spare: Vec<Box<Children>>,
    /// Records read ahead of the walk (path, what the source gave), each
    /// taken by the [`Walker::read`] at its path; see [`Walker::read_ahead`].
    ahead: Vec<(Vec<u8>, Option<Bytes>)>,
    /// Key weight above which a branch's children are walked on rayon
    /// (`None`: never). A split hands its walkers a threshold of at least a
    /// quarter of its weight, so only a child that holds much of the work
    /// (one account with many slots) splits again.
    parallel_threshold: Option<usize>,
}

impl<'a> Walker<'a> {
    pub(crate) fn new(
        branches: &'a dyn BranchSource,
        state: &'a dyn StateSource,
        parallel_threshold: Option<usize>,
    ) -> Self {
        Self {
            branches,
            state,
            writes: Vec::new(),
            stats: CommitStats::default(),
            keccak: KeccakCount::default(),
            path: Vec::with_capacity(130),
            buf: Vec::with_capacity(600),
            rec: Vec::with_capacity(2048),
            val: Vec::with_capacity(128),
            batch: Vec::with_capacity(16 * 140),
            deferred: Vec::new(),
            free: Vec::new(),
            spare: Vec::new(),
            ahead: Vec::new(),
            parallel_threshold,
        }
    }

    fn read(&mut self) -> Result<Option<(Bytes, Record)>> {
        self.stats.records_read += 1;
        let bytes = match self.ahead.iter().rposition(|(p, _)| *p == self.path) {
            Some(i) => self.ahead.swap_remove(i).1,
            None => self
                .branches
                .branch(&self.path)
                .map_err(|source| CommitmentError::Branch {
                    path: path_hex(&self.path),
                    source,
                })?,
        };
        match bytes {
            None => Ok(None),
            Some(b) => {
                let spare = &mut self.spare;
                let rec = decode_record_into(&self.path, &b, || spare.pop().unwrap_or_default())?;
                Ok(Some((b, rec)))
            }
        }
    }

    /// An all-empty child array, reused when one is spare.
    fn children(&mut self) -> Box<Children> {
        self.spare.pop().unwrap_or_default()
    }

    /// Empties a child array and keeps it for reuse.
    fn recycle(&mut self, mut children: Box<Children>) {
        const KEEP: usize = 64;
        if self.spare.len() < KEEP {
            children.clear();
            self.spare.push(children);
        }
    }

    /// A leaf value encoded by `encode` (through a reused scratch buffer).
    pub(crate) fn leaf_value_with(&mut self, encode: impl FnOnce(&mut Vec<u8>)) -> LeafValue {
        self.val.clear();
        encode(&mut self.val);
        LeafValue::from_slice(&self.val)
    }

    /// The leaf value (RLP) of an account with `storage_root`.
    pub(crate) fn account_leaf_value(
        &mut self,
        acct: &crate::AccountLeaf,
        storage_root: &B256,
    ) -> LeafValue {
        self.leaf_value_with(|out| {
            encode_account(
                acct.nonce,
                &acct.balance,
                storage_root,
                &acct.code_hash,
                out,
            );
        })
    }

    fn write(&mut self, bytes: Option<Bytes>) {
        self.writes.push((self.path.clone(), bytes));
    }

    /// The stored root of the sub-trie at the current path, without changes.
    pub(crate) fn current_root(&mut self) -> Result<B256> {
        Ok(match self.read()? {
            None => EMPTY_ROOT,
            Some((_, Record::RootCell(c))) => match c {
                Cell::Leaf(Leaf {
                    node_ref: Some(r), ..
                })
                | Cell::Branch(BranchCell {
                    node_ref: Some(r), ..
                }) => r.root_hash(&mut self.keccak),
                _ => return Err(corrupted(&self.path, "root cell without a reference")),
            },
            Some((
                _,
                Record::Branch {
                    root_ref: Some(r), ..
                },
            )) => r.root_hash(&mut self.keccak),
            Some((_, Record::Branch { root_ref: None, .. })) => {
                return Err(corrupted(
                    &self.path,
                    "root branch record without its own reference",
                ));
            }
        })
    }

    /// Applies `keys` to the sub-trie rooted at the current path and returns
    /// its new root hash; `start_empty` skips reading the old root.
    pub(crate) fn update_subtrie<T: Touch>(
        &mut self,
        sub: &Sub,
        start_empty: bool,
        keys: &[T],
    ) -> Result<B256> {
        debug_assert!(
            keys.windows(2).all(|w| w[0].hashed() < w[1].hashed()),
            "touched keys of sub-trie {} must be sorted and distinct",
            path_hex(&self.path)
        );
        let entry_len = self.path.len();
        let loaded = if start_empty { None } else { self.read()? };
        let (mut new, old_root_cell) = match loaded {
            None => (self.update(sub, 0, Cell::Empty, keys)?, None),
            Some((bytes, Record::RootCell(cell))) => {
                (self.update(sub, 0, cell, keys)?, Some(bytes))
            }
            Some((_, Record::Branch { children, root_ref })) => {
                let first = *keys.first().map_or(&B256::ZERO, |k| k.hashed());
                let Some(root_ref) = root_ref else {
                    return Err(corrupted(
                        &self.path,
                        "root branch record without its own reference",
                    ));
                };
                let old = OldBranch {
                    branch_ref: root_ref,
                    node_ref: Some(root_ref),
                };
                (
                    self.branch_node(sub, 0, 0, &first, children, keys, Some(old))?,
                    None,
                )
            }
        };
        self.ensure_ref(sub, 0, &mut new)?;
        debug_assert_eq!(
            self.path.len(),
            entry_len,
            "walker path pushes and pops must balance over a sub-trie update"
        );
        Ok(match &new {
            Cell::Empty => {
                if old_root_cell.is_some() {
                    self.write(None);
                }
                EMPTY_ROOT
            }
            Cell::Leaf(Leaf {
                node_ref: Some(r), ..
            })
            | Cell::Branch(BranchCell {
                node_ref: Some(r), ..
            }) => {
                let is_root_branch = matches!(&new, Cell::Branch(b) if b.ext.is_empty());
                if !is_root_branch {
                    let rec = encode_root_cell(&new);
                    if old_root_cell.as_deref() != Some(rec.as_slice()) {
                        self.write(Some(Bytes::copy_from_slice(&rec)));
                    }
                }
                r.root_hash(&mut self.keccak)
            }
            _ => {
                return Err(corrupted(
                    &self.path,
                    "sub-trie root without a reference after hashing",
                ));
            }
        })
    }

    /// Applies sorted, distinct `keys` (all below the current position, at
    /// relative `depth`) to `cell` and returns the new cell.
    pub(crate) fn update<T: Touch>(
        &mut self,
        sub: &Sub,
        depth: usize,
        cell: Cell,
        keys: &[T],
    ) -> Result<Cell> {
        let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
            return Ok(cell);
        };
        let first = *first.hashed();
        debug_assert!(
            self.stands_above(&first, depth) && self.stands_above(last.hashed(), depth),
            "walker at {} (relative depth {depth}) is not on the path of its keys",
            path_hex(&self.path)
        );
        let keys_lcp = common_prefix(&first, last.hashed(), depth);
        match cell {
            Cell::Empty => {
                if keys.len() == 1 {
                    return keys[0].update_leaf(self, sub, depth, None);
                }
                let children = self.children();
                self.branch_node(sub, depth, keys_lcp, &first, children, keys, None)
            }
            Cell::Leaf(leaf) => {
                if keys.len() == 1 && *keys[0].hashed() == leaf.hashed {
                    return keys[0].update_leaf(self, sub, depth, Some(leaf));
                }
                let c = keys_lcp.min(common_prefix(&leaf.hashed, &first, depth));
                if c >= 64 {
                    return Err(corrupted(&self.path, "duplicate touched key"));
                }
                let mut children = self.children();
                let n = nibble(&leaf.hashed, c) as usize;
                children.set(
                    n,
                    Cell::Leaf(Leaf {
                        node_ref: None,
                        ..leaf
                    }),
                );
                self.branch_node(sub, depth, c, &first, children, keys, None)
            }
            Cell::Branch(b) => {
                let ext_end = depth + b.ext.len();
                if ext_end >= 64 {
                    return Err(corrupted(
                        &self.path,
                        format!(
                            "branch cell with a {}-nibble extension at depth {depth} ends past the key",
                            b.ext.len()
                        ),
                    ));
                }
                let mut c = depth;
                while c < ext_end && c < keys_lcp && nibble(&first, c) == b.ext[c - depth] {
                    c += 1;
                }
                if c == ext_end {
                    let plen = self.path.len();
                    self.path.extend_from_slice(&b.ext);
                    let loaded = self.read()?;
                    let result = match loaded {
                        Some((
                            _,
                            Record::Branch {
                                root_ref: None,
                                children,
                            },
                        )) => Ok(children),
                        Some(_) => Err(corrupted(
                            &self.path,
                            "expected a branch record (tag 1) below a branch cell",
                        )),
                        None => Err(corrupted(
                            &self.path,
                            "a branch cell points here but there is no record",
                        )),
                    };
                    self.path.truncate(plen);
                    let children = result?;
                    let old = OldBranch {
                        branch_ref: b.branch_ref,
                        node_ref: b.node_ref,
                    };
                    self.branch_node(sub, depth, ext_end, &first, children, keys, Some(old))
                } else {
                    let mut children = self.children();
                    let n = b.ext[c - depth] as usize;
                    children.set(
                        n,
                        Cell::Branch(BranchCell {
                            ext: Ext::from_slice(&b.ext[c - depth + 1..]),
                            branch_ref: b.branch_ref,
                            node_ref: None,
                        }),
                    );
                    self.branch_node(sub, depth, c, &first, children, keys, None)
                }
            }
        }
    }

    /// Updates the children of the branch at relative `bdepth` (reached from
    /// `depth` through `repr[depth..bdepth]`), then folds it into a cell.
    #[allow(clippy::too_many_arguments)]
    fn branch_node<T: Touch>(
        &mut self,
        sub: &Sub,
        depth: usize,
        bdepth: usize,
        repr: &B256,
        mut children: Box<Children>,
        keys: &[T],
        old: Option<OldBranch>,
    ) -> Result<Cell> {
        let plen = self.path.len();
        push_key_nibbles(&mut self.path, repr, depth, bdepth);
        // Key ranges per child nibble (keys are sorted), without allocating.
        let mut ranges = [(0usize, 0usize, 0usize); 16];
        let mut count = 0;
        let mut i = 0;
        while i < keys.len() {
            let n = nibble(keys[i].hashed(), bdepth);
            let mut j = i + 1;
            while j < keys.len() && nibble(keys[j].hashed(), bdepth) == n {
                j += 1;
            }
            ranges[count] = (n as usize, i, j);
            count += 1;
            i = j;
        }
        // Children are walked from the highest nibble down, so the writes
        // (each branch's after those below it) come out in reverse path
        // order: `compute_root` reverses them instead of sorting.
        let groups = ranges[..count]
            .iter()
            .rev()
            .map(|&(n, i, j)| (n, &keys[i..j]));
        let weight = match self.parallel_threshold {
            Some(_) if count > 1 => keys.iter().map(Touch::weight).sum(),
            _ => 0,
        };
        if let Some(t) = self.parallel_threshold.filter(|&t| weight > t) {
            let inner = Some(t.max(weight / 4));
            let tasks = groups
                .map(|(n, g)| Ok((n, children.take(n, &self.path)?, g)))
                .collect::<Result<Vec<(usize, Cell, &[T])>>>()?;
            let (branches, state) = (self.branches, self.state);
            let base = self.path.clone();
            let results: Vec<Result<(usize, Cell, Walker<'_>)>> = tasks
                .into_par_iter()
                .map(|(n, cell, group)| {
                    let mut w = Walker::new(branches, state, inner);
                    w.path.extend_from_slice(&base);
                    w.path.push(n as u8);
                    let mut c = w.update(sub, bdepth + 1, cell, group)?;
                    w.ensure_ref(sub, bdepth + 1, &mut c)?;
                    Ok((n, c, w))
                })
                .collect();
            for r in results {
                // In task order: highest nibble first, as a serial walk.
                let (n, c, w) = r?;
                children.set(n, c);
                self.writes.extend(w.writes);
                self.stats.add(&w.stats);
                self.keccak.add(&w.keccak);
            }
        } else {
            let mark = self.ahead.len();
            self.read_ahead(&children, bdepth, &ranges[..count], keys);
            for (n, group) in groups {
                let cell = children.take(n, &self.path)?;
                self.path.push(n as u8);
                let updated = self.update(sub, bdepth + 1, cell, group);
                self.path.pop();
                children.set(n, updated?);
            }
            self.ahead.truncate(mark);
        }
        debug_assert_eq!(
            self.path.len(),
            plen + (bdepth - depth),
            "walker path pushes and pops must balance below branch {}",
            path_hex(&self.path)
        );
        let result = self.fold_branch(sub, depth, bdepth, repr, children, old);
        self.path.truncate(plen);
        result
    }

    /// Reads the records the walk is about to read below the branch at the
    /// current path (relative depth `bdepth`): those of its stored branch
    /// cells whose whole extension the keys of their group (`ranges` of
    /// `keys`, by nibble) follow, which `update` reads first. Their lookups
    /// and then one byte of every cache line of each record go out back to
    /// back, so the memory latencies overlap instead of coming one record
    /// at a time. A source error is left for the walk's own read to report.
    fn read_ahead<T: Touch>(
        &mut self,
        children: &Children,
        bdepth: usize,
        ranges: &[(usize, usize, usize)],
        keys: &[T],
    ) {
        let mark = self.ahead.len();
        for &(n, i, j) in ranges {
            let Some(ext) = children.stored_branch_ext(n) else {
                continue;
            };
            let from = bdepth + 1;
            if from + ext.len() >= 64 {
                continue; // corrupt: `update` reports it
            }
            let follows = |k: &B256| (0..ext.len()).all(|e| nibble(k, from + e) == ext[e]);
            if !(follows(keys[i].hashed()) && follows(keys[j - 1].hashed())) {
                continue;
            }
            let mut path = Vec::with_capacity(self.path.len() + 1 + ext.len());
            path.extend_from_slice(&self.path);
            path.push(n as u8);
            path.extend_from_slice(&ext);
            if let Ok(bytes) = self.branches.branch(&path) {
                self.ahead.push((path, bytes));
            }
        }
        let mut x = 0u8;
        for bytes in self.ahead[mark..].iter().filter_map(|(_, b)| b.as_deref()) {
            for b in bytes.iter().step_by(64) {
                x ^= *b;
            }
        }
        std::hint::black_box(x);
    }

    /// Turns updated children into the cell that replaces the branch: nothing,
    /// the single remaining child pulled up, or a re-hashed branch.
    fn fold_branch(
        &mut self,
        sub: &Sub,
        depth: usize,
        bdepth: usize,
        repr: &B256,
        mut children: Box<Children>,
        old: Option<OldBranch>,
    ) -> Result<Cell> {
        let present = children.present();
        if present.count_ones() <= 1 {
            if old.is_some() {
                self.write(None);
            }
            if present == 0 {
                self.recycle(children);
                return Ok(Cell::Empty);
            }
            let n = present.trailing_zeros() as usize;
            let only = children.take(n, &self.path);
            self.recycle(children);
            let only = only?;
            return Ok(match only {
                Cell::Leaf(l) => Cell::Leaf(Leaf {
                    node_ref: None,
                    ..l
                }),
                Cell::Branch(b) => {
                    let mut ext = key_ext(repr, depth, bdepth);
                    ext.push(n as u8);
                    ext.extend(&b.ext);
                    Cell::Branch(BranchCell {
                        ext,
                        branch_ref: b.branch_ref,
                        node_ref: None,
                    })
                }
                Cell::Empty => Cell::Empty,
            });
        }
        self.hash_deferred_branches(&mut children);
        self.hash_new_leaves(sub, bdepth, &mut children)?;
        let mut refs: [Option<NodeRef>; 16] = [None; 16];
        let mut bits = present;
        while bits != 0 {
            let n = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if children.is_stored(n) {
                refs[n] = Some(children.stored_ref(n, &self.path)?);
            } else if let Some(child) = children.live_mut(n) {
                self.path.push(n as u8);
                let r = self.ensure_ref(sub, bdepth + 1, child);
                self.path.pop();
                refs[n] = r?;
            }
        }
        let root = bdepth == 0;
        let mut rec = std::mem::take(&mut self.rec);
        // A record that comes out byte-identical has the same children and
        // references, so the branch (and the extension in front of it, which
        // the same walk reached) keeps its hashes: nothing to re-hash.
        if let Some(o) = &old {
            encode_branch_record(root.then_some(&o.branch_ref), &children, &mut rec);
            if children.record() == &rec[..] {
                self.rec = rec;
                self.recycle(children);
                return Ok(Cell::Branch(BranchCell {
                    ext: key_ext(repr, depth, bdepth),
                    branch_ref: o.branch_ref,
                    node_ref: o.node_ref,
                }));
            }
        }
        self.buf.clear();
        encode_branch(&refs, None, &mut self.buf);
        // Below the sub-trie's root the hash waits for the siblings' (the
        // parent hashes them together); the root record needs its own now.
        let branch_ref = if root || self.buf.len() < 32 {
            NodeRef::of_rlp(&self.buf, &mut self.keccak)
        } else {
            self.defer()
        };
        if root || old.is_none() {
            encode_branch_record(root.then_some(&branch_ref), &children, &mut rec);
        }
        if old.is_none() || children.record() != &rec[..] {
            self.write(Some(Bytes::copy_from_slice(&rec)));
        }
        self.rec = rec;
        self.recycle(children);
        Ok(Cell::Branch(BranchCell {
            ext: key_ext(repr, depth, bdepth),
            branch_ref,
            node_ref: None,
        }))
    }

    /// Keeps the branch node in `self.buf` for hashing later; returns its
    /// placeholder reference.
    fn defer(&mut self) -> NodeRef {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.deferred.push(Vec::with_capacity(600));
            self.deferred.len() - 1
        });
        let rlp = &mut self.deferred[slot];
        rlp.clear();
        rlp.extend_from_slice(&self.buf);
        NodeRef::deferred(slot)
    }

    /// The hash of deferred slot `slot`'s branch node, which frees the slot.
    fn resolve(&mut self, slot: usize) -> NodeRef {
        self.free.push(slot);
        NodeRef::hashed(self.keccak.hash(&self.deferred[slot]))
    }

    /// Hashes the deferred branch nodes among the branch's live children,
    /// four at a time ([`KeccakCount::hash_x4`]; siblings near the top are all full
    /// branches of four blocks each).
    fn hash_deferred_branches(&mut self, children: &mut Children) {
        // (nibble, slot)
        let mut waiting = [(0usize, 0usize); 16];
        let mut count = 0;
        for n in children.live_nibbles() {
            if let Some(Cell::Branch(b)) = children.live_mut(n)
                && let Some(slot) = b.branch_ref.deferred_slot()
            {
                waiting[count] = (n, slot);
                count += 1;
            }
        }
        for group in waiting[..count].chunks(4) {
            let mut msgs = [&[][..]; 4];
            for (msg, &(_, slot)) in msgs.iter_mut().zip(group) {
                *msg = self.deferred[slot].as_slice();
            }
            let hashes = self.keccak.hash_x4(&msgs[..group.len()]);
            for (&(n, slot), hash) in group.iter().zip(hashes) {
                if let Some(Cell::Branch(b)) = children.live_mut(n) {
                    b.branch_ref = NodeRef::hashed(hash);
                }
                self.free.push(slot);
            }
        }
    }

    /// Hashes the branch's live leaf children that have no reference yet
    /// (changed or moved leaves), four at a time: their nodes are
    /// independent, and hashing four at once costs about what one
    /// keccak call does. [`Walker::ensure_ref`] then finds them hashed; a leaf whose
    /// node is shorter than 32 bytes (embedded, not hashed) is left to it.
    fn hash_new_leaves(&mut self, sub: &Sub, bdepth: usize, children: &mut Children) -> Result<()> {
        // (nibble, start, end of its node's RLP in `self.batch`)
        let mut nodes = [(0usize, 0usize, 0usize); 16];
        let mut count = 0;
        self.batch.clear();
        for n in children.live_nibbles() {
            let Some(Cell::Leaf(leaf)) = children.live_mut(n) else {
                continue;
            };
            if leaf.node_ref.is_some() {
                continue;
            }
            if leaf.value.is_none() {
                self.path.push(n as u8);
                let value = self.leaf_value(sub, leaf);
                self.path.pop();
                leaf.value = Some(value?);
            }
            let start = self.batch.len();
            let value = leaf.value.as_deref().unwrap_or_default();
            encode_key_leaf(&leaf.hashed, bdepth + 1, value, &mut self.batch);
            if self.batch.len() - start >= 32 {
                nodes[count] = (n, start, self.batch.len());
                count += 1;
            } else {
                self.batch.truncate(start);
            }
        }
        for group in nodes[..count].chunks(4) {
            let mut msgs = [&[][..]; 4];
            for (msg, &(_, start, end)) in msgs.iter_mut().zip(group) {
                *msg = &self.batch[start..end];
            }
            let hashes = self.keccak.hash_x4(&msgs[..group.len()]);
            for (&(n, _, _), hash) in group.iter().zip(hashes) {
                if let Some(Cell::Leaf(leaf)) = children.live_mut(n) {
                    leaf.node_ref = Some(NodeRef::hashed(hash));
                }
            }
        }
        Ok(())
    }

    /// Whether the current path ends with the first `depth` nibbles of
    /// `hashed`, i.e. the walker stands where that key's walk has reached.
    fn stands_above(&self, hashed: &B256, depth: usize) -> bool {
        let Some(at) = self.path.len().checked_sub(depth) else {
            return false;
        };
        (0..depth).all(|i| self.path[at + i] == nibble(hashed, i))
    }

    /// Computes the cell's node reference at relative position `pos` if it is
    /// not known, reading the leaf's value from the state when needed.
    pub(crate) fn ensure_ref(
        &mut self,
        sub: &Sub,
        pos: usize,
        cell: &mut Cell,
    ) -> Result<Option<NodeRef>> {
        match cell {
            Cell::Empty => Ok(None),
            Cell::Leaf(l) => {
                if let Some(r) = l.node_ref {
                    return Ok(Some(r));
                }
                if l.value.is_none() {
                    l.value = Some(self.leaf_value(sub, l)?);
                }
                self.buf.clear();
                encode_key_leaf(
                    &l.hashed,
                    pos,
                    l.value.as_deref().unwrap_or_default(),
                    &mut self.buf,
                );
                let r = NodeRef::of_rlp(&self.buf, &mut self.keccak);
                l.node_ref = Some(r);
                Ok(Some(r))
            }
            Cell::Branch(b) => {
                if let Some(slot) = b.branch_ref.deferred_slot() {
                    b.branch_ref = self.resolve(slot);
                }
                if let Some(r) = b.node_ref {
                    return Ok(Some(r));
                }
                let r = if b.ext.is_empty() {
                    b.branch_ref
                } else {
                    self.buf.clear();
                    encode_extension(&b.ext, &b.branch_ref, &mut self.buf);
                    NodeRef::of_rlp(&self.buf, &mut self.keccak)
                };
                b.node_ref = Some(r);
                Ok(Some(r))
            }
        }
    }

    /// Re-reads an untouched leaf's value (its node moved, so it is re-hashed).
    fn leaf_value(&mut self, sub: &Sub, leaf: &Leaf) -> Result<LeafValue> {
        match (leaf.kind, sub.storage_of) {
            (
                LeafKind::Account {
                    address,
                    storage_root,
                },
                None,
            ) => {
                let Some(acct) = self.read_account(&address)? else {
                    return Err(corrupted(
                        &self.path,
                        format!("account leaf {address} is in the trie but not in the state"),
                    ));
                };
                Ok(self.account_leaf_value(&acct, &storage_root))
            }
            (LeafKind::Slot { slot }, Some(address)) => match self.read_storage(&address, &slot)? {
                Some(v) if !v.is_zero() => {
                    Ok(self.leaf_value_with(|out| encode_storage_value(&v, out)))
                }
                _ => Err(corrupted(
                    &self.path,
                    format!("storage leaf {address}/{slot} is in the trie but zero in the state"),
                )),
            },
            _ => Err(corrupted(
                &self.path,
                "leaf kind does not match its sub-trie",
            )),
        }
    }

    pub(crate) fn read_account(&mut self, address: &Address) -> Result<Option<crate::AccountLeaf>> {
        self.stats.leaves_read += 1;
        self.state
            .account(address)
            .map_err(|source| CommitmentError::State {
                key: format!("account {address}"),
                source,
            })
    }

    pub(crate) fn read_storage(
        &mut self,
        address: &Address,
        slot: &B256,
    ) -> Result<Option<alloy_primitives::U256>> {
        self.stats.leaves_read += 1;
        self.state
            .storage(address, slot)
            .map_err(|source| CommitmentError::State {
                key: format!("storage {address}/{slot}"),
                source,
            })
    }

    /// Emits deletes for every record of the sub-trie at the current path
    /// (those below first, highest nibble first, as the walk's writes).
    pub(crate) fn delete_records(&mut self) -> Result<()> {
        let Some((_, rec)) = self.read()? else {
            return Ok(());
        };
        match rec {
            Record::RootCell(Cell::Branch(b)) => self.delete_below(&b.ext)?,
            Record::RootCell(_) => {}
            Record::Branch { mut children, .. } => {
                let mut present = children.present();
                while present != 0 {
                    let n = 15 - present.leading_zeros() as usize;
                    present &= !(1 << n);
                    if let Cell::Branch(b) = children.take(n, &self.path)? {
                        self.path.push(n as u8);
                        let r = self.delete_below(&b.ext);
                        self.path.pop();
                        r?;
                    }
                }
                self.recycle(children);
            }
        }
        self.write(None);
        Ok(())
    }

    fn delete_below(&mut self, ext: &[u8]) -> Result<()> {
        let plen = self.path.len();
        self.path.extend_from_slice(ext);
        let r = self.delete_records();
        self.path.truncate(plen);
        r
    }
}

/// The extension made of nibbles `from..to` of `key`.
#[inline]
fn key_ext(key: &B256, from: usize, to: usize) -> Ext {
    let mut ext = Ext::EMPTY;
    for i in from..to {
        ext.push(nibble(key, i));
    }
    ext
}

#[cfg(test)]
mod tests {
    use alloy_primitives::keccak256;

    use super::*;
    use crate::memory::{MemoryBranchStore, MemoryState};
    use crate::touch::AccountTouch;

    fn touched(i: u8) -> AccountTouch {
        let address = Address::with_last_byte(i);
        AccountTouch {
            hashed: keccak256(address),
            address,
            wiped: false,
            slots: Vec::new(),
        }
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "must be sorted and distinct")]
    fn unsorted_touched_keys_trip_the_debug_assertion() {
        let (branches, state) = (MemoryBranchStore::new(), MemoryState::new());
        let mut keys = vec![touched(1), touched(2), touched(3)];
        keys.sort_by_key(|k| std::cmp::Reverse(k.hashed));
        let mut w = Walker::new(&branches, &state, None);
        let _ = w.update_subtrie(&Sub { storage_of: None }, true, &keys);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "is not on the path of its keys")]
    fn a_walker_off_its_keys_path_trips_the_debug_assertion() {
        let (branches, state) = (MemoryBranchStore::new(), MemoryState::new());
        let keys = vec![touched(1)];
        let mut w = Walker::new(&branches, &state, None);
        w.path.push(nibble(&keys[0].hashed, 0) ^ 1);
        let _ = w.update(&Sub { storage_of: None }, 1, Cell::Empty, &keys);
    }
}
