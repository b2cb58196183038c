//! One BlockchainTests case over a fresh store: the genesis, every block
//! executed (the invalid ones refused), then the head, the state root and
//! every account of the post state read back through strata.

use super::RunOptions;
use std::path::Path;

use alloy_consensus::Header;
use alloy_primitives::{B256, KECCAK256_EMPTY, keccak256};
use alloy_rlp::Decodable;
use serde::Deserialize;
use strata_storage::genesis::{GenesisAlloc, alloc_from_value};
use strata_storage::{Durability, Options, Regime, StateDb};

use super::fixture::{Case, hex_bytes};
use crate::ChainSpec;
use crate::ChainSpecError;
use crate::block::DecodedBlock;
use crate::error::ExecError;

use super::chain::Chain;

/// How one case ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaseOutcome {
    /// Every check held.
    Passed {
        /// Blocks executed and accepted.
        accepted: usize,
        /// The checks that refused the blocks marked invalid, in order.
        refused_by: Vec<&'static str>,
    },
    /// A check failed: the first difference.
    Failed {
        /// The block (position in the case's list) where it went wrong, if any.
        block: Option<usize>,
        /// What differed.
        message: String,
    },
    /// The case could not be run; counted and reported with its reason.
    Skipped {
        /// Why.
        reason: String,
    },
}

/// Store settings for one small case: no fsync per block (a case's store
/// is thrown away), small caches, no background threads.
pub fn case_options() -> Options {
    Options::default()
        .with_durability(Durability::EveryN(u64::MAX))
        .with_cache_bytes(1 << 20)
        .with_value_cache_bytes(1 << 20)
        .with_db_cache_bytes(1 << 20)
        .with_background_maintenance(false)
        .with_read_metrics(false)
        .with_memory_budget_bytes(64 << 20)
}

/// Runs `case` over a fresh store in a temporary folder inside `scratch`
/// (removed when the case ends), each block executed as `options` say.
pub fn run_case(case: &Case, scratch: &Path, options: RunOptions) -> CaseOutcome {
    match run(case, scratch, options) {
        Ok(outcome) => outcome,
        Err(failure) => failure.into_outcome(),
    }
}

/// A failure on the way, with the block it happened at.
struct Failure {
    block: Option<usize>,
    message: String,
}

impl Failure {
    fn at(block: usize, message: impl Into<String>) -> Self {
        Self {
            block: Some(block),
            message: message.into(),
        }
    }

    fn case(message: impl Into<String>) -> Self {
        Self {
            block: None,
            message: message.into(),
        }
    }

    fn into_outcome(self) -> CaseOutcome {
        CaseOutcome::Failed {
            block: self.block,
            message: self.message,
        }
    }
}

fn run(case: &Case, scratch: &Path, options: RunOptions) -> Result<CaseOutcome, Failure> {
    let spec = match ChainSpec::from_test_network(&case.network) {
        Ok(spec) => spec,
        Err(error @ ChainSpecError::Unsupported { .. }) => {
            return Ok(CaseOutcome::Skipped {
                reason: error.to_string(),
            });
        }
        Err(error) => return Err(Failure::case(error.to_string())),
    };
    let spec = match case.config.as_ref().and_then(|c| c.get("blobSchedule")) {
        Some(schedule) => spec
            .with_fixture_blob_schedule(schedule)
            .map_err(|error| Failure::case(format!("config: {error}")))?,
        None => spec,
    };
    let alloc = alloc_from_value(&case.pre).map_err(|e| Failure::case(format!("pre: {e}")))?;
    let genesis = genesis_header(case)?;
    let genesis_hash = genesis.hash_slow();
    if genesis_hash != case.genesis_block_header.hash {
        return Err(Failure::case(format!(
            "genesis hash {genesis_hash} from genesisRLP, fixture says {}",
            case.genesis_block_header.hash
        )));
    }
    let dir = tempfile::tempdir_in(scratch).map_err(|e| Failure::case(format!("temp dir: {e}")))?;
    let db = StateDb::open(dir.path(), case_options())
        .map_err(|e| Failure::case(format!("open: {e}")))?;
    let root = db
        .init_genesis(
            &alloc,
            strata_storage::GenesisName::HashAndHeader(
                genesis_hash,
                bytes::Bytes::from(alloy_rlp::encode(&genesis)),
            ),
        )
        .map_err(|e| Failure::case(format!("genesis: {e}")))?;
    if root != genesis.state_root {
        return Err(Failure::case(format!(
            "genesis state root {root}, header says {}",
            genesis.state_root
        )));
    }

    let mut chain = Chain::new(&db, &spec, options, genesis, genesis_hash);
    let mut accepted = 0;
    let mut refused_by = Vec::new();
    for (index, fixture) in case.blocks.iter().enumerate() {
        let decoded = hex_bytes(&fixture.rlp)
            .map_err(crate::error::InvalidBlock::Rlp)
            .and_then(|bytes| DecodedBlock::decode(&bytes))
            .and_then(|block| with_access_list(block, fixture.block_access_list.as_ref()));
        let result = match decoded {
            Ok(block) => {
                if let Some(expected) = &fixture.block_header
                    && expected.hash != block.hash
                {
                    return Err(Failure::at(
                        index,
                        format!("block hash {}, fixture says {}", block.hash, expected.hash),
                    ));
                }
                chain.import(block)
            }
            Err(reason) => Err(ExecError::Invalid {
                number: 0,
                hash: B256::ZERO,
                reason: Box::new(reason),
            }),
        };
        match (result, &fixture.expect_exception) {
            (Ok(_), None) => accepted += 1,
            (Ok(executed), Some(expected)) => {
                return Err(Failure::at(
                    index,
                    format!(
                        "block {} was accepted, the fixture expects it refused ({expected})",
                        executed.number
                    ),
                ));
            }
            (Err(ExecError::Invalid { reason, .. }), Some(_)) => refused_by.push(reason.check()),
            (Err(error @ ExecError::Unsupported { .. }), _) => {
                return Ok(CaseOutcome::Skipped {
                    reason: format!("block #{index}: {error}"),
                });
            }
            (Err(error), _) => return Err(Failure::at(index, error.to_string())),
        }
    }

    chain
        .move_to(case.lastblockhash)
        .map_err(|e| Failure::case(format!("moving to lastblockhash: {e}")))?;
    let head = chain.head();
    let expected_root = chain
        .header(&head)
        .map(|header| header.state_root)
        .ok_or_else(|| Failure::case("the head has no header"))?;
    if db.root() != expected_root {
        return Err(Failure::case(format!(
            "store root {} after the last block, its header says {expected_root}",
            db.root()
        )));
    }
    if let Some(hash) = case.post_state_hash
        && hash != db.root()
    {
        return Err(Failure::case(format!(
            "state root {}, postStateHash {hash}",
            db.root()
        )));
    }
    if let Some(post) = &case.post_state {
        let post = alloc_from_value(post).map_err(|e| Failure::case(format!("postState: {e}")))?;
        check_post_state(&db, &post)?;
    }
    Ok(CaseOutcome::Passed {
        accepted,
        refused_by,
    })
}

