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
use strata_genesis::{parse_u64, parse_u256};

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
    /// The blob parameters each fork from Cancun on sets (EIP-7840's
    /// `blobSchedule`, which the blob-parameter-only forks of EIP-7892
    /// change), in fork order.
    pub blob_schedule: Vec<(EthereumHardfork, BlobParams)>,
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
const TIME_FORKS: [EthereumHardfork; 10] = [
    EthereumHardfork::Shanghai,
    EthereumHardfork::Cancun,
    EthereumHardfork::Prague,
    EthereumHardfork::Osaka,
    EthereumHardfork::Bpo1,
    EthereumHardfork::Bpo2,
    EthereumHardfork::Bpo3,
    EthereumHardfork::Bpo4,
    EthereumHardfork::Bpo5,
    EthereumHardfork::Amsterdam,
];

/// The forks that may set blob parameters, in activation order, with the
/// name a `blobSchedule` gives each (geth's lower case; fixtures capitalise).
const BLOB_FORKS: [(EthereumHardfork, &str); 9] = [
    (EthereumHardfork::Cancun, "cancun"),
    (EthereumHardfork::Prague, "prague"),
    (EthereumHardfork::Osaka, "osaka"),
    (EthereumHardfork::Bpo1, "bpo1"),
    (EthereumHardfork::Bpo2, "bpo2"),
    (EthereumHardfork::Bpo3, "bpo3"),
    (EthereumHardfork::Bpo4, "bpo4"),
    (EthereumHardfork::Bpo5, "bpo5"),
    (EthereumHardfork::Amsterdam, "amsterdam"),
];

/// The blob parameters the forks set where no `blobSchedule` says
/// otherwise (mainnet's: EIP-4844, EIP-7691, EIP-7594/7918, and the first
/// two BPO forks).
pub(crate) fn default_blob_schedule() -> Vec<(EthereumHardfork, BlobParams)> {
    vec![
        (EthereumHardfork::Cancun, BlobParams::cancun()),
        (EthereumHardfork::Prague, BlobParams::prague()),
        (EthereumHardfork::Osaka, BlobParams::osaka()),
        (EthereumHardfork::Bpo1, BlobParams::bpo1()),
        (EthereumHardfork::Bpo2, BlobParams::bpo2()),
    ]
}

/// A fork's blob parameters from a schedule entry (target, maximum,
/// base-fee update fraction): from Osaka on with EIP-7918's blob base cost
/// and EIP-7594's per-transaction maximum, as clients complete them.
fn blob_params_of(
    fork: EthereumHardfork,
    target: u64,
    max: u64,
    update_fraction: u128,
) -> BlobParams {
    let base = match fork {
        EthereumHardfork::Cancun => BlobParams::cancun(),
        EthereumHardfork::Prague => BlobParams::prague(),
        _ => BlobParams::osaka(),
    };
    let max_blobs_per_tx = match fork {
        EthereumHardfork::Cancun | EthereumHardfork::Prague => max,
        _ => base.max_blobs_per_tx,
    };
    BlobParams {
        target_blob_count: target,
        max_blob_count: max,
        update_fraction,
        max_blobs_per_tx,
        ..base
    }
}

/// The fork a `blobSchedule` key names (any case), if it sets blob
/// parameters.
fn blob_fork_named(key: &str) -> Option<EthereumHardfork> {
    BLOB_FORKS
        .iter()
        .find(|(_, name)| name.eq_ignore_ascii_case(key))
        .map(|(fork, _)| *fork)
}

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
            (EthereumHardfork::Bpo1, time(config.bpo1_time)),
            (EthereumHardfork::Bpo2, time(config.bpo2_time)),
            (EthereumHardfork::Bpo3, time(config.bpo3_time)),
            (EthereumHardfork::Bpo4, time(config.bpo4_time)),
            (EthereumHardfork::Bpo5, time(config.bpo5_time)),
            (EthereumHardfork::Amsterdam, time(config.amsterdam_time)),
        ];
        let mut blob_schedule = default_blob_schedule();
        for (key, params) in &config.blob_schedule {
            if let Some(fork) = blob_fork_named(key) {
                let params = blob_params_of(
                    fork,
                    params.target_blob_count,
                    params.max_blob_count,
                    params.update_fraction,
                );
                set_blob_params(&mut blob_schedule, fork, params);
            }
        }
        Self {
            chain_id: config.chain_id,
            hardforks: EthereumChainHardforks::new(forks),
            blob_schedule,
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

    /// The blob gas parameters in force at `timestamp`: those of the last
    /// fork active then that sets them (none before Cancun).
    pub fn blob_params_at(&self, timestamp: u64) -> Option<BlobParams> {
        self.blob_schedule
            .iter()
            .rev()
            .find(|(fork, _)| {
                self.ethereum_fork_activation(*fork)
                    .active_at_timestamp(timestamp)
            })
            .map(|(_, params)| *params)
    }

    /// This chain with the blob parameters of a BlockchainTests fixture's
    /// `config.blobSchedule` (`{"Cancun": {"target": "0x03", "max": "0x06",
    /// "baseFeeUpdateFraction": "0x32f0ed"}, "BPO1": …}`): each fork it
    /// names gets its target, maximum and update fraction.
    pub fn with_fixture_blob_schedule(
        &self,
        schedule: &serde_json::Value,
    ) -> Result<Self, ChainSpecError> {
        let mut spec = self.clone();
        let Some(entries) = schedule.as_object() else {
            return Err(ChainSpecError::BlobSchedule(format!(
                "not an object: {schedule}"
            )));
        };
        for (key, entry) in entries {
            let Some(fork) = blob_fork_named(key) else {
                return Err(ChainSpecError::BlobSchedule(format!(
                    "unknown fork {key:?}"
                )));
            };
            let count = |name: &str| -> Result<u64, ChainSpecError> {
                parse_u64(schedule_field(key, entry, name)?).map_err(|error| {
                    ChainSpecError::BlobSchedule(format!("{key}: {name}: {error}"))
                })
            };
            let name = "baseFeeUpdateFraction";
            let fraction = parse_u256(schedule_field(key, entry, name)?)
                .map_err(|error| ChainSpecError::BlobSchedule(format!("{key}: {name}: {error}")))?;
            let fraction = u128::try_from(fraction).map_err(|_| {
                ChainSpecError::BlobSchedule(format!(
                    "{key}: {name} {fraction} is more than 128 bits"
                ))
            })?;
            let params = blob_params_of(fork, count("target")?, count("max")?, fraction);
            set_blob_params(&mut spec.blob_schedule, fork, params);
        }
        Ok(spec)
    }
}

