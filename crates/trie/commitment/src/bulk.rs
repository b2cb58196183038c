//! Bulk build of the trie records from input sorted by hashed key: one pass,
//! a stack of open branches, every node hashed exactly once. Produces the
//! same records [`compute_root`](crate::compute_root) would.
//!
//! Nodes are hashed four at a time ([`KeccakCount::hash_x4`]): a placed leaf's or
//! branch's cell is written with room for its hash, and the hashes are
//! filled in when four of a kind are waiting (leaves, one block each, apart
//! from branches, up to four) or before the branch that holds them is
//! hashed. A branch under an extension is hashed alone.

use alloy_primitives::{Address, B256, U256};
use bytes::Bytes;
use rayon::prelude::*;

use crate::error::CommitmentError;
use crate::keccak_x4::MAX_ONE_BLOCK;
use crate::nibbles::{common_prefix, nibble, push_key_nibbles};
use crate::node::{
    EMPTY_ROOT, KeccakCount, NodeRef, encode_account, encode_branch, encode_extension,
    encode_key_leaf, encode_storage_value,
};
use crate::record::{
    LeafKind, TAG_BRANCH, TAG_ROOT_BRANCH, TAG_ROOT_CELL, put_branch_cell, put_leaf_cell, put_ref,
};
use crate::source::AccountLeaf;

type Result<T> = std::result::Result<T, CommitmentError>;

/// A closed subtree waiting to be placed into its parent branch.
#[derive(Clone, Copy)]
enum Closed {
    /// The builder's pending leaf.
    Leaf,
    /// A branch at relative `depth` (its subtree contains the previous key).
    Branch { depth: usize, branch_ref: NodeRef },
}

/// An open branch: the children placed so far, in nibble order.
struct Level {
    depth: usize,
    refs: [Option<NodeRef>; 16],
    bitmap: u16,
    cells: Vec<u8>,
}

impl Level {
    fn new(depth: usize) -> Self {
        Self {
            depth,
            refs: [None; 16],
            bitmap: 0,
            cells: Vec::with_capacity(16 * 120),
        }
    }
}

/// Placed nodes (leaves, or branches without an extension) whose hashes are
/// still to be computed, four at a time: each one's cell was written with
/// room for its hash.
struct PendingHashes {
    /// Each node's RLP.
    rlp: [Vec<u8>; 4],
    /// Each node's level, nibble in it, and offset of its hash in the
    /// level's cells.
    place: [(usize, usize, usize); 4],
    count: usize,
}

impl PendingHashes {
    /// An empty queue with room for four branch nodes.
    fn new() -> Self {
        Self {
            rlp: std::array::from_fn(|_| Vec::with_capacity(600)),
            place: [(0, 0, 0); 4],
            count: 0,
        }
    }

    /// Adds a node; returns whether four are now waiting.
    fn push(&mut self, rlp: &[u8], level: usize, nibble: usize, hash_at: usize) -> bool {
        let i = self.count;
        self.rlp[i].clear();
        self.rlp[i].extend_from_slice(rlp);
        self.place[i] = (level, nibble, hash_at);
        self.count += 1;
        self.count == 4
    }

    /// Whether a node waits to be placed in level `li`.
    fn waits_in(&self, li: usize) -> bool {
        self.place[..self.count].iter().any(|&(l, _, _)| l == li)
    }

    /// The waiting nodes' hashes, in the order they were pushed.
    fn hashes(&self, keccak: &mut KeccakCount) -> [B256; 4] {
        let msgs: [&[u8]; 4] = std::array::from_fn(|i| self.rlp[i].as_slice());
        keccak.hash_x4(&msgs[..self.count])
    }
}

