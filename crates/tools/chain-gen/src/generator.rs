//! The chain, block by block: each block's transactions chosen and signed
//! while alloy-evm's `EthBlockExecutor` runs them over a revm `State` over
//! the in-memory world, then its header completed from what the execution
//! gave (gas used, receipts root, logs bloom) and from the world's new
//! state root.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use alloy_consensus::proofs::{calculate_receipt_root, calculate_transaction_root};
use alloy_consensus::transaction::Recovered;
use alloy_consensus::{Block, BlockBody, EMPTY_OMMER_ROOT_HASH, Header, TxEnvelope, TxReceipt};
use alloy_eip7928::{BlockAccessIndex, BlockAccessList, compute_block_access_list_hash};
use alloy_eips::eip1559::BaseFeeParams;
use alloy_eips::eip2935::{HISTORY_STORAGE_ADDRESS, HISTORY_STORAGE_CODE};
use alloy_eips::eip4788::{BEACON_ROOTS_ADDRESS, BEACON_ROOTS_CODE};
use alloy_eips::eip4895::Withdrawals;
use alloy_eips::eip7002::{
    WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS, WITHDRAWAL_REQUEST_PREDEPLOY_CODE,
};
use alloy_eips::eip7251::{
    CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS, CONSOLIDATION_REQUEST_PREDEPLOY_CODE,
};
use alloy_eips::eip7840::BlobParams;
use alloy_evm::block::{BlockExecutor, BlockExecutorFactory};
use alloy_evm::eth::receipt_builder::AlloyReceiptBuilder;
use alloy_evm::eth::{EthBlockExecutionCtx, EthBlockExecutorFactory};
use alloy_evm::{Evm, EvmFactory};
use alloy_genesis::{ChainConfig, Genesis, GenesisAccount};
use alloy_hardforks::{EthereumHardfork, ForkCondition};
use alloy_primitives::{Address, B256, Bloom, Bytes, U256, keccak256};
use alloy_trie::EMPTY_ROOT_HASH;
use rand::SeedableRng;
use rand::rngs::StdRng;
use revm::database::State;
use revm::database::states::bundle_state::BundleRetention;
use revm::database_interface::WrapDatabaseRef;
use strata_chainspec::{ChainSpec, GenesisBlock};
use strata_chainspec::{StrataEvmFactory, UncountedStateGas, uncount_state_gas};

use crate::config::{CHAIN_ID, Fork, GenConfig};
use crate::error::GenError;
use crate::mix::{BlobRoom, Effect, Mix, Planned, TxShape};
use crate::population::{Population, Token};
use crate::root::alloc_root;
use crate::world::World;

/// The genesis block's timestamp (late 2023); each block is 12 s later.
pub(crate) const GENESIS_TIMESTAMP: u64 = 1_700_000_000;
/// Seconds between blocks.
pub(crate) const BLOCK_TIME: u64 = 12;
/// What every block's header carries as extra data.
pub(crate) const EXTRA_DATA: &[u8] = b"strata gen-chain";
/// The genesis base fee: EIP-1559's initial 1 gwei.
pub(crate) const GENESIS_BASE_FEE: u64 = 1_000_000_000;

/// The fee recipient of every block (a block builder's address).
pub fn coinbase() -> Address {
    Address::from_slice(&keccak256(b"strata-gen-chain coinbase")[12..])
}

/// The chain's fork rules: every fork through `fork` active from genesis.
pub fn chain_config(fork: Fork) -> ChainConfig {
    let from = |first: Fork| (fork >= first).then_some(0);
    ChainConfig {
        chain_id: CHAIN_ID,
        homestead_block: Some(0),
        eip150_block: Some(0),
        eip155_block: Some(0),
        eip158_block: Some(0),
        byzantium_block: Some(0),
        constantinople_block: Some(0),
        petersburg_block: Some(0),
        istanbul_block: Some(0),
        muir_glacier_block: Some(0),
        berlin_block: Some(0),
        london_block: Some(0),
        arrow_glacier_block: Some(0),
        gray_glacier_block: Some(0),
        terminal_total_difficulty: Some(U256::ZERO),
        terminal_total_difficulty_passed: true,
        shanghai_time: Some(0),
        cancun_time: Some(0),
        prague_time: from(Fork::Prague),
        osaka_time: from(Fork::Osaka),
        amsterdam_time: from(Fork::Amsterdam),
        ..Default::default()
    }
}

