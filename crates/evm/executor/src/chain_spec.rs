//! The chain a block is executed for: its id, its fork schedule and the few
//! constants that differ between chains. Built from a geth genesis `config`
//! ([`ChainSpec::from_chain_config`]) or from the `network` name of a
//! BlockchainTests fixture ([`ChainSpec::from_test_network`]).

use alloy_eips::eip6110::MAINNET_DEPOSIT_CONTRACT_ADDRESS;
use alloy_eips::eip7840::BlobParams;
use alloy_evm::eth::spec::EthExecutorSpec;
use alloy_genesis::ChainConfig;
use alloy_hardforks::{EthereumChainHardforks, EthereumHardfork, EthereumHardforks, ForkCondition};
use alloy_primitives::{Address, U256};

use crate::error::ChainSpecError;

/// Ethereum mainnet's chain id, which every BlockchainTests network uses.
pub const MAINNET_CHAIN_ID: u64 = 1;

/// A chain's id and fork schedule.
#[derive(Clone, Debug)]
pub struct ChainSpec {
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// When each fork activates (block, timestamp or total difficulty).
    pub hardforks: EthereumChainHardforks,
    /// Where EIP-6110 deposit events come from (Prague on).
    pub deposit_contract: Option<Address>,
    /// Whether the DAO fork's irregular state change and extra-data rule
    /// apply at its block (geth's `daoForkSupport`).
    pub dao_fork_support: bool,
}

/// The forks in activation order, with how each is switched on.
const BLOCK_FORKS: [EthereumHardfork; 14] = [
    EthereumHardfork::Frontier,
    EthereumHardfork::Homestead,
    EthereumHardfork::Dao,
    EthereumHardfork::Tangerine,
    EthereumHardfork::SpuriousDragon,
    EthereumHardfork::Byzantium,
    EthereumHardfork::Constantinople,
    EthereumHardfork::Petersburg,
    EthereumHardfork::Istanbul,
    EthereumHardfork::MuirGlacier,
    EthereumHardfork::Berlin,
    EthereumHardfork::London,
    EthereumHardfork::ArrowGlacier,
    EthereumHardfork::GrayGlacier,
];

/// The forks switched on by timestamp, in activation order.
const TIME_FORKS: [EthereumHardfork; 4] = [
    EthereumHardfork::Shanghai,
    EthereumHardfork::Cancun,
    EthereumHardfork::Prague,
    EthereumHardfork::Osaka,
];

impl ChainSpec {
    /// The chain a BlockchainTests `network` names: a single fork active
    /// from genesis (`Cancun`, `Berlin`, `ConstantinopleFix`, ...) or a
    /// transition (`BerlinToLondonAt5`, `ShanghaiToCancunAtTime15k`,
    /// `ArrowGlacierToParisAtDiffC0000`, ...), all on chain id 1.
    pub fn from_test_network(network: &str) -> Result<Self, ChainSpecError> {
        let unknown = || ChainSpecError::UnknownNetwork(network.to_string());
        if network == "Constantinople" || network.ends_with("ToConstantinopleAt5") {
            return Err(ChainSpecError::Unsupported {
                network: network.to_string(),
                reason: "revm 43 has no Constantinople rules (EIP-1283's net gas metering, \
                         withdrawn by Petersburg)",
            });
        }
        let mut schedule = Schedule::default();
        if let Some((from, to)) = network.split_once("To") {
            let from = fork_of_test_name(from).ok_or_else(unknown)?;
            schedule.activate_through(from, Activation::Genesis);
            let (to, at) = transition_target(to).ok_or_else(unknown)?;
            schedule.activate_through(to, at);
            if to == EthereumHardfork::Dao {
                schedule.dao_fork_support = true;
            }
        } else {
            let fork = fork_of_test_name(network).ok_or_else(unknown)?;
            schedule.activate_through(fork, Activation::Genesis);
        }
        Ok(schedule.into_spec(MAINNET_CHAIN_ID))
    }

    /// The chain a datadir's recorded configuration describes (the JSON
    /// [`recorded_chain_config`] writes).
    pub fn from_recorded(config: &[u8]) -> Result<Self, ChainSpecError> {
        let config: ChainConfig = serde_json::from_slice(config)
            .map_err(|error| ChainSpecError::Recorded(error.to_string()))?;
        Ok(Self::from_chain_config(&config))
    }

