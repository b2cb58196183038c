//! strata-engine: the four state domains (account, storage, code,
//! commitment) served from memory, redb and immutable sorted files, with
//! read-latency telemetry per domain, tier and regime, and the [`StateDb`]
//! facade that ties the tiers, the commitment and the branch cache together.
//!
//! ```
//! use alloy_primitives::{Address, B256, U256};
//! use strata_engine::{Account, Options, Regime, StateDb};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let db = StateDb::open(dir.path(), Options::default()).unwrap();
//! let alice = Address::repeat_byte(0xa1);
//!
//! let mut block = db.begin_block(0).unwrap();
//! block.put_account(alice, &Account { nonce: 1, balance: U256::from(100), ..Account::default() });
//! block.put_storage(alice, B256::with_last_byte(1), U256::from(7));
//! let root = block.commit().unwrap().root; // the Ethereum state root of block 0
//!
//! let reader = db.reader(Regime::Exec); // a snapshot; Send + Sync, cheap to clone
//! assert_eq!(reader.account(&alice).unwrap().unwrap().balance, U256::from(100));
//! assert_eq!(reader.storage(&alice, &B256::with_last_byte(1)).unwrap(), U256::from(7));
//! assert_eq!(db.root(), root);
//! ```
#![deny(missing_docs)]

pub mod base;
mod branch_stream;
mod branches;
mod commit;
mod drop_behind;
mod error;
mod figures;
mod genesis_init;
mod imported;
mod inner;
mod ledger;
mod maintenance;
mod options;
mod pause;
mod read_only;
mod reader;
mod replay_check;
mod retained;
mod root_stream;
mod sample;
mod state_db;
mod state_history;
mod state_read;
#[cfg(test)]
mod test_chain;
mod unwind;
mod verify;
mod warm_start;
mod worker;
mod writer;
mod writer_slot;

pub use commit::CommitInfo;
pub use error::{DbError, Error, Result};
pub use figures::{DomainFiles, StoreFigures, WeakStateDb};
pub use genesis_init::GenesisName;
pub use ledger::FlushStats;
pub use maintenance::MaintenanceReport;
pub use options::{Durability, Options};
#[cfg(feature = "test-utils")]
pub use pause::{PausePoint, PausePoints};
pub use read_only::{FollowStats, ReadOnlyStateDb};
pub use reader::StateReader;
pub use state_db::{DbStats, DomainStats, FileStats, StateDb};
pub use state_read::StateRead;
pub use strata_cache::{CacheKind, CacheStats, MAX_WARMERS};
pub use strata_commitment::{AccountProof, SlotProof};
/// How many block hashes and headers the store serves back from its head
/// (the EVM's BLOCKHASH window).
pub use strata_db::panic_message;
pub use strata_db::tables::BLOCK_HASH_WINDOW;
pub use strata_types::{Account, Domain, HistoryRetention, Regime};
pub use strata_view::access_list::{self, AccountAccess, BlockAccessList};
pub use strata_view::stats::{
    HistoryDomainSize, HistoryStats, JournalStats, LiveSize, MemoryStats,
};
pub use verify::{IntegrityTiming, VerifyOptions, VerifyReport, verify_datadir};
pub use warm_start::WarmStart;
pub use writer::BlockWriter;
