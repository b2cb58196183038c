//! `--trace-out`: what each executed block read and wrote, written in
//! strata's block-trace format (book/src/reference/formats/trace.md), so that `strata
//! replay` replays an executed chain without the EVM.

use std::path::PathBuf;

use alloy_primitives::KECCAK256_EMPTY;
use strata_executor::{BlockAccess, ExecutedBlock, GenesisBlock};
use strata_trace::{AccountRead, AccountWrite, TraceBlock, TraceLine, TraceWriter};

use crate::CliError;
use crate::output_file::OutputFile;

/// The trace being written (beside its target, which it replaces only
/// when [`TraceOut::finish`]ed).
#[derive(Debug)]
pub(crate) struct TraceOut {
    /// The path as given, for messages.
    path: PathBuf,
    writer: TraceWriter<OutputFile>,
}

impl TraceOut {
    /// A trace written into `file`.
    pub(crate) fn new(file: OutputFile) -> Self {
        Self {
            path: file.path().to_owned(),
            writer: TraceWriter::new(file),
        }
    }

    /// The genesis line: the allocation and its root.
    pub(crate) fn genesis(&mut self, genesis: &GenesisBlock) -> Result<(), CliError> {
        self.write(&TraceLine::Genesis {
            alloc: genesis.alloc.clone(),
            state_root: Some(genesis.header.state_root),
        })
    }

    /// One executed block's line.
    pub(crate) fn block(
        &mut self,
        executed: &ExecutedBlock,
        access: &BlockAccess,
    ) -> Result<(), CliError> {
        self.write(&TraceLine::Block(trace_block(executed, access)))
    }

    /// Makes the whole trace appear at its path.
    pub(crate) fn finish(self) -> Result<(), CliError> {
        self.writer
            .finish()
            .map_err(CliError::file(&self.path))?
            .finish()
    }

    fn write(&mut self, line: &TraceLine) -> Result<(), CliError> {
        self.writer.write(line).map_err(CliError::file(&self.path))
    }
}

/// A block's reads and writes as a trace line.
fn trace_block(executed: &ExecutedBlock, access: &BlockAccess) -> TraceBlock {
    let reads = access
        .reads
        .iter()
        .map(|(address, read)| {
            let account = read.account.unwrap_or_default();
            let entry = AccountRead {
                balance: account.balance,
                nonce: account.nonce,
                code_hash: read.account.map(|a| a.code_hash),
                code: read
                    .code
                    .clone()
                    .filter(|_| account.code_hash != KECCAK256_EMPTY),
                storage: read.storage.clone(),
            };
            (*address, entry)
        })
        .collect();
    let writes = access
        .writes
        .iter()
        .map(|(address, write)| {
            let entry = AccountWrite {
                deleted: write.deleted,
                balance: write.account.map(|a| a.balance),
                nonce: write.account.map(|a| a.nonce),
                code: write.code.clone(),
                storage: write.storage.clone(),
            };
            (*address, entry)
        })
        .collect();
    TraceBlock {
        number: executed.number,
        gas_used: Some(executed.gas_used),
        state_root: Some(executed.root),
        reads,
        writes,
        access_list: executed.access_list.clone(),
    }
}
