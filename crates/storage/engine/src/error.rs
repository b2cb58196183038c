//! The one error type of strata-storage: what a client matches on, whether
//! a read, a block, an import or a check failed.

use std::path::PathBuf;

use alloy_primitives::B256;

use strata_bulk::BulkError;
use strata_bulk::sort::RunError;
pub use strata_db::DbError;
use strata_db::SchemaError;
use strata_files::FileError;
use strata_types::datadir::{DB_FILE, FILES_DIR};
use strata_types::domain::Domain;
use strata_view::error::ReadError;

/// Everything that can go wrong in the storage engine. Each variant says what
/// failed and where (datadir, file, block, key).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A base (a whole redb tier as one stream: what a replica starts from)
    /// could not be written or loaded.
    #[error(transparent)]
    Base(#[from] strata_db::base::BaseError),
    /// The datadir cannot be created or used.
    #[error("datadir {path}: {what}: {source}")]
    Datadir {
        /// The directory.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// Another process (or another `StateDb` in this one) holds the
    /// database: a writer, or a reader of a datadir whose writer was
    /// killed (its in-memory recovery reads the file, so no writer may
    /// change it until that reader closes).
    #[error(
        "datadir {path} is locked by another process or another open StateDb (a writer, or a reader such as `strata observe`/`root` that recovered a killed writer's database in memory and holds it until it ends; beside readers such as `strata serve`, a writer must share the datadir: Options::share_with_readers, the CLI's --share)"
    )]
    Locked {
        /// The database file.
        path: PathBuf,
    },
    /// A read-only open found a writer that keeps the datadir to itself.
    #[error(
        "datadir {path} is locked by a writer that does not share it with readers (the writer must set Options::share_with_readers)"
    )]
    NotShared {
        /// The database file.
        path: PathBuf,
    },
    /// A read-only open found no strata database in the datadir.
    #[error("datadir {path}: {what}")]
    NotADatadir {
        /// The datadir.
        path: PathBuf,
        /// What is missing.
        what: &'static str,
    },
    /// `state.redb` is missing beside files a strata database made: starting
    /// a new database would orphan (and delete) them.
    #[error(
        "datadir {path}: {DB_FILE} is missing but {FILES_DIR}/ holds {files} strata file(s); \
         refusing to start a new database over them (restore {DB_FILE} or move the files away); nothing was changed"
    )]
    DatabaseMissing {
        /// The datadir.
        path: PathBuf,
        /// How many strata-made files `files/` holds.
        files: usize,
    },
    /// `state.redb` exists but holds no bytes.
    #[error(
        "database {path} is empty (0 bytes): not a strata database; restore it or remove the datadir; nothing was changed"
    )]
    DatabaseEmpty {
        /// The database file.
        path: PathBuf,
    },
    /// `state.redb` exists but redb cannot open it.
    #[error("database {path} cannot be opened: {source}; nothing was changed")]
    DatabaseUnreadable {
        /// The database file.
        path: PathBuf,
        /// redb's error.
        #[source]
        source: DbError,
    },
    /// A damaged database page made redb fail while reading a table.
    #[error("corrupt database: table {table}: {what}")]
    Corrupt {
        /// The redb table being read.
        table: &'static str,
        /// What redb reported (its panic message when it panicked).
        what: String,
    },
    /// The options contradict each other or are out of range.
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    /// The datadir was written by an incompatible version of strata.
    #[error(
        "datadir {path}: format version {found} is not supported (this build reads {supported})"
    )]
    UnsupportedFormat {
        /// The database file.
        path: PathBuf,
        /// Version found on disk.
        found: u32,
        /// Version this build understands.
        supported: u32,
    },
    /// redb reported an error.
    #[error("database: {op}: {source}")]
    Db {
        /// The operation that failed.
        op: &'static str,
        /// redb's error.
        #[source]
        source: DbError,
    },
    /// An immutable file is unreadable or corrupt.
    #[error(transparent)]
    File(#[from] FileError),
    /// A stored record does not decode.
    #[error("corrupt {domain} record for key 0x{key}: {what}")]
    CorruptRecord {
        /// Domain of the record.
        domain: Domain,
        /// Hex of the key.
        key: String,
        /// What is wrong.
        what: String,
    },
    /// A stored metadata entry does not decode.
    #[error("corrupt metadata {name}: {what}")]
    CorruptMeta {
        /// Name of the entry.
        name: &'static str,
        /// What is wrong.
        what: String,
    },
    /// Another writer (a block, genesis or an unwind) holds the write side.
    #[error("{}", if *same_thread {
        "a writer is already open on this thread (a block, genesis or unwind): waiting for it here would deadlock; commit or drop it first"
    } else {
        "another writer is open (a block, genesis or unwind)"
    })]
    WriterBusy {
        /// The writer was opened by the calling thread.
        same_thread: bool,
    },
    /// A block was written out of sequence.
    #[error("block {found} is out of order: expected block {expected}")]
    BlockOutOfOrder {
        /// The block number that must come next.
        expected: u64,
        /// The block number that was given.
        found: u64,
    },
    /// A genesis whose block header cannot be built; nothing was written.
    #[error("genesis refused, nothing written: {0}")]
    GenesisHeader(String),
    /// Genesis was requested on a datadir that already holds blocks.
    #[error("genesis already initialised: the datadir holds blocks up to {last}")]
    GenesisExists {
        /// The last committed block.
        last: u64,
    },
    /// An import was asked of a store that already holds blocks; nothing
    /// was written.
    #[error(
        "an import needs an empty store, but the datadir holds blocks up to {last}; nothing was written"
    )]
    ImportIntoNonEmpty {
        /// The last committed block.
        last: u64,
    },
    /// An imported state's root is not the one it was declared to have;
    /// nothing was written.
    #[error(
        "imported state of block {block} has root {computed}, but {expected} was expected; nothing was written"
    )]
    ImportRootMismatch {
        /// The block being imported.
        block: u64,
        /// The root given (a dump's first line).
        expected: B256,
        /// The root of the accounts read.
        computed: B256,
    },
    /// An address appears twice in an imported state; nothing was written.
    #[error("account {address} appears twice in the imported state; nothing was written")]
    ImportRepeatedAccount {
        /// The address.
        address: alloy_primitives::Address,
    },
    /// A slot appears twice in one imported account's storage; nothing
    /// was written.
    #[error(
        "account {address}: storage slot {slot} appears twice in the imported state; nothing was written"
    )]
    ImportRepeatedSlot {
        /// The account.
        address: alloy_primitives::Address,
        /// The slot.
        slot: B256,
    },
    /// The accounts of an import could not be read; nothing was written.
    #[error("import input: {source}; nothing was written")]
    ImportInput {
        /// Why (a dump's line error, for one).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The import's files do not hold what it read (an internal fault, or
    /// its scratch runs changed under it); nothing was written.
    #[error("import refused: {0}; nothing was written")]
    ImportIncomplete(String),
    /// An unwind target is outside the retained window.
    #[error("cannot unwind to block {target}: blocks {oldest}..={last} are retained")]
    UnwindOutOfRange {
        /// Requested block.
        target: u64,
        /// Oldest block that can be restored.
        oldest: u64,
        /// Last committed block.
        last: u64,
    },
    /// A read at a block outside the blocks whose state is retained.
    #[error("the state after block {block} is not retained: blocks {oldest}..={last} can be read")]
    StateNotRetained {
        /// Requested block.
        block: u64,
        /// Oldest block that can be read.
        oldest: u64,
        /// Last committed block.
        last: u64,
    },
    /// An open asked for a history retention the datadir was not made with.
    #[error(
        "datadir {path} keeps history {recorded}, fixed when it was made; this open asked for {requested} \
         (leave the setting out to open it as it is)"
    )]
    HistoryRetentionMismatch {
        /// The datadir.
        path: std::path::PathBuf,
        /// What the datadir recorded at its creation.
        recorded: strata_types::HistoryRetention,
        /// What the open asked for.
        requested: strata_types::HistoryRetention,
    },
    /// History read back differs from what the block recorded (a damaged
    /// or foreign history entry).
    #[error("history at block {block}: {what}")]
    CorruptHistory {
        /// The block read at.
        block: u64,
        /// What disagreed.
        what: String,
    },
    /// A read through the history of a datadir whose history is still in
    /// redb's tables of the first layout (a follower beside no writer of
    /// this build); a writer's open moves it into history files.
    #[error(
        "the datadir's history is in an earlier layout (redb tables); open it once with a writer of this build (`StateDb::open`, `strata import-chain`) to move it into history files"
    )]
    LegacyHistory,
    /// A proof asked of a reader that cannot serve one.
    #[error("no proof here: {0}")]
    ProofUnavailable(&'static str),
    /// A range read asked of a reader that cannot serve one.
    #[error("no range read here: {0}")]
    RangeUnavailable(&'static str),
    /// The unwind data of a block is missing.
    #[error("unwind data for block {block} is missing")]
    MissingUnwindData {
        /// The block.
        block: u64,
    },
    /// The commitment failed.
    #[error("commitment at block {block}: {source}")]
    Commitment {
        /// The block being committed.
        block: u64,
        /// The commitment's error.
        #[source]
        source: strata_commitment::CommitmentError,
    },
    /// The stored root does not match a recomputation.
    #[error("state root mismatch at block {block}: stored {stored}, computed {computed}")]
    RootMismatch {
        /// The block.
        block: u64,
        /// Root on disk.
        stored: B256,
        /// Root recomputed.
        computed: B256,
    },
    /// An earlier write or sync failed; the store refuses writes until reopened.
    #[error("the store is poisoned by an earlier failure ({cause}); reopen it")]
    Poisoned {
        /// The failure that poisoned the store.
        cause: String,
    },
    /// The warmup pool or cache could not be built.
    #[error("cache: {0}")]
    Cache(#[from] strata_cache::CacheError),
    /// `BlockWriter::put_raw` into the commitment domain, which only the
    /// commitment writes; nothing was written.
    #[error(
        "the commitment domain is written by the commitment only: put_raw refused, nothing written"
    )]
    CommitmentDomainWrite,
    /// A read-only handle could not catch up: the writer unwound each time
    /// the journal was read.
    #[error("the writer unwound {attempts} times in a row while the journal was read; try again")]
    FollowerOutrun {
        /// How many reads of the journal were started over.
        attempts: usize,
    },
    /// A merge's input files were no longer in the manifest when the merge
    /// was to be listed (an internal fault: only maintenance changes files).
    #[error("the merge inputs of {domain} are no longer in the manifest")]
    MergeInputsUnlisted {
        /// The domain merged.
        domain: Domain,
    },
    /// A block's computed root is not the root its caller expected
    /// ([`crate::BlockWriter::expect_root`]); nothing of the block was written.
    #[error(
        "block {block} refused: its state root would be {computed}, but {expected} was expected; nothing was written"
    )]
    BlockRootMismatch {
        /// The refused block.
        block: u64,
        /// The root the caller expected.
        expected: B256,
        /// The root the block's writes lead to.
        computed: B256,
    },
    /// A block committed with a root computed alongside execution wrote
    /// other values than its access list said; nothing was committed.
    #[error(
        "block {block}: its writes differ from its access list at {domain} key {key}: the list says {listed}, the block wrote {written}"
    )]
    AccessListMismatch {
        /// The refused block.
        block: u64,
        /// The domain of the first differing key.
        domain: Domain,
        /// The first differing key (hex; an address for a storage wipe).
        key: String,
        /// What the list says about it.
        listed: String,
        /// What the block wrote.
        written: String,
    },
    /// The block journal failed or holds damage (segment and offset named).
    #[error(transparent)]
    Journal(#[from] strata_journal::JournalError),
    /// The journal holds blocks but ends before redb's flushed head: the
    /// newer blocks' segments are missing (deleted, truncated or copied
    /// incompletely). Nothing was changed.
    #[error(
        "the journal in {dir} ends at block {last}, before block {head} that the database holds: \
         the segments of the blocks after {last} are missing (deleted, truncated or copied incompletely). \
         Restore them from a backup or from the datadir this one was copied from; or, to open at block {head} \
         and give up unwinding below it, move the journal folder aside (its blocks are all in the database)"
    )]
    JournalBehindHead {
        /// The journal folder.
        dir: PathBuf,
        /// The journal's newest block.
        last: u64,
        /// redb's flushed head.
        head: u64,
    },
    /// A journal record passed its checksum but does not decode, or does
    /// not fit the blocks before it.
    #[error("journal record of block {block}: {what}")]
    CorruptJournalRecord {
        /// The block the record's frame names.
        block: u64,
        /// What is wrong.
        what: String,
    },
    /// A panic interrupted a block between its journal append and its
    /// publication: what readers see may lag what is durable, so the store
    /// refuses writes until reopened (recovery replays the journal).
    #[error("panic while {what}: {message}")]
    Panicked {
        /// What was being done.
        what: &'static str,
        /// The panic's message.
        message: String,
    },
    /// A thread the store needs could not be started (nothing was written).
    #[error("cannot {what}: {source}")]
    Thread {
        /// What the thread was for.
        what: &'static str,
        /// The operating system's refusal.
        source: std::io::Error,
    },
    /// An unwind committed (the store is at `target`) but cutting the
    /// journal after it failed; the next open finishes the cut.
    #[error(
        "unwound to block {target}, but the journal cut after it failed (the next open finishes it): {source}"
    )]
    UnwindCutPending {
        /// The block the store is now at.
        target: u64,
        /// Why the cut failed.
        #[source]
        source: Box<Error>,
    },
    /// Block `block` could not be begun or committed.
    #[error("block {block} not committed: {source}")]
    BlockNotCommitted {
        /// The block.
        block: u64,
        /// Why.
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// Whether this error leaves the store in a state it must not write on
    /// from (a failed write, sync or read of stored data), as opposed to a
    /// request that was refused before anything was written.
    pub fn poisons(&self) -> bool {
        match self {
            Error::BlockNotCommitted { source, .. } => source.poisons(),
            // A block refused for what it writes, before anything is written.
            Error::Commitment {
                source: strata_commitment::CommitmentError::StorageWithoutAccount { .. },
                ..
            } => false,
            _ => !matches!(
                self,
                Error::BlockOutOfOrder { .. }
                    | Error::WriterBusy { .. }
                    | Error::GenesisExists { .. }
                    | Error::ImportIntoNonEmpty { .. }
                    | Error::GenesisHeader(_)
                    | Error::UnwindOutOfRange { .. }
                    | Error::StateNotRetained { .. }
                    | Error::HistoryRetentionMismatch { .. }
                    | Error::ProofUnavailable(_)
                    | Error::RangeUnavailable(_)
                    | Error::LegacyHistory
                    | Error::Poisoned { .. }
                    | Error::InvalidOptions(_)
                    | Error::BlockRootMismatch { .. }
                    | Error::AccessListMismatch { .. }
                    | Error::Thread { .. }
                    | Error::CommitmentDomainWrite
                    | Error::FollowerOutrun { .. }
            ),
        }
    }

    /// Whether this is redb's "Previous I/O error occurred": a refusal after
    /// an earlier I/O failure, which it does not name.
    pub fn is_previous_io(&self) -> bool {
        match self {
            Error::Db { source, .. } => source.is_previous_io(),
            Error::BlockNotCommitted { source, .. } => source.is_previous_io(),
            _ => false,
        }
    }

    /// This error as a failure of block `block`: unchanged when it already
    /// names the block, else wrapped in [`Error::BlockNotCommitted`].
    pub fn in_block(self, block: u64) -> Error {
        match self {
            Error::BlockOutOfOrder { .. }
            | Error::WriterBusy { .. }
            | Error::Commitment { .. }
            | Error::BlockRootMismatch { .. }
            | Error::AccessListMismatch { .. }
            | Error::BlockNotCommitted { .. } => self,
            other => Error::BlockNotCommitted {
                block,
                source: Box::new(other),
            },
        }
    }
}

