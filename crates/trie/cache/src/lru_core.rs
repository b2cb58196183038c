//! A byte-bounded LRU (on the `lru` crate) and the load path the two LRU
//! baselines share.

use std::sync::{Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use lru::LruCache;

use crate::single_flight::SingleFlight;
use crate::stats::Counters;
use crate::{LoadError, Lookup, entry_weight};

/// An unbounded-count LRU that evicts by total weight in bytes.
pub(crate) struct ByteLru {
    map: LruCache<Vec<u8>, Bytes>,
    weight: u64,
    capacity: u64,
    /// Bumped by every remove and clear, so a load that overlapped one does
    /// not resurrect what it removed.
    epoch: u64,
}

impl ByteLru {
    pub(crate) fn new(capacity: u64) -> Self {
        Self {
            map: LruCache::unbounded(),
            weight: 0,
            capacity,
            epoch: 0,
        }
    }

    /// Looks `key` up and marks it most recently used (hence `&mut`).
    pub(crate) fn get(&mut self, key: &[u8]) -> Option<Bytes> {
        self.map.get(key).cloned()
    }

    /// Stores `value`, then evicts least recently used entries until the
    /// weight fits. Returns how many entries were evicted or rejected.
    pub(crate) fn insert(&mut self, key: &[u8], value: Bytes) -> u64 {
        let weight = entry_weight(key, &value);
        if weight > self.capacity {
            self.take(key);
            return 1;
        }
        if let Some(old) = self.map.put(key.to_vec(), value) {
            self.weight -= entry_weight(key, &old);
        }
        self.weight += weight;
        let mut evicted = 0;
        while self.weight > self.capacity {
            match self.map.pop_lru() {
                Some((k, v)) => {
                    self.weight -= entry_weight(&k, &v);
                    evicted += 1;
                }
                None => break,
            }
        }
        evicted
    }

    fn take(&mut self, key: &[u8]) {
        if let Some(old) = self.map.pop(key) {
            self.weight -= entry_weight(key, &old);
        }
    }

    pub(crate) fn remove(&mut self, key: &[u8]) {
        self.take(key);
        self.epoch += 1;
    }

    pub(crate) fn clear(&mut self) {
        self.map.clear();
        self.weight = 0;
        self.epoch += 1;
    }

    pub(crate) fn len(&self) -> u64 {
        self.map.len() as u64
    }

    pub(crate) fn weight(&self) -> u64 {
        self.weight
    }
}

/// Locks a shard; a poisoned lock still holds a consistent LRU (no method
/// panics half-way), so its guard is used as is.
pub(crate) fn lock(shard: &Mutex<ByteLru>) -> MutexGuard<'_, ByteLru> {
    shard.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `get_or_load` for an LRU shard: hit under the lock, else coalesce the load
/// through `flights`, re-check (a concurrent leader may just have finished),
/// load, and insert unless the key was written or removed meanwhile.
pub(crate) fn get_or_load(
    shard: &Mutex<ByteLru>,
    flights: &SingleFlight,
    counters: &Counters,
    key: &[u8],
    load: &mut dyn FnMut() -> Result<Option<Bytes>, LoadError>,
) -> Result<Lookup, LoadError> {
    if let Some(value) = lock(shard).get(key) {
        counters.lookup(true);
        return Ok(Lookup {
            value: Some(value),
            hit: true,
        });
    }
    let lookup = flights.run(key, || {
        let epoch = {
            let mut guard = lock(shard);
            if let Some(value) = guard.get(key) {
                return Ok(Lookup {
                    value: Some(value),
                    hit: true,
                });
            }
            guard.epoch
        };
        let value = load()?;
        if let Some(value) = &value {
            let mut guard = lock(shard);
            if guard.epoch == epoch && !guard.map.contains(key) {
                let evicted = guard.insert(key, value.clone());
                drop(guard);
                counters.inserts.add(1);
                counters.evictions.add(evicted);
            }
        }
        Ok(Lookup { value, hit: false })
    });
    if let Ok(found) = &lookup {
        counters.lookup(found.hit);
    }
    lookup
}
