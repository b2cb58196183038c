//! The bucket's manifest: which datadir, which base (a redb stream and the
//! immutable files it lists), which batches of blocks follow it, and the
//! objects retired from it with the time they were. The publisher writes
//! it last, after every object it names, so a reader never finds a
//! manifest that names an object not yet there; a replica polls it.
//!
//! Stored as JSON followed by a line `xxh3:<16 hex digits>` over the JSON's
//! bytes: a damaged manifest is refused, never half-read.
//!
//! Each manifest is written twice: first under a name of its own,
//! `manifests/<sequence>.json`, then over `manifest.json`. A PUT cut short
//! must leave the object's previous version, and Garage does not always:
//! a client that disconnects while Garage records a large object's upload
//! as complete has it marked aborted after the previous version was
//! already dropped, and the object is gone. A PUT cut short of a new name
//! loses only itself, so a reader that finds no `manifest.json` reads the
//! newest copy ([`fetch_manifest`]).

use alloy_primitives::B256;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use strata_types::DatadirId;

use crate::bucket::{Bucket, Fetched};
use crate::error::Result;

/// The manifest's object name under the prefix.
pub const MANIFEST: &str = "manifest.json";

/// The folder under the prefix of each manifest's own copy.
pub const MANIFEST_COPIES: &str = "manifests";

/// The name of the copy of manifest number `sequence`.
pub fn manifest_copy(sequence: u64) -> String {
    format!("{MANIFEST_COPIES}/{sequence:020}.json")
}

/// The bucket's manifest as a reader finds it, with the name it was read
/// under: `manifest.json` (`NotModified` while its entity tag is still
/// `etag`), or, when that is missing, the newest copy under `manifests/`
/// (read without an entity tag, so the next poll reads again); `NotFound`
/// when there is neither.
pub(crate) fn fetch_manifest(bucket: &Bucket, etag: Option<&str>) -> Result<(Fetched, String)> {
    match bucket.get_if_changed(MANIFEST, etag)? {
        Fetched::NotFound => {}
        found => return Ok((found, MANIFEST.to_string())),
    }
    let newest = bucket
        .list(MANIFEST_COPIES)?
        .into_iter()
        .map(|(key, _)| key)
        .filter(|key| key.ends_with(".json"))
        .max();
    let Some(key) = newest else {
        return Ok((Fetched::NotFound, MANIFEST.to_string()));
    };
    tracing::warn!(bucket = %bucket.url(), copy = %key, "manifest.json is missing; reading the newest copy");
    let fetched = match bucket.get_if_changed(&key, None)? {
        Fetched::Object(data, _) => Fetched::Object(data, None),
        other => other,
    };
    Ok((fetched, key))
}

/// The manifest format this build writes and reads.
pub const FORMAT: u32 = 1;

/// An object the manifest names, with what it must hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    /// Its name under the prefix.
    pub key: String,
    /// Its length in bytes.
    pub bytes: u64,
    /// The checksum its own bytes carry (a base's closing checksum, a
    /// sorted file's footer checksum, a batch's trailer).
    pub checksum: u64,
}

/// One immutable file of a base.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRef {
    /// `files` (state) or `history`.
    pub folder: String,
    /// Its domain (`Domain::index`).
    pub domain: u8,
    /// Its name in the datadir's folder.
    pub name: String,
    /// The object.
    pub object: ObjectRef,
}

/// The datadir at one flushed head.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseRef {
    /// The head the base holds.
    pub block: u64,
    /// The state root at that head.
    pub root: B256,
    /// The redb tier as one stream (`strata_db::base`).
    pub db: ObjectRef,
    /// The immutable files the same transaction listed, oldest first per
    /// domain and folder.
    pub files: Vec<FileRef>,
}

/// A batch of consecutive blocks after the base.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchRef {
    /// The object.
    pub object: ObjectRef,
    /// Its first block.
    pub first: u64,
    /// Its last block.
    pub last: u64,
    /// The root after its last block.
    pub root: B256,
    /// When the publisher uploaded it (milliseconds since the Unix epoch).
    pub published_unix_ms: u64,
}

/// An object no longer named, deleted once the grace period has passed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retired {
    /// Its name under the prefix.
    pub key: String,
    /// When it was retired (milliseconds since the Unix epoch).
    pub since_unix_ms: u64,
}

/// What the bucket holds of one datadir.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketManifest {
    /// [`FORMAT`].
    pub format: u32,
    /// The datadir published (hex, as `DatadirId` displays it).
    pub datadir_id: String,
    /// Counts the manifests written for this prefix.
    pub sequence: u64,
    /// When it was written (milliseconds since the Unix epoch).
    pub written_unix_ms: u64,
    /// The newest block the bucket holds.
    pub head: u64,
    /// The root after `head`.
    pub root: B256,
    /// Where a replica starts.
    pub base: BaseRef,
    /// The blocks after the base, consecutive, oldest first.
    pub batches: Vec<BatchRef>,
    /// Batches of earlier bases, retired but not yet deleted: a replica
    /// behind the base finds the blocks it misses there while they last.
    #[serde(default)]
    pub earlier: Vec<BatchRef>,
    /// Objects retired, awaiting deletion.
    pub retired: Vec<Retired>,
    /// How long the publisher keeps a retired object (milliseconds): a
    /// replica that read a manifest less than this long ago finds every
    /// object it named.
    pub grace_ms: u64,
}

