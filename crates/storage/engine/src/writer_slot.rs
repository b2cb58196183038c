//! The one writer a store admits at a time — a block's writer, genesis or
//! an unwind — held as an owned ticket rather than a lock guard, so a
//! [`crate::BlockWriter`] can be stored beside the store or moved to
//! another thread.

use std::sync::Arc;
use std::thread::{self, ThreadId};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};

/// Who holds the write side, and a way to wait for it.
#[derive(Default)]
pub(crate) struct WriterSlot {
    /// The thread that took the slot, while it is taken.
    holder: Mutex<Option<ThreadId>>,
    freed: Condvar,
}

/// Whether [`WriterSlot::take`] waits for a writer open elsewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Wait until the other writer is dropped or committed.
    Yes,
    /// Fail at once with [`Error::WriterBusy`].
    No,
}

impl WriterSlot {
    /// Takes the slot for the calling thread. A thread that took it and has
    /// not given it back (its writer is still alive) gets
    /// [`Error::WriterBusy`] instead of waiting for itself for ever; so does
    /// every caller with [`Wait::No`] while the slot is taken.
    fn take(&self, wait: Wait) -> Result<()> {
        let me = thread::current().id();
        let mut holder = self.holder.lock();
        while let Some(other) = *holder {
            if other == me || wait == Wait::No {
                return Err(Error::WriterBusy {
                    same_thread: other == me,
                });
            }
            self.freed.wait(&mut holder);
        }
        *holder = Some(me);
        Ok(())
    }

    fn give_back(&self) {
        *self.holder.lock() = None;
        self.freed.notify_one();
    }
}

/// The write side of a store, held until dropped. Owned and `Send`.
pub(crate) struct WriterTicket {
    slot: Arc<WriterSlot>,
}

impl WriterTicket {
    /// Takes the write side `slot` guards (first in the lock order, see
    /// `Inner`).
    pub(crate) fn take(slot: &Arc<WriterSlot>, wait: Wait) -> Result<WriterTicket> {
        slot.take(wait)?;
        Ok(WriterTicket {
            slot: Arc::clone(slot),
        })
    }
}

impl Drop for WriterTicket {
    fn drop(&mut self) {
        self.slot.give_back();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_holding_thread_is_told_busy_and_others_wait_their_turn() {
        let slot = Arc::new(WriterSlot::default());
        slot.take(Wait::Yes).unwrap();
        assert!(matches!(
            slot.take(Wait::Yes),
            Err(Error::WriterBusy { same_thread: true })
        ));
        let other = {
            let slot = slot.clone();
            thread::spawn(move || {
                let busy = slot.take(Wait::No);
                assert!(matches!(
                    busy,
                    Err(Error::WriterBusy { same_thread: false })
                ));
                slot.take(Wait::Yes).unwrap();
                slot.give_back();
            })
        };
        // The other thread waits (it cannot finish) until the slot is free.
        thread::sleep(Duration::from_millis(50));
        assert!(!other.is_finished());
        slot.give_back();
        other.join().unwrap();
        slot.take(Wait::No).unwrap();
    }
}
