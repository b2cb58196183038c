//! What a file covers (domain, step range), how it is named, and what a
//! finished write reports.

use std::path::PathBuf;

use strata_types::Domain;

/// The file-name extension of immutable sorted files.
pub const FILE_EXTENSION: &str = "sst";

/// The suffix a file carries while it is being written; such files are never
/// opened and may be deleted at start-up.
pub const TEMP_SUFFIX: &str = ".tmp";

/// The identity of an immutable file: one domain, the steps `[from_step, to_step)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileMeta {
    /// The domain whose keys the file holds.
    pub domain: Domain,
    /// The first step covered (inclusive).
    pub from_step: u64,
    /// The end of the covered steps (exclusive).
    pub to_step: u64,
}

impl FileMeta {
    /// The widest step number that fits the 10-digit file-name field.
    pub const MAX_STEP: u64 = 9_999_999_999;

    /// The canonical file name: `{domain}-{from:010}-{to:010}.sst`, which
    /// sorts by domain, then by step range.
    pub fn file_name(&self) -> String {
        format!(
            "{}-{:010}-{:010}.{FILE_EXTENSION}",
            self.domain.name(),
            self.from_step,
            self.to_step
        )
    }

    /// Parses a name produced by [`FileMeta::file_name`]; anything else
    /// (temp files, foreign files, empty or reversed ranges) gives `None`.
    pub fn parse_file_name(name: &str) -> Option<FileMeta> {
        let stem = name.strip_suffix(FILE_EXTENSION)?.strip_suffix('.')?;
        let mut parts = stem.rsplitn(3, '-');
        let to = parse_step(parts.next()?)?;
        let from = parse_step(parts.next()?)?;
        let domain_name = parts.next()?;
        let domain = Domain::ALL.into_iter().find(|d| d.name() == domain_name)?;
        let meta = FileMeta {
            domain,
            from_step: from,
            to_step: to,
        };
        meta.is_valid().then_some(meta)
    }

    /// Whether the step range is non-empty and printable in the file name.
    pub fn is_valid(&self) -> bool {
        self.from_step < self.to_step && self.to_step <= Self::MAX_STEP
    }

    /// Number of steps covered.
    pub fn steps(&self) -> u64 {
        self.to_step.saturating_sub(self.from_step)
    }
}

fn parse_step(digits: &str) -> Option<u64> {
    if digits.len() != 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The stable on-disk id of a domain (stored in the footer).
pub(crate) fn domain_id(domain: Domain) -> u8 {
    domain.index() as u8
}

/// The domain for an on-disk id, if the id is known.
pub(crate) fn domain_from_id(id: u8) -> Option<Domain> {
    Domain::ALL.get(usize::from(id)).copied()
}

/// What [`crate::SortedFileWriter::finish`] reports about the file it
/// made durable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    /// Full path of the final file.
    pub path: PathBuf,
    /// The file name (see [`FileMeta::file_name`]).
    pub name: String,
    /// Domain and step range.
    pub meta: FileMeta,
    /// Number of entries (values and tombstones).
    pub entries: u64,
    /// Size of the file in bytes.
    pub size: u64,
    /// The whole-file xxh3-64 checksum stored in the footer.
    pub checksum: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_for_every_domain() {
        for domain in Domain::ALL {
            let meta = FileMeta {
                domain,
                from_step: 7,
                to_step: 1024,
            };
            let name = meta.file_name();
            assert_eq!(FileMeta::parse_file_name(&name), Some(meta), "{name}");
        }
        let meta = FileMeta {
            domain: Domain::Storage,
            from_step: 0,
            to_step: 16,
        };
        assert_eq!(meta.file_name(), "storage-0000000000-0000000016.sst");
    }

    #[test]
    fn foreign_names_are_rejected() {
        for name in [
            "account-0000000000-0000000016.sst.tmp",
            "account-0000000016-0000000016.sst",
            "account-0000000017-0000000016.sst",
            "account-000000000-0000000016.sst",
            "account-00000000x0-0000000016.sst",
            "accounts-0000000000-0000000016.sst",
            "account-0000000000-0000000016.kv",
            "0000000000-0000000016.sst",
            "",
        ] {
            assert_eq!(FileMeta::parse_file_name(name), None, "{name}");
        }
    }

    #[test]
    fn domain_ids_round_trip() {
        for domain in Domain::ALL {
            assert_eq!(domain_from_id(domain_id(domain)), Some(domain));
        }
        assert_eq!(domain_from_id(4), None);
    }
}
