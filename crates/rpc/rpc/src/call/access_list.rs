//! `eth_createAccessList`: geth's loop. Run the transaction with an
//! inspector that records the accounts and slots it touches — the slot of
//! every `SLOAD` and `SSTORE` (under the executing account), the account
//! of every `BALANCE`, `EXTCODESIZE`, `EXTCODECOPY`, `EXTCODEHASH`,
//! `SELFDESTRUCT` and call — except the sender, the recipient (or the
//! created contract) and the precompiles, which are warm anyway; run it
//! again with that list, until the list no longer grows. The answer is the
//! list, the gas used with it and, when the last run failed, its error.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use alloy_eips::eip2930::{AccessList, AccessListItem, AccessListResult};
use alloy_primitives::{Address, B256, TxKind, U256};
use revm::Database;
use revm::bytecode::opcode;
use revm::context::result::ExecutionResult;
use revm::inspector::Inspector;
use revm::interpreter::Interpreter;
use revm::interpreter::interpreter_types::{InputsTr, Jumps};
use revm::precompile::{PrecompileSpecId, Precompiles};

use crate::call::db::revm_error;
use crate::call::env::Setup;
use crate::call::run::{evm_error, traced};
use crate::error::RpcError;
use crate::stop::Stop;

/// Runs at most; each run before the last grows the list, so this bounds
/// a transaction whose every run touches something new.
const MAX_RUNS: usize = 256;

/// Accounts → slots, in order.
type Touched = BTreeMap<Address, BTreeSet<B256>>;

/// What the transaction touched, on top of the list it ran with.
#[derive(Clone, Debug)]
struct AccessListInspector {
    excluded: HashSet<Address>,
    touched: Touched,
}

impl<CTX> Inspector<CTX> for AccessListInspector {
    fn step(&mut self, interp: &mut Interpreter, _context: &mut CTX) {
        match interp.bytecode.opcode() {
            opcode::SLOAD | opcode::SSTORE => {
                if let Ok(slot) = interp.stack.peek(0) {
                    let address = interp.input.target_address();
                    self.touched
                        .entry(address)
                        .or_default()
                        .insert(B256::from(slot));
                }
            }
            opcode::BALANCE
            | opcode::EXTCODESIZE
            | opcode::EXTCODECOPY
            | opcode::EXTCODEHASH
            | opcode::SELFDESTRUCT => {
                if let Ok(word) = interp.stack.peek(0) {
                    self.account(word);
                }
            }
            opcode::CALL | opcode::CALLCODE | opcode::DELEGATECALL | opcode::STATICCALL => {
                if let Ok(word) = interp.stack.peek(1) {
                    self.account(word);
                }
            }
            _ => {}
        }
    }
}

impl AccessListInspector {
    fn account(&mut self, word: U256) {
        let address = Address::from_word(B256::from(word));
        if !self.excluded.contains(&address) {
            self.touched.entry(address).or_default();
        }
    }
}

/// The access list of `setup`'s transaction, by geth's loop.
pub(crate) fn create(setup: &mut Setup, stop: &Stop) -> Result<AccessListResult, RpcError> {
    let excluded = excluded(setup)?;
    let mut list = touched_of(&setup.tx.access_list);
    for _ in 0..MAX_RUNS {
        let mut tx = setup.tx.clone();
        tx.access_list = list_of(&list);
        // A legacy transaction carries no access list: make it EIP-2930's.
        tx.tx_type = tx.tx_type.max(1);
        let inspector = AccessListInspector {
            excluded: excluded.clone(),
            touched: list.clone(),
        };
        let (result, inspector) = traced(&setup.env, &mut setup.db, tx, inspector, stop)
            .map_err(|error| evm_error(*error))?;
        if inspector.touched == list {
            return Ok(AccessListResult {
                access_list: list_of(&list),
                gas_used: U256::from(result.tx_gas_used()),
                error: failure(&result),
            });
        }
        list = inspector.touched;
    }
    Err(RpcError::Transaction(format!(
        "the access list still grew after {MAX_RUNS} runs"
    )))
}

/// The sender, the recipient (or the contract a creation makes) and the
/// precompiles of the block's fork.
fn excluded(setup: &mut Setup) -> Result<HashSet<Address>, RpcError> {
    let from = setup.tx.caller;
    let to = match setup.tx.kind {
        TxKind::Call(to) => to,
        TxKind::Create => {
            let nonce = setup
                .db
                .basic(from)
                .map_err(revm_error)?
                .map_or(0, |account| account.nonce);
            from.create(nonce)
        }
    };
    let precompiles = Precompiles::new(PrecompileSpecId::from_spec_id(setup.env.cfg_env.spec));
    Ok([from, to]
        .into_iter()
        .chain(precompiles.addresses().copied())
        .collect())
}

/// Why the last run failed, as geth words it in `error`.
fn failure(result: &ExecutionResult) -> Option<String> {
    match result {
        ExecutionResult::Success { .. } => None,
        ExecutionResult::Revert { .. } => Some("execution reverted".to_string()),
        ExecutionResult::Halt { reason, .. } => Some(reason.to_string()),
    }
}

fn touched_of(list: &AccessList) -> Touched {
    let mut touched = Touched::new();
    for item in list.iter() {
        touched
            .entry(item.address)
            .or_default()
            .extend(item.storage_keys.iter().copied());
    }
    touched
}

fn list_of(touched: &Touched) -> AccessList {
    AccessList(
        touched
            .iter()
            .map(|(address, slots)| AccessListItem {
                address: *address,
                storage_keys: slots.iter().copied().collect(),
            })
            .collect(),
    )
}
