//! What a run of BlockchainTests gave: each case's outcome, tallied per
//! fork (network) and per folder, the checks that refused the invalid
//! blocks, and the failures with their first difference.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::CaseOutcome;

/// One case's outcome and where it came from.
#[derive(Clone, Debug)]
pub struct CaseReport {
    /// The fixture file.
    pub file: PathBuf,
    /// Its folder, relative to the run's root.
    pub folder: String,
    /// The case's name.
    pub name: String,
    /// Its network (fork or transition).
    pub network: String,
    /// How it ended.
    pub outcome: CaseOutcome,
    /// Its wall time.
    pub elapsed: Duration,
}

/// Passed, failed and skipped cases of one group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Cases whose every check held.
    pub passed: usize,
    /// Cases with a failed check.
    pub failed: usize,
    /// Cases that could not be run (each with its reason in the report).
    pub skipped: usize,
}

impl Tally {
    fn add(&mut self, outcome: &CaseOutcome) {
        match outcome {
            CaseOutcome::Passed { .. } => self.passed += 1,
            CaseOutcome::Failed { .. } => self.failed += 1,
            CaseOutcome::Skipped { .. } => self.skipped += 1,
        }
    }
}

/// The whole run.
#[derive(Clone, Debug)]
pub struct Report {
    /// Every case, in file then name order.
    pub cases: Vec<CaseReport>,
    /// The run's wall time.
    pub elapsed: Duration,
}

/// The run as JSON (`strata ef-test --json`).
#[derive(Serialize)]
struct JsonReport<'a> {
    total: Tally,
    elapsed_ms: u128,
    blocks_accepted: usize,
    blocks_refused: usize,
    per_network: BTreeMap<&'a str, Tally>,
    per_folder: BTreeMap<&'a str, Tally>,
    refused_by_check: BTreeMap<&'static str, usize>,
    failures: Vec<JsonCase<'a>>,
    skips: Vec<JsonCase<'a>>,
}

#[derive(Serialize)]
struct JsonCase<'a> {
    file: String,
    case: &'a str,
    network: &'a str,
    block: Option<usize>,
    message: &'a str,
}

impl Report {
    /// A report over `cases`.
    pub fn new(cases: Vec<CaseReport>, elapsed: Duration) -> Self {
        Self { cases, elapsed }
    }

    /// All cases together.
    pub fn total(&self) -> Tally {
        let mut tally = Tally::default();
        for case in &self.cases {
            tally.add(&case.outcome);
        }
        tally
    }

    /// Cases per network, by name.
    pub fn per_network(&self) -> BTreeMap<&str, Tally> {
        self.group(|case| case.network.as_str())
    }

    /// Cases per folder, by relative path.
    pub fn per_folder(&self) -> BTreeMap<&str, Tally> {
        self.group(|case| case.folder.as_str())
    }

    /// How many invalid blocks each check refused.
    pub fn refused_by_check(&self) -> BTreeMap<&'static str, usize> {
        let mut counts = BTreeMap::new();
        for case in &self.cases {
            if let CaseOutcome::Passed { refused_by, .. } = &case.outcome {
                for check in refused_by {
                    *counts.entry(*check).or_default() += 1;
                }
            }
        }
        counts
    }

    /// Blocks accepted over all passed cases.
    pub fn blocks_accepted(&self) -> usize {
        self.cases
            .iter()
            .map(|case| match &case.outcome {
                CaseOutcome::Passed { accepted, .. } => *accepted,
                _ => 0,
            })
            .sum()
    }

    /// The failed cases.
    pub fn failures(&self) -> impl Iterator<Item = &CaseReport> {
        self.cases
            .iter()
            .filter(|case| matches!(case.outcome, CaseOutcome::Failed { .. }))
    }

    fn group<'a>(&'a self, key: impl Fn(&'a CaseReport) -> &'a str) -> BTreeMap<&'a str, Tally> {
        let mut groups: BTreeMap<&str, Tally> = BTreeMap::new();
        for case in &self.cases {
            groups.entry(key(case)).or_default().add(&case.outcome);
        }
        groups
    }

    /// The report as text lines: the per-network and per-folder tables,
    /// the refusing checks, every skip with its reason and every failure
    /// with its case, block and first difference, then the total.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        lines.push(format!(
            "{:<36} {:>7} {:>7} {:>7}",
            "network", "passed", "failed", "skipped"
        ));
        for (network, tally) in self.per_network() {
            lines.push(tally_line(network, tally));
        }
        lines.push(String::new());
        lines.push(format!(
            "{:<36} {:>7} {:>7} {:>7}",
            "folder", "passed", "failed", "skipped"
        ));
        for (folder, tally) in self.per_folder() {
            lines.push(tally_line(folder, tally));
        }
        let refused = self.refused_by_check();
        if !refused.is_empty() {
            lines.push(String::new());
            lines.push("invalid blocks refused, by check:".to_string());
            for (check, count) in &refused {
                lines.push(format!("  {check:<34} {count:>7}"));
            }
        }
        for case in &self.cases {
            if let CaseOutcome::Skipped { reason } = &case.outcome {
                lines.push(format!(
                    "skipped: {} :: {}: {reason}",
                    case.file.display(),
                    case.name
                ));
            }
        }
        for case in self.failures() {
            if let CaseOutcome::Failed { block, message } = &case.outcome {
                let at = block.map(|b| format!(" block #{b}")).unwrap_or_default();
                lines.push(format!(
                    "FAILED: {} :: {} ({}){at}: {message}",
                    case.file.display(),
                    case.name,
                    case.network
                ));
            }
        }
        let total = self.total();
        lines.push(String::new());
        lines.push(format!(
            "ef-test: {} cases, {} blocks accepted, {} refused as expected, in {:.1} s",
            self.cases.len(),
            self.blocks_accepted(),
            refused.values().sum::<usize>(),
            self.elapsed.as_secs_f64()
        ));
        lines.push(format!(
            "{} passed, {} failed, {} skipped",
            total.passed, total.failed, total.skipped
        ));
        lines
    }

    /// The report as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        let failures = self
            .cases
            .iter()
            .filter_map(|case| match &case.outcome {
                CaseOutcome::Failed { block, message } => Some(json_case(case, *block, message)),
                _ => None,
            })
            .collect();
        let skips = self
            .cases
            .iter()
            .filter_map(|case| match &case.outcome {
                CaseOutcome::Skipped { reason } => Some(json_case(case, None, reason)),
                _ => None,
            })
            .collect();
        let refused = self.refused_by_check();
        let report = JsonReport {
            total: self.total(),
            elapsed_ms: self.elapsed.as_millis(),
            blocks_accepted: self.blocks_accepted(),
            blocks_refused: refused.values().sum(),
            per_network: self.per_network(),
            per_folder: self.per_folder(),
            refused_by_check: refused,
            failures,
            skips,
        };
        serde_json::to_value(report).expect("the report serializes")
    }
}

fn json_case<'a>(case: &'a CaseReport, block: Option<usize>, message: &'a str) -> JsonCase<'a> {
    JsonCase {
        file: case.file.display().to_string(),
        case: &case.name,
        network: &case.network,
        block,
        message,
    }
}

fn tally_line(name: &str, tally: Tally) -> String {
    format!(
        "{name:<36} {:>7} {:>7} {:>7}",
        tally.passed, tally.failed, tally.skipped
    )
}
