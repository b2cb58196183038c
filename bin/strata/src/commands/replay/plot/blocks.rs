//! The per-block series: one chart of a time per block over the block
//! number, one line per run, each run's p99 as a dashed level.

use super::super::run::{BlockTiming, RunResult};
use super::{
    Area, Axes, LegendEntry, Stroke, color, draw_legend, draw_line, draw_note, log_chart,
    log_range, p99, split_legend, tick,
};

/// Which time of a block is drawn.
#[derive(Clone, Copy, Debug)]
pub(super) enum Series {
    /// The block's whole turn of the replay loop.
    Wall,
    /// Its root calculation.
    Root,
}

impl Series {
    fn value(self, block: &BlockTiming) -> f64 {
        match self {
            Series::Wall => block.wall_ms,
            Series::Root => block.root_ms,
        }
    }

    fn caption(self) -> &'static str {
        match self {
            Series::Wall => "block time per block (parse, read check, staging, commit)",
            Series::Root => {
                "root time per block (state-root calculation; with prefetch beside the reads)"
            }
        }
    }
}

/// The legend name of a run: its warmers and cache (and prefetch).
pub(super) fn run_label(run: &RunResult) -> String {
    let prefetch = if run.prefetch { ", prefetch" } else { "" };
    format!("{} warmers, {}{prefetch}", run.warmers, run.cache.name())
}

/// Draws `series` of every run on `area`.
pub(super) fn draw(area: &Area<'_>, runs: &[RunResult], series: Series) -> Result<(), String> {
    let (chart_area, legend_area) = split_legend(area);
    let lines: Vec<Vec<(f64, f64)>> = runs
        .iter()
        .map(|run| {
            run.per_block
                .iter()
                .map(|b| (b.block as f64, series.value(b)))
                .collect()
        })
        .collect();
    let levels: Vec<Option<f64>> = lines
        .iter()
        .map(|line| p99(&line.iter().map(|&(_, y)| y).collect::<Vec<_>>()))
        .collect();
    let first = lines
        .iter()
        .flatten()
        .map(|&(x, _)| x)
        .fold(f64::INFINITY, f64::min);
    let last = lines
        .iter()
        .flatten()
        .map(|&(x, _)| x)
        .fold(f64::NEG_INFINITY, f64::max);
    let (first, last) = if first.is_finite() {
        (first, last)
    } else {
        (0.0, 1.0)
    };
    let pad = ((last - first) * 0.02).max(0.5);
    let y = log_range(lines.iter().flatten().map(|&(_, y)| y));
    let axes = Axes {
        x: first - pad..last + pad,
        x_labels: 12,
        // Whole block numbers only (a short range gets fractional ticks).
        x_label: &|x| {
            if (x - x.round()).abs() < 1e-6 {
                (x.round() as i64).to_string()
            } else {
                String::new()
            }
        },
        x_desc: "block",
        y,
        y_desc: "ms (log scale)",
    };
    let mut chart = log_chart(&chart_area, series.caption(), axes)?;
    let mut legend = Vec::new();
    for (i, (run, line)) in runs.iter().zip(&lines).enumerate() {
        let color = color(i);
        draw_line(&mut chart, line, color, Stroke::Points)?;
        legend.push(LegendEntry {
            label: run_label(run),
            color,
            stroke: Stroke::Points,
        });
        if let Some(level) = levels[i] {
            let flat = [(first - pad, level), (last + pad, level)];
            draw_line(&mut chart, &flat, color, Stroke::Dashed)?;
            legend.push(LegendEntry {
                label: format!("p99 {} ms", tick(&level)),
                color,
                stroke: Stroke::Dashed,
            });
        }
    }
    if lines.iter().all(Vec::is_empty) {
        draw_note(&chart_area, "no blocks applied in this replay")?;
    }
    draw_legend(&legend_area, "runs (dashed: p99)", &legend)
}
