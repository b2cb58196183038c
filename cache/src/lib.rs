//! strata-cache: the sharded branch cache, the baseline caches it is measured
//! against, and the rayon warmup pool that fills it ahead of the commitment.
#![deny(missing_docs)]
