//! Runs a decoded operation sequence against a real [`StateDb`] (redb in
//! [`MemDb`], immutable files in a `MemFileSystem` behind a
//! `FaultyFileSystem`) and checks it after every operation against the
//! model history: every read, the root (HashBuilder over the model), the
//! retained roots, and what a failed operation leaves behind.

use std::sync::Arc;
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256, Bytes, U256};
use strata_storage::files::fs::FaultyFileSystem;
use strata_storage::files::{FileSystem, MemFileSystem};
use strata_storage::{
    Account, BlockWriter, CommitInfo, Durability, Error, Options, PausePoint, PausePoints, Regime,
    StateDb,
};

use super::backend::MemDb;
use super::decode::{ADDRESSES, Config, Held, Injected, JournalDamage, Op, Other, SLOTS, Write};
use super::foreign::Foreign;
use super::journal::{self, JOURNAL_DIR};
use super::model::{Model, ModelAccount, code_hash, model_root};

/// Journal segment size of the fuzzed store: a few blocks per segment, so
/// that damage can land in a closed segment, the newest one, or its last
/// frame.
pub const SEGMENT_BYTES: u64 = 6 << 10;

/// How long [`Op::Concurrent`] lets the other operation run before it lets
/// the held task go (the other may wait for a lock the held task owns).
const PATIENCE: Duration = Duration::from_millis(15);

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
    /// Opens after journal damage that served a block.
    pub damaged_opens: u64,
    /// Opens after journal damage that were refused with an error.
    pub refused_damage: u64,
    /// Blocks a torn-tail cut (or the newest segment's removal) cost.
    pub lost_blocks: u64,
    /// Concurrent operations whose pause point a task reached.
    pub held: u64,
    /// Unwinds that failed after their redb commit (the journal cut
    /// failed), which the reopen after the failure finished.
    pub failed_unwinds_done: u64,
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
    /// The pause points the store was opened with.
    points: Arc<PausePoints>,
    /// The second store foreign segments come from (made when first needed).
    foreign: Option<Foreign>,
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
            points: Arc::new(PausePoints::new()),
            foreign: None,
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
        store_options(self.config, Some(self.points.clone()))
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
            Op::Damage { crash, damage } => self.damaged_reopen(*crash, *damage, context),
            Op::Concurrent { held, point, other } => {
                self.concurrent(*held, *point, other, context);
            }
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
        self.committed(number, model, result, armed, context);
    }

    /// Checks the result of the commit of block `number` whose state is
    /// `model`, and adds it to the history.
    fn committed(
        &mut self,
        number: u64,
        model: Model,
        result: strata_storage::Result<CommitInfo>,
        armed: bool,
        context: &str,
    ) {
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
        let target = self.last().saturating_sub(back);
        let oldest = self
            .db()
            .oldest_unwindable()
            .unwrap_or_else(|e| panic!("{context}: oldest unwindable: {e}"));
        let armed = self.arm_pending();
        let result = self.db().unwind_to(target);
        self.disarm();
        self.unwound(target, oldest, result, armed, context);
    }

    /// Checks the result of an unwind to `target` with the window starting
    /// at `oldest` before it, and moves the model there.
    fn unwound(
        &mut self,
        target: u64,
        oldest: Option<u64>,
        result: strata_storage::Result<B256>,
        armed: bool,
        context: &str,
    ) {
        let last = self.last();
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
                // An unwind is committed by its redb transaction, before the
                // journal is cut: when the cut fails, the unwind reports the
                // error but has happened — the store is at the target (and
                // poisoned), or the reopen after the failure finishes it.
                self.failed_unwind_done(target);
                self.after_failure(&error, armed, context);
                self.failed_unwind_done(target);
            }
        }
    }

    /// After a failed unwind to `target`: when the store is there, the
    /// unwind happened; the model follows.
    fn failed_unwind_done(&mut self, target: u64) {
        if target < self.last() && self.db().last_block() == Some(target) {
            self.history.truncate(target as usize + 1);
            self.stats.failed_unwinds_done += 1;
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

    /// Replaces the storages by `redb` and `files` (the store is closed).
    fn install(&mut self, redb: MemDb, files: MemFileSystem) {
        self.redb = redb;
        self.files = files;
        self.faulty = Arc::new(FaultyFileSystem::new(Arc::new(self.files.clone())));
    }

    /// Closes the store (cleanly, which flushes, or by a power cut), does
    /// `damage` to the journal of the image a power cut then leaves, and
    /// opens that. The open may refuse with any error (never a panic): the
    /// run goes on from the undamaged image. Or it serves one committed
    /// block of the model, no older than the damage allows
    /// ([`journal::apply`]), with every read, retained root and `verify`
    /// agreeing. Pending failures stay armed for the next operation.
    fn damaged_reopen(&mut self, crash: bool, damage: JournalDamage, context: &str) {
        if !crash {
            self.db = None;
        }
        let db_image = self.redb.durable_image();
        let files = self.files.power_cut_image();
        self.db = None;
        let undamaged = files.power_cut_image();
        let dir = self.dir.path().join(JOURNAL_DIR);
        let before = journal::segments(&files, &dir);
        let (last, config, foreign) = (self.last(), self.config, &mut self.foreign);
        let allowed = journal::apply(&files, &dir, &before, damage, last, &mut |block| {
            foreign
                .get_or_insert_with(|| Foreign::new(config))
                .segment(block)
        });
        self.install(MemDb::from_image(db_image.clone()), files);
        match self.open() {
            Ok(db) => {
                self.db = Some(db);
                if !self.check_damaged(allowed, context) {
                    self.db = None;
                    self.install(MemDb::from_image(db_image), undamaged);
                    self.db =
                        Some(self.open().unwrap_or_else(|e| {
                            panic!("{context}: open of the undamaged image: {e}")
                        }));
                }
            }
            Err(error) => {
                assert!(
                    allowed.changed,
                    "{context}: open refused an undamaged journal: {error}"
                );
                assert!(!error.to_string().is_empty(), "{context}: empty error");
                self.stats.refused_damage += 1;
                self.install(MemDb::from_image(db_image), undamaged);
                let db = self.open().unwrap_or_else(|e| {
                    panic!("{context}: open of the undamaged image after `{error}`: {e}")
                });
                self.db = Some(db);
            }
        }
    }

    /// After an open of a damaged journal: the store serves a block of the
    /// model no older than `allowed.oldest`, with its root, reads and
    /// retained roots, and `verify` is clean. The model drops the blocks
    /// the damage cost. False when the store is empty, as the damage
    /// allowed: the run goes on from the undamaged image.
    fn check_damaged(&mut self, allowed: journal::Allowed, context: &str) -> bool {
        let db = self.db();
        let (served, root, last) = (db.last_block(), db.root(), self.last());
        if served.is_none() && allowed.empty {
            // Every block is gone, genesis too: nothing to go on from but
            // the undamaged image.
            self.stats.lost_blocks += last + 1;
            return false;
        }
        let Some(block) = served.filter(|b| *b <= last) else {
            panic!(
                "{context}: after the damage the store serves block {served:?} (root {root}); \
                 the model's last block is {last}"
            )
        };
        assert_eq!(
            root, self.history[block as usize].1,
            "{context}: root of block {block} after the damage"
        );
        assert!(
            block >= allowed.oldest,
            "{context}: after the damage the store opened at block {block} (last {last}): \
             damage there may cost no block before {}, it must be refused instead",
            allowed.oldest
        );
        if block < last {
            self.stats.lost_blocks += last - block;
            self.history.truncate(block as usize + 1);
        }
        self.stats.damaged_opens += 1;
        self.check(context);
        self.check_verify(context);
        true
    }

    /// `verify` is clean and computes the model's last root.
    fn check_verify(&self, context: &str) {
        let report = self
            .db()
            .verify(&Default::default())
            .unwrap_or_else(|e| panic!("{context}: verify: {e}"));
        assert!(report.is_ok(), "{context}: verify: {:?}", report.problems);
        assert_eq!(
            report.computed_root,
            self.history[self.history.len() - 1].1,
            "{context}: verify: computed root"
        );
    }

    /// Starts `held` on a second thread with `point` armed, waits until a
    /// task is held there (or `held` finished without reaching it), runs
    /// `other` on a third thread for at most [`PATIENCE`] (it may wait for
    /// a lock the held task owns), lets the held task go and joins both.
    /// Nothing is injected, so both must succeed, and the model must agree
    /// (reads during the hold included). Pending failures stay armed for
    /// the next operation.
    fn concurrent(&mut self, held: Held, point: PausePoint, other: &Other, context: &str) {
        let last = self.last();
        let model = self.history[last as usize].0.clone();
        let oldest = self
            .db()
            .oldest_unwindable()
            .unwrap_or_else(|e| panic!("{context}: oldest unwindable: {e}"));
        let (db, points) = (self.db(), self.points.clone());
        points.arm(point);
        let (held_result, reached, outcome) = std::thread::scope(|scope| {
            let task = scope.spawn(|| match held {
                Held::Compact => db.compact().map(drop),
                Held::Flush => db.flush().map(drop),
            });
            let reached = wait_held(&points, point, &task);
            let other_task = scope.spawn(|| run_other(db, other, last, model, context));
            let patience = Instant::now() + PATIENCE;
            while !other_task.is_finished() && Instant::now() < patience {
                std::thread::sleep(Duration::from_millis(1));
            }
            points.release(point);
            let outcome = joined(other_task);
            (joined(task), reached, outcome)
        });
        if let Err(error) = held_result {
            panic!("{context}: {held:?} beside {other:?} failed: {error}");
        }
        self.stats.held += u64::from(reached);
        match outcome {
            Outcome::Committed(model, result) => {
                self.committed(last + 1, model, result, false, context);
            }
            Outcome::Unwound(target, result) => {
                self.unwound(target, oldest, result, false, context);
            }
            Outcome::Read => {}
        }
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
        check_reads_of(
            self.db(),
            &self.history[self.history.len() - 1].0,
            lenient,
            context,
        );
    }

    /// Compacts, reopens and verifies the final state; returns what the run did.
    pub fn finish(mut self) -> RunStats {
        self.db()
            .compact()
            .unwrap_or_else(|e| panic!("final compaction: {e}"));
        self.check("final compaction");
        self.reopen(false, "final reopen");
        self.check("final reopen");
        self.check_verify("final reopen");
        self.stats
    }
}

/// What the other operation of [`Op::Concurrent`] did.
enum Outcome {
    /// The next block's state and the commit's result.
    Committed(Model, strata_storage::Result<CommitInfo>),
    /// The unwind's target and result.
    Unwound(u64, strata_storage::Result<B256>),
    /// Every read agreed with the model.
    Read,
}

/// Runs the other operation of [`Op::Concurrent`] on `db`, whose last
/// block `last` has the state `model`.
fn run_other(db: &StateDb, other: &Other, last: u64, mut model: Model, context: &str) -> Outcome {
    match other {
        Other::Block(writes) => {
            let number = last + 1;
            let mut writer = db
                .begin_block(number)
                .unwrap_or_else(|e| panic!("{context}: begin block {number}: {e}"));
            for write in writes {
                apply_write(&mut writer, &mut model, write);
            }
            Outcome::Committed(model, writer.commit())
        }
        Other::Unwind(back) => {
            let target = last.saturating_sub(u64::from(*back));
            Outcome::Unwound(target, db.unwind_to(target))
        }
        Other::Read => {
            check_reads_of(db, &model, false, context);
            Outcome::Read
        }
    }
}

/// Waits until a task is held at `point`; false when `task` finished first.
fn wait_held<T>(points: &PausePoints, point: PausePoint, task: &ScopedJoinHandle<'_, T>) -> bool {
    loop {
        if points.wait_reached(point, Duration::from_millis(1)) {
            return true;
        }
        if task.is_finished() {
            return false;
        }
    }
}

/// Joins `task`, passing its panic on.
fn joined<T>(task: ScopedJoinHandle<'_, T>) -> T {
    task.join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Every account, code and slot of the touched addresses reads from `db`
/// as `model` has it; with `lenient`, a read may fail instead.
fn check_reads_of(db: &StateDb, model: &Model, lenient: bool, context: &str) {
    let reader = db.reader(Regime::Exec);
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

/// The options of a fuzzed store (and of the foreign one) with `config`.
pub(super) fn store_options(config: Config, points: Option<Arc<PausePoints>>) -> Options {
    Options::default().with_step_size(config.step_size).with_keep_steps_in_db(config.keep_steps_in_db).with_unwind_depth(config.unwind_depth).with_durability(Durability::EveryBlock).with_background_maintenance(false).with_parallel_commitment_threshold(config.parallel_threshold).with_cache_bytes(1 << 20).with_db_cache_bytes(1 << 20).with_read_metrics(false).with_journal_segment_bytes(SEGMENT_BYTES).with_pause_points(points)
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
