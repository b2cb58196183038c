//! The publisher: beside a writer (or after it), read-only on its datadir,
//! it keeps a bucket holding what a replica needs — a base (the redb tier
//! as one stream and the immutable files it lists), the blocks since, in
//! batches, and the manifest naming them, written last.
//!
//! Each round ([`Publisher::publish_once`], which the caller repeats at
//! the cadence it wants): the journal's new records
//! (read as another process's journal is, never written) become one
//! batch; a new base is made when the chain of batches would not continue
//! (the writer released blocks not yet read, or unwound) or has grown past
//! [`PublishOptions::base_every`] blocks. Objects are named by what they
//! hold (files by name and checksum, batches by blocks and checksum), so
//! a round after a crash skips what is already there. Objects the manifest
//! no longer names are deleted only after [`PublishOptions::grace`].

use std::collections::HashSet;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use xxhash_rust::xxh3::xxh3_64;

use strata_engine::{Options, ReadOnlyStateDb};
use strata_journal::JournalTail;
use strata_types::DatadirId;
use strata_types::datadir::JOURNAL_DIR;

use crate::batch::{self, BatchBlock};
use crate::bucket::{Bucket, Fetched};
use crate::error::{ReplicaError, Result, io_err};
use crate::manifest::{
    BaseRef, BatchRef, BucketManifest, FORMAT, FileRef, MANIFEST, ObjectRef, Retired,
    fetch_manifest, manifest_copy, now_ms,
};

/// How a publisher runs.
#[derive(Clone, Debug)]
pub struct PublishOptions {
    /// A new base once the batches after the current one hold this many
    /// blocks (a replica starting then replays at most about this many).
    pub base_every: u64,
    /// How long an object the manifest no longer names stays in the
    /// bucket: a replica that read a manifest less than this long ago
    /// finds every object it named.
    pub grace: Duration,
    /// The most blocks one batch holds.
    pub batch_blocks: usize,
    /// Where a base's stream is written before its upload (never the
    /// datadir).
    pub scratch: PathBuf,
}

impl Default for PublishOptions {
    fn default() -> PublishOptions {
        PublishOptions {
            base_every: 2_000,
            grace: Duration::from_secs(600),
            batch_blocks: 256,
            scratch: std::env::temp_dir(),
        }
    }
}

/// What one round did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PublishReport {
    /// The newest block the bucket holds after the round.
    pub head: Option<u64>,
    /// Blocks published in the round.
    pub blocks: u64,
    /// Whether a new base was made.
    pub base: bool,
    /// Objects uploaded (files, bases, batches; the manifest not counted).
    pub uploaded: u64,
    /// Objects skipped because the bucket held them already.
    pub skipped: u64,
    /// Retired objects deleted.
    pub deleted: u64,
}

/// Publishes one datadir to one bucket prefix.
pub struct Publisher {
    bucket: Arc<Bucket>,
    db: ReadOnlyStateDb,
    tail: JournalTail,
    id: DatadirId,
    manifest: Option<BucketManifest>,
    /// Objects known to be in the bucket.
    present: HashSet<String>,
    /// Blocks read from the journal, not yet in a manifest.
    pending: Vec<BatchBlock>,
    /// The manifest in memory differs from the bucket's.
    dirty: bool,
    /// The journal was read once since the open.
    journal_read: bool,
    /// The writer rewrote its journal below the bucket's head (an unwind).
    rewritten: bool,
    options: PublishOptions,
}

impl Publisher {
    /// Opens `datadir` read-only and takes up where the bucket's manifest
    /// stands (refused when the prefix holds another datadir's). Objects
    /// under the prefix that the manifest does not name (a round cut short)
    /// are retired.
    pub fn open(datadir: &Path, bucket: Arc<Bucket>, options: PublishOptions) -> Result<Publisher> {
        // Refreshed only when a base is made (or to check the head when
        // the journal holds nothing new), never block by block.
        let db = ReadOnlyStateDb::open(
            datadir,
            Options::default().with_follow_interval(Duration::from_secs(3600)),
        )?;
        let id = db.datadir_id()?.ok_or_else(|| {
            ReplicaError::Config(format!(
                "{} has no identity (written before datadirs had one): open its writer once",
                datadir.display()
            ))
        })?;
        let manifest = match fetch_manifest(&bucket, None)?.0 {
            Fetched::Object(data, _) => match BucketManifest::decode(&data) {
                Ok(manifest) => Some(manifest),
                Err(what) => {
                    tracing::warn!(bucket = %bucket.url(), %what, "the manifest is damaged; publishing a new base");
                    None
                }
            },
            Fetched::NotFound | Fetched::NotModified => None,
        };
        if let Some(manifest) = &manifest
            && manifest.datadir_id != id.to_string()
        {
            return Err(ReplicaError::Foreign {
                bucket: bucket.url().to_string(),
                key: bucket.url().key(MANIFEST),
                expected: id.to_string(),
                found: manifest.datadir_id.clone(),
            });
        }
        let listed = bucket.list("")?;
        let present: HashSet<String> = listed.into_iter().map(|(key, _)| key).collect();
        let mut publisher = Publisher {
            bucket,
            db,
            tail: JournalTail::new(datadir.join(JOURNAL_DIR), Some(id)),
            id,
            manifest,
            present,
            pending: Vec::new(),
            dirty: false,
            journal_read: false,
            rewritten: false,
            options,
        };
        publisher.retire_unnamed();
        Ok(publisher)
    }