    /// The chain a geth genesis `config` describes: each `*Block` and
    /// `*Time` field, `terminalTotalDifficulty` for the merge, `daoForkBlock`
    /// with `daoForkSupport`.
    pub fn from_chain_config(config: &ChainConfig) -> Self {
        let block = |at: Option<u64>| at.map_or(ForkCondition::Never, ForkCondition::Block);
        let time = |at: Option<u64>| at.map_or(ForkCondition::Never, ForkCondition::Timestamp);
        let paris = match (
            config.merge_netsplit_block,
            config.terminal_total_difficulty,
        ) {
            (Some(number), _) => ForkCondition::Block(number),
            (None, Some(ttd)) if ttd.is_zero() => ForkCondition::Block(0),
            (None, Some(ttd)) => ForkCondition::TTD {
                activation_block_number: u64::MAX,
                fork_block: None,
                total_difficulty: ttd,
            },
            (None, None) => ForkCondition::Never,
        };
        let forks = [
            (EthereumHardfork::Frontier, ForkCondition::Block(0)),
            (EthereumHardfork::Homestead, block(config.homestead_block)),
            (
                EthereumHardfork::Dao,
                if config.dao_fork_support {
                    block(config.dao_fork_block)
                } else {
                    ForkCondition::Never
                },
            ),
            (EthereumHardfork::Tangerine, block(config.eip150_block)),
            (EthereumHardfork::SpuriousDragon, block(config.eip158_block)),
            (EthereumHardfork::Byzantium, block(config.byzantium_block)),
            (
                EthereumHardfork::Constantinople,
                block(config.constantinople_block),
            ),
            (EthereumHardfork::Petersburg, block(config.petersburg_block)),
            (EthereumHardfork::Istanbul, block(config.istanbul_block)),
            (
                EthereumHardfork::MuirGlacier,
                block(config.muir_glacier_block),
            ),
            (EthereumHardfork::Berlin, block(config.berlin_block)),
            (EthereumHardfork::London, block(config.london_block)),
            (
                EthereumHardfork::ArrowGlacier,
                block(config.arrow_glacier_block),
            ),
            (
                EthereumHardfork::GrayGlacier,
                block(config.gray_glacier_block),
            ),
            (EthereumHardfork::Paris, paris),
            (EthereumHardfork::Shanghai, time(config.shanghai_time)),
            (EthereumHardfork::Cancun, time(config.cancun_time)),
            (EthereumHardfork::Prague, time(config.prague_time)),
            (EthereumHardfork::Osaka, time(config.osaka_time)),
        ];
        Self {
            chain_id: config.chain_id,
            hardforks: EthereumChainHardforks::new(forks),
            deposit_contract: config
                .deposit_contract_address
                .or((config.chain_id == MAINNET_CHAIN_ID)
                    .then_some(MAINNET_DEPOSIT_CONTRACT_ADDRESS)),
            dao_fork_support: config.dao_fork_support,
        }
    }

    /// The merge's total difficulty, while the block it activates at is not
    /// yet known (a chain that merges by total difficulty).
    pub fn pending_terminal_total_difficulty(&self) -> Option<U256> {
        match self.ethereum_fork_activation(EthereumHardfork::Paris) {
            ForkCondition::TTD {
                activation_block_number: u64::MAX,
                total_difficulty,
                ..
            } => Some(total_difficulty),
            _ => None,
        }
    }

    /// This chain with the merge fixed at block `number` (the first block
    /// whose parent reached the terminal total difficulty).
    pub fn with_merge_at(&self, number: u64) -> Self {
        self.with_fork(EthereumHardfork::Paris, ForkCondition::Block(number))
    }

    /// This chain with `fork` switched on at `condition` instead.
    pub fn with_fork(&self, fork: EthereumHardfork, condition: ForkCondition) -> Self {
        let mut spec = self.clone();
        let forks = BLOCK_FORKS
            .iter()
            .chain([EthereumHardfork::Paris].iter())
            .chain(TIME_FORKS.iter())
            .map(|&each| {
                if each == fork {
                    (each, condition)
                } else {
                    (each, self.ethereum_fork_activation(each))
                }
            });
        spec.hardforks = EthereumChainHardforks::new(forks);
        spec
    }

