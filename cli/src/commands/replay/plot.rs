//! `--plot FILE.svg`: commitment-regime read latency (p50, p99) and block
//! time against the number of warmers, one line per cache kind.

use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use strata_storage::telemetry::Tier;
use strata_storage::{CacheKind, Regime};

use super::report::commitment_tier;
use super::run::RunResult;
use crate::CliError;

const COLORS: [RGBColor; 3] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
];

/// Draw the sweep into `path`.
pub(super) fn draw(path: &Path, runs: &[RunResult]) -> Result<(), CliError> {
    let fail = |what: String| CliError::file(path)(std::io::Error::other(what));
    let mut warmers: Vec<usize> = runs.iter().map(|r| r.warmers).collect();
    warmers.sort_unstable();
    warmers.dedup();
    let mut caches: Vec<CacheKind> = Vec::new();
    for run in runs {
        if !caches.contains(&run.cache) {
            caches.push(run.cache);
        }
    }
    // The tier answering the most commitment-regime reads stands for the latency plot.
    let tier = busiest_commitment_tier(runs).unwrap_or(Tier::Db);
    let x_of = |w: usize| warmers.iter().position(|&v| v == w).unwrap_or(0) as f64;
    let x_max = (warmers.len().max(2) - 1) as f64;
    let latency_max = runs
        .iter()
        .filter_map(|r| commitment_tier(&r.reads, tier).map(|(_, p99)| p99))
        .max()
        .unwrap_or(1)
        .max(1) as f64
        / 1e3;
    let block_ms = |r: &RunResult| r.wall.as_secs_f64() * 1e3 / r.blocks.max(1) as f64;
    let block_max = runs.iter().map(block_ms).fold(0.0_f64, f64::max).max(1e-3);

    let root = SVGBackend::new(path, (900, 700)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(e.to_string()))?;
    let (top, bottom) = root.split_vertically(350);
    let label = |x: &f64| {
        warmers
            .get(x.round() as usize)
            .map_or_else(String::new, |w| w.to_string())
    };

    let caption = format!(
        "commitment-regime {} read latency (µs) vs warmers",
        tier.name()
    );
    let axes = Axes {
        warmers: warmers.len(),
        x_max,
        label: &label,
    };
    let mut chart = warmer_chart(&top, &caption, latency_max, "µs", &axes).map_err(&fail)?;
    for (i, cache) in caches.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        for (quantile, dashed) in [("p50", false), ("p99", true)] {
            let points: Vec<(f64, f64)> = runs
                .iter()
                .filter(|r| r.cache == *cache)
                .filter_map(|r| {
                    commitment_tier(&r.reads, tier).map(|(p50, p99)| {
                        let v = if dashed { p99 } else { p50 };
                        (x_of(r.warmers), v as f64 / 1e3)
                    })
                })
                .collect();
            let style = if dashed {
                color.stroke_width(1)
            } else {
                color.stroke_width(2)
            };
            chart
                .draw_series(LineSeries::new(points, style))
                .map_err(|e| fail(e.to_string()))?
                .label(format!("{} {quantile}", cache.name()))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
    }
    draw_legend(&mut chart).map_err(&fail)?;

    let mut chart = warmer_chart(
        &bottom,
        "block time (ms) vs warmers",
        block_max,
        "ms/block",
        &axes,
    )
    .map_err(&fail)?;
    for (i, cache) in caches.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let points: Vec<(f64, f64)> = runs
            .iter()
            .filter(|r| r.cache == *cache)
            .map(|r| (x_of(r.warmers), block_ms(r)))
            .collect();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(|e| fail(e.to_string()))?
            .label(cache.name())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    draw_legend(&mut chart).map_err(&fail)?;
    root.present().map_err(|e| fail(e.to_string()))?;
    Ok(())
}

/// The x axis every chart of the sweep shares: one tick per warmer count.
struct Axes<'a> {
    warmers: usize,
    x_max: f64,
    label: &'a dyn Fn(&f64) -> String,
}

type WarmerChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A chart on `area` with warmers on x and `0..y_max` (plus headroom) on y.
fn warmer_chart<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    caption: &str,
    y_max: f64,
    y_desc: &str,
    axes: &Axes<'_>,
) -> Result<WarmerChart<'a, 'b>, String> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.2..axes.x_max + 0.2, 0.0..y_max * 1.1)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_labels(axes.warmers)
        .x_label_formatter(axes.label)
        .x_desc("warmers")
        .y_desc(y_desc)
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(chart)
}

/// The legend of the lines drawn on `chart`.
fn draw_legend<'a, 'b: 'a>(chart: &mut WarmerChart<'a, 'b>) -> Result<(), String> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())
}

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