/// The streaming builder of one sub-trie (the account trie, or one account's
/// storage trie).
struct StackBuilder {
    /// Absolute nibble path of the sub-trie root.
    base: Vec<u8>,
    levels: Vec<Level>,
    active: usize,
    prev: Option<B256>,
    leaf_kind: LeafKind,
    leaf_value: Vec<u8>,
    buf: Vec<u8>,
    /// Leaves waiting for their hashes (one block each).
    leaves: Box<PendingHashes>,
    /// Branches waiting for their hashes (up to four blocks each), apart
    /// from the leaves so four lanes hash messages of one size.
    branches: Box<PendingHashes>,
    /// The RLP of the branch [`StackBuilder::close_top`] closed last, when
    /// its hash is left to [`StackBuilder::place`] (a [`NodeRef::deferred`]).
    closed_rlp: Vec<u8>,
    keccak: KeccakCount,
}

impl StackBuilder {
    fn new() -> Self {
        Self {
            base: Vec::new(),
            levels: Vec::new(),
            active: 0,
            prev: None,
            leaf_kind: LeafKind::Slot { slot: B256::ZERO },
            leaf_value: Vec::with_capacity(128),
            buf: Vec::with_capacity(600),
            leaves: Box::new(PendingHashes::new()),
            branches: Box::new(PendingHashes::new()),
            closed_rlp: Vec::with_capacity(600),
            keccak: KeccakCount::default(),
        }
    }

    /// Starts the storage sub-trie of the account hashed to `base`; what a
    /// build left behind (one stopped by an error) is dropped.
    fn reset(&mut self, base: &B256) {
        self.base.clear();
        push_key_nibbles(&mut self.base, base, 0, 64);
        self.active = 0;
        self.prev = None;
        self.leaves.count = 0;
        self.branches.count = 0;
    }

    /// Adds the next leaf; its value must already be in `self.leaf_value`
    /// after this call returns (the caller fills it via `value_buf`).
    fn add(
        &mut self,
        key: B256,
        kind: LeafKind,
        emit: &mut dyn FnMut(Vec<u8>, Bytes),
    ) -> Result<()> {
        if let Some(prev) = self.prev {
            if key <= prev {
                return Err(CommitmentError::Unsorted {
                    what: format!("key {key} after {prev}"),
                });
            }
            let d = common_prefix(&prev, &key, 0);
            let mut sub = Closed::Leaf;
            while self.active > 0 && self.levels[self.active - 1].depth > d {
                sub = self.place_and_close(sub, emit);
            }
            if self.active == 0 || self.levels[self.active - 1].depth < d {
                self.push_level(d);
            }
            let top = self.active - 1;
            self.place(sub, top);
        }
        self.prev = Some(key);
        self.leaf_kind = kind;
        self.leaf_value.clear();
        Ok(())
    }

    fn push_level(&mut self, depth: usize) {
        if self.levels.len() == self.active {
            self.levels.push(Level::new(depth));
        } else {
            let l = &mut self.levels[self.active];
            l.depth = depth;
            l.refs = [None; 16];
            l.bitmap = 0;
            l.cells.clear();
        }
        self.active += 1;
    }

