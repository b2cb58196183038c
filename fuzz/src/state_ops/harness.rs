//! Runs a decoded operation sequence against a real [`StateDb`] (redb in
//! [`MemDb`], immutable files in a `MemFileSystem` behind a
//! `FaultyFileSystem`) and checks it after every operation against the
//! model history: every read, the root (HashBuilder over the model), the
//! retained roots, and what a failed operation leaves behind.

use std::sync::Arc;

use alloy_primitives::{Address, B256, Bytes, U256};
use strata_storage::files::fs::FaultyFileSystem;
use strata_storage::files::{FileSystem, MemFileSystem};
use strata_storage::{Account, BlockWriter, Durability, Error, Options, Regime, StateDb};

use super::backend::MemDb;
use super::decode::{ADDRESSES, Config, Injected, Op, SLOTS, Write};
use super::model::{Model, ModelAccount, code_hash, model_root};

/// What one run did, for tests that a seed reaches what it is meant to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Blocks committed (block 0 included; unwound ones too).
    pub commits: u64,
    /// Unwinds that restored a block.
    pub unwinds: u64,
    /// Unwinds refused as out of the window.
    pub refused_unwinds: u64,
    /// Operations that failed under an injected failure.
    pub failures: u64,
    /// Opens that failed under an injected failure.
    pub failed_opens: u64,
    /// The most immutable files the store held after an operation.
    pub max_files: u64,
}

/// One run: the store, its two storages, and the model of every block.
pub struct Harness {
    stats: RunStats,
    config: Config,
    /// The datadir (strata creates its folders on the real file system even
    /// when both storages are in memory).
    dir: tempfile::TempDir,
    files: MemFileSystem,
    faulty: Arc<FaultyFileSystem>,
    redb: MemDb,
    db: Option<StateDb>,
    /// `history[b]`: the model after block `b` and its root.
    history: Vec<(Model, B256)>,
    /// Failures armed for the next operation.
    pending: Vec<Injected>,
}

fn address(i: u8) -> Address {
    Address::with_last_byte(i + 1)
}

fn slot(i: u8) -> B256 {
    B256::with_last_byte(i + 1)
}

fn code(variant: u8) -> Bytes {
    match variant {
        0 => Bytes::new(),
        1 => Bytes::from_static(&[0x60, 0x00, 0x60, 0x00, 0xf3]),
        _ => Bytes::from(vec![0x5b; 100]),
    }
}

fn slot_value(code: u8) -> U256 {
    match code {
        255 => U256::MAX,
        v => U256::from(v),
    }
}

impl Harness {
    /// Opens a new store with `config` and commits an empty block 0.
    pub fn new(config: Config) -> Self {
        let files = MemFileSystem::new();
        let mut h = Harness {
            config,
            dir: tempfile::tempdir().expect("temp datadir"),
            faulty: Arc::new(FaultyFileSystem::new(Arc::new(files.clone()))),
            files,
            redb: MemDb::default(),
            db: None,
            history: Vec::new(),
            pending: Vec::new(),
            stats: RunStats::default(),
        };
        h.db = Some(h.open().expect("open a new store"));
        let info = h.db().begin_block(0).expect("begin block 0").commit();
        let model = Model::new();
        let root = model_root(&model);
        assert_eq!(info.expect("commit block 0").root, root, "block 0 root");
        h.history.push((model, root));
        h.stats.commits = 1;
        h
    }

    fn options(&self) -> Options {
        Options {
            step_size: self.config.step_size,
            keep_steps_in_db: self.config.keep_steps_in_db,
            unwind_depth: self.config.unwind_depth,
            durability: Durability::EveryBlock,
            background_maintenance: false,
            parallel_commitment_threshold: self.config.parallel_threshold,
            cache_bytes: 1 << 20,
            db_cache_bytes: 1 << 20,
            read_metrics: false,
            ..Options::default()
        }
    }

    fn open(&self) -> strata_storage::Result<StateDb> {
        let fs: Arc<dyn FileSystem> = self.faulty.clone();
        StateDb::open_with_io(self.dir.path(), self.options(), fs, Some(self.redb.clone()))
    }

    fn db(&self) -> &StateDb {
        self.db.as_ref().expect("the store is open")
    }

    fn last(&self) -> u64 {
        self.history.len() as u64 - 1
    }

    /// Arms `pending`; returns whether anything was armed.
    fn arm(&self, pending: Vec<Injected>) -> bool {
        for injected in &pending {
            match *injected {
                Injected::File(fault) => self.faulty.inject(fault),
                Injected::DbWrite(n) => self.redb.fail_writes_after(u64::from(n)),
                Injected::DbSync => self.redb.fail_syncs(),
            }
        }
        !pending.is_empty()
    }

    fn arm_pending(&mut self) -> bool {
        let pending = std::mem::take(&mut self.pending);
        self.arm(pending)
    }

