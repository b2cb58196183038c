//! strata-storage: the four state domains (account, storage, code,
//! commitment) served from memory, redb and immutable sorted files, with
//! read-latency telemetry per domain, tier and regime, and the [`StateDb`]
//! facade that ties the tiers, the commitment and the branch cache together.
//!
//! This crate is the one dependency a client takes: it re-exports
//! strata-engine (the store) and the crates below and beside it at the
//! paths they have always had — [`files`], [`journal`], [`genesis`],
//! [`import`], [`dump`],
//! [`telemetry`] (and `telemetry::prometheus` with feature `prometheus`),
//! [`account`], [`domain`], [`keys`], and `revm` with feature `revm`.
//! ARCHITECTURE.md draws the crates and their direction.
//!
//! ```
//! use alloy_primitives::{Address, B256, U256};
//! use strata_storage::{Account, Options, Regime, StateDb};
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

pub use strata_bulk::{dump, import};
pub use strata_engine::*;
pub use strata_files as files;
pub use strata_genesis as genesis;
pub use strata_journal as journal;
/// Publishing a datadir to an S3 object store, and read replicas on other
/// machines that follow it (feature `replica`).
#[cfg(feature = "replica")]
pub use strata_replica as replica;
#[cfg(feature = "revm")]
pub use strata_revm as revm;
pub use strata_types::datadir::{BRANCHES_DIR, DB_FILE, FILES_DIR, HISTORY_DIR, JOURNAL_DIR};
pub use strata_types::{account, domain, keys};

/// Read-latency and block-level telemetry ([`strata_telemetry`]), and, with
/// feature `prometheus`, the store's figures as a `prometheus_client`
/// collector ([`strata_prometheus`]).
pub mod telemetry {
    #[cfg(feature = "prometheus")]
    pub use strata_prometheus as prometheus;
    pub use strata_telemetry::*;
}

/// The Rust samples of the README and of the book, compiled and run as this
/// crate's doc-tests, so that what they show cannot drift from the API
/// (`cargo test -p strata-storage --features revm --doc`).
#[cfg(all(doctest, feature = "revm"))]
mod book_samples {
    #[doc = include_str!("../../../../README.md")]
    struct Readme;
    #[doc = include_str!("../../../../book/src/guide/library/writing-blocks.md")]
    struct WritingBlocks;
    #[doc = include_str!("../../../../book/src/guide/library/access-lists.md")]
    struct AccessLists;
    #[doc = include_str!("../../../../book/src/guide/readers.md")]
    struct Readers;
}
