//! The chain file's blocks for the import loop: read, decoded and their
//! senders recovered one block ahead on a thread of their own (`--senders
//! ahead`, the default: the recovery of block n + 1 overlaps block n's
//! execution and commit, as reth's and Erigon's sender recovery runs ahead
//! of execution), or read inline with the senders recovered by the executor
//! (`--senders inline`).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::JoinHandle;

use strata_executor::{ChainSpec, RecoveredSenders};

use super::chain_file::{ChainFile, FileBlock};
use super::error::ImportChainError;
use crate::error::CliError;

/// Blocks read ahead of the one executing (the channel's bound): enough to
/// cover one block's execution and commit.
const AHEAD: usize = 2;

/// When a block's senders are recovered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SendersTiming {
    /// On the reading thread, while the blocks before execute.
    #[default]
    Ahead,
    /// By the executor, before the block's EVM runs.
    Inline,
}

impl SendersTiming {
    /// `ahead` or `inline`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SendersTiming::Ahead => "ahead",
            SendersTiming::Inline => "inline",
        }
    }

    /// Parses a `--senders` value.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        match text {
            "ahead" => Ok(SendersTiming::Ahead),
            "inline" => Ok(SendersTiming::Inline),
            other => Err(format!(
                "unknown senders timing {other:?} (expected ahead or inline)"
            )),
        }
    }
}

/// The next block of the file.
pub(super) struct NextBlock {
    /// The block and where it starts.
    pub(super) block: FileBlock,
    /// Its senders, when recovered ahead.
    pub(super) senders: Option<RecoveredSenders>,
    /// Bytes of the file read once it was.
    pub(super) position: usize,
}

/// The chain file's blocks, read inline or ahead.
pub(super) struct Blocks {
    path: PathBuf,
    length: u64,
    source: Source,
}

enum Source {
    Inline(ChainFile),
    Ahead {
        receiver: Option<Receiver<Result<NextBlock, CliError>>>,
        thread: Option<JoinHandle<()>>,
    },
}

impl Blocks {
    /// Opens `path`; with `Ahead`, starts the reading thread, which
    /// recovers the senders of the blocks after `resumed_after` under
    /// `spec`'s rules (the executor recovers them again if its rules for
    /// the block differ).
    pub(super) fn open(
        path: &Path,
        timing: SendersTiming,
        spec: &ChainSpec,
        resumed_after: u64,
    ) -> Result<Self, CliError> {
        let mut file = ChainFile::open(path)?;
        let length = file.len();
        let source = match timing {
            SendersTiming::Inline => Source::Inline(file),
            SendersTiming::Ahead => {
                let (sender, receiver) = sync_channel(AHEAD);
                let spec = spec.clone();
                let thread = std::thread::Builder::new()
                    .name("strata-import-read".into())
                    .spawn(move || {
                        run_only_when_idle();
                        loop {
                            let next = match file.next_block() {
                                Ok(Some(block)) => {
                                    let senders = (block.block.number() > resumed_after)
                                        .then(|| RecoveredSenders::recover(&spec, &block.block));
                                    Ok(NextBlock {
                                        block,
                                        senders,
                                        position: file.position(),
                                    })
                                }
                                Ok(None) => return,
                                Err(error) => Err(error),
                            };
                            let failed = next.is_err();
                            // The import stopped (its receiver is gone).
                            if sender.send(next).is_err() || failed {
                                return;
                            }
                        }
                    })
                    .map_err(CliError::file(path))?;
                Source::Ahead {
                    receiver: Some(receiver),
                    thread: Some(thread),
                }
            }
        };
        Ok(Self {
            path: path.to_owned(),
            length,
            source,
        })
    }

    /// The file's size in bytes.
    pub(super) fn len(&self) -> u64 {
        self.length
    }

    /// The next block, `None` at the end of the file.
    pub(super) fn next(&mut self) -> Result<Option<NextBlock>, CliError> {
        match &mut self.source {
            Source::Inline(file) => Ok(file.next_block()?.map(|block| NextBlock {
                block,
                senders: None,
                position: file.position(),
            })),
            // The thread ends at the file's end (its sender dropped), after
            // its first error, or in a panic, which must not pass for the
            // end of the file.
            Source::Ahead { receiver, thread } => {
                if let Some(Ok(next)) = receiver.as_ref().map(Receiver::recv) {
                    return next.map(Some);
                }
                receiver.take();
                match thread.take().map(JoinHandle::join) {
                    Some(Err(panic)) => Err(ImportChainError::ReaderPanicked {
                        chain: self.path.clone(),
                        message: strata_storage::panic_message(&panic),
                    }
                    .into()),
                    _ => Ok(None),
                }
            }
        }
    }
}

impl Drop for Blocks {
    fn drop(&mut self) {
        if let Source::Ahead { receiver, thread } = &mut self.source {
            // Its next send fails, and it stops.
            drop(receiver.take());
            if let Some(thread) = thread.take() {
                let _ = thread.join();
            }
        }
    }
}

/// Gives the calling thread Linux's idle scheduling class: it runs only
/// on a core nothing else wants (while a block's commit waits for its
/// fsync, or its root for the last fold), so reading ahead never takes a
/// core from the EVM or the root thread; when the import waits for the
/// next block, the cores are idle and it runs. Where the class cannot be
/// set, the thread keeps its priority (logged).
#[cfg(target_os = "linux")]
#[allow(
    unsafe_code,
    reason = "sched_setscheduler is the one way to give a thread the idle class"
)]
fn run_only_when_idle() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 names the calling thread, SCHED_IDLE takes priority 0,
    // and `param` is a valid sched_param that outlives the call.
    let status = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    if status != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "the reading thread keeps its priority");
    }
}

#[cfg(not(target_os = "linux"))]
fn run_only_when_idle() {}
