//! Hostile edits of a journal for tests (feature `test-utils`): a block's
//! record changed and every checksum made valid again, what finding CR2 of
//! the durability review looks like on disk.

use std::path::Path;

use strata_types::datadir::JOURNAL_DIR;

use crate::{BlockRecord, Link};

/// Rewrites the frame of `block` in the segment bytes `segment` with its
/// record changed by `change` and every checksum made valid again: what a
/// hostile edit of a journal looks like (finding CR2). For tests.
pub fn rechecksummed(segment: &[u8], block: u64, change: impl FnOnce(&mut BlockRecord)) -> Vec<u8> {
    let mut offset = crate::segment::HEADER_LEN;
    while offset < segment.len() {
        let word = |at: usize| u32::from_le_bytes(segment[at..at + 4].try_into().unwrap());
        let len = word(offset + 4) as usize;
        let end = offset + crate::frame::HEADER + crate::frame::ROOTS + len + crate::frame::TRAILER;
        let frame_block = u64::from_le_bytes(segment[offset + 8..offset + 16].try_into().unwrap());
        if frame_block == block {
            let roots = offset + crate::frame::HEADER;
            let link = Link {
                parent: alloy_primitives::B256::from_slice(&segment[roots..roots + 32]),
                root: alloy_primitives::B256::from_slice(&segment[roots + 32..roots + 64]),
            };
            let payload = &segment[roots + crate::frame::ROOTS..end - crate::frame::TRAILER];
            let mut record = BlockRecord::decode(&bytes::Bytes::copy_from_slice(payload)).unwrap();
            change(&mut record);
            let mut encoded = Vec::new();
            record.encode_into(&mut encoded);
            let mut framed = Vec::new();
            crate::frame::encode(block, link, &encoded, &mut framed);
            let mut out = segment[..offset].to_vec();
            out.extend_from_slice(&framed);
            out.extend_from_slice(&segment[end..]);
            return out;
        }
        offset = end;
    }
    panic!("no frame of block {block} in the segment");
}

/// Rewrites, in every segment of `datadir`'s journal holding it, block
/// `block`'s record with `change` applied and valid checksums (see
/// [`rechecksummed`]). For tests; panics when no segment holds the block.
pub fn rechecksum_block(datadir: &Path, block: u64, change: impl Fn(&mut BlockRecord)) {
    let mut segments: Vec<std::path::PathBuf> = std::fs::read_dir(datadir.join(JOURNAL_DIR))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    segments.sort();
    let mut done = false;
    for path in segments {
        let bytes = std::fs::read(&path).unwrap();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rechecksummed(&bytes, block, &change)
        }));
        if let Ok(changed) = result {
            std::fs::write(&path, changed).unwrap();
            done = true;
        }
    }
    assert!(done, "no segment holds block {block}");
}
