//! What to generate: the sizes, the gas per block and the seed, range-checked.

use crate::error::GenError;

/// Gas per block by default: about what a full mainnet block used in 2025.
pub const DEFAULT_GAS_PER_BLOCK: u64 = 36_000_000;
/// The chain id of generated chains (a private chain's, so no signature of
/// them replays on a public network).
pub const CHAIN_ID: u64 = 1337;
/// Most genesis EOAs (each has a key and an entry in genesis.json).
pub const MAX_ACCOUNTS: u64 = 10_000_000;
/// Most genesis contracts.
pub const MAX_CONTRACTS: u64 = 1_000_000;
/// Most blocks.
pub const MAX_BLOCKS: u64 = 1_000_000;
/// The smallest gas target per block (a few transactions).
pub const MIN_GAS_PER_BLOCK: u64 = 100_000;
/// The largest gas target per block.
pub const MAX_GAS_PER_BLOCK: u64 = 1_000_000_000;

/// The generator's settings. The same settings give the same bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenConfig {
    /// Externally owned accounts in the genesis, each with a key.
    pub accounts: u64,
    /// Contracts in the genesis (tokens, routers, stores; see `contracts`).
    pub contracts: u64,
    /// Blocks after the genesis.
    pub blocks: u64,
    /// Gas each block uses, about (a block ends with the transaction that
    /// reaches it); its gas limit is twice this, so the base fee stays near
    /// its genesis value as on mainnet, whose blocks sit near their target.
    pub gas_per_block: u64,
    /// Seed of every random choice and of every key.
    pub seed: u64,
    /// The fork every block runs under (active from the genesis).
    pub fork: Fork,
}

/// The fork a generated chain runs, from its genesis on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fork {
    /// Cancun (EIP-4844's blob fields, EIP-4788's beacon root in the
    /// header): the fork most of strata's published figures were measured on.
    Cancun,
    /// Prague: the EIP-2935, EIP-4788, EIP-7002 and EIP-7251 system
    /// contracts in the genesis, their calls every block, the requests hash.
    Prague,
    /// Osaka (mainnet's fork, the default): Prague's, with Osaka's blob
    /// parameters and EIP-7825's transaction gas cap.
    #[default]
    Osaka,
    /// Amsterdam (bal@v5.7.0): Osaka's, with each block's access list
    /// (EIP-7928) built as it is generated and hashed into its header, the
    /// slot number, and EIP-8037's state gas.
    Amsterdam,
}

impl Fork {
    /// Its name, as `--fork` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cancun => "cancun",
            Self::Prague => "prague",
            Self::Osaka => "osaka",
            Self::Amsterdam => "amsterdam",
        }
    }
}

impl GenConfig {
    /// Settings with the default gas per block.
    pub fn new(accounts: u64, contracts: u64, blocks: u64, seed: u64) -> Self {
        Self {
            accounts,
            contracts,
            blocks,
            gas_per_block: DEFAULT_GAS_PER_BLOCK,
            seed,
            fork: Fork::default(),
        }
    }

    /// Checks every setting against its range; blocks need at least one
    /// account to send their transactions.
    pub fn validate(&self) -> Result<(), GenError> {
        let check = |what, value, max, range| {
            if value > max {
                Err(GenError::Config { what, value, range })
            } else {
                Ok(())
            }
        };
        check(
            "--accounts",
            self.accounts,
            MAX_ACCOUNTS,
            "at most 10,000,000",
        )?;
        check(
            "--contracts",
            self.contracts,
            MAX_CONTRACTS,
            "at most 1,000,000",
        )?;
        check("--blocks", self.blocks, MAX_BLOCKS, "at most 1,000,000")?;
        if !(MIN_GAS_PER_BLOCK..=MAX_GAS_PER_BLOCK).contains(&self.gas_per_block) {
            return Err(GenError::Config {
                what: "--gas-per-block",
                value: self.gas_per_block,
                range: "in 100,000..=1,000,000,000",
            });
        }
        if self.blocks > 0 && self.accounts == 0 {
            return Err(GenError::Config {
                what: "--accounts",
                value: 0,
                range: "at least 1 when there are blocks (someone sends the transactions)",
            });
        }
        Ok(())
    }

    /// The blocks' gas limit: twice the target, EIP-1559's elasticity.
    pub fn gas_limit(&self) -> u64 {
        self.gas_per_block * 2
    }
}
