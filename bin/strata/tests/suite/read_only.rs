//! Issue 12: `root`, `get` and `stats` read a datadir without changing a
//! byte of it (also on a read-only mount), never panic on a damaged redb
//! page, and no command deletes or recreates what it did not make.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use strata_test_support::tree_contents;

use crate::common::{gen_trace, replay_small_steps, strata, strata_ok, testdata};

const ADDR_EOA: &str = "0x00000000000000000000000000000000000000aa";

/// A closed datadir made by replaying the small testdata trace (30 blocks)
/// with small steps, so `files/` holds files too.
fn replayed(dir: &Path) -> PathBuf {
    let datadir = dir.join("db");
    replay_small_steps(&testdata().join("small.jsonl"), &datadir);
    datadir
}

/// The read commands this file is about, on `datadir`.
fn read_commands(datadir: &Path) -> Vec<Vec<String>> {
    let d = datadir.to_str().unwrap().to_owned();
    let with = |args: &[&str]| -> Vec<String> {
        let mut all = vec![args[0].to_owned(), "--datadir".to_owned(), d.clone()];
        all.extend(args[1..].iter().map(|a| (*a).to_owned()));
        all
    };
    vec![
        with(&["root"]),
        with(&["stats"]),
        with(&["stats", "--live"]),
        with(&["get", "account", ADDR_EOA]),
        with(&["get", "storage", ADDR_EOA, "0x1"]),
        with(&["get", "code", ADDR_EOA]),
    ]
}

fn run(args: &[String]) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    strata(&args)
}

/// The exit code of a process that panicked (Rust's default).
const PANIC_EXIT: i32 = 101;

#[test]
fn root_get_stats_change_no_byte_of_the_datadir() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = replayed(dir.path());
    let before = tree_contents(&datadir);
    for args in read_commands(&datadir) {
        let out = run(&args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            tree_contents(&datadir),
            before,
            "{args:?} changed the datadir"
        );
    }
}

/// A read-only bind mount of the datadir: writes fail with EROFS there even
/// for root, so this proves the commands need no write access at all.
struct ReadOnlyMount(PathBuf);

impl ReadOnlyMount {
    fn new(source: &Path, target: &Path) -> Option<ReadOnlyMount> {
        std::fs::create_dir_all(target).unwrap();
        let ok = |args: &[&str]| {
            Command::new("mount")
                .args(args)
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let (s, t) = (source.to_str().unwrap(), target.to_str().unwrap());
        if !ok(&["--bind", s, t]) {
            return None;
        }
        let mount = ReadOnlyMount(target.to_path_buf());
        ok(&["-o", "remount,ro,bind", t]).then_some(mount)
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn root_get_stats_work_on_a_read_only_mount() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = replayed(dir.path());
    let expected: Vec<String> = read_commands(&datadir)
        .iter()
        .map(|args| strata_ok_owned(args))
        .collect();
    let Some(mount) = ReadOnlyMount::new(&datadir, &dir.path().join("ro")) else {
        eprintln!("skipped: cannot make a read-only bind mount here (needs mount and privileges)");
        return;
    };
    assert!(
        std::fs::write(mount.0.join("probe"), b"x").is_err(),
        "the mount is writable"
    );
    let before = tree_contents(&datadir);
    for (args, expected) in read_commands(&mount.0).iter().zip(&expected) {
        assert_eq!(&strata_ok_owned(args), expected, "{args:?}");
    }
    assert_eq!(tree_contents(&datadir), before);
}

fn strata_ok_owned(args: &[String]) -> String {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    strata_ok(&args)
}

#[test]
fn an_empty_or_missing_database_is_an_error_and_nothing_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = replayed(dir.path());
    let db_file = datadir.join(strata_storage::DB_FILE);
    let small = testdata().join("small.jsonl");
    let replay = [
        "replay".to_owned(),
        small.to_str().unwrap().to_owned(),
        "--datadir".to_owned(),
        datadir.to_str().unwrap().to_owned(),
    ];

    std::fs::File::create(&db_file).unwrap();
    let before = tree_contents(&datadir);
    let mut commands = read_commands(&datadir);
    commands.push(replay.to_vec());
    for args in &commands {
        let out = run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} accepted an empty database");
        assert!(stderr.contains("empty"), "{args:?}: {stderr}");
        assert_eq!(
            tree_contents(&datadir),
            before,
            "{args:?} changed the datadir"
        );
    }