    /// The manifest the bucket holds, as this publisher last wrote or read it.
    pub fn manifest(&self) -> Option<&BucketManifest> {
        self.manifest.as_ref()
    }

    /// The bucket published to.
    pub fn bucket(&self) -> &Arc<Bucket> {
        &self.bucket
    }

    /// Retires every object under the prefix the manifest does not name.
    fn retire_unnamed(&mut self) {
        let Some(manifest) = &mut self.manifest else {
            return;
        };
        let copy = manifest_copy(manifest.sequence);
        let mut named: HashSet<&str> = HashSet::new();
        named.insert(MANIFEST);
        named.insert(&copy);
        named.insert(&manifest.base.db.key);
        for file in &manifest.base.files {
            named.insert(&file.object.key);
        }
        for batch in manifest.batches.iter().chain(&manifest.earlier) {
            named.insert(&batch.object.key);
        }
        for retired in &manifest.retired {
            named.insert(&retired.key);
        }
        let now = now_ms();
        let unnamed: Vec<String> = self
            .present
            .iter()
            .filter(|key| !named.contains(key.as_str()))
            .cloned()
            .collect();
        for key in unnamed {
            manifest.retired.push(Retired {
                key,
                since_unix_ms: now,
            });
            self.dirty = true;
        }
    }

    /// Publishes what the datadir holds that the bucket does not, then
    /// deletes retired objects whose grace period has passed.
    pub fn publish_once(&mut self) -> Result<PublishReport> {
        let mut report = PublishReport::default();
        if let Some((base, head)) = self.manifest.as_ref().map(|m| (m.base.block, m.head)) {
            // The first read passes over what the bucket holds; after it,
            // the tail returns a block at or below the head only when the
            // writer rewrote its journal (an unwind): a new base then.
            let after = if self.journal_read { base } else { head };
            let read = self.tail.read_after(Some(after))?;
            self.journal_read = true;
            if read.iter().any(|r| r.block <= head) {
                self.pending.clear();
                self.rewritten = true;
            } else {
                self.pending.extend(read.into_iter().map(BatchBlock::from));
            }
        }
        // Blocks that continue the bucket's chain go up before any new
        // base, so that a replica at the old head reaches the new base
        // through them (they stay, retired, among the earlier batches).
        if self.continues() {
            self.publish_pending(&mut report)?;
        }
        let mut attempts = 0;
        while self.needs_base()? {
            attempts += 1;
            if attempts > 3 {
                return Err(ReplicaError::Config(
                    "the writer released the journal's blocks faster than a base could be made; \
                     will try again next round"
                        .into(),
                ));
            }
            self.make_base(&mut report)?;
            report.base = true;
        }
        self.publish_pending(&mut report)?;
        if self.dirty {
            self.write_manifest()?;
        }
        report.deleted = self.delete_expired()?;
        report.head = self.manifest.as_ref().map(|m| m.head);
        Ok(report)
    }

    /// Uploads the pending blocks as batches and adds them to the manifest.
    fn publish_pending(&mut self, report: &mut PublishReport) -> Result<()> {
        while !self.pending.is_empty() {
            let take = self.pending.len().min(self.options.batch_blocks.max(1));
            let blocks = self.pending[..take].to_vec();
            self.publish_batch(&blocks, report)?;
            self.pending.drain(..take);
        }
        Ok(())
    }

    /// Whether the pending blocks continue the bucket's chain (none
    /// pending: nothing to continue).
    fn continues(&self) -> bool {
        match (&self.manifest, self.pending.first()) {
            (Some(manifest), Some(first)) => {
                !self.rewritten
                    && first.block == manifest.head + 1
                    && first.link.parent == manifest.root
            }
            _ => false,
        }
    }