impl BucketManifest {
    /// The manifest's bytes: JSON and its checksum line.
    pub fn encode(&self) -> Bytes {
        let mut json = serde_json::to_vec_pretty(self).expect("a manifest serializes");
        let checksum = xxh3_64(&json);
        json.extend_from_slice(format!("\nxxh3:{checksum:016x}\n").as_bytes());
        Bytes::from(json)
    }

    /// Decodes and checks a manifest: checksum, format, and a chain of
    /// batches that continues the base block by block up to the head.
    pub fn decode(data: &[u8]) -> Result<BucketManifest, String> {
        let text = std::str::from_utf8(data).map_err(|_| "not text".to_string())?;
        let body_end = text
            .trim_end()
            .rfind('\n')
            .ok_or_else(|| "no checksum line".to_string())?;
        let (json, line) = text.split_at(body_end);
        let stored = line
            .trim()
            .strip_prefix("xxh3:")
            .and_then(|hex| u64::from_str_radix(hex, 16).ok())
            .ok_or_else(|| "no checksum line".to_string())?;
        if xxh3_64(json.as_bytes()) != stored {
            return Err("checksum mismatch".into());
        }
        let manifest: BucketManifest =
            serde_json::from_str(json).map_err(|e| format!("JSON: {e}"))?;
        if manifest.format != FORMAT {
            return Err(format!(
                "manifest format {}, this build reads {FORMAT}",
                manifest.format
            ));
        }
        manifest.check_chain()?;
        Ok(manifest)
    }

    fn check_chain(&self) -> Result<(), String> {
        let mut next = self.base.block + 1;
        for batch in &self.batches {
            if batch.first != next || batch.last < batch.first {
                return Err(format!(
                    "batch {} holds blocks {}..={} where block {next} was due",
                    batch.object.key, batch.first, batch.last
                ));
            }
            next = batch.last + 1;
        }
        if next - 1 != self.head {
            return Err(format!(
                "the head is {} but the blocks end at {}",
                self.head,
                next - 1
            ));
        }
        let root = self.batches.last().map_or(self.base.root, |b| b.root);
        if root != self.root {
            return Err("the root is not the last batch's".into());
        }
        Ok(())
    }

    /// The datadir named, parsed.
    pub fn datadir(&self) -> Result<DatadirId, String> {
        parse_id(&self.datadir_id)
    }
}

/// A datadir identity from its hex text.
pub fn parse_id(text: &str) -> Result<DatadirId, String> {
    if text.len() != 32 {
        return Err(format!("datadir id {text:?} is not 32 hex digits"));
    }
    let mut id = [0u8; 16];
    for (i, byte) in id.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16)
            .map_err(|_| format!("datadir id {text:?} is not hex"))?;
    }
    Ok(DatadirId(id))
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> BucketManifest {
        let object = |key: &str| ObjectRef {
            key: key.into(),
            bytes: 10,
            checksum: 1,
        };
        BucketManifest {
            format: FORMAT,
            datadir_id: DatadirId([0xab; 16]).to_string(),
            sequence: 3,
            written_unix_ms: 1,
            head: 12,
            root: B256::repeat_byte(2),
            base: BaseRef {
                block: 9,
                root: B256::repeat_byte(1),
                db: object("bases/9.base"),
                files: vec![],
            },
            batches: vec![
                BatchRef {
                    object: object("blocks/a"),
                    first: 10,
                    last: 11,
                    root: B256::repeat_byte(3),
                    published_unix_ms: 1,
                },
                BatchRef {
                    object: object("blocks/b"),
                    first: 12,
                    last: 12,
                    root: B256::repeat_byte(2),
                    published_unix_ms: 2,
                },
            ],
            earlier: vec![],
            retired: vec![],
            grace_ms: 1000,
        }
    }

    #[test]
    fn round_trips_and_refuses_damage_and_broken_chains() {
        let m = manifest();
        assert_eq!(BucketManifest::decode(&m.encode()).unwrap(), m);
        assert_eq!(m.datadir().unwrap(), DatadirId([0xab; 16]));
        let mut bad = m.encode().to_vec();
        let at = bad.iter().position(|&b| b == b'9').unwrap();
        bad[at] = b'8';
        assert!(
            BucketManifest::decode(&bad)
                .unwrap_err()
                .contains("checksum")
        );
        let mut gap = m.clone();
        gap.batches[1].first = 13;
        gap.batches[1].last = 13;
        gap.head = 13;
        assert!(
            BucketManifest::decode(&gap.encode())
                .unwrap_err()
                .contains("due")
        );
        let mut root = m;
        root.root = B256::ZERO;
        assert!(BucketManifest::decode(&root.encode()).is_err());
    }
}
