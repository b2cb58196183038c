//! Building one generated block: choose what it touches, read the true
//! pre-block values from the model, decide the new values.

use std::collections::{BTreeMap, BTreeSet};

use alloy_primitives::{Address, B256, U256};
use rand::Rng;
use rand::seq::SliceRandom;

use super::world::{Contract, Meta, mapping_slot, new_address, token_amount};
use super::{BlockShape, Exponent, Zipf};
use crate::model::WorldState;
use crate::{AccountWrite, TraceBlock};

/// Gas price used for fee accounting (20 gwei).
const GAS_PRICE: u64 = 20_000_000_000;

/// What a block touches in one account: slots read and whether code is read.
#[derive(Debug, Default)]
struct Touch {
    slots: BTreeSet<B256>,
    code: bool,
}

/// Builds blocks one after the other; holds the popularity samplers.
#[derive(Debug)]
pub(super) struct BlockBuilder {
    shape: BlockShape,
    contract_zipf: Zipf,
    eoa_zipf: Zipf,
}

/// One block under construction.
struct Draft<'a> {
    state: &'a WorldState,
    touched: BTreeMap<Address, Touch>,
    writes: BTreeMap<Address, AccountWrite>,
}

impl Draft<'_> {
    fn balance(&self, address: &Address) -> U256 {
        self.writes
            .get(address)
            .and_then(|w| w.balance)
            .or_else(|| self.state.account(address).map(|a| a.balance()))
            .unwrap_or_default()
    }

    fn nonce(&self, address: &Address) -> u64 {
        self.writes
            .get(address)
            .and_then(|w| w.nonce)
            .or_else(|| self.state.account(address).map(|a| a.nonce()))
            .unwrap_or_default()
    }

    fn write(&mut self, address: Address) -> &mut AccountWrite {
        self.touched.entry(address).or_default();
        self.writes.entry(address).or_default()
    }
}

impl BlockBuilder {
    pub(super) fn new(shape: BlockShape, meta: &Meta) -> Self {
        Self {
            shape,
            contract_zipf: Zipf::new(meta.genesis_contracts.max(1), Exponent::One),
            eoa_zipf: Zipf::new(meta.genesis_eoas.max(1), Exponent::Half),
        }
    }

    /// A live contract: mostly by popularity, sometimes any (incl. created ones).
    fn pick_contract<R: Rng + ?Sized>(&self, meta: &Meta, rng: &mut R) -> Option<usize> {
        if meta.contracts.is_empty() {
            return None;
        }
        for _ in 0..8 {
            let index = if meta.genesis_contracts > 0 && rng.random_bool(0.9) {
                self.contract_zipf.sample(rng)
            } else {
                rng.random_range(0..meta.contracts.len())
            };
            if meta.contracts[index].alive {
                return Some(index);
            }
        }
        None
    }

    fn pick_eoa<R: Rng + ?Sized>(&self, meta: &Meta, rng: &mut R) -> Option<Address> {
        if meta.eoas.is_empty() {
            return None;
        }
        let index = if meta.genesis_eoas > 0 && rng.random_bool(0.9) {
            self.eoa_zipf.sample(rng)
        } else {
            rng.random_range(0..meta.eoas.len())
        };
        Some(meta.eoas[index])
    }

    /// Build block `number` on top of `state` (not modified; the caller applies the writes).
    pub(super) fn build<R: Rng + ?Sized>(
        &mut self,
        number: u64,
        state: &WorldState,
        meta: &mut Meta,
        rng: &mut R,
    ) -> TraceBlock {
        let mut draft = Draft {
            state,
            touched: BTreeMap::new(),
            writes: BTreeMap::new(),
        };
        let mut gas = 0u64;
        gas += self.storage_traffic(&mut draft, meta, rng);
        let (txs, fees) = self.transfers(&mut draft, meta, rng);
        gas += 21_000 * txs;
        gas += self.create_contracts(&mut draft, meta, rng);
        self.selfdestruct(&mut draft, meta, rng);
        self.miner(&mut draft, meta, fees, rng);
        self.fill_reads(&mut draft, meta, rng);

        let reads: BTreeMap<_, _> = draft
            .touched
            .iter()
            .filter(|(address, _)| state.account(address).is_some())
            .map(|(address, touch)| {
                (
                    *address,
                    state.read(address, touch.slots.iter().copied(), touch.code),
                )
            })
            .collect();
        gas += 2_600 * reads.len() as u64;
        let new_eoas: Vec<Address> = draft
            .writes
            .keys()
            .filter(|a| state.account(a).is_none() && !meta.contract_index.contains_key(*a))
            .copied()
            .collect();
        meta.eoas.extend(new_eoas);
        TraceBlock {
            number,
            gas_used: Some(gas),
            state_root: None,
            reads,
            writes: draft.writes,
            access_list: None,
        }
    }

