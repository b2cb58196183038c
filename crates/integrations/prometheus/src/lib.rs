//! strata-prometheus: the store's figures as Prometheus metrics
//! (strata-storage's feature `prometheus`), read at scrape time: a
//! [`StoreCollector`] registered in a `prometheus_client` [`Registry`] reads
//! the lock-free read histograms, the block-level durations, the branch
//! cache, the file set and the poison state when the registry is encoded,
//! through strata-engine's public [`StoreFigures`]. Nothing is added to the
//! read or commit path.
//!
//! ```
//! use prometheus_client::registry::Registry;
//! use strata_engine::{Options, StateDb};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let db = StateDb::open(dir.path(), Options::default()).unwrap();
//! let mut registry = Registry::default();
//! strata_prometheus::register(&mut registry, &db);
//! let mut text = String::new();
//! prometheus_client::encoding::prometheus_text::encode(&mut text, &registry).unwrap();
//! assert!(text.contains("strata_head_block"));
//! ```
#![deny(missing_docs)]

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use strata_engine::{StateDb, StoreFigures, WeakStateDb};
use strata_telemetry::{BUCKETS, DurationCounts, Histogram, bucket_of};
use strata_types::Domain;

/// The prefix every family gets (`strata_…`).
pub const PREFIX: &str = "strata";

/// Registers a [`StoreCollector`] for `db` under the `strata_` prefix.
/// The registry does not keep the store open: once `db` is dropped the
/// collector reports nothing.
pub fn register(registry: &mut Registry, db: &StateDb) {
    registry
        .sub_registry_with_prefix(PREFIX)
        .register_collector(Box::new(StoreCollector::new(db)));
}

/// Reads a store's figures whenever its registry is encoded. Holds the
/// store weakly.
#[derive(Clone)]
pub struct StoreCollector {
    db: WeakStateDb,
}

impl StoreCollector {
    /// A collector for `db` (families unprefixed; [`register`] adds `strata_`).
    pub fn new(db: &StateDb) -> Self {
        Self { db: db.downgrade() }
    }
}

impl fmt::Debug for StoreCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreCollector")
            .field("open", &self.db.is_open())
            .finish()
    }
}

impl Collector for StoreCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        self.db
            .figures(|figures| encode(&mut encoder, figures))
            .unwrap_or(Ok(()))
    }
}

/// Every family of one store's figures.
fn encode(e: &mut DescriptorEncoder, figures: &StoreFigures<'_>) -> fmt::Result {
    encode_reads(e, figures)?;
    encode_blocks(e, figures)?;
    encode_cache(e, figures)?;
    encode_files(e, figures)?;
    gauge(
        e,
        "poisoned",
        "1 when a failed write has poisoned the store (reopen to recover), else 0.",
        u64::from(figures.poisoned),
    )
}

/// Lower bounds (ns) of the read-latency buckets that are exported: two per
/// power of two from 16 ns to 2^30 ns, each the first value of one of the
/// recorder's own buckets, so exported counts are exact.
fn read_bounds_ns() -> impl Iterator<Item = u64> {
    (4..30)
        .flat_map(|k| [1u64 << k, 3u64 << (k - 1)])
        .chain([1u64 << 30])
}

/// A recorder histogram as Prometheus buckets: `(le seconds, count)` per
/// bucket (not cumulative), `le` the largest whole nanosecond inside it.
fn read_buckets(histogram: &Histogram) -> Vec<(f64, u64)> {
    let mut buckets = Vec::with_capacity(54);
    let mut from = 0;
    for lower in read_bounds_ns() {
        let to = bucket_of(lower);
        let count = histogram.counts[from..to].iter().sum();
        buckets.push(((lower - 1) as f64 / 1e9, count));
        from = to;
    }
    buckets.push((f64::INFINITY, histogram.counts[from..BUCKETS].iter().sum()));
    buckets
}