    std::fs::remove_file(&db_file).unwrap();
    let before = tree_contents(&datadir);
    let out = run(&replay);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "replay started over from genesis");
    assert!(stderr.contains("missing"), "{stderr}");
    assert_eq!(
        tree_contents(&datadir),
        before,
        "replay changed the datadir"
    );
}

#[test]
fn replay_into_a_new_datadir_keeps_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("h");
    let files = datadir.join(strata_storage::FILES_DIR);
    std::fs::create_dir_all(&files).unwrap();
    let mine = files.join("my.jsonl");
    std::fs::copy(testdata().join("small.jsonl"), &mine).unwrap();
    replay_small_steps(&mine, &datadir);
    assert_eq!(
        std::fs::read(&mine).unwrap(),
        std::fs::read(testdata().join("small.jsonl")).unwrap()
    );
}

/// Zeroes one 4 KiB page of a copy of the datadir's `state.redb` at each of
/// many offsets; `root`, `get` and `stats` exit with an answer or a clear
/// error, never a panic, change nothing, and answer the same way again.
#[test]
fn damaged_redb_pages_never_panic_the_read_commands() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = replayed(dir.path());
    let db_len = std::fs::metadata(datadir.join(strata_storage::DB_FILE))
        .unwrap()
        .len();
    let pages = db_len / 4096;
    assert!(pages > 8, "state.redb has only {pages} pages");
    // The header, 12 pages spread over the file, and the last 4 (the newest
    // commits' pages are often there).
    let mut positions: Vec<u64> = vec![0];
    positions.extend((0..12).map(|i| 1 + i * (pages - 1) / 12));
    positions.extend(pages - 4..pages);
    let (mut answered, mut refused) = (0, 0);
    for &page in &positions {
        let copy = dir.path().join(format!("damaged-{page}"));
        copy_dir(&datadir, &copy);
        zero_page(&copy.join(strata_storage::DB_FILE), page * 4096);
        let before = tree_contents(&copy);
        for args in read_commands(&copy) {
            let first = run(&args);
            let code = first.status.code();
            assert_ne!(code, Some(PANIC_EXIT), "page {page}: {args:?} panicked");
            assert!(
                code.is_some(),
                "page {page}: {args:?} was killed by a signal"
            );
            if first.status.success() {
                answered += 1;
            } else {
                refused += 1;
                let stderr = String::from_utf8_lossy(&first.stderr);
                assert!(
                    stderr.lines().any(|l| l.starts_with("strata: error: ")),
                    "page {page}: {args:?}: no error line in {stderr}"
                );
            }
            assert_eq!(
                tree_contents(&copy),
                before,
                "page {page}: {args:?} changed the datadir"
            );
            let again = run(&args);
            assert_eq!(
                again.status.code(),
                code,
                "page {page}: {args:?} changed its mind"
            );
            assert_eq!(again.stdout, first.stdout, "page {page}: {args:?}");
        }
        std::fs::remove_dir_all(&copy).unwrap();
    }
    eprintln!(
        "{} zeroed pages x {} commands: {answered} answers, {refused} clear errors, 0 panics",
        positions.len(),
        read_commands(&datadir).len()
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

fn zero_page(file: &Path, offset: u64) {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(&[0u8; 4096]).unwrap();
}

/// A writer killed with SIGKILL leaves redb's recovery flag set; the read
/// commands say so clearly (a read-only open cannot recover) and change
/// nothing; a writing command recovers it and they work again.
#[test]
fn read_commands_after_a_killed_writer_answer_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (datadir, trace) = killed_writer_datadir(dir.path());
    let before = tree_contents(&datadir);
    // redb's recovery runs in memory (a copy-on-write view of the file):
    // the commands answer from the last durable block and write nothing.
    for args in read_commands(&datadir) {
        let out = run(&args);
        assert_ne!(out.status.code(), Some(PANIC_EXIT), "{args:?} panicked");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert_eq!(
            tree_contents(&datadir),
            before,
            "{args:?} changed the datadir"
        );
    }
    // The root is the trace's root of the block it names.
    let out = run(&[
        "root".to_owned(),
        "--datadir".to_owned(),
        datadir.to_str().unwrap().to_owned(),
    ]);
    let line = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let (block, root) = line.split_once(' ').expect("N 0x…");
    let text = std::fs::read_to_string(&trace).unwrap();
    let expected = if block == "none" {
        None
    } else {
        let block: u64 = block.parse().unwrap();
        text.lines().find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            let number = if v["kind"] == "genesis" {
                Some(0)
            } else {
                v["number"].as_u64()
            };
            (number == Some(block))
                .then(|| v["state_root"].as_str().map(str::to_owned))
                .flatten()
        })
    };
    if let Some(expected) = expected {
        assert_eq!(root, expected, "root after the kill: {line}");
    }
    // A writer then recovers the file for real, and the answers stay.
    strata_ok(&["compact", "--datadir", datadir.to_str().unwrap()]);
    for args in read_commands(&datadir) {
        strata_ok_owned(&args);
    }
}

