//! What one block's journal record holds and how it is encoded: the block,
//! its root, hash and header, and every key it wrote with the new value
//! and, for unwind, the previous one.
//!
//! A record of version 3 (what a writer appends) is *lean*: of the
//! commitment domain it keeps the root record only. The branch records a
//! block changes follow from the state before it and its plain writes, so
//! whoever replays the record rebuilds them and checks the root they give
//! against the record's ([`BlockRecord::branches_omitted`]). Versions 1 and
//! 2 (written before) carry every branch record and are read as they are.
//!
//! ```text
//! version u8 (1, 2 or 3) | block u64 | root [32] | has_hash u8 | hash [32]?
//! | (version 2) header_len u32 | header
//! | (version 3) has_header u8 | (header_len u32 | header)?
//! | entries u32 | entry*
//! entry: domain u8 | key_len u16 | key | value | prev
//! value: 0 (deleted) | 1 len u32 bytes
//! prev:  0 (not kept) | 1 (absent before) | 2 len u32 bytes
//! ```
//! All integers little-endian. The frame around the record carries its
//! checksum ([`super::frame`]).

use alloy_primitives::B256;
use bytes::Bytes;

use strata_types::domain::Domain;
use strata_types::keys::ROOT_RECORD_KEY;

/// The encoding version of a record without a header (and of every record
/// before headers were kept).
const VERSION_NO_HEADER: u8 = 1;

/// The encoding version of a record that carries the block's header.
const VERSION_WITH_HEADER: u8 = 2;

/// The encoding version of a lean record: the commitment's branch records
/// left out (the root record kept), the header optional.
const VERSION_LEAN: u8 = 3;

/// A key's value before the block, as unwind needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Previous {
    /// Not recorded (block 0 has nothing to unwind to).
    NotKept,
    /// The key did not exist.
    Absent,
    /// The key held these bytes.
    Value(Bytes),
}

/// One key a block wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordWrite {
    /// The domain of the key.
    pub domain: Domain,
    /// The key, as the domain stores it.
    pub key: Bytes,
    /// The new value; `None` deletes the key.
    pub value: Option<Bytes>,
    /// The value before the block.
    pub previous: Previous,
}

/// One block as the journal records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockRecord {
    /// The block number.
    pub block: u64,
    /// The state root after the block.
    pub root: B256,
    /// The block's hash, when the caller gave one.
    pub hash: Option<B256>,
    /// The block's header as the client encodes it (RLP for Ethereum), when
    /// the caller gave one: opaque to the store, kept with the block's hash.
    pub header: Option<Bytes>,
    /// Every key written: the plain state's, then the commitment's (the
    /// root record last).
    pub writes: Vec<RecordWrite>,
    /// Whether the commitment's branch records were left out of `writes`
    /// (a lean record, as decoded from the journal): they must be rebuilt
    /// from the state before the block and its plain writes, and the root
    /// they give checked against `root`, before the record is applied.
    pub branches_omitted: bool,
}

/// A record that cannot be decoded: what and at which byte.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("journal record: {what} at byte {offset}")]
pub struct RecordError {
    /// Where decoding stopped.
    pub offset: usize,
    /// What was wrong.
    pub what: &'static str,
}

