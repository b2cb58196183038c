//! `--plot FILE.svg`: the replay drawn as SVG. Always the per-block series
//! (block time and root time over the block number, one line per run, each
//! run's p99 as a dashed line); for a sweep of several runs, above them the
//! commitment-regime read latency (p50, p99) and the block time against the
//! number of warmers, one line per cache kind. Latency axes are
//! logarithmic; every data point has a marker; the legends sit beside the
//! charts so they never hide a line.

mod blocks;
mod sweep;

use std::ops::Range;

use plotters::coord::Shift;
use plotters::coord::combinators::WithKeyPoints;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::run::RunResult;
use crate::CliError;
use crate::output_file::OutputFile;

/// Width of the whole picture, in pixels.
const WIDTH: u32 = 1100;
/// Height of one chart (with its caption and axes), in pixels.
const PANEL_HEIGHT: u32 = 420;
/// Width of the legend column right of each chart, in pixels.
const LEGEND_WIDTH: u32 = 260;
/// The smallest latency a log axis shows (ms or µs: a floor for zeros).
const LOG_FLOOR: f64 = 1e-3;
/// At most this many markers per line (more would blot the line out).
const MAX_MARKERS: usize = 120;

/// Ten colours told apart also in print (matplotlib's "tab10").
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The colour of the `index`-th line.
fn color(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

type Area<'b> = DrawingArea<SVGBackend<'b>, Shift>;
type LogChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, WithKeyPoints<LogCoord<f64>>>>;

/// Draws the runs into `file` (its `--plot` path).
pub(super) fn draw(file: OutputFile, runs: &[RunResult]) -> Result<(), CliError> {
    let mut svg = String::new();
    draw_svg(&mut svg, runs).map_err(|what| {
        CliError::file(file.path())(std::io::Error::other(format!("drawing the plot: {what}")))
    })?;
    file.write_whole(svg.as_bytes())
}

fn draw_svg(svg: &mut String, runs: &[RunResult]) -> Result<(), String> {
    let sweep = runs.len() > 1;
    let panels: u32 = if sweep { 4 } else { 2 };
    let root = SVGBackend::with_string(svg, (WIDTH, PANEL_HEIGHT * panels)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let areas = root.split_evenly((panels as usize, 1));
    let mut areas = areas.iter();
    let mut next = || areas.next().ok_or_else(|| "too few panels".to_owned());
    if sweep {
        sweep::draw_read_latency(next()?, runs)?;
        sweep::draw_block_time(next()?, runs)?;
    }
    blocks::draw(next()?, runs, blocks::Series::Wall)?;
    blocks::draw(next()?, runs, blocks::Series::Root)?;
    root.present().map_err(|e| e.to_string())
}

/// How a line is drawn and shown in the legend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stroke {
    /// A solid line with a circle on each point.
    Points,
    /// A dashed line with a triangle on each point (a p99 series).
    DashedPoints,
    /// A dashed line without markers (a p99 reference level).
    Dashed,
}

/// One line of a legend.
struct LegendEntry {
    label: String,
    color: RGBColor,
    stroke: Stroke,
}

/// Splits a panel into the chart (left) and its legend column (right).
fn split_legend<'b>(area: &Area<'b>) -> (Area<'b>, Area<'b>) {
    let (width, _) = area.dim_in_pixel();
    area.split_horizontally(width.saturating_sub(LEGEND_WIDTH))
}

/// A chart on `area` with a linear x axis over `x` (at most `x_labels`
/// ticks, at round values)
/// and a logarithmic y axis over `y` (ticks at 1, 2, 5 × 10^k, lighter
/// lines at the other digits; see [`log_range`]), its mesh drawn.
fn log_chart<'a, 'b>(
    area: &'a Area<'b>,
    caption: &str,
    axes: Axes<'_>,
) -> Result<LogChart<'a, 'b>, String> {
    let (bold, light) = log_ticks(&axes.y);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            axes.x,
            axes.y
                .log_scale()
                .with_key_points(bold)
                .with_light_points(light),
        )
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_labels(axes.x_labels)
        .x_label_formatter(axes.x_label)
        .y_label_formatter(&tick)
        .x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(200, 200, 200))
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(chart)
}

/// The axes of a [`log_chart`].
struct Axes<'f> {
    x: Range<f64>,
    x_labels: usize,
    x_label: &'f dyn Fn(&f64) -> String,
    x_desc: &'f str,
    y: Range<f64>,
    y_desc: &'f str,
}

