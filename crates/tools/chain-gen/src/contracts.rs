//! The generator's contracts, written here in EVM assembly (no compiler,
//! no copied bytecode), and their storage layouts.
//!
//! - **Token** (ERC-20-like, Solidity's layout): `balances` is a mapping at
//!   slot 0, so a holder's balance is at `keccak256(holder ‖ 0)`.
//!   `transfer(address to, uint256 amount)` (selector `0xa9059cbb`) moves
//!   `amount` from the caller to `to`, reverting when the caller holds
//!   less, emits `Transfer(from, to, amount)` and returns `true`;
//!   `balanceOf(address)` (`0x70a08231`) returns a balance. Anything else
//!   reverts.
//! - **Token creation code**: credits the creator with [`CREATED_SUPPLY`]
//!   and deploys the token's code (what a contract-creation transaction
//!   sends).
//! - **Router**: its calldata is a list of 32-byte words, each a token's
//!   address; for each it calls `token.transfer(caller, 1)` (the router
//!   holds balances in the tokens it serves), reverting if one fails; then
//!   it counts the call (`calls` at slot 0) and records the block of the
//!   caller's last call (`lastSeen` mapping at slot 1). One call touches
//!   several contracts' storage, as a DEX swap or an aggregator does.
//! - **Store**: calldata `start, count, mode` (three words). Mode 0 writes
//!   `(block number << 32) | (i + 1)` into slots `start + i` for `i` below
//!   `count`; any other mode reads those slots and writes their sum into
//!   slot `2^255`. The storage-heavy calls: new slots, overwritten slots,
//!   long runs of cold reads.

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use revm::bytecode::opcode::*;

use crate::asm::Asm;
use crate::error::GenError;

/// `transfer(address,uint256)`.
pub const TRANSFER_SELECTOR: [u8; 4] = [0xa9, 0x05, 0x9c, 0xbb];
/// `balanceOf(address)`.
pub const BALANCE_OF_SELECTOR: [u8; 4] = [0x70, 0xa0, 0x82, 0x31];
/// What a token created by a transaction credits its creator with (10^27).
pub const CREATED_SUPPLY: U256 = U256::from_limbs([0x9fd0_803c_e800_0000, 0x033b_2e3c, 0, 0]);
/// The router's `calls` counter.
pub const ROUTER_CALLS_SLOT: U256 = U256::ZERO;
/// The store's slot for the sum of a read run: 2^255.
pub const STORE_SUM_SLOT: U256 = U256::from_limbs([0, 0, 0, 1 << 63]);

/// The kinds of contracts in a generated chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContractKind {
    /// ERC-20-like token.
    Token,
    /// Calls several tokens in one transaction.
    Router,
    /// Storage-heavy reads and writes.
    Store,
}

/// The slot of `key` in a Solidity mapping declared at `slot`:
/// `keccak256(key ‖ slot)`, both as 32-byte words.
pub fn mapping_slot(key: Address, slot: u64) -> U256 {
    let mut input = [0u8; 64];
    input[12..32].copy_from_slice(key.as_slice());
    input[56..64].copy_from_slice(&slot.to_be_bytes());
    keccak256(input).into()
}

/// A token holder's balance slot.
pub fn balance_slot(holder: Address) -> U256 {
    mapping_slot(holder, 0)
}

/// The topic of `Transfer(address,address,uint256)`.
pub fn transfer_topic() -> B256 {
    keccak256("Transfer(address,address,uint256)")
}

/// The deployed code of `kind`.
pub fn runtime_code(kind: ContractKind) -> Result<Bytes, GenError> {
    match kind {
        ContractKind::Token => token_runtime(),
        ContractKind::Router => router_runtime(),
        ContractKind::Store => store_runtime(),
    }
}

/// Calldata of `transfer(to, amount)`.
pub fn transfer_calldata(to: Address, amount: U256) -> Bytes {
    let mut data = Vec::with_capacity(68);
    data.extend_from_slice(&TRANSFER_SELECTOR);
    data.extend_from_slice(B256::left_padding_from(to.as_slice()).as_slice());
    data.extend_from_slice(&amount.to_be_bytes::<32>());
    data.into()
}

