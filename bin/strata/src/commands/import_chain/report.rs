//! Printing an import: per run whether it started cold, the read table,
//! Mgas/s of the whole block and of the execution alone, the phases and
//! per-block percentiles, what was prefetched; the
//! in-memory baseline beside it with the ratio; a table when warmers were
//! swept; and the same as JSON.

use crate::host::format_bytes;
use std::path::Path;
use std::time::Duration;

use alloy_primitives::B256;
use serde::Serialize;

use super::ahead::SendersTiming;
use super::baseline::BaselineRun;
use super::run::{BlockRow, ImportRun};
use crate::CliError;
use crate::commands::replay::{ReadCell, print_reads};
use crate::output::Lines;
use crate::output_file::OutputFile;
use crate::thread_cpu::CpuSpent;

fn mgas_per_s(gas: u64, time: Duration) -> f64 {
    gas as f64 / 1e6 / time.as_secs_f64().max(1e-9)
}

/// The value at fraction `q` of the sorted values (nearest rank).
fn percentile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((values.len() as f64 * q).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

fn p50_p99(rows: &[BlockRow], field: impl Fn(&BlockRow) -> f64) -> (f64, f64) {
    let mut values: Vec<f64> = rows.iter().map(field).collect();
    (percentile(&mut values, 0.5), percentile(&mut values, 0.99))
}

/// One strata run.
pub(super) fn print_run(out: &mut Lines, run: &ImportRun) {
    out.line(format_args!(
        "== import-chain: warmers {}, state path {}, root {}, senders {}, cold {}, access lists {}, transaction workers {}: {} blocks after block {}, {} transactions, {:.1} Mgas ==",
        run.warmers,
        super::path_name(run.state),
        super::root_name(run.root),
        run.senders.name(),
        run.cold,
        run.lists_name().unwrap_or("none"),
        run.transaction_workers,
        run.blocks,
        run.resumed_after,
        run.transactions,
        run.gas as f64 / 1e6
    ));
    print_reads(out, &run.reads);
    let t = &run.totals;
    let s = |d: Duration| d.as_secs_f64();
    out.line(format_args!(
        "strata: {:.1} Mgas/s whole blocks ({:.3} s wall), {:.1} Mgas/s execution alone (root excluded)",
        mgas_per_s(run.gas, run.wall),
        s(run.wall),
        mgas_per_s(run.gas, t.execution)
    ));
    out.line(format_args!(
        "phases: checks {:.3} s, execution {:.3} s, apply {:.3} s, root {:.3} s, commit {:.3} s",
        s(t.checks),
        s(t.execution),
        s(t.apply),
        s(t.root),
        s(t.commit)
    ));
    if run.senders == SendersTiming::Ahead {
        out.line(format_args!(
            "senders recovered ahead, on the reading thread: {:.3} s (not in the checks above)",
            s(run.senders_ahead)
        ));
    }
    if let Some(cpu) = &run.cpu {
        print_cpu(out, run, cpu);
    }
    let (exec50, exec99) = p50_p99(&run.per_block, |b| b.execution_ms);
    let (root50, root99) = p50_p99(&run.per_block, |b| b.root_ms);
    let (commit50, commit99) = p50_p99(&run.per_block, |b| b.commit_ms);
    out.line(format_args!(
        "per block p50/p99 ms: execution {exec50:.2}/{exec99:.2}, root {root50:.2}/{root99:.2}, commit {commit50:.2}/{commit99:.2}"
    ));
    let from_list: Vec<bool> = run
        .per_block
        .iter()
        .filter_map(|b| b.root_from_list)
        .collect();
    if !from_list.is_empty() {
        let used = from_list.iter().filter(|&&used| used).count();
        let (wait50, wait99) = p50_p99(&run.per_block, |b| b.root_wait_ms.unwrap_or(0.0));
        out.line(format_args!(
            "root from each block's access list, alongside execution: {used} of {} blocks ({} set aside, computed from the writes); its wait after the EVM p50/p99 ms {wait50:.2}/{wait99:.2}",
            from_list.len(),
            from_list.len() - used
        ));
    }
    let ahead = &run.ahead;
    if ahead.committed + ahead.executed_again > 0 {
        out.line(format_args!(
            "transactions ahead of their turn, from each block's access list ({} workers): {} committed as run ahead, {} executed again in their turn",
            ahead.workers, ahead.committed, ahead.executed_again
        ));
    }
    let folds: u64 = run.per_block.iter().map(|b| b.root_folds).sum();
    if folds > 0 {
        let (wait50, wait99) = p50_p99(&run.per_block, |b| b.root_wait_ms.unwrap_or(0.0));
        out.line(format_args!(
            "root streamed: {:.1} folds per block on the root thread; last fold after the last writes p50/p99 ms {wait50:.2}/{wait99:.2} (root above: the block's whole wait after the EVM, unwind data included)",
            folds as f64 / run.per_block.len().max(1) as f64
        ));
    }
    match (&run.warmed, run.warm_start) {
        (Some(warm), _) => out.line(format_args!(
            "branch cache warmed before the first block: {} records ({}), the root and {} levels of the account trie, in {:.0} ms (not in the wall time)",
            warm.records,
            format_bytes(Some(warm.bytes)),
            warm.levels,
            warm.took.as_secs_f64() * 1e3
        )),
        (None, true) => out.line(format_args!(
            "branch cache not warmed: the warm start read nothing (see the log)"
        )),
        (None, false) => out.line(format_args!("branch cache not warmed (--warm-start off)")),
    }
    for (name, c) in [
        ("branch cache", &run.cache_stats),
        ("value cache", &run.value_cache_stats),
    ] {
        out.line(format_args!(
            "{name}: {:.1}% hit rate ({} hits, {} misses)",
            c.hit_rate() * 100.0,
            c.hits,
            c.misses
        ));
    }
    if let Some(trace) = &run.prefetch {
        let idle = if run.warmers == 0 {
            " (0 warmers: prefetch does nothing)"
        } else {
            ""
        };
        out.line(format_args!(
            "prefetch: {} accounts, slots and trie paths loaded by the warmers from the access lists of {}{idle}; reading the lists took {:.3} s, outside the wall time",
            run.prefetched,
            trace.display(),
            run.list_reading.as_secs_f64()
        ));
    }
}

/// The CPU the blocks took, by thread, and the pace the machine's cores
/// allow at that CPU (every part shares them: on two cores the EVM, the
/// root, the senders and the flush each take from the others).
fn print_cpu(out: &mut Lines, run: &ImportRun, cpu: &CpuSpent) {
    let per_block = |d: Duration| run.ms_per_block(d);
    let parts: Vec<String> = cpu
        .groups
        .iter()
        .filter(|(_, spent)| !spent.is_zero())
        .map(|(name, spent)| format!("{name} {:.1}", per_block(*spent)))
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let total = cpu.total.as_secs_f64();
    out.line(format_args!(
        "CPU over the wall time: {total:.2} s, {:.2} of {cores} cores busy; per block {:.1} ms: {} (other: threads that live one block, as the list's staging before its root and the commit's second half; freeing; maintenance)",
        total / run.wall.as_secs_f64().max(1e-9),
        per_block(cpu.total),
        parts.join(", ")
    ));
    out.line(format_args!(
        "at this CPU, {cores} cores allow at most {:.1} Mgas/s whole blocks ({:.1} ms a block)",
        mgas_per_s(run.gas, cpu.total / u32::try_from(cores).unwrap_or(1)),
        per_block(cpu.total) / cores as f64
    ));
}

/// The in-memory baseline beside the first strata run.
pub(super) fn print_baseline(out: &mut Lines, baseline: &BaselineRun, strata: &ImportRun) {
    out.line(format_args!(
        "== baseline: the same {} blocks over revm's in-memory CacheDB (no root), preloaded from {} ==",
        baseline.blocks, baseline.preloaded
    ));
    let memory = mgas_per_s(baseline.gas, baseline.execution);
    let ours = mgas_per_s(strata.gas, strata.totals.execution);
    out.line(format_args!(
        "memory: {memory:.1} Mgas/s execution ({:.3} s), apply {:.3} s",
        baseline.execution.as_secs_f64(),
        baseline.apply.as_secs_f64()
    ));
    out.line(format_args!(
        "execution over strata / over memory: {:.2}x ({ours:.1} / {memory:.1} Mgas/s, root excluded)",
        ours / memory.max(1e-9)
    ));
    let whole = mgas_per_s(strata.gas, strata.wall);
    out.line(format_args!(
        "whole blocks over strata (execution, root, commit) take {:.2}x the time of execution over memory ({whole:.1} / {memory:.1} Mgas/s)",
        memory / whole.max(1e-9)
    ));
}

/// The sweep's runs side by side.
pub(super) fn print_sweep(out: &mut Lines, runs: &[ImportRun]) {
    out.line(format_args!(
        "{:>8} {:>5} {:>7} {:>9} {:>8} {:>6} {:>10} {:>14} {:>14} {:>9} {:>9} {:>9} {:>9} {:>12}",
        "warmers",
        "warm",
        "state",
        "root",
        "senders",
        "lists",
        "tx workers",
        "block Mgas/s",
        "exec Mgas/s",
        "checks s",
        "apply s",
        "root s",
        "commit s",
        "CPU ms/block"
    ));
    for run in runs {
        out.line(format_args!(
            "{:>8} {:>5} {:>7} {:>9} {:>8} {:>6} {:>10} {:>14.1} {:>14.1} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>12}",
            run.warmers,
            super::on_off_name(run.warm_start),
            super::path_name(run.state),
            super::root_name(run.root),
            run.senders.name(),
            run.lists_name().unwrap_or("none"),
            run.transaction_workers,
            mgas_per_s(run.gas, run.wall),
            mgas_per_s(run.gas, run.totals.execution),
            run.totals.checks.as_secs_f64(),
            run.totals.apply.as_secs_f64(),
            run.totals.root.as_secs_f64(),
            run.totals.commit.as_secs_f64(),
            run.cpu.as_ref().map_or("unknown".to_owned(), |cpu| format!(
                "{:.1}",
                run.ms_per_block(cpu.total)
            ))
        ));
    }
}

#[derive(Serialize)]
struct Report<'a> {
    command: &'static str,
    chain: String,
    genesis_hash: B256,
    runs: Vec<RunJson<'a>>,
    /// strata's execution Mgas/s over the baseline's, first run.
    execution_ratio: Option<f64>,
    peak_rss_bytes: Option<u64>,
    final_block: Option<u64>,
    final_root: B256,
}

