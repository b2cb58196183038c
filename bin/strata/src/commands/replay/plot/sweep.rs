//! The warmer sweep: commitment-regime read latency (p50, p99) and block
//! time against the number of warmers, one line per cache kind.

use strata_storage::telemetry::Tier;
use strata_storage::{CacheKind, Regime};

use super::super::report::{blocks_per_s, commitment_tier};
use super::super::run::RunResult;
use super::{
    Area, Axes, LegendEntry, LogChart, Stroke, color, draw_legend, draw_line, log_chart, log_range,
    split_legend,
};

/// The warmer counts of the sweep, ascending: the x axis has one evenly
/// spaced tick per count.
struct WarmerAxis {
    counts: Vec<usize>,
}

impl WarmerAxis {
    fn new(runs: &[RunResult]) -> Self {
        let mut counts: Vec<usize> = runs.iter().map(|r| r.warmers).collect();
        counts.sort_unstable();
        counts.dedup();
        WarmerAxis { counts }
    }

    fn x(&self, warmers: usize) -> f64 {
        self.counts.iter().position(|&w| w == warmers).unwrap_or(0) as f64
    }

    fn label(&self, x: &f64) -> String {
        if (x - x.round()).abs() > 1e-6 || *x < -0.5 {
            return String::new();
        }
        self.counts
            .get(x.round() as usize)
            .map_or_else(String::new, |w| w.to_string())
    }

    /// A chart on `area` with this axis on x and a log axis over `ys`.
    fn chart<'a, 'b>(
        &self,
        area: &'a Area<'b>,
        caption: &str,
        y_desc: &str,
        ys: impl IntoIterator<Item = f64>,
    ) -> Result<LogChart<'a, 'b>, String> {
        let x_max = self.counts.len().saturating_sub(1) as f64;
        let axes = Axes {
            x: -0.3..x_max + 0.3,
            // The span is under `counts` units: one tick per whole number.
            x_labels: self.counts.len().max(2),
            x_label: &|x| self.label(x),
            x_desc: "warmers",
            y: log_range(ys),
            y_desc,
        };
        log_chart(area, caption, axes)
    }
}

/// The lines of the sweep: each cache kind with prefetch off and on, as
/// far as the sweep ran them, in the order given.
fn caches(runs: &[RunResult]) -> Vec<(CacheKind, bool)> {
    let mut caches: Vec<(CacheKind, bool)> = Vec::new();
    for run in runs {
        if !caches.contains(&(run.cache, run.prefetch)) {
            caches.push((run.cache, run.prefetch));
        }
    }
    caches
}

/// A line's legend name: the cache, and "+ prefetch" when it prefetched.
fn line_name((cache, prefetch): (CacheKind, bool)) -> String {
    if prefetch {
        format!("{} + prefetch", cache.name())
    } else {
        cache.name().to_owned()
    }
}

/// Commitment-regime read latency (µs) of the busiest tier vs warmers:
/// per cache a solid p50 and a dashed p99 line.
pub(super) fn draw_read_latency(area: &Area<'_>, runs: &[RunResult]) -> Result<(), String> {
    let (chart_area, legend_area) = split_legend(area);
    let axis = WarmerAxis::new(runs);
    let tier = busiest_commitment_tier(runs).unwrap_or(Tier::Db);
    let micros = |ns: u64| ns as f64 / 1e3;
    let caption = format!(
        "commitment-regime read latency vs warmers ({} tier)",
        tier.name()
    );
    let ys = runs
        .iter()
        .filter_map(|r| commitment_tier(&r.reads, tier))
        .flat_map(|(p50, p99)| [micros(p50), micros(p99)]);
    let mut chart = axis.chart(&chart_area, &caption, "µs (log scale)", ys)?;
    let mut legend = Vec::new();
    for (i, cache) in caches(runs).into_iter().enumerate() {
        let color = color(i);
        for (quantile, stroke) in [("p50", Stroke::Points), ("p99", Stroke::DashedPoints)] {
            let points: Vec<(f64, f64)> = runs
                .iter()
                .filter(|r| (r.cache, r.prefetch) == cache)
                .filter_map(|r| {
                    let (p50, p99) = commitment_tier(&r.reads, tier)?;
                    let ns = if quantile == "p50" { p50 } else { p99 };
                    Some((axis.x(r.warmers), micros(ns)))
                })
                .collect();
            draw_line(&mut chart, &points, color, stroke)?;
            legend.push(LegendEntry {
                label: format!("{} {quantile}", line_name(cache)),
                color,
                stroke,
            });
        }
    }
    draw_legend(&legend_area, "cache (dashed: p99)", &legend)
}

/// Mean block time (ms, wall / blocks) vs warmers, one line per cache.
pub(super) fn draw_block_time(area: &Area<'_>, runs: &[RunResult]) -> Result<(), String> {
    let (chart_area, legend_area) = split_legend(area);
    let axis = WarmerAxis::new(runs);
    let block_ms = |r: &RunResult| 1e3 / blocks_per_s(r).max(1e-9);
    let ys = runs.iter().filter(|r| r.blocks > 0).map(block_ms);
    let mut chart = axis.chart(
        &chart_area,
        "mean block time vs warmers",
        "ms/block (log scale)",
        ys,
    )?;
    let mut legend = Vec::new();
    for (i, cache) in caches(runs).into_iter().enumerate() {
        let color = color(i);
        let points: Vec<(f64, f64)> = runs
            .iter()
            .filter(|r| (r.cache, r.prefetch) == cache && r.blocks > 0)
            .map(|r| (axis.x(r.warmers), block_ms(r)))
            .collect();
        draw_line(&mut chart, &points, color, Stroke::Points)?;
        legend.push(LegendEntry {
            label: line_name(cache),
            color,
            stroke: Stroke::Points,
        });
    }
    draw_legend(&legend_area, "cache", &legend)
}

/// The tier that answered the most commitment-regime reads over the runs.
fn busiest_commitment_tier(runs: &[RunResult]) -> Option<Tier> {
    let mut counts: Vec<(Tier, u64)> = Vec::new();
    for cell in runs.iter().flat_map(|r| r.reads.cells.iter()) {
        if cell.regime != Regime::Commitment {
            continue;
        }
        match counts.iter_mut().find(|(t, _)| *t == cell.tier) {
            Some((_, n)) => *n += cell.count,
            None => counts.push((cell.tier, cell.count)),
        }
    }
    counts.into_iter().max_by_key(|(_, n)| *n).map(|(t, _)| t)
}