    /// Places `sub` (which contains the previous key) into level `li`.
    fn place(&mut self, sub: Closed, li: usize) {
        let prev = self.prev.unwrap_or_default();
        let level = &mut self.levels[li];
        let pos = level.depth + 1;
        let n = nibble(&prev, level.depth) as usize;
        let r = match sub {
            Closed::Leaf => {
                self.buf.clear();
                encode_key_leaf(&prev, pos, &self.leaf_value, &mut self.buf);
                if (32..=MAX_ONE_BLOCK).contains(&self.buf.len()) {
                    // Hashed later with three others; the cell keeps room.
                    put_leaf_cell(
                        &mut level.cells,
                        &prev,
                        &self.leaf_kind,
                        &NodeRef::hashed(B256::ZERO),
                    );
                    level.bitmap |= 1 << n;
                    let hash_at = level.cells.len() - 32;
                    if self.leaves.push(&self.buf, li, n, hash_at) {
                        self.hash_leaves();
                    }
                    return;
                }
                let r = NodeRef::of_rlp(&self.buf, &mut self.keccak);
                put_leaf_cell(&mut level.cells, &prev, &self.leaf_kind, &r);
                r
            }
            Closed::Branch { depth, branch_ref } if branch_ref.deferred_slot().is_some() => {
                if depth == pos {
                    // No extension: the branch's hash goes in with three others'.
                    let room = NodeRef::hashed(B256::ZERO);
                    put_branch_cell(&mut level.cells, &[], &room, &room);
                    level.bitmap |= 1 << n;
                    let hash_at = level.cells.len() - 32;
                    if self.branches.push(&self.closed_rlp, li, n, hash_at) {
                        self.hash_branches();
                    }
                    return;
                }
                let branch_ref = NodeRef::hashed(self.keccak.hash(&self.closed_rlp));
                return self.place(Closed::Branch { depth, branch_ref }, li);
            }
            Closed::Branch { depth, branch_ref } => {
                let mut ext = [0u8; 64];
                for (i, e) in (pos..depth).zip(ext.iter_mut()) {
                    *e = nibble(&prev, i);
                }
                let ext = &ext[..depth - pos];
                let r = if ext.is_empty() {
                    branch_ref
                } else {
                    self.buf.clear();
                    encode_extension(ext, &branch_ref, &mut self.buf);
                    NodeRef::of_rlp(&self.buf, &mut self.keccak)
                };
                put_branch_cell(&mut level.cells, ext, &branch_ref, &r);
                r
            }
        };
        level.refs[n] = Some(r);
        level.bitmap |= 1 << n;
    }

    /// Hashes the waiting leaves and writes their references into their
    /// levels' cells and child arrays.
    fn hash_leaves(&mut self) {
        Self::hash_waiting(&mut self.leaves, &mut self.levels, &mut self.keccak);
    }

    /// The same for the waiting branches.
    fn hash_branches(&mut self) {
        Self::hash_waiting(&mut self.branches, &mut self.levels, &mut self.keccak);
    }

    /// Hashes `pending`'s nodes and writes their references into `levels`.
    fn hash_waiting(pending: &mut PendingHashes, levels: &mut [Level], keccak: &mut KeccakCount) {
        if pending.count == 0 {
            return;
        }
        let hashes = pending.hashes(keccak);
        for (&(li, n, at), hash) in pending.place[..pending.count].iter().zip(hashes) {
            let level = &mut levels[li];
            level.cells[at..at + 32].copy_from_slice(hash.as_slice());
            level.refs[n] = Some(NodeRef::hashed(hash));
        }
        pending.count = 0;
    }

    /// A closed branch whose hash was deferred, hashed now (where no parent
    /// in this builder will place it).
    fn settle(&mut self, closed: Closed) -> Closed {
        match closed {
            Closed::Branch { depth, branch_ref } if branch_ref.deferred_slot().is_some() => {
                Closed::Branch {
                    depth,
                    branch_ref: NodeRef::hashed(self.keccak.hash(&self.closed_rlp)),
                }
            }
            other => other,
        }
    }

    /// Places `sub` into the top level, then closes it.
    fn place_and_close(&mut self, sub: Closed, emit: &mut dyn FnMut(Vec<u8>, Bytes)) -> Closed {
        let top = self.active - 1;
        self.place(sub, top);
        self.close_top(emit)
    }