    /// Whether `number` is the DAO fork's block on a chain that supports it
    /// (its irregular state change happens there).
    pub fn is_dao_block(&self, number: u64) -> bool {
        self.dao_fork_support
            && self
                .ethereum_fork_activation(EthereumHardfork::Dao)
                .transitions_at_block(number)
    }

    /// The blob gas parameters in force at `timestamp` (none before Cancun).
    pub fn blob_params_at(&self, timestamp: u64) -> Option<BlobParams> {
        if self.is_osaka_active_at_timestamp(timestamp) {
            Some(BlobParams::osaka())
        } else if self.is_prague_active_at_timestamp(timestamp) {
            Some(BlobParams::prague())
        } else if self.is_cancun_active_at_timestamp(timestamp) {
            Some(BlobParams::cancun())
        } else {
            None
        }
    }
}

impl EthereumHardforks for ChainSpec {
    fn ethereum_fork_activation(&self, fork: EthereumHardfork) -> ForkCondition {
        self.hardforks.ethereum_fork_activation(fork)
    }
}

impl EthExecutorSpec for ChainSpec {
    fn deposit_contract_address(&self) -> Option<Address> {
        self.deposit_contract
    }
}

/// When a fork of a test network switches on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Activation {
    Genesis,
    Block(u64),
    Timestamp(u64),
    TotalDifficulty(U256),
}

/// A fork schedule being assembled from a test network's name.
#[derive(Default)]
struct Schedule {
    forks: Vec<(EthereumHardfork, ForkCondition)>,
    dao_fork_support: bool,
}

impl Schedule {
    /// Switches on every fork up to and including `last` that is not on yet,
    /// at `at` (the ones before `last` at genesis when `at` is genesis, else
    /// with `last`).
    fn activate_through(&mut self, last: EthereumHardfork, at: Activation) {
        for fork in BLOCK_FORKS
            .iter()
            .chain([EthereumHardfork::Paris].iter())
            .chain(TIME_FORKS.iter())
        {
            if self.forks.iter().any(|(on, _)| on == fork) {
                if *fork == last {
                    break;
                }
                continue;
            }
            // The DAO fork is only part of a network that names it.
            if *fork == EthereumHardfork::Dao && last != EthereumHardfork::Dao {
                continue;
            }
            let condition = match (at, fork) {
                (Activation::Genesis, fork) if TIME_FORKS.contains(fork) => {
                    ForkCondition::Timestamp(0)
                }
                (Activation::Genesis, _) => ForkCondition::Block(0),
                (Activation::Block(number), _) => ForkCondition::Block(number),
                (Activation::Timestamp(time), _) => ForkCondition::Timestamp(time),
                (Activation::TotalDifficulty(ttd), _) => ForkCondition::TTD {
                    activation_block_number: u64::MAX,
                    fork_block: None,
                    total_difficulty: ttd,
                },
            };
            self.forks.push((*fork, condition));
            if *fork == last {
                break;
            }
        }
    }

    fn into_spec(self, chain_id: u64) -> ChainSpec {
        ChainSpec {
            chain_id,
            hardforks: EthereumChainHardforks::new(self.forks),
            deposit_contract: Some(MAINNET_DEPOSIT_CONTRACT_ADDRESS),
            dao_fork_support: self.dao_fork_support,
        }
    }
}

/// The fork a test network's name (or one side of a transition) stands for.
fn fork_of_test_name(name: &str) -> Option<EthereumHardfork> {
    Some(match name {
        "Frontier" => EthereumHardfork::Frontier,
        "Homestead" => EthereumHardfork::Homestead,
        "Dao" => EthereumHardfork::Dao,
        "EIP150" | "TangerineWhistle" => EthereumHardfork::Tangerine,
        "EIP158" | "SpuriousDragon" => EthereumHardfork::SpuriousDragon,
        "Byzantium" => EthereumHardfork::Byzantium,
        "Constantinople" => EthereumHardfork::Constantinople,
        "ConstantinopleFix" | "Petersburg" => EthereumHardfork::Petersburg,
        "Istanbul" => EthereumHardfork::Istanbul,
        "MuirGlacier" => EthereumHardfork::MuirGlacier,
        "Berlin" => EthereumHardfork::Berlin,
        "London" => EthereumHardfork::London,
        "ArrowGlacier" => EthereumHardfork::ArrowGlacier,
        "GrayGlacier" => EthereumHardfork::GrayGlacier,
        "Paris" | "Merge" => EthereumHardfork::Paris,
        "Shanghai" => EthereumHardfork::Shanghai,
        "Cancun" => EthereumHardfork::Cancun,
        "Prague" => EthereumHardfork::Prague,
        "Osaka" => EthereumHardfork::Osaka,
        _ => return None,
    })
}

