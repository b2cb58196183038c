//! Which stripe of a striped counter this thread writes: shared by the
//! cache's counters and strata-storage's read telemetry, so a thread lands
//! on the same stripe index in both.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Stripes per striped counter: up to this many threads count at once
/// without sharing a cache line.
pub const STRIPES: usize = 16;

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's stripe in `0..STRIPES`, assigned round-robin on first use.
#[inline]
pub fn thread_stripe() -> usize {
    STRIPE.with(|s| {
        let current = s.get();
        if current != usize::MAX {
            return current;
        }
        let assigned = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
        s.set(assigned);
        assigned
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_keeps_its_stripe_and_threads_spread() {
        let mine = thread_stripe();
        assert_eq!(thread_stripe(), mine);
        let others: std::collections::BTreeSet<usize> = (0..STRIPES)
            .map(|_| std::thread::spawn(thread_stripe).join().unwrap())
            .collect();
        assert!(others.iter().all(|&s| s < STRIPES));
        assert!(others.len() > 1, "{others:?}");
    }
}