    /// Hashes the top level's branch, emits its record and pops it.
    fn close_top(&mut self, emit: &mut dyn FnMut(Vec<u8>, Bytes)) -> Closed {
        self.hash_leaves();
        let top = self.active - 1;
        if self.branches.waits_in(top) {
            self.hash_branches();
        }
        self.active -= 1;
        let prev = self.prev.unwrap_or_default();
        let level = &self.levels[top];
        self.buf.clear();
        encode_branch(&level.refs, None, &mut self.buf);
        // Below the root the hash is left to the parent's `place`, which
        // hashes sibling branches four at a time.
        let branch_ref = if level.depth > 0 && self.buf.len() >= 32 {
            self.closed_rlp.clear();
            self.closed_rlp.extend_from_slice(&self.buf);
            NodeRef::deferred(0)
        } else {
            NodeRef::of_rlp(&self.buf, &mut self.keccak)
        };
        // Exact capacity: the record becomes a `Bytes` without a shared header.
        let header = if level.depth == 0 {
            4 + branch_ref.as_slice().len()
        } else {
            3
        };
        let mut rec = Vec::with_capacity(level.cells.len() + header);
        if level.depth == 0 {
            rec.push(TAG_ROOT_BRANCH);
            put_ref(&mut rec, &branch_ref);
        } else {
            rec.push(TAG_BRANCH);
        }
        rec.extend_from_slice(&level.bitmap.to_be_bytes());
        rec.extend_from_slice(&level.cells);
        let mut path = Vec::with_capacity(self.base.len() + level.depth);
        path.extend_from_slice(&self.base);
        push_key_nibbles(&mut path, &prev, 0, level.depth);
        emit(path, Bytes::from(rec));
        Closed::Branch {
            depth: level.depth,
            branch_ref,
        }
    }

    /// Closes every open branch; returns the sub-trie's top node, if any.
    fn finish_sub(&mut self, emit: &mut dyn FnMut(Vec<u8>, Bytes)) -> Option<Closed> {
        self.prev?;
        let mut sub = Closed::Leaf;
        while self.active > 0 {
            sub = self.place_and_close(sub, emit);
        }
        Some(self.settle(sub))
    }

    /// Emits the root record for `top` (unless it is a root branch, already
    /// emitted) and returns the sub-trie's root hash.
    fn finish_root(&mut self, top: Option<Closed>, emit: &mut dyn FnMut(Vec<u8>, Bytes)) -> B256 {
        let Some(top) = top else { return EMPTY_ROOT };
        let prev = self.prev.unwrap_or_default();
        let mut rec = Vec::with_capacity(160);
        rec.push(TAG_ROOT_CELL);
        let r = match top {
            Closed::Leaf => {
                self.buf.clear();
                encode_key_leaf(&prev, 0, &self.leaf_value, &mut self.buf);
                let r = NodeRef::of_rlp(&self.buf, &mut self.keccak);
                put_leaf_cell(&mut rec, &prev, &self.leaf_kind, &r);
                r
            }
            Closed::Branch {
                depth: 0,
                branch_ref,
            } => return branch_ref.root_hash(&mut self.keccak),
            Closed::Branch { depth, branch_ref } => {
                let mut ext = Vec::with_capacity(depth);
                push_key_nibbles(&mut ext, &prev, 0, depth);
                self.buf.clear();
                encode_extension(&ext, &branch_ref, &mut self.buf);
                let r = NodeRef::of_rlp(&self.buf, &mut self.keccak);
                put_branch_cell(&mut rec, &ext, &branch_ref, &r);
                r
            }
        };
        emit(self.base.clone(), Bytes::copy_from_slice(&rec));
        r.root_hash(&mut self.keccak)
    }
}

/// Streaming bulk builder: feed accounts in increasing `keccak(address)`
/// order, each with its slots in increasing `keccak(slot)` order; every
/// record goes to the sink as soon as its subtree is complete.
pub struct BulkBuilder<F: FnMut(Vec<u8>, Bytes)> {
    sink: F,
    accounts: StackBuilder,
    storage: StorageTrieBuilder,
}

/// Builds one account's storage trie on its own: its records (paths under
/// the account's 64 nibbles) and its root. Storage tries of different
/// accounts are independent, so an importer builds them in any order, on
/// any thread, and hands only the roots to [`BulkBuilder`] in account order.
/// One builder is reused for many accounts (its buffers are kept).
pub struct StorageTrieBuilder {
    trie: StackBuilder,
}

impl Default for StorageTrieBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl StorageTrieBuilder {
    /// A builder with empty buffers.
    pub fn new() -> Self {
        Self {
            trie: StackBuilder::new(),
        }
    }

