//! The one error type of the immutable-file layer.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Everything that can go wrong writing, opening, reading or merging an
/// immutable sorted file. Every variant names the file; corruption variants
/// also name the byte offset and the structure that is wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The bytes of the file do not form a valid sorted file.
    #[error("{}: corrupted at offset {offset}: {what}", file.display())]
    Corrupted {
        /// The file.
        file: PathBuf,
        /// Byte offset of the faulty structure.
        offset: u64,
        /// What is wrong, in words.
        what: String,
    },
    /// A stored checksum does not match the bytes it covers.
    #[error(
        "{}: checksum mismatch in {what} at offset {offset}: expected {expected:#018x}, found {found:#018x}",
        file.display()
    )]
    ChecksumMismatch {
        /// The file.
        file: PathBuf,
        /// Byte offset where the checksummed region starts.
        offset: u64,
        /// Which region (e.g. "data block 3", "index", "whole file").
        what: String,
        /// The checksum stored in the file.
        expected: u64,
        /// The checksum computed over the bytes.
        found: u64,
    },
    /// The operating system (or the test file system) reported an error.
    #[error("{}: {op} failed: {source}", file.display())]
    Io {
        /// The file or directory operated on.
        file: PathBuf,
        /// The operation: "create", "write", "sync", "rename", "map", ...
        op: &'static str,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The writer was given a key that is not greater than the previous one.
    #[error(
        "{}: keys must be strictly increasing: key {} after {}",
        file.display(), HexKey(key), HexKey(previous)
    )]
    UnsortedKeys {
        /// The file being written.
        file: PathBuf,
        /// The previous key.
        previous: Vec<u8>,
        /// The offending key.
        key: Vec<u8>,
    },
    /// The file was written by a format version this build cannot read.
    #[error("{}: unsupported format version {found} (supported: 1 to {supported})", file.display())]
    UnsupportedVersion {
        /// The file.
        file: PathBuf,
        /// The version stored in the footer.
        found: u32,
        /// The newest version this build reads (the one it writes); it
        /// reads every version from 1 up to it.
        supported: u32,
    },
    /// A key or value is larger than the format allows.
    #[error("{}: {what} of {len} bytes exceeds the limit of {max} bytes", file.display())]
    TooLarge {
        /// The file being written.
        file: PathBuf,
        /// "key" or "value".
        what: &'static str,
        /// The length given.
        len: usize,
        /// The largest length accepted.
        max: usize,
    },
    /// The caller asked for something inconsistent (an empty step range, a
    /// merge of files from another domain, ...).
    #[error("{}: invalid request: {what}", file.display())]
    InvalidInput {
        /// The file being written or read.
        file: PathBuf,
        /// What is inconsistent.
        what: String,
    },
}

/// Shows a key as lower-case hex, shortened in the middle when long.
pub(crate) struct HexKey<'a>(pub(crate) &'a [u8]);

impl fmt::Display for HexKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 32;
        f.write_str("0x")?;
        if self.0.len() <= 2 * SHOWN {
            for b in self.0 {
                write!(f, "{b:02x}")?;
            }
            return Ok(());
        }
        for b in &self.0[..SHOWN] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "..({} bytes)..", self.0.len())?;
        for b in &self.0[self.0.len() - SHOWN..] {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_file_offset_and_values() {
        let e = FileError::ChecksumMismatch {
            file: PathBuf::from("/d/account-0000000000-0000000001.sst"),
            offset: 4096,
            what: "data block 1".into(),
            expected: 1,
            found: 2,
        };
        let msg = e.to_string();
        assert!(msg.contains("account-0000000000-0000000001.sst"), "{msg}");
        assert!(
            msg.contains("offset 4096") && msg.contains("data block 1"),
            "{msg}"
        );
        assert!(
            msg.contains("0x0000000000000001") && msg.contains("0x0000000000000002"),
            "{msg}"
        );

        let e = FileError::UnsortedKeys {
            file: PathBuf::from("f.sst"),
            previous: vec![0xab, 0x01],
            key: vec![0xab],
        };
        assert_eq!(
            e.to_string(),
            "f.sst: keys must be strictly increasing: key 0xab after 0xab01"
        );
    }

    #[test]
    fn long_keys_are_shortened() {
        let key = vec![0x11u8; 100];
        let shown = HexKey(&key).to_string();
        assert!(shown.contains("..(100 bytes).."), "{shown}");
        assert!(shown.len() < 2 * 100);
    }
}
