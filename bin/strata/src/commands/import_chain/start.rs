//! The block a chain file continues from: the genesis given with
//! `--genesis` (written into a new datadir), or, without it, a block the
//! datadir holds — its recorded chain configuration (`init --chain`, or an
//! earlier import) and the header of the block the file's first block
//! builds on.

use std::collections::BTreeMap;
use std::path::Path;

use alloy_consensus::Header;
use alloy_primitives::B256;
use alloy_rlp::Decodable;
use strata_executor::{ChainSpec, GenesisBlock};
use strata_storage::{BLOCK_HASH_WINDOW, Options, ReadOnlyStateDb, Regime};

use super::chain_file::ChainFile;
use crate::CliError;
use crate::error::{ContinueProblem, ImportChainError};

/// Where the file's chain starts.
pub(crate) struct ChainStart {
    /// The chain's fork rules.
    pub(crate) spec: ChainSpec,
    /// The header of the block the file continues from.
    pub(crate) header: Header,
    /// Its hash.
    pub(crate) hash: B256,
    /// The genesis a new datadir is created from (`--genesis`); `None`
    /// when the start was read from the datadir.
    pub(crate) genesis: Option<GenesisBlock>,
    /// Number → hash of the blocks up to the start (its own included)
    /// that BLOCKHASH may ask for, as far as they are known (the datadir
    /// keeps the last 256): what the in-memory baseline serves.
    pub(crate) block_hashes: BTreeMap<u64, B256>,
}

impl ChainStart {
    /// The chain starts at `genesis`.
    pub(crate) fn genesis(genesis: GenesisBlock) -> Self {
        Self {
            spec: genesis.spec.clone(),
            header: genesis.header.clone(),
            hash: genesis.hash,
            block_hashes: BTreeMap::from([(genesis.header.number, genesis.hash)]),
            genesis: Some(genesis),
        }
    }

    /// The chain continues from the block of `datadir` that the first
    /// block of `chain` builds on: its header must be among those the
    /// datadir keeps (the last 256), and the datadir must record the
    /// chain's configuration.
    pub(crate) fn from_datadir(datadir: &Path, chain: &Path) -> Result<Self, CliError> {
        let need_genesis = |why: ContinueProblem| ImportChainError::CannotContinue {
            datadir: datadir.to_owned(),
            why,
        };
        let Some(first) = ChainFile::open(chain)?.next_block()? else {
            return Err(ImportChainError::EmptyChain {
                chain: chain.to_owned(),
            }
            .into());
        };
        let first = first.block;
        let db = ReadOnlyStateDb::open(datadir, Options::default())
            .map_err(CliError::storage(datadir))?;
        let config = db
            .chain_config()
            .map_err(CliError::storage(datadir))?
            .ok_or_else(|| need_genesis(ContinueProblem::NoChainConfig))?;
        let spec = ChainSpec::from_recorded(&config).map_err(|source| {
            ImportChainError::RecordedConfig {
                datadir: datadir.to_owned(),
                source,
            }
        })?;
        if spec
            .pending_terminal_total_difficulty()
            .is_some_and(|ttd| !ttd.is_zero())
        {
            return Err(need_genesis(ContinueProblem::MergesAtDifficulty).into());
        }
        let head = db
            .last_block()
            .map_err(CliError::storage(datadir))?
            .ok_or_else(|| need_genesis(ContinueProblem::NoBlock))?;
        let parent =
            first
                .number()
                .checked_sub(1)
                .ok_or_else(|| ImportChainError::NeedsGenesis {
                    chain: chain.to_owned(),
                })?;
        if parent > head {
            return Err(ImportChainError::Gap {
                chain: chain.to_owned(),
                first: first.number(),
                datadir: datadir.to_owned(),
                head,
            }
            .into());
        }
        let reader = db
            .reader(Regime::Exec)
            .map_err(CliError::storage(datadir))?;
        let rlp = reader
            .block_header(parent)
            .map_err(CliError::storage(datadir))?
            .ok_or_else(|| need_genesis(ContinueProblem::NoParentHeader { parent }))?;
        let header =
            Header::decode(&mut rlp.as_ref()).map_err(|source| ImportChainError::StoredHeader {
                datadir: datadir.to_owned(),
                block: parent,
                source,
            })?;
        let hash = header.hash_slow();
        if hash != first.header().parent_hash {
            return Err(ImportChainError::OtherParent {
                chain: chain.to_owned(),
                first: first.number(),
                parent_hash: first.header().parent_hash,
                datadir: datadir.to_owned(),
                parent,
                hash,
            }
            .into());
        }
        let mut block_hashes = BTreeMap::from([(parent, hash)]);
        for number in parent.saturating_sub(BLOCK_HASH_WINDOW - 1)..parent {
            if let Some(hash) = reader
                .block_hash(number)
                .map_err(CliError::storage(datadir))?
            {
                block_hashes.insert(number, hash);
            }
        }
        Ok(Self {
            spec,
            header,
            hash,
            genesis: None,
            block_hashes,
        })
    }
}
