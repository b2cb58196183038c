//! The operation-sequence fuzzer of [`strata_storage::StateDb`]: the input
//! decodes ([`decode`]) into a store configuration and a sequence of blocks
//! of account, storage and code writes and deletions (storage wipes),
//! compactions, unwinds, reopens, power cuts and injected I/O failures;
//! [`run`] drives a real store through them ([`Harness`]) and checks it
//! after every step against an in-memory model whose root is alloy-trie's
//! `HashBuilder` root ([`model`]).

mod backend;
pub mod decode;
mod foreign;
mod harness;
pub mod journal;
pub mod model;
pub mod seeds;

pub use backend::MemDb;
pub use decode::{Config, Held, Injected, JournalDamage, Op, Other, Write, decode, encode};
pub use harness::{Harness, RunStats};

/// Runs one fuzz input: decodes it, applies every operation with a check
/// after each, then compacts, reopens and verifies. Panics on any
/// disagreement with the model.
pub fn run(data: &[u8]) -> RunStats {
    let (config, ops) = decode(data);
    let mut harness = Harness::new(config);
    for (i, op) in ops.iter().enumerate() {
        harness.apply(op, &format!("op {i} ({op:?}) with {config:?}"));
    }
    harness.finish()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The files of `dir` (under the crate) whose names start with `open-`
    /// (`open`) or not.
    fn corpus(dir: &str, open: bool) -> Vec<std::path::PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            return Vec::new();
        };
        let mut paths: Vec<_> = entries
            .map(|entry| entry.expect("list the corpus").path())
            .filter(|path| {
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                name.starts_with("open-") == open
            })
            .collect();
        paths.sort();
        paths
    }

    /// Replays the committed seeds and regressions of the `state_ops`
    /// target on a stable toolchain (`cargo test --manifest-path
    /// testing/fuzz/Cargo.toml --lib`), except the open ones (below).
    #[test]
    fn seeds_and_regressions_replay() {
        let mut replayed = 0;
        for dir in ["seeds/state_ops", "regressions/state_ops"] {
            for path in corpus(dir, false) {
                let data = std::fs::read(&path).expect("read a corpus file");
                eprintln!("replaying {}", path.display());
                super::run(&data);
                replayed += 1;
            }
        }
        assert!(replayed > 0, "no state_ops seeds found under testing/fuzz/seeds");
    }

    /// `regressions/state_ops/open-*` are inputs of store bugs not fixed
    /// yet: each must still fail. Once one passes, the bug is fixed: drop
    /// the `open-` from its name so that it is replayed as a regression.
    #[test]
    fn open_regressions_still_fail() {
        for path in corpus("regressions/state_ops", true) {
            let data = std::fs::read(&path).expect("read a regression");
            let outcome = std::panic::catch_unwind(|| super::run(&data));
            assert!(
                outcome.is_err(),
                "{} passes now: the bug is fixed, rename it without `open-`",
                path.display()
            );
        }
    }

    /// The seeds reach what they are meant to: files, unwinds in and out of
    /// the window, and failures of blocks, compactions and opens.
    #[test]
    fn seeds_reach_files_unwinds_and_failures() {
        let seeds: std::collections::BTreeMap<String, Vec<u8>> =
            super::seeds::seeds().into_iter().collect();
        let stats = |name: &str| super::run(&seeds[name]);
        assert!(stats("collate-merge-unwind").max_files >= 2);
        let wipe = stats("wipe-in-files");
        assert!(wipe.max_files >= 1 && wipe.unwinds == 1, "{wipe:?}");
        let window = stats("unwind-window");
        assert!(
            window.refused_unwinds >= 2 && window.unwinds >= 1,
            "{window:?}"
        );
        // redb write failures (failure-5, -6) and sync failures (failure-7)
        // fail the compaction, the block and the unwind.
        for name in ["failure-5", "failure-6", "failure-7"] {
            let s = stats(name);
            assert!(s.failures >= 2, "{name}: {s:?}");
        }
        // File failures fail the compaction only.
        for name in [
            "failure-0",
            "failure-1",
            "failure-2",
            "failure-3",
            "failure-4",
        ] {
            let s = stats(name);
            assert!(s.failures >= 1, "{name}: {s:?}");
        }
        assert_eq!(stats("map-failure-at-open").failed_opens, 1);
    }

    /// The damage seeds reach a damaged open (served or refused), and the
    /// concurrent ones hold a task at their point.
    #[test]
    fn seeds_reach_damage_and_held_tasks() {
        for (name, bytes) in super::seeds::seeds() {
            let stats = super::run(&bytes);
            eprintln!("{name}: {stats:?}");
            if name.starts_with("damage-") {
                assert_eq!(
                    stats.damaged_opens + stats.refused_damage,
                    2,
                    "{name}: {stats:?}"
                );
            }
            if name.starts_with("concurrent-") {
                assert!(stats.held >= 1, "{name}: {stats:?}");
            }
        }
    }

    /// The seed files are what the seed writer produces now.
    #[test]
    fn committed_seeds_are_current() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/state_ops");
        for (name, bytes) in super::seeds::seeds() {
            let stored = std::fs::read(dir.join(&name))
                .unwrap_or_else(|e| panic!("seed {name}: {e}; run write_seeds"));
            assert_eq!(stored, bytes, "seed {name} is stale; run write_seeds");
        }
    }
}
