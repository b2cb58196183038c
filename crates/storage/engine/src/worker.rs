//! The engine's background threads (the flusher and maintenance): one
//! [`Signal`] type carries requests to a thread and news of its finished
//! runs, and one [`Worker`] runs a job on each request until stopped.
//!
//! Nothing here knows what the job is: the shared state `S` and the way to
//! its signal are the caller's, so this module depends on no other.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};

/// Requests to a background thread, and news of the runs it finished.
#[derive(Default)]
pub(crate) struct Signal {
    state: Mutex<SignalState>,
    wake: Condvar,
    done: Condvar,
}

#[derive(Default)]
struct SignalState {
    /// A run was asked for since the thread last woke.
    requested: bool,
    /// The thread must end.
    stop: bool,
    /// Runs finished so far.
    runs: u64,
}

impl Signal {
    /// Asks for a run.
    pub(crate) fn request(&self) {
        self.state.lock().requested = true;
        self.wake.notify_one();
    }

    /// Tells the thread to stop.
    pub(crate) fn stop(&self) {
        self.state.lock().stop = true;
        self.wake.notify_one();
    }

    /// Waits for a request; `false` when asked to stop.
    pub(crate) fn wait_request(&self) -> bool {
        let mut state = self.state.lock();
        while !state.requested && !state.stop {
            self.wake.wait(&mut state);
        }
        state.requested = false;
        !state.stop
    }

    /// Tells the waiters of [`Signal::wait_finished`] that a run ended.
    pub(crate) fn finished(&self) {
        self.state.lock().runs += 1;
        self.done.notify_all();
    }

    /// Waits (at most `timeout`) for the next run to finish.
    pub(crate) fn wait_finished(&self, timeout: Duration) {
        let mut state = self.state.lock();
        let seen = state.runs;
        let deadline = Instant::now() + timeout;
        while state.runs == seen {
            if self.done.wait_until(&mut state, deadline).timed_out() {
                return;
            }
        }
    }
}

/// A named background thread that runs a job over the shared state `S` on
/// each request of its [`Signal`], until [`Worker::stop`].
pub(crate) struct Worker<S: Send + Sync + 'static> {
    shared: Arc<S>,
    signal: fn(&S) -> &Signal,
    thread: Option<JoinHandle<()>>,
}

impl<S: Send + Sync + 'static> Worker<S> {
    /// Starts the thread `name`; `what` names it in the error when the
    /// operating system refuses a thread.
    pub(crate) fn start(
        name: &'static str,
        what: &'static str,
        shared: Arc<S>,
        signal: fn(&S) -> &Signal,
        job: fn(&Arc<S>),
    ) -> Result<Worker<S>> {
        let state = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                while signal(&state).wait_request() {
                    job(&state);
                }
            })
            .map_err(|source| Error::Thread { what, source })?;
        Ok(Worker {
            shared,
            signal,
            thread: Some(thread),
        })
    }

    /// Stops the thread after its current run and waits for it.
    pub(crate) fn stop(mut self) {
        (self.signal)(&self.shared).stop();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
