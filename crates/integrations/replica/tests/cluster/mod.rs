//! A three-node Garage cluster on loopback for one test
//! (`testing/garage/cluster.sh`), stopped when dropped. Without `garage`
//! on PATH the test says so and skips, except under `CI=true`, where that
//! is a failure.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use strata_replica::{Bucket, BucketConfig, BucketUrl};

/// A running cluster.
pub(crate) struct Cluster {
    dir: tempfile::TempDir,
    env: HashMap<String, String>,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../testing/garage/cluster.sh")
}

impl Cluster {
    /// Starts a cluster, or `None` (the test skips) without Garage.
    pub(crate) fn start(test: &str) -> Option<Cluster> {
        let garage = std::env::var("GARAGE").unwrap_or_else(|_| "garage".into());
        if Command::new(&garage).arg("--help").output().is_err() {
            let message = format!(
                "{test}: `{garage}` is not on PATH: install it with \
                 `cargo install garage --version 2.5.0 --locked --no-default-features --features bundled-libs,sqlite`"
            );
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{message} (CI=true: the replica tests must run)");
            }
            eprintln!("{message}; skipped");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut cluster = Cluster {
            dir,
            env: HashMap::new(),
        };
        cluster.run(&["start"]);
        let text = std::fs::read_to_string(cluster.dir.path().join("env")).unwrap();
        cluster.env = text
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
            .collect();
        Some(cluster)
    }

    fn run(&self, args: &[&str]) {
        let mut command = Command::new("bash");
        command.arg(script()).arg(args[0]).arg(self.dir.path());
        command.args(&args[1..]);
        let out = command.output().unwrap();
        assert!(
            out.status.success(),
            "cluster.sh {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// SIGKILLs node `n` (1..=3).
    pub(crate) fn kill(&self, n: u32) {
        self.run(&["kill", &n.to_string()]);
    }

    /// Starts node `n` again.
    pub(crate) fn restart(&self, n: u32) {
        self.run(&["restart", &n.to_string()]);
    }

    /// Stops every node.
    pub(crate) fn stop(&self) {
        self.run(&["stop"]);
    }

    /// Settings that reach the cluster (every node's endpoint), with short
    /// timeouts: a test's store that is down fails within seconds.
    pub(crate) fn config(&self) -> BucketConfig {
        BucketConfig {
            endpoints: self.env["STRATA_S3_ENDPOINTS"]
                .split(',')
                .map(str::to_string)
                .collect(),
            key_id: self.env["STRATA_S3_KEY_ID"].clone(),
            secret: self.env["STRATA_S3_SECRET"].clone(),
            region: self.env["STRATA_S3_REGION"].clone(),
            request_timeout: Duration::from_secs(5),
            retries: 1,
        }
    }

    /// The environment `strata` reads the store's settings from.
    pub(crate) fn env(&self) -> &HashMap<String, String> {
        &self.env
    }

    /// The test bucket at `prefix`.
    pub(crate) fn url(&self, prefix: &str) -> BucketUrl {
        format!("s3://{}/{prefix}", self.env["STRATA_S3_BUCKET"])
            .parse()
            .unwrap()
    }

    /// A client of the test bucket at `prefix`.
    pub(crate) fn bucket(&self, prefix: &str) -> Arc<Bucket> {
        Arc::new(Bucket::open(self.url(prefix), &self.config()).unwrap())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}