/// Ticks of a log axis over `range`: (labelled, light). Labelled at 1, 2
/// and 5 × 10^k (only 1 × 10^k over more than three decades); light at
/// the other digits.
fn log_ticks(range: &Range<f64>) -> (Vec<f64>, Vec<f64>) {
    let (low, high) = (range.start.max(LOG_FLOOR), range.end.max(LOG_FLOOR));
    let wide = high / low > 1e3;
    let (mut bold, mut light) = (Vec::new(), Vec::new());
    let first = low.log10().floor() as i32;
    let last = high.log10().ceil() as i32;
    for power in first..=last {
        for digit in 1..=9 {
            let value = f64::from(digit) * 10f64.powi(power);
            if value < low || value > high {
                continue;
            }
            let labelled = digit == 1 || (!wide && (digit == 2 || digit == 5));
            if labelled {
                bold.push(value);
            } else {
                light.push(value);
            }
        }
    }
    (bold, light)
}

/// A log-axis range holding every value of `values` (≥ [`LOG_FLOOR`])
/// with some headroom, at least a decade wide, its ends at 1, 2 or 5 ×
/// 10^k (so both ends are labelled); 1 to 10 for no values.
fn log_range(values: impl IntoIterator<Item = f64>) -> Range<f64> {
    let (mut low, mut high) = (f64::INFINITY, 0.0_f64);
    for v in values.into_iter().filter(|v| v.is_finite()) {
        let v = v.max(LOG_FLOOR);
        low = low.min(v);
        high = high.max(v);
    }
    if high == 0.0 {
        return 1.0..10.0;
    }
    let (mut low, mut high) = (low / 1.15, high * 1.15);
    if high / low < 10.0 {
        let middle = (low * high).sqrt();
        low = low.min(middle / 10f64.sqrt());
        high = high.max(middle * 10f64.sqrt());
    }
    nice(low, false).max(LOG_FLOOR)..nice(high, true)
}

/// The nearest value of 1, 2 or 5 × 10^k below `value` (above it when
/// `up`).
fn nice(value: f64, up: bool) -> f64 {
    let power = 10f64.powf(value.log10().floor());
    let mantissa = value / power;
    let candidates = [1.0, 2.0, 5.0, 10.0];
    let pick = if up {
        candidates
            .into_iter()
            .find(|&m| m >= mantissa * (1.0 - 1e-9))
            .unwrap_or(10.0)
    } else {
        candidates
            .into_iter()
            .rev()
            .find(|&m| m <= mantissa * (1.0 + 1e-9))
            .unwrap_or(1.0)
    };
    pick * power
}

/// A latency tick label: "0.02", "0.5", "3", "40", "1500".
fn tick(value: &f64) -> String {
    let v = *value;
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        trim(format!("{v:.1}"))
    } else {
        let digits = (-v.log10().floor()) as usize + 1;
        trim(format!("{v:.digits$}"))
    }
}

fn trim(text: String) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// The nearest-rank 99th percentile of `values`, `None` when empty.
fn p99(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let rank = (sorted.len() * 99).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

/// Draws `points` on `chart` as `stroke` in `color`.
fn draw_line(
    chart: &mut LogChart<'_, '_>,
    points: &[(f64, f64)],
    color: RGBColor,
    stroke: Stroke,
) -> Result<(), String> {
    let points: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x, y.max(LOG_FLOOR))).collect();
    let error = |e: DrawingAreaErrorKind<_>| e.to_string();
    // Long series thinner, so that several runs stay apart.
    let width = if points.len() > 100 { 1 } else { 2 };
    match stroke {
        Stroke::Points => {
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(width),
                ))
                .map_err(error)?;
        }
        Stroke::DashedPoints | Stroke::Dashed => {
            chart
                .draw_series(DashedLineSeries::new(
                    points.iter().copied(),
                    6,
                    4,
                    color.stroke_width(2),
                ))
                .map_err(error)?;
        }
    }
    let stride = points.len().div_ceil(MAX_MARKERS).max(1);
    let size = if points.len() > 40 { 2 } else { 3 };
    let markers = points.iter().step_by(stride).copied();
    match stroke {
        Stroke::Points => {
            chart
                .draw_series(markers.map(|p| Circle::new(p, size, color.filled())))
                .map_err(error)?;
        }
        Stroke::DashedPoints => {
            chart
                .draw_series(markers.map(|p| TriangleMarker::new(p, size + 1, color.filled())))
                .map_err(error)?;
        }
        Stroke::Dashed => {}
    }
    Ok(())
}

