//! One block's branch records, as the writer publishes them beside the
//! journal for readers in other processes: a lean journal record leaves
//! them out (they follow from the state before the block and its plain
//! writes), and a reader that finds them here applies them instead of
//! rebuilding them. They are written like the journal (segments, frames,
//! checksums, the chain of roots) but never synced and never read by the
//! writer's recovery.
//!
//! ```text
//! version u8 (4) | block u64 | root [32] | entries u32 | entry*
//! entry: key_len u16 | key | value
//! value: 0 (deleted) | 1 len u32 bytes
//! ```
//! All integers little-endian; the keys are the commitment domain's, the
//! root record excepted (the journal record carries it).

use alloy_primitives::B256;
use bytes::Bytes;

use strata_types::domain::Domain;
use strata_types::keys::ROOT_RECORD_KEY;

use crate::record::{BlockRecord, Previous, Reader, RecordError, RecordWrite, put_bytes};

/// The encoding version of a block's branch records (after the journal
/// record's 1, 2 and 3, so that neither is ever taken for the other).
const VERSION_BRANCHES: u8 = 4;

/// The branch records one block changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BranchRecords {
    /// The block number.
    pub block: u64,
    /// The state root after the block.
    pub root: B256,
    /// Each record's key (the commitment domain's) and new value (`None`:
    /// deleted), in the order the block wrote them.
    pub records: Vec<(Bytes, Option<Bytes>)>,
}

impl BranchRecords {
    /// Encodes `record`'s branch records (its commitment writes but the
    /// root record) into `out`, cleared first.
    pub fn encode_from(record: &BlockRecord, out: &mut Vec<u8>) {
        out.clear();
        out.push(VERSION_BRANCHES);
        out.extend_from_slice(&record.block.to_le_bytes());
        out.extend_from_slice(record.root.as_slice());
        let branches = || record.writes.iter().filter(|w| is_branch_record(w));
        out.extend_from_slice(&(branches().count() as u32).to_le_bytes());
        for write in branches() {
            debug_assert!(write.key.len() <= u16::MAX as usize, "key too long");
            out.extend_from_slice(&(write.key.len() as u16).to_le_bytes());
            out.extend_from_slice(&write.key);
            match &write.value {
                None => out.push(0),
                Some(value) => {
                    out.push(1);
                    put_bytes(out, value);
                }
            }
        }
    }

    /// Decodes what [`BranchRecords::encode_from`] wrote; keys and values
    /// share `payload`'s memory.
    pub fn decode(payload: &Bytes) -> Result<BranchRecords, RecordError> {
        let mut reader = Reader {
            bytes: payload,
            offset: 0,
        };
        if reader.u8("version")? != VERSION_BRANCHES {
            return Err(reader.error(1, "not a block's branch records (unknown version)"));
        }
        let block = reader.u64("block")?;
        let root = B256::from_slice(reader.take(32, "root")?);
        let count = reader.u32("entry count")? as usize;
        // Each entry takes at least 3 bytes: a count beyond that is damage.
        if count > reader.remaining() / 3 {
            return Err(reader.error(4, "entry count larger than the record"));
        }
        let mut records = Vec::with_capacity(count);
        for _ in 0..count {
            let key_len = reader.u16("key length")? as usize;
            let key = payload.slice_ref(reader.take(key_len, "key")?);
            if key.as_ref() == ROOT_RECORD_KEY {
                return Err(reader.error(key_len, "the root record among branch records"));
            }
            let value = match reader.u8("value tag")? {
                0 => None,
                1 => Some(payload.slice_ref(reader.bytes("value")?)),
                _ => return Err(reader.error(1, "bad value tag")),
            };
            records.push((key, value));
        }
        if reader.remaining() != 0 {
            return Err(reader.error(0, "bytes after the last entry"));
        }
        Ok(BranchRecords {
            block,
            root,
            records,
        })
    }

    /// Puts these records into `record` (a lean record of the same block
    /// and root), before its root record, and marks it whole. `false`, and
    /// `record` unchanged, when they belong to another block or state.
    pub fn complete(self, record: &mut BlockRecord) -> bool {
        if !record.branches_omitted || record.block != self.block || record.root != self.root {
            return false;
        }
        let at = record
            .writes
            .iter()
            .position(|w| w.domain == Domain::Commitment)
            .unwrap_or(record.writes.len());
        let writes = self.records.into_iter().map(|(key, value)| RecordWrite {
            domain: Domain::Commitment,
            key,
            value,
            previous: Previous::NotKept,
        });
        record.writes.splice(at..at, writes);
        record.branches_omitted = false;
        true
    }
}

/// Whether `write` is a branch record: the commitment's, not its root record.
fn is_branch_record(write: &RecordWrite) -> bool {
    write.domain == Domain::Commitment && write.key.as_ref() != ROOT_RECORD_KEY
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(domain: Domain, key: &[u8], value: Option<&[u8]>) -> RecordWrite {
        RecordWrite {
            domain,
            key: Bytes::copy_from_slice(key),
            value: value.map(Bytes::copy_from_slice),
            previous: Previous::NotKept,
        }
    }

    fn whole_record() -> BlockRecord {
        BlockRecord {
            block: 7,
            root: B256::repeat_byte(7),
            hash: None,
            header: None,
            writes: vec![
                write(Domain::Account, b"acct", Some(b"v")),
                write(Domain::Commitment, &[0x10], Some(b"branch")),
                write(Domain::Commitment, &[0x00, 0x12], None),
                write(Domain::Commitment, ROOT_RECORD_KEY, Some(b"root")),
            ],
            branches_omitted: false,
        }
    }

    #[test]
    fn a_lean_record_completed_with_its_branch_records_is_the_whole_record() {
        let whole = whole_record();
        let mut encoded = Vec::new();
        BranchRecords::encode_from(&whole, &mut encoded);
        let branches = BranchRecords::decode(&Bytes::from(encoded)).unwrap();
        assert_eq!(
            branches.records.len(),
            2,
            "the root record is not among them"
        );
        let mut lean = whole.clone();
        lean.writes.retain(|w| !is_branch_record(w));
        lean.branches_omitted = true;
        assert!(branches.complete(&mut lean));
        assert_eq!(lean, whole);
    }

    #[test]
    fn branch_records_of_another_state_complete_nothing() {
        let whole = whole_record();
        let mut encoded = Vec::new();
        BranchRecords::encode_from(&whole, &mut encoded);
        let branches = BranchRecords::decode(&Bytes::from(encoded)).unwrap();
        let mut lean = whole.clone();
        lean.writes.retain(|w| !is_branch_record(w));
        lean.branches_omitted = true;
        lean.root = B256::repeat_byte(8);
        let before = lean.clone();
        assert!(!branches.complete(&mut lean));
        assert_eq!(lean, before);
    }

    #[test]
    fn damaged_branch_records_are_refused_with_where() {
        let mut encoded = Vec::new();
        BranchRecords::encode_from(&whole_record(), &mut encoded);
        for cut in 0..encoded.len() {
            let error =
                BranchRecords::decode(&Bytes::copy_from_slice(&encoded[..cut])).unwrap_err();
            assert!(error.offset <= cut, "{error} past the end at {cut}");
        }
        let mut journal_record = Vec::new();
        whole_record().encode_into(&mut journal_record);
        let error = BranchRecords::decode(&Bytes::from(journal_record)).unwrap_err();
        assert_eq!(error.offset, 0, "{error}");
    }
}
