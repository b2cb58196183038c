//! `strata gen-trace`: write a synthetic trace (see `generator`).

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use clap::Args;
use clap::builder::RangedU64ValueParser;
use strata_trace::TraceWriter;
use strata_trace::generator::{
    GenConfig, GenOutputError, GenSummary, MAX_BLOCKS, MAX_GENESIS_ACCOUNTS, MAX_PER_BLOCK,
    MAX_SLOTS_PER_ACCOUNT, SlotDensity, generate_with,
};

use crate::output_file::{OutputFile, Protected};
use crate::{CliError, FlagError};

/// Arguments of `strata gen-trace`.
#[derive(Debug, Clone, Args)]
pub struct GenTraceArgs {
    /// Externally owned accounts in the genesis (accounts + contracts at
    /// most 10,000,000: the generator keeps the whole state in memory).
    #[arg(long, value_name = "A", value_parser = genesis_count())]
    pub accounts: usize,
    /// Contracts in the genesis.
    #[arg(long, value_name = "C", value_parser = genesis_count())]
    pub contracts: usize,
    /// Mean non-zero storage slots per genesis account (EOAs and contracts),
    /// spread over the contracts by popularity; 0 to 100, e.g. 3 for a
    /// mainnet-like density (default: about 2, as the earlier traces had).
    #[arg(long, value_name = "X", value_parser = slots_per_account)]
    pub slots_per_account: Option<f64>,
    /// Number of blocks (at most 100,000,000).
    #[arg(long, value_name = "B", value_parser = clap::value_parser!(u64).range(0..=MAX_BLOCKS))]
    pub blocks: u64,
    /// RNG seed (same arguments → same bytes).
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// Output file (default: standard output).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write the genesis state to FILE as a line-by-line state dump (what
    /// `init --state` and `replay --genesis` read) and leave the genesis
    /// line out of the trace: no giant line for a large state.
    #[arg(long, value_name = "FILE")]
    pub state_out: Option<PathBuf>,
    /// Accounts read per block (default 1500, scaled down for small states).
    #[arg(long, value_parser = per_block_count())]
    pub account_reads: Option<usize>,
    /// Accounts written per block (default 700, scaled down).
    #[arg(long, value_parser = per_block_count())]
    pub account_writes: Option<usize>,
    /// Slots read per block (default 5000, scaled down).
    #[arg(long, value_parser = per_block_count())]
    pub slot_reads: Option<usize>,
    /// Slots written per block (default 1500, scaled down).
    #[arg(long, value_parser = per_block_count())]
    pub slot_writes: Option<usize>,
}

fn genesis_count() -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::new().range(0..=MAX_GENESIS_ACCOUNTS as u64)
}

fn slots_per_account(text: &str) -> Result<f64, String> {
    let x: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number"))?;
    if (0.0..=MAX_SLOTS_PER_ACCOUNT).contains(&x) {
        Ok(x)
    } else {
        Err(format!("{text} is not in 0..={MAX_SLOTS_PER_ACCOUNT}"))
    }
}

fn per_block_count() -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::new().range(0..=MAX_PER_BLOCK as u64)
}