    fn disarm(&self) {
        self.faulty.clear();
        self.redb.clear_faults();
    }

    /// Applies one operation and checks the store against the model.
    pub fn apply(&mut self, op: &Op, context: &str) {
        match op {
            Op::Inject(injected) => {
                self.pending.push(*injected);
                return;
            }
            Op::Block(writes) => self.block(writes, context),
            Op::Compact => {
                let armed = self.arm_pending();
                let result = self.db().compact();
                self.disarm();
                if let Err(error) = result {
                    self.after_failure(&error, armed, context);
                }
            }
            Op::Unwind(back) => self.unwind(u64::from(*back), context),
            Op::Reopen => self.reopen(false, context),
            Op::Crash => self.reopen(true, context),
        }
        self.check(context);
    }

    fn block(&mut self, writes: &[Write], context: &str) {
        let number = self.last() + 1;
        let mut model = self.history[self.history.len() - 1].0.clone();
        let pending = std::mem::take(&mut self.pending);
        let db = self.db.as_ref().expect("the store is open");
        let mut writer = db
            .begin_block(number)
            .unwrap_or_else(|e| panic!("{context}: begin block {number}: {e}"));
        for write in writes {
            apply_write(&mut writer, &mut model, write);
        }
        let armed = self.arm(pending);
        let result = writer.commit();
        self.disarm();
        match result {
            Ok(info) => {
                let root = model_root(&model);
                assert_eq!(info.block, number, "{context}: committed block");
                assert_eq!(info.root, root, "{context}: root of block {number}");
                self.history.push((model, root));
                self.stats.commits += 1;
            }
            Err(error) => self.after_failure(&error, armed, context),
        }
    }

    fn unwind(&mut self, back: u64, context: &str) {
        let last = self.last();
        let target = last.saturating_sub(back);
        let oldest = self
            .db()
            .oldest_unwindable()
            .unwrap_or_else(|e| panic!("{context}: oldest unwindable: {e}"));
        let armed = self.arm_pending();
        let result = self.db().unwind_to(target);
        self.disarm();
        let in_window = oldest.is_some_and(|o| target >= o);
        match result {
            Ok(root) => {
                assert!(
                    in_window,
                    "{context}: unwind to {target} accepted, oldest {oldest:?}"
                );
                self.history.truncate(target as usize + 1);
                assert_eq!(
                    root, self.history[target as usize].1,
                    "{context}: unwind root"
                );
                self.stats.unwinds += 1;
            }
            Err(Error::UnwindOutOfRange { .. }) if !in_window => self.stats.refused_unwinds += 1,
            Err(error) => {
                assert!(
                    in_window,
                    "{context}: unwind to {target} outside [{oldest:?}, {last}] must be \
                     UnwindOutOfRange, got: {error}"
                );
                self.after_failure(&error, armed, context);
            }
        }
    }

    /// A failed operation: only an injected failure may cause it; the store
    /// then refuses writes (or still holds the last committed block), and a
    /// reopen of the durable image gives the last committed block exactly.
    fn after_failure(&mut self, error: &Error, armed: bool, context: &str) {
        assert!(armed, "{context}: failed with no injected failure: {error}");
        self.stats.failures += 1;
        let message = error.to_string();
        assert!(!message.is_empty(), "{context}: empty error message");
        let next = self.last() + 1;
        match self.db().begin_block(next) {
            Err(Error::Poisoned { .. }) => {}
            Err(Error::BlockNotCommitted { block, source })
                if block == next && matches!(*source, Error::Poisoned { .. }) => {}
            Err(other) => panic!("{context}: after `{message}` begin_block({next}) gave {other}"),
            Ok(writer) => drop(writer),
        }
        // Reads may be refused now (redb stops after an I/O error), but must
        // never show anything but the last committed block.
        self.check_reads(true, context);
        self.reopen(true, context);
    }

    /// Drops the store and opens it again: on the live bytes, or (`crash`)
    /// on the images a power cut now would leave. A failure injected into
    /// the open must give an error, after which a clean open succeeds.
    fn reopen(&mut self, crash: bool, context: &str) {
        if crash {
            let image = self.redb.durable_image();
            let files = self.files.power_cut_image();
            self.db = None;
            self.redb = MemDb::from_image(image);
            self.files = files;
            self.faulty = Arc::new(FaultyFileSystem::new(Arc::new(self.files.clone())));
        } else {
            self.db = None;
        }
        let armed = self.arm_pending();
        let first = self.open();
        self.disarm();
        let db = match first {
            Ok(db) => db,
            Err(error) => {
                assert!(
                    armed,
                    "{context}: reopen failed with no injected failure: {error}"
                );
                self.stats.failed_opens += 1;
                let image = self.redb.durable_image();
                self.redb = MemDb::from_image(image);
                self.open()
                    .unwrap_or_else(|e| panic!("{context}: open after `{error}`: {e}"))
            }
        };
        self.db = Some(db);
    }

