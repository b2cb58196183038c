//! A file read through ranged reads ([`SortedFile::open_remote`]) answers as the whole
//! file opened locally does, reads only the blocks its lookups need, and
//! refuses a damaged block, index or a file other than the one expected.

use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::{Model, mem_fs, sample_model};
use crate::format::FOOTER_LEN;
use crate::{FileError, FileLayout, RangeSource, SortedFile};

/// An object in memory: counts the reads and the bytes read.
struct Object {
    bytes: Mutex<Bytes>,
    reads: AtomicU64,
    read_bytes: AtomicU64,
    /// Cut every read short by one byte.
    short: std::sync::atomic::AtomicBool,
}

impl Object {
    fn new(bytes: Vec<u8>) -> Arc<Object> {
        Arc::new(Object {
            bytes: Mutex::new(Bytes::from(bytes)),
            reads: AtomicU64::new(0),
            read_bytes: AtomicU64::new(0),
            short: Default::default(),
        })
    }

    fn flip(&self, at: usize) {
        let mut bytes = self.bytes.lock().unwrap();
        let mut copy = bytes.to_vec();
        copy[at] ^= 0x10;
        *bytes = Bytes::from(copy);
    }

    fn len(&self) -> u64 {
        self.bytes.lock().unwrap().len() as u64
    }
}

impl RangeSource for Object {
    fn read_range(&self, range: Range<u64>) -> std::io::Result<Bytes> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.read_bytes
            .fetch_add(range.end - range.start, Ordering::Relaxed);
        let bytes = self.bytes.lock().unwrap();
        let end = if self.short.load(Ordering::Relaxed) {
            range.end - 1
        } else {
            range.end
        };
        bytes
            .get(range.start as usize..end as usize)
            .map(|b| bytes.slice_ref(b))
            .ok_or_else(|| std::io::Error::other("range past the end"))
    }
}

/// `model` written in `layout`: the file's bytes and the file opened locally.
fn written(model: &Model, layout: FileLayout) -> (Vec<u8>, SortedFile) {
    let (mem, fs) = mem_fs();
    let local = super::layouts::write_as(&fs, layout, model);
    (mem.contents(local.path()).unwrap(), local)
}

fn name() -> &'static Path {
    Path::new("bucket/files/storage-0-1.sst")
}

#[test]
fn a_remote_file_answers_as_the_local_one_reading_one_block_a_lookup() {
    let model = sample_model(3_000, 40);
    for layout in [FileLayout::V1, FileLayout::default()] {
        let (bytes, local) = written(&model, layout);
        let size = bytes.len() as u64;
        let object = Object::new(bytes);
        let remote =
            SortedFile::open_remote(name(), size, Some(local.checksum()), object.clone()).unwrap();
        assert_eq!(object.reads.load(Ordering::Relaxed), 2, "{layout:?}: open");
        let opened = object.read_bytes.load(Ordering::Relaxed);
        assert!(
            opened < size / 10,
            "{layout:?}: open read {opened} of {size} bytes"
        );
        assert_eq!(remote.entries(), local.entries());
        assert_eq!(remote.block_count(), local.block_count());
        assert_eq!(remote.meta(), local.meta());

        // Every key, and keys between, below and above them.
        let mut probes: Vec<Vec<u8>> = model.keys().cloned().collect();
        probes.extend((0..3_000u64).map(|i| (i * 3 + 2).to_be_bytes().to_vec()));
        probes.push(vec![]);
        probes.push(vec![0xff; 9]);
        for key in &probes {
            let before = object.reads.load(Ordering::Relaxed);
            assert_eq!(
                remote.get(key).unwrap(),
                local.get(key).unwrap(),
                "{layout:?}"
            );
            assert!(object.reads.load(Ordering::Relaxed) - before <= 1);
            assert_eq!(remote.may_contain(key), local.may_contain(key));
        }
        // Iteration: whole, from a key, under a prefix.
        let all = |it: crate::FileIter<'_>| it.collect::<Result<Vec<_>, _>>().unwrap();
        assert_eq!(all(remote.iter()), all(local.iter()), "{layout:?}");
        let from = model.keys().nth(1_234).unwrap();
        assert_eq!(all(remote.iter_from(from)), all(local.iter_from(from)));
        let prefix = &from[..6];
        assert_eq!(
            all(remote.iter_prefix(prefix)),
            all(local.iter_prefix(prefix))
        );
        assert!(remote.get_ref(from).is_err() && remote.bytes().is_none());
        assert_eq!(remote.size_bytes(), size);
    }
}

#[test]
fn a_damaged_block_is_refused_and_the_others_still_answer() {
    let model = sample_model(2_000, 40);
    let (bytes, local) = written(&model, FileLayout::default());
    let size = bytes.len() as u64;
    let object = Object::new(bytes);
    let remote = SortedFile::open_remote(name(), size, None, object.clone()).unwrap();
    // A byte inside the data block holding the middle key.
    let middle = model.keys().nth(1_000).unwrap().clone();
    let first = model.keys().next().unwrap().clone();
    let at = {
        let h = local.block_for(&middle).unwrap().unwrap();
        h.offset + 20
    };
    object.flip(at);
    match remote.get(&middle) {
        Err(FileError::ChecksumMismatch { file, what, .. }) => {
            assert_eq!(file, name());
            assert!(what.starts_with("data block"), "{what}");
        }
        other => panic!("a damaged block answered: {other:?}"),
    }
    assert_eq!(remote.get(&first).unwrap(), local.get(&first).unwrap());
}

#[test]
fn a_damaged_index_a_short_read_or_another_file_is_refused() {
    let model = sample_model(2_000, 40);
    let (bytes, local) = written(&model, FileLayout::default());
    let size = bytes.len() as u64;
    let index_at = {
        let footer = &bytes[bytes.len() - FOOTER_LEN..];
        u64::from_le_bytes(footer[40..48].try_into().unwrap()) as usize
    };

    let object = Object::new(bytes.clone());
    object.flip(index_at + 3);
    match SortedFile::open_remote(name(), size, None, object) {
        Err(FileError::ChecksumMismatch { what, .. }) => assert_eq!(what, "index"),
        other => panic!("a damaged index opened: {other:?}"),
    }

    let object = Object::new(bytes.clone());
    let err =
        SortedFile::open_remote(name(), size, Some(local.checksum() ^ 1), object).unwrap_err();
    assert!(err.to_string().contains("another file"), "{err}");

    let object = Object::new(bytes.clone());
    let remote = SortedFile::open_remote(name(), size, None, object.clone()).unwrap();
    object.short.store(true, Ordering::Relaxed);
    let key = model.keys().nth(10).unwrap();
    let err = remote.get(key).unwrap_err();
    assert!(err.to_string().contains("gave"), "{err}");

    // A size that is not the object's: its last bytes are not a footer.
    let object = Object::new(bytes);
    let err = SortedFile::open_remote(name(), object.len() - 1, None, object).unwrap_err();
    assert!(err.to_string().contains("bad magic"), "{err}");
}
