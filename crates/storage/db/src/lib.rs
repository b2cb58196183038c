//! strata-db, the redb tier's schema: one table per domain holding the
//! newest value of each key with the step that wrote it, plus metadata
//! (format, head, manifest), per-block roots, block hashes and code by
//! hash, the state's history; the value encoding; the guard that turns redb's panics on damaged
//! pages into errors; and a copy-on-write backend for read-only recovery.
//! It knows the vocabulary (strata-types) and redb, nothing of the engine.
#![deny(missing_docs)]

pub mod base;
pub mod cow;
mod error;
pub mod guard;
pub mod heads;
pub mod history;
pub mod meta;
pub mod tables;
pub mod value;

pub use error::{DbError, Result, SchemaError, db_err};
pub use guard::{guarded, panic_message};
pub use heads::{DomainTables, HeadTables};
