//! strata-bulk: whole states built in bounded memory, below the engine.
//!
//! - [`sort`]: an external sort of byte pairs (arena sorted on rayon,
//!   spilled as runs, k-way merged) and the scratch folder its runs go to.
//! - [`account_trie`]: storage tries per account (in memory, or through a
//!   sort of their own for an account too large to hold) and the account
//!   trie streamed from leaves in hashed order; shared by the import and by
//!   the engine's `verify`, which derives the commitment the same way.
//! - [`import`]: a whole state of block N from an [`import::AccountSource`]
//!   into one immutable file per domain ([`import::build`]); the engine
//!   lists the files, records the head and publishes the state.
//! - [`dump`]: the line-by-line state dump, read ([`dump::DumpReader`], an
//!   account source) and written ([`dump::DumpWriter`]).
//!
//! It knows the vocabulary, the fs seam, the file format, the genesis
//! parser and the commitment; nothing of the engine.
#![deny(missing_docs)]

pub mod account_trie;
pub mod dump;
mod error;
pub mod import;
pub mod sort;

pub use error::{BulkError, Result};
