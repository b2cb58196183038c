//! EIP-7610 decided by strata: a contract creation (a create transaction,
//! CREATE or CREATE2) at an address that has storage is a collision, as one
//! at an address with a nonce or code is. revm 43 looks at the nonce and
//! the code only, so a block whose first run creates a contract over an
//! account with storage but neither (a state only pre-Spurious-Dragon
//! history and some consensus tests hold) is run again with
//! [`StorageCollisions`] watching: every create whose target has storage in
//! the state the block starts from ends as revm ends a collision — the
//! creator's nonce bumped, the target warm, all the create's gas spent, no
//! account made. Only such blocks run with an inspector; the others keep
//! revm's uninspected loop.

use alloy_primitives::{Address, Bytes, KECCAK256_EMPTY};
use alloy_trie::EMPTY_ROOT_HASH;
use revm::context::{ContextTr, JournalTr};
use revm::context_interface::journaled_state::account::JournaledAccountTr;
use revm::inspector::Inspector;
use revm::interpreter::{CreateInputs, CreateOutcome, Gas, InstructionResult, InterpreterResult};
use strata_storage::StateReader;

/// Whether `address` had storage but no code and nonce 0 in `before`: a
/// contract created there is EIP-7610's collision that revm 43 misses.
/// The one test of it, for the runs that detect such a create and for
/// [`StorageCollisions`], which decides it.
pub(crate) fn has_storage_only(
    before: &StateReader,
    address: &Address,
) -> Result<bool, strata_storage::Error> {
    let Some(account) = before.account(address)? else {
        return Ok(false);
    };
    if account.nonce != 0 || account.code_hash != KECCAK256_EMPTY {
        return Ok(false);
    }
    Ok(before.proof(address, &[])?.storage_root != EMPTY_ROOT_HASH)
}

/// revm's limit of nested calls and creates.
const CALL_STACK_LIMIT: usize = 1024;

/// Turns every create over an account with storage (in the state before
/// the block) into a collision.
#[derive(Clone, Debug)]
pub(crate) struct StorageCollisions {
    /// The state the block starts from.
    before: StateReader,
    /// The first read that failed, if any (the block is then refused as
    /// one the store could not serve).
    failed: Option<String>,
}

impl StorageCollisions {
    /// A watcher over the state `before` the block.
    pub(crate) fn new(before: StateReader) -> Self {
        Self {
            before,
            failed: None,
        }
    }

    /// The first read that failed.
    pub(crate) fn failed(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// Whether `address` had storage, no code and nonce 0 before the block.
    fn has_storage(&mut self, address: Address) -> bool {
        match has_storage_only(&self.before, &address) {
            Ok(has) => has,
            Err(error) => {
                self.failed
                    .get_or_insert_with(|| format!("EIP-7610 check of {address}: {error}"));
                false
            }
        }
    }
}

impl<CTX: ContextTr> Inspector<CTX> for StorageCollisions {
    fn create(&mut self, context: &mut CTX, inputs: &mut CreateInputs) -> Option<CreateOutcome> {
        let journal = context.journal_mut();
        // What revm refuses before it looks at the target stays revm's.
        if journal.depth() > CALL_STACK_LIMIT {
            return None;
        }
        let caller = journal.load_account_mut(inputs.caller()).ok()?;
        if *caller.balance() < inputs.value() || caller.nonce() == u64::MAX {
            return None;
        }
        let target = inputs.created_address(caller.nonce());
        drop(caller);
        // A nonce or code at the target is revm's own collision.
        let loaded = journal.load_account(target).ok()?;
        if loaded.info.nonce != 0 || loaded.info.code_hash != KECCAK256_EMPTY {
            return None;
        }
        if !self.has_storage(target) {
            return None;
        }
        let journal = context.journal_mut();
        let mut caller = journal.load_account_mut(inputs.caller()).ok()?;
        caller.bump_nonce();
        Some(CreateOutcome {
            result: InterpreterResult {
                result: InstructionResult::CreateCollision,
                gas: Gas::new_with_regular_gas_and_reservoir(
                    inputs.gas_limit(),
                    inputs.reservoir(),
                ),
                output: Bytes::new(),
            },
            address: None,
            charged_create_state_gas: inputs.charged_create_state_gas(),
        })
    }
}
