//! The transaction mix: what each transaction of a block does, who sends
//! it, and with which fees and gas limit.
//!
//! By count, about: 40% ether transfers (30% of them to a new account),
//! 39% token transfers (40% of them to a new account, and most of the rest
//! to an account without that token: a new storage slot), 14% router calls
//! (2 to 5 tokens each), 3% store writes (8 to 40 slots, about half new),
//! 2% store reads (50 to 400 slots) and 2% contract creations (a new
//! token); from Prague, 1% of them (taken from the ether transfers) are
//! delegations (EIP-7702): a sponsor sends a set-code transaction carrying
//! another EOA's authorization to a store contract's code and calls that
//! EOA, which writes two slots of its own storage through the code; and on
//! every fork 2% of the ether transfers carry blobs (EIP-4844: 1 to 3
//! blobs' versioned hashes, the sidecars dropped as in blocks), while the
//! block has room under its blob target. Contracts are chosen by popularity
//! (Zipf), senders uniformly among the EOAs that can pay. A sender's nonce and balance, and a
//! holder's token balance, are read from the block's state as it stands
//! before the transaction, so every transaction is valid where it sits and
//! a transfer never exceeds what its sender holds.

use alloy_consensus::{TxEip1559, TxEip4844, TxEip7702};
use alloy_eips::eip4844::{DATA_GAS_PER_BLOB, VERSIONED_HASH_VERSION_KZG};
use alloy_eips::eip7702::Authorization;
use alloy_primitives::{Address, B256, Bytes, TxKind, U256, keccak256};
use rand::Rng;
use rand::rngs::StdRng;
use revm::Database;
use revm::database::State;

use crate::contracts::{
    StoreMode, balance_slot, router_calldata, store_calldata, token_creation_code,
    transfer_calldata,
};
use crate::error::GenError;
use crate::keys::Unsigned;
use crate::population::{ETHER, Population, zipf};

/// One gwei in wei.
const GWEI: u64 = 1_000_000_000;
/// How many senders (or holders) are tried before a kind gives way to an
/// ether transfer.
const ATTEMPTS: usize = 16;

/// What a transaction does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxShape {
    /// Ether to an EOA.
    EtherTransfer,
    /// `token.transfer`.
    TokenTransfer,
    /// A router paying out from several tokens.
    RouterCall,
    /// A run of store writes.
    StoreWrite,
    /// A run of store reads.
    StoreRead,
    /// A token created.
    Create,
    /// An EOA delegated to a store's code (EIP-7702) and called.
    SetCode,
    /// Ether to an EOA carrying blobs (EIP-4844).
    Blob,
}

impl TxShape {
    /// Every shape, in the order reports list them.
    pub const ALL: [Self; 8] = [
        Self::EtherTransfer,
        Self::TokenTransfer,
        Self::RouterCall,
        Self::StoreWrite,
        Self::StoreRead,
        Self::Create,
        Self::SetCode,
        Self::Blob,
    ];

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::EtherTransfer => "ether",
            Self::TokenTransfer => "token",
            Self::RouterCall => "router",
            Self::StoreWrite => "store-write",
            Self::StoreRead => "store-read",
            Self::Create => "create",
            Self::SetCode => "set-code",
            Self::Blob => "blob",
        }
    }

    fn draw(rng: &mut StdRng) -> Self {
        match rng.random_range(0..100u32) {
            0..39 => Self::EtherTransfer,
            39 => Self::SetCode,
            40..79 => Self::TokenTransfer,
            79..93 => Self::RouterCall,
            93..96 => Self::StoreWrite,
            96..98 => Self::StoreRead,
            _ => Self::Create,
        }
    }
}

/// What the population learns once a transaction succeeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Nothing new.
    None,
    /// `holder` now holds token number `token`.
    NewHolder {
        /// Index into the population's tokens.
        token: usize,
        /// Key index of the holder.
        holder: u32,
    },
    /// A token was deployed at `address`, all of it held by `creator`.
    Created {
        /// The new contract.
        address: Address,
        /// Key index of the creator.
        creator: u32,
    },
}

/// A transaction chosen and ready to sign.
#[derive(Clone, Debug)]
pub(crate) struct Planned {
    /// Key index of the sender.
    pub sender: u32,
    /// The unsigned transaction.
    pub tx: Unsigned,
    /// What it does.
    pub shape: TxShape,
    /// What follows from it once it succeeds.
    pub effect: Effect,
}

