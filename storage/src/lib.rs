//! strata-storage: the four state domains (account, storage, code,
//! commitment) served from memory, redb and immutable sorted files, with
//! read-latency telemetry per domain, tier and regime, and the [`StateDb`]
//! facade that ties the tiers, the commitment and the branch cache together.
#![deny(missing_docs)]

pub mod account;
mod commit;
mod db;
pub mod domain;
mod error;
pub mod files;
mod fileset;
pub mod genesis;
mod genesis_init;
mod inner;
pub mod keys;
mod maintenance;
mod options;
mod overlay;
mod reader;
#[cfg(feature = "revm")]
pub mod revm;
mod snapshot;
mod sources;
mod state_db;
pub mod telemetry;
mod unwind;
mod verify;
mod writer;

pub use account::Account;
pub use commit::CommitInfo;
pub use domain::{Domain, Regime};
pub use error::{Error, Result};
pub use maintenance::MaintenanceReport;
pub use options::{Durability, Options};
pub use reader::StateReader;
pub use state_db::{DB_FILE, DbStats, DomainStats, FILES_DIR, FileStats, StateDb};
pub use strata_cache::{CacheKind, CacheStats};
pub use verify::VerifyReport;
pub use writer::BlockWriter;
