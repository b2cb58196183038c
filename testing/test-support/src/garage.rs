//! A three-node Garage cluster on loopback for one test
//! (`testing/garage/cluster.sh`), stopped when dropped: the object store
//! the replica tests run against. Without `garage` on PATH (or `GARAGE`)
//! [`GarageCluster::start`] says so and returns `None` (the test skips),
//! except under `CI=true`, where that is a failure.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

/// A running cluster: three nodes, a bucket and a key.
pub struct GarageCluster {
    dir: tempfile::TempDir,
    env: HashMap<String, String>,
}

fn script() -> PathBuf {
    crate::repo_root().join("testing/garage/cluster.sh")
}

impl GarageCluster {
    /// Starts a cluster for `test`, or `None` without Garage (outside CI).
    pub fn start(test: &str) -> Option<GarageCluster> {
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
        let mut cluster = GarageCluster {
            dir: tempfile::tempdir().expect("a temporary folder"),
            env: HashMap::new(),
        };
        cluster.run(&["start"]);
        let text = std::fs::read_to_string(cluster.dir.path().join("env"))
            .expect("cluster.sh writes DIR/env");
        cluster.env = text
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
            .collect();
        Some(cluster)
    }

    fn run(&self, args: &[&str]) {
        let out = Command::new("bash")
            .arg(script())
            .arg(args[0])
            .arg(self.dir.path())
            .args(&args[1..])
            .output()
            .expect("run cluster.sh");
        assert!(
            out.status.success(),
            "cluster.sh {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// SIGKILLs node `n` (1..=3).
    pub fn kill(&self, n: u32) {
        self.run(&["kill", &n.to_string()]);
    }

    /// Starts node `n` again and reconnects it.
    pub fn restart(&self, n: u32) {
        self.run(&["restart", &n.to_string()]);
    }

    /// Stops every node.
    pub fn stop(&self) {
        self.run(&["stop"]);
    }

    /// The environment strata reads the store's settings from
    /// (`STRATA_S3_ENDPOINTS`, `_KEY_ID`, `_SECRET`, `_REGION`) and the
    /// test bucket's name (`STRATA_S3_BUCKET`).
    pub fn env(&self) -> &HashMap<String, String> {
        &self.env
    }

    /// `s3://<the test bucket>/<prefix>`.
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{}/{prefix}", self.env["STRATA_S3_BUCKET"])
    }
}

impl Drop for GarageCluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}
