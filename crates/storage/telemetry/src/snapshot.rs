//! Summaries of the histograms and their renderings: JSON, Prometheus text
//! and a `tracing` "domain reads" event per regime.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::Tier;
use super::buckets::Histogram;
use strata_types::{Domain, Regime};

/// Latency summary of one (domain, tier, regime) cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellSummary {
    /// The domain read.
    pub domain: Domain,
    /// The tier that answered.
    pub tier: Tier,
    /// Who read.
    pub regime: Regime,
    /// Reads recorded.
    pub count: u64,
    /// Total latency, nanoseconds.
    pub sum_ns: u64,
    /// Mean latency, nanoseconds (rounded down).
    pub mean_ns: u64,
    /// Median, nanoseconds (within 1.6% of the exact value).
    pub p50_ns: u64,
    /// 99th percentile, nanoseconds (within 1.6% of the exact value).
    pub p99_ns: u64,
    /// Slowest read, nanoseconds (exact).
    pub max_ns: u64,
}

impl CellSummary {
    /// `{"domain", "tier", "regime", "count", "sum_ns", "mean_ns", "p50_ns",
    /// "p99_ns", "max_ns"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "domain": self.domain.name(),
            "tier": self.tier.name(),
            "regime": self.regime.name(),
            "count": self.count,
            "sum_ns": self.sum_ns,
            "mean_ns": self.mean_ns,
            "p50_ns": self.p50_ns,
            "p99_ns": self.p99_ns,
            "max_ns": self.max_ns,
        })
    }
}

impl CellSummary {
    /// `None` for a cell without samples.
    pub(crate) fn from_histogram(
        domain: Domain,
        tier: Tier,
        regime: Regime,
        histogram: &Histogram,
    ) -> Option<Self> {
        let count = histogram.count();
        (count > 0).then(|| CellSummary {
            domain,
            tier,
            regime,
            count,
            sum_ns: histogram.sum,
            mean_ns: histogram.sum / count,
            p50_ns: histogram.quantile(0.5),
            p99_ns: histogram.quantile(0.99),
            max_ns: histogram.max,
        })
    }

    fn labels(&self) -> String {
        format!(
            "domain=\"{}\",tier=\"{}\",regime=\"{}\"",
            self.domain.name(),
            self.tier.name(),
            self.regime.name()
        )
    }
}

/// Every non-empty cell at one moment, in (domain, tier, regime) order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetricsSnapshot {
    /// Cells with at least one sample.
    pub cells: Vec<CellSummary>,
}

/// The Prometheus metric family name.
const FAMILY: &str = "strata_domain_read_latency_ns";

impl MetricsSnapshot {
    /// The summary of one cell, if it has samples.
    pub fn cell(&self, domain: Domain, tier: Tier, regime: Regime) -> Option<&CellSummary> {
        self.cells
            .iter()
            .find(|c| c.domain == domain && c.tier == tier && c.regime == regime)
    }

    /// Reads recorded across all cells.
    pub fn total_reads(&self) -> u64 {
        self.cells.iter().map(|c| c.count).sum()
    }

    /// `{"cells": [{"domain", "tier", "regime", "count", "sum_ns",
    /// "mean_ns", "p50_ns", "p99_ns", "max_ns"}, …]}`.
    pub fn to_json(&self) -> Value {
        let cells: Vec<Value> = self.cells.iter().map(CellSummary::to_json).collect();
        json!({ "cells": cells })
    }

