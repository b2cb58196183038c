//! The test's Garage cluster (`strata_test_support::garage`) with the
//! replica's client settings: every node's endpoint, short timeouts so a
//! store that is down fails a call within seconds.

use std::sync::Arc;
use std::time::Duration;

use strata_replica::{Bucket, BucketConfig, BucketUrl};
use strata_test_support::garage::GarageCluster;

/// A running cluster.
pub(crate) struct Cluster(GarageCluster);

impl std::ops::Deref for Cluster {
    type Target = GarageCluster;

    fn deref(&self) -> &GarageCluster {
        &self.0
    }
}

impl Cluster {
    /// Starts a cluster, or `None` (the test skips) without Garage.
    pub(crate) fn start(test: &str) -> Option<Cluster> {
        GarageCluster::start(test).map(Cluster)
    }

    /// Settings that reach the cluster.
    pub(crate) fn config(&self) -> BucketConfig {
        let env = self.env();
        BucketConfig {
            endpoints: env["STRATA_S3_ENDPOINTS"]
                .split(',')
                .map(str::to_string)
                .collect(),
            key_id: env["STRATA_S3_KEY_ID"].clone(),
            secret: env["STRATA_S3_SECRET"].clone(),
            region: env["STRATA_S3_REGION"].clone(),
            request_timeout: Duration::from_secs(5),
            retries: 1,
        }
    }

    /// A client of the test bucket at `prefix`.
    pub(crate) fn bucket(&self, prefix: &str) -> Arc<Bucket> {
        let url: BucketUrl = self.url(prefix).parse().unwrap();
        Arc::new(Bucket::open(url, &self.config()).unwrap())
    }
}

/// A small deterministic generator (no dependency for a test's randomness).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
