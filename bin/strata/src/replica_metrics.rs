//! A replica's standing as Prometheus gauges on `serve --metrics`: the
//! block it serves, the bucket's head, the blocks between, the time from
//! the last applied block's upload to its application, whether the last
//! look at the bucket failed, and the range cache of the base's files
//! (chunks fetched, read from disk, evicted; bytes held) with the bytes of
//! them downloaded whole. Refreshed four
//! times a second by a thread that ends with the replica.

use std::sync::{Arc, Weak};
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use strata_storage::replica::Replica;

/// Registers the replica's gauges in `registry` and starts their refresh.
pub(crate) fn register(registry: &mut Registry, replica: Arc<Replica>) {
    let head = Gauge::<i64>::default();
    let bucket_head = Gauge::<i64>::default();
    let behind = Gauge::<i64>::default();
    let lag_ms = Gauge::<i64>::default();
    let failing = Gauge::<i64>::default();
    registry.register(
        "strata_replica_head",
        "The block the replica serves",
        head.clone(),
    );
    registry.register(
        "strata_replica_bucket_head",
        "The newest block the bucket's manifest names",
        bucket_head.clone(),
    );
    registry.register(
        "strata_replica_blocks_behind",
        "Blocks the bucket holds beyond the replica's head",
        behind.clone(),
    );
    registry.register(
        "strata_replica_lag_ms",
        "Milliseconds from the last applied block's upload to its application",
        lag_ms.clone(),
    );
    registry.register(
        "strata_replica_failing",
        "1 while the last look at the bucket failed (the error is logged)",
        failing.clone(),
    );
    let ranges: [(&str, &str, Gauge<i64>); 5] = [
        (
            "strata_replica_range_fetched_chunks",
            "Chunks of the base's files fetched from the bucket",
            Gauge::default(),
        ),
        (
            "strata_replica_range_cached_reads",
            "Chunks of the base's files read from the local range cache",
            Gauge::default(),
        ),
        (
            "strata_replica_range_evicted_chunks",
            "Chunks removed to keep the range cache within its budget",
            Gauge::default(),
        ),
        (
            "strata_replica_range_cache_bytes",
            "Bytes the range cache holds on local disk",
            Gauge::default(),
        ),
        (
            "strata_replica_base_whole_bytes",
            "Bytes of the base's files the replica holds whole by now",
            Gauge::default(),
        ),
    ];
    if replica.range_cache_stats().is_some() {
        for (name, help, gauge) in &ranges {
            registry.register(*name, *help, gauge.clone());
        }
    }
    let weak: Weak<Replica> = Arc::downgrade(&replica);
    let spawned = std::thread::Builder::new()
        .name("strata-replica-metrics".into())
        .spawn(move || {
            while let Some(replica) = weak.upgrade() {
                let status = replica.status();
                head.set(status.head as i64);
                bucket_head.set(status.bucket_head as i64);
                behind.set(status.bucket_head.saturating_sub(status.head) as i64);
                if let Some(last) = status.last_lag_ms {
                    lag_ms.set(last as i64);
                }
                failing.set(i64::from(status.last_error.is_some()));
                if let Some(stats) = replica.range_cache_stats() {
                    let whole = replica.base_files().unwrap_or_default().whole_bytes;
                    let values = [stats.misses, stats.hits, stats.evicted, stats.bytes, whole];
                    for ((_, _, gauge), value) in ranges.iter().zip(values) {
                        gauge.set(value as i64);
                    }
                }
                drop(replica);
                std::thread::sleep(Duration::from_millis(250));
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "the replica's gauges are not refreshed");
    }
}
