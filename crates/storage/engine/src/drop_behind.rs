//! Values dropped on a thread of their own, off the commit's path.
//!
//! A snapshot taken before a flush still holds the flushed blocks' memory
//! tier; whoever lets go of it last frees every one of their keys and
//! values (about 4 % of the writer's thread's samples in an import at 1M
//! accounts, a fifth of its commit's). The writer hands them here instead.

use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;

use parking_lot::Mutex;

/// Anything sent to be dropped.
type Parcel = Box<dyn Send>;

/// A thread that drops what it is handed, until [`DropBehind::settle`].
#[derive(Default)]
pub(crate) struct DropBehind {
    state: Mutex<State>,
}

/// Where the dropping thread stands.
#[derive(Default)]
enum State {
    /// Not started yet: the first value starts it.
    #[default]
    Idle,
    Running {
        sender: Sender<Parcel>,
        thread: JoinHandle<()>,
    },
    /// Settled, or it could not start: values are dropped where they are
    /// handed.
    Settled,
}

impl DropBehind {
    /// Drops `value` on the dropping thread (started on first use); where
    /// that thread cannot start or the store is closing, here.
    pub(crate) fn drop_later(&self, value: impl Send + 'static) {
        let parcel: Parcel = Box::new(value);
        let mut state = self.state.lock();
        if matches!(*state, State::Idle) {
            let (sender, receiver) = mpsc::channel::<Parcel>();
            *state = match std::thread::Builder::new()
                .name("strata-drop".into())
                .spawn(move || for _dropped in receiver {})
            {
                Ok(thread) => State::Running { sender, thread },
                Err(error) => {
                    tracing::warn!(%error, "cannot start the dropping thread: values are dropped by the writer");
                    State::Settled
                }
            };
        }
        if let State::Running { sender, .. } = &*state {
            // A send fails only once the thread is gone: the value comes
            // back, and is dropped here.
            let _ = sender.send(parcel);
        }
    }

    /// Drops everything handed so far and stops the thread: the store's
    /// close waits for it, so that nothing of the store (its database's
    /// read transactions among them) outlives it.
    pub(crate) fn settle(&self) {
        let state = std::mem::replace(&mut *self.state.lock(), State::Settled);
        if let State::Running { sender, thread } = state {
            drop(sender);
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for DropBehind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DropBehind").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::DropBehind;

    /// Counts its drops and the threads they ran on.
    struct Counted(
        Arc<AtomicUsize>,
        Arc<parking_lot::Mutex<Vec<Option<String>>>>,
    );

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
            self.1
                .lock()
                .push(std::thread::current().name().map(str::to_string));
        }
    }

    #[test]
    fn values_are_dropped_behind_and_all_of_them_by_settle() {
        let (count, threads) = (Arc::default(), Arc::default());
        let behind = DropBehind::default();
        for _ in 0..100 {
            behind.drop_later(Counted(Arc::clone(&count), Arc::clone(&threads)));
        }
        behind.settle();
        assert_eq!(count.load(Ordering::SeqCst), 100, "settle left some");
        assert!(
            threads
                .lock()
                .iter()
                .all(|name| name.as_deref() == Some("strata-drop")),
            "dropped on the caller's thread before settle"
        );
        // Once settled, a value is dropped where it is handed.
        behind.drop_later(Counted(Arc::clone(&count), Arc::clone(&threads)));
        assert_eq!(count.load(Ordering::SeqCst), 101);
        assert_eq!(
            threads.lock().last().cloned().flatten(),
            std::thread::current().name().map(str::to_string)
        );
    }
}