/// The field `name` of the schedule entry of fork `key`.
fn schedule_field<'a>(
    key: &str,
    entry: &'a serde_json::Value,
    name: &str,
) -> Result<&'a serde_json::Value, ChainSpecError> {
    entry
        .get(name)
        .ok_or_else(|| ChainSpecError::BlobSchedule(format!("{key}: no {name}")))
}

/// Sets `fork`'s parameters in `schedule`, kept in fork order.
fn set_blob_params(
    schedule: &mut Vec<(EthereumHardfork, BlobParams)>,
    fork: EthereumHardfork,
    params: BlobParams,
) {
    schedule.retain(|(each, _)| *each != fork);
    schedule.push((fork, params));
    let order = |fork: &EthereumHardfork| BLOB_FORKS.iter().position(|(each, _)| each == fork);
    schedule.sort_by_key(|(fork, _)| order(fork));
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
            blob_schedule: default_blob_schedule(),
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
        "BPO1" => EthereumHardfork::Bpo1,
        "BPO2" => EthereumHardfork::Bpo2,
        "BPO3" => EthereumHardfork::Bpo3,
        "BPO4" => EthereumHardfork::Bpo4,
        "BPO5" => EthereumHardfork::Bpo5,
        "Amsterdam" => EthereumHardfork::Amsterdam,
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
    fn bpo_transitions_switch_blob_parameters_at_their_time() {
        let spec = ChainSpec::from_test_network("BPO1ToBPO2AtTime15k").unwrap();
        assert!(spec.is_osaka_active_at_timestamp(0));
        assert_eq!(spec.blob_params_at(14_999), Some(BlobParams::bpo1()));
        assert_eq!(spec.blob_params_at(15_000), Some(BlobParams::bpo2()));
        // A fixture's schedule replaces a fork's target, maximum and fraction.
        let schedule = serde_json::json!({
            "BPO2": {"target": "0x0e", "max": "0x15", "baseFeeUpdateFraction": "0xb24b3f"},
            "BPO3": {"target": "0x15", "max": "0x20", "baseFeeUpdateFraction": "0x10fafdf"}
        });
        let spec = ChainSpec::from_test_network("BPO2ToBPO3AtTime15k")
            .unwrap()
            .with_fixture_blob_schedule(&schedule)
            .unwrap();
        let bpo3 = spec.blob_params_at(15_000).unwrap();
        assert_eq!((bpo3.target_blob_count, bpo3.max_blob_count), (0x15, 0x20));
        assert_eq!(bpo3.update_fraction, 0x10fafdf);
        assert_eq!(bpo3.blob_base_cost, BlobParams::osaka().blob_base_cost);
        assert_eq!(spec.blob_params_at(0).unwrap().max_blob_count, 0x15);
        let unknown = serde_json::json!({"Bogus": {}});
        assert!(spec.with_fixture_blob_schedule(&unknown).is_err());
    }

    #[test]
    fn a_geth_config_gives_the_bpo_times_and_blob_schedule() {
        let config: ChainConfig = serde_json::from_value(serde_json::json!({
            "chainId": 7, "homesteadBlock": 0, "eip150Block": 0, "eip155Block": 0,
            "eip158Block": 0, "byzantiumBlock": 0, "constantinopleBlock": 0,
            "petersburgBlock": 0, "istanbulBlock": 0, "berlinBlock": 0, "londonBlock": 0,
            "terminalTotalDifficulty": 0, "shanghaiTime": 0, "cancunTime": 0,
            "pragueTime": 0, "osakaTime": 0, "bpo1Time": 100,
            "blobSchedule": {"bpo1": {"target": 12, "max": 18, "baseFeeUpdateFraction": 9000000}}
        }))
        .unwrap();
        let spec = ChainSpec::from_chain_config(&config);
        assert_eq!(spec.blob_params_at(99), Some(BlobParams::osaka()));
        let bpo1 = spec.blob_params_at(100).unwrap();
        assert_eq!((bpo1.target_blob_count, bpo1.max_blob_count), (12, 18));
        assert_eq!(bpo1.max_blobs_per_tx, BlobParams::osaka().max_blobs_per_tx);
    }

    #[test]
    fn an_unknown_network_is_refused_by_name() {
        let error = ChainSpec::from_test_network("Atlantis").unwrap_err();
        assert!(error.to_string().contains("Atlantis"), "{error}");
        assert!(ChainSpec::from_test_network("BerlinToAtlantisAt5").is_err());
    }
}
