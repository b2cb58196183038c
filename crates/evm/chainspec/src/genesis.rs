//! A chain's genesis block from a geth genesis file: its fork schedule, its
//! allocation and its header, with the state root computed here by
//! alloy-trie — independently of strata, so that the root strata writes
//! for the same allocation is checked by another implementation.

use alloy_consensus::Header;
use alloy_genesis::Genesis;
use alloy_primitives::{B256, keccak256};
use alloy_trie::root::{state_root_unhashed, storage_root_unhashed};
use alloy_trie::{EMPTY_ROOT_HASH, TrieAccount};
use strata_genesis::chain::{alloc_of, genesis_header};

use crate::chain_spec::ChainSpec;
use crate::error::GenesisError;

/// Block 0 of a chain: its header (and hash), its fork schedule and the
/// allocation in strata's form.
#[derive(Clone, Debug)]
pub struct GenesisBlock {
    /// The genesis `config` as given (chain id, fork blocks and times):
    /// what a datadir records ([`ChainSpec::from_recorded`]).
    pub config: alloy_genesis::ChainConfig,
    /// The chain's fork schedule, from the genesis `config`.
    pub spec: ChainSpec,
    /// The header, whose state root alloy-trie computed from the allocation.
    pub header: Header,
    /// keccak256 of the header's RLP.
    pub hash: B256,
    /// The allocation (zero slots dropped).
    pub alloc: strata_genesis::GenesisAlloc,
}

impl GenesisBlock {
    /// The `config` as a datadir records it (`StateDb::set_chain_config`):
    /// JSON, read back by [`ChainSpec::from_recorded`].
    pub fn recorded_config(&self) -> Vec<u8> {
        crate::chain_spec::recorded_chain_config(&self.config)
    }

    /// The header's RLP, what the store keeps as block 0's header.
    pub fn header_rlp(&self) -> bytes::Bytes {
        bytes::Bytes::from(alloy_rlp::encode(&self.header))
    }

    /// The genesis block `genesis` describes.
    pub fn new(genesis: &Genesis) -> Result<Self, GenesisError> {
        let alloc = alloc_of(genesis);
        let (header, hash) = Self::header_with_root(genesis, alloc_state_root(&alloc))?;
        Ok(Self {
            config: genesis.config.clone(),
            spec: ChainSpec::from_chain_config(&genesis.config),
            header,
            hash,
            alloc,
        })
    }

    /// Block 0's header and hash for `genesis` whose allocation's state
    /// root the caller computed (a state too large to copy once more, as
    /// `strata gen-chain`'s, which keeps it in revm's database).
    pub fn header_with_root(
        genesis: &Genesis,
        state_root: B256,
    ) -> Result<(Header, B256), GenesisError> {
        let header = genesis_header(genesis, state_root)
            .map_err(|error| GenesisError::Header(error.to_string()))?;
        let hash = header.hash_slow();
        Ok((header, hash))
    }

    /// Reads a geth genesis JSON file: `config`, the header fields and
    /// `alloc`. The allocation is also read by strata's strict parser,
    /// which refuses what alloy-genesis would silently merge (an address or
    /// slot given twice, in two spellings).
    pub fn read(path: &std::path::Path) -> Result<Self, GenesisError> {
        let file = |source| GenesisError::File {
            path: path.to_owned(),
            source,
        };
        let text = std::fs::read_to_string(path).map_err(file)?;
        strata_genesis::parse_alloc_json(&text).map_err(|error| GenesisError::Parse {
            path: path.to_owned(),
            message: error.to_string(),
        })?;
        let genesis: Genesis =
            serde_json::from_str(&text).map_err(|error| GenesisError::Parse {
                path: path.to_owned(),
                message: error.to_string(),
            })?;
        Self::new(&genesis)
    }
}

/// The state root of `alloc`, by alloy-trie's hash builder.
pub fn alloc_state_root(alloc: &strata_genesis::GenesisAlloc) -> B256 {
    state_root_unhashed(alloc.iter().map(|(address, account)| {
        let storage_root = if account.storage.is_empty() {
            EMPTY_ROOT_HASH
        } else {
            storage_root_unhashed(
                account
                    .storage
                    .iter()
                    .filter(|(_, value)| !value.is_zero())
                    .map(|(slot, value)| (*slot, *value)),
            )
        };
        let code_hash = if account.code.is_empty() {
            alloy_primitives::KECCAK256_EMPTY
        } else {
            keccak256(&account.code)
        };
        let trie_account = TrieAccount {
            nonce: account.nonce,
            balance: account.balance,
            storage_root,
            code_hash,
        };
        (*address, trie_account)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::U256;

    const GENESIS: &str = r#"{
        "config": {"chainId": 7, "homesteadBlock": 0, "eip150Block": 0, "eip155Block": 0,
                   "eip158Block": 0, "byzantiumBlock": 0, "constantinopleBlock": 0,
                   "petersburgBlock": 0, "istanbulBlock": 0, "berlinBlock": 0,
                   "londonBlock": 0, "terminalTotalDifficulty": 0,
                   "shanghaiTime": 0, "cancunTime": 0},
        "gasLimit": "0x1c9c380", "difficulty": "0x0", "timestamp": "0x0",
        "alloc": {
            "0x00000000000000000000000000000000000000aa": {"balance": "0x10"},
            "0x00000000000000000000000000000000000000bb": {
                "balance": "0x0", "nonce": "0x1", "code": "0x6001600055",
                "storage": {"0x01": "0x02", "0x03": "0x00"}}
        }
    }"#;

    #[test]
    fn the_header_carries_the_alloc_root_and_the_forks_at_genesis() {
        let genesis: Genesis = serde_json::from_str(GENESIS).unwrap();
        let block = GenesisBlock::new(&genesis).unwrap();
        assert_eq!(block.spec.chain_id, 7);
        assert_eq!(block.header.base_fee_per_gas, Some(1_000_000_000));
        assert_eq!(block.header.withdrawals_root, Some(EMPTY_ROOT_HASH));
        assert_eq!(block.header.excess_blob_gas, Some(0));
        assert_eq!(block.header.parent_beacon_block_root, Some(B256::ZERO));
        assert_eq!(block.header.requests_hash, None);
        assert_eq!(block.hash, block.header.hash_slow());
        // The zero slot is dropped; the root changes with any value.
        assert_eq!(block.alloc.len(), 2);
        let mut changed = block.alloc.clone();
        changed.values_mut().next().unwrap().balance = U256::from(0x11);
        assert_ne!(alloc_state_root(&changed), block.header.state_root);
    }

    #[test]
    fn a_repeated_address_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("genesis.json");
        let twice = GENESIS.replace(
            r#""0x00000000000000000000000000000000000000aa": {"balance": "0x10"},"#,
            r#""0x00000000000000000000000000000000000000aa": {"balance": "0x10"},
               "0x00000000000000000000000000000000000000AA": {"balance": "0x11"},"#,
        );
        std::fs::write(&path, twice).unwrap();
        let error = GenesisBlock::read(&path).unwrap_err().to_string();
        assert!(error.contains("genesis.json"), "{error}");
    }
}
