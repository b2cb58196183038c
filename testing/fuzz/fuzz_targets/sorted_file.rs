//! Fuzz target for the sorted-file reader (`strata_storage::files`).
//!
//! Input: one flags byte, then a file. Bit 0 repairs the file's checksums
//! first (`strata_fuzz::repair_checksums`, so the structural checks behind
//! them are reached); bit 1 names the file after its own footer (so the
//! name cross-check passes). The bytes are written to a `MemFileSystem` and
//! opened with `SortedFile::open`, which must return `Ok` or an error naming
//! the file — never panic. When it opens, everything it serves must agree
//! with its iteration (`strata_fuzz::check_consistent`).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use strata_fuzz::{FOOTER_LEN, check_consistent, repair_checksums, split_flags};
use strata_storage::Domain;
use strata_storage::files::{FileMeta, FileSystem, MemFileSystem, SortedFile};

const DIR: &str = "/fuzz";

fuzz_target!(|data: &[u8]| {
    let (flags, rest) = split_flags(data);
    let mut bytes = rest.to_vec();
    if flags & 1 != 0 {
        repair_checksums(&mut bytes);
    }
    let name = match flags & 2 {
        0 => None,
        _ => name_from_footer(&bytes),
    }
    .unwrap_or_else(|| "fuzz.sst".to_owned());
    let fs = MemFileSystem::new();
    let path = Path::new(DIR).join(&name);
    let mut file = fs.create(&path).expect("create in memory");
    file.write_all(&bytes).expect("write in memory");
    file.sync().expect("sync in memory");
    match SortedFile::open(&fs, &path) {
        Ok(file) => check_consistent(&file),
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.contains(&name),
                "error does not name the file {name}: {msg}"
            );
        }
    }
});

/// The file name the footer of `bytes` describes, if it names a known domain
/// and a valid step range.
fn name_from_footer(bytes: &[u8]) -> Option<String> {
    let footer = &bytes[bytes.len().checked_sub(FOOTER_LEN)?..];
    let domain = *Domain::ALL.get(usize::from(footer[4]))?;
    let step = |at: usize| u64::from_le_bytes(footer[at..at + 8].try_into().expect("8 bytes"));
    let meta = FileMeta {
        domain,
        from_step: step(8),
        to_step: step(16),
    };
    meta.is_valid().then(|| meta.file_name())
}