/// The genesis header: decoded from `genesisRLP`.
/// `block` with the access list the fixture gives beside it, if any.
fn with_access_list(
    block: DecodedBlock,
    list: Option<&serde_json::Value>,
) -> Result<DecodedBlock, crate::error::InvalidBlock> {
    let Some(list) = list else {
        return Ok(block);
    };
    let list = alloy_eip7928::BlockAccessList::deserialize(list)
        .map_err(|error| crate::error::InvalidBlock::AccessListMalformed(error.to_string()))?;
    Ok(block.with_access_list(list))
}

fn genesis_header(case: &Case) -> Result<Header, Failure> {
    let rlp = case
        .genesis_rlp
        .as_deref()
        .ok_or_else(|| Failure::case("no genesisRLP"))?;
    let bytes = hex_bytes(rlp).map_err(|e| Failure::case(format!("genesisRLP: {e}")))?;
    let block =
        alloy_consensus::Block::<alloy_consensus::TxEnvelope>::decode(&mut bytes.as_slice())
            .map_err(|e| Failure::case(format!("genesisRLP: {e}")))?;
    Ok(block.header)
}

/// Every account of `post` read back through a strata reader: nonce,
/// balance, code (by the account's code hash) and every slot.
fn check_post_state(db: &StateDb, post: &GenesisAlloc) -> Result<(), Failure> {
    let reader = db.reader(Regime::Exec);
    let read_failed = |e: strata_storage::Error| Failure::case(format!("reading back: {e}"));
    for (address, expected) in post {
        let Some(account) = reader.account(address).map_err(read_failed)? else {
            return Err(Failure::case(format!(
                "postState: account {address} is missing"
            )));
        };
        if account.nonce != expected.nonce || account.balance != expected.balance {
            return Err(Failure::case(format!(
                "postState: account {address} nonce {} balance {}, expected nonce {} balance {}",
                account.nonce, account.balance, expected.nonce, expected.balance
            )));
        }
        let code_hash = if expected.code.is_empty() {
            KECCAK256_EMPTY
        } else {
            keccak256(&expected.code)
        };
        if account.code_hash != code_hash {
            return Err(Failure::case(format!(
                "postState: account {address} code hash {}, expected {code_hash}",
                account.code_hash
            )));
        }
        if code_hash != KECCAK256_EMPTY {
            let code = reader.code_by_hash(&code_hash).map_err(read_failed)?;
            if code.as_deref() != Some(expected.code.as_ref()) {
                return Err(Failure::case(format!(
                    "postState: account {address} code differs from its code hash {code_hash}"
                )));
            }
        }
        for (slot, value) in &expected.storage {
            let got = reader.storage(address, slot).map_err(read_failed)?;
            if got != *value {
                return Err(Failure::case(format!(
                    "postState: {address} slot {slot} is {got}, expected {value}"
                )));
            }
        }
    }
    Ok(())
}
