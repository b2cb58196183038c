//! A batch of consecutive blocks as one object: the journal's records of
//! those blocks, each with its roots, behind a header naming the datadir
//! and closed by a checksum over every byte.
//!
//! ```text
//! magic "STRATA-BLOCKS\0\0\0" | version u32 | datadir id [16] | first u64 | count u32
//! record*: block u64 | parent root [32] | root [32] | payload_len u32 | payload
//! xxh3-64 of every byte before it (u64)
//! ```
//! All integers little-endian. The payload is the journal record's, as the
//! writer framed it (`strata_journal::BlockRecord`); a replica decodes it and
//! replays the block, its root checked against the record's.

use alloy_primitives::B256;
use bytes::{BufMut, Bytes, BytesMut};
use xxhash_rust::xxh3::xxh3_64;

use strata_journal::{JournalRecord, Link};
use strata_types::DatadirId;

const MAGIC: &[u8; 16] = b"STRATA-BLOCKS\0\0\0";
const VERSION: u32 = 1;
const HEADER: usize = 16 + 4 + 16 + 8 + 4;
/// The largest payload a batch may carry (the journal's own bound is lower).
const PAYLOAD_LIMIT: usize = 256 << 20;

/// One block of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchBlock {
    /// The block number.
    pub block: u64,
    /// The root before and after it.
    pub link: Link,
    /// The journal record's bytes.
    pub payload: Bytes,
}

impl From<JournalRecord> for BatchBlock {
    fn from(record: JournalRecord) -> BatchBlock {
        BatchBlock {
            block: record.block,
            link: record.link,
            payload: record.payload,
        }
    }
}

/// Encodes `blocks` (consecutive, at least one) of datadir `id`.
pub fn encode(id: DatadirId, blocks: &[BatchBlock]) -> Bytes {
    assert!(!blocks.is_empty(), "a batch holds at least one block");
    let size = HEADER
        + blocks
            .iter()
            .map(|b| 8 + 64 + 4 + b.payload.len())
            .sum::<usize>()
        + 8;
    let mut out = BytesMut::with_capacity(size);
    out.put_slice(MAGIC);
    out.put_u32_le(VERSION);
    out.put_slice(&id.0);
    out.put_u64_le(blocks[0].block);
    out.put_u32_le(blocks.len() as u32);
    for block in blocks {
        out.put_u64_le(block.block);
        out.put_slice(block.link.parent.as_slice());
        out.put_slice(block.link.root.as_slice());
        out.put_u32_le(block.payload.len() as u32);
        out.put_slice(&block.payload);
    }
    let checksum = xxh3_64(&out);
    out.put_u64_le(checksum);
    out.freeze()
}

/// What is wrong with a batch's bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum BatchDamage {
    /// Not a batch, or damaged: what and at which byte.
    Damaged(String),
    /// A batch of another datadir.
    Foreign(DatadirId),
}

/// Decodes a batch of datadir `id`: the magic, version, datadir, checksum,
/// and consecutive blocks are checked before anything is returned.
pub fn decode(id: DatadirId, data: &Bytes) -> Result<Vec<BatchBlock>, BatchDamage> {
    let damaged = |what: String| BatchDamage::Damaged(what);
    if data.len() < HEADER + 8 {
        return Err(damaged(format!(
            "{} bytes, shorter than a batch",
            data.len()
        )));
    }
    if &data[..16] != MAGIC {
        return Err(damaged("not a block batch (magic)".into()));
    }
    let body = data.len() - 8;
    let stored = u64::from_le_bytes(data[body..].try_into().expect("8 bytes"));
    if xxh3_64(&data[..body]) != stored {
        return Err(damaged("checksum mismatch".into()));
    }
    let version = u32::from_le_bytes(data[16..20].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(damaged(format!(
            "batch version {version}, this build reads {VERSION}"
        )));
    }
    let found = DatadirId(data[20..36].try_into().expect("16 bytes"));
    if found != id {
        return Err(BatchDamage::Foreign(found));
    }
    let first = u64::from_le_bytes(data[36..44].try_into().expect("8 bytes"));
    let count = u32::from_le_bytes(data[44..48].try_into().expect("4 bytes")) as usize;
    let mut at = HEADER;
    let mut blocks = Vec::with_capacity(count.min(1 << 16));
    for index in 0..count {
        if body - at < 8 + 64 + 4 {
            return Err(damaged(format!("block {index} cut at byte {at}")));
        }
        let block = u64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes"));
        if block != first + index as u64 {
            return Err(damaged(format!(
                "block {block} at byte {at} where {} was due",
                first + index as u64
            )));
        }
        let parent = B256::from_slice(&data[at + 8..at + 40]);
        let root = B256::from_slice(&data[at + 40..at + 72]);
        let len = u32::from_le_bytes(data[at + 72..at + 76].try_into().expect("4 bytes")) as usize;
        at += 76;
        if len > PAYLOAD_LIMIT || body - at < len {
            return Err(damaged(format!(
                "block {block}: a payload of {len} bytes at byte {at}"
            )));
        }
        blocks.push(BatchBlock {
            block,
            link: Link { parent, root },
            payload: data.slice(at..at + len),
        });
        at += len;
    }
    if at != body {
        return Err(damaged(format!("{} bytes after the last block", body - at)));
    }
    if blocks.is_empty() {
        return Err(damaged("no block".into()));
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks() -> Vec<BatchBlock> {
        (5..8)
            .map(|block| BatchBlock {
                block,
                link: Link {
                    parent: B256::repeat_byte(block as u8),
                    root: B256::repeat_byte(block as u8 + 1),
                },
                payload: Bytes::from(vec![block as u8; 10 * block as usize]),
            })
            .collect()
    }

    #[test]
    fn round_trips_and_refuses_damage_and_other_datadirs() {
        let id = DatadirId([7; 16]);
        let data = encode(id, &blocks());
        assert_eq!(decode(id, &data).unwrap(), blocks());
        assert_eq!(
            decode(DatadirId([8; 16]), &data),
            Err(BatchDamage::Foreign(id))
        );
        for at in [0, 20, 40, 50, data.len() / 2, data.len() - 1] {
            let mut bad = data.to_vec();
            bad[at] ^= 1;
            assert!(
                matches!(decode(id, &Bytes::from(bad)), Err(BatchDamage::Damaged(_))),
                "a flip at byte {at} passed"
            );
        }
        let cut = data.slice(..data.len() - 9);
        assert!(matches!(decode(id, &cut), Err(BatchDamage::Damaged(_))));
    }
}
