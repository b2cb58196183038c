//! `strata import-geth`: turn geth `prestateTracer` outputs for one block
//! (default mode and/or diffMode, as `debug_traceBlockByNumber` returns
//! them, per transaction) into ONE trace block line.
//!
//! Merging over the block's transactions:
//! - reads: the first value seen for each account and slot — unless an
//!   earlier transaction had already modified it, in which case the value
//!   before that earlier transaction (from its diff `pre`) is the pre-block
//!   value, and an account an earlier transaction created did not exist;
//! - writes: the last value written, with geth's diffMode decoding rules:
//!   a slot in `pre` but not in `post` (account in `post`) became zero; an
//!   account in `pre` but not in `post` was deleted; a field missing from
//!   `post` is unchanged; an account only in `post` was created.

mod account;
mod document;
mod error;
mod frames;
mod merge;

pub use account::GethAccount;
pub use document::parse_document;
pub use error::GethError;
pub use frames::{DiffFrame, TxFrames, diff_frames, prestate_frames};
pub use merge::merge_block;
