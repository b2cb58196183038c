//! `strata serve --datadir D [--http ADDR] [--ws ADDR]`: Ethereum JSON-RPC
//! over a datadir, read-only beside its writer (strata-rpc on jsonrpsee):
//! the state methods at any retained block, proofs, the range methods,
//! `eth_call`, `eth_estimateGas` and `eth_createAccessList` (under the
//! fork rules of `--genesis`, else the datadir's recorded configuration);
//! bounded requests, batches, connections, call time and call gas;
//! requests and latency per method on `--metrics ADDR`. Several `serve`
//! processes can follow one datadir. Stops on SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use prometheus_client::registry::Registry;
use strata_rpc::{Chain, Limits, RpcMetrics, RpcServer};
use strata_storage::{Options, ReadOnlyStateDb, Regime};

use crate::CliError;
use crate::error::ServeError;
use crate::metrics_server::MetricsServer;

/// Arguments of `strata serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The data directory (opened read-only; its writer may be running
    /// with --share).
    #[arg(long, value_name = "DIR", required_unless_present = "replica")]
    pub datadir: Option<PathBuf>,
    /// Serve a read replica of the datadir published at this bucket
    /// (`strata publish`): built in --cache from the bucket's base, kept at
    /// the bucket's head. The object store's address and keys come from
    /// STRATA_S3_ENDPOINTS, STRATA_S3_KEY_ID, STRATA_S3_SECRET and
    /// STRATA_S3_REGION (or AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
    /// AWS_SECRET_ACCESS_KEY, AWS_REGION).
    #[arg(
        long,
        value_name = "s3://BUCKET/PREFIX",
        conflicts_with = "datadir",
        requires = "cache"
    )]
    pub replica: Option<String>,
    /// The replica's local folder (its datadir, reused when it restarts).
    #[arg(long, value_name = "DIR", requires = "replica")]
    pub cache: Option<PathBuf>,
    /// The most the replica keeps on local disk of the base's files, in
    /// GiB: they are read from the bucket in 64 KiB ranges as reads need
    /// them, the least recently used dropped past this (fixed when the
    /// cache folder is first built; 0 downloads them whole instead).
    #[arg(long, value_name = "GIB", default_value_t = 4.0, requires = "replica",
          value_parser = gib)]
    pub cache_gib: f64,
    /// GETs at a time downloading the base's files whole in the
    /// background, the commitment's first, as far as three quarters of
    /// --cache-gib holds them (0: none; reads fetch the ranges they miss).
    #[arg(long, value_name = "N", default_value_t = strata_storage::replica::DEFAULT_FILL_STREAMS,
          requires = "replica")]
    pub fill_streams: usize,
    /// How often the replica looks at the bucket's manifest, in ms.
    #[arg(long, value_name = "MS", default_value_t = 100, requires = "replica")]
    pub replica_poll_ms: u64,
    /// Where to serve HTTP and WebSocket (port 0 picks a free port; the
    /// bound address is printed to stderr).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8545")]
    pub http: SocketAddr,
    /// Also serve WebSocket alone at this address.
    #[arg(long, value_name = "ADDR")]
    pub ws: Option<SocketAddr>,
    /// The chain id `eth_chainId` answers and calls run with (default: the
    /// --genesis file's, else the datadir's recorded configuration's, else 1).
    #[arg(long, value_name = "ID")]
    pub chain_id: Option<u64>,
    /// A geth genesis file: its chain id, and the fork rules eth_call,
    /// eth_estimateGas and eth_createAccessList run under (instead of the
    /// configuration `import-chain` recorded in the datadir).
    #[arg(long, value_name = "FILE")]
    pub genesis: Option<PathBuf>,
    /// Serve Prometheus metrics (requests and latency per method) at
    /// ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Calls in one batch request at most.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_batch)]
    pub max_batch: u32,
    /// Request body size limit in MiB.
    #[arg(long, value_name = "MIB", default_value_t = Limits::default().max_request_bytes >> 20,
          value_parser = clap::value_parser!(u32).range(1..=4095))]
    pub max_request_mib: u32,
    /// Response body size limit in MiB.
    #[arg(long, value_name = "MIB", default_value_t = Limits::default().max_response_bytes >> 20,
          value_parser = clap::value_parser!(u32).range(1..=4095))]
    pub max_response_mib: u32,
    /// Open connections at most.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_connections,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Calls running at once at most (later ones wait).
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_in_flight,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65_536))]
    pub max_in_flight: usize,
    /// Time one call may take, in ms.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().call_timeout.as_millis() as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub call_timeout_ms: u64,
    /// Entries a range call (debug_storageRangeAt, debug_accountRange)
    /// returns at most.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_page,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_page: usize,
    /// Gas of an eth_call, eth_estimateGas or eth_createAccessList that
    /// names none, and the most one may name.
    #[arg(long, value_name = "GAS", default_value_t = Limits::default().gas_cap,
          value_parser = clap::value_parser!(u64).range(21_000..))]
    pub rpc_gas_cap: u64,
}