/// From Prague, the system contracts the block's system calls run (EIP-4788
/// beacon roots, EIP-2935 block hashes, EIP-7002 withdrawal and EIP-7251
/// consolidation requests), deployed in the genesis as on mainnet.
fn system_contracts(fork: Fork) -> Vec<(Address, GenesisAccount)> {
    if fork < Fork::Prague {
        return Vec::new();
    }
    [
        (BEACON_ROOTS_ADDRESS, BEACON_ROOTS_CODE.clone()),
        (HISTORY_STORAGE_ADDRESS, HISTORY_STORAGE_CODE.clone()),
        (
            WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS,
            WITHDRAWAL_REQUEST_PREDEPLOY_CODE.clone(),
        ),
        (
            CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS,
            CONSOLIDATION_REQUEST_PREDEPLOY_CODE.clone(),
        ),
    ]
    .into_iter()
    .map(|(address, code)| {
        let account = GenesisAccount::default()
            .with_nonce(Some(1))
            .with_code(Some(code));
        (address, account)
    })
    .collect()
}

/// One generated block with what it took.
#[derive(Clone, Debug)]
pub struct GeneratedBlock {
    /// The block.
    pub block: Block<TxEnvelope>,
    /// Its hash.
    pub hash: B256,
    /// From Amsterdam, its access list (EIP-7928), which its header's
    /// `blockAccessListHash` hashes and which travels beside it.
    pub access_list: Option<BlockAccessList>,
    /// Transactions by shape.
    pub shapes: BTreeMap<TxShape, usize>,
    /// Transactions that reverted (valid, included, but undone; the mix
    /// makes none on purpose).
    pub reverted: usize,
    /// Choosing, signing and executing the transactions.
    pub execution: Duration,
    /// The state root (storage roots of changed accounts, account trie).
    pub root: Duration,
}

/// Generates a chain block by block; the same settings give the same blocks.
#[derive(Debug)]
pub struct Generator {
    config: GenConfig,
    spec: ChainSpec,
    rng: StdRng,
    population: Population,
    world: World,
    genesis: Genesis,
    parent: Header,
    parent_hash: B256,
}

impl Generator {
    /// Draws the population, builds the genesis and its state; the
    /// generator keeps the genesis with its allocation ([`Generator::genesis`]).
    pub fn new(config: &GenConfig) -> Result<Self, GenError> {
        Self::start(config, true, |_, _| Ok(()))
    }

    /// Draws the population and builds the genesis; `write` sees it with
    /// its allocation and state root before the allocation is consumed
    /// into the world (whose root must come out the same), so the state is
    /// held once, not twice (at ten million accounts, gigabytes). The
    /// generator keeps the genesis without its allocation.
    pub fn writing_genesis(
        config: &GenConfig,
        write: impl FnOnce(&Genesis, B256) -> Result<(), GenError>,
    ) -> Result<Self, GenError> {
        Self::start(config, false, write)
    }

    fn start(
        config: &GenConfig,
        keep_alloc: bool,
        write: impl FnOnce(&Genesis, B256) -> Result<(), GenError>,
    ) -> Result<Self, GenError> {
        config.validate()?;
        let mut rng = StdRng::seed_from_u64(config.seed);
        let (population, mut alloc) =
            Population::generate(config.seed, config.accounts, config.contracts, &mut rng)?;
        alloc.extend(system_contracts(config.fork));
        let mut genesis = Genesis {
            config: chain_config(config.fork),
            nonce: 0,
            timestamp: GENESIS_TIMESTAMP,
            extra_data: Bytes::from_static(EXTRA_DATA),
            gas_limit: config.gas_limit(),
            difficulty: U256::ZERO,
            mix_hash: B256::ZERO,
            coinbase: Address::ZERO,
            alloc,
            base_fee_per_gas: Some(u128::from(GENESIS_BASE_FEE)),
            excess_blob_gas: Some(0),
            blob_gas_used: Some(0),
            number: Some(0),
            ..Default::default()
        };
        // Two roots of the genesis state by alloy-trie's builder: over the
        // allocation, then over the world made of it.
        let root = alloc_root(&genesis.alloc);
        write(&genesis, root)?;
        let alloc = if keep_alloc {
            genesis.alloc.clone()
        } else {
            std::mem::take(&mut genesis.alloc)
        };
        let mut world = World::from_alloc(alloc);
        let world_root = world.state_root();
        if world_root != root {
            return Err(GenError::Genesis {
                message: format!(
                    "the world's root {world_root} differs from the allocation's {root}"
                ),
            });
        }
        let (header, hash) =
            GenesisBlock::header_with_root(&genesis, root).map_err(|error| GenError::Genesis {
                message: error.to_string(),
            })?;
        world.set_block_hash(0, hash);
        Ok(Self {
            config: config.clone(),
            spec: ChainSpec::from_chain_config(&genesis.config),
            rng,
            population,
            world,
            genesis,
            parent: header,
            parent_hash: hash,
        })
    }

    /// The genesis (config, header fields, and the allocation when made by
    /// [`Generator::new`]): `genesis.json`.
    pub fn genesis(&self) -> &Genesis {
        &self.genesis
    }