/// The state as the block has left it so far: balances, nonces, slots.
pub(crate) trait LiveState {
    /// `(balance, nonce)` of `address` (zeros for an absent account).
    fn account(&mut self, address: Address) -> Result<(U256, u64), String>;
    /// The value of `slot` of `address`.
    fn slot(&mut self, address: Address, slot: U256) -> Result<U256, String>;
}

impl<DB> LiveState for State<DB>
where
    DB: Database,
{
    fn account(&mut self, address: Address) -> Result<(U256, u64), String> {
        let info = self.basic(address).map_err(|e| e.to_string())?;
        Ok(info.map_or((U256::ZERO, 0), |info| (info.balance, info.nonce)))
    }

    fn slot(&mut self, address: Address, slot: U256) -> Result<U256, String> {
        self.storage(address, slot).map_err(|e| e.to_string())
    }
}

/// Chooses the transactions of one block.
#[derive(Debug)]
pub(crate) struct Mix<'a> {
    /// Who is in the chain.
    pub population: &'a mut Population,
    /// The seeded source of every choice.
    pub rng: &'a mut StdRng,
    /// The block's base fee.
    pub base_fee: u64,
    /// The chain id signed into every transaction.
    pub chain_id: u64,
    /// The block being built (for error messages).
    pub number: u64,
    /// EIP-8037's gas per byte of new state (0 before Amsterdam): each
    /// transaction's gas limit covers the slots, accounts and code it may
    /// create, as a wallet's estimate would.
    pub state_byte_gas: u64,
    /// Whether EIP-7702 delegations are part of the mix (from Prague).
    pub delegations: bool,
    /// The blobs the block still has room for (every fork: Cancun brought
    /// them).
    pub blobs: Option<BlobRoom>,
}

/// The blobs a block may still carry and what they cost.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlobRoom {
    /// Blobs left under the block's target (a block never goes over its
    /// target, so the blob base fee never climbs out of reach).
    pub left: u64,
    /// The most one transaction may carry (EIP-7594's cap from Osaka).
    pub per_transaction: u64,
    /// The block's blob base fee.
    pub fee: u128,
}

/// The share of ether transfers that carry blobs, where the block has room.
const BLOB_SHARE: f64 = 0.02;
/// The most blobs the mix puts in one transaction.
const MOST_BLOBS: u64 = 3;

/// EIP-8037: the state bytes of a new storage slot.
const SLOT_STATE_BYTES: u64 = 32;
/// EIP-8037: the state bytes of a new account.
const ACCOUNT_STATE_BYTES: u64 = 112;

