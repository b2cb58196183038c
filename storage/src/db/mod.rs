//! The redb tier: one table per domain holding the newest value of each key
//! with the step that wrote it, plus metadata, per-block roots and unwind data.

pub(crate) mod cow;
pub(crate) mod guard;
pub(crate) mod meta;
pub(crate) mod tables;
pub(crate) mod value;
