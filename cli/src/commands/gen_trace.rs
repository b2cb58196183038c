//! `strata gen-trace`: write a synthetic trace (see `generator`).

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use clap::Args;
use clap::builder::RangedU64ValueParser;

use crate::CliError;
use crate::generator::{GenConfig, MAX_BLOCKS, MAX_GENESIS_ACCOUNTS, MAX_PER_BLOCK, generate};
use crate::trace::TraceWriter;

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
    /// Number of blocks (at most 100,000,000).
    #[arg(long, value_name = "B", value_parser = clap::value_parser!(u64).range(0..=MAX_BLOCKS))]
    pub blocks: u64,
    /// RNG seed (same arguments → same bytes).
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// Output file (default: standard output).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
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

fn per_block_count() -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::new().range(0..=MAX_PER_BLOCK as u64)
}

pub(super) fn run(args: GenTraceArgs) -> Result<(), CliError> {
    if args.accounts + args.contracts > MAX_GENESIS_ACCOUNTS {
        return Err(CliError::Usage(format!(
            "--accounts {} + --contracts {} is more than {MAX_GENESIS_ACCOUNTS} genesis accounts \
             (the generator keeps the whole state in memory, about 2.5 KiB per account)",
            args.accounts, args.contracts
        )));
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
    let summary = match &args.out {
        Some(path) => {
            let file = std::fs::File::create(path).map_err(CliError::file(path))?;
            let mut writer = TraceWriter::new(BufWriter::new(file));
            let summary = generate(&config, &mut writer).map_err(CliError::file(path))?;
            writer.finish().map_err(CliError::file(path))?;
            summary
        }
        None => {
            let stdout = std::io::stdout().lock();
            let mut writer = TraceWriter::new(BufWriter::new(stdout));
            let summary = generate(&config, &mut writer).map_err(CliError::Output)?;
            writer
                .finish()
                .map_err(CliError::Output)?
                .flush()
                .map_err(CliError::Output)?;
            summary
        }
    };
    let [ar, aw, sr, sw] = summary.mean_touches;
    eprintln!(
        "gen-trace: genesis {} accounts, {} slots, root {}\n\
         gen-trace: {} blocks; per block (mean): {ar:.0} account reads, {aw:.0} account writes, \
         {sr:.0} slot reads, {sw:.0} slot writes (targets {:?})\n\
         gen-trace: final {} accounts, root {}; model roots {:.2?}, total {:.2?}",
        summary.genesis_accounts,
        summary.genesis_slots,
        summary.genesis_root,
        summary.blocks,
        summary.shape,
        summary.final_accounts,
        summary.final_root,
        summary.root_time,
        summary.total_time,
    );
    Ok(())
}
