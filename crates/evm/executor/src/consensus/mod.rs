//! The consensus checks a block passes before and after execution, apart
//! from the EVM's own checks of each transaction: header fields per fork,
//! the header against its parent, the body's roots and the ommer rules.
//! Proof-of-work seals are not verified (as the consensus tests'
//! `NoProof` seal engine asks).

mod body;
mod difficulty;
mod header;

pub use body::{Ancestor, check_body_roots, check_ommers};
pub use difficulty::ethash_difficulty;
pub use header::{check_against_parent, check_header};
