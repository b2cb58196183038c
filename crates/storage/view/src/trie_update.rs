//! Where a block's writes meet the commitment: the keys a set of writes
//! makes the trie revisit ([`trie_update`]), and the records a state read
//! through an overlay has along those keys' paths ([`records_at`]: unwind,
//! reads and proofs at an older block, verify's undo check).

use alloy_primitives::Address;
use strata_commitment::{ComputeOptions, RecordWrite, TrieUpdate, compute_root};
use strata_types::keys::split_storage_key;
use strata_types::{Domain, Head};

use crate::error::{ReadError, Result};
use crate::overlay::Overlay;
use crate::reader::StateReader;
use crate::sources::OverlayState;

/// The keys the commitment must revisit.
pub fn trie_update(overlay: &Overlay) -> TrieUpdate {
    let mut accounts: Vec<Address> = overlay
        .entries(Domain::Account)
        .keys()
        .filter_map(|k| strata_types::keys::address_key(k))
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

/// The commitment records that differ between a snapshot and the state
/// `state` reads (the snapshot with `undo` over it, at block `head`) along
/// the paths `undo` touches, computed over `branches` (the snapshot's
/// records); fails unless the root is `head`'s. Nothing is written.
pub fn records_at(
    branches: &dyn strata_commitment::BranchSource,
    state: StateReader,
    undo: &Overlay,
    head: Head,
    parallel_threshold: usize,
) -> Result<Vec<RecordWrite>> {
    let update = trie_update(undo);
    let state = OverlayState::new(state);
    let options = ComputeOptions { parallel_threshold };
    let output = compute_root(&update, branches, &state, &options).map_err(|source| {
        ReadError::Commitment {
            block: head.block,
            source,
        }
    })?;
    if output.root != head.root {
        return Err(ReadError::RootMismatch {
            block: head.block,
            stored: head.root,
            computed: output.root,
        });
    }
    Ok(output.writes)
}