    /// Builds the storage trie of the account hashed to `hashed_address`
    /// (`address` names it in errors): `storage` yields
    /// `(keccak(slot), slot, value)` in increasing `keccak(slot)` order, zero
    /// values skipped. Each record goes to `sink`; returns the storage root
    /// ([`EMPTY_ROOT`] when no slot is non-zero).
    pub fn build(
        &mut self,
        hashed_address: B256,
        address: Address,
        storage: impl IntoIterator<Item = (B256, B256, U256)>,
        mut sink: impl FnMut(Vec<u8>, Bytes),
    ) -> Result<B256> {
        let mut storage = storage
            .into_iter()
            .filter(|(_, _, v)| !v.is_zero())
            .peekable();
        if storage.peek().is_none() {
            return Ok(EMPTY_ROOT);
        }
        let mut emit = |p: Vec<u8>, b: Bytes| sink(p, b);
        let sb = &mut self.trie;
        sb.reset(&hashed_address);
        for (hashed_slot, slot, value) in storage {
            sb.add(hashed_slot, LeafKind::Slot { slot }, &mut emit)
                .map_err(|e| match e {
                    CommitmentError::Unsorted { what } => CommitmentError::Unsorted {
                        what: format!("storage of {address}: {what}"),
                    },
                    other => other,
                })?;
            encode_storage_value(&value, &mut sb.leaf_value);
        }
        let top = sb.finish_sub(&mut emit);
        Ok(sb.finish_root(top, &mut emit))
    }

    /// keccak256 calls made so far (node hashing only).
    pub fn keccak_calls(&self) -> u64 {
        self.trie.keccak.calls
    }
}

impl<F: FnMut(Vec<u8>, Bytes)> BulkBuilder<F> {
    /// A builder that hands each `(nibble path, record)` to `sink`.
    pub fn new(sink: F) -> Self {
        Self {
            sink,
            accounts: StackBuilder::new(),
            storage: StorageTrieBuilder::new(),
        }
    }

    /// Adds the next account. `storage` yields `(keccak(slot), slot, value)`
    /// in increasing `keccak(slot)` order; zero values are skipped.
    pub fn add_account(
        &mut self,
        hashed_address: B256,
        address: Address,
        leaf: &AccountLeaf,
        storage: impl IntoIterator<Item = (B256, B256, U256)>,
    ) -> Result<()> {
        self.check_order(hashed_address, &address)?;
        let storage_root = self
            .storage
            .build(hashed_address, address, storage, &mut self.sink)?;
        self.add_account_with_storage_root(hashed_address, address, leaf, storage_root)
    }

    /// Adds the next account whose storage trie was built elsewhere (by a
    /// [`StorageTrieBuilder`], whose records the caller keeps): only the
    /// account trie's records come from this call.
    pub fn add_account_with_storage_root(
        &mut self,
        hashed_address: B256,
        address: Address,
        leaf: &AccountLeaf,
        storage_root: B256,
    ) -> Result<()> {
        self.check_order(hashed_address, &address)?;
        let sink = &mut self.sink;
        let mut emit = |p: Vec<u8>, b: Bytes| sink(p, b);
        self.accounts.add(
            hashed_address,
            LeafKind::Account {
                address,
                storage_root,
            },
            &mut emit,
        )?;
        encode_account(
            leaf.nonce,
            &leaf.balance,
            &storage_root,
            &leaf.code_hash,
            &mut self.accounts.leaf_value,
        );
        Ok(())
    }

    fn check_order(&self, hashed_address: B256, address: &Address) -> Result<()> {
        if self.accounts.prev.is_some_and(|p| hashed_address <= p) {
            return Err(CommitmentError::Unsorted {
                what: format!(
                    "account {address} (hashed {hashed_address}) is not after the previous account"
                ),
            });
        }
        Ok(())
    }

    /// Closes the trie, emits the remaining records and returns the root.
    pub fn finish(mut self) -> Result<B256> {
        let sink = &mut self.sink;
        let mut emit = |p: Vec<u8>, b: Bytes| sink(p, b);
        let top = self.accounts.finish_sub(&mut emit);
        Ok(self.accounts.finish_root(top, &mut emit))
    }

