//! strata-types: the words every strata crate shares, and nothing of the
//! engine: the four state [`Domain`]s and the [`Regime`]s that read them,
//! domain keys built from Ethereum values ([`keys`]), the [`Account`]
//! value, the [`Head`] of a store, the datadir's names and identity
//! ([`datadir`]) and how much history it keeps ([`HistoryRetention`]).
#![deny(missing_docs)]

pub mod account;
pub mod datadir;
pub mod domain;
mod head;
pub mod keys;
pub mod retention;

pub use account::{Account, code_hash};
pub use datadir::DatadirId;
pub use domain::{Domain, Regime};
pub use head::{HEAD_LEN, Head};
pub use retention::HistoryRetention;