#[derive(Serialize)]
struct RunJson<'a> {
    database: &'static str,
    state_path: Option<&'static str>,
    /// `streamed` or `after` (strata only).
    root: Option<&'static str>,
    /// `ahead` or `inline` (strata only).
    senders: Option<&'static str>,
    /// Senders' recovery on the reading thread, outside `checks_s`
    /// (strata only; 0 inline).
    senders_ahead_s: Option<f64>,
    warmers: Option<usize>,
    /// Whether the run started cold (strata only).
    cold: Option<bool>,
    /// The trace the access lists were prefetched from (strata only).
    prefetch: Option<String>,
    /// With `--access-lists`: `use` or `ignore` (strata only).
    #[serde(skip_serializing_if = "Option::is_none")]
    access_lists: Option<&'static str>,
    /// Items the warmers loaded from them (strata only).
    prefetched: Option<u64>,
    /// Threads running transactions ahead from the lists (strata only).
    transaction_workers: Option<usize>,
    /// Whether the branch cache was warmed before the first block (strata only).
    warm_start: Option<bool>,
    /// Branch records the warm start read (strata only, when it ran).
    warm_start_records: Option<usize>,
    /// How long it took (strata only, when it ran).
    warm_start_s: Option<f64>,
    /// Transactions committed as run ahead (strata only).
    transactions_committed_ahead: Option<usize>,
    /// Transactions run ahead but executed again in their turn (strata only).
    transactions_executed_again: Option<usize>,
    /// Reading the access lists from the trace, outside `wall_s` (strata only).
    list_reading_s: Option<f64>,
    /// `genesis` or the state dump the database was preloaded from
    /// (memory only).
    preloaded: Option<String>,
    blocks: u64,
    transactions: Option<u64>,
    gas: u64,
    /// Execution alone (root excluded).
    mgas_per_s: f64,
    /// Whole blocks, wall time (strata only).
    block_mgas_per_s: Option<f64>,
    wall_s: Option<f64>,
    checks_s: Option<f64>,
    execution_s: f64,
    apply_s: f64,
    root_s: Option<f64>,
    commit_s: Option<f64>,
    /// The process's CPU time over the blocks (strata only, where `/proc`
    /// tells).
    cpu_s: Option<f64>,
    /// Its parts by thread: writer, root, senders, flush, warmers, tx
    /// ahead, other (strata only).
    cpu_by_thread_s: Option<std::collections::BTreeMap<&'static str, f64>>,
    reads: Vec<ReadCell>,
    per_block: Option<&'a [BlockRow]>,
}