pub(super) fn run(args: GenTraceArgs) -> Result<(), CliError> {
    if args.accounts + args.contracts > MAX_GENESIS_ACCOUNTS {
        return Err(FlagError::TooManyAccounts {
            accounts: args.accounts,
            contracts: args.contracts,
            most: MAX_GENESIS_ACCOUNTS,
        }
        .into());
    }
    let config = GenConfig {
        accounts: args.accounts,
        contracts: args.contracts,
        blocks: args.blocks,
        seed: args.seed,
        account_reads: args.account_reads,
        account_writes: args.account_writes,
        slot_reads: args.slot_reads,
        slot_writes: args.slot_writes,
    };
    let density = args
        .slots_per_account
        .map_or(SlotDensity::Default, SlotDensity::PerAccount);
    // The outputs are written beside their targets and renamed into
    // place once whole; the two may not name one file.
    let mut protected = Protected::new();
    let mut state_file = args
        .state_out
        .as_deref()
        .map(|path| OutputFile::create("--state-out", path, &mut protected))
        .transpose()?;
    let trace_file = args
        .out
        .as_deref()
        .map(|path| OutputFile::create("--out", path, &mut protected))
        .transpose()?;
    let state_out = state_file.as_mut().map(|w| w as &mut dyn Write);
    let summary = match trace_file {
        Some(file) => {
            let path = file.path().to_owned();
            let mut writer = TraceWriter::new(file);
            let summary = generate_with(&config, density, &mut writer, state_out)
                .map_err(|e| output_error(e, CliError::file(&path), &args))?;
            writer.finish().map_err(CliError::file(&path))?.finish()?;
            summary
        }
        None => {
            let stdout = std::io::stdout().lock();
            let mut writer = TraceWriter::new(BufWriter::new(stdout));
            let summary = generate_with(&config, density, &mut writer, state_out)
                .map_err(|e| output_error(e, CliError::Output, &args))?;
            writer
                .finish()
                .map_err(CliError::Output)?
                .flush()
                .map_err(CliError::Output)?;
            summary
        }
    };
    if let Some(file) = state_file {
        file.finish()?;
    }
    let to = args
        .out
        .as_ref()
        .map_or_else(|| "standard output".to_owned(), |p| p.display().to_string());
    eprintln!("{}", sentence(&summary, &to));
    Ok(())
}

/// The error of a failed write, naming the output it went to: the trace
/// (`trace_error`: its file or standard output) or the `--state-out` file.
fn output_error(
    error: GenOutputError,
    trace_error: impl FnOnce(std::io::Error) -> CliError,
    args: &GenTraceArgs,
) -> CliError {
    match (error, &args.state_out) {
        (GenOutputError::State(e), Some(path)) => CliError::file(path)(e),
        (GenOutputError::State(e) | GenOutputError::Trace(e), _) => trace_error(e),
    }
}

/// What `gen-trace` tells on stderr once the trace is written, e.g.
/// "gen-trace: wrote 30 blocks to t.jsonl in 0.41 s: a genesis of 320
/// accounts and 1,100 slots (root 0x…), then per block on average …".
fn sentence(summary: &GenSummary, to: &str) -> String {
    let [account_reads, account_writes, slot_reads, slot_writes] = summary
        .mean_touches
        .map(|mean| thousands(mean.round() as u64));
    format!(
        "gen-trace: wrote {blocks} to {to} in {total:.2} s: a genesis of {accounts} and {slots} \
         (root {genesis_root}), then per block on average {account_reads} account reads, \
         {account_writes} account writes, {slot_reads} slot reads and {slot_writes} slot writes; \
         the final state has {final_accounts} (root {final_root}); the model's roots took {roots:.2} s.",
        blocks = counted(summary.blocks, "block"),
        total = summary.total_time.as_secs_f64(),
        accounts = counted(summary.genesis_accounts as u64, "account"),
        slots = counted(summary.genesis_slots as u64, "slot"),
        genesis_root = summary.genesis_root,
        final_accounts = counted(summary.final_accounts as u64, "account"),
        final_root = summary.final_root,
        roots = summary.root_time.as_secs_f64(),
    )
}

/// `n` with a comma between each group of three digits: 1,234,567.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// "1 block", "1,000 blocks".
fn counted(n: u64, noun: &str) -> String {
    let plural = if n == 1 { "" } else { "s" };
    format!("{} {noun}{plural}", thousands(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits_by_three() {
        let cases = [
            (0, "0"),
            (7, "7"),
            (999, "999"),
            (1_000, "1,000"),
            (12_345, "12,345"),
            (1_234_567, "1,234,567"),
            (u64::MAX, "18,446,744,073,709,551,615"),
        ];
        for (n, text) in cases {
            assert_eq!(thousands(n), text);
        }
        assert_eq!(counted(1, "block"), "1 block");
        assert_eq!(counted(1_000, "block"), "1,000 blocks");
    }

    #[test]
    fn slots_per_account_is_a_bounded_number() {
        assert_eq!(slots_per_account("3"), Ok(3.0));
        assert_eq!(slots_per_account("0.5"), Ok(0.5));
        assert_eq!(slots_per_account("100"), Ok(100.0));
        for bad in ["-1", "100.5", "NaN", "inf", "three", ""] {
            assert!(slots_per_account(bad).is_err(), "{bad}");
        }
    }
}
