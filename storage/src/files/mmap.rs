//! The only module of the crate that uses `unsafe`: mapping an immutable
//! file into memory.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;

use bytes::Bytes;

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

/// Drops the resident pages of `map`, a whole read-only map made by
/// [`map_read_only`] (nothing happens for anything else: an empty or
/// unaligned slice).
pub(crate) fn release_pages(map: &[u8]) {
    #[cfg(unix)]
    {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let start = map.as_ptr() as usize;
        if map.is_empty() || page <= 0 || !start.is_multiple_of(page as usize) {
            return;
        }
        // SAFETY: `map` is a whole shared, read-only file mapping made by
        // `map_read_only` (the only caller is `OsFileSystem::release_pages`
        // on the bytes its `map` returned; the alignment check above keeps
        // anything else out). MADV_DONTNEED on such a mapping only drops
        // the page-table entries: the mapping stays, and the next access
        // faults the page back in from the page cache or the file. The file
        // is immutable (see `map_read_only`), so every byte read afterwards
        // is the byte read before; no memory is freed under a reference.
        // The advice is a hint: its failure changes nothing and is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, map.len(), libc::MADV_DONTNEED);
        }
    }
    #[cfg(not(unix))]
    let _ = map;
}