/// Draws `entries` down the legend column `area`; what does not fit is
/// summed up in a last line.
fn draw_legend(area: &Area<'_>, title: &str, entries: &[LegendEntry]) -> Result<(), String> {
    const ROW: i32 = 18;
    const TOP: i32 = 40;
    let error = |e: DrawingAreaErrorKind<_>| e.to_string();
    let (_, height) = area.dim_in_pixel();
    let rows = usize::try_from((height as i32 - TOP - 2 * ROW) / ROW)
        .unwrap_or(0)
        .max(1);
    let font = ("sans-serif", 13).into_font();
    let centered = TextStyle::from(font.clone()).pos(Pos::new(HPos::Left, VPos::Center));
    area.draw(&Text::new(
        title.to_owned(),
        (8, TOP - ROW),
        centered.clone().font.style(FontStyle::Bold),
    ))
    .map_err(error)?;
    for (i, entry) in entries.iter().take(rows).enumerate() {
        let y = TOP + i as i32 * ROW;
        let (x0, x1) = (8, 40);
        let style = entry.color.stroke_width(2);
        match entry.stroke {
            Stroke::Points => {
                area.draw(&PathElement::new(vec![(x0, y), (x1, y)], style))
                    .map_err(error)?;
                area.draw(&Circle::new(((x0 + x1) / 2, y), 4, entry.color.filled()))
                    .map_err(error)?;
            }
            Stroke::DashedPoints | Stroke::Dashed => {
                area.draw(&DashedPathElement::new([(x0, y), (x1, y)], 6, 4, style))
                    .map_err(error)?;
                if entry.stroke == Stroke::DashedPoints {
                    area.draw(&TriangleMarker::new(
                        ((x0 + x1) / 2, y),
                        5,
                        entry.color.filled(),
                    ))
                    .map_err(error)?;
                }
            }
        }
        area.draw(&Text::new(
            entry.label.clone(),
            (x1 + 8, y),
            centered.clone(),
        ))
        .map_err(error)?;
    }
    if entries.len() > rows {
        let y = TOP + rows as i32 * ROW;
        area.draw(&Text::new(
            format!("… and {} more", entries.len() - rows),
            (8, y),
            centered,
        ))
        .map_err(error)?;
    }
    Ok(())
}

/// Draws a note in the middle of an empty chart.
fn draw_note(area: &Area<'_>, note: &str) -> Result<(), String> {
    let (width, height) = area.dim_in_pixel();
    area.draw(&Text::new(
        note.to_owned(),
        (width as i32 / 2 - 120, height as i32 / 2),
        ("sans-serif", 15).into_font().color(&RGBColor(90, 90, 90)),
    ))
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ranges_hold_their_values_and_never_reach_zero() {
        let r = log_range([0.5, 30.0]);
        assert!(r.start <= 0.5 && r.end >= 30.0 && r.start > 0.0, "{r:?}");
        let r = log_range([4.0]);
        assert!(
            r.start < 4.0 && r.end > 4.0 && r.end / r.start >= 9.9,
            "{r:?}"
        );
        let r = log_range([0.0, f64::NAN, 2.0]);
        assert!(r.start >= LOG_FLOOR && r.end >= 2.0, "{r:?}");
        assert_eq!(log_range([]), 1.0..10.0);
    }

    #[test]
    fn log_ticks_label_1_2_5_per_decade() {
        let (bold, light) = log_ticks(&(0.3..30.0));
        assert_eq!(bold, [0.5, 1.0, 2.0, 5.0, 10.0, 20.0]);
        assert!(light.contains(&3.0) && light.contains(&0.4) && !light.contains(&1.0));
        let (bold, _) = log_ticks(&(0.01..1000.0));
        assert_eq!(bold.len(), 6, "{bold:?}");
    }

    #[test]
    fn nice_values_are_1_2_5() {
        assert_eq!(nice(0.23, false), 0.2);
        assert_eq!(nice(0.23, true), 0.5);
        assert_eq!(nice(7.0, true), 10.0);
        assert_eq!(nice(2.0, false), 2.0);
        assert_eq!(nice(2.0, true), 2.0);
        assert_eq!(nice(1234.0, false), 1000.0);
    }

    #[test]
    fn ticks_are_short() {
        let t = |v: f64| tick(&v);
        assert_eq!(
            [t(0.02), t(0.5), t(3.0), t(2.5), t(40.0), t(1500.0)],
            ["0.02", "0.5", "3", "2.5", "40", "1500"]
        );
    }

    #[test]
    fn p99_is_the_nearest_rank() {
        let values: Vec<f64> = (1..=200).map(f64::from).collect();
        assert_eq!(p99(&values), Some(198.0));
        assert_eq!(p99(&[7.0]), Some(7.0));
        assert_eq!(p99(&[]), None);
    }
}