    /// The chain's fork schedule.
    pub fn spec(&self) -> &ChainSpec {
        &self.spec
    }

    /// The last block's header (the genesis header before any block).
    pub fn head(&self) -> (&Header, B256) {
        (&self.parent, self.parent_hash)
    }

    /// The world after the last block.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The header of the next block before its execution: everything but
    /// the roots, bloom and gas used.
    fn next_header(&self) -> Header {
        let parent = &self.parent;
        let number = parent.number + 1;
        let timestamp = parent.timestamp + BLOCK_TIME;
        let blob_params = self
            .spec
            .blob_params_at(timestamp)
            .unwrap_or_else(BlobParams::cancun);
        let amsterdam = self.config.fork >= Fork::Amsterdam;
        Header {
            parent_hash: self.parent_hash,
            ommers_hash: EMPTY_OMMER_ROOT_HASH,
            beneficiary: coinbase(),
            number,
            gas_limit: self.config.gas_limit(),
            timestamp,
            extra_data: Bytes::from_static(EXTRA_DATA),
            mix_hash: keccak256([b"prevrandao".as_slice(), &number.to_be_bytes()].concat()),
            base_fee_per_gas: parent.next_block_base_fee(BaseFeeParams::ethereum()),
            withdrawals_root: Some(EMPTY_ROOT_HASH),
            blob_gas_used: Some(0),
            excess_blob_gas: parent.next_block_excess_blob_gas(blob_params),
            parent_beacon_block_root: Some(keccak256(
                [b"beacon".as_slice(), &number.to_be_bytes()].concat(),
            )),
            // One slot per block since the genesis.
            slot_number: amsterdam.then_some(number),
            ..Default::default()
        }
    }

    /// Builds, executes and seals the next block.
    pub fn next_block(&mut self) -> Result<GeneratedBlock, GenError> {
        let mut header = self.next_header();
        let number = header.number;
        let started = Instant::now();
        let built = self.execute(&header)?;
        let execution = started.elapsed();

        let started = Instant::now();
        header.state_root = self.world.state_root();
        let root = started.elapsed();
        header.gas_used = built.gas_used;
        header.blob_gas_used = Some(built.blob_gas_used);
        if self.config.fork >= Fork::Prague {
            header.requests_hash = Some(built.requests_hash);
        }
        if let Some(list) = &built.access_list {
            header.block_access_list_hash = Some(compute_block_access_list_hash(list));
        }
        header.transactions_root = calculate_transaction_root(&built.transactions);
        header.receipts_root = calculate_receipt_root(&built.receipts);
        header.logs_bloom = built
            .receipts
            .iter()
            .fold(Bloom::ZERO, |bloom, receipt| bloom | receipt.bloom());
        let block = Block {
            header,
            body: BlockBody {
                transactions: built.transactions,
                ommers: Vec::new(),
                withdrawals: Some(Withdrawals::default()),
            },
        };
        let hash = block.header.hash_slow();
        self.world.set_block_hash(number, hash);
        self.parent = block.header.clone();
        self.parent_hash = hash;
        Ok(GeneratedBlock {
            block,
            hash,
            access_list: built.access_list,
            shapes: built.shapes,
            reverted: built.reverted,
            execution,
            root,
        })
    }

