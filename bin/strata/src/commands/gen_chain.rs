//! `strata gen-chain`: a mainnet-shaped chain of real signed transactions
//! (see strata-chain-gen): `genesis.json` and `chain.rlp` in a folder.

use std::path::PathBuf;

use clap::Args;
use strata_chain_gen::{
    ACCESS_LISTS_FILE, CHAIN_CONFIG_FILE, CHAIN_FILE, ChainSummary, DEFAULT_GAS_PER_BLOCK, Fork,
    GENESIS_FILE, GenConfig, GenError, MAX_ACCOUNTS, MAX_BLOCKS, MAX_CONTRACTS, MAX_GAS_PER_BLOCK,
    MIN_GAS_PER_BLOCK, STATE_FILE, write_chain,
};

use crate::{CliError, FlagError};

/// Arguments of `strata gen-chain`.
#[derive(Debug, Clone, Args)]
pub struct GenChainArgs {
    /// Funded EOAs in the genesis, each with a key derived from the seed
    /// (at most 10,000,000).
    #[arg(long, value_name = "A", value_parser = clap::value_parser!(u64).range(0..=MAX_ACCOUNTS))]
    pub accounts: u64,
    /// Contracts in the genesis: tokens, routers and stores (at most 1,000,000).
    #[arg(long, value_name = "C", value_parser = clap::value_parser!(u64).range(0..=MAX_CONTRACTS))]
    pub contracts: u64,
    /// Blocks after the genesis (at most 1,000,000).
    #[arg(long, value_name = "B", value_parser = clap::value_parser!(u64).range(0..=MAX_BLOCKS))]
    pub blocks: u64,
    /// Gas each block uses, about; its gas limit is twice this.
    #[arg(long, value_name = "G", default_value_t = DEFAULT_GAS_PER_BLOCK,
          value_parser = clap::value_parser!(u64).range(MIN_GAS_PER_BLOCK..=MAX_GAS_PER_BLOCK))]
    pub gas_per_block: u64,
    /// Seed of the keys and of every choice (same arguments → same bytes).
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// The fork every block runs under, active from the genesis: cancun
    /// (most of the chains strata's figures were measured on), prague,
    /// osaka (the default: the fork mainnet runs), or amsterdam (each
    /// block's access list built and hashed into its header).
    #[arg(long, value_name = "FORK", default_value = Fork::default().name(), value_parser = parse_fork)]
    pub fork: Fork,
    /// Output folder (created if absent): genesis.json, its allocation as
    /// state.jsonl and the rest as chain.json (for `init --state --chain`),
    /// chain.rlp, and for amsterdam access-lists.rlp (each block's access
    /// list, for `import-chain --access-lists`).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

pub(super) fn run(args: GenChainArgs) -> Result<(), CliError> {
    let config = GenConfig {
        accounts: args.accounts,
        contracts: args.contracts,
        blocks: args.blocks,
        gas_per_block: args.gas_per_block,
        seed: args.seed,
        fork: args.fork,
    };
    let summary = write_chain(&config, &args.out, |block| {
        let header = &block.block.header;
        tracing::info!(
            block = header.number,
            transactions = block.block.body.transactions.len(),
            gas_used = header.gas_used,
            execution_ms = block.execution.as_millis() as u64,
            root_ms = block.root.as_millis() as u64,
            "generated"
        );
    })
    .map_err(|error| match error {
        GenError::Write { path, source } => CliError::File { path, source },
        GenError::Config { .. } => FlagError::GenChain(Box::new(error)).into(),
        other => CliError::GenChain(Box::new(other)),
    })?;
    eprintln!("{}", sentence(&summary, &args.out));
    Ok(())
}

/// `--fork`'s value.
fn parse_fork(name: &str) -> Result<Fork, String> {
    [Fork::Cancun, Fork::Prague, Fork::Osaka, Fork::Amsterdam]
        .into_iter()
        .find(|fork| fork.name() == name)
        .ok_or_else(|| format!("{name} is not one of cancun, prague, osaka, amsterdam"))
}

/// What `gen-chain` tells on stderr once the files are written.
fn sentence(summary: &ChainSummary, out: &std::path::Path) -> String {
    let shapes = summary
        .shapes
        .iter()
        .map(|(shape, count)| format!("{count} {}", shape.name()))
        .collect::<Vec<_>>()
        .join(", ");
    let (number, hash, root) = summary.head;
    format!(
        "gen-chain: wrote {genesis} ({genesis_mb:.1} MB, {accounts} accounts, hash {genesis_hash}), \
         the same as {state} ({state_mb:.1} MB) and {chain_config}, \
         and {chain} ({blocks} blocks, {chain_mb:.1} MB){lists} in {out} in {total:.2} s \
         (setup {setup:.2} s, execution {execution:.2} s, roots {roots:.2} s): \
         {transactions} transactions ({shapes}; {reverted} reverted), {mgas:.1} Mgas; head block {number} {hash}, \
         state root {root}, {final_accounts} accounts",
        genesis = GENESIS_FILE,
        genesis_mb = summary.genesis_bytes as f64 / 1e6,
        state = STATE_FILE,
        state_mb = summary.state_bytes as f64 / 1e6,
        chain_config = CHAIN_CONFIG_FILE,
        accounts = summary.genesis_accounts,
        genesis_hash = summary.genesis_hash,
        chain = CHAIN_FILE,
        blocks = summary.blocks,
        chain_mb = summary.chain_bytes as f64 / 1e6,
        lists = summary
            .access_list_bytes
            .map_or(String::new(), |bytes| format!(
                " with their access lists in {ACCESS_LISTS_FILE} ({:.1} MB)",
                bytes as f64 / 1e6
            )),
        out = out.display(),
        total = summary.total.as_secs_f64(),
        setup = summary.setup.as_secs_f64(),
        execution = summary.execution.as_secs_f64(),
        roots = summary.root.as_secs_f64(),
        transactions = summary.transactions,
        reverted = summary.reverted,
        mgas = summary.gas_used as f64 / 1e6,
        final_accounts = summary.final_accounts,
    )
}