    /// Whether the bucket needs a new base before the pending blocks.
    fn needs_base(&mut self) -> Result<bool> {
        let Some(manifest) = &self.manifest else {
            return Ok(true);
        };
        let head = manifest.head;
        if self.rewritten || head - manifest.base.block >= self.options.base_every {
            return Ok(true);
        }
        if !self.pending.is_empty() {
            return Ok(!self.continues());
        }
        // Nothing new in the journal. When a segment that would hold the
        // next block is there, there is no next block yet; otherwise the
        // writer may have released blocks unread (a flush): redb's head
        // tells. (The follower is refreshed only here and for a base: it
        // does not follow each block.)
        if self.journal_may_hold(head + 1) {
            return Ok(false);
        }
        self.db.catch_up()?;
        Ok(self.db.last_block()? != Some(head))
    }

    /// Whether a journal segment that would hold `block` is in the folder.
    fn journal_may_hold(&self, block: u64) -> bool {
        let Ok(entries) = std::fs::read_dir(self.tail.dir()) else {
            return false;
        };
        entries.flatten().any(|entry| {
            entry
                .file_name()
                .to_str()
                .and_then(strata_journal::segment_first_block)
                .is_some_and(|first| first <= block)
        })
    }

    /// Writes a new base: the redb stream and every file it lists that
    /// the bucket lacks, then re-reads the journal after the base's head.
    fn make_base(&mut self, report: &mut PublishReport) -> Result<()> {
        std::fs::create_dir_all(&self.options.scratch)
            .map_err(io_err(&self.options.scratch, "create the scratch folder"))?;
        let scratch = self.options.scratch.join(format!(
            "strata-base-{}-{}.part",
            std::process::id(),
            now_ms()
        ));
        let result = self.make_base_through(&scratch, report);
        let _ = std::fs::remove_file(&scratch);
        result
    }

    fn make_base_through(&mut self, scratch: &Path, report: &mut PublishReport) -> Result<()> {
        self.db.catch_up()?;
        let exported = {
            let file = std::fs::File::create(scratch).map_err(io_err(scratch, "create"))?;
            let mut out = BufWriter::with_capacity(1 << 20, file);
            let exported = self.db.export_base(&mut out)?;
            out.flush().map_err(io_err(scratch, "write"))?;
            exported
        };
        if exported.datadir_id != self.id {
            return Err(ReplicaError::Config(
                "the datadir's identity changed".into(),
            ));
        }
        let mut files = Vec::with_capacity(exported.files.len());
        for file in &exported.files {
            let key = format!(
                "{}/{}.{:016x}",
                file.kind.folder(),
                file.name,
                file.checksum
            );
            self.upload(&key, report, |bucket, key| {
                bucket.put(key, file.bytes.clone())
            })?;
            files.push(FileRef {
                folder: file.kind.folder().to_string(),
                domain: file.domain.index() as u8,
                name: file.name.clone(),
                object: ObjectRef {
                    key,
                    bytes: file.bytes.len() as u64,
                    checksum: file.checksum,
                },
            });
        }
        let head = exported.head;
        let db_key = format!(
            "bases/{:020}-{:016x}.base",
            head.block, exported.summary.checksum
        );
        self.upload(&db_key, report, |bucket, key| {
            bucket.put_file(key, scratch).map(|_| ())
        })?;
        let base = BaseRef {
            block: head.block,
            root: head.root,
            db: ObjectRef {
                key: db_key,
                bytes: exported.summary.bytes,
                checksum: exported.summary.checksum,
            },
            files,
        };
        let now = now_ms();
        let (sequence, mut retired, mut earlier) = match self.manifest.take() {
            Some(old) => {
                let mut retired = old.retired;
                let kept: HashSet<&str> = base
                    .files
                    .iter()
                    .map(|f| f.object.key.as_str())
                    .chain([base.db.key.as_str()])
                    .collect();
                let mut gone: Vec<String> = old
                    .base
                    .files
                    .iter()
                    .map(|f| f.object.key.clone())
                    .chain([old.base.db.key.clone()])
                    .filter(|key| !kept.contains(key.as_str()))
                    .collect();
                gone.extend(old.batches.iter().map(|b| b.object.key.clone()));
                retired.extend(gone.into_iter().map(|key| Retired {
                    key,
                    since_unix_ms: now,
                }));
                let mut earlier = old.earlier;
                earlier.extend(old.batches);
                (old.sequence, retired, earlier)
            }
            None => (0, Vec::new(), Vec::new()),
        };
        retired
            .retain(|r| r.key != base.db.key && !base.files.iter().any(|f| f.object.key == r.key));
        earlier.retain(|b| retired.iter().any(|r| r.key == b.object.key));
        self.manifest = Some(BucketManifest {
            format: FORMAT,
            datadir_id: self.id.to_string(),
            sequence,
            written_unix_ms: now,
            head: head.block,
            root: head.root,
            base,
            batches: Vec::new(),
            earlier,
            retired,
            grace_ms: self.options.grace.as_millis() as u64,
        });
        self.dirty = true;
        // Everything after the base's head, from the journal again.
        self.rewritten = false;
        self.tail.reset();
        self.pending = self
            .tail
            .read_after(Some(head.block))?
            .into_iter()
            .map(BatchBlock::from)
            .collect();
        Ok(())
    }

