//! Check 4b: every stored commitment record must be exactly the record the
//! bulk builder derives from the values. Records are canonical (see
//! `book/src/reference/formats/commitment.md`): the incremental commit and the bulk builder store
//! the same bytes for the same state, so a byte comparison is exact.

use strata_commitment::record_path;

use alloy_primitives::hex::encode as hex;

/// How many differences are listed one by one; the rest are only counted.
pub(super) const LISTED_DIFFERENCES: usize = 10;

/// What the comparison found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct RecordDiff {
    /// Records the store holds (the root record aside).
    pub(super) stored: u64,
    /// Derived records with no stored record.
    pub(super) missing: u64,
    /// Stored records the values do not imply.
    pub(super) extra: u64,
    /// Stored records whose bytes differ from the derived ones.
    pub(super) differing: u64,
    /// The first [`LISTED_DIFFERENCES`] differences, described.
    pub(super) listed: Vec<String>,
}

impl RecordDiff {
    /// Missing, extra and differing records together.
    pub(super) fn total(&self) -> u64 {
        self.missing + self.extra + self.differing
    }

    fn note(&mut self, what: impl FnOnce() -> String) {
        if self.listed.len() < LISTED_DIFFERENCES {
            self.listed.push(what());
        }
    }
}

/// Compares the stored records, given one at a time in key order, with
/// the derived records (`derived`, in key order), as a merge: holds one
/// derived record at a time.
pub(super) struct RecordComparer<I: Iterator<Item = (Vec<u8>, Vec<u8>)>> {
    derived: std::iter::Peekable<I>,
    diff: RecordDiff,
}

impl<I: Iterator<Item = (Vec<u8>, Vec<u8>)>> RecordComparer<I> {
    /// A comparison against `derived` (sorted by key, keys unique, the root
    /// record excluded).
    pub(super) fn new(derived: I) -> Self {
        Self {
            derived: derived.peekable(),
            diff: RecordDiff::default(),
        }
    }

    /// Compares the next stored record (keys strictly increasing from one
    /// call to the next; the root record excluded).
    pub(super) fn stored(&mut self, key: &[u8], value: &[u8]) {
        self.diff.stored += 1;
        loop {
            match self.derived.peek() {
                Some((derived_key, _)) if derived_key.as_slice() < key => {
                    self.diff.missing += 1;
                    self.diff
                        .note(|| format!("missing commitment record at {}", describe(derived_key)));
                    self.derived.next();
                }
                Some((derived_key, derived)) if derived_key.as_slice() == key => {
                    if derived.as_slice() != value {
                        self.diff.differing += 1;
                        self.diff.note(|| {
                            format!(
                                "commitment record at {} differs from the one the values imply: {}",
                                describe(key),
                                first_difference(value, derived)
                            )
                        });
                    }
                    self.derived.next();
                    return;
                }
                _ => {
                    self.diff.extra += 1;
                    self.diff
                        .note(|| format!("extra commitment record at {}", describe(key)));
                    return;
                }
            }
        }
    }

    /// Counts the derived records no stored record matched; the result.
    pub(super) fn finish(mut self) -> RecordDiff {
        for (key, _) in self.derived {
            self.diff.missing += 1;
            self.diff
                .note(|| format!("missing commitment record at {}", describe(&key)));
        }
        self.diff
    }
}

/// `nibble path 0x… (key 0x…)`, or the bare key when it is not a record key.
fn describe(key: &[u8]) -> String {
    match record_path(key) {
        Ok(path) => {
            let nibbles: String = path
                .iter()
                .map(|n| char::from_digit(u32::from(*n), 16).unwrap_or('?'))
                .collect();
            format!("nibble path [{nibbles}] (key 0x{})", hex(key))
        }
        Err(e) => format!("key 0x{} ({e})", hex(key)),
    }
}

/// Where two records first differ, with a few bytes of each.
fn first_difference(stored: &[u8], derived: &[u8]) -> String {
    let at = stored
        .iter()
        .zip(derived)
        .position(|(a, b)| a != b)
        .unwrap_or(stored.len().min(derived.len()));
    let window = |bytes: &[u8]| hex(&bytes[at..bytes.len().min(at + 8)]);
    format!(
        "stored {} bytes, expected {}; first difference at byte {at}: stored 0x{}, expected 0x{}",
        stored.len(),
        derived.len(),
        window(stored),
        window(derived)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    type Record = (Vec<u8>, Vec<u8>);

    fn rec(path: &[u8], bytes: &[u8]) -> Record {
        (strata_commitment::record_key(path), bytes.to_vec())
    }

    fn sorted(mut v: Vec<Record>) -> Vec<Record> {
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    fn compare(stored: &[Record], derived: &[Record]) -> RecordDiff {
        let mut comparer = RecordComparer::new(derived.iter().cloned());
        for (key, value) in stored {
            comparer.stored(key, value);
        }
        comparer.finish()
    }

    #[test]
    fn equal_sets_have_no_difference() {
        let set = sorted(vec![rec(&[], b"\x03ab"), rec(&[1, 2], b"\x01cd")]);
        let diff = compare(&set, &set);
        assert_eq!(diff.total(), 0);
        assert_eq!(diff.stored, 2);
        assert!(diff.listed.is_empty());
    }

    #[test]
    fn missing_extra_and_differing_records_are_counted_and_named() {
        let stored = sorted(vec![
            rec(&[], b"\x03ab"),
            rec(&[1, 2], b"\x01cd"),
            rec(&[7], b"\x01zz"),
        ]);
        let derived = sorted(vec![
            rec(&[], b"\x03ab"),
            rec(&[1, 2], b"\x01ce"),
            rec(&[3, 4, 5], b"\x01ef"),
        ]);
        let diff = compare(&stored, &derived);
        assert_eq!((diff.missing, diff.extra, diff.differing), (1, 1, 1));
        let text = diff.listed.join("\n");
        assert!(
            text.contains("missing commitment record at nibble path [345]"),
            "{text}"
        );
        assert!(
            text.contains("extra commitment record at nibble path [7]"),
            "{text}"
        );
        assert!(text.contains("nibble path [12]"), "{text}");
        assert!(text.contains("first difference at byte 2"), "{text}");
    }

    #[test]
    fn only_the_first_differences_are_listed() {
        let stored: Vec<_> = sorted((0..30u8).map(|n| rec(&[n / 16, n % 16], b"x")).collect());
        let diff = compare(&stored, &[]);
        assert_eq!(diff.extra, 30);
        assert_eq!(diff.listed.len(), LISTED_DIFFERENCES);
    }
}