impl Mix<'_> {
    /// The next transaction, with a gas limit at most `gas_left`; `None`
    /// when not even an ether transfer fits or nobody can pay for one.
    /// `index` is its place in the block (for errors).
    pub(crate) fn next(
        &mut self,
        live: &mut dyn LiveState,
        gas_left: u64,
        index: usize,
    ) -> Result<Option<Planned>, GenError> {
        let shape = TxShape::draw(self.rng);
        let planned = match shape {
            TxShape::EtherTransfer => match self.blobs {
                Some(room) if room.left > 0 && self.rng.random_bool(BLOB_SHARE) => {
                    self.blob_transfer(live, room, index)?
                }
                _ => None,
            },
            TxShape::Blob => None,
            TxShape::TokenTransfer => self.token_transfer(live)?,
            TxShape::RouterCall => self.router_call(live)?,
            TxShape::StoreWrite | TxShape::StoreRead => self.store_call(live, shape)?,
            TxShape::Create => self.create(live)?,
            TxShape::SetCode if self.delegations => self.set_code(live, index)?,
            TxShape::SetCode => None,
        };
        let planned = match planned {
            Some(planned) if planned.tx.gas_limit() <= gas_left => Some(planned),
            _ if gas_left >= 21_000 => self.ether_transfer(live)?,
            _ => None,
        };
        Ok(planned)
    }

    /// The state gas of one new storage slot (0 before Amsterdam).
    fn slot_state_gas(&self) -> u64 {
        SLOT_STATE_BYTES * self.state_byte_gas
    }

    fn live_error(&self, message: String) -> GenError {
        GenError::Execution {
            number: self.number,
            message: format!("reading the block's state: {message}"),
        }
    }

    /// A transaction of `sender` (nonce read from the state) with fees drawn
    /// for this block.
    fn transaction(
        &mut self,
        nonce: u64,
        gas_limit: u64,
        to: TxKind,
        value: U256,
        input: Bytes,
    ) -> TxEip1559 {
        let tip = u128::from(self.rng.random_range(GWEI..=3 * GWEI));
        TxEip1559 {
            chain_id: self.chain_id,
            nonce,
            gas_limit,
            max_fee_per_gas: 2 * u128::from(self.base_fee) + tip,
            max_priority_fee_per_gas: tip,
            to,
            value,
            access_list: Default::default(),
            input,
        }
    }

    /// The most a transaction of `gas_limit` may cost in fees.
    fn max_cost(&self, gas_limit: u64) -> U256 {
        U256::from(gas_limit) * U256::from(2 * u128::from(self.base_fee) + 3 * u128::from(GWEI))
    }

    /// An EOA that can pay `value` plus the fees of `gas_limit`, with its
    /// nonce: mostly a genesis account, sometimes any (a new account that
    /// received ether can send too).
    fn sender(
        &mut self,
        live: &mut dyn LiveState,
        value: U256,
        gas_limit: u64,
    ) -> Result<Option<(u32, u64)>, GenError> {
        let needed = value + self.max_cost(gas_limit);
        for _ in 0..ATTEMPTS {
            let range = if self.rng.random_bool(0.8) {
                self.population.funded
            } else {
                self.population.eoas.len()
            };
            if range == 0 {
                return Ok(None);
            }
            let index = self.rng.random_range(0..range);
            let address = self.population.eoas[index].address;
            let (balance, nonce) = live.account(address).map_err(|m| self.live_error(m))?;
            if balance >= needed {
                return Ok(Some((index as u32, nonce)));
            }
        }
        Ok(None)
    }

    /// An existing EOA, or a new one (`new_share` of the time, and in place
    /// of an EOA delegated to code).
    fn recipient(&mut self, new_share: f64) -> (u32, Address) {
        if self.population.eoas.is_empty() || self.rng.random_bool(new_share) {
            return self.population.new_eoa();
        }
        let index = self.rng.random_range(0..self.population.eoas.len());
        if self.population.delegated.contains(&(index as u32)) {
            return self.population.new_eoa();
        }
        (index as u32, self.population.eoas[index].address)
    }

    fn ether_transfer(&mut self, live: &mut dyn LiveState) -> Result<Option<Planned>, GenError> {
        let value = U256::from(self.rng.random_range(ETHER / 10_000..=ETHER / 20));
        let Some((sender, nonce)) = self.sender(live, value, 21_000)? else {
            return Ok(None);
        };
        let (_, to) = self.recipient(0.3);
        let tx = self.transaction(nonce, 21_000, TxKind::Call(to), value, Bytes::new());
        Ok(Some(Planned {
            sender,
            tx: Unsigned::Eip1559(tx),
            shape: TxShape::EtherTransfer,
            effect: Effect::None,
        }))
    }

    fn token_transfer(&mut self, live: &mut dyn LiveState) -> Result<Option<Planned>, GenError> {
        // The recipient's balance slot may be new.
        let gas = 70_000 + self.slot_state_gas();
        let tokens = self.population.tokens.len();
        if tokens == 0 {
            return Ok(None);
        }
        for _ in 0..ATTEMPTS {
            let token = zipf(self.rng, tokens);
            let holders = &self.population.tokens[token].holders;
            if holders.is_empty() {
                continue;
            }
            let holder = holders[self.rng.random_range(0..holders.len())];
            let holder_address = self.population.eoas[holder as usize].address;
            let token_address = self.population.tokens[token].address;
            let held = live
                .slot(token_address, balance_slot(holder_address))
                .map_err(|m| self.live_error(m))?;
            if held.is_zero() {
                continue;
            }
            let (balance, nonce) = live
                .account(holder_address)
                .map_err(|m| self.live_error(m))?;
            if balance < self.max_cost(gas) {
                continue;
            }
            // 0.1% to 25% of the holding.
            let amount = (held * U256::from(self.rng.random_range(1..=250u64)) / U256::from(1000))
                .max(U256::from(1));
            let (recipient, to) = self.recipient(0.4);
            let tx = self.transaction(
                nonce,
                gas,
                TxKind::Call(token_address),
                U256::ZERO,
                transfer_calldata(to, amount),
            );
            return Ok(Some(Planned {
                sender: holder,
                tx: Unsigned::Eip1559(tx),
                shape: TxShape::TokenTransfer,
                effect: Effect::NewHolder {
                    token,
                    holder: recipient,
                },
            }));
        }
        Ok(None)
    }

    fn router_call(&mut self, live: &mut dyn LiveState) -> Result<Option<Planned>, GenError> {
        let routers = self.population.routers.len();
        if routers == 0 {
            return Ok(None);
        }
        let router = &self.population.routers[zipf(self.rng, routers)];
        if router.tokens.is_empty() {
            return Ok(None);
        }
        let count = self.rng.random_range(2..=5usize).min(router.tokens.len());
        let chosen: Vec<Address> = rand::seq::index::sample(self.rng, router.tokens.len(), count)
            .into_iter()
            .map(|i| self.population.tokens[router.tokens[i]].address)
            .collect();
        let to = router.address;
        let gas = 60_000 + (45_000 + self.slot_state_gas()) * count as u64;
        let Some((sender, nonce)) = self.sender(live, U256::ZERO, gas)? else {
            return Ok(None);
        };
        let tx = self.transaction(
            nonce,
            gas,
            TxKind::Call(to),
            U256::ZERO,
            router_calldata(&chosen),
        );
        Ok(Some(Planned {
            sender,
            tx: Unsigned::Eip1559(tx),
            shape: TxShape::RouterCall,
            effect: Effect::None,
        }))
    }

    fn store_call(
        &mut self,
        live: &mut dyn LiveState,
        shape: TxShape,
    ) -> Result<Option<Planned>, GenError> {
        let stores = self.population.stores.len();
        if stores == 0 {
            return Ok(None);
        }
        let store = &self.population.stores[zipf(self.rng, stores)];
        let (to, slots) = (store.address, store.slots);
        let (mode, count, start, gas) = if shape == TxShape::StoreWrite {
            let count = self.rng.random_range(8..=40u64);
            let start = self.rng.random_range(0..2 * slots);
            let per_slot = 25_000 + self.slot_state_gas();
            (StoreMode::Write, count, start, 40_000 + per_slot * count)
        } else {
            let count = self.rng.random_range(50..=400u64);
            let start = self.rng.random_range(0..slots);
            (StoreMode::Read, count, start, 60_000 + 2_700 * count)
        };
        let Some((sender, nonce)) = self.sender(live, U256::ZERO, gas)? else {
            return Ok(None);
        };
        let tx = self.transaction(
            nonce,
            gas,
            TxKind::Call(to),
            U256::ZERO,
            store_calldata(start, count, mode),
        );
        Ok(Some(Planned {
            sender,
            tx: Unsigned::Eip1559(tx),
            shape,
            effect: Effect::None,
        }))
    }

    fn create(&mut self, live: &mut dyn LiveState) -> Result<Option<Planned>, GenError> {
        const GAS: u64 = 300_000;
        let code = token_creation_code()?;
        // The account, its code (no longer than the code that creates it)
        // and a few slots, as new state.
        let state_bytes = ACCOUNT_STATE_BYTES + code.len() as u64 + 4 * SLOT_STATE_BYTES;
        let gas = GAS + state_bytes * self.state_byte_gas;
        let Some((sender, nonce)) = self.sender(live, U256::ZERO, gas)? else {
            return Ok(None);
        };
        let creator = self.population.eoas[sender as usize].address;
        let tx = self.transaction(nonce, gas, TxKind::Create, U256::ZERO, code);
        Ok(Some(Planned {
            sender,
            tx: Unsigned::Eip1559(tx),
            shape: TxShape::Create,
            effect: Effect::Created {
                address: creator.create(nonce),
                creator: sender,
            },
        }))
    }

    /// Ether to an EOA with 1 to 3 blobs: their versioned hashes name no
    /// real blob (a block carries no sidecar; the hashes only need the KZG
    /// version byte). The fee cap covers twice the block's blob base fee or
    /// the base fee, whichever is more (EIP-7918 keeps the blob fee near a
    /// sixteenth of the base fee while blobs are used).
    fn blob_transfer(
        &mut self,
        live: &mut dyn LiveState,
        room: BlobRoom,
        index: usize,
    ) -> Result<Option<Planned>, GenError> {
        let count = self
            .rng
            .random_range(1..=MOST_BLOBS.min(room.per_transaction).min(room.left).max(1));
        let fee_cap = (2 * room.fee).max(u128::from(self.base_fee));
        let blob_cost = U256::from(count * DATA_GAS_PER_BLOB) * U256::from(fee_cap);
        let value = U256::from(self.rng.random_range(ETHER / 10_000..=ETHER / 20));
        let Some((sender, nonce)) = self.sender(live, value + blob_cost, 21_000)? else {
            return Ok(None);
        };
        let (_, to) = self.recipient(0.3);
        let shaped = self.transaction(nonce, 21_000, TxKind::Call(to), value, Bytes::new());
        let blob_versioned_hashes = (0..count)
            .map(|blob| {
                let mut hash = keccak256(
                    [
                        b"strata gen-chain blob".as_slice(),
                        &self.number.to_be_bytes(),
                        &(index as u64).to_be_bytes(),
                        &blob.to_be_bytes(),
                    ]
                    .concat(),
                );
                hash.0[0] = VERSIONED_HASH_VERSION_KZG;
                B256::from(hash)
            })
            .collect();
        let tx = TxEip4844 {
            chain_id: shaped.chain_id,
            nonce: shaped.nonce,
            gas_limit: shaped.gas_limit,
            max_fee_per_gas: shaped.max_fee_per_gas,
            max_priority_fee_per_gas: shaped.max_priority_fee_per_gas,
            to,
            value,
            access_list: Default::default(),
            blob_versioned_hashes,
            max_fee_per_blob_gas: fee_cap,
            input: Bytes::new(),
        };
        if let Some(room) = &mut self.blobs {
            room.left -= count;
        }
        Ok(Some(Planned {
            sender,
            tx: Unsigned::Eip4844(tx),
            shape: TxShape::Blob,
            effect: Effect::None,
        }))
    }

    /// A sponsor's EIP-7702 transaction: another EOA (the authority)
    /// delegates to a store's code, and the call to it writes two slots of
    /// its own storage through that code. The gas covers the authorization
    /// (a new account and a delegation's bytes as state gas from Amsterdam)
    /// and the two new slots.
    fn set_code(
        &mut self,
        live: &mut dyn LiveState,
        index: usize,
    ) -> Result<Option<Planned>, GenError> {
        const AUTHORIZATION_STATE_BYTES: u64 = ACCOUNT_STATE_BYTES + 23;
        let stores = self.population.stores.len();
        let funded = self.population.funded;
        if stores == 0 || funded < 2 {
            return Ok(None);
        }
        let delegate = self.population.stores[zipf(self.rng, stores)].address;
        let gas =
            150_000 + AUTHORIZATION_STATE_BYTES * self.state_byte_gas + 2 * self.slot_state_gas();
        let Some((sender, nonce)) = self.sender(live, U256::ZERO, gas)? else {
            return Ok(None);
        };
        let mut authority = self.rng.random_range(0..funded);
        if authority == sender as usize {
            authority = (authority + 1) % funded;
        }
        let key = self.population.eoas[authority].clone();
        self.population.delegated.insert(authority as u32);
        let (_, authority_nonce) = live.account(key.address).map_err(|m| self.live_error(m))?;
        let authorization = key
            .authorize(Authorization {
                chain_id: U256::from(self.chain_id),
                address: delegate,
                nonce: authority_nonce,
            })
            .map_err(|e| GenError::Signing {
                number: self.number,
                index,
                message: e.to_string(),
            })?;
        let start = self.rng.random_range(0..1_000u64);
        let shaped = self.transaction(
            nonce,
            gas,
            TxKind::Call(key.address),
            U256::ZERO,
            store_calldata(start, 2, StoreMode::Write),
        );
        let tx = TxEip7702 {
            chain_id: shaped.chain_id,
            nonce: shaped.nonce,
            gas_limit: shaped.gas_limit,
            max_fee_per_gas: shaped.max_fee_per_gas,
            max_priority_fee_per_gas: shaped.max_priority_fee_per_gas,
            to: key.address,
            value: U256::ZERO,
            access_list: Default::default(),
            authorization_list: vec![authorization],
            input: shaped.input,
        };
        Ok(Some(Planned {
            sender,
            tx: Unsigned::Eip7702(tx),
            shape: TxShape::SetCode,
            effect: Effect::None,
        }))
    }
}
