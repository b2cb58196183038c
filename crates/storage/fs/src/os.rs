//! The real file system: `std::fs` for writes, memory maps for reads.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::{CheckMap, FileSystem, WritableFile};
use crate::mmap;

/// Buffer size of file writers: large enough that a 4 KiB block is never a
/// system call of its own.
const WRITE_BUFFER: usize = 256 * 1024;

/// [`FileSystem`] over the operating system's files; reads are memory maps.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsFileSystem;

struct OsWritableFile {
    out: BufWriter<File>,
}

impl WritableFile for OsWritableFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.write_all(buf)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_all()
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl FileSystem for OsFileSystem {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = File::create(path)?;
        Ok(Box::new(OsWritableFile {
            out: BufWriter::with_capacity(WRITE_BUFFER, file),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        // Opening a directory read-only and fsyncing it persists its entries
        // on Unix; other platforms do not support (or need) it.
        #[cfg(unix)]
        {
            File::open(dir)?.sync_all()
        }
        #[cfg(not(unix))]
        {
            let _ = dir;
            Ok(())
        }
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                out.push(entry.path());
            }
        }
        out.sort();
        Ok(out)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        fs::read(path)
    }

    fn map(&self, path: &Path) -> io::Result<Bytes> {
        mmap::map_read_only(&File::open(path)?)
    }

    fn map_checked(&self, path: &Path, check: &mut CheckMap<'_>) -> io::Result<Bytes> {
        mmap::map_checked(&File::open(path)?, check)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        Ok(fs::metadata(path)?.len())
    }
}
