//! `strata publish --datadir D --to s3://bucket/prefix`: keeps an S3
//! bucket holding what read replicas on other machines start from and
//! follow (`strata serve --replica`): a base of the datadir (its redb tier
//! as one stream and its immutable files), the journal's blocks since in
//! batches, and a manifest written last. Read-only on the datadir; beside
//! its writer (`--share`) it publishes each block within `--interval-ms`.
//! Killed at any moment, the bucket stays at its last manifest, and the
//! next run takes up from there.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use strata_storage::replica::{
    Bucket, BucketConfig, BucketUrl, PublishOptions, Publisher, ReplicaError,
};

use crate::CliError;
use crate::scratch::{LockedDir, PUBLISH_PREFIX, remove_stale};

/// Arguments of `strata publish`.
#[derive(Debug, Clone, Args)]
pub struct PublishArgs {
    /// The data directory (opened read-only; its writer may be running
    /// with --share).
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
    /// The bucket and prefix to publish to. The object store's address and
    /// keys come from STRATA_S3_ENDPOINTS (comma-separated), STRATA_S3_KEY_ID,
    /// STRATA_S3_SECRET and STRATA_S3_REGION (or AWS_ENDPOINT_URL,
    /// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION).
    #[arg(long, value_name = "s3://BUCKET/PREFIX")]
    pub to: String,
    /// The pause between rounds, in ms.
    #[arg(long, value_name = "MS", default_value_t = 200)]
    pub interval_ms: u64,
    /// Make a new base once this many blocks follow the current one.
    #[arg(long, value_name = "BLOCKS", default_value_t = 2_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub base_every: u64,
    /// Keep objects the manifest no longer names this long (seconds)
    /// before deleting them: a replica never misses one it was told of.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub grace_secs: u64,
    /// The folder in which a base is written before its upload, in a
    /// locked `strata-publish-XXXXXX` of its own that a killed run's next
    /// start removes (default: the system's temporary folder).
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
    /// Publish once and exit.
    #[arg(long)]
    pub once: bool,
}

pub(super) fn run(args: PublishArgs) -> Result<(), CliError> {
    let error = |e: ReplicaError| CliError::Publish(Box::new(e));
    let url: BucketUrl = args.to.parse().map_err(error)?;
    let config = BucketConfig::from_env().map_err(error)?;
    let bucket = Arc::new(Bucket::open(url.clone(), &config).map_err(error)?);
    let parent = args.scratch.clone().unwrap_or_else(std::env::temp_dir);
    remove_stale(&parent, PUBLISH_PREFIX);
    let scratch = LockedDir::new_in(&parent, PUBLISH_PREFIX).map_err(CliError::file(parent))?;
    let options = PublishOptions {
        base_every: args.base_every,
        grace: Duration::from_secs(args.grace_secs),
        scratch: scratch.path().to_owned(),
        ..PublishOptions::default()
    };
    let mut publisher = Publisher::open(&args.datadir, bucket.clone(), options).map_err(error)?;
    eprintln!(
        "publish: {} to {url} (bucket at block {})",
        args.datadir.display(),
        publisher
            .manifest()
            .map_or_else(|| "none yet".to_string(), |m| m.head.to_string())
    );
    loop {
        match publisher.publish_once() {
            Ok(report) => {
                if report.blocks > 0 || report.base || args.once {
                    let counters = bucket.counters();
                    eprintln!(
                        "publish: block {} ({} new{}), {} objects uploaded, {} already there, {} deleted; {} PUTs, {} bytes up so far",
                        report.head.map_or_else(|| "-".into(), |h| h.to_string()),
                        report.blocks,
                        if report.base { ", a new base" } else { "" },
                        report.uploaded,
                        report.skipped,
                        report.deleted,
                        counters.puts,
                        counters.bytes_out
                    );
                }
            }
            Err(e) if args.once => return Err(error(e)),
            Err(e) => eprintln!("publish: {e}; trying again"),
        }
        if args.once {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(args.interval_ms));
    }
}
