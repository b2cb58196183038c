//! Which stripe of a striped counter this thread writes: shared by the
//! cache's counters and strata-storage's read telemetry, so a thread lands
//! on the same stripe index in both. Up to [`OWNED_STRIPES`] live threads
//! also own a stripe no other thread writes ([`owned_stripe`]), where a
//! counter can add without a locked read-modify-write.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

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

/// Owned stripes: at most this many live threads own one at a time.
pub const OWNED_STRIPES: usize = 16;

/// Bit `i` set: owned stripe `i` belongs to a live thread.
static OWNED: AtomicU32 = AtomicU32::new(0);

/// This thread's claim on an owned stripe, given back when the thread exits.
struct Owner(Option<usize>);

impl Owner {
    fn claim() -> Self {
        let mut taken = OWNED.load(Ordering::Relaxed);
        loop {
            let free = (!taken).trailing_zeros() as usize;
            if free >= OWNED_STRIPES {
                return Owner(None);
            }
            // Acquire: see every add the stripe's previous owner made.
            match OWNED.compare_exchange_weak(
                taken,
                taken | 1 << free,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Owner(Some(free)),
                Err(now) => taken = now,
            }
        }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        if let Some(stripe) = self.0 {
            // Release: the next owner sees this thread's last add.
            OWNED.fetch_and(!(1 << stripe), Ordering::Release);
        }
    }
}

thread_local! {
    static OWNER: Owner = Owner::claim();
}

/// The stripe in `0..OWNED_STRIPES` that only this thread writes while it
/// lives, or `None` when every owned stripe is taken (or this thread is
/// exiting): then write the shared stripe [`thread_stripe`] atomically.
///
/// A single writer can add with a relaxed load and store — exact, and
/// without the locked instruction that cost ~8 of a ~50 ns cache hit.
#[inline]
pub fn owned_stripe() -> Option<usize> {
    OWNER.try_with(|owner| owner.0).ok().flatten()
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

    #[test]
    fn owned_stripes_are_exclusive_and_given_back_at_exit() {
        let mine = owned_stripe();
        assert_eq!(owned_stripe(), mine);
        // Live threads at once never share an owned stripe.
        let barrier = std::sync::Barrier::new(OWNED_STRIPES + 4);
        let owned: Vec<Option<usize>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..OWNED_STRIPES + 4)
                .map(|_| {
                    scope.spawn(|| {
                        let stripe = owned_stripe();
                        barrier.wait();
                        stripe
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut claimed: Vec<usize> = owned.iter().flatten().copied().collect();
        claimed.extend(mine);
        let count = claimed.len();
        claimed.sort_unstable();
        claimed.dedup();
        assert_eq!(claimed.len(), count, "{owned:?}");
        assert!(claimed.iter().all(|&s| s < OWNED_STRIPES));
        // Other tests' threads may hold some; ours gave theirs back.
        assert!(std::thread::spawn(owned_stripe).join().unwrap().is_some());
    }
}
