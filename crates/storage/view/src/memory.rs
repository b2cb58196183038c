//! The memory tier: every committed block not yet flushed to redb.
//!
//! Account, storage and code writes are merged into one persistent map per
//! domain (newest write of each key wins). The maps are `imbl` B-trees:
//! cloning a tier is O(1) and a block's writes copy only the nodes they
//! touch, so each commit publishes a new tier in a snapshot while readers
//! of older snapshots keep theirs, untouched and without a lock.
//!
//! Commitment records — most of a block's writes, rewritten block after
//! block along the top of the trie — are kept as one small hash index per
//! block instead, newest first: adding a block is a push, and the records
//! are read from here only when the branch cache misses.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use alloy_primitives::{Address, B256, keccak256};
use bytes::Bytes;
use imbl::OrdMap;

use strata_journal::BlockRecord;
use strata_types::domain::Domain;
use strata_types::keys::STORAGE_KEY_LEN;

/// A key's newest value in the memory tier and the block that wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemValue {
    /// The block that wrote this value.
    pub block: u64,
    /// The value; `None` is a deletion (it hides older tiers).
    pub value: Option<Bytes>,
}

/// Root and hash of a block held in memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemBlock {
    /// The state root after the block.
    pub root: B256,
    /// The block's hash, where the writer gave one.
    pub hash: Option<B256>,
    /// The block's header, where the writer gave one.
    pub header: Option<Bytes>,
}

/// The commitment records one block wrote.
#[derive(Debug)]
struct RecordLayer {
    block: u64,
    records: HashMap<Bytes, Option<Bytes>, foldhash::fast::RandomState>,
}

/// The committed, unflushed blocks as one view.
#[derive(Clone, Debug, Default)]
pub struct MemoryTier {
    /// Account, storage and code (the commitment's slot stays empty).
    maps: [OrdMap<Bytes, MemValue>; 4],
    /// Commitment records per block, oldest first.
    records: VecDeque<Arc<RecordLayer>>,
    /// Code stored by these blocks, by hash, with the block that stored it.
    code_by_hash: OrdMap<B256, (u64, Bytes)>,
    blocks: OrdMap<u64, MemBlock>,
    /// Raw bytes of the keys and values held (a write that replaces a key
    /// counts the new value only).
    bytes: u64,
}

fn entry_bytes(key: &[u8], value: &Option<Bytes>) -> u64 {
    (key.len() + value.as_ref().map_or(0, Bytes::len)) as u64
}

impl MemoryTier {
    /// What the tier says about `key`: `Some(None)` for a deletion, `None`
    /// when no unflushed block wrote it.
    pub fn get(&self, domain: Domain, key: &[u8]) -> Option<Option<&Bytes>> {
        if domain == Domain::Commitment {
            return self
                .records
                .iter()
                .rev()
                .find_map(|layer| layer.records.get(key))
                .map(Option::as_ref);
        }
        let map = &self.maps[domain.index()];
        if map.is_empty() {
            return None;
        }
        map.get(key).map(|found| found.value.as_ref())
    }

    /// Adds a committed block on top.
    pub fn apply(&mut self, record: &BlockRecord) {
        let mut records = HashMap::with_hasher(foldhash::fast::RandomState::default());
        for write in &record.writes {
            if write.domain == Domain::Commitment {
                self.bytes += entry_bytes(&write.key, &write.value);
                records.insert(write.key.clone(), write.value.clone());
                continue;
            }
            let value = MemValue {
                block: record.block,
                value: write.value.clone(),
            };
            self.bytes += entry_bytes(&write.key, &write.value);
            if let Some(old) = self.maps[write.domain.index()].insert(write.key.clone(), value) {
                self.bytes -= entry_bytes(&write.key, &old.value);
            }
            if write.domain == Domain::Code
                && let Some(code) = &write.value
            {
                self.code_by_hash
                    .insert(keccak256(code), (record.block, code.clone()));
            }
        }
        self.records.push_back(Arc::new(RecordLayer {
            block: record.block,
            records,
        }));
        self.blocks.insert(
            record.block,
            MemBlock {
                root: record.root,
                hash: record.hash,
                header: record.header.clone(),
            },
        );
    }