    /// Checks the open store against the last block of the model.
    pub fn check(&mut self, context: &str) {
        let files = self
            .db()
            .stats()
            .unwrap_or_else(|e| panic!("{context}: stats: {e}"))
            .domains
            .iter()
            .map(|d| d.files.len() as u64)
            .sum();
        self.stats.max_files = self.stats.max_files.max(files);
        let db = self.db();
        let last = self.last();
        assert_eq!(db.last_block(), Some(last), "{context}: last block");
        assert_eq!(db.root(), self.history[last as usize].1, "{context}: root");
        self.check_reads(false, context);
        let oldest = db
            .oldest_unwindable()
            .unwrap_or_else(|e| panic!("{context}: oldest unwindable: {e}"));
        for block in oldest.unwrap_or(last)..=last {
            let stored = db
                .root_at(block)
                .unwrap_or_else(|e| panic!("{context}: root_at({block}): {e}"));
            assert_eq!(
                stored,
                Some(self.history[block as usize].1),
                "{context}: retained root of block {block}"
            );
        }
    }

    /// Every account, code and slot of the touched addresses reads as the
    /// model's last block has it; with `lenient`, a read may fail instead.
    fn check_reads(&self, lenient: bool, context: &str) {
        let model = &self.history[self.history.len() - 1].0;
        let reader = self.db().reader(Regime::Exec);
        for who in (0..ADDRESSES).map(address) {
            let expected = model.get(&who);
            match reader.account(&who) {
                Ok(found) => assert_eq!(
                    found,
                    expected.map(|e| e.account),
                    "{context}: account {who}"
                ),
                Err(e) => assert!(lenient, "{context}: read account {who}: {e}"),
            }
            match reader.code(&who) {
                Ok(found) => assert_eq!(
                    found.as_ref().map(|c| &c[..]),
                    expected.and_then(|e| e.code.as_ref()).map(|c| &c[..]),
                    "{context}: code of {who}"
                ),
                Err(e) => assert!(lenient, "{context}: read code of {who}: {e}"),
            }
            for s in (0..SLOTS).map(slot) {
                let want = expected
                    .and_then(|e| e.storage.get(&s).copied())
                    .unwrap_or(U256::ZERO);
                match reader.storage(&who, &s) {
                    Ok(found) => assert_eq!(found, want, "{context}: slot {s} of {who}"),
                    Err(e) => assert!(lenient, "{context}: read slot {s} of {who}: {e}"),
                }
            }
        }
    }

    /// Compacts, reopens and verifies the final state; returns what the run did.
    pub fn finish(mut self) -> RunStats {
        self.db()
            .compact()
            .unwrap_or_else(|e| panic!("final compaction: {e}"));
        self.check("final compaction");
        self.reopen(false, "final reopen");
        self.check("final reopen");
        let report = self.db().verify().unwrap_or_else(|e| panic!("verify: {e}"));
        assert!(report.is_ok(), "verify: {:?}", report.problems);
        assert_eq!(
            report.computed_root,
            self.history[self.history.len() - 1].1,
            "verify: computed root"
        );
        self.stats
    }
}

/// Applies one write to the block and the model; a slot or code write to a
/// missing account creates it first, as the EVM would.
fn apply_write(writer: &mut BlockWriter, model: &mut Model, write: &Write) {
    fn ensure<'m>(
        writer: &mut BlockWriter,
        model: &'m mut Model,
        who: Address,
    ) -> &'m mut ModelAccount {
        model.entry(who).or_insert_with(|| {
            writer.put_account(who, &Account::default());
            ModelAccount::default()
        })
    }
    match *write {
        Write::Account {
            who,
            nonce,
            balance,
        } => {
            let who = address(who);
            let entry = model.entry(who).or_default();
            entry.account.nonce = nonce;
            entry.account.balance = U256::from(balance);
            writer.put_account(who, &entry.account);
        }
        Write::Slot {
            who,
            slot: s,
            value,
        } => {
            let who = address(who);
            let entry = ensure(writer, model, who);
            let value = slot_value(value);
            if value.is_zero() {
                entry.storage.remove(&slot(s));
            } else {
                entry.storage.insert(slot(s), value);
            }
            writer.put_storage(who, slot(s), value);
        }
        Write::Code { who, variant } => {
            let who = address(who);
            let entry = ensure(writer, model, who);
            let bytes = code(variant);
            entry.code = (!bytes.is_empty()).then(|| bytes.clone());
            entry.account.code_hash = code_hash(&bytes);
            writer.put_code(who, bytes.into());
            writer.put_account(who, &entry.account);
        }
        Write::Delete { who } => {
            let who = address(who);
            model.remove(&who);
            writer.delete_account(who);
        }
    }
}