/// Result alias of strata-storage.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Wraps a redb error with the operation that raised it.
pub(crate) fn db_err<E: Into<redb::Error>>(op: &'static str) -> impl FnOnce(E) -> Error {
    move |e| Error::Db {
        op,
        source: DbError::new(e),
    }
}

impl From<BulkError> for Error {
    /// A bulk pipeline's failures are the import's variants (the engine
    /// calls the pipeline for an import; verify maps what it sees itself).
    fn from(error: BulkError) -> Error {
        match error {
            BulkError::Scratch { path, what, source } => Error::Datadir { path, what, source },
            BulkError::Commitment { block, source } => Error::Commitment { block, source },
            BulkError::RootMismatch {
                block,
                expected,
                computed,
            } => Error::ImportRootMismatch {
                block,
                expected,
                computed,
            },
            BulkError::RepeatedAccount { address } => Error::ImportRepeatedAccount { address },
            BulkError::RepeatedSlot { address, slot } => {
                Error::ImportRepeatedSlot { address, slot }
            }
            BulkError::Input { source } => Error::ImportInput { source },
            BulkError::Incomplete(what) => Error::ImportIncomplete(what),
            BulkError::File(e) => Error::File(e),
            // `BulkError` is non-exhaustive: a variant added there lands
            // here until the engine names it.
            other => Error::ImportIncomplete(other.to_string()),
        }
    }
}

