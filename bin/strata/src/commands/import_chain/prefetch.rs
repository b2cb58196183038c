//! `--prefetch TRACE`: each imported block's access list, read from a block
//! trace of the same chain (`import-chain --trace-out` writes one), checked
//! to be that block's by the state root (and gas) the trace records for it.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use strata_executor::DecodedBlock;
use strata_storage::BlockAccessList;
use strata_trace::{TraceLine, TraceReader};

use crate::CliError;
use crate::error::PrefetchError;

/// A block trace read forward, block by block, as the import goes.
pub(crate) struct PrefetchTrace {
    path: PathBuf,
    chain: PathBuf,
    reader: TraceReader<BufReader<File>>,
    /// The last block line read.
    last: Option<u64>,
}

impl PrefetchTrace {
    /// Opens the trace at `path` for the blocks of the chain file `chain`.
    pub(crate) fn open(path: &Path, chain: &Path) -> Result<Self, CliError> {
        let file = File::open(path).map_err(CliError::file(path))?;
        Ok(Self {
            path: path.to_owned(),
            chain: chain.to_owned(),
            reader: TraceReader::new(BufReader::with_capacity(1 << 20, file)),
            last: None,
        })
    }

    /// The access list of `block`, the trace's lines before it skipped;
    /// refused unless the trace's block carries the header's state root
    /// (and gas used, where the trace records it). The blocks must be
    /// asked for in increasing order.
    pub(crate) fn list_for(&mut self, block: &DecodedBlock) -> Result<BlockAccessList, CliError> {
        let number = block.number();
        loop {
            let line = self
                .reader
                .next()
                .transpose()
                .map_err(|source| CliError::Trace {
                    path: self.path.clone(),
                    source: Box::new(source),
                })?;
            let traced = match line {
                Some(TraceLine::Genesis { .. }) => continue,
                Some(TraceLine::Block(traced)) => traced,
                None => {
                    let found = match self.last {
                        Some(last) => format!("its blocks end at block {last}"),
                        None => "it holds no block".to_owned(),
                    };
                    return Err(self.missing(number, found));
                }
            };
            self.last = Some(traced.number);
            if traced.number < number {
                continue;
            }
            if traced.number > number {
                let found = format!("its blocks start at block {}", traced.number);
                return Err(self.missing(number, found));
            }
            let header = block.header();
            let root = traced.state_root.ok_or_else(|| {
                CliError::Prefetch(Box::new(PrefetchError::NoRoot {
                    trace: self.path.clone(),
                    block: number,
                }))
            })?;
            if root != header.state_root {
                return Err(self.other_chain(number, "state root", root, header.state_root));
            }
            if let Some(gas) = traced.gas_used
                && gas != header.gas_used
            {
                return Err(self.other_chain(number, "gas used", gas, header.gas_used));
            }
            return Ok(traced.access_list());
        }
    }

    fn missing(&self, block: u64, found: String) -> CliError {
        CliError::Prefetch(Box::new(PrefetchError::Missing {
            trace: self.path.clone(),
            block,
            found,
        }))
    }

    fn other_chain(
        &self,
        block: u64,
        field: &'static str,
        traced: impl ToString,
        expected: impl ToString,
    ) -> CliError {
        CliError::Prefetch(Box::new(PrefetchError::OtherChain {
            trace: self.path.clone(),
            chain: self.chain.clone(),
            block,
            field,
            traced: traced.to_string(),
            expected: expected.to_string(),
        }))
    }
}
