//! Merkle proofs (`eth_getProof`) built from the stored records: the RLP of
//! every node on a key's path, from the trie root down, for the account and
//! for each requested slot in the account's storage trie.
//!
//! The records keep every child's reference, so a branch node is encoded
//! from its record alone and an extension from its cell; a leaf is encoded
//! from its hashed key and its value, read from the state. Each leaf's
//! encoding is checked against the reference its record keeps, so a proof
//! never carries a node the trie does not hold. Absent keys get the nodes
//! down to where their path leaves the trie (an empty child, a diverging
//! extension, or another key's leaf).

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};

use crate::error::{CommitmentError, corrupted};
use crate::nibbles::{nibble, unpack_nibbles};
use crate::node::{
    EMPTY_ROOT, KeccakCount, NodeRef, encode_account, encode_branch, encode_extension,
    encode_key_leaf, encode_storage_value,
};
use crate::record::{Cell, LeafKind, Record, decode_record};
use crate::source::{AccountLeaf, BranchSource, StateSource};

/// An account's proof and its storage proofs, in the shape of an
/// `eth_getProof` response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountProof {
    /// The account.
    pub address: Address,
    /// Its nonce, balance and code hash; `None` when it does not exist.
    pub account: Option<AccountLeaf>,
    /// The root of its storage trie (the empty root for an absent account
    /// or empty storage).
    pub storage_root: B256,
    /// The RLP of each node from the state root down the account's path.
    pub proof: Vec<Bytes>,
    /// One proof per requested slot, in request order.
    pub storage: Vec<SlotProof>,
}

/// One storage slot's proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotProof {
    /// The slot as requested (unhashed).
    pub slot: B256,
    /// Its value (zero when unset).
    pub value: U256,
    /// The RLP of each node from the storage root down the slot's path.
    pub proof: Vec<Bytes>,
}

/// The proof of `address` and of each of `slots` in its storage, from the
/// records `branches` holds and the values `state` holds (which must be the
/// same committed state).
pub fn prove(
    branches: &dyn BranchSource,
    state: &dyn StateSource,
    address: &Address,
    slots: &[B256],
) -> Result<AccountProof, CommitmentError> {
    let hashed = keccak256(address);
    let account = state
        .account(address)
        .map_err(|source| CommitmentError::State {
            key: format!("account {address}"),
            source,
        })?;
    let mut storage_root = EMPTY_ROOT;
    let proof = prove_path(branches, &[], &hashed, &mut |kind| match kind {
        LeafKind::Account {
            address: leaf_address,
            storage_root: root,
        } => {
            let leaf = if leaf_address == *address {
                storage_root = root;
                account
            } else {
                // Another account's leaf ends an absent key's path.
                read_account(state, &leaf_address)?
            };
            let leaf = leaf.ok_or_else(|| {
                corrupted(
                    &[],
                    format!("account leaf {leaf_address} is in the trie but not in the state"),
                )
            })?;
            let mut value = Vec::with_capacity(112);
            encode_account(
                leaf.nonce,
                &leaf.balance,
                &root,
                &leaf.code_hash,
                &mut value,
            );
            Ok(value)
        }
        LeafKind::Slot { .. } => Err(corrupted(&[], "a storage leaf in the account trie")),
    })?;
    if account.is_none() {
        storage_root = EMPTY_ROOT;
    }
    let sub_trie = unpack_nibbles(hashed.as_slice());
    let mut storage = Vec::with_capacity(slots.len());
    for slot in slots {
        let value = read_slot(state, address, slot)?;
        let proof = if storage_root == EMPTY_ROOT {
            Vec::new()
        } else {
            prove_path(
                branches,
                &sub_trie,
                &keccak256(slot),
                &mut |kind| match kind {
                    LeafKind::Slot { slot: leaf_slot } => {
                        let value = read_slot(state, address, &leaf_slot)?;
                        if value.is_zero() {
                            return Err(corrupted(
                                &sub_trie,
                                format!(
                                    "slot leaf {leaf_slot} is in the trie but zero in the state"
                                ),
                            ));
                        }
                        let mut out = Vec::with_capacity(33);
                        encode_storage_value(&value, &mut out);
                        Ok(out)
                    }
                    LeafKind::Account { .. } => {
                        Err(corrupted(&sub_trie, "an account leaf in a storage trie"))
                    }
                },
            )?
        };
        storage.push(SlotProof {
            slot: *slot,
            value,
            proof,
        });
    }
    Ok(AccountProof {
        address: *address,
        account,
        storage_root,
        proof,
        storage,
    })
}