/// Writes the JSON report into `file` (its `--json` path).
pub(super) fn write_json(
    file: OutputFile,
    chain: &Path,
    genesis_hash: B256,
    runs: &[ImportRun],
    baseline: Option<&BaselineRun>,
) -> Result<(), CliError> {
    let s = |d: Duration| d.as_secs_f64();
    let mut json_runs: Vec<RunJson<'_>> = runs
        .iter()
        .map(|run| RunJson {
            database: "strata",
            state_path: Some(super::path_name(run.state)),
            root: Some(super::root_name(run.root)),
            senders: Some(run.senders.name()),
            senders_ahead_s: Some(s(run.senders_ahead)),
            warmers: Some(run.warmers),
            cold: Some(run.cold),
            prefetch: run.prefetch.as_ref().map(|p| p.display().to_string()),
            access_lists: run.lists_name(),
            prefetched: Some(run.prefetched),
            transaction_workers: Some(run.transaction_workers),
            warm_start: Some(run.warm_start),
            warm_start_records: run.warmed.map(|warm| warm.records),
            warm_start_s: run.warmed.map(|warm| s(warm.took)),
            transactions_committed_ahead: Some(run.ahead.committed),
            transactions_executed_again: Some(run.ahead.executed_again),
            list_reading_s: Some(s(run.list_reading)),
            preloaded: None,
            blocks: run.blocks,
            transactions: Some(run.transactions),
            gas: run.gas,
            mgas_per_s: mgas_per_s(run.gas, run.totals.execution),
            block_mgas_per_s: Some(mgas_per_s(run.gas, run.wall)),
            wall_s: Some(s(run.wall)),
            checks_s: Some(s(run.totals.checks)),
            execution_s: s(run.totals.execution),
            apply_s: s(run.totals.apply),
            root_s: Some(s(run.totals.root)),
            commit_s: Some(s(run.totals.commit)),
            cpu_s: run.cpu.as_ref().map(|cpu| s(cpu.total)),
            cpu_by_thread_s: run.cpu.as_ref().map(|cpu| {
                cpu.groups
                    .iter()
                    .map(|(name, spent)| (*name, s(*spent)))
                    .collect()
            }),
            reads: run.reads.cells.iter().map(ReadCell::from).collect(),
            per_block: Some(&run.per_block),
        })
        .collect();
    if let Some(baseline) = baseline {
        json_runs.push(RunJson {
            database: "memory",
            state_path: None,
            root: None,
            senders: None,
            senders_ahead_s: None,
            warmers: None,
            cold: None,
            prefetch: None,
            access_lists: None,
            prefetched: None,
            transaction_workers: None,
            warm_start: None,
            warm_start_records: None,
            warm_start_s: None,
            transactions_committed_ahead: None,
            transactions_executed_again: None,
            list_reading_s: None,
            preloaded: Some(baseline.preloaded.clone()),
            blocks: baseline.blocks,
            transactions: None,
            gas: baseline.gas,
            mgas_per_s: mgas_per_s(baseline.gas, baseline.execution),
            block_mgas_per_s: None,
            wall_s: None,
            checks_s: None,
            execution_s: s(baseline.execution),
            apply_s: s(baseline.apply),
            root_s: None,
            commit_s: None,
            cpu_s: None,
            cpu_by_thread_s: None,
            reads: Vec::new(),
            per_block: None,
        });
    }
    let first = &runs[0];
    let report = Report {
        command: "import-chain",
        chain: chain.display().to_string(),
        genesis_hash,
        execution_ratio: baseline.map(|b| {
            mgas_per_s(first.gas, first.totals.execution) / mgas_per_s(b.gas, b.execution).max(1e-9)
        }),
        runs: json_runs,
        peak_rss_bytes: crate::host::peak_rss_bytes(),
        final_block: first.final_block,
        final_root: first.final_root,
    };
    file.write_json(&report)
}
