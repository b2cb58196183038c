//! The Grafana dashboard (`dashboards/strata-grafana.json`): a typed view of
//! its JSON model, the metric names its PromQL uses, and the check that
//! each of them is served by the `--metrics` endpoint that exports it: the
//! store's by `replay --metrics` (called by the metrics test on a live
//! scrape), the JSON-RPC row's (`strata_rpc_*`) by `serve --metrics`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use prometheus_parse::{Scrape, Value};
use serde::Deserialize;

/// Where the dashboard is checked in.
pub(crate) fn dashboard_path() -> PathBuf {
    strata_test_support::repo_root().join("dashboards/strata-grafana.json")
}

/// The parts of a Grafana dashboard model the checks read.
#[derive(Debug, Deserialize)]
struct Dashboard {
    #[serde(rename = "__inputs")]
    inputs: Vec<Input>,
    title: String,
    uid: String,
    panels: Vec<Panel>,
    templating: Templating,
}

/// A datasource the importer asks for.
#[derive(Debug, Deserialize)]
struct Input {
    name: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(rename = "pluginId")]
    plugin_id: String,
}

#[derive(Debug, Deserialize)]
struct Panel {
    title: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    targets: Vec<Target>,
    /// The panels of a collapsed row.
    #[serde(default)]
    panels: Vec<Panel>,
}

#[derive(Debug, Deserialize)]
struct Target {
    expr: String,
    datasource: Datasource,
}

#[derive(Debug, Deserialize)]
struct Datasource {
    #[serde(rename = "type")]
    kind: String,
    uid: String,
}

#[derive(Debug, Deserialize)]
struct Templating {
    list: Vec<Variable>,
}

#[derive(Debug, Deserialize)]
struct Variable {
    name: String,
    query: VariableQuery,
}

#[derive(Debug, Deserialize)]
struct VariableQuery {
    query: String,
}

fn load() -> Dashboard {
    let path = dashboard_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every panel, the panels of collapsed rows included.
fn all_panels(panels: &[Panel]) -> Vec<&Panel> {
    let mut out = Vec::new();
    for panel in panels {
        out.push(panel);
        out.extend(all_panels(&panel.panels));
    }
    out
}

/// (where, PromQL) of every query of the dashboard: panel targets and the
/// metric of each `label_values(METRIC, LABEL)` variable.
fn queries(dashboard: &Dashboard) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for panel in all_panels(&dashboard.panels) {
        for target in &panel.targets {
            out.push((format!("panel {:?}", panel.title), target.expr.clone()));
        }
    }
    for variable in &dashboard.templating.list {
        let query = variable.query.query.trim();
        let inner = query
            .strip_prefix("label_values(")
            .and_then(|rest| rest.strip_suffix(')'))
            .unwrap_or_else(|| {
                panic!(
                    "variable {}: {query:?} is not label_values(…)",
                    variable.name
                )
            });
        let (metric, label) = inner
            .split_once(',')
            .unwrap_or_else(|| panic!("variable {}: {query:?} names no label", variable.name));
        assert!(!label.trim().is_empty(), "variable {}", variable.name);
        out.push((
            format!("variable {}", variable.name),
            metric.trim().to_owned(),
        ));
    }
    out
}

/// PromQL keywords that look like identifiers.
const KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
];