/// Calldata of a router call over `tokens`.
pub fn router_calldata(tokens: &[Address]) -> Bytes {
    tokens
        .iter()
        .flat_map(|token| B256::left_padding_from(token.as_slice()).0)
        .collect::<Vec<u8>>()
        .into()
}

/// What a store call does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreMode {
    /// Write the slots.
    Write,
    /// Read the slots, write their sum.
    Read,
}

/// Calldata of a store call over slots `start..start + count`.
pub fn store_calldata(start: u64, count: u64, mode: StoreMode) -> Bytes {
    let mode = match mode {
        StoreMode::Write => 0u64,
        StoreMode::Read => 1,
    };
    [start, count, mode]
        .iter()
        .flat_map(|word| U256::from(*word).to_be_bytes::<32>())
        .collect::<Vec<u8>>()
        .into()
}

fn assembled(contract: &'static str, asm: Asm) -> Result<Bytes, GenError> {
    asm.build()
        .map_err(|message| GenError::Assembly { contract, message })
}

/// Leaves `keccak256(mem[0..64])` on the stack after storing `key` (on the
/// stack) at 0 and `slot` at 32: a mapping slot.
fn mapping_slot_of_top(asm: Asm, slot: u64) -> Asm {
    asm.ops(&[PUSH0, MSTORE]) // mem[0..32] = key
        .push_u64(slot)
        .push_u64(0x20)
        .ops(&[MSTORE]) // mem[32..64] = slot
        .push_u64(0x40)
        .ops(&[PUSH0, KECCAK256])
}

fn token_runtime() -> Result<Bytes, GenError> {
    let selector = |asm: Asm| asm.ops(&[PUSH0, CALLDATALOAD]).push_u64(0xe0).ops(&[SHR]);
    let mut asm = selector(Asm::new())
        .push_bytes(&TRANSFER_SELECTOR)
        .ops(&[EQ])
        .jumpi("transfer");
    asm = selector(asm)
        .push_bytes(&BALANCE_OF_SELECTOR)
        .ops(&[EQ])
        .jumpi("balance_of")
        .jump("fail");

    // transfer(to, amount)
    asm = asm.jumpdest("transfer").ops(&[CALLER]);
    asm = mapping_slot_of_top(asm, 0) // [from_slot]
        .ops(&[DUP1, SLOAD]) // [from_slot, from_balance]
        .push_u64(0x24)
        .ops(&[CALLDATALOAD]) // [from_slot, from_balance, amount]
        .ops(&[DUP1, DUP3, LT]) // from_balance < amount
        .jumpi("fail")
        .ops(&[SWAP1, DUP2, SWAP1, SUB]) // [from_slot, amount, from_balance - amount]
        .ops(&[DUP3, SSTORE, SWAP1, POP]) // [amount]
        .push_u64(4)
        .ops(&[CALLDATALOAD]); // [amount, to]
    asm = mapping_slot_of_top(asm, 0) // [amount, to_slot]
        .ops(&[DUP1, SLOAD, DUP3, ADD, SWAP1, SSTORE]) // [amount]
        .ops(&[PUSH0, MSTORE]) // mem[0..32] = amount
        .push_u64(4)
        .ops(&[CALLDATALOAD, CALLER]) // [to, from]
        .push(transfer_topic().into())
        .push_u64(0x20)
        .ops(&[PUSH0, LOG3])
        .push_u64(1)
        .ops(&[PUSH0, MSTORE])
        .push_u64(0x20)
        .ops(&[PUSH0, RETURN]);

    // balanceOf(holder)
    asm = asm.jumpdest("balance_of").push_u64(4).ops(&[CALLDATALOAD]);
    asm = mapping_slot_of_top(asm, 0)
        .ops(&[SLOAD, PUSH0, MSTORE])
        .push_u64(0x20)
        .ops(&[PUSH0, RETURN]);

    asm = asm.jumpdest("fail").ops(&[PUSH0, PUSH0, REVERT]);
    assembled("token", asm)
}