    /// Drops what `flushed` (blocks now in redb, oldest first) wrote,
    /// except keys a newer block wrote again.
    pub fn remove_flushed<'a>(&mut self, flushed: impl IntoIterator<Item = &'a BlockRecord>) {
        let mut through = None;
        for record in flushed {
            through = Some(record.block);
            for write in &record.writes {
                if write.domain == Domain::Commitment {
                    continue;
                }
                let map = &mut self.maps[write.domain.index()];
                if map
                    .get(&write.key)
                    .is_some_and(|found| found.block <= record.block)
                    && let Some(old) = map.remove(&write.key)
                {
                    self.bytes -= entry_bytes(&write.key, &old.value);
                }
            }
        }
        if let Some(through) = through {
            while let Some(layer) = self.records.front().filter(|l| l.block <= through) {
                let freed: u64 = layer
                    .records
                    .iter()
                    .map(|(key, value)| entry_bytes(key, value))
                    .sum();
                self.bytes -= freed;
                self.records.pop_front();
            }
            self.blocks = std::mem::take(&mut self.blocks).split(&through).1;
            let flushed_code: Vec<B256> = self
                .code_by_hash
                .iter()
                .filter(|(_, (block, _))| *block <= through)
                .map(|(hash, _)| *hash)
                .collect();
            for hash in flushed_code {
                self.code_by_hash.remove(&hash);
            }
        }
    }

    /// Code stored by an unflushed block, by its hash.
    pub fn code_by_hash(&self, hash: &B256) -> Option<&Bytes> {
        self.code_by_hash.get(hash).map(|(_, code)| code)
    }

    /// Root and hash of an unflushed block.
    pub fn block(&self, number: u64) -> Option<&MemBlock> {
        self.blocks.get(&number)
    }

    /// The oldest and newest unflushed blocks.
    pub fn blocks(&self) -> Option<(u64, u64)> {
        let (first, _) = self.blocks.get_min()?;
        let (last, _) = self.blocks.get_max()?;
        Some((*first, *last))
    }

    /// Raw bytes of the keys and values held (every block's commitment
    /// records counted: each block's version is kept).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Keys held per domain.
    pub fn len(&self, domain: Domain) -> usize {
        match domain {
            Domain::Commitment => self.entries(domain).len(),
            _ => self.maps[domain.index()].len(),
        }
    }

    /// Every entry of `domain` in key order, newest write per key
    /// (deletions as `None`). A full scan, for verify and stats.
    pub fn entries(&self, domain: Domain) -> Vec<(Bytes, Option<Bytes>)> {
        if domain != Domain::Commitment {
            return self.maps[domain.index()]
                .iter()
                .map(|(key, found)| (key.clone(), found.value.clone()))
                .collect();
        }
        let mut newest = BTreeMap::new();
        for layer in &self.records {
            for (key, value) in &layer.records {
                newest.insert(key.clone(), value.clone());
            }
        }
        newest.into_iter().collect()
    }

    /// The storage entries of `address` in key order.
    /// The tier's entries of `domain` with keys ≥ `from`, in key order
    /// (newest write per key; `None` for a deletion).
    pub fn entries_from(
        &self,
        domain: Domain,
        from: &[u8],
    ) -> Box<dyn Iterator<Item = (Bytes, Option<Bytes>)> + '_> {
        if domain == Domain::Commitment {
            let from = from.to_vec();
            return Box::new(
                self.entries(domain)
                    .into_iter()
                    .filter(move |(key, _)| key.as_ref() >= from.as_slice()),
            );
        }
        Box::new(
            self.maps[domain.index()]
                .range(Bytes::copy_from_slice(from)..)
                .map(|(key, found)| (key.clone(), found.value.clone())),
        )
    }

    /// The slots of `address` the memory tier holds, in key order (the
    /// newest write of each, deletions included).
    pub fn storage_of(&self, address: &Address) -> impl Iterator<Item = (&Bytes, &MemValue)> {
        let mut lo = [0u8; STORAGE_KEY_LEN];
        lo[..20].copy_from_slice(address.as_slice());
        let mut hi = [0xffu8; STORAGE_KEY_LEN];
        hi[..20].copy_from_slice(address.as_slice());
        self.maps[Domain::Storage.index()]
            .range(Bytes::copy_from_slice(&lo)..=Bytes::copy_from_slice(&hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_journal::{Previous, RecordWrite};

    /// A test write: domain, key, value (`None` deletes).
    type Write<'a> = (Domain, &'a [u8], Option<&'a [u8]>);

    fn record(block: u64, writes: &[Write<'_>]) -> BlockRecord {
        BlockRecord {
            block,
            root: B256::repeat_byte(block as u8),
            hash: None,
            header: None,
            writes: writes
                .iter()
                .map(|(domain, key, value)| RecordWrite {
                    domain: *domain,
                    key: Bytes::copy_from_slice(key),
                    value: value.map(Bytes::copy_from_slice),
                    previous: Previous::Absent,
                })
                .collect(),
            branches_omitted: false,
        }
    }

    #[test]
    fn the_newest_write_wins_and_a_flush_keeps_what_later_blocks_wrote() {
        let one = record(
            1,
            &[
                (Domain::Account, b"a", Some(b"1")),
                (Domain::Account, b"b", Some(b"1")),
            ],
        );
        let two = record(
            2,
            &[
                (Domain::Account, b"a", Some(b"2")),
                (Domain::Account, b"c", None),
            ],
        );
        let mut tier = MemoryTier::default();
        tier.apply(&one);
        let after_one = tier.clone();
        tier.apply(&two);
        assert_eq!(
            tier.get(Domain::Account, b"a"),
            Some(Some(&Bytes::from_static(b"2")))
        );
        assert_eq!(tier.get(Domain::Account, b"c"), Some(None));
        assert_eq!(tier.get(Domain::Storage, b"a"), None);
        // An older clone is untouched by later blocks.
        assert_eq!(
            after_one.get(Domain::Account, b"a"),
            Some(Some(&Bytes::from_static(b"1")))
        );
        assert_eq!(tier.blocks(), Some((1, 2)));

        tier.remove_flushed([&one]);
        assert_eq!(
            tier.get(Domain::Account, b"b"),
            None,
            "flushed and not rewritten"
        );
        assert_eq!(
            tier.get(Domain::Account, b"a"),
            Some(Some(&Bytes::from_static(b"2")))
        );
        assert_eq!(tier.blocks(), Some((2, 2)));
        tier.remove_flushed([&two]);
        assert_eq!(tier.bytes(), 0);
        assert_eq!(tier.blocks(), None);
    }

    #[test]
    fn commitment_records_are_read_newest_block_first_and_leave_with_their_block() {
        let one = record(
            1,
            &[
                (Domain::Commitment, b"r", Some(b"1")),
                (Domain::Commitment, b"s", Some(b"1")),
            ],
        );
        let two = record(2, &[(Domain::Commitment, b"r", None)]);
        let mut tier = MemoryTier::default();
        tier.apply(&one);
        tier.apply(&two);
        assert_eq!(tier.get(Domain::Commitment, b"r"), Some(None));
        assert_eq!(
            tier.get(Domain::Commitment, b"s"),
            Some(Some(&Bytes::from_static(b"1")))
        );
        assert_eq!(tier.len(Domain::Commitment), 2);
        assert_eq!(
            tier.entries(Domain::Commitment),
            vec![
                (Bytes::from_static(b"r"), None),
                (Bytes::from_static(b"s"), Some(Bytes::from_static(b"1")))
            ]
        );
        tier.remove_flushed([&one]);
        assert_eq!(tier.get(Domain::Commitment, b"s"), None);
        assert_eq!(tier.get(Domain::Commitment, b"r"), Some(None));
        tier.remove_flushed([&two]);
        assert_eq!(tier.bytes(), 0);
        assert_eq!(tier.blocks(), None);
    }
}
