//! The BlockchainTests fixture format (ethereum/tests and execution-spec
//! tests): a file is a map of case name → case.

use std::collections::BTreeMap;
use std::path::Path;

use alloy_primitives::B256;
use serde::Deserialize;
use serde_json::Value;

use super::RunnerError;

/// One BlockchainTests case: a genesis, blocks to import in order (some
/// marked invalid), and the state and head they must lead to.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Case {
    /// The fork or transition the case runs under (`Cancun`, `BerlinToLondonAt5`).
    pub network: String,
    /// The fork configuration execution-spec-tests fills beside the network
    /// (its `blobSchedule` gives each fork's blob parameters).
    #[serde(default)]
    pub config: Option<Value>,
    /// The genesis block's RLP.
    #[serde(rename = "genesisRLP")]
    pub genesis_rlp: Option<String>,
    /// The genesis header's decoded fields; `hash` and `stateRoot` are used.
    pub genesis_block_header: HeaderFields,
    /// The accounts at genesis.
    pub pre: Value,
    /// The blocks, in the order a client receives them.
    pub blocks: Vec<FixtureBlock>,
    /// Every account after the last block, when listed.
    pub post_state: Option<Value>,
    /// The state root after the last block, when the state is not listed.
    pub post_state_hash: Option<B256>,
    /// The hash of the chain's head after every block.
    pub lastblockhash: B256,
    /// The seal engine (`NoProof`: seals are not checked).
    pub seal_engine: Option<String>,
}

/// The fields of a fixture's decoded header that the runner compares.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeaderFields {
    /// The block's hash.
    pub hash: B256,
    /// The state root after the block.
    pub state_root: B256,
}

/// One block of a case.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FixtureBlock {
    /// The whole block's RLP, hex (may be deliberately malformed).
    pub rlp: String,
    /// Set when a client must refuse the block: the exception(s) expected.
    pub expect_exception: Option<String>,
    /// The decoded header of a valid block.
    pub block_header: Option<HeaderFields>,
    /// From Amsterdam, the block's access list (EIP-7928), beside its RLP.
    pub block_access_list: Option<Value>,
}

/// Reads every case of the fixture file at `path`, in name order.
pub fn read_cases(path: &Path) -> Result<BTreeMap<String, Value>, RunnerError> {
    let text = std::fs::read_to_string(path).map_err(|source| RunnerError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|error| RunnerError::Fixture {
        path: path.to_path_buf(),
        case: None,
        message: error.to_string(),
    })
}

/// Parses one case's value.
pub fn parse_case(path: &Path, name: &str, value: Value) -> Result<Case, RunnerError> {
    serde_json::from_value(value).map_err(|error| RunnerError::Fixture {
        path: path.to_path_buf(),
        case: Some(name.to_string()),
        message: error.to_string(),
    })
}

/// Decodes a `0x`-prefixed hex string.
pub(crate) fn hex_bytes(text: &str) -> Result<Vec<u8>, String> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    alloy_primitives::hex::decode(digits).map_err(|error| format!("not hex: {error}"))
}