    /// Calls into contracts: slot reads, then a share of them written
    /// (some cleared to zero). Returns the gas of the storage accesses.
    fn storage_traffic<R: Rng + ?Sized>(
        &self,
        draft: &mut Draft<'_>,
        meta: &mut Meta,
        rng: &mut R,
    ) -> u64 {
        let mut read = 0;
        let mut attempts = 0;
        while read < self.shape.slot_reads && attempts < 20 * self.shape.slot_reads {
            attempts += 1;
            let Some(index) = self.pick_contract(meta, rng) else {
                break;
            };
            let contract = &meta.contracts[index];
            let touch = draft.touched.entry(contract.address).or_default();
            touch.code |= rng.random_bool(0.25);
            for _ in 0..rng
                .random_range(1..=6usize)
                .min(self.shape.slot_reads - read)
            {
                let known = contract.known_slots();
                let slot = if known > 0 && rng.random_bool(0.85) {
                    contract.known_slot(draft.state, rng.random_range(0..known))
                } else {
                    let holder = meta
                        .eoas
                        .get(rng.random_range(0..meta.eoas.len().max(1)))
                        .copied()
                        .unwrap_or_default();
                    mapping_slot(&holder, contract.mapping_index)
                };
                if touch.slots.insert(slot) {
                    read += 1;
                }
            }
        }
        let mut candidates: Vec<(Address, B256)> = draft
            .touched
            .iter()
            .flat_map(|(address, touch)| touch.slots.iter().map(move |slot| (*address, *slot)))
            .collect();
        candidates.shuffle(rng);
        candidates.truncate(self.shape.slot_writes);
        let mut gas = 2_100 * read as u64;
        for (address, slot) in candidates {
            let before = draft.state.slot(&address, &slot);
            let after = if !before.is_zero() && rng.random_bool(0.12) {
                U256::ZERO
            } else {
                token_amount(rng)
            };
            gas += if before.is_zero() { 20_000 } else { 2_900 };
            if before.is_zero() {
                let index = meta.contract_index[&address];
                meta.contracts[index].slots.push(slot);
            }
            draft.write(address).storage.insert(slot, after);
        }
        gas
    }

    /// Value transfers and contract calls from EOAs until the account-write
    /// budget is used. Returns (transactions, fees in wei).
    fn transfers<R: Rng + ?Sized>(
        &self,
        draft: &mut Draft<'_>,
        meta: &Meta,
        rng: &mut R,
    ) -> (u64, U256) {
        let mut txs = 0u64;
        let mut fees = U256::ZERO;
        let called: Vec<Address> = draft.touched.keys().copied().collect();
        let budget = self.shape.account_writes.saturating_sub(1);
        let mut attempts = 0;
        while draft.writes.len() < budget && attempts < 4 * budget + 8 {
            attempts += 1;
            let Some(sender) = self.pick_eoa(meta, rng) else {
                break;
            };
            let fee = U256::from(21_000 * GAS_PRICE);
            let balance = draft.balance(&sender);
            if balance < fee {
                continue;
            }
            let value = (balance - fee) / U256::from(rng.random_range(10u64..10_000));
            let nonce = draft.nonce(&sender) + 1;
            let sender_write = draft.write(sender);
            sender_write.nonce = Some(nonce);
            sender_write.balance = Some(balance - fee - value);
            fees += fee;
            txs += 1;
            let to_contract = !called.is_empty() && rng.random_bool(0.4);
            let recipient = if to_contract {
                if rng.random_bool(0.8) {
                    continue; // a call without value: the contract's balance is unchanged
                }
                called[rng.random_range(0..called.len())]
            } else if rng.random_bool(0.1) {
                new_address(rng)
            } else {
                self.pick_eoa(meta, rng).unwrap_or(sender)
            };
            if value.is_zero() {
                continue; // nothing to credit (and no empty account to create)
            }
            let credited = draft.balance(&recipient) + value;
            draft.write(recipient).balance = Some(credited);
        }
        (txs, fees)
    }

