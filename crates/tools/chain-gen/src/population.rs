//! Who is in the chain: the EOAs with their keys, the contracts by kind,
//! who holds which token, and the genesis allocation that puts them all in
//! the state.
//!
//! - EOAs `0..accounts` are keys `0..accounts` of the seed, each funded with
//!   10 to 1,000 ether, half of them with a nonce already (as mainnet's
//!   accounts have). EOAs created by transfers later take the next keys.
//! - Contract `i`'s address is the last 20 bytes of
//!   `keccak256("strata-gen-chain contract" ‖ seed ‖ i)`; contracts 0, 1
//!   and 2 are a token, a router and a store, then seven tokens, a router
//!   and two stores in every ten.
//! - Token holdings: about two per EOA in all, spread over the tokens by
//!   popularity (the token of rank `r` has holders in proportion to
//!   `1 / (r + 1)`), each balance 100 to 1,000,000 tokens of 18 decimals.
//!   Every router holds 10^30 of each of the (up to) 32 most popular tokens.
//! - A store has 16 to 256 slots `0..n` set.
//! - The EIP-4788 beacon roots contract at its address, so each block's
//!   system call stores the parent beacon root as on mainnet.

use std::collections::{BTreeMap, BTreeSet};

use alloy_eips::eip4788::{BEACON_ROOTS_ADDRESS, BEACON_ROOTS_CODE};
use alloy_genesis::GenesisAccount;
use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use rand::Rng;
use rand::rngs::StdRng;
use rayon::prelude::*;

use crate::contracts::{ContractKind, balance_slot, runtime_code};
use crate::error::GenError;
use crate::keys::AccountKey;

/// One ether in wei.
pub(crate) const ETHER: u64 = 1_000_000_000_000_000_000;
/// How many of the most popular tokens every router holds.
const ROUTER_TOKENS: usize = 32;
/// A router's balance in each of its tokens.
const ROUTER_BALANCE: U256 = U256::from_limbs([0x4674_edea_4000_0000, 0x0c_9f2c_9cd0, 0, 0]);

/// A token and the EOAs (by key index) known to hold some of it.
#[derive(Clone, Debug)]
pub(crate) struct Token {
    /// Its address.
    pub address: Address,
    /// Holders by key index; may repeat (a holder paid twice).
    pub holders: Vec<u32>,
}

/// A router and the tokens (indexes into [`Population::tokens`]) it holds.
#[derive(Clone, Debug)]
pub(crate) struct Router {
    /// Its address.
    pub address: Address,
    /// The tokens it can pay out.
    pub tokens: Vec<usize>,
}

/// A store and how many of its slots the genesis sets.
#[derive(Clone, Debug)]
pub(crate) struct Store {
    /// Its address.
    pub address: Address,
    /// Slots `0..slots` are set at genesis.
    pub slots: u64,
}

/// Everyone in the chain.
#[derive(Clone, Debug)]
pub(crate) struct Population {
    /// The seed keys are derived from.
    seed: u64,
    /// Every EOA with a key, genesis ones first; index = key index.
    pub eoas: Vec<AccountKey>,
    /// How many of `eoas` are funded at genesis.
    pub funded: usize,
    /// Tokens by popularity, most popular first; created ones appended.
    pub tokens: Vec<Token>,
    /// Routers by popularity.
    pub routers: Vec<Router>,
    /// Stores by popularity.
    pub stores: Vec<Store>,
    /// EOAs an EIP-7702 authorization of the mix delegated to code: a plain
    /// ether transfer's 21,000 gas would not run it, so they receive none.
    pub delegated: BTreeSet<u32>,
}

/// The kind of contract number `index`.
pub(crate) fn kind_of(index: u64) -> ContractKind {
    match index {
        0 => ContractKind::Token,
        1 => ContractKind::Router,
        2 => ContractKind::Store,
        _ => match index % 10 {
            7 => ContractKind::Router,
            8 | 9 => ContractKind::Store,
            _ => ContractKind::Token,
        },
    }
}

/// Contract number `index`'s address.
pub(crate) fn contract_address(seed: u64, index: u64) -> Address {
    let mut input = b"strata-gen-chain contract".to_vec();
    input.extend_from_slice(&seed.to_be_bytes());
    input.extend_from_slice(&index.to_be_bytes());
    Address::from_slice(&keccak256(&input)[12..])
}

/// A rank in `0..n` drawn with probability about proportional to
/// `1 / (rank + 1)` (log-uniform: Zipf's law with exponent 1). `n > 0`.
pub(crate) fn zipf(rng: &mut StdRng, n: usize) -> usize {
    let x = ((n as f64 + 1.0).powf(rng.random::<f64>()) - 1.0) as usize;
    x.min(n.saturating_sub(1))
}