/// The creation code of a token: the creator holds [`CREATED_SUPPLY`].
pub fn token_creation_code() -> Result<Bytes, GenError> {
    let runtime = token_runtime()?;
    let mut asm = Asm::new().push(CREATED_SUPPLY).ops(&[CALLER]);
    asm = mapping_slot_of_top(asm, 0)
        .ops(&[SSTORE]) // balances[creator] = supply
        .push_u64(runtime.len() as u64)
        .ops(&[DUP1])
        .push_label("runtime")
        .ops(&[PUSH0, CODECOPY, PUSH0, RETURN])
        .mark("runtime")
        .data(&runtime);
    assembled("token creation", asm)
}

fn router_runtime() -> Result<Bytes, GenError> {
    let mut asm = Asm::new()
        // mem[0..68] = transfer(caller, 1)
        .push_bytes(&TRANSFER_SELECTOR)
        .push_u64(0xe0)
        .ops(&[SHL, PUSH0, MSTORE, CALLER])
        .push_u64(4)
        .ops(&[MSTORE])
        .push_u64(1)
        .push_u64(0x24)
        .ops(&[MSTORE, PUSH0]) // [i = 0]
        .jumpdest("loop")
        .ops(&[CALLDATASIZE, DUP2, LT, ISZERO]) // !(i < calldatasize)
        .jumpi("end")
        // CALL(gas, token, 0, args 0..0x44, return 0x60..0x80)
        .push_u64(0x20)
        .push_u64(0x60)
        .push_u64(0x44)
        .ops(&[PUSH0, PUSH0, DUP6, CALLDATALOAD, GAS, CALL, ISZERO])
        .jumpi("fail")
        .push_u64(0x20)
        .ops(&[ADD])
        .jump("loop")
        .jumpdest("end")
        .ops(&[POP])
        .push(ROUTER_CALLS_SLOT)
        .ops(&[SLOAD])
        .push_u64(1)
        .ops(&[ADD])
        .push(ROUTER_CALLS_SLOT)
        .ops(&[SSTORE, NUMBER, CALLER]);
    asm = mapping_slot_of_top(asm, 1)
        .ops(&[SSTORE, STOP]) // lastSeen[caller] = number
        .jumpdest("fail")
        .ops(&[PUSH0, PUSH0, REVERT]);
    assembled("router", asm)
}

fn store_runtime() -> Result<Bytes, GenError> {
    let asm = Asm::new()
        .push_u64(0x40)
        .ops(&[CALLDATALOAD])
        .jumpi("read")
        .ops(&[PUSH0]) // [i]
        .jumpdest("write")
        .push_u64(0x20)
        .ops(&[CALLDATALOAD, DUP2, LT, ISZERO]) // !(i < count)
        .jumpi("done")
        .ops(&[DUP1])
        .push_u64(1)
        .ops(&[ADD, NUMBER])
        .push_u64(32)
        .ops(&[SHL, OR]) // [i, (number << 32) | (i + 1)]
        .ops(&[DUP2, PUSH0, CALLDATALOAD, ADD, SSTORE]) // slot start + i
        .push_u64(1)
        .ops(&[ADD])
        .jump("write")
        .jumpdest("done")
        .ops(&[STOP])
        .jumpdest("read")
        .ops(&[PUSH0, PUSH0]) // [sum, i]
        .jumpdest("read_loop")
        .push_u64(0x20)
        .ops(&[CALLDATALOAD, DUP2, LT, ISZERO])
        .jumpi("read_done")
        .ops(&[DUP1, PUSH0, CALLDATALOAD, ADD, SLOAD]) // [sum, i, value]
        .ops(&[SWAP1, SWAP2, ADD, SWAP1]) // [sum + value, i]
        .push_u64(1)
        .ops(&[ADD])
        .jump("read_loop")
        .jumpdest("read_done")
        .ops(&[POP])
        .push(STORE_SUM_SLOT)
        .ops(&[SSTORE, STOP]);
    assembled("store", asm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contracts_assemble() {
        for kind in [
            ContractKind::Token,
            ContractKind::Router,
            ContractKind::Store,
        ] {
            assert!(!runtime_code(kind).expect("assembles").is_empty());
        }
        assert!(token_creation_code().expect("assembles").len() > 100);
    }

    #[test]
    fn constants_are_what_they_say() {
        assert_eq!(CREATED_SUPPLY, U256::from(10u64).pow(U256::from(27)));
        assert_eq!(STORE_SUM_SLOT, U256::from(1) << 255);
    }
}
