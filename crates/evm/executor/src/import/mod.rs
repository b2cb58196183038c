//! A chain imported into a store: [`ChainImporter`] takes a chain's blocks
//! in order and executes and commits each one (its root checked against
//! its header), keeping what the consensus rules need of the blocks before
//! it (the parent, the ancestors the ommer rules read, the total difficulty
//! that decides the merge). Blocks the store already holds, when an import
//! resumes, are checked to be the same blocks and skipped.
//! [`SendersAhead`] recovers the next blocks' senders on a thread of its own
//! while the current block executes.
//!
//! ```no_run
//! use strata_executor::{ChainImporter, DecodedBlock, ExecuteOptions, GenesisBlock, Imported};
//! use strata_storage::{Options, StateDb};
//!
//! # fn blocks() -> Vec<DecodedBlock> { Vec::new() }
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let json = std::fs::read_to_string("genesis.json")?;
//! let genesis = GenesisBlock::new(&serde_json::from_str(&json)?)?;
//! let db = StateDb::open("datadir", Options::default())?;
//! let mut importer = ChainImporter::from_genesis(&db, &genesis)?;
//! for block in blocks() {
//!     match importer.import(block, ExecuteOptions::default())? {
//!         Imported::Executed(executed) => println!("block {} root {}", executed.number, executed.root),
//!         Imported::Known => {}
//!     }
//! }
//! # Ok(())
//! # }
//! ```

mod ahead;
mod error;

use std::collections::VecDeque;

use alloy_consensus::Header;
use alloy_primitives::{B256, U256};
use strata_chainspec::{ChainSpec, GenesisBlock};
use strata_storage::{GenesisName, Regime, StateDb};

use crate::block::DecodedBlock;
use crate::consensus::Ancestor;
use crate::execute::{ExecuteOptions, ExecutedBlock, execute_block_with};

pub use ahead::{AheadError, SendersAhead};
pub use error::ImportError;

/// Blocks kept as ancestors: the parent and six more for the ommer rules.
const ANCESTORS: usize = 8;

/// The block an import continues from: block 0 of a genesis, or a block a
/// store already holds (its header as the chain has it).
#[derive(Clone, Debug)]
pub struct ChainAnchor {
    /// Its header.
    pub header: Header,
    /// Its hash.
    pub hash: B256,
}

/// What [`ChainImporter::import`] did with a block.
#[derive(Debug)]
pub enum Imported {
    /// The store already held it (an import resumed past it): checked to be
    /// the same block, nothing executed.
    Known,
    /// Executed and committed.
    Executed(Box<ExecutedBlock>),
}

/// How [`ChainImporter::from_genesis`] found the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenesisStart {
    /// The store was empty: the genesis state was written (its root checked
    /// against the genesis header's).
    Written,
    /// The store holds this genesis, and blocks up to `last`.
    Held {
        /// The store's last block.
        last: u64,
    },
}

/// A chain's blocks executed and committed in order over one store.
pub struct ChainImporter<'db> {
    db: &'db StateDb,
    spec: ChainSpec,
    anchor: ChainAnchor,
    /// The store's last block when the import began: blocks up to it are
    /// checked, not executed.
    resumes_after: u64,
    /// The blocks imported, newest first, with their total difficulty.
    recent: VecDeque<(DecodedBlock, U256)>,
    /// The last block taken: number, hash, total difficulty.
    parent: (u64, B256, U256),
    genesis_start: Option<GenesisStart>,
}

