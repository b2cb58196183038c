//! The order of a chain configuration's forks, checked as geth checks it
//! (`CheckConfigForkOrder`): block forks, then time forks, each no earlier
//! than the one before; a fork left out may be followed by a set one only
//! when it is optional (the DAO fork, the difficulty-bomb delays, the merge
//! netsplit block, the blob-parameter-only forks).
//!
//! Block numbers and timestamps cannot be compared in general, but at the
//! genesis they can: a fork active at the genesis block (by its number or
//! its timestamp) needs every fork before it active there too, or block 0's
//! header would carry the fields of a later fork without those of an
//! earlier one (a withdrawals root without a base fee).

use alloy_genesis::Genesis;

/// When a fork activates, as the configuration gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// At this block number.
    Block(u64),
    /// At the first block whose timestamp is at least this.
    Time(u64),
}

impl std::fmt::Display for Activation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Activation::Block(number) => write!(f, "block {number}"),
            Activation::Time(time) => write!(f, "timestamp {time}"),
        }
    }
}

/// A configuration whose forks are out of order, naming both forks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForkOrderError {
    /// A fork that may not be left out is missing while a later one is set.
    #[error("unsupported fork ordering: {missing} not enabled, but {later} enabled at {at}")]
    Missing {
        /// The configuration field left out.
        missing: &'static str,
        /// The later field that is set.
        later: &'static str,
        /// Where the later one activates.
        at: Activation,
    },
    /// A fork set earlier than the one before it.
    #[error(
        "unsupported fork ordering: {earlier} enabled at {earlier_at}, but {later} enabled at {later_at}"
    )]
    Earlier {
        /// The fork that comes first.
        earlier: &'static str,
        /// Where it activates.
        earlier_at: Activation,
        /// The fork that comes after it but activates before it.
        later: &'static str,
        /// Where that one activates.
        later_at: Activation,
    },
    /// A block fork after a time fork.
    #[error(
        "unsupported fork ordering: {earlier} used timestamp ordering, but {later} reverted to block ordering"
    )]
    BlockAfterTime {
        /// The time fork.
        earlier: &'static str,
        /// The block fork after it.
        later: &'static str,
    },
    /// A fork active at the genesis while an earlier one is not.
    #[error(
        "unsupported fork ordering: {later} is active at the genesis (block {number}, timestamp {timestamp}) but {earlier}, which comes before it, is not ({earlier_at})"
    )]
    AtGenesis {
        /// The fork that comes first, not active at the genesis.
        earlier: &'static str,
        /// Where it activates.
        earlier_at: Activation,
        /// The later fork, active at the genesis.
        later: &'static str,
        /// The genesis block's number.
        number: u64,
        /// The genesis block's timestamp.
        timestamp: u64,
    },
}

/// One fork of the sequence: its configuration field, when it activates
/// (`None`: not set) and whether it may be left out.
struct Fork {
    name: &'static str,
    at: Option<Activation>,
    optional: bool,
}

/// The forks of `genesis`'s configuration in the order they must come.
fn sequence(genesis: &Genesis) -> Vec<Fork> {
    let c = &genesis.config;
    let block = |name, at: Option<u64>, optional| Fork {
        name,
        at: at.map(Activation::Block),
        optional,
    };
    let time = |name, at: Option<u64>, optional| Fork {
        name,
        at: at.map(Activation::Time),
        optional,
    };
    vec![
        block("homesteadBlock", c.homestead_block, false),
        block(
            "daoForkBlock",
            c.dao_fork_block.filter(|_| c.dao_fork_support),
            true,
        ),
        block("eip150Block", c.eip150_block, false),
        block("eip155Block", c.eip155_block, false),
        block("eip158Block", c.eip158_block, false),
        block("byzantiumBlock", c.byzantium_block, false),
        block("constantinopleBlock", c.constantinople_block, false),
        block("petersburgBlock", c.petersburg_block, false),
        block("istanbulBlock", c.istanbul_block, false),
        block("muirGlacierBlock", c.muir_glacier_block, true),
        block("berlinBlock", c.berlin_block, false),
        block("londonBlock", c.london_block, false),
        block("arrowGlacierBlock", c.arrow_glacier_block, true),
        block("grayGlacierBlock", c.gray_glacier_block, true),
        block("mergeNetsplitBlock", c.merge_netsplit_block, true),
        time("shanghaiTime", c.shanghai_time, false),
        time("cancunTime", c.cancun_time, false),
        time("pragueTime", c.prague_time, false),
        time("osakaTime", c.osaka_time, false),
        time("bpo1Time", c.bpo1_time, true),
        time("bpo2Time", c.bpo2_time, true),
        time("bpo3Time", c.bpo3_time, true),
        time("bpo4Time", c.bpo4_time, true),
        time("bpo5Time", c.bpo5_time, true),
        time("amsterdamTime", c.amsterdam_time, false),
    ]
}

