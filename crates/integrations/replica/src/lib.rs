//! strata beyond one machine: read replicas that follow a writer through
//! an S3 object store.
//!
//! A [`Publisher`] beside the writer, read-only on its datadir, keeps a
//! bucket prefix holding a *base* — the datadir's redb tier as one stream
//! at a flushed head and the immutable files (state and history) the same
//! transaction lists — the journal's blocks since, in checksummed batches
//! naming the datadir, and a manifest naming them all, written last.
//! A [`Replica`] builds a datadir of its own in a local cache from the
//! base, replays the batches' blocks through a writer (each root checked),
//! and follows new manifests; `strata serve` reads it as it reads a datadir
//! beside its writer.
//!
//! Objects never change once written; the manifest is the only object
//! overwritten, and a replica refuses a damaged or foreign object (its
//! checksum, its datadir) instead of serving it.
#![deny(missing_docs)]

pub mod batch;
pub mod bucket;
mod error;
pub mod location;
pub mod manifest;
pub mod publish;
pub mod ranges;
pub mod remote_files;
pub mod replica;

pub use bucket::{Bucket, BucketConfig, BucketCounters};
pub use error::{ReplicaError, Result};
pub use location::BucketUrl;
pub use manifest::{BucketManifest, MANIFEST, MANIFEST_COPIES, manifest_copy};
pub use publish::{PublishOptions, PublishReport, Publisher};
pub use ranges::{RangeCache, RangeCacheOptions, RangeCacheStats};
pub use remote_files::BaseFiles;
pub use replica::{
    DEFAULT_FILL_STREAMS, DEFAULT_RANGE_CACHE_BYTES, Replica, ReplicaOptions, ReplicaStatus,
};
