//! The files of a generated chain: `genesis.json` (a geth genesis: config,
//! header fields, allocation), the same genesis split in two for a state
//! too large for one JSON document — `state.jsonl` (the allocation as the
//! state dump `strata init --state` reads) and `chain.json` (the genesis
//! without its allocation: chain id, fork rules, header fields) — and
//! `chain.rlp` (the blocks after the genesis, each `Block<TxEnvelope>`'s
//! RLP, concatenated). Each file is
//! written beside its final name and renamed over it once whole, so a
//! failed or stopped run leaves no truncated file under a final name.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use alloy_genesis::Genesis;
use alloy_primitives::{B256, U256};
use alloy_rlp::Encodable;
use strata_storage::dump::DumpWriter;

use crate::config::{Fork, GenConfig};
use crate::error::GenError;
use crate::generator::{GeneratedBlock, Generator};
use crate::mix::TxShape;

/// The genesis file's name in the output folder.
pub const GENESIS_FILE: &str = "genesis.json";
/// The chain file's name in the output folder.
pub const CHAIN_FILE: &str = "chain.rlp";
/// The file of an Amsterdam chain's block access lists (EIP-7928): each
/// block's list as the RLP its header's `blockAccessListHash` hashes, one
/// after another in the order of `chain.rlp` (the engine API carries it
/// beside the block, as `import-chain --access-lists` takes it).
pub const ACCESS_LISTS_FILE: &str = "access-lists.rlp";

/// The genesis state's dump (`strata init --state`).
pub const STATE_FILE: &str = "state.jsonl";

/// The genesis without its allocation (`strata init --chain`).
pub const CHAIN_CONFIG_FILE: &str = "chain.json";

/// What a generation wrote and took.
#[derive(Clone, Debug, Default)]
pub struct ChainSummary {
    /// Accounts in the genesis state (EOAs, contracts, system contracts).
    pub genesis_accounts: usize,
    /// Accounts in the state after the last block.
    pub final_accounts: usize,
    /// Blocks written.
    pub blocks: u64,
    /// Transactions in them.
    pub transactions: usize,
    /// Gas they used.
    pub gas_used: u64,
    /// Transactions that reverted.
    pub reverted: usize,
    /// Transactions by shape.
    pub shapes: BTreeMap<TxShape, usize>,
    /// The genesis hash.
    pub genesis_hash: B256,
    /// The last block's hash and state root.
    pub head: (u64, B256, B256),
    /// Bytes of `genesis.json`.
    pub genesis_bytes: u64,
    /// Bytes of `state.jsonl`.
    pub state_bytes: u64,
    /// Bytes of `chain.rlp`.
    pub chain_bytes: u64,
    /// Bytes of `access-lists.rlp` (Amsterdam chains only).
    pub access_list_bytes: Option<u64>,
    /// Drawing the population and building the genesis state and file.
    pub setup: Duration,
    /// Choosing, signing and executing transactions, all blocks.
    pub execution: Duration,
    /// State roots, all blocks.
    pub root: Duration,
    /// The whole run.
    pub total: Duration,
}

/// A file being written under a temporary name beside `path`.
struct PendingFile {
    path: PathBuf,
    temp: PathBuf,
    writer: BufWriter<File>,
    bytes: u64,
}

impl PendingFile {
    fn create(path: PathBuf) -> Result<Self, GenError> {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".tmp");
        let temp = path.with_file_name(name);
        let file = File::create(&temp).map_err(|source| GenError::Write {
            path: temp.clone(),
            source,
        })?;
        Ok(Self {
            path,
            temp,
            writer: BufWriter::with_capacity(1 << 20, file),
            bytes: 0,
        })
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), GenError> {
        self.bytes += bytes.len() as u64;
        self.writer
            .write_all(bytes)
            .map_err(|source| GenError::Write {
                path: self.temp.clone(),
                source,
            })
    }

    fn finish(self) -> Result<u64, GenError> {
        let failed = |path: &Path| {
            let path = path.to_owned();
            move |source| GenError::Write { path, source }
        };
        let file = self
            .writer
            .into_inner()
            .map_err(|error| failed(&self.temp)(error.into_error()))?;
        file.sync_all().map_err(failed(&self.temp))?;
        std::fs::rename(&self.temp, &self.path).map_err(failed(&self.path))?;
        Ok(self.bytes)
    }
}

/// A dump written through the pending file counts its bytes too.
impl Write for PendingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = self.writer.write(buf)?;
        self.bytes += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush()
    }
}

