//! The only module of the crate that uses `unsafe`: mapping an immutable
//! file into memory.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::ops::Range;

use bytes::Bytes;

use crate::CheckMap;

/// Maps `file` read-only and hands the map to [`Bytes`], which unmaps it when
/// the last clone or slice is dropped. An empty file gives empty bytes (a
/// zero-length map is an error on some platforms).
pub(crate) fn map_read_only(file: &File) -> io::Result<Bytes> {
    if file.metadata()?.len() == 0 {
        return Ok(Bytes::new());
    }
    // SAFETY: `Mmap::map` is unsafe because another process could truncate
    // or modify the file while it is mapped, which would change bytes behind
    // a shared reference (or fault on access after truncation). strata maps
    // only immutable sorted files: they are written under a temp name, made
    // durable and renamed into place, and never opened for writing again.
    // A file a merge or collation replaced is unlinked as soon as the
    // manifest stops listing it, possibly while a snapshot still maps it:
    // unlinking removes only the name, the inode and its pages live until
    // the last map is dropped, so the mapped bytes stay valid and unchanged
    // (strata never truncates or rewrites a file in place; another process
    // doing so to a datadir it does not own is outside what any mapped
    // store can defend against). The map is read-only, so this process
    // cannot write through it either. Bytes read from it are still
    // bounds-checked and checksummed by the reader, which never assumes a
    // byte pattern for memory safety.
    let map = unsafe { memmap2::Mmap::map(file)? };
    Ok(Bytes::from_owner(map))
}

/// Maps `file` like [`map_read_only`] and runs `check` over the map with a
/// callback that drops the pages of a byte range from the resident set
/// (they stay in the page cache and fault back in on the next read); when
/// `check` returns `true` (it has read every page) the whole map is dropped
/// likewise. A check that releases as it goes keeps only what it has not
/// released yet resident.
pub(crate) fn map_checked(file: &File, check: &mut CheckMap<'_>) -> io::Result<Bytes> {
    let map = map_read_only(file)?;
    let page = page_size();
    let valid = check(&map, &mut |range: Range<usize>| {
        // Whole pages only: the page holding `range.end` may still be read.
        let start = range.start / page * page;
        let end = if range.end >= map.len() {
            map.len()
        } else {
            range.end / page * page
        };
        if start < end {
            release_pages(&map, start..end);
        }
    });
    if valid {
        release_pages(&map, 0..map.len());
    }
    Ok(map)
}

/// The system's page size (4096 if it cannot be read).
fn page_size() -> usize {
    #[cfg(unix)]
    {
        // SAFETY: `sysconf` only reads a system constant; it takes no
        // pointers and has no preconditions.
        let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if let Ok(size) = usize::try_from(size)
            && size.is_power_of_two()
        {
            return size;
        }
    }
    4096
}

/// Drops the resident pages of `range` of `map`, which must be a whole map
/// made by [`map_read_only`] (only [`map_checked`] calls it, on the map it
/// just made), with `range.start` page-aligned and `range.end` within it.
fn release_pages(map: &Bytes, range: Range<usize>) {
    #[cfg(unix)]
    {
        if range.is_empty() || range.end > map.len() {
            return;
        }
        // SAFETY: `map` is the whole shared, read-only file mapping that
        // `map_read_only` returned to `map_checked` a moment ago (an empty
        // file gives no mapping and an empty range returns above); nothing
        // else reaches this private function. `range` lies inside the map
        // (checked above) and starts on a page boundary of it (the map is
        // page-aligned and `map_checked` rounds the start down to a page),
        // so the advice covers only this mapping's pages. MADV_DONTNEED on
        // such a mapping only drops the page-table entries: the mapping
        // stays, and the next access faults the page back in from the page
        // cache or the file. The file is immutable (see `map_read_only`), so
        // every byte read afterwards is the byte read before; no memory is
        // freed or changed under a reference. The advice is a hint: its
        // failure changes nothing and is ignored.
        unsafe {
            libc::madvise(
                map.as_ptr().add(range.start) as *mut libc::c_void,
                range.len(),
                libc::MADV_DONTNEED,
            );
        }
    }
    #[cfg(not(unix))]
    let _ = (map, range);
}