    /// keccak256 calls made so far (node hashing only).
    pub fn keccak_calls(&self) -> u64 {
        self.accounts.keccak.calls + self.storage.keccak_calls()
    }
}

/// One account of an in-memory state for [`build_from_sorted`].
#[derive(Clone, Debug)]
pub struct SortedAccount {
    /// `keccak(address)`.
    pub hashed_address: B256,
    /// The address.
    pub address: Address,
    /// Nonce, balance, code hash.
    pub leaf: AccountLeaf,
    /// `(keccak(slot), slot, value)` sorted by `keccak(slot)`.
    pub storage: Vec<(B256, B256, U256)>,
}

/// Builds the records of an in-memory state sorted by `hashed_address`.
/// With `parallel`, the 16 sub-tries under the root are built on the current
/// rayon pool and their records are handed to `sink` afterwards.
pub fn build_from_sorted(
    accounts: &[SortedAccount],
    parallel: bool,
    mut sink: impl FnMut(Vec<u8>, Bytes),
) -> Result<B256> {
    if let Some(i) = accounts
        .windows(2)
        .position(|w| w[0].hashed_address >= w[1].hashed_address)
    {
        return Err(CommitmentError::Unsorted {
            what: format!(
                "account {} (hashed {}) at index {} is not after hashed {}",
                accounts[i + 1].address,
                accounts[i + 1].hashed_address,
                i + 1,
                accounts[i].hashed_address
            ),
        });
    }
    if !parallel {
        let mut b = BulkBuilder::new(&mut sink);
        for a in accounts {
            b.add_account(
                a.hashed_address,
                a.address,
                &a.leaf,
                a.storage.iter().copied(),
            )?;
        }
        return b.finish();
    }
    let mut parts: Vec<(usize, &[SortedAccount])> = Vec::with_capacity(16);
    let mut rest = accounts;
    for n in 0..16u8 {
        let k = rest.partition_point(|a| a.hashed_address.0[0] >> 4 == n);
        if k > 0 {
            parts.push((n as usize, &rest[..k]));
        }
        rest = &rest[k..];
    }
    type Part = (usize, Option<Closed>, StackBuilder, Vec<(Vec<u8>, Bytes)>);
    let built: Vec<Result<Part>> = parts
        .into_par_iter()
        .map(|(n, part)| {
            let mut out: Vec<(Vec<u8>, Bytes)> = Vec::with_capacity(part.len() / 2 + 8);
            let mut b = BulkBuilder::new(|p, r| out.push((p, r)));
            for a in part {
                b.add_account(
                    a.hashed_address,
                    a.address,
                    &a.leaf,
                    a.storage.iter().copied(),
                )?;
            }
            let BulkBuilder {
                mut sink,
                mut accounts,
                ..
            } = b;
            let mut emit = |p: Vec<u8>, r: Bytes| sink(p, r);
            let top = accounts.finish_sub(&mut emit);
            Ok((n, top, accounts, out))
        })
        .collect();
    let mut parts: Vec<Part> = Vec::with_capacity(built.len());
    for p in built {
        let mut p = p?;
        for (path, rec) in std::mem::take(&mut p.3) {
            sink(path, rec);
        }
        parts.push(p);
    }
    let mut emit = |p: Vec<u8>, r: Bytes| sink(p, r);
    match parts.len() {
        0 => Ok(EMPTY_ROOT),
        1 => {
            let (_, top, mut b, _) = parts.pop().expect("one part");
            Ok(b.finish_root(top, &mut emit))
        }
        _ => {
            // The root branch: place each part's top node at its nibble.
            let mut root = StackBuilder::new();
            root.push_level(0);
            for (_, top, b, _) in &mut parts {
                let Some(top) = *top else { continue };
                root.prev = b.prev;
                root.leaf_kind = b.leaf_kind;
                std::mem::swap(&mut root.leaf_value, &mut b.leaf_value);
                root.place(top, 0);
                root.keccak.add(&b.keccak);
            }
            let top = root.close_top(&mut emit);
            Ok(root.finish_root(Some(top), &mut emit))
        }
    }
}
