//! The scenario's accounts, hand-assembled contracts and transactions.

use alloy_primitives::{Address, B256, Bytes, TxKind, U256, keccak256};
use revm::context::{BlockEnv, TxEnv};

use strata_genesis::{GenesisAccount, GenesisAlloc};

pub(super) const ALICE: Address = Address::repeat_byte(0xa1);
pub(super) const BOB: Address = Address::repeat_byte(0xb0);
/// A fresh address that only ever receives a zero-value call (EIP-161).
pub(super) const FRESH: Address = Address::repeat_byte(0xf0);
/// A contract in the genesis, with storage.
pub(super) const PRE: Address = Address::repeat_byte(0xcc);
pub(super) const COINBASE: Address = Address::repeat_byte(0xcb);

pub(super) const GWEI: u64 = 1_000_000_000;

/// Runtime: with calldata `slot ‖ value`, SSTORE(slot, value); with no
/// calldata, SELFDESTRUCT to the caller.
pub(super) const RUNTIME: [u8; 16] = [
    0x36, 0x15, 0x60, 0x0d, 0x57, // CALLDATASIZE ISZERO PUSH1 13 JUMPI
    0x60, 0x20, 0x35, 0x60, 0x00, 0x35, 0x55, 0x00, // SSTORE(cd[0], cd[32]) STOP
    0x5b, 0x33, 0xff, // JUMPDEST CALLER SELFDESTRUCT
];

/// Init code: SSTORE(1, 0x2a), then return [`RUNTIME`] (appended after it).
pub(super) const INIT_PREFIX: [u8; 17] = [
    0x60, 0x2a, 0x60, 0x01, 0x55, // SSTORE(1, 0x2a)
    0x60, 0x10, 0x60, 0x11, 0x60, 0x00, 0x39, // CODECOPY(0, 17, 16)
    0x60, 0x10, 0x60, 0x00, 0xf3, // RETURN(0, 16)
];

/// Init code that stores BLOCKHASH(NUMBER - 1) in slot 5 and leaves no code.
pub(super) const BLOCKHASH_INIT: [u8; 9] = [0x60, 0x01, 0x43, 0x03, 0x40, 0x60, 0x05, 0x55, 0x00];

/// Init code that writes a slot and selfdestructs to the caller.
pub(super) const SUICIDE_INIT: [u8; 7] = [0x60, 0x07, 0x60, 0x00, 0x55, 0x33, 0xff];

pub(super) fn eth(n: u64) -> U256 {
    U256::from(n) * U256::from(10u64.pow(18))
}

pub(super) fn genesis() -> GenesisAlloc {
    let account = |balance: U256| GenesisAccount {
        balance,
        ..Default::default()
    };
    GenesisAlloc::from([
        (ALICE, account(eth(100))),
        (BOB, account(eth(1))),
        (
            PRE,
            GenesisAccount {
                nonce: 1,
                balance: U256::from(1000),
                code: Bytes::copy_from_slice(&RUNTIME),
                storage: [(word(1), U256::from(5)), (word(2), U256::from(6))].into(),
            },
        ),
    ])
}

pub(super) fn word(n: u64) -> B256 {
    B256::from(U256::from(n))
}

pub(super) fn init_code() -> Bytes {
    [INIT_PREFIX.as_slice(), RUNTIME.as_slice()].concat().into()
}

pub(super) fn store_call(slot: u64, value: u64) -> Bytes {
    [word(slot).0, word(value).0].concat().into()
}

pub(super) fn tx(from: Address, nonce: u64, kind: TxKind, value: U256, data: Bytes) -> TxEnv {
    TxEnv::builder()
        .caller(from)
        .nonce(nonce)
        .kind(kind)
        .value(value)
        .data(data)
        .gas_limit(300_000)
        .gas_price(2 * GWEI as u128)
        .chain_id(Some(1))
        .build()
        .expect("a complete legacy transaction")
}

pub(super) fn block_env(number: u64) -> BlockEnv {
    BlockEnv {
        number: U256::from(number),
        beneficiary: COINBASE,
        timestamp: U256::from(1_700_000_000 + 12 * number),
        gas_limit: 30_000_000,
        basefee: GWEI,
        ..Default::default()
    }
}

/// The hash block `number` gets: what revm's `EmptyDB` answers, so the
/// oracle's BLOCKHASH agrees.
pub(super) fn block_hash(number: u64) -> B256 {
    keccak256(number.to_string().as_bytes())
}

/// The contract alice deploys with her `nonce`-th transaction.
pub(super) fn created(nonce: u64) -> Address {
    ALICE.create(nonce)
}

/// Blocks of transactions; alice's nonces count up across them.
pub(super) fn blocks() -> Vec<Vec<TxEnv>> {
    let zero = U256::ZERO;
    vec![
        // 1: a value transfer and a deployment (init code writes slot 1).
        vec![
            tx(ALICE, 0, TxKind::Call(BOB), eth(1), Bytes::new()),
            tx(ALICE, 1, TxKind::Create, zero, init_code()),
        ],
        // 2: SSTORE into the new contract, a slot of the genesis contract
        // set to zero, a zero-value call that touches an empty account, and
        // a deployment that reads BLOCKHASH(1).
        vec![
            tx(
                ALICE,
                2,
                TxKind::Call(created(1)),
                zero,
                store_call(3, 0x99),
            ),
            tx(BOB, 0, TxKind::Call(PRE), zero, store_call(1, 0)),
            tx(ALICE, 3, TxKind::Call(FRESH), zero, Bytes::new()),
            tx(ALICE, 4, TxKind::Create, zero, BLOCKHASH_INIT.into()),
        ],
        // 3: SELFDESTRUCT of the genesis contract, and a constructor that
        // selfdestructs with value.
        vec![
            tx(ALICE, 5, TxKind::Call(PRE), zero, Bytes::new()),
            tx(
                ALICE,
                6,
                TxKind::Create,
                U256::from(777),
                SUICIDE_INIT.into(),
            ),
        ],
    ]
}
