//! The blocks of one case as a tree over one store: the store follows one
//! branch (the canonical one), and a block whose parent is on another
//! branch first moves the store there — unwinding to the common ancestor
//! and executing the other branch's blocks — as a client reorganises.

use std::collections::HashMap;

use alloy_consensus::Header;
use alloy_hardforks::EthereumHardforks;
use alloy_primitives::{B256, U256};
use strata_storage::StateDb;

use super::RunOptions;
use crate::ChainSpec;
use crate::block::DecodedBlock;
use crate::consensus::Ancestor;
use crate::error::{ExecError, InvalidBlock};
use crate::execute::{ExecuteOptions, ExecutedBlock, execute_block_with};

/// How many ancestors the ommer rules look at.
const ANCESTORS: usize = 7;

/// A known (executed and accepted) block.
struct Known {
    header: Header,
    ommers: Vec<Header>,
    /// The block itself (none for the genesis), to execute it again after a reorg.
    block: Option<DecodedBlock>,
    /// Total difficulty up to and including this block.
    total_difficulty: U256,
    /// The block the merge happened at on this branch, if it has.
    merged_at: Option<u64>,
}

/// Every accepted block of a case, and the branch the store is on.
pub(crate) struct Chain<'a> {
    db: &'a StateDb,
    spec: &'a ChainSpec,
    options: RunOptions,
    known: HashMap<B256, Known>,
    /// The store's branch: `canonical[n]` is the hash of its block `n`.
    canonical: Vec<B256>,
}

impl<'a> Chain<'a> {
    /// A chain over `db`, which holds the genesis `genesis` (hash `hash`).
    pub(crate) fn new(
        db: &'a StateDb,
        spec: &'a ChainSpec,
        options: RunOptions,
        genesis: Header,
        hash: B256,
    ) -> Self {
        let known = Known {
            total_difficulty: genesis.difficulty,
            header: genesis,
            ommers: Vec::new(),
            block: None,
            merged_at: None,
        };
        Self {
            db,
            spec,
            options,
            known: HashMap::from([(hash, known)]),
            canonical: vec![hash],
        }
    }

    /// The hash of the store's head.
    pub(crate) fn head(&self) -> B256 {
        *self.canonical.last().expect("the genesis is always there")
    }

    /// The header of a known block.
    pub(crate) fn header(&self, hash: &B256) -> Option<&Header> {
        self.known.get(hash).map(|known| &known.header)
    }

    /// Executes `block` on top of its parent, moving the store to the
    /// parent's branch first if needed; on success it becomes the head.
    pub(crate) fn import(&mut self, block: DecodedBlock) -> Result<ExecutedBlock, ExecError> {
        let parent = block.header().parent_hash;
        if !self.known.contains_key(&parent) {
            return Err(ExecError::Invalid {
                number: block.number(),
                hash: block.hash,
                reason: Box::new(InvalidBlock::UnknownParent(parent)),
            });
        }
        self.move_to(parent)?;
        self.execute_on_head(block)
    }

    /// Moves the store to the branch ending at `target` (a known block):
    /// unwinds to the common ancestor and executes the branch's blocks.
    pub(crate) fn move_to(&mut self, target: B256) -> Result<(), ExecError> {
        if self.head() == target {
            return Ok(());
        }
        let mut path = Vec::new();
        let mut cursor = target;
        loop {
            let known = self.known.get(&cursor).ok_or_else(|| ExecError::Database {
                number: 0,
                message: format!("block {cursor} is not known"),
            })?;
            let number = known.header.number as usize;
            if self.canonical.get(number) == Some(&cursor) {
                break;
            }
            path.push(cursor);
            cursor = known.header.parent_hash;
        }
        let ancestor = self.known[&cursor].header.number;
        if ancestor + 1 < self.canonical.len() as u64 {
            self.db
                .unwind_to(ancestor)
                .map_err(|source| ExecError::Store {
                    number: ancestor,
                    source: Box::new(source),
                })?;
            self.canonical.truncate(ancestor as usize + 1);
        }
        for hash in path.into_iter().rev() {
            let block = self.known[&hash]
                .block
                .clone()
                .expect("only the genesis has no block, and it is canonical");
            self.execute_on_head(block)?;
        }
        Ok(())
    }

    fn execute_on_head(&mut self, block: DecodedBlock) -> Result<ExecutedBlock, ExecError> {
        let parent_hash = self.head();
        let parent = &self.known[&parent_hash];
        let merged_at = parent.merged_at.or_else(|| {
            let ttd = self.spec.pending_terminal_total_difficulty()?;
            (parent.total_difficulty >= ttd).then_some(block.number())
        });
        let spec = match merged_at {
            Some(number) if !self.spec.is_paris_active_at_block(number) => {
                std::borrow::Cow::Owned(self.spec.with_merge_at(number))
            }
            _ => std::borrow::Cow::Borrowed(self.spec),
        };
        let total_difficulty = parent.total_difficulty + block.header().difficulty;
        let executed = {
            let ancestors = self.ancestors(parent_hash);
            execute_block_with(
                self.db,
                &spec,
                &block,
                &ancestors,
                ExecuteOptions {
                    state: self.options.state,
                    transaction_workers: self.options.transaction_workers,
                    ..ExecuteOptions::default()
                },
            )?
        };
        self.canonical.push(block.hash);
        self.known.insert(
            block.hash,
            Known {
                header: block.block.header.clone(),
                ommers: block.block.body.ommers.clone(),
                block: Some(block),
                total_difficulty,
                merged_at,
            },
        );
        Ok(executed)
    }

    /// The block `from` and its ancestors, newest first, up to seven.
    fn ancestors(&self, from: B256) -> Vec<Ancestor<'_>> {
        let mut out = Vec::with_capacity(ANCESTORS);
        let mut cursor = from;
        while out.len() < ANCESTORS {
            let Some(known) = self.known.get(&cursor) else {
                break;
            };
            out.push(Ancestor {
                hash: cursor,
                header: &known.header,
                ommers: &known.ommers,
            });
            if known.header.number == 0 {
                break;
            }
            cursor = known.header.parent_hash;
        }
        out
    }
}
