//! Named points inside the background tasks (flush, collate, merge, unwind)
//! where a test can stop a task while it drives another, so that every
//! interleaving of two tasks can be tried deterministically.
//!
//! A test builds a [`PausePoints`], hands it to the store through
//! `Options::pause_points` (feature `test-utils`), [`PausePoints::arm`]s a
//! point, starts the task, waits until the task is held there
//! ([`PausePoints::wait_reached`]), runs the other task, then
//! [`PausePoints::release`]s it. An armed point stops the first task that
//! reaches it, once; a point that is not armed costs one mutex lock, and
//! without the feature nothing at all.

// Without the feature only `reach` and the points are used, and the
// public types are not re-exported (the crate's own, so `pub` is
// unreachable there): a plain `cargo build -p strata-engine` stays quiet.
#![cfg_attr(not(feature = "test-utils"), allow(dead_code, unreachable_pub))]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// Where a task can be held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PausePoint {
    /// A maintenance run holds its lock, before it looks at any domain.
    MaintenanceStart,
    /// Collation has read the db entries of the steps it collates from a
    /// snapshot, before it builds the file.
    CollateRead,
    /// Collation has built and opened its file, before it holds flushes
    /// and commits the manifest with the prune.
    CollateBuilt,
    /// Collation's manifest and prune are committed, before the snapshot
    /// with the new file is published.
    CollateCommitted,
    /// A merge has built its file, before it holds flushes and commits the
    /// manifest.
    MergeBuilt,
    /// A merge's manifest is committed, before the merged inputs are removed.
    MergeCommitted,
    /// A flush has taken its batch of blocks, before it writes redb.
    FlushBatch,
    /// A flush committed one of its partial transactions (several keys
    /// batches), before the next.
    FlushPart,
    /// A flush's last transaction (the head) is committed, before the
    /// snapshot without those blocks is published and segments are released.
    FlushCommitted,
    /// Unwind has read the journal and recomputed the commitment, before
    /// its redb transaction.
    UnwindPrepared,
    /// Unwind's redb transaction is committed, before the journal is cut.
    UnwindCommitted,
}

impl PausePoint {
    /// Every point, in the order the tasks reach them.
    pub const ALL: [PausePoint; 11] = [
        PausePoint::MaintenanceStart,
        PausePoint::CollateRead,
        PausePoint::CollateBuilt,
        PausePoint::CollateCommitted,
        PausePoint::MergeBuilt,
        PausePoint::MergeCommitted,
        PausePoint::FlushBatch,
        PausePoint::FlushPart,
        PausePoint::FlushCommitted,
        PausePoint::UnwindPrepared,
        PausePoint::UnwindCommitted,
    ];
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gate {
    Armed,
    Held,
    Released,
}

/// The armed points of one store (see the module docs).
#[derive(Debug, Default)]
pub struct PausePoints {
    gates: Mutex<HashMap<PausePoint, Gate>>,
    changed: Condvar,
}

// A panic cannot leave a gate half-changed: each change is one insert or
// remove under the mutex, so the points stay usable across `catch_unwind`.
impl std::panic::RefUnwindSafe for PausePoints {}
impl std::panic::UnwindSafe for PausePoints {}

impl PausePoints {
    /// No point armed.
    pub fn new() -> PausePoints {
        PausePoints::default()
    }

    /// The next task to reach `point` stops there until released.
    pub fn arm(&self, point: PausePoint) {
        self.gates.lock().insert(point, Gate::Armed);
    }

    /// Waits (at most `timeout`) until a task is held at `point`; whether one is.
    pub fn wait_reached(&self, point: PausePoint, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut gates = self.gates.lock();
        while gates.get(&point) != Some(&Gate::Held) {
            if self.changed.wait_until(&mut gates, deadline).timed_out() {
                return gates.get(&point) == Some(&Gate::Held);
            }
        }
        true
    }

    /// Lets the task held (or about to be held) at `point` go on, and
    /// disarms it.
    pub fn release(&self, point: PausePoint) {
        let mut gates = self.gates.lock();
        match gates.get(&point) {
            Some(Gate::Held) => {
                gates.insert(point, Gate::Released);
            }
            _ => {
                gates.remove(&point);
            }
        }
        self.changed.notify_all();
    }

    /// Called by a task at `point`: holds it there when the point is armed.
    pub(crate) fn reach(&self, point: PausePoint) {
        let mut gates = self.gates.lock();
        if gates.get(&point) != Some(&Gate::Armed) {
            return;
        }
        gates.insert(point, Gate::Held);
        self.changed.notify_all();
        while gates.get(&point) == Some(&Gate::Held) {
            self.changed.wait(&mut gates);
        }
        gates.remove(&point);
    }
}

/// Holds the calling task at `point` when the store's options armed it.
#[inline]
pub(crate) fn reach(options: &crate::Options, point: PausePoint) {
    #[cfg(feature = "test-utils")]
    if let Some(points) = &options.pause_points {
        points.reach(point);
    }
    #[cfg(not(feature = "test-utils"))]
    let _ = (options, point);
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn an_armed_point_holds_one_task_until_released() {
        let points = Arc::new(PausePoints::new());
        points.arm(PausePoint::FlushBatch);
        let task = {
            let points = points.clone();
            std::thread::spawn(move || {
                points.reach(PausePoint::FlushBatch);
                // Disarmed after the first stop: a second arrival goes on.
                points.reach(PausePoint::FlushBatch);
            })
        };
        assert!(points.wait_reached(PausePoint::FlushBatch, Duration::from_secs(10)));
        assert!(!task.is_finished());
        points.release(PausePoint::FlushBatch);
        task.join().unwrap();
    }

    #[test]
    fn a_point_not_armed_never_holds() {
        let points = PausePoints::new();
        points.reach(PausePoint::CollateBuilt);
        assert!(!points.wait_reached(PausePoint::CollateBuilt, Duration::from_millis(10)));
    }
}
