//! The machine a replay ran on, for the report: CPU threads, memory, load
//! average at the start, and the process's peak resident set. Read from
//! `/proc` on Linux; elsewhere the figures are `None` (null in the JSON,
//! "unknown" in the text).

use std::path::Path;

/// The host at the start of a replay.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub(crate) struct Host {
    /// `std::env::consts::OS` ("linux", "macos", …).
    pub(crate) os: &'static str,
    /// `std::env::consts::ARCH` ("x86_64", "aarch64", …).
    pub(crate) arch: &'static str,
    /// The kernel release (`/proc/sys/kernel/osrelease`), if known.
    pub(crate) kernel: Option<String>,
    /// CPU threads this process may run on (`available_parallelism`).
    pub(crate) cores: Option<usize>,
    /// Total memory in bytes (`MemTotal` of `/proc/meminfo`).
    pub(crate) memory_bytes: Option<u64>,
    /// Load average over 1, 5 and 15 minutes (`/proc/loadavg`).
    pub(crate) load_average: Option<[f64; 3]>,
}

impl Host {
    /// The host as it is now.
    pub(crate) fn now() -> Self {
        Self::read(Path::new("/proc"))
    }

    /// The host as described under `proc` (a procfs mount, or a directory
    /// laid out like one); missing or unreadable files give `None`.
    pub(crate) fn read(proc: &Path) -> Self {
        let text = |path: &str| std::fs::read_to_string(proc.join(path)).ok();
        Host {
            os: std::env::consts::OS,
            arch: std::env::consts::ARCH,
            kernel: text("sys/kernel/osrelease")
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty()),
            cores: std::thread::available_parallelism().ok().map(usize::from),
            memory_bytes: text("meminfo").and_then(|s| kib_field(&s, "MemTotal:")),
            load_average: text("loadavg").and_then(|s| load_average(&s)),
        }
    }
}

/// This machine's memory in bytes (`MemTotal` of `/proc/meminfo`), or
/// `None` off Linux: the bound of a memory budget a command allocates
/// up front (`verify --sort-memory`).
pub(crate) fn total_memory_bytes() -> Option<u64> {
    Host::now().memory_bytes
}

/// The process's peak resident set in bytes (`VmHWM` of
/// `/proc/self/status`), or `None` off Linux.
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    kib_field(&status, "VmHWM:")
}

/// A `NAME:   1234 kB` line of a `/proc` status-like file, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix(name))?;
    let mut parts = line.split_whitespace();
    let kib: u64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") => kib.checked_mul(1024),
        _ => None,
    }
}

/// The first three fields of `/proc/loadavg`.
fn load_average(text: &str) -> Option<[f64; 3]> {
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    let mut out = [0.0; 3];
    for slot in &mut out {
        *slot = fields.next()??;
    }
    out.iter()
        .all(|v| v.is_finite() && *v >= 0.0)
        .then_some(out)
}

/// Bytes as "1.2 GiB" / "340.0 MiB" / "12.0 KiB", or "unknown".
pub(crate) fn format_bytes(bytes: Option<u64>) -> String {
    let Some(bytes) = bytes else {
        return "unknown".into();
    };
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else {
        format!("{:.1} KiB", b / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_are_read_and_missing_ones_are_none() {
        let dir = tempfile::tempdir().unwrap();
        let proc = dir.path();
        std::fs::create_dir_all(proc.join("sys/kernel")).unwrap();
        std::fs::write(proc.join("sys/kernel/osrelease"), "6.1.0-test\n").unwrap();
        std::fs::write(
            proc.join("meminfo"),
            "MemTotal:        8048576 kB\nMemFree:  1 kB\n",
        )
        .unwrap();
        std::fs::write(proc.join("loadavg"), "0.52 1.25 2.00 3/456 7890\n").unwrap();
        let host = Host::read(proc);
        assert_eq!(host.kernel.as_deref(), Some("6.1.0-test"));
        assert_eq!(host.memory_bytes, Some(8_048_576 * 1024));
        assert_eq!(host.load_average, Some([0.52, 1.25, 2.0]));

        let empty = tempfile::tempdir().unwrap();
        let host = Host::read(empty.path());
        assert_eq!(
            (host.kernel, host.memory_bytes, host.load_average),
            (None, None, None)
        );
    }

    #[test]
    fn malformed_lines_give_none_not_a_panic() {
        assert_eq!(kib_field("MemTotal: lots kB\n", "MemTotal:"), None);
        assert_eq!(kib_field("MemTotal: 12 MB\n", "MemTotal:"), None);
        assert_eq!(kib_field("MemTotal: 12\n", "MemTotal:"), None);
        assert_eq!(
            kib_field(&format!("VmHWM: {} kB\n", u64::MAX), "VmHWM:"),
            None
        );
        assert_eq!(kib_field("VmHWM:\t  2048 kB\n", "VmHWM:"), Some(2 << 20));
        assert_eq!(load_average("0.1 0.2\n"), None);
        assert_eq!(load_average("0.1 x 0.3 1/2 3\n"), None);
        assert_eq!(load_average("NaN 0.2 0.3 1/2 3\n"), None);
        assert_eq!(load_average(""), None);
    }

    #[test]
    fn bytes_are_formatted_in_binary_units() {
        assert_eq!(format_bytes(None), "unknown");
        assert_eq!(format_bytes(Some(2048)), "2.0 KiB");
        assert_eq!(format_bytes(Some(340 << 20)), "340.0 MiB");
        assert_eq!(format_bytes(Some(3 << 29)), "1.50 GiB");
    }
}