    /// Prometheus text exposition: one `summary` family
    /// `strata_domain_read_latency_ns{domain,tier,regime,quantile}` with
    /// quantiles 0.5, 0.99 and 1 (the max), plus `_sum` and `_count`.
    pub fn to_prometheus(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP {FAMILY} Domain read latency in nanoseconds by domain, tier and regime."
        );
        let _ = writeln!(out, "# TYPE {FAMILY} summary");
        for cell in &self.cells {
            let labels = cell.labels();
            for (quantile, value) in [
                ("0.5", cell.p50_ns),
                ("0.99", cell.p99_ns),
                ("1", cell.max_ns),
            ] {
                let _ = writeln!(out, "{FAMILY}{{{labels},quantile=\"{quantile}\"}} {value}");
            }
            let _ = writeln!(out, "{FAMILY}_sum{{{labels}}} {}", cell.sum_ns);
            let _ = writeln!(out, "{FAMILY}_count{{{labels}}} {}", cell.count);
        }
        out
    }

    /// One line per regime that has reads: the regime, its read count and
    /// each cell as `domain/tier n=… mean=… p50=… p99=… max=…`.
    pub fn regime_lines(&self) -> Vec<(Regime, u64, String)> {
        Regime::ALL
            .into_iter()
            .filter_map(|regime| {
                let cells: Vec<_> = self.cells.iter().filter(|c| c.regime == regime).collect();
                if cells.is_empty() {
                    return None;
                }
                let reads = cells.iter().map(|c| c.count).sum();
                let line = cells
                    .iter()
                    .map(|c| {
                        format!(
                            "{}/{} n={} mean={} p50={} p99={} max={}",
                            c.domain.name(),
                            c.tier.name(),
                            c.count,
                            format_ns(c.mean_ns),
                            format_ns(c.p50_ns),
                            format_ns(c.p99_ns),
                            format_ns(c.max_ns)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ");
                Some((regime, reads, line))
            })
            .collect()
    }

    /// Emits one `tracing::info!` "domain reads" event per regime with reads
    /// (target `strata::reads`; fields `regime`, `reads`, `cells`).
    pub fn emit_tracing(&self) {
        for (regime, reads, cells) in self.regime_lines() {
            tracing::info!(target: "strata::reads", regime = regime.name(), reads, cells = %cells, "domain reads");
        }
    }
}

/// Nanoseconds as a short human duration: 850ns, 1.2µs, 3.40ms, 1.50s.
/// A latency in ns as a short human figure (`812ns`, `3.4µs`, `1.25ms`, `2.00s`).
pub fn format_ns(nanos: u64) -> String {
    match nanos {
        0..1_000 => format!("{nanos}ns"),
        1_000..1_000_000 => format!("{:.1}µs", nanos as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.2}ms", nanos as f64 / 1e6),
        _ => format!("{:.2}s", nanos as f64 / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::super::ReadMetrics;
    use super::*;

    fn sample() -> MetricsSnapshot {
        let metrics = ReadMetrics::new(true);
        for nanos in [100, 200, 300] {
            metrics.record(Domain::Account, Tier::Db, Regime::Exec, nanos);
        }
        metrics.record(
            Domain::Commitment,
            Tier::File(2),
            Regime::Commitment,
            1_500_000,
        );
        metrics.snapshot()
    }

    #[test]
    fn cells_hold_count_mean_quantiles_and_max() {
        let snapshot = sample();
        assert_eq!(snapshot.cells.len(), 2);
        assert_eq!(snapshot.total_reads(), 4);
        let account = snapshot
            .cell(Domain::Account, Tier::Db, Regime::Exec)
            .expect("account cell");
        assert_eq!(
            (
                account.count,
                account.sum_ns,
                account.mean_ns,
                account.max_ns
            ),
            (3, 600, 200, 300)
        );
        assert!(account.p50_ns.abs_diff(200) <= 200 / 32, "{account:?}");
        assert_eq!(snapshot.cell(Domain::Code, Tier::Db, Regime::Exec), None);
    }

    #[test]
    fn json_lists_the_cells() {
        let json = sample().to_json();
        let cells = json["cells"].as_array().expect("cells array");
        assert_eq!(cells.len(), 2);
        assert_eq!(cells[0]["domain"], "account");
        assert_eq!(cells[0]["tier"], "db");
        assert_eq!(cells[0]["regime"], "exec");
        assert_eq!(cells[0]["count"], 3);
        assert_eq!(cells[1]["domain"], "commitment");
        assert_eq!(cells[1]["tier"], "file2");
        assert_eq!(cells[1]["max_ns"], 1_500_000);
    }

    #[test]
    fn prometheus_text_has_quantiles_sum_and_count() {
        let text = sample().to_prometheus();
        assert!(
            text.contains("# TYPE strata_domain_read_latency_ns summary"),
            "{text}"
        );
        let labels = "domain=\"account\",tier=\"db\",regime=\"exec\"";
        assert!(
            text.contains(&format!(
                "strata_domain_read_latency_ns_count{{{labels}}} 3"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "strata_domain_read_latency_ns_sum{{{labels}}} 600"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "strata_domain_read_latency_ns{{{labels},quantile=\"1\"}} 300"
            )),
            "{text}"
        );
        let commitment =
            "domain=\"commitment\",tier=\"file2\",regime=\"commitment\",quantile=\"0.99\"";
        assert!(text.contains(commitment), "{text}");
        assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 2 * 5);
    }

    #[test]
    fn one_tracing_line_per_regime() {
        let lines = sample().regime_lines();
        assert_eq!(lines.len(), 2);
        assert_eq!((lines[0].0, lines[0].1), (Regime::Exec, 3));
        assert!(
            lines[0].2.starts_with("account/db n=3 mean=200ns"),
            "{}",
            lines[0].2
        );
        assert_eq!((lines[1].0, lines[1].1), (Regime::Commitment, 1));
        assert!(
            lines[1].2.contains("commitment/file2 n=1 mean=1.50ms"),
            "{}",
            lines[1].2
        );
        sample().emit_tracing(); // no subscriber: must simply not fail
        assert_eq!(format_ns(1_234), "1.2µs");
        assert_eq!(format_ns(2_500_000_000), "2.50s");
    }

    /// Collects the events emitted while it is the default subscriber.
    /// One event's fields as (name, value) pairs.
    type EventFields = Vec<(String, String)>;

    #[derive(Clone, Default)]
    struct Capture(std::sync::Arc<std::sync::Mutex<Vec<EventFields>>>);

    struct Fields<'a>(&'a mut Vec<(String, String)>);

    impl tracing::field::Visit for Fields<'_> {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            self.0.push((field.name().to_owned(), format!("{value:?}")));
        }
        fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
            self.0.push((field.name().to_owned(), value.to_owned()));
        }
    }

    impl tracing::Subscriber for Capture {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            let mut fields = vec![("target".to_owned(), event.metadata().target().to_owned())];
            event.record(&mut Fields(&mut fields));
            if let Ok(mut events) = self.0.lock() {
                events.push(fields);
            }
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    #[test]
    fn emit_tracing_logs_one_domain_reads_event_per_regime() {
        let capture = Capture::default();
        tracing::subscriber::with_default(capture.clone(), || {
            // Another test emits the same events with no subscriber, in
            // parallel: a callsite it registered first may have cached
            // "never"; recompute with this subscriber in place.
            tracing::callsite::rebuild_interest_cache();
            sample().emit_tracing()
        });
        let events = capture.0.lock().expect("events").clone();
        assert_eq!(events.len(), 2, "{events:?}");
        let field = |event: &EventFields, name: &str| {
            event
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        for (event, regime, reads) in [(&events[0], "exec", "3"), (&events[1], "commitment", "1")] {
            assert_eq!(field(event, "message").as_deref(), Some("domain reads"));
            assert_eq!(field(event, "target").as_deref(), Some("strata::reads"));
            assert_eq!(field(event, "regime").as_deref(), Some(regime));
            assert_eq!(field(event, "reads").as_deref(), Some(reads));
        }
        assert!(field(&events[0], "cells").is_some_and(|c| c.contains("account/db n=3")));
    }
}