/// The second half of a transition network's name: `LondonAt5`,
/// `CancunAtTime15k`, `ParisAtDiffC0000`.
fn transition_target(name: &str) -> Option<(EthereumHardfork, Activation)> {
    let (fork, at) = name.split_once("At")?;
    let fork = fork_of_test_name(fork)?;
    let activation = if let Some(time) = at.strip_prefix("Time") {
        Activation::Timestamp(parse_count(time)?)
    } else if let Some(difficulty) = at.strip_prefix("Diff") {
        Activation::TotalDifficulty(U256::from(u64::from_str_radix(difficulty, 16).ok()?))
    } else {
        Activation::Block(parse_count(at)?)
    };
    Some((fork, activation))
}

/// `5` or `15k` (thousands).
fn parse_count(text: &str) -> Option<u64> {
    match text.strip_suffix('k') {
        Some(thousands) => thousands.parse::<u64>().ok()?.checked_mul(1000),
        None => text.parse().ok(),
    }
}

/// A geth genesis `config` as a datadir records it
/// (`StateDb::set_chain_config`): JSON, read back by
/// [`ChainSpec::from_recorded`].
pub fn recorded_chain_config(config: &ChainConfig) -> Vec<u8> {
    serde_json::to_vec(config).expect("a chain config serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_fork_network_has_every_earlier_fork_at_genesis() {
        let spec = ChainSpec::from_test_network("Cancun").unwrap();
        assert!(spec.is_cancun_active_at_timestamp(0));
        assert!(spec.is_shanghai_active_at_timestamp(0));
        assert!(spec.is_paris_active_at_block(0));
        assert!(spec.is_london_active_at_block(0));
        assert!(spec.is_homestead_active_at_block(0));
        assert!(!spec.is_prague_active_at_timestamp(u64::MAX));
        assert_eq!(
            spec.ethereum_fork_activation(EthereumHardfork::Dao),
            ForkCondition::Never
        );
    }

    #[test]
    fn transitions_activate_at_their_block_time_or_difficulty() {
        let spec = ChainSpec::from_test_network("BerlinToLondonAt5").unwrap();
        assert!(spec.is_berlin_active_at_block(0));
        assert!(!spec.is_london_active_at_block(4));
        assert!(spec.is_london_active_at_block(5));

        let spec = ChainSpec::from_test_network("ShanghaiToCancunAtTime15k").unwrap();
        assert!(spec.is_shanghai_active_at_timestamp(0));
        assert!(!spec.is_cancun_active_at_timestamp(14_999));
        assert!(spec.is_cancun_active_at_timestamp(15_000));

        let spec = ChainSpec::from_test_network("HomesteadToDaoAt5").unwrap();
        assert!(spec.dao_fork_support);
        assert!(
            spec.ethereum_fork_activation(EthereumHardfork::Dao)
                .transitions_at_block(5)
        );

        let spec = ChainSpec::from_test_network("ArrowGlacierToParisAtDiffC0000").unwrap();
        assert_eq!(
            spec.pending_terminal_total_difficulty(),
            Some(U256::from(0xC0000))
        );
        assert!(!spec.is_paris_active_at_block(1_000));
        let merged = spec.with_merge_at(3);
        assert!(!merged.is_paris_active_at_block(2));
        assert!(merged.is_paris_active_at_block(3));
        assert!(merged.is_london_active_at_block(0));
    }

    #[test]
    fn an_unknown_network_is_refused_by_name() {
        let error = ChainSpec::from_test_network("Atlantis").unwrap_err();
        assert!(error.to_string().contains("Atlantis"), "{error}");
        assert!(ChainSpec::from_test_network("BerlinToAtlantisAt5").is_err());
    }
}
