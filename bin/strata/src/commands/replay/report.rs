//! Printing a replay's results: the read-latency table per domain × tier ×
//! regime, throughput, the observer table and the sweep comparison table.

use std::collections::BTreeSet;
use strata_observer::format_ns as ns;
use strata_storage::Regime;
use strata_storage::telemetry::{MetricsSnapshot, Tier};

use super::run::RunResult;
use crate::output::Lines;

/// Blocks per second of a run.
pub(super) fn blocks_per_s(run: &RunResult) -> f64 {
    run.blocks as f64 / run.wall.as_secs_f64().max(1e-9)
}

/// The read table, throughput and observer figures of one run.
pub(super) fn print_run(out: &mut Lines, run: &RunResult) {
    out.line(format_args!(
        "== replay: warmers {}, cache {}, prefetch {}{}: {} blocks ==",
        run.warmers,
        run.cache,
        on_off(run.prefetch),
        if run.cold { ", cold start" } else { "" },
        run.blocks
    ));
    print_reads(out, &run.reads);
    let secs = run.wall.as_secs_f64().max(1e-9);
    let mut line = format!(
        "throughput: {:.1} blocks/s, {:.0} keys/s",
        blocks_per_s(run),
        run.keys as f64 / secs
    );
    if let Some(gas) = run.gas {
        line += &format!(", {:.1} Mgas/s", gas as f64 / 1e6 / secs);
    }
    out.line(format_args!("{line}"));
    out.line(format_args!(
        "time: wall {:.3} s, of which trace parsing {:.3} s and commit {:.3} s (commitment {:.3} s); genesis {:.3} s; {} roots checked",
        secs,
        run.parse.as_secs_f64(),
        run.commit.as_secs_f64(),
        run.commitment.as_secs_f64(),
        run.genesis.as_secs_f64(),
        run.roots_checked
    ));
    print_commit_breakdown(out, run);
    for (name, c) in [
        ("branch cache", &run.cache_stats),
        ("value cache", &run.value_cache_stats),
    ] {
        out.line(format_args!(
            "{name}: {:.1}% hit rate ({} hits, {} misses), {} entries, {} evictions",
            c.hit_rate() * 100.0,
            c.hits,
            c.misses,
            c.entries,
            c.evictions
        ));
    }
    print_alongside(out, run);
    if let Some(observer) = &run.observer {
        for figures in &observer.observers {
            for line in figures.table(observer.rate) {
                out.line(line);
            }
        }
    }
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

/// With prefetch: how the blocks' reads and roots overlapped.
fn print_alongside(out: &mut Lines, run: &RunResult) {
    let alongside: Vec<_> = run
        .per_block
        .iter()
        .filter_map(|b| b.root_wait_ms.map(|wait| (b, wait)))
        .collect();
    if alongside.is_empty() {
        return;
    }
    let sum = |f: &dyn Fn(&super::run::BlockTiming, f64) -> f64| {
        alongside.iter().map(|(b, w)| f(b, *w)).sum::<f64>()
    };
    let root = sum(&|b, _| b.root_ms);
    let waited = sum(&|_, w| w);
    out.line(format_args!(
        "prefetch: {} loads; roots computed alongside the reads: root {:.3} s, exec reads {:.3} s, commit waited {:.3} s for them ({:.0}% of the root overlapped reads and staging)",
        run.per_block.iter().map(|b| b.prefetched).sum::<u64>(),
        root / 1e3,
        sum(&|b, _| b.exec_read_ms) / 1e3,
        waited / 1e3,
        (1.0 - waited / root.max(1e-9)).clamp(0.0, 1.0) * 100.0
    ));
}

/// Where the commit time went: the root, the journal write, flush waits,
/// and what the background flush did beside the block loop.
fn print_commit_breakdown(out: &mut Lines, run: &RunResult) {
    let secs = |d: std::time::Duration| d.as_secs_f64();
    let ratio = secs(run.commit) / secs(run.commitment).max(1e-9);
    // A root computed alongside the reads counts in the commit only for
    // the time the commit waited for it.
    let root_in_commit = run
        .per_block
        .iter()
        .map(|b| b.root_wait_ms.unwrap_or(b.root_ms))
        .sum::<f64>()
        / 1e3;
    let root = if root_in_commit < secs(run.commitment) - 1e-9 {
        format!("root wait {root_in_commit:.3} s")
    } else {
        format!("root {root_in_commit:.3} s")
    };
    out.line(format_args!(
        "commit: {:.3} s = {root} + journal write {:.3} s ({:.1} MB) + flush waits {:.3} s ({} waits) + other {:.3} s; commit/root {:.2}x",
        secs(run.commit),
        secs(run.journal),
        run.journal_bytes as f64 / 1e6,
        secs(run.flush_wait),
        run.flush.waits,
        (secs(run.commit) - root_in_commit - secs(run.journal) - secs(run.flush_wait)).max(0.0),
        ratio
    ));
    out.line(format_args!(
        "flush (background): {} batches, {} blocks, {} keys, {:.3} s; close (final flush) {:.3} s",
        run.flush.flushes,
        run.flush.blocks,
        run.flush.keys,
        secs(run.flush.time),
        secs(run.close)
    ));
}

/// The table of read latencies per domain × tier × regime.
pub(crate) fn print_reads(out: &mut Lines, reads: &MetricsSnapshot) {
    out.line(format_args!(
        "{:<11} {:<12} {:<11} {:>10} {:>9} {:>9} {:>9} {:>9}",
        "domain", "tier", "regime", "count", "mean", "p50", "p99", "max"
    ));
    for cell in &reads.cells {
        out.line(format_args!(
            "{:<11} {:<12} {:<11} {:>10} {:>9} {:>9} {:>9} {:>9}",
            cell.domain.name(),
            cell.tier.name(),
            cell.regime.name(),
            cell.count,
            ns(cell.mean_ns),
            ns(cell.p50_ns),
            ns(cell.p99_ns),
            ns(cell.max_ns)
        ));
    }
}

/// Commitment-regime (p50, p99) of one tier over all domains: the cell with
/// the most reads stands for the tier (percentiles cannot be merged).
pub(super) fn commitment_tier(reads: &MetricsSnapshot, tier: Tier) -> Option<(u64, u64)> {
    reads
        .cells
        .iter()
        .filter(|c| c.regime == Regime::Commitment && c.tier == tier)
        .max_by_key(|c| c.count)
        .map(|c| (c.p50_ns, c.p99_ns))
}

/// Tiers that answered commitment-regime reads in any run.
pub(super) fn commitment_tiers(runs: &[RunResult]) -> Vec<Tier> {
    let tiers: BTreeSet<Tier> = runs
        .iter()
        .flat_map(|r| r.reads.cells.iter())
        .filter(|c| c.regime == Regime::Commitment)
        .map(|c| c.tier)
        .collect();
    tiers.into_iter().collect()
}

/// One comparison table of a sweep.
pub(super) fn print_sweep(out: &mut Lines, runs: &[RunResult]) {
    let tiers = commitment_tiers(runs);
    out.line(format_args!("== sweep: {} runs ==", runs.len()));
    let mut header = format!(
        "{:>7} {:<11} {:>8} {:>9} {:>9} {:>11}",
        "warmers", "cache", "prefetch", "blocks/s", "commit s", "commit/blk"
    );
    for tier in &tiers {
        header += &format!(" {:>19}", format!("{} p50/p99", tier.name()));
    }
    header += "  final root";
    out.line(format_args!("{header}"));
    for run in runs {
        let per_block = run.commit.as_secs_f64() * 1e3 / (run.blocks.max(1) as f64);
        let mut line = format!(
            "{:>7} {:<11} {:>8} {:>9.1} {:>9.3} {:>9.2}ms",
            run.warmers,
            run.cache.name(),
            on_off(run.prefetch),
            blocks_per_s(run),
            run.commit.as_secs_f64(),
            per_block
        );
        for tier in &tiers {
            let cell = commitment_tier(&run.reads, *tier)
                .map(|(p50, p99)| format!("{}/{}", ns(p50), ns(p99)))
                .unwrap_or_else(|| "-".into());
            line += &format!(" {cell:>19}");
        }
        line += &format!("  {}", run.final_root);
        out.line(format_args!("{line}"));
    }
    out.line(format_args!(
        "(commitment-regime reads; per tier the domain with the most reads)"
    ));
}