fn encode_reads(e: &mut DescriptorEncoder, figures: &StoreFigures<'_>) -> fmt::Result {
    let mut metric = e.encode_descriptor(
        "read_duration_seconds",
        "Latency of domain reads by domain, the tier that answered (or the last searched) and the regime that read.",
        None,
        MetricType::Histogram,
    )?;
    let mut result = Ok(());
    figures
        .reads
        .visit_cells(|domain, tier, regime, histogram| {
            let count = histogram.count();
            if count == 0 || result.is_err() {
                return;
            }
            let labels = [
                ("domain", domain.name()),
                ("tier", tier.name()),
                ("regime", regime.name()),
            ];
            let buckets = read_buckets(histogram);
            result = metric.encode_family(&labels).and_then(|mut m| {
                m.encode_histogram::<NoLabelSet>(histogram.sum as f64 / 1e9, count, &buckets, None)
            });
        });
    result
}

fn encode_blocks(e: &mut DescriptorEncoder, figures: &StoreFigures<'_>) -> fmt::Result {
    let store = figures.store;
    for (name, help, counts) in [
        (
            "block_commit_duration_seconds",
            "Whole block commits: root, journal write, publication.",
            store.commit().counts(),
        ),
        (
            "block_root_duration_seconds",
            "State-root calculation per block.",
            store.root().counts(),
        ),
        (
            "block_journal_write_duration_seconds",
            "Making a block durable: unwind data, journal record, append, fsync.",
            store.journal_write().counts(),
        ),
        (
            "flush_duration_seconds",
            "Flushes of a batch of blocks from the memory tier into redb.",
            store.flush().counts(),
        ),
    ] {
        let mut metric = e.encode_descriptor(name, help, None, MetricType::Histogram)?;
        histogram(&mut metric, &counts)?;
    }
    let mut metric = e.encode_descriptor(
        "maintenance_duration_seconds",
        "Maintenance steps: collate (db steps into a file, pruning what it took) and merge (two files into one).",
        None,
        MetricType::Histogram,
    )?;
    for (step, counts) in [
        ("collate", store.collate().counts()),
        ("merge", store.merge().counts()),
    ] {
        histogram(&mut metric.encode_family(&[("step", step)])?, &counts)?;
    }
    let flush = figures.flush;
    for (name, help, value) in [
        (
            "blocks_committed",
            "Blocks committed since the store was opened.",
            store.blocks(),
        ),
        (
            "keys_written",
            "Keys the committed blocks wrote (commitment records included).",
            store.keys_written(),
        ),
        (
            "journal_written_bytes",
            "Bytes of journal records appended.",
            store.journal_bytes(),
        ),
        (
            "flushed_blocks",
            "Blocks moved from the memory tier into redb.",
            flush.blocks,
        ),
        (
            "flush_waits",
            "Commits that waited for a flush (memory tier over budget).",
            flush.waits,
        ),
        (
            "pruned_entries",
            "Db entries pruned because a file now holds them.",
            store.pruned(),
        ),
        (
            "warmer_loads",
            "Branch prefixes the warmers walked for committed blocks.",
            store.warmer_loads(),
        ),
        (
            "warmer_errors",
            "Warmer reads that failed (each also logged as a warning).",
            figures.warmer_errors,
        ),
    ] {
        counter(e, name, help, value)?;
    }
    counter(
        e,
        "flush_wait_seconds",
        "Time commits spent waiting for a flush.",
        flush.wait_time.as_secs_f64(),
    )?;
    let head = figures
        .head
        .map_or(-1, |b| i64::try_from(b).unwrap_or(i64::MAX));
    gauge(
        e,
        "head_block",
        "The last committed block (-1 before genesis).",
        head,
    )?;
    gauge(
        e,
        "memory_tier_bytes",
        "Bytes of keys and values in the memory tier (committed blocks not yet flushed).",
        figures.memory_tier_bytes,
    )?;
    gauge(
        e,
        "warmers",
        "Warmer threads of the store.",
        figures.warmers as u64,
    )
}

fn encode_cache(e: &mut DescriptorEncoder, figures: &StoreFigures<'_>) -> fmt::Result {
    encode_cache_stats(e, "branch_cache", "branches", figures.branch_cache)?;
    encode_cache_stats(e, "value_cache", "state values", figures.value_cache)
}

