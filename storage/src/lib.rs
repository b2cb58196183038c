//! strata-storage: the four state domains (account, storage, code,
//! commitment) served from memory, redb and immutable sorted files, with
//! read-latency telemetry per domain, tier and regime, and the [`StateDb`]
//! facade that ties the tiers, the commitment and the branch cache together.
#![deny(missing_docs)]

pub mod domain;
pub mod files;
pub mod genesis;
pub mod telemetry;

pub use domain::{Domain, Regime};