fn read_account(
    state: &dyn StateSource,
    address: &Address,
) -> Result<Option<AccountLeaf>, CommitmentError> {
    state
        .account(address)
        .map_err(|source| CommitmentError::State {
            key: format!("account {address}"),
            source,
        })
}

fn read_slot(
    state: &dyn StateSource,
    address: &Address,
    slot: &B256,
) -> Result<U256, CommitmentError> {
    let value = state
        .storage(address, slot)
        .map_err(|source| CommitmentError::State {
            key: format!("slot {slot} of {address}"),
            source,
        })?;
    Ok(value.unwrap_or_default())
}

/// The nodes on `key`'s path through the sub-trie rooted at nibble path
/// `root`; `leaf_value` gives a leaf's value bytes from its kind.
fn prove_path(
    branches: &dyn BranchSource,
    root: &[u8],
    key: &B256,
    leaf_value: &mut dyn FnMut(LeafKind) -> Result<Vec<u8>, CommitmentError>,
) -> Result<Vec<Bytes>, CommitmentError> {
    let mut nodes = Vec::new();
    let mut path = root.to_vec();
    let Some(mut record) = load(branches, &path)? else {
        return Ok(nodes);
    };
    loop {
        // The cell the key continues into, and its position in the key.
        let (cell, depth) = match record {
            Record::RootCell(cell) => (cell, 0),
            Record::Branch { mut children, .. } => {
                let mut refs: [Option<NodeRef>; 16] = [None; 16];
                let present = children.present();
                for (n, slot) in refs.iter_mut().enumerate() {
                    *slot = children.node_ref(n, &path)?;
                    if slot.is_none() && present & (1 << n) != 0 {
                        return Err(corrupted(&path, "a child without a stored reference"));
                    }
                }
                let mut node = Vec::new();
                encode_branch(&refs, None, &mut node);
                nodes.push(Bytes::from(node));
                let depth = path.len() - root.len();
                let next = nibble(key, depth);
                path.push(next);
                let cell = children.take(next as usize, &path[..path.len() - 1])?;
                (cell, depth + 1)
            }
        };
        match cell {
            Cell::Empty => return Ok(nodes),
            Cell::Leaf(leaf) => {
                let value = leaf_value(leaf.kind)?;
                let mut node = Vec::with_capacity(value.len() + 40);
                encode_key_leaf(&leaf.hashed, depth, &value, &mut node);
                let encoded = NodeRef::of_rlp(&node, &mut KeccakCount::default());
                if leaf.node_ref.is_some_and(|stored| stored != encoded) {
                    return Err(corrupted(
                        &path,
                        "a leaf whose value does not hash to its stored reference",
                    ));
                }
                nodes.push(Bytes::from(node));
                return Ok(nodes);
            }
            Cell::Branch(cell) => {
                if !cell.ext.is_empty() {
                    let mut node = Vec::new();
                    encode_extension(&cell.ext, &cell.branch_ref, &mut node);
                    nodes.push(Bytes::from(node));
                    let follows = cell
                        .ext
                        .iter()
                        .enumerate()
                        .all(|(i, &n)| depth + i < 64 && nibble(key, depth + i) == n);
                    if !follows {
                        return Ok(nodes);
                    }
                    path.extend_from_slice(&cell.ext);
                }
                record = load(branches, &path)?
                    .ok_or_else(|| corrupted(&path, "a branch cell whose record is missing"))?;
                if matches!(record, Record::RootCell(_)) {
                    return Err(corrupted(&path, "a root cell below a branch"));
                }
            }
        }
    }
}

/// The decoded record at `path`, if one is stored.
fn load(branches: &dyn BranchSource, path: &[u8]) -> Result<Option<Record>, CommitmentError> {
    let bytes = branches
        .branch(path)
        .map_err(|source| CommitmentError::Branch {
            path: crate::error::path_hex(path),
            source,
        })?;
    bytes.map(|bytes| decode_record(path, &bytes)).transpose()
}