/// The counters and occupancy of one cache as `{cache}_…` families.
fn encode_cache_stats(
    e: &mut DescriptorEncoder,
    cache: &str,
    what: &str,
    stats: strata_cache::CacheStats,
) -> fmt::Result {
    for (name, help, value) in [
        ("hits", "Lookups answered without a load", stats.hits),
        (
            "misses",
            "Lookups that found nothing or loaded",
            stats.misses,
        ),
        (
            "inserts",
            "Entries stored (write-through and loads)",
            stats.inserts,
        ),
        (
            "evictions",
            "Entries dropped to stay within capacity",
            stats.evictions,
        ),
    ] {
        counter(
            e,
            &format!("{cache}_{name}"),
            &format!("{help} ({what})."),
            value,
        )?;
    }
    for (name, help, value) in [
        ("bytes", "Bytes held", stats.weight_bytes),
        ("entries", "Entries held", stats.entries),
        (
            "capacity_bytes",
            "Configured capacity",
            stats.capacity_bytes,
        ),
    ] {
        gauge(
            e,
            &format!("{cache}_{name}"),
            &format!("{help} ({what})."),
            value,
        )?;
    }
    Ok(())
}

fn encode_files(e: &mut DescriptorEncoder, figures: &StoreFigures<'_>) -> fmt::Result {
    let per_domain = |domain: Domain| {
        let files = figures.files[domain.index()];
        (files.count, files.bytes)
    };
    let mut metric = e.encode_descriptor(
        "files",
        "Immutable files per domain.",
        None,
        MetricType::Gauge,
    )?;
    for domain in Domain::ALL {
        let (count, _) = per_domain(domain);
        metric
            .encode_family(&[("domain", domain.name())])?
            .encode_gauge(&count)?;
    }
    let mut metric = e.encode_descriptor(
        "file_bytes",
        "Bytes of immutable files per domain.",
        None,
        MetricType::Gauge,
    )?;
    for domain in Domain::ALL {
        let (_, bytes) = per_domain(domain);
        metric
            .encode_family(&[("domain", domain.name())])?
            .encode_gauge(&bytes)?;
    }
    Ok(())
}

fn histogram(metric: &mut MetricEncoder<'_>, counts: &DurationCounts) -> fmt::Result {
    metric.encode_histogram::<NoLabelSet>(counts.sum_seconds, counts.count, &counts.buckets, None)
}

fn counter<V>(e: &mut DescriptorEncoder, name: &str, help: &str, value: V) -> fmt::Result
where
    V: prometheus_client::encoding::EncodeCounterValue,
{
    e.encode_descriptor(name, help, None, MetricType::Counter)?
        .encode_counter::<NoLabelSet, V, f64>(&value, None)
}

fn gauge<V>(e: &mut DescriptorEncoder, name: &str, help: &str, value: V) -> fmt::Result
where
    V: prometheus_client::encoding::EncodeGaugeValue,
{
    e.encode_descriptor(name, help, None, MetricType::Gauge)?
        .encode_gauge(&value)
}

#[cfg(test)]
mod tests {
    use strata_telemetry::{ReadMetrics, Tier};
    use strata_types::Regime;

    use super::*;

    #[test]
    fn read_buckets_count_exactly_the_samples_at_or_below_each_bound() {
        let samples = [
            1u64,
            15,
            16,
            23,
            24,
            100,
            127,
            128,
            1_000,
            50_000,
            2_000_000_000,
        ];
        let metrics = ReadMetrics::new(true);
        for &nanos in &samples {
            metrics.record(Domain::Account, Tier::Db, Regime::Exec, nanos);
        }
        let mut seen = 0;
        metrics.visit_cells(|domain, tier, regime, histogram| {
            if histogram.count() == 0 {
                return;
            }
            seen += 1;
            assert_eq!(
                (domain, tier, regime),
                (Domain::Account, Tier::Db, Regime::Exec)
            );
            let buckets = read_buckets(histogram);
            let mut cumulative = 0;
            for (le, count) in buckets {
                cumulative += count;
                let expected = samples
                    .iter()
                    .filter(|&&s| (s as f64) <= (le * 1e9).round())
                    .count() as u64;
                assert_eq!(cumulative, expected, "le {le}");
            }
            assert_eq!(cumulative, samples.len() as u64);
        });
        assert_eq!(seen, 1);
    }

    #[test]
    fn bounds_rise_and_are_bucket_starts() {
        let bounds: Vec<u64> = read_bounds_ns().collect();
        assert!(bounds.windows(2).all(|w| w[0] < w[1]), "{bounds:?}");
        for &bound in &bounds {
            assert_ne!(bucket_of(bound), bucket_of(bound - 1), "{bound}");
        }
    }
}