impl Population {
    /// Draws the population of `accounts` EOAs and `contracts` contracts and
    /// returns it with the genesis allocation.
    pub(crate) fn generate(
        seed: u64,
        accounts: u64,
        contracts: u64,
        rng: &mut StdRng,
    ) -> Result<(Self, BTreeMap<Address, GenesisAccount>), GenError> {
        let eoas: Vec<AccountKey> = (0..accounts)
            .into_par_iter()
            .map(|index| AccountKey::derive(seed, index))
            .collect();
        let mut alloc = BTreeMap::new();
        for key in &eoas {
            let nonce = if rng.random_bool(0.5) {
                rng.random_range(1..=500)
            } else {
                0
            };
            let balance = U256::from(rng.random_range(10..=1_000u64)) * U256::from(ETHER);
            alloc.insert(
                key.address,
                GenesisAccount::default()
                    .with_nonce(Some(nonce))
                    .with_balance(balance),
            );
        }
        let mut population = Self {
            seed,
            eoas,
            funded: accounts as usize,
            tokens: Vec::new(),
            routers: Vec::new(),
            stores: Vec::new(),
            delegated: BTreeSet::new(),
        };
        let mut storage: BTreeMap<Address, BTreeMap<B256, B256>> = BTreeMap::new();
        let mut code: BTreeMap<Address, Bytes> = BTreeMap::new();
        for index in 0..contracts {
            let address = contract_address(seed, index);
            let kind = kind_of(index);
            code.insert(address, runtime_code(kind)?);
            match kind {
                ContractKind::Token => population.tokens.push(Token {
                    address,
                    holders: Vec::new(),
                }),
                ContractKind::Router => population.routers.push(Router {
                    address,
                    tokens: Vec::new(),
                }),
                ContractKind::Store => {
                    let slots = rng.random_range(16..=256u64);
                    let entries = storage.entry(address).or_default();
                    for slot in 0..slots {
                        let value = U256::from(rng.random_range(1..=u64::MAX));
                        entries.insert(U256::from(slot).into(), value.into());
                    }
                    population.stores.push(Store { address, slots });
                }
            }
        }
        population.hold_tokens(rng, &mut storage);
        for (address, code) in code {
            let account = GenesisAccount::default()
                .with_nonce(Some(1))
                .with_code(Some(code))
                .with_storage(storage.remove(&address));
            alloc.insert(address, account);
        }
        alloc.insert(
            BEACON_ROOTS_ADDRESS,
            GenesisAccount::default()
                .with_nonce(Some(1))
                .with_code(Some(BEACON_ROOTS_CODE.clone())),
        );
        Ok((population, alloc))
    }

    /// Gives the EOAs and the routers their token balances (into `storage`).
    fn hold_tokens(
        &mut self,
        rng: &mut StdRng,
        storage: &mut BTreeMap<Address, BTreeMap<B256, B256>>,
    ) {
        let tokens = self.tokens.len();
        let eoas = self.funded;
        if tokens == 0 {
            return;
        }
        let harmonic: f64 = (1..=tokens).map(|rank| 1.0 / rank as f64).sum();
        let holdings = 2.0 * eoas as f64;
        for (rank, token) in self.tokens.iter_mut().enumerate() {
            let share = holdings / (harmonic * (rank + 1) as f64);
            let count = (share.round() as usize).clamp(1, eoas.max(1)).min(eoas);
            let entries = storage.entry(token.address).or_default();
            for index in rand::seq::index::sample(rng, eoas, count) {
                let balance = U256::from(rng.random_range(100..=1_000_000u64)) * U256::from(ETHER);
                entries.insert(
                    balance_slot(self.eoas[index].address).into(),
                    balance.into(),
                );
                token.holders.push(index as u32);
            }
        }
        let served: Vec<usize> = (0..tokens.min(ROUTER_TOKENS)).collect();
        for router in &mut self.routers {
            for &token in &served {
                storage
                    .entry(self.tokens[token].address)
                    .or_default()
                    .insert(balance_slot(router.address).into(), ROUTER_BALANCE.into());
            }
            router.tokens = served.clone();
        }
    }

    /// A new EOA (the next key): the recipient of a transfer to a new account.
    pub(crate) fn new_eoa(&mut self) -> (u32, Address) {
        let index = self.eoas.len() as u64;
        let key = AccountKey::derive(self.seed, index);
        let address = key.address;
        self.eoas.push(key);
        (index as u32, address)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn router_balance_is_ten_to_the_thirty() {
        assert_eq!(ROUTER_BALANCE, U256::from(10u64).pow(U256::from(30)));
    }

    #[test]
    fn the_mix_of_kinds_and_holdings() {
        let mut rng = StdRng::seed_from_u64(1);
        let (population, alloc) = Population::generate(1, 50, 20, &mut rng).expect("generates");
        assert_eq!(population.tokens.len(), 12);
        assert_eq!(population.routers.len(), 3);
        assert_eq!(population.stores.len(), 5);
        // 50 EOAs + 20 contracts + the beacon roots contract.
        assert_eq!(alloc.len(), 71);
        let holdings: usize = population.tokens.iter().map(|t| t.holders.len()).sum();
        assert!((80..=130).contains(&holdings), "{holdings} holdings");
        assert!(population.tokens[0].holders.len() > population.tokens[11].holders.len());
    }

    #[test]
    fn zipf_favours_low_ranks() {
        let mut rng = StdRng::seed_from_u64(2);
        let draws: Vec<usize> = (0..10_000).map(|_| zipf(&mut rng, 100)).collect();
        assert!(draws.iter().all(|&d| d < 100));
        let first = draws.iter().filter(|&&d| d == 0).count();
        let last = draws.iter().filter(|&&d| d == 99).count();
        assert!(first > 10 * last.max(1), "{first} vs {last}");
    }
}
