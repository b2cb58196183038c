//! Peak resident memory and time of `SortedFile::open` on a large file
//! (a measurement, ignored by default; it prints, it asserts nothing about
//! time). It writes `STRATA_OPEN_FILE` (default
//! `/tmp/strata-open-rss/storage-0000000000-0000000001.sst`) once, with
//! `STRATA_OPEN_ENTRIES` storage-shaped entries (20,000,000), and then opens it
//! in `STRATA_OPEN_RUNS` (3) fresh child processes, each reporting the
//! growth of its peak RSS (VmHWM, reset through `/proc/self/clear_refs`)
//! across the open, and the open's time:
//!
//! `cargo test -p strata-storage --release --lib open_rss -- --ignored --nocapture`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use crate::{FileMeta, FileSystem, OsFileSystem, SortedFile, SortedFileWriter};
use strata_types::Domain;

const CHILD: &str = "STRATA_OPEN_RSS_CHILD";

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn write_file(path: &Path, entries: u64) {
    let fs: Arc<dyn FileSystem> = Arc::new(OsFileSystem);
    let meta = FileMeta {
        domain: Domain::Storage,
        from_step: 0,
        to_step: 1,
    };
    let mut w = SortedFileWriter::new(fs, path.parent().unwrap(), meta)
        .unwrap()
        .with_expected_keys(entries);
    let mut key = [0u8; 52];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..entries {
        // 1,000 slots per contract, slots increasing pseudo-random hashes.
        key[..8].copy_from_slice(&(i / 1000).to_be_bytes());
        key[8..20].fill(0xc0);
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        key[20..28].copy_from_slice(&(((i % 1000) << 48) | (state >> 16)).to_be_bytes());
        key[28..52].fill((state >> 56) as u8);
        let value = state.to_be_bytes();
        w.push(&key, Some(&value[..1 + (i as usize % 8)])).unwrap();
    }
    w.finish().unwrap();
}

#[test]
#[ignore = "a measurement: writes a large file and opens it in child processes"]
fn open_rss() {
    let path: PathBuf = std::env::var_os("STRATA_OPEN_FILE").map_or_else(
        || PathBuf::from("/tmp/strata-open-rss/storage-0000000000-0000000001.sst"),
        PathBuf::from,
    );
    if let Some(child) = std::env::var_os(CHILD) {
        let path = PathBuf::from(child);
        std::fs::write("/proc/self/clear_refs", "5").unwrap();
        let (hwm, rss) = (status_kib("VmHWM:"), status_kib("VmRSS:"));
        let t = Instant::now();
        let file = SortedFile::open(&OsFileSystem, &path).unwrap();
        let took = t.elapsed();
        let peak = status_kib("VmHWM:");
        println!(
            "RESULT open {:.2} GB ({} entries): {took:.2?}, peak RSS +{} MiB (VmHWM {} -> {} KiB, VmRSS before {} KiB, after {} KiB)",
            file.size_bytes() as f64 / 1e9,
            file.entries(),
            peak.saturating_sub(hwm) / 1024,
            hwm,
            peak,
            rss,
            status_kib("VmRSS:")
        );
        return;
    }
    if !path.exists() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let entries = std::env::var("STRATA_OPEN_ENTRIES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20_000_000);
        let t = Instant::now();
        write_file(&path, entries);
        println!("wrote {} in {:.1?}", path.display(), t.elapsed());
    }
    let runs: usize = std::env::var("STRATA_OPEN_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    for _ in 0..runs {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "tests::open_rss::open_rss",
                "--exact",
                "--ignored",
                "--nocapture",
            ])
            .env(CHILD, &path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for line in text.lines().filter(|l| l.starts_with("RESULT")) {
            println!("{line}");
        }
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