/// The metric names a PromQL expression selects: identifiers outside
/// strings, label matchers (`{…}`), ranges (`[…]`) and the label lists of
/// `by`/`without`/`on`/`ignoring`/`group_*`, that are neither function
/// calls (`f(`), aggregations with their grouping first (`sum by (…) (`)
/// nor keywords. Grafana variables (`$x`, `${x}`) and numbers (with
/// their unit letters, `5m`) are skipped.
pub(crate) fn metric_names(expr: &str) -> Vec<String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut names = Vec::new();
    let mut i = 0;
    // Skips from an opening bracket to its match, strings inside included.
    let skip_group = |mut i: usize, open: char, close: char| -> usize {
        let mut depth = 0;
        while i < chars.len() {
            match chars[i] {
                '"' | '\'' | '`' => i = skip_string(&chars, i),
                c if c == open => depth += 1,
                c if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        return i + 1;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        panic!("unbalanced {open} in {expr:?}");
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' | '`' => i = skip_string(&chars, i) + 1,
            '{' => i = skip_group(i, '{', '}'),
            '[' => i = skip_group(i, '[', ']'),
            '$' => {
                i += 1;
                if chars.get(i) == Some(&'{') {
                    i = skip_group(i, '{', '}');
                } else {
                    while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                        i += 1;
                    }
                }
            }
            c if c.is_ascii_digit()
                || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) =>
            {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let mut next = i;
                while next < chars.len() && chars[next].is_whitespace() {
                    next += 1;
                }
                // `f(` is a call; `sum by (…) (` an aggregation with its
                // grouping first.
                let following: String = chars[next..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphabetic() || **c == '_')
                    .collect::<String>()
                    .to_ascii_lowercase();
                let call = chars.get(next) == Some(&'(')
                    || (next > i && matches!(following.as_str(), "by" | "without"));
                let lower = word.to_ascii_lowercase();
                if KEYWORDS.contains(&lower.as_str()) {
                    if call {
                        // A label list: by (le, tier), on (instance), …
                        i = skip_group(next, '(', ')');
                    }
                } else if !call {
                    names.push(word);
                }
            }
            _ => i += 1,
        }
    }
    names
}

/// The index of the quote closing the string that opens at `start`.
fn skip_string(chars: &[char], start: usize) -> usize {
    let quote = chars[start];
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' if quote != '`' => i += 2,
            c if c == quote => return i,
            _ => i += 1,
        }
    }
    panic!(
        "unterminated string in {:?}",
        chars.iter().collect::<String>()
    );
}

/// The series names a scrape serves, as PromQL sees them: counters and
/// gauges by name, a histogram as its `_bucket`, `_sum` and `_count`
/// series (not by its bare family name).
pub(crate) fn served_names(scrape: &Scrape) -> BTreeSet<String> {
    scrape
        .samples
        .iter()
        .map(|sample| match sample.value {
            Value::Histogram(_) => format!("{}_bucket", sample.metric),
            _ => sample.metric.clone(),
        })
        .collect()
}

/// (where, name) of every metric the dashboard uses that `served` lacks.
fn missing(queries: &[(String, String)], served: &BTreeSet<String>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (place, expr) in queries {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "{place}: no metric in {expr:?}");
        for name in names {
            if !served.contains(&name) {
                out.push((place.clone(), name));
            }
        }
    }
    out
}

/// The prefix of the metrics `strata serve --metrics` exports (the
/// dashboard's JSON-RPC row); every other metric is the store's.
const RPC_PREFIX: &str = "strata_rpc_";

/// The dashboard's queries whose metrics `exporter` serves: the JSON-RPC
/// row's (`serve`) or the store's (`replay`). A query never mixes them.
fn queries_of(exporter: Exporter) -> Vec<(String, String)> {
    queries(&load())
        .into_iter()
        .filter(|(place, expr)| {
            let names = metric_names(expr);
            let rpc = names.iter().filter(|n| n.starts_with(RPC_PREFIX)).count();
            assert!(
                rpc == 0 || rpc == names.len(),
                "{place}: {expr:?} mixes serve's and the store's metrics"
            );
            (rpc > 0) == (exporter == Exporter::Serve)
        })
        .collect()
}

/// Which `--metrics` endpoint a metric comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exporter {
    /// A store's (`strata replay --metrics`).
    Store,
    /// `strata serve --metrics`.
    Serve,
}

/// Asserts that every metric name of the dashboard's queries that
/// `exporter` serves is in `scrape` (a live scrape of that endpoint).
pub(crate) fn assert_dashboard_metrics_served(exporter: Exporter, scrape: &Scrape) {
    let queries = queries_of(exporter);
    assert!(
        !queries.is_empty(),
        "no query of the dashboard reads {exporter:?}"
    );
    let missing = missing(&queries, &served_names(scrape));
    assert!(
        missing.is_empty(),
        "the dashboard queries metrics the endpoint does not serve: {missing:?}"
    );
}

#[test]
fn metric_names_are_parsed_out_of_promql() {
    let names = |expr: &str| metric_names(expr);
    assert_eq!(
        names(
            r#"histogram_quantile(0.99, sum by (le, tier, regime) (rate(strata_read_duration_seconds_bucket{instance=~"$instance", domain=~"a|b"}[$__rate_interval])))"#
        ),
        ["strata_read_duration_seconds_bucket"]
    );
    assert_eq!(
        names(
            r#"sum(rate(a_total{x="rate(b_total)"}[5m] offset 1h)) / on (instance) group_left (job) sum without (le) (c:recorded) > bool 0.5e3"#
        ),
        ["a_total", "c:recorded"]
    );
    assert_eq!(
        names("60 * sum by (step) (rate(strata_x_count[${__rate_interval}]))"),
        ["strata_x_count"]
    );
    assert_eq!(names("max(up) and ON(job) down"), ["up", "down"]);
    assert_eq!(
        names("topk without (le) (3, x) or count BY(a)(y)"),
        ["x", "y"]
    );
    assert!(names("vector(1) + 2").is_empty());
}