/// A datadir in `dir` whose writer (`strata replay` of a long trace) was
/// SIGKILLed mid-replay: redb's recovery flag is set. Returns it and the trace.
fn killed_writer_datadir(dir: &Path) -> (PathBuf, PathBuf) {
    let datadir = dir.join("db");
    let trace = gen_trace(dir, "t.jsonl", 600, 1_500, 5);
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("replay")
        .arg(&trace)
        .arg("--datadir")
        .arg(&datadir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let db_file = datadir.join(strata_storage::DB_FILE);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !db_file.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the replay ended before the kill: make the trace longer"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    (datadir, trace)
}

/// O2/O3: readers of a killed writer's datadir (each recovering it in
/// memory) coexist — in one process and across processes — and a writer
/// refused meanwhile is told what holds the datadir.
#[test]
fn readers_of_a_killed_writers_datadir_do_not_shut_each_other_out() {
    let dir = tempfile::tempdir().unwrap();
    let (datadir, _) = killed_writer_datadir(dir.path());
    let before = tree_contents(&datadir);
    let options = strata_storage::Options::default;
    let first = strata_storage::ReadOnlyStateDb::open(&datadir, options()).unwrap();
    let second = strata_storage::ReadOnlyStateDb::open(&datadir, options())
        .unwrap_or_else(|e| panic!("a second reader beside the first: {e}"));
    assert_eq!(first.root().unwrap(), second.root().unwrap());
    assert_eq!(first.last_block().unwrap(), second.last_block().unwrap());
    let d = datadir.to_str().unwrap();
    let root = strata_ok(&["root", "--datadir", d]);
    assert!(
        root.ends_with(&format!("{}\n", first.root().unwrap())),
        "{root}"
    );
    strata_ok(&["get", "--datadir", d, "account", ADDR_EOA]);
    // A writer waits for no reader: refused, with the reason.
    let out = strata(&["compact", "--datadir", d]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a writer opened beside the readers");
    assert!(
        stderr.contains("recovered a killed writer's database in memory"),
        "{stderr}"
    );
    drop((first, second));
    assert_eq!(
        tree_contents(&datadir),
        before,
        "the readers changed nothing"
    );
    strata_ok(&["compact", "--datadir", d]);
}
