//! An in-memory file system that remembers what is durable, so a test can
//! take the image a power cut would leave behind, and patch bytes.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::{FileSystem, WritableFile};

/// In-memory [`FileSystem`] with a simple crash model:
///
/// * a file's content is durable up to its last [`WritableFile::sync`];
/// * a directory entry (creation, rename, removal) is durable after
///   [`FileSystem::sync_dir`] of its directory.
///
/// [`MemFileSystem::power_cut_image`] returns the file system a power cut at
/// this instant would leave: durable names bound to durable contents.
/// Directories are implicit: any path prefix is a directory.
#[derive(Clone, Default)]
pub struct MemFileSystem {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for MemFileSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.lock();
        f.debug_struct("MemFileSystem")
            .field("files", &state.names.len())
            .field("durable_files", &state.durable_names.len())
            .finish()
    }
}

#[derive(Default)]
struct State {
    inodes: HashMap<u64, Inode>,
    names: BTreeMap<PathBuf, u64>,
    durable_names: BTreeMap<PathBuf, u64>,
    next_inode: u64,
}

#[derive(Clone, Default)]
struct Inode {
    data: Vec<u8>,
    durable: Vec<u8>,
}

impl State {
    fn lookup(&self, path: &Path) -> io::Result<u64> {
        self.names.get(path).copied().ok_or_else(|| not_found(path))
    }

    fn inode_mut(&mut self, path: &Path) -> io::Result<&mut Inode> {
        let id = self.lookup(path)?;
        self.inodes.get_mut(&id).ok_or_else(|| not_found(path))
    }

    fn new_inode(&mut self, inode: Inode) -> u64 {
        let id = self.next_inode;
        self.next_inode += 1;
        self.inodes.insert(id, inode);
        id
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file", path.display()),
    )
}

struct MemWritableFile {
    state: Arc<Mutex<State>>,
    inode: u64,
}

impl WritableFile for MemWritableFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let mut state = self.state.lock();
        let inode = state
            .inodes
            .get_mut(&self.inode)
            .ok_or_else(|| io::Error::other("written file no longer exists"))?;
        inode.data.extend_from_slice(buf);
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        let mut state = self.state.lock();
        let inode = state
            .inodes
            .get_mut(&self.inode)
            .ok_or_else(|| io::Error::other("synced file no longer exists"))?;
        inode.durable = inode.data.clone();
        Ok(())
    }
}

impl MemFileSystem {
    /// An empty file system.
    pub fn new() -> Self {
        Self::default()
    }

    /// The file system a power cut now would leave: only directory entries
    /// made durable by `sync_dir`, each with the content of its last sync.
    /// Feature `test-utils`.
    #[cfg(any(test, feature = "test-utils"))]
    pub fn power_cut_image(&self) -> MemFileSystem {
        let state = self.state.lock();
        let mut image = State::default();
        for (path, id) in &state.durable_names {
            let durable = state
                .inodes
                .get(id)
                .map(|inode| inode.durable.clone())
                .unwrap_or_default();
            let new_id = image.new_inode(Inode {
                data: durable.clone(),
                durable,
            });
            image.names.insert(path.clone(), new_id);
        }
        image.durable_names = image.names.clone();
        MemFileSystem {
            state: Arc::new(Mutex::new(image)),
        }
    }

    /// Puts a file with `data` at `path`, durable (content and name).
    pub fn insert(&self, path: &Path, data: Vec<u8>) {
        let mut state = self.state.lock();
        let id = state.new_inode(Inode {
            durable: data.clone(),
            data,
        });
        state.names.insert(path.to_path_buf(), id);
        state.durable_names.insert(path.to_path_buf(), id);
    }

    /// The current content of `path`, if it exists.
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let state = self.state.lock();
        let id = state.names.get(path)?;
        state.inodes.get(id).map(|inode| inode.data.clone())
    }

    /// Overwrites bytes at `offset` (current and durable content), as a
    /// bit-rotting disk would. Fails if the range is outside the file.
    pub fn patch(&self, path: &Path, offset: usize, bytes: &[u8]) -> io::Result<()> {
        let mut state = self.state.lock();
        let inode = state.inode_mut(path)?;
        let end = offset
            .checked_add(bytes.len())
            .filter(|&end| end <= inode.data.len())
            .ok_or_else(|| io::Error::other("patch range is outside the file"))?;
        inode.data[offset..end].copy_from_slice(bytes);
        inode.durable = inode.data.clone();
        Ok(())
    }

    /// Cuts the file to `len` bytes (current and durable content).
    pub fn truncate(&self, path: &Path, len: usize) -> io::Result<()> {
        let mut state = self.state.lock();
        let inode = state.inode_mut(path)?;
        inode.data.truncate(len);
        inode.durable = inode.data.clone();
        Ok(())
    }
}

