//! strata-view: what a reader of the store holds and how it reads it.
//!
//! A [`snapshot::Snapshot`] is one published moment of the store: the
//! memory tier (committed blocks not yet flushed, [`memory::MemoryTier`]),
//! one redb read transaction with its domain tables opened once, and the
//! file set of the same moment ([`fileset::FileSet`]), with the undo data of
//! the recent blocks ([`history::History`]). A [`reader::StateReader`] reads
//! one (through a writer's [`overlay::Overlay`] and the value cache when it
//! has them): point reads tier by tier, range reads as a k-way merge
//! ([`range`]), proofs ([`proof`]), and the commitment's sources
//! ([`sources`]).
//!
//! The engine (`strata-engine`) builds and publishes these views: it owns
//! the writer, the journal-backed ledger, flush, maintenance, unwind and
//! verify. This crate knows none of that; it sits one floor below.
//!
//! **Internal.** This crate is the engine's building blocks, not an API:
//! only the engine depends on it, and its items change with the engine.
//! Clients use `strata-storage`, whose reader (`StateReader`), error
//! (`Error`, which takes in this crate's [`error::ReadError`] variant by
//! variant) and access-list types are the engine's.
#![deny(missing_docs)]

pub mod access_list;
pub mod error;
pub mod fileset;
pub mod history;
pub mod history_files;
pub mod memory;
pub mod overlay;
pub mod proof;
pub mod range;
pub mod reader;
pub mod snapshot;
pub mod sources;
pub mod stats;
pub mod trie_update;
pub mod value_keys;
