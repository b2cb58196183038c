//! revm 43 integration (feature `revm`): strata is revm's database, and
//! revm's output goes back into a block without glue code of the client's own.
//!
//! - [`StateReader`](strata_engine::StateReader) implements revm's
//!   [`DatabaseRef`]: accounts, storage, code by hash and the last 256 block
//!   hashes come straight from the reader's snapshot. Wrap it in
//!   [`WrapDatabaseRef`] (or use [`exec_database`]) where revm wants a
//!   `Database`; open it with [`Regime::Exec`](strata_engine::Regime::Exec) so its
//!   reads are timed as execution reads.
//! - [`apply_evm_state`] writes the [`EvmState`](revm_state::EvmState) of a
//!   `transact` into a [`BlockWriter`](strata_engine::BlockWriter); the block's
//!   `commit()` then gives the state root.
//!
//! Several transactions in one block: execute each over
//! `writer.reader(Regime::Exec)`, which sees the block's writes so far, and
//! apply its state before the next one.
//!
//! ```
//! use alloy_primitives::{Address, U256};
//! use revm::context::TxEnv;
//! use revm::{Context, ExecuteEvm, MainBuilder, MainContext};
//! use strata_engine::{Options, StateDb};
//! use strata_genesis::{GenesisAccount, GenesisAlloc};
//! use strata_revm::{apply_evm_state, exec_database};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let db = StateDb::open(dir.path(), Options::default())?;
//! let (alice, bob) = (Address::repeat_byte(0xa1), Address::repeat_byte(0xb0));
//! let alloc = GenesisAlloc::from([(
//!     alice,
//!     GenesisAccount { balance: U256::from(10u64.pow(18)), ..Default::default() },
//! )]);
//! db.init_genesis(&alloc, strata_engine::GenesisName::Unnamed)?;
//!
//! // Execute over the last committed block, reads timed as Exec.
//! let mut evm = Context::mainnet().with_db(exec_database(&db)).build_mainnet();
//! let tx = TxEnv::builder().caller(alice).call(bob).value(U256::from(5)).gas_limit(21_000);
//! let out = evm.transact(tx.build().unwrap())?;
//! assert!(out.result.is_success());
//!
//! let mut block = db.begin_block(1)?;
//! apply_evm_state(&mut block, &out.state)?;
//! let root = block.commit()?.root;
//! assert_eq!(root, db.root());
//! assert_eq!(db.reader(strata_engine::Regime::Exec).account(&bob)?.unwrap().balance, U256::from(5));
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

mod apply;
mod bundle;
mod database;
mod error;
#[cfg(test)]
mod tests;
mod writer_database;

pub use apply::{ApplyStats, apply_evm_state};
pub use bundle::{AccountChange, apply_bundle_state, bundle_code, plain_changes};
pub use database::{ReaderDatabase, exec_database};
pub use error::RevmError;
pub use revm_database_interface::{DatabaseRef, WrapDatabaseRef};
pub use writer_database::{WriterDatabase, writer_database};