/// Generates the chain `config` describes into `dir` (created if absent):
/// `genesis.json` first, then `chain.rlp`. `progress` sees each block.
pub fn write_chain(
    config: &GenConfig,
    dir: &Path,
    mut progress: impl FnMut(&GeneratedBlock),
) -> Result<ChainSummary, GenError> {
    let started = Instant::now();
    config.validate()?;
    std::fs::create_dir_all(dir).map_err(|source| GenError::Write {
        path: dir.to_owned(),
        source,
    })?;
    let mut files = (0, 0);
    let mut generator = Generator::writing_genesis(config, |genesis, state_root| {
        let mut genesis_file = PendingFile::create(dir.join(GENESIS_FILE))?;
        let temp = genesis_file.temp.clone();
        write_genesis_json(genesis, &mut genesis_file)
            .map_err(|source| GenError::Write { path: temp, source })?;
        files = (
            genesis_file.finish()?,
            write_split_genesis(genesis, state_root, dir)?,
        );
        Ok(())
    })?;
    let (genesis_bytes, state_bytes) = files;
    let mut summary = ChainSummary {
        genesis_accounts: generator.world().accounts(),
        genesis_hash: generator.head().1,
        genesis_bytes,
        state_bytes,
        setup: started.elapsed(),
        ..Default::default()
    };

    let mut chain_file = PendingFile::create(dir.join(CHAIN_FILE))?;
    let mut lists_file = match config.fork {
        Fork::Amsterdam => Some(PendingFile::create(dir.join(ACCESS_LISTS_FILE))?),
        _ => {
            // An earlier Amsterdam chain's lists would not be this chain's.
            let stale = dir.join(ACCESS_LISTS_FILE);
            match std::fs::remove_file(&stale) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(GenError::Write {
                        path: stale,
                        source,
                    });
                }
            }
            None
        }
    };
    let mut rlp = Vec::new();
    for _ in 0..config.blocks {
        let generated = generator.next_block()?;
        rlp.clear();
        generated.block.encode(&mut rlp);
        chain_file.put(&rlp)?;
        if let (Some(file), Some(list)) = (lists_file.as_mut(), &generated.access_list) {
            rlp.clear();
            alloy_rlp::encode_list(list, &mut rlp);
            file.put(&rlp)?;
        }
        summary.blocks += 1;
        summary.transactions += generated.block.body.transactions.len();
        summary.gas_used += generated.block.header.gas_used;
        summary.reverted += generated.reverted;
        for (shape, count) in &generated.shapes {
            *summary.shapes.entry(*shape).or_insert(0) += count;
        }
        summary.execution += generated.execution;
        summary.root += generated.root;
        progress(&generated);
    }
    summary.chain_bytes = chain_file.finish()?;
    if let Some(file) = lists_file {
        summary.access_list_bytes = Some(file.finish()?);
    }
    let (head, hash) = generator.head();
    summary.head = (head.number, hash, head.state_root);
    summary.final_accounts = generator.world().accounts();
    summary.total = started.elapsed();
    Ok(summary)
}

/// Writes `genesis` as JSON to `out` an account at a time: the fields but
/// `alloc` as serde writes them, then `alloc` entry by entry (the same
/// document as `serde_json::to_writer(genesis)`, without holding it whole).
fn write_genesis_json(genesis: &Genesis, mut out: impl Write) -> std::io::Result<()> {
    let without_alloc = Genesis {
        alloc: Default::default(),
        ..genesis.clone()
    };
    let serde_json::Value::Object(mut fields) = serde_json::to_value(&without_alloc)? else {
        return Err(std::io::Error::other(
            "a genesis serializes to a JSON object",
        ));
    };
    fields.remove("alloc");
    out.write_all(b"{")?;
    for (name, value) in &fields {
        serde_json::to_writer(&mut out, name)?;
        out.write_all(b":")?;
        serde_json::to_writer(&mut out, value)?;
        out.write_all(b",")?;
    }
    out.write_all(b"\"alloc\":{")?;
    for (index, (address, account)) in genesis.alloc.iter().enumerate() {
        if index > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut out, address)?;
        out.write_all(b":")?;
        serde_json::to_writer(&mut out, account)?;
    }
    out.write_all(b"}}")
}

/// Writes `genesis` split in two into `dir`: its allocation as a state dump
/// whose root line is `state_root` (`state.jsonl`, accounts in address
/// order, zero slots left out), and the rest (`chain.json`). Returns the
/// dump's bytes.
fn write_split_genesis(genesis: &Genesis, state_root: B256, dir: &Path) -> Result<u64, GenError> {
    let mut state_file = PendingFile::create(dir.join(STATE_FILE))?;
    let failed = |path: &Path| {
        let path = path.to_owned();
        move |source| GenError::Write { path, source }
    };
    let temp = state_file.temp.clone();
    let mut dump = DumpWriter::new(&mut state_file, state_root).map_err(failed(&temp))?;
    for (address, account) in &genesis.alloc {
        let storage = account
            .storage
            .iter()
            .flatten()
            .filter_map(|(slot, value)| {
                let value = U256::from_be_bytes(value.0);
                (!value.is_zero()).then_some((*slot, value))
            });
        dump.account(
            *address,
            account.nonce.unwrap_or(0),
            account.balance,
            &account.code.clone().unwrap_or_default(),
            storage,
        )
        .map_err(failed(&temp))?;
    }
    dump.into_inner();
    let state_bytes = state_file.finish()?;

    let mut config_file = PendingFile::create(dir.join(CHAIN_CONFIG_FILE))?;
    let without_alloc = Genesis {
        alloc: Default::default(),
        ..genesis.clone()
    };
    let json = serde_json::to_vec_pretty(&without_alloc).map_err(GenError::GenesisJson)?;
    config_file.put(&json)?;
    config_file.finish()?;
    Ok(state_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_streamed_genesis_is_serdes_document() {
        let generator = Generator::new(&GenConfig::new(30, 5, 0, 4)).expect("starts");
        let mut streamed = Vec::new();
        write_genesis_json(generator.genesis(), &mut streamed).expect("writes");
        let streamed: serde_json::Value = serde_json::from_slice(&streamed).expect("JSON");
        let whole = serde_json::to_value(generator.genesis()).expect("serializes");
        assert_eq!(streamed, whole);
        let reread: Genesis = serde_json::from_value(streamed).expect("a genesis");
        assert_eq!(
            reread.alloc.len(),
            39,
            "30 EOAs, 5 contracts, the 4 system contracts of Osaka (the default fork)"
        );
        assert_eq!(reread.alloc, generator.genesis().alloc);
    }
}