/// Checks the order of `genesis`'s forks (module docs).
pub fn check_fork_order(genesis: &Genesis) -> Result<(), ForkOrderError> {
    let forks = sequence(genesis);
    let mut last: Option<&Fork> = None;
    for fork in &forks {
        if let Some(prev) = last {
            match (prev.at, fork.at) {
                (None, Some(at)) => {
                    return Err(ForkOrderError::Missing {
                        missing: prev.name,
                        later: fork.name,
                        at,
                    });
                }
                (Some(Activation::Time(_)), Some(Activation::Block(_))) => {
                    return Err(ForkOrderError::BlockAfterTime {
                        earlier: prev.name,
                        later: fork.name,
                    });
                }
                (Some(Activation::Block(a)), Some(Activation::Block(b)))
                | (Some(Activation::Time(a)), Some(Activation::Time(b)))
                    if a > b =>
                {
                    return Err(ForkOrderError::Earlier {
                        earlier: prev.name,
                        earlier_at: prev.at.expect("matched Some"),
                        later: fork.name,
                        later_at: fork.at.expect("matched Some"),
                    });
                }
                _ => {}
            }
        }
        // An optional fork left out does not count as the one before.
        if !fork.optional || fork.at.is_some() {
            last = Some(fork);
        }
    }
    check_at_genesis(genesis, &forks)
}

/// A fork active at the genesis block needs the set forks before it active
/// there too.
fn check_at_genesis(genesis: &Genesis, forks: &[Fork]) -> Result<(), ForkOrderError> {
    let number = genesis.number.unwrap_or(0);
    let timestamp = genesis.timestamp;
    let active = |at: Activation| match at {
        Activation::Block(block) => number >= block,
        Activation::Time(time) => timestamp >= time,
    };
    let mut first_inactive: Option<(&'static str, Activation)> = None;
    for fork in forks {
        let Some(at) = fork.at else { continue };
        match (active(at), first_inactive) {
            (true, Some((earlier, earlier_at))) => {
                return Err(ForkOrderError::AtGenesis {
                    earlier,
                    earlier_at,
                    later: fork.name,
                    number,
                    timestamp,
                });
            }
            (false, None) => first_inactive = Some((fork.name, at)),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A genesis whose config is `config` (JSON fields).
    fn genesis(config: serde_json::Value) -> Genesis {
        serde_json::from_value(serde_json::json!({
            "config": config,
            "alloc": {},
            "timestamp": "0x0",
            "gasLimit": "0x1c9c380",
            "difficulty": "0x0",
        }))
        .unwrap()
    }

    fn cancun_at_genesis() -> serde_json::Value {
        serde_json::json!({
            "chainId": 1, "homesteadBlock": 0, "eip150Block": 0, "eip155Block": 0,
            "eip158Block": 0, "byzantiumBlock": 0, "constantinopleBlock": 0,
            "petersburgBlock": 0, "istanbulBlock": 0, "berlinBlock": 0, "londonBlock": 0,
            "terminalTotalDifficulty": 0, "shanghaiTime": 0, "cancunTime": 0,
        })
    }

    #[test]
    fn an_ordered_configuration_passes() {
        check_fork_order(&genesis(cancun_at_genesis())).unwrap();
        let mut later = cancun_at_genesis();
        later["londonBlock"] = 5.into();
        later["shanghaiTime"] = 1_000.into();
        later["cancunTime"] = 2_000.into();
        later["pragueTime"] = 2_500.into();
        later["osakaTime"] = 2_500.into();
        later["bpo1Time"] = 3_000.into();
        check_fork_order(&genesis(later)).unwrap();
    }

    #[test]
    fn london_after_a_time_fork_active_at_the_genesis_is_refused_naming_both() {
        let mut config = cancun_at_genesis();
        config["londonBlock"] = 5.into();
        let error = check_fork_order(&genesis(config)).unwrap_err();
        assert_eq!(
            error,
            ForkOrderError::AtGenesis {
                earlier: "londonBlock",
                earlier_at: Activation::Block(5),
                later: "shanghaiTime",
                number: 0,
                timestamp: 0
            }
        );
        assert!(error.to_string().contains("londonBlock"), "{error}");
    }

    #[test]
    fn geths_three_rules_are_kept() {
        let mut earlier = cancun_at_genesis();
        earlier["berlinBlock"] = 10.into();
        earlier["londonBlock"] = 5.into();
        earlier["shanghaiTime"] = 100.into();
        earlier["cancunTime"] = 200.into();
        assert!(matches!(
            check_fork_order(&genesis(earlier)).unwrap_err(),
            ForkOrderError::Earlier {
                earlier: "berlinBlock",
                later: "londonBlock",
                ..
            }
        ));
        let mut missing = cancun_at_genesis();
        missing.as_object_mut().unwrap().remove("shanghaiTime");
        assert!(matches!(
            check_fork_order(&genesis(missing)).unwrap_err(),
            ForkOrderError::Missing {
                missing: "shanghaiTime",
                later: "cancunTime",
                ..
            }
        ));
        let mut times = cancun_at_genesis();
        times["shanghaiTime"] = 300.into();
        times["cancunTime"] = 200.into();
        assert!(matches!(
            check_fork_order(&genesis(times)).unwrap_err(),
            ForkOrderError::Earlier {
                earlier: "shanghaiTime",
                later: "cancunTime",
                ..
            }
        ));
        // Optional forks may be left out; a required one may not.
        let mut optional = cancun_at_genesis();
        optional["pragueTime"] = 5.into();
        optional["osakaTime"] = 5.into();
        optional["bpo2Time"] = 5.into();
        check_fork_order(&genesis(optional.clone())).unwrap();
        optional.as_object_mut().unwrap().remove("osakaTime");
        assert!(matches!(
            check_fork_order(&genesis(optional)).unwrap_err(),
            ForkOrderError::Missing {
                missing: "osakaTime",
                later: "bpo2Time",
                ..
            }
        ));
    }
}
