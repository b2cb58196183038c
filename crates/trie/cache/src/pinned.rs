//! The pinned top levels of the trie: the root branch and its first two
//! levels of children, read with no lock at all.

use std::sync::Arc;

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use parking_lot::Mutex;

use crate::single_flight::SingleFlight;
use crate::stats::Counters;
use crate::{LoadError, Lookup, entry_weight};

/// Paths of at most this many nibbles are pinned: never evicted, read
/// lock-free.
pub const PINNED_DEPTH: usize = 2;

/// Slots for every pinned path: the root, 16 one-nibble and 256 two-nibble
/// paths.
pub const PINNED_SLOTS: usize = 1 + 16 + 256;

/// The dense slot of `key` when it is a pinned path (every byte a nibble,
/// length ≤ [`PINNED_DEPTH`]); other keys live in the evictable tail.
#[inline]
pub(crate) fn slot_of(key: &[u8]) -> Option<usize> {
    match *key {
        [] => Some(0),
        [a] if a < 16 => Some(1 + a as usize),
        [a, b] if a < 16 && b < 16 => Some(17 + ((a as usize) << 4) + b as usize),
        _ => None,
    }
}

/// The nibble-path length of a slot, for weighing its entry.
fn key_len(slot: usize) -> usize {
    match slot {
        0 => 0,
        1..=16 => 1,
        _ => 2,
    }
}

/// What writers keep under their (rarely contended) lock.
#[derive(Default)]
struct Book {
    /// Bumped by every remove and clear; a load that overlapped one does
    /// not store its (possibly stale) value.
    epoch: u64,
    entries: u64,
    weight: u64,
}

/// One `ArcSwapOption` per pinned path. Readers load a slot without taking
/// any lock; writers (once per block per changed top branch) serialise on a
/// small mutex that also keeps the occupancy figures.
pub(crate) struct PinnedLevels {
    slots: Box<[ArcSwapOption<Bytes>]>,
    book: Mutex<Book>,
    flights: SingleFlight,
}

impl PinnedLevels {
    pub(crate) fn new() -> Self {
        Self {
            slots: (0..PINNED_SLOTS).map(|_| ArcSwapOption::empty()).collect(),
            book: Mutex::new(Book::default()),
            flights: SingleFlight::default(),
        }
    }

    #[inline]
    pub(crate) fn get(&self, slot: usize) -> Option<Bytes> {
        self.slots[slot].load().as_deref().cloned()
    }

    /// Stores under the book lock; the caller holds it.
    fn store(&self, book: &mut Book, slot: usize, value: Option<Bytes>) {
        let len = key_len(slot);
        let key = &[0u8; PINNED_DEPTH][..len];
        if let Some(new) = &value {
            book.entries += 1;
            book.weight += entry_weight(key, new);
        }
        if let Some(old) = self.slots[slot].swap(value.map(Arc::new)) {
            book.entries -= 1;
            book.weight -= entry_weight(key, &old);
        }
    }

    pub(crate) fn insert(&self, slot: usize, value: Bytes) {
        let mut book = self.book.lock();
        self.store(&mut book, slot, Some(value));
    }

    pub(crate) fn remove(&self, slot: usize) {
        let mut book = self.book.lock();
        self.store(&mut book, slot, None);
        book.epoch += 1;
    }

    pub(crate) fn clear(&self) {
        let mut book = self.book.lock();
        for slot in 0..PINNED_SLOTS {
            self.store(&mut book, slot, None);
        }
        book.epoch += 1;
    }

    /// (entries, weight in bytes).
    pub(crate) fn occupancy(&self) -> (u64, u64) {
        let book = self.book.lock();
        (book.entries, book.weight)
    }

    pub(crate) fn get_or_load(
        &self,
        slot: usize,
        key: &[u8],
        counters: &Counters,
        load: &mut dyn FnMut() -> Result<Option<Bytes>, LoadError>,
    ) -> Result<Lookup, LoadError> {
        if let Some(value) = self.get(slot) {
            counters.lookup(true);
            return Ok(Lookup {
                value: Some(value),
                hit: true,
            });
        }
        let lookup = self.flights.run(key, || {
            let epoch = {
                let book = self.book.lock();
                if let Some(value) = self.get(slot) {
                    return Ok(Lookup {
                        value: Some(value),
                        hit: true,
                    });
                }
                book.epoch
            };
            let value = load()?;
            if let Some(value) = &value {
                let mut book = self.book.lock();
                if book.epoch == epoch && self.slots[slot].load().is_none() {
                    self.store(&mut book, slot, Some(value.clone()));
                    counters.inserts.add(1);
                }
            }
            Ok(Lookup { value, hit: false })
        });
        if let Ok(found) = &lookup {
            counters.lookup(found.hit);
        }
        lookup
    }
}
