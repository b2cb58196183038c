//! Fault injection and power cuts: a failed write, sync, rename or directory
//! sync reports the error and leaves no visible file; a power cut keeps only
//! what was made durable.

use std::path::Path;
use std::sync::Arc;

use super::{meta, sample_model, write_model};
use crate::{FileError, FileSystem, MemFileSystem, OsFileSystem, SortedFile, SortedFileWriter};
use strata_fs::{Fault, FaultyFileSystem};
use strata_types::Domain;

const DIR: &str = "/db";

fn faulty() -> (MemFileSystem, Arc<FaultyFileSystem>) {
    let mem = MemFileSystem::new();
    let faulty = Arc::new(FaultyFileSystem::new(Arc::new(mem.clone())));
    (mem, faulty)
}

/// Writes a sample file through `fs`, returning the error of whichever step failed.
fn try_write(fs: Arc<dyn FileSystem>) -> Result<(), FileError> {
    let mut w = SortedFileWriter::new(fs, Path::new(DIR), meta(Domain::Account, 0, 1))?;
    for (k, v) in &sample_model(2_000, 50) {
        w.push(k, v.as_deref())?;
    }
    w.finish().map(|_| ())
}

#[test]
fn failed_steps_report_the_error_and_leave_no_file() {
    let cases = [
        (Fault::Create, "create"),
        (Fault::WriteAfter(10_000), "write"),
        (Fault::WriteAfter(0), "write"),
        (Fault::Sync, "sync"),
        (Fault::Rename, "rename"),
        (Fault::SyncDir, "directory sync"),
    ];
    for (fault, op) in cases {
        let (mem, fs) = faulty();
        fs.inject(fault);
        let err = try_write(fs.clone()).expect_err(&format!("{fault:?} was not reported"));
        match &err {
            FileError::Io { op: found, .. } => assert_eq!(*found, op, "{fault:?}: {err}"),
            other => panic!("{fault:?}: expected an I/O error, got {other}"),
        }
        assert!(err.to_string().contains("injected"), "{err}");
        assert!(
            mem.list_dir(Path::new(DIR)).unwrap().is_empty(),
            "{fault:?} left {:?}",
            mem.list_dir(Path::new(DIR)).unwrap()
        );
        assert!(
            mem.power_cut_image()
                .list_dir(Path::new(DIR))
                .unwrap()
                .is_empty()
        );
        // Once the fault clears, the same file can be written.
        fs.clear();
        try_write(fs).unwrap();
    }
}

#[test]
fn a_failed_writer_refuses_further_use() {
    let (_, fs) = faulty();
    let mut w =
        SortedFileWriter::new(fs.clone(), Path::new(DIR), meta(Domain::Account, 0, 1)).unwrap();
    fs.inject(Fault::WriteAfter(0));
    let mut failed = false;
    for i in 0u32..1_000 {
        if w.push(&i.to_be_bytes(), Some(&[0; 64])).is_err() {
            failed = true;
            break;
        }
    }
    assert!(failed, "a 64 KB write must have failed");
    fs.clear();
    let err = w.push(b"\xff\xff\xff\xff\xff", None).unwrap_err();
    assert!(err.to_string().contains("failed earlier"), "{err}");
}

#[test]
fn power_cut_keeps_finished_files_and_drops_unfinished_ones() {
    let mem = MemFileSystem::new();
    let fs: Arc<dyn FileSystem> = Arc::new(mem.clone());
    let dir = Path::new(DIR);
    let model = sample_model(500, 30);
    let done = write_model(&fs, dir, meta(Domain::Storage, 0, 1), &model);

    let mut pending =
        SortedFileWriter::new(Arc::clone(&fs), dir, meta(Domain::Storage, 1, 2)).unwrap();
    for (k, v) in &model {
        pending.push(k, v.as_deref()).unwrap();
    }
    let image = mem.power_cut_image();
    drop(pending);

    assert_eq!(image.list_dir(dir).unwrap(), vec![done.path.clone()]);
    let file = SortedFile::open(&image, &done.path).unwrap();
    assert_eq!(file.checksum(), done.checksum);
    for (k, v) in &model {
        assert_eq!(
            file.get(k)
                .unwrap()
                .map(|v| v.into_value().map(|b| b.to_vec())),
            Some(v.clone())
        );
    }
}

#[test]
fn power_cut_drops_unsynced_bytes() {
    let mem = MemFileSystem::new();
    let dir = Path::new(DIR);
    let source = MemFileSystem::new();
    let source_fs: Arc<dyn FileSystem> = Arc::new(source.clone());
    let info = write_model(
        &source_fs,
        dir,
        meta(Domain::Code, 0, 1),
        &sample_model(100, 10),
    );
    let bytes = source.contents(&info.path).unwrap();

    // Written and renamed, but never synced: the directory entry survives a
    // power cut, the content does not.
    let mut f = mem.create(&info.path).unwrap();
    f.write_all(&bytes).unwrap();
    mem.sync_dir(dir).unwrap();
    let image = mem.power_cut_image();
    assert_eq!(image.contents(&info.path).unwrap().len(), 0);
    let err = SortedFile::open(&image, &info.path).unwrap_err();
    assert!(matches!(err, FileError::Corrupted { .. }), "{err}");
    assert!(err.to_string().contains(&info.name), "{err}");

    // After a sync the content is durable; bytes appended later are not.
    f.sync().unwrap();
    f.write_all(b"more").unwrap();
    let image = mem.power_cut_image();
    assert_eq!(image.contents(&info.path).unwrap(), bytes);
    assert!(SortedFile::open(&image, &info.path).is_ok());
    assert!(
        SortedFile::open(&mem, &info.path).is_err(),
        "the live file has the extra bytes"
    );
}

#[test]
fn os_file_system_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let fs: Arc<dyn FileSystem> = Arc::new(OsFileSystem);
    let model = sample_model(3_000, 40);
    let info = write_model(&fs, tmp.path(), meta(Domain::Account, 4, 8), &model);
    assert_eq!(fs.list_dir(tmp.path()).unwrap(), vec![info.path.clone()]);
    assert_eq!(fs.file_len(&info.path).unwrap(), info.size);
    let file = SortedFile::open(&*fs, &info.path).unwrap();
    for (k, v) in &model {
        assert_eq!(
            file.get(k)
                .unwrap()
                .map(|v| v.into_value().map(|b| b.to_vec())),
            Some(v.clone())
        );
    }
    assert!(matches!(
        SortedFile::open(&*fs, &tmp.path().join("missing.sst")),
        Err(FileError::Io { op: "map", .. })
    ));
}

#[test]
fn failed_rename_on_the_real_file_system_leaves_the_directory_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = Arc::new(FaultyFileSystem::new(Arc::new(OsFileSystem)));
    fs.inject(Fault::Rename);
    let mut w = SortedFileWriter::new(fs.clone(), tmp.path(), meta(Domain::Code, 0, 1)).unwrap();
    w.push(b"k", Some(b"v")).unwrap();
    let err = w.finish().unwrap_err();
    assert!(matches!(err, FileError::Io { op: "rename", .. }), "{err}");
    assert!(
        err.to_string()
            .contains("code-0000000000-0000000001.sst.tmp"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}