impl From<RunError> for Error {
    /// A sort run's failure names the run file.
    fn from(e: RunError) -> Error {
        BulkError::from(e).into()
    }
}

impl From<ReadError> for Error {
    /// A read's failure is the variant of the same name.
    fn from(error: ReadError) -> Error {
        match error {
            ReadError::Schema(error) => error.into(),
            ReadError::File(error) => Error::File(error),
            ReadError::InvalidOptions(what) => Error::InvalidOptions(what),
            ReadError::ProofUnavailable(what) => Error::ProofUnavailable(what),
            ReadError::RangeUnavailable(what) => Error::RangeUnavailable(what),
            ReadError::LegacyHistory => Error::LegacyHistory,
            ReadError::Commitment { block, source } => Error::Commitment { block, source },
            ReadError::RootMismatch {
                block,
                stored,
                computed,
            } => Error::RootMismatch {
                block,
                stored,
                computed,
            },
            ReadError::AccessListMismatch {
                block,
                domain,
                key,
                listed,
                written,
            } => Error::AccessListMismatch {
                block,
                domain,
                key,
                listed,
                written,
            },
            // `ReadError` is non-exhaustive: a variant added there lands
            // here until the engine names it.
            other => Error::Corrupt {
                table: "unknown",
                what: other.to_string(),
            },
        }
    }
}

impl From<SchemaError> for Error {
    /// The schema's errors are the engine's variants of the same names.
    fn from(error: SchemaError) -> Error {
        match error {
            SchemaError::Db { op, source } => Error::Db { op, source },
            SchemaError::Corrupt { table, what } => Error::Corrupt { table, what },
            SchemaError::CorruptMeta { name, what } => Error::CorruptMeta { name, what },
            SchemaError::CorruptRecord { domain, key, what } => {
                Error::CorruptRecord { domain, key, what }
            }
            // `SchemaError` is non-exhaustive: a variant added below lands
            // here until the engine names it.
            other => Error::Corrupt {
                table: "unknown",
                what: other.to_string(),
            },
        }
    }
}

/// Runs `read` (redb calls on `table`), turning a redb panic on a damaged
/// page into [`Error::Corrupt`] ([`strata_db::guarded`] with the engine's
/// error).
pub(crate) fn guarded<T>(table: &'static str, read: impl FnOnce() -> Result<T>) -> Result<T> {
    strata_db::guarded(table, read)
}
