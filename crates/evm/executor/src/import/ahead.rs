//! [`SendersAhead`]: a chain's blocks read and their senders recovered on a
//! thread of their own, a few blocks ahead of the block executing, as reth's
//! and Erigon's sender recovery runs ahead of execution. The thread runs in
//! the idle scheduling class (Linux), so it takes only the CPU the block
//! leaves.

use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::JoinHandle;

use strata_chainspec::ChainSpec;

use crate::block::DecodedBlock;
use crate::senders::RecoveredSenders;

/// Blocks read ahead of the one executing.
const AHEAD: usize = 2;

/// A block read ahead, with its senders when it needed them.
type Next<T> = (T, Option<RecoveredSenders>);

/// Why [`SendersAhead::next_block`] gives no block.
#[derive(Debug, thiserror::Error)]
pub enum AheadError<E> {
    /// The source failed (it is not read past its first error).
    #[error(transparent)]
    Source(E),
    /// The reading thread panicked: the message, so that a panic never
    /// passes for the end of the chain.
    #[error("the thread reading the blocks ahead panicked: {0}")]
    Panicked(String),
}

/// The items of a source of blocks (`T`: a block and whatever its reader
/// knows of it, such as its offset in a file), each with its senders
/// recovered ahead on a thread of its own.
pub struct SendersAhead<T, E> {
    receiver: Option<Receiver<Result<Next<T>, E>>>,
    thread: Option<JoinHandle<()>>,
}

impl<T: Send + 'static, E: Send + 'static> SendersAhead<T, E> {
    /// Starts reading `source` on a thread: the senders of each block
    /// (`block_of` finds it in an item) past `recover_after` are recovered
    /// under `spec`; the blocks up to it (which an import that resumes
    /// checks, not executes) are passed on without.
    pub fn spawn<I>(
        source: I,
        spec: ChainSpec,
        recover_after: u64,
        block_of: fn(&T) -> &DecodedBlock,
    ) -> std::io::Result<SendersAhead<T, E>>
    where
        I: Iterator<Item = Result<T, E>> + Send + 'static,
    {
        let (sender, receiver) = sync_channel(AHEAD);
        let thread = std::thread::Builder::new()
            .name("strata-import-read".into())
            .spawn(move || {
                run_only_when_idle();
                for item in source {
                    let next = item.map(|item| {
                        let block = block_of(&item);
                        let senders = (block.number() > recover_after)
                            .then(|| RecoveredSenders::recover(&spec, block));
                        (item, senders)
                    });
                    let failed = next.is_err();
                    // The import stopped (its receiver is gone).
                    if sender.send(next).is_err() || failed {
                        return;
                    }
                }
            })?;
        Ok(SendersAhead {
            receiver: Some(receiver),
            thread: Some(thread),
        })
    }

    /// The next item and its senders; `None` at the source's end.
    pub fn next_block(&mut self) -> Result<Option<Next<T>>, AheadError<E>> {
        // The thread ends at the source's end (its sender dropped), after
        // its first error, or in a panic, which must not pass for the end.
        match self.receiver.as_ref().map(Receiver::recv) {
            Some(Ok(Ok(next))) => return Ok(Some(next)),
            Some(Ok(Err(error))) => return Err(AheadError::Source(error)),
            _ => {}
        }
        self.receiver.take();
        match self.thread.take().map(JoinHandle::join) {
            Some(Err(panic)) => Err(AheadError::Panicked(strata_storage::panic_message(&*panic))),
            _ => Ok(None),
        }
    }
}

impl<T, E> Drop for SendersAhead<T, E> {
    fn drop(&mut self) {
        // Its next send fails, and it stops.
        drop(self.receiver.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_error_ends_the_blocks_and_the_end_is_not_an_error() {
        let spec = ChainSpec::from_test_network("Cancun").expect("network");
        let source = vec![Err::<DecodedBlock, &str>("bad block")].into_iter();
        let mut ahead = SendersAhead::spawn(source, spec.clone(), 0, |b| b).expect("thread");
        assert!(matches!(
            ahead.next_block(),
            Err(AheadError::Source("bad block"))
        ));
        assert!(matches!(ahead.next_block(), Ok(None)));

        let empty = Vec::<Result<DecodedBlock, &str>>::new().into_iter();
        let mut ahead = SendersAhead::spawn(empty, spec, 0, |b| b).expect("thread");
        assert!(matches!(ahead.next_block(), Ok(None)));
    }

    #[test]
    fn a_panic_of_the_reader_is_an_error_not_the_end() {
        let spec = ChainSpec::from_test_network("Cancun").expect("network");
        let source = std::iter::from_fn(|| -> Option<Result<DecodedBlock, &str>> {
            panic!("the source broke")
        });
        let mut ahead = SendersAhead::spawn(source, spec, 0, |b| b).expect("thread");
        match ahead.next_block() {
            Err(AheadError::Panicked(message)) => assert!(message.contains("the source broke")),
            other => panic!("expected the panic, got {:?}", other.map(|n| n.is_some())),
        }
    }
}
