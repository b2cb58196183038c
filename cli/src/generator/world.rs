//! The generated genesis and the generator's bookkeeping about it: which
//! addresses are EOAs, which are contracts (in popularity order), the
//! bytecode pool and each contract's known slots.

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use rand::Rng;
use strata_storage::genesis::{GenesisAccount, GenesisAlloc};

use super::{Exponent, GenConfig, Zipf};

/// A contract the generator knows about.
#[derive(Debug, Clone)]
pub(super) struct Contract {
    pub(super) address: Address,
    /// Index of the balances mapping in the contract's storage layout.
    pub(super) mapping_index: u64,
    /// Slots that have held a value (some may have been cleared since).
    pub(super) slots: Vec<B256>,
    /// False after a self-destruct without re-creation.
    pub(super) alive: bool,
}

/// Generator bookkeeping.
#[derive(Debug, Clone)]
pub(super) struct Meta {
    /// EOAs: the genesis ones first (index = popularity rank), then new ones.
    pub(super) eoas: Vec<Address>,
    /// Number of genesis EOAs.
    pub(super) genesis_eoas: usize,
    /// Contracts: the genesis ones first (index = popularity rank), then created ones.
    pub(super) contracts: Vec<Contract>,
    /// Number of genesis contracts.
    pub(super) genesis_contracts: usize,
    /// Contract address → index in `contracts`.
    pub(super) contract_index: BTreeMap<Address, usize>,
    /// The distinct bytecodes contracts are made of.
    pub(super) codes: Vec<Bytes>,
    /// Popularity of the bytecodes (proxies and token clones share code).
    pub(super) code_zipf: Zipf,
}

impl Meta {
    /// Register a new contract (created by a block).
    pub(super) fn add_contract(&mut self, contract: Contract) -> usize {
        let index = self.contracts.len();
        self.contract_index.insert(contract.address, index);
        self.contracts.push(contract);
        index
    }

    /// A bytecode from the pool, popular ones more often.
    pub(super) fn pick_code<R: Rng + ?Sized>(&self, rng: &mut R) -> Bytes {
        self.codes[self.code_zipf.sample(rng)].clone()
    }
}

/// The storage slot of `holder` in a Solidity `mapping(address => uint)`
/// declared at `index`: keccak256(pad32(holder) ‖ pad32(index)).
pub(super) fn mapping_slot(holder: &Address, index: u64) -> B256 {
    let mut preimage = [0u8; 64];
    preimage[12..32].copy_from_slice(holder.as_slice());
    preimage[56..64].copy_from_slice(&index.to_be_bytes());
    keccak256(preimage)
}

/// A random, non-zero token amount (up to ~10^24 base units).
pub(super) fn token_amount<R: Rng + ?Sized>(rng: &mut R) -> U256 {
    let exponent = rng.random_range(3..80u32);
    U256::from(rng.random_range(1u128..=(1u128 << exponent.min(100))))
}

fn random_address<R: Rng + ?Sized>(rng: &mut R) -> Address {
    Address::from(rng.random::<[u8; 20]>())
}

/// A fresh random address (new EOA or contract).
pub(super) fn new_address<R: Rng + ?Sized>(rng: &mut R) -> Address {
    random_address(rng)
}

fn bytecode<R: Rng + ?Sized>(rng: &mut R) -> Bytes {
    let len = rng.random_range(300..2_500);
    // The Solidity preamble (free-memory pointer, selector dispatch), then body.
    let mut code = vec![0x60, 0x80, 0x60, 0x40, 0x52, 0x60, 0x04, 0x36, 0x10, 0x61];
    code.extend((code.len()..len).map(|_| rng.random::<u8>()));
    Bytes::from(code)
}

/// Build the genesis allocation and the bookkeeping for `config`.
pub(super) fn genesis<R: Rng + ?Sized>(config: &GenConfig, rng: &mut R) -> (GenesisAlloc, Meta) {
    let mut alloc = GenesisAlloc::new();
    let eoas: Vec<Address> = (0..config.accounts).map(|_| random_address(rng)).collect();
    for address in &eoas {
        let balance = U256::from(rng.random_range(10u128.pow(14)..10u128.pow(22)));
        let u = rng.random::<f64>();
        let nonce = (u * u * u * 2_000.0) as u64;
        alloc.insert(
            *address,
            GenesisAccount {
                nonce,
                balance,
                ..GenesisAccount::default()
            },
        );
    }

    let code_count = (config.contracts / 3).clamp(1, 8);
    let codes: Vec<Bytes> = (0..code_count).map(|_| bytecode(rng)).collect();
    let code_zipf = Zipf::new(code_count, Exponent::One);
    let mut meta = Meta {
        genesis_eoas: eoas.len(),
        eoas,
        contracts: Vec::with_capacity(config.contracts),
        genesis_contracts: config.contracts,
        contract_index: BTreeMap::new(),
        codes,
        code_zipf,
    };

    // Holders per contract follow the contracts' popularity (Zipf, s = 1):
    // about two balance slots per EOA in total.
    let popularity = Zipf::new(config.contracts.max(1), Exponent::One);
    let budget = 2 * config.accounts;
    for rank in 0..config.contracts {
        let address = random_address(rng);
        let mapping_index = rng.random_range(0..8u64);
        let mut storage = BTreeMap::new();
        for fixed in 0..rng.random_range(1..6u64) {
            if fixed != mapping_index {
                storage.insert(
                    B256::from(U256::from(fixed)),
                    U256::from(rng.random::<u64>() | 1),
                );
            }
        }
        let holders = ((budget as f64 * popularity.weight(rank)).round() as usize)
            .clamp(1, config.accounts.max(1));
        if !meta.eoas.is_empty() {
            for _ in 0..holders {
                let holder = meta.eoas[rng.random_range(0..meta.eoas.len())];
                storage.insert(mapping_slot(&holder, mapping_index), token_amount(rng));
            }
        }
        let code = meta.pick_code(rng);
        let balance = if rng.random_bool(0.2) {
            U256::from(rng.random::<u64>())
        } else {
            U256::ZERO
        };
        meta.add_contract(Contract {
            address,
            mapping_index,
            slots: storage.keys().copied().collect(),
            alive: true,
        });
        debug_assert_eq!(meta.contracts.len(), rank + 1);
        alloc.insert(
            address,
            GenesisAccount {
                nonce: 1,
                balance,
                code,
                storage,
            },
        );
    }
    (alloc, meta)
}