pub(super) fn run(args: ServeArgs) -> Result<(), CliError> {
    let genesis = args
        .genesis
        .as_deref()
        .map(strata_executor::GenesisBlock::read)
        .transpose()?;
    let options = Options::default().with_read_metrics(true);
    let replica = match (&args.replica, &args.cache) {
        (Some(url), Some(cache)) => Some(open_replica(
            url,
            cache,
            args.cache_gib,
            args.fill_streams,
            args.replica_poll_ms,
        )?),
        _ => None,
    };
    let datadir = match (&replica, &args.datadir) {
        (Some(replica), _) => replica.datadir().to_path_buf(),
        (None, Some(datadir)) => datadir.clone(),
        (None, None) => return Err(ServeError::NothingToServe.into_cli()),
    };
    // A replica's readers read the base's files through its bucket.
    let options = match &replica {
        Some(replica) => replica.reader_options(options),
        None => options,
    };
    let db =
        Arc::new(ReadOnlyStateDb::open(&datadir, options).map_err(CliError::storage(&datadir))?);
    if let (Some(genesis), Some(path)) = (&genesis, &args.genesis) {
        check_same_chain(&db, &datadir, genesis, path)?;
    }
    let chain = Chain {
        chain_id: args.chain_id,
        spec: genesis.map(|genesis| genesis.spec),
    };
    let metrics = RpcMetrics::default();
    let _metrics_server = match args.metrics {
        Some(addr) => {
            let mut registry = Registry::default();
            metrics.register(&mut registry);
            if let Some(replica) = &replica {
                crate::replica_metrics::register(&mut registry, replica.clone());
            }
            let server = MetricsServer::start(addr, registry)?;
            eprintln!("serve: metrics at http://{}/metrics", server.addr());
            Some(server)
        }
        None => None,
    };
    let limits = Limits {
        max_batch: args.max_batch,
        max_request_bytes: args.max_request_mib << 20,
        max_response_bytes: args.max_response_mib << 20,
        max_connections: args.max_connections,
        max_in_flight: args.max_in_flight,
        call_timeout: Duration::from_millis(args.call_timeout_ms),
        max_page: args.max_page,
        gas_cap: args.rpc_gas_cap,
        ..Limits::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("strata-rpc")
        .build()
        .map_err(|e| ServeError::Runtime(e).into_cli())?;
    runtime.block_on(async {
        let server = RpcServer::start(db, chain, limits, metrics, args.http, args.ws)
            .await
            .map_err(|e| ServeError::Listen(e).into_cli())?;
        let what = match (&args.replica, &replica) {
            (Some(url), Some(replica)) => {
                let counters = replica.bucket().counters();
                format!(
                    "replica of {url} (block {}, cache {}; {} GETs, {} bytes down to start{})",
                    replica.status().head,
                    datadir.display(),
                    counters.gets,
                    counters.bytes_in,
                    ranges_summary(replica)
                )
            }
            _ => datadir.display().to_string(),
        };
        eprintln!(
            "serve: {what} at http://{}{}",
            server.http_addr(),
            server
                .ws_addr()
                .map_or_else(String::new, |ws| format!(" and ws://{ws}"))
        );
        shutdown_signal().await;
        eprintln!("serve: stopping");
        if let Some(replica) = &replica {
            eprintln!("{}", replica_summary(replica));
        }
        server.stop().await;
        Ok(())
    })
}

/// What a replica did while it served: blocks applied, the lag from each
/// block's upload to its application, and the requests it made.
fn replica_summary(replica: &strata_storage::replica::Replica) -> String {
    let status = replica.status();
    let mut lags = replica.lags_ms();
    lags.sort_unstable();
    let at = |q: f64| {
        lags.get(((lags.len() as f64 - 1.0) * q).round() as usize)
            .map_or_else(|| "-".to_string(), |ms| format!("{ms} ms"))
    };
    let counters = replica.bucket().counters();
    format!(
        "serve: replica at block {} (bucket {}), {} blocks applied, lag p50 {} p99 {} max {}; {} GETs, {} bytes down, {} failovers",
        status.head,
        status.bucket_head,
        status.applied,
        at(0.5),
        at(0.99),
        at(1.0),
        counters.gets,
        counters.bytes_in,
        counters.failovers
    ) + &ranges_summary(replica)
}

/// The range cache's part of a replica's summary (empty when it holds its
/// files whole).
fn ranges_summary(replica: &strata_storage::replica::Replica) -> String {
    replica
        .range_cache_stats()
        .map_or_else(String::new, |ranges| {
            let files = replica.base_files().unwrap_or_default();
            let (held, listed, bytes) = (files.whole, files.listed, files.whole_bytes);
            format!(
                "; base files read in ranges: {} chunks fetched, {} read from the cache, {} evicted, {} bytes cached; {held} of {listed} files held whole ({bytes} bytes)",
                ranges.misses, ranges.hits, ranges.evicted, ranges.bytes
            )
        })
}

/// A number of GiB, 0 or more.
fn gib(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(gib) if gib.is_finite() && gib >= 0.0 => Ok(gib),
        _ => Err(format!("{text:?} is not a number of GiB (0 or more)")),
    }
}

