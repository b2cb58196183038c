//! The generated genesis and the generator's bookkeeping about it: which
//! addresses are EOAs, which are contracts (in popularity order), the
//! bytecode pool and each contract's known slots.

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use rand::Rng;

use super::{Exponent, GenConfig, SlotDensity, Zipf};
use crate::model::{NewAccount, WorldState};

/// A contract the generator knows about.
#[derive(Debug, Clone)]
pub(super) struct Contract {
    pub(super) address: Address,
    /// Index of the balances mapping in the contract's storage layout.
    pub(super) mapping_index: u64,
    /// How many of the slots that have held a value are the ones the
    /// contract had in the genesis: the model lists them
    /// ([`crate::model::AccountRef::initial_slot`]), so they are not copied
    /// here. Zero for a contract created by a block, or once self-destructed.
    pub(super) genesis_slots: usize,
    /// The other slots that have held a value (some may have been cleared
    /// since): the `k`-th known slot is genesis slot `k`, then
    /// `slots[k - genesis_slots]`.
    pub(super) slots: Vec<B256>,
    /// False after a self-destruct without re-creation.
    pub(super) alive: bool,
}

impl Contract {
    /// Number of slots that have held a value.
    pub(super) fn known_slots(&self) -> usize {
        self.genesis_slots + self.slots.len()
    }

    /// The `k`-th slot that has held a value (`k < known_slots()`).
    pub(super) fn known_slot(&self, state: &WorldState, k: usize) -> B256 {
        match k.checked_sub(self.genesis_slots) {
            Some(added) => self.slots[added],
            None => state
                .account(&self.address)
                .and_then(|account| account.initial_slot(k))
                .expect("a live genesis contract keeps its genesis slots in the model"),
        }
    }

    /// Forget every slot (a self-destruct).
    pub(super) fn clear_slots(&mut self) {
        self.genesis_slots = 0;
        self.slots.clear();
    }
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

/// Draws distinct indices below `n` (rejecting repeats) until cleared.
struct Distinct {
    n: usize,
    /// A bit per index: drawn since the last clear.
    taken: Vec<u64>,
    drawn: Vec<usize>,
}

impl Distinct {
    fn new(n: usize) -> Self {
        Self {
            n,
            taken: vec![0; n.div_ceil(64)],
            drawn: Vec::new(),
        }
    }

    /// An index not drawn since the last clear (there must be one left).
    fn draw<R: Rng + ?Sized>(&mut self, rng: &mut R) -> usize {
        debug_assert!(self.drawn.len() < self.n, "an index is left");
        loop {
            let index = rng.random_range(0..self.n);
            let (word, bit) = (index / 64, 1u64 << (index % 64));
            if self.taken[word] & bit == 0 {
                self.taken[word] |= bit;
                self.drawn.push(index);
                return index;
            }
        }
    }

    /// Forget the draws.
    fn clear(&mut self) {
        for index in self.drawn.drain(..) {
            self.taken[index / 64] = 0;
        }
    }
}

/// Build the genesis state and the bookkeeping for `config`, with
/// `density` slots.
pub(super) fn genesis<R: Rng + ?Sized>(
    config: &GenConfig,
    density: SlotDensity,
    rng: &mut R,
) -> (WorldState, Meta) {
    let mut accounts = Vec::with_capacity(config.accounts + config.contracts);
    let eoas: Vec<Address> = (0..config.accounts).map(|_| random_address(rng)).collect();
    for address in &eoas {
        let balance = U256::from(rng.random_range(10u128.pow(14)..10u128.pow(22)));
        let u = rng.random::<f64>();
        let nonce = (u * u * u * 2_000.0) as u64;
        accounts.push(NewAccount {
            address: *address,
            nonce,
            balance,
            ..NewAccount::default()
        });
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

    // Holders per contract follow the contracts' popularity (Zipf, s = 1).
    let popularity = Zipf::new(config.contracts.max(1), Exponent::One);
    let budget = density.holder_draws(config);
    // With a density asked for, a contract's holders are distinct EOAs, so
    // the slots found are the holders drawn (the default draws with
    // repetition, as the traces of earlier versions did).
    let mut distinct = (density != SlotDensity::Default).then(|| Distinct::new(config.accounts));
    for rank in 0..config.contracts {
        let address = random_address(rng);
        let mapping_index = rng.random_range(0..8u64);
        let mut storage = Vec::new();
        for fixed in 0..rng.random_range(1..6u64) {
            if fixed != mapping_index {
                storage.push((
                    B256::from(U256::from(fixed)),
                    U256::from(rng.random::<u64>() | 1),
                ));
            }
        }
        let holders = ((budget as f64 * popularity.weight(rank)).round() as usize)
            .clamp(1, config.accounts.max(1));
        if !meta.eoas.is_empty() {
            storage.reserve_exact(holders);
            for _ in 0..holders {
                let index = match &mut distinct {
                    Some(distinct) => distinct.draw(rng),
                    None => rng.random_range(0..meta.eoas.len()),
                };
                let holder = meta.eoas[index];
                storage.push((mapping_slot(&holder, mapping_index), token_amount(rng)));
            }
        }
        if let Some(distinct) = &mut distinct {
            distinct.clear();
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
            genesis_slots: 0,
            slots: Vec::new(),
            alive: true,
        });
        debug_assert_eq!(meta.contracts.len(), rank + 1);
        accounts.push(NewAccount {
            address,
            nonce: 1,
            balance,
            code,
            storage,
        });
    }
    let state = WorldState::from_accounts(accounts);
    for contract in &mut meta.contracts {
        contract.genesis_slots = state
            .account(&contract.address)
            .map_or(0, |account| account.storage().len());
    }
    (state, meta)
}
