//! The crate's error type.

/// Everything strata-cache can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The rayon pool of warmers could not be built (e.g. threads could not
    /// be spawned).
    #[error("cannot start the warmup pool with {warmers} warmer threads: {source}")]
    WarmupPool {
        /// The number of warmers that was asked for.
        warmers: usize,
        /// Why rayon refused.
        #[source]
        source: rayon::ThreadPoolBuildError,
    },
    /// A cache kind name that is none of [`CacheKind::ALL`](crate::CacheKind::ALL).
    #[error("unknown cache kind {found:?}: expected one of {expected}")]
    UnknownKind {
        /// The name that was given.
        found: String,
        /// The accepted names, comma-separated.
        expected: String,
    },
    /// More warmers were asked for than [`MAX_WARMERS`](crate::MAX_WARMERS).
    #[error("{warmers} warmers asked for; at most {max} are allowed")]
    TooManyWarmers {
        /// The number of warmers that was asked for.
        warmers: usize,
        /// The limit.
        max: usize,
    },
}