#[test]
fn a_misspelled_or_bare_histogram_name_is_reported() {
    let exposition = "\
# TYPE strata_blocks_committed_total counter
strata_blocks_committed_total 3
# TYPE strata_block_root_duration_seconds histogram
strata_block_root_duration_seconds_bucket{le=\"0.1\"} 1
strata_block_root_duration_seconds_bucket{le=\"+Inf\"} 2
strata_block_root_duration_seconds_sum 0.3
strata_block_root_duration_seconds_count 2
";
    let scrape = Scrape::parse(exposition.lines().map(|l| Ok(l.to_owned()))).unwrap();
    let served = served_names(&scrape);
    let query = |expr: &str| vec![("panel".to_owned(), expr.to_owned())];
    let bad = |expr: &str| -> Vec<String> {
        missing(&query(expr), &served)
            .into_iter()
            .map(|(_, name)| name)
            .collect()
    };
    assert!(bad("rate(strata_blocks_committed_total[1m])").is_empty());
    assert!(bad("histogram_quantile(0.5, sum by (le) (rate(strata_block_root_duration_seconds_bucket[1m])))").is_empty());
    assert!(bad("rate(strata_block_root_duration_seconds_sum[1m]) / rate(strata_block_root_duration_seconds_count[1m])").is_empty());
    assert_eq!(
        bad("rate(strata_blocks_comitted_total[1m])"),
        ["strata_blocks_comitted_total"]
    );
    assert_eq!(
        bad("rate(strata_block_root_duration_seconds[1m])"),
        ["strata_block_root_duration_seconds"]
    );
    assert_eq!(
        bad("strata_blocks_committed_total_bucket"),
        ["strata_blocks_committed_total_bucket"]
    );
}

#[test]
fn the_dashboard_asks_for_prometheus_and_covers_the_store() {
    let dashboard = load();
    assert_eq!(dashboard.title, "strata");
    assert!(!dashboard.uid.is_empty());
    let input = dashboard
        .inputs
        .iter()
        .find(|i| i.name == "DS_PROMETHEUS")
        .expect("a DS_PROMETHEUS input");
    assert_eq!(
        (input.kind.as_str(), input.plugin_id.as_str()),
        ("datasource", "prometheus")
    );

    let panels = all_panels(&dashboard.panels);
    let mut titles = BTreeSet::new();
    for panel in &panels {
        assert!(
            titles.insert(&panel.title),
            "two panels titled {:?}",
            panel.title
        );
        if panel.kind == "row" {
            continue;
        }
        assert!(
            !panel.targets.is_empty(),
            "panel {:?} has no query",
            panel.title
        );
        for target in &panel.targets {
            assert_eq!(
                (
                    target.datasource.kind.as_str(),
                    target.datasource.uid.as_str()
                ),
                ("prometheus", "${DS_PROMETHEUS}"),
                "panel {:?}",
                panel.title
            );
        }
    }

    let queries = queries(&dashboard);
    let used: BTreeSet<String> = queries.iter().flat_map(|(_, e)| metric_names(e)).collect();
    for name in [
        "strata_blocks_committed_total",
        "strata_block_commit_duration_seconds_bucket",
        "strata_block_root_duration_seconds_bucket",
        "strata_block_journal_write_duration_seconds_bucket",
        "strata_flush_duration_seconds_bucket",
        "strata_read_duration_seconds_bucket",
        "strata_branch_cache_hits_total",
        "strata_branch_cache_misses_total",
        "strata_warmers",
        "strata_warmer_loads_total",
        "strata_files",
        "strata_file_bytes",
        "strata_maintenance_duration_seconds_bucket",
        "strata_head_block",
        "strata_poisoned",
        "strata_rpc_requests_total",
        "strata_rpc_request_seconds_bucket",
    ] {
        assert!(used.contains(name), "the dashboard does not show {name}");
    }
    // Read latency p50 and p99 split by tier and regime.
    for quantile in ["0.5", "0.99"] {
        assert!(
            queries.iter().any(
                |(_, e)| e.contains(&format!("histogram_quantile({quantile},"))
                    && e.contains("by (le, tier, regime)")
                    && e.contains("strata_read_duration_seconds_bucket")
            ),
            "no read-latency quantile {quantile} per tier and regime"
        );
    }
}