impl<'db> ChainImporter<'db> {
    /// An import into `db` of the chain that continues from `anchor` under
    /// `spec`: it resumes after the store's last block (or after the anchor,
    /// for a store that holds no block past it). `anchor_difficulty` is the
    /// chain's total difficulty at the anchor (zero past the merge, and for
    /// a genesis its own difficulty).
    pub fn new(
        db: &'db StateDb,
        spec: ChainSpec,
        anchor: ChainAnchor,
        anchor_difficulty: U256,
    ) -> ChainImporter<'db> {
        let resumes_after = db
            .last_block()
            .unwrap_or(anchor.header.number)
            .max(anchor.header.number);
        ChainImporter {
            db,
            spec,
            parent: (anchor.header.number, anchor.hash, anchor_difficulty),
            anchor,
            resumes_after,
            recent: VecDeque::new(),
            genesis_start: None,
        }
    }

    /// An import of the chain of `genesis`: into an empty store, the
    /// genesis state is written first (its root checked against the
    /// header's, the chain's configuration recorded); a store that already
    /// holds blocks must hold this genesis, and the import resumes after its
    /// last block.
    pub fn from_genesis(
        db: &'db StateDb,
        genesis: &GenesisBlock,
    ) -> Result<ChainImporter<'db>, ImportError> {
        let start = write_or_check_genesis(db, genesis)?;
        let anchor = ChainAnchor {
            header: genesis.header.clone(),
            hash: genesis.hash,
        };
        let mut importer =
            ChainImporter::new(db, genesis.spec.clone(), anchor, genesis.header.difficulty);
        importer.genesis_start = Some(start);
        Ok(importer)
    }

    /// How [`ChainImporter::from_genesis`] found the store (`None` for an
    /// import made with [`ChainImporter::new`]).
    pub fn genesis_start(&self) -> Option<GenesisStart> {
        self.genesis_start
    }

    /// The store's last block when the import began: the blocks up to it
    /// are checked and skipped.
    pub fn resumes_after(&self) -> u64 {
        self.resumes_after
    }

    /// The number and hash of the last block taken (the anchor before the
    /// first).
    pub fn parent(&self) -> (u64, B256) {
        (self.parent.0, self.parent.1)
    }

    /// The fork rules in force (with the merge block set once the chain
    /// reached its terminal total difficulty).
    pub fn spec(&self) -> &ChainSpec {
        &self.spec
    }

    /// Takes the next block of the chain: checks it follows the last one,
    /// then either checks it is the block the store holds (an import that
    /// resumed past it) or executes and commits it with `options` (whose
    /// senders and access list, when given, must be this block's). A block
    /// refused leaves the store at the block before it.
    pub fn import(
        &mut self,
        block: DecodedBlock,
        options: ExecuteOptions<'_>,
    ) -> Result<Imported, ImportError> {
        let number = block.number();
        let (parent_number, parent_hash, parent_difficulty) = self.parent;
        if number != parent_number + 1 {
            return Err(ImportError::OutOfOrder {
                number,
                expected: parent_number + 1,
            });
        }
        let difficulty = parent_difficulty + block.header().difficulty;
        let imported = if number <= self.resumes_after {
            self.check_known(&block, parent_hash)?;
            Imported::Known
        } else {
            if let Some(ttd) = self.spec.pending_terminal_total_difficulty()
                && parent_difficulty >= ttd
            {
                self.spec = self.spec.clone().with_merge_at(number);
            }
            let ancestors = self.ancestors();
            let executed = execute_block_with(self.db, &self.spec, &block, &ancestors, options)
                .map_err(|source| ImportError::Refused(Box::new(source)))?;
            Imported::Executed(Box::new(executed))
        };
        self.parent = (number, block.hash, difficulty);
        self.recent.push_front((block, difficulty));
        self.recent.truncate(ANCESTORS);
        Ok(imported)
    }

    /// A block the store already holds must be this one: the same parent,
    /// the same hash where the store still has it, the same root at its
    /// head.
    fn check_known(&self, block: &DecodedBlock, parent_hash: B256) -> Result<(), ImportError> {
        let number = block.number();
        let stored = self
            .db
            .reader(Regime::Exec)
            .block_hash(number)
            .map_err(ImportError::Store)?;
        let differs = block.header().parent_hash != parent_hash
            || stored.is_some_and(|hash| hash != block.hash)
            || (number == self.resumes_after && self.db.root() != block.header().state_root);
        if differs {
            return Err(ImportError::OtherBlock {
                number,
                hash: block.hash,
            });
        }
        Ok(())
    }

    /// The parent first, then older blocks, down to the anchor.
    fn ancestors(&self) -> Vec<Ancestor<'_>> {
        let mut list: Vec<Ancestor<'_>> = self
            .recent
            .iter()
            .map(|(block, _)| Ancestor {
                hash: block.hash,
                header: block.header(),
                ommers: &block.block.body.ommers,
            })
            .collect();
        if list.len() < ANCESTORS {
            list.push(Ancestor {
                hash: self.anchor.hash,
                header: &self.anchor.header,
                ommers: &[],
            });
        }
        list
    }
}

/// Writes `genesis` into an empty store (root checked against alloy-trie's,
/// the chain's configuration recorded), or checks that the store's blocks
/// are this genesis's chain.
fn write_or_check_genesis(
    db: &StateDb,
    genesis: &GenesisBlock,
) -> Result<GenesisStart, ImportError> {
    let genesis_number = genesis.header.number;
    let Some(last) = db.last_block() else {
        let root = db
            .init_genesis(
                &genesis.alloc,
                GenesisName::HashAndHeader(genesis.hash, genesis.header_rlp()),
            )
            .map_err(ImportError::Store)?;
        if root != genesis.header.state_root {
            return Err(ImportError::GenesisRoot {
                strata: root,
                alloy_trie: genesis.header.state_root,
            });
        }
        db.set_chain_config(&genesis.recorded_config())
            .map_err(ImportError::Store)?;
        return Ok(GenesisStart::Written);
    };
    if last < genesis_number {
        return Err(ImportError::BeforeGenesis {
            last,
            genesis: genesis_number,
        });
    }
    let stored = db
        .reader(Regime::Exec)
        .block_hash(genesis_number)
        .map_err(ImportError::Store)?;
    if stored.is_some_and(|hash| hash != genesis.hash)
        || (last == genesis_number && db.root() != genesis.header.state_root)
    {
        return Err(ImportError::OtherGenesis {
            hash: genesis.hash,
            root: genesis.header.state_root,
        });
    }
    Ok(GenesisStart::Held { last })
}