/// Opens the replica of the bucket at `url` cached in `cache`.
fn open_replica(
    url: &str,
    cache: &Path,
    cache_gib: f64,
    fill_streams: usize,
    poll_ms: u64,
) -> Result<Arc<strata_storage::replica::Replica>, CliError> {
    use strata_storage::replica::{Bucket, BucketConfig, BucketUrl, Replica, ReplicaOptions};
    let replica_error = |e| ServeError::Replica(Box::new(e)).into_cli();
    let url: BucketUrl = url.parse().map_err(replica_error)?;
    let config = BucketConfig::from_env().map_err(replica_error)?;
    let bucket = Arc::new(Bucket::open(url, &config).map_err(replica_error)?);
    let range_cache_bytes = (cache_gib > 0.0).then_some((cache_gib * (1u64 << 30) as f64) as u64);
    let options = ReplicaOptions {
        poll: Duration::from_millis(poll_ms.max(1)),
        range_cache_bytes,
        // Answers at once, at the block it holds, while it catches up.
        catch_up_at_open: false,
        fill_streams,
        ..ReplicaOptions::new(cache)
    };
    Ok(Arc::new(
        Replica::open(bucket, options).map_err(replica_error)?,
    ))
}

/// Refuses a `--genesis` of another chain than the datadir's, as
/// import-chain does: its block 0 must be the datadir's, compared by hash
/// while the datadir still holds that block's (its last 256 blocks); past
/// that, its chain id must be the one the datadir's recorded configuration
/// names. The file's fork schedule may differ from the recorded one: that
/// is what `--genesis` is for.
fn check_same_chain(
    db: &ReadOnlyStateDb,
    datadir: &Path,
    genesis: &strata_executor::GenesisBlock,
    path: &Path,
) -> Result<(), CliError> {
    let number = genesis.header.number;
    let stored = db
        .reader(Regime::Exec)
        .and_then(|reader| reader.block_hash(number))
        .map_err(CliError::storage(datadir))?;
    if let Some(stored) = stored
        && stored != genesis.hash
    {
        return Err(ServeError::OtherGenesis {
            genesis: path.to_owned(),
            datadir: datadir.to_owned(),
            number,
            stored,
            given: genesis.hash,
        }
        .into_cli());
    }
    if stored.is_some() {
        return Ok(());
    }
    let recorded = db.chain_config().map_err(CliError::storage(datadir))?;
    let recorded_id = recorded
        .as_deref()
        .and_then(|bytes| strata_executor::ChainSpec::from_recorded(bytes).ok())
        .map(|spec| spec.chain_id);
    match recorded_id {
        Some(id) if id != genesis.config.chain_id => Err(ServeError::OtherChainId {
            genesis: path.to_owned(),
            datadir: datadir.to_owned(),
            recorded: id,
            given: genesis.config.chain_id,
        }
        .into_cli()),
        _ => {
            eprintln!(
                "serve: {} no longer holds block {number}'s hash; --genesis {} checked by chain id only",
                datadir.display(),
                path.display()
            );
            Ok(())
        }
    }
}

/// SIGINT (ctrl-c) or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
