//! Applying a scan's verdict (`scan.rs`) when a writer opens the journal:
//! the only step of an open that changes files, run only after the scan
//! accepted every segment.
//!
//! In order, each step durable before the next: the temporary files of a
//! rewrite a crash interrupted are removed (their segment is whole); the
//! torn tail is written to a file of its own beside its segment
//! (`….log.torn-OFFSET`, fsynced; strata never deletes it) and then cut off
//! (the segment rewritten to its whole frames, or removed when none is
//! left); every segment of the first format is replaced by its conversion.
//! A crash anywhere leaves segments that scan as before or as after.

use std::path::Path;

use bytes::Bytes;

use super::scan::{Scan, TornTail};
use super::{
    CONVERT_SUFFIX, CutTail, Journal, JournalResult, REWRITE_SUFFIX, Recovered, Segment,
    TORN_INFIX, io_err,
};
use strata_fs::file_name_of;

impl Journal {
    /// Applies `verdict` (holding no problem) and takes over its segments.
    pub(super) fn apply(&mut self, verdict: Scan) -> JournalResult<Recovered> {
        let mut recovered = Recovered::default();
        for stale in &verdict.stale {
            // A rewrite a crash interrupted: the original is still whole.
            self.remove_durably(stale, "remove an interrupted rewrite")?;
        }
        if let Some(torn) = &verdict.torn {
            let kept = self.keep_aside(torn, &verdict)?;
            tracing::warn!(
                segment = %torn.path.display(),
                offset = torn.offset,
                bytes = torn.cut.len(),
                kept_aside = kept.as_ref().map(|p| p.display().to_string()),
                "journal: cut a torn tail an interrupted append left; the cut bytes are kept aside"
            );
            recovered.torn_tail = Some(CutTail {
                segment: torn.path.clone(),
                offset: torn.offset,
                dropped: torn.cut.len() as u64,
            });
            recovered.kept_aside = kept;
        }
        for segment in verdict.segments {
            let torn_here = verdict
                .torn
                .as_ref()
                .is_some_and(|t| t.path == segment.path);
            if segment.legacy {
                self.replace_with(&segment.path, &segment.bytes, CONVERT_SUFFIX)?;
                tracing::info!(
                    segment = %segment.path.display(),
                    blocks = segment.frames.len(),
                    "journal: converted a segment of the first journal format"
                );
                recovered.converted.push(segment.path.clone());
            } else if torn_here {
                self.replace_with(&segment.path, &segment.bytes, REWRITE_SUFFIX)?;
            }
            if let Some(last) = segment.frames.last()
                && self.next_block.is_none_or(|next| last.block >= next)
            {
                self.next_block = Some(last.block + 1);
                self.tip_root = Some(last.link.root);
            }
            self.segments.push(Segment {
                path: segment.path,
                first_block: segment.first_block,
                last_block: segment.frames.last().map(|f| f.block),
                bytes: segment.bytes.len() as u64,
            });
        }
        if let Some(torn) = &verdict.torn
            && torn.remove_segment
        {
            self.remove_durably(&torn.path, "remove a segment holding only a torn tail")?;
        }
        recovered.records = verdict.records;
        Ok(recovered)
    }

    /// Writes the bytes `torn` cuts to a new file beside its segment, fsynced,
    /// and returns its path; `None` when the cut holds no byte (a newest
    /// segment whose header is all it has).
    fn keep_aside(
        &self,
        torn: &TornTail,
        verdict: &Scan,
    ) -> JournalResult<Option<std::path::PathBuf>> {
        if torn.cut.is_empty() {
            return Ok(None);
        }
        let segment = file_name_of(&torn.path).unwrap_or_default();
        let base = format!("{segment}{TORN_INFIX}{}", torn.offset);
        let mut name = base.clone();
        let mut n = 1;
        while verdict.names.contains(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        let path = self.dir.join(name);
        let mut file = self.fs.create(&path).map_err(io_err(&path, "create"))?;
        let written = file
            .write_all(&torn.cut)
            .map_err(io_err(&path, "write"))
            .and_then(|()| file.sync().map_err(io_err(&path, "sync")));
        drop(file);
        if let Err(error) = written {
            // A copy that is not whole is no copy: removed, so the next
            // open (with room on the disk) keeps the tail aside under the
            // same name rather than beside a partial one. The segment is
            // not cut, so nothing is lost.
            let _ = self.fs.remove(&path);
            return Err(error);
        }
        self.fs
            .sync_dir(&self.dir)
            .map_err(io_err(&self.dir, "sync folder"))?;
        Ok(Some(path))
    }

    /// Durably replaces `path` with `bytes` (temp file, sync, rename, sync folder).
    pub(super) fn replace_with(
        &self,
        path: &Path,
        bytes: &Bytes,
        suffix: &str,
    ) -> JournalResult<()> {
        let temp = path.with_extension(suffix.trim_start_matches('.'));
        let mut file = self.fs.create(&temp).map_err(io_err(&temp, "create"))?;
        file.write_all(bytes).map_err(io_err(&temp, "write"))?;
        file.sync().map_err(io_err(&temp, "sync"))?;
        drop(file);
        self.fs
            .rename(&temp, path)
            .map_err(io_err(path, "rename"))?;
        self.fs
            .sync_dir(&self.dir)
            .map_err(io_err(&self.dir, "sync folder"))
    }

    /// Durably replaces `path` with `prefix` (for unwind's cut).
    pub(super) fn rewrite_prefix(&self, path: &Path, prefix: &Bytes) -> JournalResult<()> {
        self.replace_with(path, prefix, REWRITE_SUFFIX)
    }
}