    /// Chooses, signs and executes the block's transactions until its gas
    /// reaches the target, then applies its changes to the world.
    fn execute(&mut self, header: &Header) -> Result<Built, GenError> {
        let number = header.number;
        let failed = |error: &dyn std::fmt::Display| GenError::Execution {
            number,
            message: error.to_string(),
        };
        let amsterdam = self.config.fork >= Fork::Amsterdam;
        let mut state = State::builder()
            .with_database(WrapDatabaseRef(self.world.db()))
            .with_bundle_update()
            .with_bal_builder_if(amsterdam)
            .build();
        let env = strata_chainspec::evm_env(&self.spec, header);
        // As the executor does: alloy-evm's later-devnet EIP-8282 calls off.
        let executor_spec = if amsterdam {
            self.spec
                .with_fork(EthereumHardfork::Amsterdam, ForkCondition::Never)
        } else {
            self.spec.clone()
        };
        let factory = EthBlockExecutorFactory::new(
            AlloyReceiptBuilder::default(),
            executor_spec,
            StrataEvmFactory,
        );
        let evm = factory.evm_factory().create_evm(&mut state, env);
        let ctx = EthBlockExecutionCtx {
            parent_hash: header.parent_hash,
            parent_beacon_block_root: header.parent_beacon_block_root,
            ommers: &[],
            withdrawals: Some(Cow::Owned(Vec::new())),
            extra_data: header.extra_data.clone(),
            tx_count_hint: None,
            slot_number: header.slot_number,
        };
        let mut executor = factory.create_executor(evm, ctx);
        executor
            .apply_pre_execution_changes()
            .map_err(|e| failed(&e))?;

        let mut transactions = Vec::new();
        let mut effects = Vec::new();
        let mut shapes = BTreeMap::new();
        let mut gas_used = 0u64;
        let mut mix = Mix {
            population: &mut self.population,
            rng: &mut self.rng,
            base_fee: header.base_fee_per_gas.unwrap_or_default(),
            chain_id: self.spec.chain_id,
            number,
            state_byte_gas: if amsterdam {
                strata_chainspec::cost_per_state_byte(header.gas_limit)
            } else {
                0
            },
            delegations: self.config.fork >= Fork::Prague,
            blobs: self
                .spec
                .blob_params_at(header.timestamp)
                .map(|params| BlobRoom {
                    left: params.target_blob_count,
                    per_transaction: params.max_blobs_per_tx,
                    fee: params.calc_blob_fee(header.excess_blob_gas.unwrap_or_default()),
                }),
        };
        while gas_used < self.config.gas_per_block {
            let live = executor.evm_mut().db_mut();
            let Some(Planned {
                sender,
                tx,
                shape,
                effect,
            }) = mix.next(
                *live,
                header.gas_limit.saturating_sub(gas_used),
                transactions.len(),
            )?
            else {
                break;
            };
            let key = &mix.population.eoas[sender as usize];
            let signed = key.sign(tx).map_err(|e| GenError::Signing {
                number,
                index: transactions.len(),
                message: e.to_string(),
            })?;
            let recovered = Recovered::new_unchecked(signed, key.address);
            // EIP-7928: transaction i's changes at index i + 1.
            executor
                .evm_mut()
                .db_mut()
                .set_bal_index(BlockAccessIndex::new(transactions.len() as u64 + 1));
            let output = executor
                .execute_transaction(&recovered)
                .map_err(|e| failed(&format!("transaction {}: {e}", transactions.len())))?;
            // State gas the release's block counts nowhere (none in the
            // mix: no create or call fails under a parent that fails).
            let uncounted = executor.evm().uncounted_state_gas();
            uncount_state_gas(&mut executor, uncounted);
            gas_used += output.tx_gas_used();
            transactions.push(recovered.into_inner());
            effects.push(effect);
            *shapes.entry(shape).or_insert(0) += 1;
        }
        executor
            .evm_mut()
            .db_mut()
            .set_bal_index(BlockAccessIndex::new(transactions.len() as u64 + 1));
        let (_, result) = executor.finish().map_err(|e| failed(&e))?;
        let access_list = state.take_built_alloy_bal().map(|list| {
            let mut list = list;
            list.sort_by_key(|account| account.address);
            list
        });
        state.merge_transitions(BundleRetention::PlainState);
        let bundle = state.take_bundle();
        drop(state);
        self.world.apply(bundle);
        let mut reverted = 0;
        for (effect, receipt) in effects.into_iter().zip(&result.receipts) {
            if receipt.status() {
                self.learn(effect);
            } else {
                reverted += 1;
            }
        }
        Ok(Built {
            transactions,
            requests_hash: result.requests.requests_hash(),
            receipts: result.receipts,
            access_list,
            gas_used: result.gas_used,
            blob_gas_used: result.blob_gas_used,
            shapes,
            reverted,
        })
    }

    /// Records what a successful transaction changed about the population.
    fn learn(&mut self, effect: Effect) {
        match effect {
            Effect::None => {}
            Effect::NewHolder { token, holder } => {
                if let Some(token) = self.population.tokens.get_mut(token) {
                    token.holders.push(holder);
                }
            }
            Effect::Created { address, creator } => self.population.tokens.push(Token {
                address,
                holders: vec![creator],
            }),
        }
    }
}

/// A block's executed transactions before its header is sealed.
struct Built {
    transactions: Vec<TxEnvelope>,
    receipts: Vec<alloy_consensus::ReceiptEnvelope>,
    requests_hash: B256,
    access_list: Option<BlockAccessList>,
    gas_used: u64,
    blob_gas_used: u64,
    shapes: BTreeMap<TxShape, usize>,
    reverted: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The storage tries kept between blocks give the root recomputed from
    /// the whole state, block after block.
    #[test]
    fn kept_storage_tries_give_the_whole_states_root() {
        let config = GenConfig {
            gas_per_block: 3_000_000,
            ..GenConfig::new(200, 20, 4, 9)
        };
        let mut generator = Generator::new(&config).expect("starts");
        generator.world.keep_storage_tries_from(32);
        for _ in 0..4 {
            let block = generator.next_block().expect("a block");
            assert_eq!(
                block.block.header.state_root,
                generator.world().full_state_root(),
                "block {}",
                block.block.header.number
            );
        }
        assert!(
            generator.world.kept_storage_tries() >= 3,
            "the popular tokens"
        );
    }
}