    /// Uploads `blocks` as one batch and adds it to the manifest.
    fn publish_batch(&mut self, blocks: &[BatchBlock], report: &mut PublishReport) -> Result<()> {
        let manifest = self.manifest.as_ref().expect("a base is made first");
        let (mut next, mut parent) = (manifest.head + 1, manifest.root);
        for block in blocks {
            if block.block != next || block.link.parent != parent {
                return Err(ReplicaError::Config(format!(
                    "the journal's block {} does not continue block {} (root {parent})",
                    block.block,
                    next - 1
                )));
            }
            (next, parent) = (block.block + 1, block.link.root);
        }
        let data = batch::encode(self.id, blocks);
        let checksum = xxh3_64(&data);
        let (first, last) = (blocks[0].block, blocks[blocks.len() - 1].block);
        let key = format!("blocks/{first:020}-{last:020}-{checksum:016x}.blk");
        let bytes = data.len() as u64;
        self.upload(&key, report, |bucket, key| bucket.put(key, data.clone()))?;
        let manifest = self.manifest.as_mut().expect("a base is made first");
        // A batch a new base sends again holds the same bytes under the same
        // name as one it retired: named again, it must not be deleted.
        manifest.retired.retain(|r| r.key != key);
        manifest.batches.push(BatchRef {
            object: ObjectRef {
                key,
                bytes,
                checksum,
            },
            first,
            last,
            root: parent,
            published_unix_ms: now_ms(),
        });
        manifest.head = last;
        manifest.root = parent;
        self.dirty = true;
        report.blocks += blocks.len() as u64;
        Ok(())
    }

    /// Uploads one object unless the bucket holds it already.
    fn upload(
        &mut self,
        key: &str,
        report: &mut PublishReport,
        put: impl FnOnce(&Bucket, &str) -> Result<()>,
    ) -> Result<()> {
        if self.present.contains(key) {
            report.skipped += 1;
            return Ok(());
        }
        put(&self.bucket, key)?;
        self.present.insert(key.to_string());
        report.uploaded += 1;
        Ok(())
    }

    /// Writes the manifest under a name of its own, then over
    /// `manifest.json` (see [`crate::manifest`] for why both); the copy
    /// before it is retired.
    fn write_manifest(&mut self) -> Result<()> {
        let manifest = self.manifest.as_mut().expect("a base is made first");
        let now = now_ms();
        let previous = manifest_copy(manifest.sequence);
        if self.present.contains(&previous) && !manifest.retired.iter().any(|r| r.key == previous) {
            manifest.retired.push(Retired {
                key: previous,
                since_unix_ms: now,
            });
        }
        manifest.sequence += 1;
        manifest.written_unix_ms = now;
        let data = manifest.encode();
        let copy = manifest_copy(manifest.sequence);
        self.bucket.put(&copy, data.clone())?;
        self.present.insert(copy);
        self.bucket.put(MANIFEST, data)?;
        self.dirty = false;
        Ok(())
    }

    /// Deletes retired objects older than the grace period, after writing
    /// a manifest that no longer names them.
    fn delete_expired(&mut self) -> Result<u64> {
        let Some(manifest) = &mut self.manifest else {
            return Ok(0);
        };
        let cutoff = now_ms().saturating_sub(self.options.grace.as_millis() as u64);
        let expired: Vec<String> = manifest
            .retired
            .iter()
            .filter(|r| r.since_unix_ms <= cutoff)
            .map(|r| r.key.clone())
            .collect();
        if expired.is_empty() {
            return Ok(0);
        }
        // First the manifest stops naming them, then they go.
        manifest.retired.retain(|r| r.since_unix_ms > cutoff);
        manifest
            .earlier
            .retain(|b| !expired.contains(&b.object.key));
        self.write_manifest()?;
        for key in &expired {
            self.bucket.delete(key)?;
            self.present.remove(key);
        }
        Ok(expired.len() as u64)
    }
}
