//! Merkle proofs (`eth_getProof`) from a [`StateReader`]: at the head
//! from the stored commitment records, at an older block over the records
//! recomputed along the paths the later blocks touched; and the check that
//! an older block's rebuilt state has that block's root.

use alloy_primitives::{Address, B256};
use strata_commitment::{AccountProof, BranchSource};
use strata_types::Regime;

use crate::error::{ReadError, Result};
use crate::reader::StateReader;
use crate::sources::{OverlayState, ReaderBranches, RecordsOver};
use crate::trie_update::records_at;

impl StateReader {
    /// The Merkle proof of `address` and of each of `slots` in its storage
    /// against this block's state root (`eth_getProof`): the RLP of every
    /// node on each key's path, built from the stored commitment records,
    /// for present and absent keys alike. Served for the last committed
    /// block: a reader at an older block or a block writer's reader (its
    /// records are not computed yet) gets [`ReadError::ProofUnavailable`].
    pub fn proof(&self, address: &Address, slots: &[B256]) -> Result<AccountProof> {
        if self.older_block().is_some() && !self.is_deep() {
            return Err(ReadError::ProofUnavailable(
                "a reader at an older block has no commitment records of its own; \
                 StateDb::proof_at computes them",
            ));
        }
        if self.overlay().is_some() && self.older_block().is_none() {
            return Err(ReadError::ProofUnavailable(
                "a block writer's reader has no commitment records for its writes yet",
            ));
        }
        let branches = ReaderBranches::new(self.clone());
        let state = OverlayState::new(self.clone());
        strata_commitment::prove(&branches, &state, address, slots).map_err(|source| {
            ReadError::Commitment {
                block: self.block().unwrap_or(0),
                source,
            }
        })
    }

    /// The proof of `address` and `slots` at this reader's block: [`proof`]
    /// at the last block; for a reader at an older block, over the records
    /// recomputed along the paths the later blocks touched (root checked,
    /// nothing written) from the head's records, which `head_branches`
    /// serves from a reader of the head.
    ///
    /// [`proof`]: StateReader::proof
    pub fn proof_recomputed<B: BranchSource>(
        &self,
        address: &Address,
        slots: &[B256],
        head_branches: impl FnOnce(StateReader) -> B,
        parallel_threshold: usize,
    ) -> Result<AccountProof> {
        let (Some(at), Some(undo), false) = (self.older_block(), self.overlay(), self.is_deep())
        else {
            return self.proof(address, slots);
        };
        let head = self.head_commitment_reader();
        let writes = records_at(
            &head_branches(head.clone()),
            self.with_regime(Regime::Commitment),
            undo,
            at,
            parallel_threshold,
        )?;
        let branches = RecordsOver::new(writes, head);
        let state = OverlayState::new(self.clone());
        strata_commitment::prove(&branches, &state, address, slots).map_err(|source| {
            ReadError::Commitment {
                block: at.block,
                source,
            }
        })
    }

    /// For a reader at an older block: recomputes the commitment of the
    /// state it reads along the paths its undo overlay touches, from the
    /// head's records (`head_branches`), and fails with
    /// [`ReadError::RootMismatch`] unless that is the root the block had.
    /// What the undo data rebuilds is then the state of that root, whatever
    /// the journal it came from held. Nothing for a reader of the head.
    pub fn check_rebuilt<B: BranchSource>(
        &self,
        head_branches: impl FnOnce(StateReader) -> B,
        parallel_threshold: usize,
    ) -> Result<()> {
        let (Some(at), Some(undo), false) = (self.older_block(), self.overlay(), self.is_deep())
        else {
            return Ok(());
        };
        let head = self.head_commitment_reader();
        records_at(
            &head_branches(head),
            self.with_regime(Regime::Commitment),
            undo,
            at,
            parallel_threshold,
        )
        .map(drop)
    }
}