    /// Sometimes deploy a contract (bytecode from the pool, a few slots).
    fn create_contracts<R: Rng + ?Sized>(
        &self,
        draft: &mut Draft<'_>,
        meta: &mut Meta,
        rng: &mut R,
    ) -> u64 {
        let mut gas = 0;
        for _ in 0..rng.random_range(0..3) {
            let address = new_address(rng);
            let code = meta.pick_code(rng);
            gas += 32_000 + 200 * code.len() as u64;
            let mapping_index = rng.random_range(0..8u64);
            let write = draft.write(address);
            write.nonce = Some(1);
            write.code = Some(code);
            for fixed in 0..rng.random_range(1..4u64) {
                write.storage.insert(
                    B256::from(U256::from(fixed)),
                    U256::from(rng.random::<u32>() | 1),
                );
            }
            let slots = write.storage.keys().copied().collect();
            meta.add_contract(Contract {
                address,
                mapping_index,
                genesis_slots: 0,
                slots,
                alive: true,
            });
        }
        gas
    }

    /// Sometimes self-destruct a cold contract not otherwise touched this
    /// block, and sometimes re-create it in the same block.
    fn selfdestruct<R: Rng + ?Sized>(&self, draft: &mut Draft<'_>, meta: &mut Meta, rng: &mut R) {
        if meta.contracts.is_empty() || !rng.random_bool(0.4) {
            return;
        }
        let cold_from = meta.genesis_contracts / 2;
        if cold_from >= meta.contracts.len() {
            return;
        }
        for _ in 0..10 {
            let index = rng.random_range(cold_from..meta.contracts.len());
            let address = meta.contracts[index].address;
            if !meta.contracts[index].alive
                || draft.touched.contains_key(&address)
                || draft.state.account(&address).is_none()
            {
                continue;
            }
            let recreate = rng.random_bool(0.5);
            let code = meta.pick_code(rng);
            let write = draft.write(address);
            write.deleted = true;
            let contract = &mut meta.contracts[index];
            contract.clear_slots();
            contract.alive = recreate;
            if recreate {
                write.nonce = Some(1);
                write.code = Some(code);
                let slot = B256::from(U256::from(contract.mapping_index));
                write
                    .storage
                    .insert(slot, U256::from(rng.random::<u32>() | 1));
                contract.slots.push(slot);
            }
            return;
        }
    }

    /// The block's miner collects the fees.
    fn miner<R: Rng + ?Sized>(&self, draft: &mut Draft<'_>, meta: &Meta, fees: U256, rng: &mut R) {
        let miners = meta.genesis_eoas.min(5);
        if miners == 0 {
            return;
        }
        let miner = meta.eoas[rng.random_range(0..miners)];
        let credited = draft.balance(&miner) + fees;
        draft.write(miner).balance = Some(credited);
    }

    /// Read-only account accesses (BALANCE, EXTCODEHASH, calls without
    /// storage) until the account-read budget is reached.
    fn fill_reads<R: Rng + ?Sized>(&self, draft: &mut Draft<'_>, meta: &Meta, rng: &mut R) {
        // Only accounts that exist count: the trace lists no reads of absent ones.
        let mut existing = draft
            .touched
            .keys()
            .filter(|a| draft.state.account(a).is_some())
            .count();
        let mut attempts = 0;
        while existing < self.shape.account_reads && attempts < 4 * self.shape.account_reads {
            attempts += 1;
            let address = if rng.random_bool(0.4) {
                self.pick_contract(meta, rng)
                    .map(|i| meta.contracts[i].address)
            } else {
                self.pick_eoa(meta, rng)
            };
            if let Some(address) = address
                && draft.state.account(&address).is_some()
                && !draft.touched.contains_key(&address)
            {
                draft.touched.insert(address, Touch::default());
                existing += 1;
            }
        }
    }
}
