//! strata-chain-gen's integration tests: one binary of modules.

mod chain;
mod strata;

use std::path::Path;

use strata_chain_gen::{Fork, GenConfig};

/// The small chain the tests generate: 200 accounts, 20 contracts, 3
/// blocks of about 2 Mgas.
pub fn small_config(seed: u64) -> GenConfig {
    GenConfig {
        accounts: 200,
        contracts: 20,
        blocks: 3,
        gas_per_block: 2_000_000,
        seed,
        fork: Fork::Cancun,
    }
}

/// The blocks of a `chain.rlp`, decoded.
pub fn read_blocks(path: &Path) -> Vec<strata_executor::DecodedBlock> {
    let bytes = std::fs::read(path).expect("chain.rlp reads");
    let mut rest = bytes.as_slice();
    let mut blocks = Vec::new();
    while !rest.is_empty() {
        blocks
            .push(strata_executor::DecodedBlock::decode_next(&mut rest).expect("a block decodes"));
    }
    blocks
}