fn parent_of(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new(""))
}

impl FileSystem for MemFileSystem {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let mut state = self.state.lock();
        let id = state.new_inode(Inode::default());
        state.names.insert(path.to_path_buf(), id);
        Ok(Box::new(MemWritableFile {
            state: Arc::clone(&self.state),
            inode: id,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        let id = state.lookup(from)?;
        state.names.remove(from);
        state.names.insert(to.to_path_buf(), id);
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.durable_names.retain(|p, _| parent_of(p) != dir);
        let entries: Vec<(PathBuf, u64)> = state
            .names
            .iter()
            .filter(|(p, _)| parent_of(p) == dir)
            .map(|(p, id)| (p.clone(), *id))
            .collect();
        state.durable_names.extend(entries);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.lookup(path)?;
        state.names.remove(path);
        Ok(())
    }

    fn create_dir_all(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let state = self.state.lock();
        Ok(state
            .names
            .keys()
            .filter(|p| parent_of(p) == dir)
            .cloned()
            .collect())
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.contents(path).ok_or_else(|| not_found(path))
    }

    fn map(&self, path: &Path) -> io::Result<Bytes> {
        self.read(path).map(Bytes::from)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        let state = self.state.lock();
        let id = state.lookup(path)?;
        Ok(state.inodes.get(&id).map_or(0, |i| i.data.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(fs: &MemFileSystem, path: &Path, data: &[u8], sync: bool) {
        let mut f = fs.create(path).unwrap();
        f.write_all(data).unwrap();
        if sync {
            f.sync().unwrap();
        }
    }

    #[test]
    fn power_cut_keeps_only_synced_content_under_synced_names() {
        let fs = MemFileSystem::new();
        let dir = Path::new("/d");
        let a = dir.join("a");
        let b = dir.join("b");
        write(&fs, &a, b"durable", true);
        fs.sync_dir(dir).unwrap();
        // b: content synced but its name never made durable.
        write(&fs, &b, b"lost name", true);
        // a: more bytes appended without a sync.
        let mut f = fs.create(&dir.join("c")).unwrap();
        f.write_all(b"unsynced").unwrap();
        fs.sync_dir(dir).unwrap();

        let image = fs.power_cut_image();
        assert_eq!(image.contents(&a).unwrap(), b"durable");
        assert_eq!(image.contents(&b).unwrap(), b"lost name");
        assert_eq!(image.contents(&dir.join("c")).unwrap(), b"");

        let fs = MemFileSystem::new();
        write(&fs, &a, b"x", true);
        assert_eq!(fs.power_cut_image().contents(&a), None);
    }

    #[test]
    fn rename_is_durable_only_after_dir_sync() {
        let fs = MemFileSystem::new();
        let dir = Path::new("/d");
        write(&fs, &dir.join("t.tmp"), b"data", true);
        fs.sync_dir(dir).unwrap();
        fs.rename(&dir.join("t.tmp"), &dir.join("t")).unwrap();
        let image = fs.power_cut_image();
        assert!(image.contents(&dir.join("t")).is_none());
        assert!(image.contents(&dir.join("t.tmp")).is_some());
        fs.sync_dir(dir).unwrap();
        let image = fs.power_cut_image();
        assert_eq!(image.contents(&dir.join("t")).unwrap(), b"data");
        assert!(image.contents(&dir.join("t.tmp")).is_none());
        assert_eq!(image.list_dir(dir).unwrap(), vec![dir.join("t")]);
    }

    #[test]
    fn patch_and_truncate_check_bounds() {
        let fs = MemFileSystem::new();
        let p = Path::new("/f");
        fs.insert(p, vec![0; 4]);
        fs.patch(p, 2, &[7, 7]).unwrap();
        assert!(fs.patch(p, 3, &[1, 1]).is_err());
        assert!(fs.patch(p, usize::MAX, &[1]).is_err());
        fs.truncate(p, 3).unwrap();
        assert_eq!(fs.contents(p).unwrap(), vec![0, 0, 7]);
        assert!(fs.patch(Path::new("/missing"), 0, &[1]).is_err());
    }
}
