//! Where a run's CPU went: the process's CPU time and its threads', by
//! name, read from `/proc/self/stat` and `/proc/self/task/*/stat` before
//! and after the run. On two cores every part of a block (the EVM, the
//! root, the senders' recovery, the flush) takes CPU from the others, so
//! the whole block's pace is bounded by their sum over the cores; this
//! shows that sum beside the wall time. `None` off Linux. The threads
//! that end between two looks are counted in `other`.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

/// CPU time consumed so far by the process and by each live thread.
#[derive(Clone, Debug)]
pub(crate) struct CpuSnapshot {
    /// The whole process, ended threads included.
    total: Duration,
    /// Live threads: id → (name, CPU time).
    threads: HashMap<u32, (String, Duration)>,
    /// The main thread's id (the process's).
    main: u32,
}

/// A group of threads a report names: the main thread, or the threads
/// whose name starts with a prefix.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ThreadGroup {
    /// The process's first thread.
    Main(&'static str),
    /// Threads named `prefix…`, as the kernel keeps the name (15 bytes).
    Named(&'static str, &'static str),
}

/// Watches the process's CPU over a run: a snapshot at the start, then
/// looks at the threads that may end before the run does (the reading
/// thread at the chain's end), so that such a thread still counts in its
/// group with the time it had when last seen.
#[derive(Debug)]
pub(crate) struct CpuWatch {
    before: CpuSnapshot,
    last: CpuSnapshot,
    /// The kernel's clock ticks a second.
    ticks: u64,
}

impl CpuWatch {
    /// Starts watching, or `None` where `/proc` cannot tell.
    pub(crate) fn start() -> Option<Self> {
        let ticks = clock_ticks_per_second()?;
        let before = CpuSnapshot::read(Path::new(PROC_SELF), ticks)?;
        Some(CpuWatch {
            last: before.clone(),
            before,
            ticks,
        })
    }

    /// The process now.
    fn now(&self) -> Option<CpuSnapshot> {
        CpuSnapshot::read(Path::new(PROC_SELF), self.ticks)
    }

    /// Looks at every thread: learns the threads started since, and the
    /// names of those that had none yet (a thread names itself once it
    /// runs). About 0.2 ms.
    pub(crate) fn look(&mut self) {
        if let Some(now) = self.now() {
            self.last = now.keeping_ended(&self.last);
        }
    }

    /// Remembers what the threads named `prefix…` it knows of have used
    /// by now: those that may end before the run does. (One `stat` file
    /// each, where a look at every thread reads them all: about 0.2 ms.)
    pub(crate) fn look_at(&mut self, prefix: &str) {
        for (id, (name, time)) in &mut self.last.threads {
            if !name.starts_with(prefix) {
                continue;
            }
            let path = format!("{PROC_SELF}/task/{id}/stat");
            if let Some((_, _, now)) = std::fs::read_to_string(path)
                .ok()
                .and_then(|text| parse_stat(&text))
            {
                *time = ticks_to_duration(now, self.ticks);
            }
        }
    }

    /// What was spent since the start, by `groups`.
    pub(crate) fn spent(&self, groups: &[ThreadGroup]) -> CpuSpent {
        let now = self
            .now()
            .map_or_else(|| self.last.clone(), |now| now.keeping_ended(&self.last));
        now.since(&self.before, groups)
    }
}

/// CPU spent between two snapshots, by group.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct CpuSpent {
    /// The whole process.
    pub(crate) total: Duration,
    /// Each group's share, in the order asked, then `other`: the threads
    /// of no group and those that ended between the snapshots.
    pub(crate) groups: Vec<(&'static str, Duration)>,
}

/// This process under `/proc`.
const PROC_SELF: &str = "/proc/self";

impl CpuSnapshot {
    /// The process described under `proc_self` (a `/proc/<pid>` or a
    /// folder laid out like one), its times counted in `ticks` a second.
    fn read(proc_self: &Path, ticks: u64) -> Option<Self> {
        let (main, _, total) = parse_stat(&std::fs::read_to_string(proc_self.join("stat")).ok()?)?;
        let mut threads = HashMap::new();
        for entry in std::fs::read_dir(proc_self.join("task")).ok()? {
            // A thread that ended while the folder was listed is skipped:
            // its time is in the process's total.
            let Ok(entry) = entry else { continue };
            let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            if let Some((id, name, time)) = parse_stat(&text) {
                threads.insert(id, (name, ticks_to_duration(time, ticks)));
            }
        }
        Some(CpuSnapshot {
            total: ticks_to_duration(total, ticks),
            threads,
            main,
        })
    }

