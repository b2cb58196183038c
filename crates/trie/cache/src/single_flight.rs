//! Coalescing of concurrent loads of one key: one caller loads, the others
//! wait for its result. Used by the caches that have no placeholder
//! mechanism of their own (the LRU baselines and the pinned levels).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};

use crate::{LoadError, Lookup};

/// Loads in progress, by key. Only touched on a miss.
#[derive(Default)]
pub(crate) struct SingleFlight {
    calls: Mutex<HashMap<Vec<u8>, Arc<Call>>>,
}

#[derive(Default)]
struct Call {
    state: Mutex<CallState>,
    done: Condvar,
}

#[derive(Default)]
enum CallState {
    #[default]
    Pending,
    Done(Option<Bytes>),
    Failed,
}

/// Publishes the leader's outcome even if its loader panics, so waiters
/// never hang: until `state` is set it reports a failure.
struct Finish<'a> {
    flight: &'a SingleFlight,
    key: &'a [u8],
    call: &'a Call,
    state: CallState,
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        self.flight.calls.lock().remove(self.key);
        *self.call.state.lock() = std::mem::take(&mut self.state);
        self.call.done.notify_all();
    }
}

impl SingleFlight {
    /// Runs `lead` for `key` unless another caller is already doing so, in
    /// which case this waits and shares that caller's value. `lead` returns
    /// the leader's own [`Lookup`]; waiters see `hit` = value is present.
    /// When the leader fails, a waiter takes over and runs its own `lead`.
    pub(crate) fn run(
        &self,
        key: &[u8],
        mut lead: impl FnMut() -> Result<Lookup, LoadError>,
    ) -> Result<Lookup, LoadError> {
        loop {
            let (call, leader) = {
                let mut calls = self.calls.lock();
                match calls.get(key) {
                    Some(call) => (Arc::clone(call), false),
                    None => {
                        let call = Arc::new(Call::default());
                        calls.insert(key.to_vec(), Arc::clone(&call));
                        (call, true)
                    }
                }
            };
            if leader {
                let mut finish = Finish {
                    flight: self,
                    key,
                    call: &call,
                    state: CallState::Failed,
                };
                let result = lead();
                if let Ok(lookup) = &result {
                    finish.state = CallState::Done(lookup.value.clone());
                }
                drop(finish);
                return result;
            }
            let mut state = call.state.lock();
            while matches!(*state, CallState::Pending) {
                call.done.wait(&mut state);
            }
            if let CallState::Done(value) = &*state {
                return Ok(Lookup {
                    hit: value.is_some(),
                    value: value.clone(),
                });
            }
            // The leader failed: try again, possibly as the new leader.
        }
    }
}