impl BlockRecord {
    /// Encodes the record into `out` (cleared first), lean when it is
    /// ([`BlockRecord::branches_omitted`]), so that a decoded record
    /// encodes back to the same bytes.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let writes = &self.writes;
        self.encode_with(|i| &writes[i].previous, self.branches_omitted, out);
    }

    /// Encodes the record with the previous values `previous` gives (by
    /// write index) instead of those the writes carry: a committing block
    /// keeps its previous values apart, since only the journal needs them.
    pub fn encode_with_previous(&self, previous: &[Previous], out: &mut Vec<u8>) {
        assert_eq!(
            previous.len(),
            self.writes.len(),
            "one previous value per write"
        );
        self.encode_with(|i| &previous[i], false, out);
    }

    /// Encodes the record lean (version 3), with `previous` as in
    /// [`BlockRecord::encode_with_previous`]: of the commitment domain only
    /// the root record is kept, since the branch records derive from the
    /// state before the block and its plain writes. Decoded, the record
    /// says so ([`BlockRecord::branches_omitted`]).
    pub fn encode_lean(&self, previous: &[Previous], out: &mut Vec<u8>) {
        assert_eq!(
            previous.len(),
            self.writes.len(),
            "one previous value per write"
        );
        self.encode_with(|i| &previous[i], true, out);
    }

    /// Whether a lean record keeps `write`: every plain write, and of the
    /// commitment only the root record.
    fn kept_lean(write: &RecordWrite) -> bool {
        write.domain != Domain::Commitment || write.key.as_ref() == ROOT_RECORD_KEY
    }

    fn encode_with<'p>(
        &self,
        previous: impl Fn(usize) -> &'p Previous,
        lean: bool,
        out: &mut Vec<u8>,
    ) {
        out.clear();
        out.push(match (lean, &self.header) {
            (true, _) => VERSION_LEAN,
            (false, Some(_)) => VERSION_WITH_HEADER,
            (false, None) => VERSION_NO_HEADER,
        });
        out.extend_from_slice(&self.block.to_le_bytes());
        out.extend_from_slice(self.root.as_slice());
        match self.hash {
            Some(hash) => {
                out.push(1);
                out.extend_from_slice(hash.as_slice());
            }
            None => out.push(0),
        }
        match (&self.header, lean) {
            (Some(header), true) => {
                out.push(1);
                put_bytes(out, header);
            }
            (None, true) => out.push(0),
            (Some(header), false) => put_bytes(out, header),
            (None, false) => {}
        }
        let kept = |write: &RecordWrite| !lean || Self::kept_lean(write);
        let count = self.writes.iter().filter(|w| kept(w)).count();
        out.extend_from_slice(&(count as u32).to_le_bytes());
        for (index, write) in self.writes.iter().enumerate() {
            if !kept(write) {
                continue;
            }
            debug_assert!(
                write.key.len() <= u16::MAX as usize,
                "key too long for a record"
            );
            out.push(write.domain.index() as u8);
            out.extend_from_slice(&(write.key.len() as u16).to_le_bytes());
            out.extend_from_slice(&write.key);
            match &write.value {
                None => out.push(0),
                Some(value) => {
                    out.push(1);
                    put_bytes(out, value);
                }
            }
            match previous(index) {
                Previous::NotKept => out.push(0),
                Previous::Absent => out.push(1),
                Previous::Value(value) => {
                    out.push(2);
                    put_bytes(out, value);
                }
            }
        }
    }

    /// Decodes a record written by [`BlockRecord::encode_into`]; keys and
    /// values share `payload`'s memory.
    pub fn decode(payload: &Bytes) -> Result<BlockRecord, RecordError> {
        let bytes: &[u8] = payload;
        let mut reader = Reader { bytes, offset: 0 };
        let version = reader.u8("version")?;
        if ![VERSION_NO_HEADER, VERSION_WITH_HEADER, VERSION_LEAN].contains(&version) {
            return Err(reader.error(1, "unknown record version"));
        }
        let block = reader.u64("block")?;
        let root = B256::from_slice(reader.take(32, "root")?);
        let hash = match reader.u8("hash flag")? {
            0 => None,
            1 => Some(B256::from_slice(reader.take(32, "hash")?)),
            _ => return Err(reader.error(1, "bad hash flag")),
        };
        let has_header = match version {
            VERSION_WITH_HEADER => true,
            VERSION_LEAN => match reader.u8("header flag")? {
                0 => false,
                1 => true,
                _ => return Err(reader.error(1, "bad header flag")),
            },
            _ => false,
        };
        let header = if has_header {
            Some(payload.slice_ref(reader.bytes("header")?))
        } else {
            None
        };
        let count = reader.u32("entry count")? as usize;
        // Each entry takes at least 5 bytes: a count beyond that is damage.
        if count > reader.remaining() / 5 {
            return Err(reader.error(4, "entry count larger than the record"));
        }
        let mut writes = Vec::with_capacity(count);
        for _ in 0..count {
            let domain_index = reader.u8("domain")? as usize;
            let domain = *Domain::ALL
                .get(domain_index)
                .ok_or_else(|| reader.error(1, "unknown domain"))?;
            let key_len = reader.u16("key length")? as usize;
            let key = payload.slice_ref(reader.take(key_len, "key")?);
            let value = match reader.u8("value tag")? {
                0 => None,
                1 => Some(payload.slice_ref(reader.bytes("value")?)),
                _ => return Err(reader.error(1, "bad value tag")),
            };
            let previous = match reader.u8("previous tag")? {
                0 => Previous::NotKept,
                1 => Previous::Absent,
                2 => Previous::Value(payload.slice_ref(reader.bytes("previous value")?)),
                _ => return Err(reader.error(1, "bad previous tag")),
            };
            writes.push(RecordWrite {
                domain,
                key,
                value,
                previous,
            });
        }
        if reader.remaining() != 0 {
            return Err(reader.error(0, "bytes after the last entry"));
        }
        let branches_omitted = version == VERSION_LEAN;
        if branches_omitted && !writes.iter().all(Self::kept_lean) {
            return Err(reader.error(0, "a lean record holds a branch record"));
        }
        Ok(BlockRecord {
            block,
            root,
            hash,
            header,
            writes,
            branches_omitted,
        })
    }
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, value: &[u8]) {
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(value);
}

pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) offset: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.offset
    }

    /// An error about the `back` bytes just read.
    pub(crate) fn error(&self, back: usize, what: &'static str) -> RecordError {
        RecordError {
            offset: self.offset - back,
            what,
        }
    }

    pub(crate) fn take(&mut self, len: usize, what: &'static str) -> Result<&'a [u8], RecordError> {
        if self.remaining() < len {
            return Err(RecordError {
                offset: self.offset,
                what,
            });
        }
        let out = &self.bytes[self.offset..self.offset + len];
        self.offset += len;
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, RecordError> {
        Ok(self.take(1, what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, RecordError> {
        Ok(u16::from_le_bytes(
            self.take(2, what)?.try_into().expect("2 bytes"),
        ))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, RecordError> {
        Ok(u32::from_le_bytes(
            self.take(4, what)?.try_into().expect("4 bytes"),
        ))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, RecordError> {
        Ok(u64::from_le_bytes(
            self.take(8, what)?.try_into().expect("8 bytes"),
        ))
    }

    pub(crate) fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], RecordError> {
        let len = self.u32(what)? as usize;
        self.take(len, what)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn previous() -> impl Strategy<Value = Previous> {
        prop_oneof![
            Just(Previous::NotKept),
            Just(Previous::Absent),
            proptest::collection::vec(any::<u8>(), 0..40)
                .prop_map(|v| Previous::Value(Bytes::from(v))),
        ]
    }

    fn write() -> impl Strategy<Value = RecordWrite> {
        (
            0..Domain::ALL.len(),
            proptest::collection::vec(any::<u8>(), 0..60),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..80)),
            previous(),
        )
            .prop_map(|(domain, key, value, previous)| RecordWrite {
                domain: Domain::ALL[domain],
                key: Bytes::from(key),
                value: value.map(Bytes::from),
                previous,
            })
    }

    fn record() -> impl Strategy<Value = BlockRecord> {
        (
            any::<u64>(),
            any::<[u8; 32]>(),
            proptest::option::of(any::<[u8; 32]>()),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..600)),
            proptest::collection::vec(write(), 0..20),
        )
            .prop_map(|(block, root, hash, header, writes)| BlockRecord {
                block,
                root: B256::from(root),
                hash: hash.map(B256::from),
                header: header.map(Bytes::from),
                writes,
                branches_omitted: false,
            })
    }

    /// `record` as its lean encoding decodes: the branch records gone.
    fn lean_of(record: &BlockRecord) -> BlockRecord {
        BlockRecord {
            writes: record
                .writes
                .iter()
                .filter(|w| BlockRecord::kept_lean(w))
                .cloned()
                .collect(),
            branches_omitted: true,
            ..record.clone()
        }
    }

    proptest! {
        #[test]
        fn records_round_trip(record in record()) {
            let mut bytes = Vec::new();
            record.encode_into(&mut bytes);
            prop_assert_eq!(BlockRecord::decode(&Bytes::from(bytes)), Ok(record));
        }

        #[test]
        fn lean_records_round_trip_without_their_branch_records(record in record()) {
            let previous: Vec<Previous> = record.writes.iter().map(|w| w.previous.clone()).collect();
            let mut bytes = Vec::new();
            record.encode_lean(&previous, &mut bytes);
            prop_assert_eq!(BlockRecord::decode(&Bytes::from(bytes)), Ok(lean_of(&record)));
        }

        #[test]
        fn every_cut_of_a_lean_record_is_an_error(record in record()) {
            let previous: Vec<Previous> = record.writes.iter().map(|w| w.previous.clone()).collect();
            let mut bytes = Vec::new();
            record.encode_lean(&previous, &mut bytes);
            for cut in 0..bytes.len() {
                let cut_bytes = Bytes::copy_from_slice(&bytes[..cut]);
                prop_assert!(BlockRecord::decode(&cut_bytes).is_err(), "cut at {}", cut);
            }
        }

        #[test]
        fn every_cut_of_a_record_is_an_error(record in record()) {
            let mut bytes = Vec::new();
            record.encode_into(&mut bytes);
            for cut in 0..bytes.len() {
                let cut_bytes = Bytes::copy_from_slice(&bytes[..cut]);
                prop_assert!(BlockRecord::decode(&cut_bytes).is_err(), "cut at {}", cut);
            }
        }
    }

    #[test]
    fn a_record_without_a_header_keeps_the_first_encoding() {
        let mut record = BlockRecord {
            block: 3,
            root: B256::repeat_byte(2),
            hash: Some(B256::repeat_byte(3)),
            header: None,
            writes: Vec::new(),
            branches_omitted: false,
        };
        let mut bytes = Vec::new();
        record.encode_into(&mut bytes);
        // version 1 | block | root | hash flag | hash | entry count
        assert_eq!(bytes.len(), 1 + 8 + 32 + 1 + 32 + 4);
        assert_eq!(bytes[0], 1);

        record.header = Some(Bytes::from_static(b"an rlp header"));
        record.encode_into(&mut bytes);
        assert_eq!(bytes[0], 2);
        assert_eq!(BlockRecord::decode(&Bytes::from(bytes)), Ok(record));
    }

    #[test]
    fn damage_is_named_with_its_offset() {
        let record = BlockRecord {
            block: 9,
            root: B256::repeat_byte(1),
            hash: None,
            header: None,
            writes: vec![RecordWrite {
                domain: Domain::Storage,
                key: Bytes::from_static(&[1, 2, 3]),
                value: Some(Bytes::from_static(&[4])),
                previous: Previous::Absent,
            }],
            branches_omitted: false,
        };
        let mut bytes = Vec::new();
        record.encode_into(&mut bytes);
        let domain_at = 1 + 8 + 32 + 1 + 4;
        bytes[domain_at] = 9;
        assert_eq!(
            BlockRecord::decode(&Bytes::from(bytes.clone())),
            Err(RecordError {
                offset: domain_at,
                what: "unknown domain"
            })
        );
        bytes[domain_at] = Domain::Storage.index() as u8;
        bytes.push(0);
        assert_eq!(
            BlockRecord::decode(&Bytes::from(bytes)).map_err(|e| e.what),
            Err("bytes after the last entry")
        );
    }

    #[test]
    fn a_lean_record_that_holds_a_branch_record_is_refused() {
        let record = BlockRecord {
            block: 4,
            root: B256::repeat_byte(1),
            hash: None,
            header: None,
            writes: vec![RecordWrite {
                domain: Domain::Commitment,
                key: Bytes::from_static(&[0x12]),
                value: Some(Bytes::from_static(&[4])),
                previous: Previous::NotKept,
            }],
            branches_omitted: false,
        };
        // Written in full, then marked lean: the branch record is damage.
        let mut bytes = Vec::new();
        record.encode_into(&mut bytes);
        let mut lean = vec![VERSION_LEAN];
        lean.extend_from_slice(&bytes[1..1 + 8 + 32 + 1]);
        lean.push(0);
        lean.extend_from_slice(&bytes[1 + 8 + 32 + 1..]);
        assert_eq!(
            BlockRecord::decode(&Bytes::from(lean)).map_err(|e| e.what),
            Err("a lean record holds a branch record")
        );
    }
}