    /// This snapshot with the threads of `earlier` that have ended since,
    /// at the time they had then.
    fn keeping_ended(mut self, earlier: &CpuSnapshot) -> CpuSnapshot {
        for (id, thread) in &earlier.threads {
            self.threads.entry(*id).or_insert_with(|| thread.clone());
        }
        self
    }

    /// What was spent since `before`, by `groups` (each thread counted in
    /// the first group it belongs to).
    pub(crate) fn since(&self, before: &CpuSnapshot, groups: &[ThreadGroup]) -> CpuSpent {
        let total = self.total.saturating_sub(before.total);
        let mut spent = vec![Duration::ZERO; groups.len()];
        for (id, (name, now)) in &self.threads {
            let earlier = before.threads.get(id).map_or(Duration::ZERO, |(_, t)| *t);
            let used = now.saturating_sub(earlier);
            let group = groups.iter().position(|group| match group {
                ThreadGroup::Main(_) => *id == self.main,
                ThreadGroup::Named(_, prefix) => *id != self.main && name.starts_with(prefix),
            });
            if let Some(group) = group {
                spent[group] += used;
            }
        }
        let named: Duration = spent.iter().sum();
        // The files are read one after another: the threads' ticks may run
        // a tick past the process's, which is never less than its parts.
        let total = total.max(named);
        let mut out: Vec<(&'static str, Duration)> = groups
            .iter()
            .map(|group| match group {
                ThreadGroup::Main(label) | ThreadGroup::Named(label, _) => *label,
            })
            .zip(spent)
            .collect();
        out.push(("other", total.saturating_sub(named)));
        CpuSpent { total, groups: out }
    }
}

/// The id, name and user plus system clock ticks of a `stat` line
/// (`pid (comm) state … utime stime …`: the name may hold spaces and
/// parentheses, so the fields are counted from its last `)`).
fn parse_stat(text: &str) -> Option<(u32, String, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let id = text.get(..open)?.trim().parse().ok()?;
    let name = text.get(open + 1..close)?.to_owned();
    let mut fields = text.get(close + 1..)?.split_whitespace();
    // After the name: state (3), ppid, pgrp, session, tty_nr, tpgid,
    // flags, minflt, cminflt, majflt, cmajflt, utime (14), stime (15).
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((id, name, utime.checked_add(stime)?))
}

fn ticks_to_duration(ticks: u64, per_second: u64) -> Duration {
    Duration::from_nanos(
        u64::try_from(u128::from(ticks) * 1_000_000_000 / u128::from(per_second.max(1)))
            .unwrap_or(u64::MAX),
    )
}

/// The kernel's clock ticks a second, in which `/proc` counts CPU time:
/// the `AT_CLKTCK` entry of the process's auxiliary vector
/// (`/proc/self/auxv`, pairs of native words), what `sysconf(_SC_CLK_TCK)`
/// answers.
fn clock_ticks_per_second() -> Option<u64> {
    clock_ticks_in_auxv(&std::fs::read("/proc/self/auxv").ok()?)
}

/// `AT_CLKTCK` in the auxiliary vector `auxv`.
fn clock_ticks_in_auxv(auxv: &[u8]) -> Option<u64> {
    const AT_CLKTCK: u64 = 17;
    const WORD: usize = size_of::<usize>();
    let word = |bytes: &[u8]| -> Option<u64> {
        let bytes: [u8; WORD] = bytes.try_into().ok()?;
        u64::try_from(usize::from_ne_bytes(bytes)).ok()
    };
    auxv.chunks_exact(2 * WORD)
        .map(|pair| (word(&pair[..WORD]), word(&pair[WORD..])))
        .find_map(|(key, value)| (key == Some(AT_CLKTCK)).then_some(value).flatten())
        .filter(|&ticks| ticks > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(id: u32, name: &str, utime: u64, stime: u64) -> String {
        format!(
            "{id} ({name}) S 1 2 3 0 -1 4194560 100 0 0 0 {utime} {stime} 0 0 20 0 4 0 55 1000 200"
        )
    }

    fn write_process(dir: &Path, total: (u64, u64), threads: &[(u32, &str, u64, u64)]) {
        std::fs::create_dir_all(dir.join("task")).unwrap();
        std::fs::write(dir.join("stat"), stat(7, "strata", total.0, total.1)).unwrap();
        for &(id, name, utime, stime) in threads {
            let task = dir.join("task").join(id.to_string());
            std::fs::create_dir_all(&task).unwrap();
            std::fs::write(task.join("stat"), stat(id, name, utime, stime)).unwrap();
        }
    }

    #[test]
    fn the_clock_ticks_are_read_from_the_auxiliary_vector() {
        let pair = |key: usize, value: usize| [key.to_ne_bytes(), value.to_ne_bytes()].concat();
        let auxv = [pair(6, 4096), pair(17, 100), pair(0, 0)].concat();
        assert_eq!(clock_ticks_in_auxv(&auxv), Some(100));
        assert_eq!(clock_ticks_in_auxv(&pair(6, 4096)), None);
        assert_eq!(clock_ticks_in_auxv(&pair(17, 0)), None);
        #[cfg(target_os = "linux")]
        assert!(clock_ticks_per_second().is_some());
    }

    #[test]
    fn a_stat_line_gives_its_id_name_and_ticks_whatever_the_name_holds() {
        assert_eq!(
            parse_stat(&stat(42, "strata-root-0", 150, 25)),
            Some((42, "strata-root-0".to_owned(), 175))
        );
        assert_eq!(
            parse_stat(&stat(9, "a (b) c", 1, 2)),
            Some((9, "a (b) c".to_owned(), 3))
        );
        assert_eq!(parse_stat("9 (cut"), None);
        assert_eq!(parse_stat("x (name) S 1"), None);
    }

    #[test]
    fn time_is_split_by_group_and_what_ended_counts_as_other() {
        let dir = tempfile::tempdir().unwrap();
        let (before, after) = (dir.path().join("before"), dir.path().join("after"));
        write_process(
            &before,
            (100, 20),
            &[
                (7, "strata", 60, 10),
                (8, "strata-root-0", 30, 0),
                (9, "strata-commit", 10, 10),
            ],
        );
        // The commit thread ended; a root thread and a flush thread came.
        write_process(
            &after,
            (500, 60),
            &[
                (7, "strata", 200, 20),
                (8, "strata-root-0", 120, 0),
                (10, "strata-root-42", 40, 0),
                (11, "strata-flush", 50, 10),
            ],
        );
        let groups = [
            ThreadGroup::Main("writer"),
            ThreadGroup::Named("root", "strata-root-"),
            ThreadGroup::Named("flush", "strata-flush"),
            ThreadGroup::Named("senders", "strata-import-r"),
        ];
        let ms = Duration::from_millis;
        let spent = CpuSnapshot::read(&after, 100)
            .unwrap()
            .since(&CpuSnapshot::read(&before, 100).unwrap(), &groups);
        assert_eq!(spent.total, ms(4_400));
        assert_eq!(
            spent.groups,
            vec![
                ("writer", ms(1_500)),
                ("root", ms(1_300)),
                ("flush", ms(600)),
                ("senders", ms(0)),
                ("other", ms(1_000)),
            ]
        );
        assert!(CpuSnapshot::read(&dir.path().join("missing"), 100).is_none());

        // Seen in the middle, a thread that ends before the last look
        // counts in its group with the time it had then.
        let middle = dir.path().join("middle");
        write_process(
            &middle,
            (300, 40),
            &[(7, "strata", 150, 15), (12, "strata-import-read", 80, 5)],
        );
        let seen = CpuSnapshot::read(&after, 100)
            .unwrap()
            .keeping_ended(&CpuSnapshot::read(&middle, 100).unwrap());
        let spent = seen.since(&CpuSnapshot::read(&before, 100).unwrap(), &groups);
        assert_eq!(spent.groups[3], ("senders", ms(850)));
        assert_eq!(
            spent.groups[0],
            ("writer", ms(1_500)),
            "the newer time wins"
        );
        assert_eq!(spent.groups[4], ("other", ms(150)));
    }
}
