//! What can go wrong reading or writing strata's redb tables: redb's own
//! failures, and stored bytes that do not decode.

use strata_types::Domain;

/// An error of the schema layer. The engine maps each variant onto its own
/// error of the same name.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// redb reported an error.
    #[error("database: {op}: {source}")]
    Db {
        /// The operation that failed.
        op: &'static str,
        /// redb's error.
        #[source]
        source: DbError,
    },
    /// A damaged database page made redb panic while reading a table.
    #[error("corrupt database: table {table}: {what}")]
    Corrupt {
        /// The redb table being read.
        table: &'static str,
        /// What redb reported (its panic message).
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
    /// A stored domain value does not decode.
    #[error("corrupt {domain} record for key 0x{key}: {what}")]
    CorruptRecord {
        /// Domain of the record.
        domain: Domain,
        /// Hex of the key.
        key: String,
        /// What is wrong.
        what: String,
    },
}

/// Result alias of strata-db.
pub type Result<T, E = SchemaError> = std::result::Result<T, E>;

/// Wraps a redb error with the operation that raised it.
pub fn db_err<E: Into<redb::Error>>(op: &'static str) -> impl FnOnce(E) -> SchemaError {
    move |e| SchemaError::Db {
        op,
        source: DbError::new(e),
    }
}

/// An error of the embedded database (redb), kept opaque so that callers do
/// not depend on redb's version; its message and [`std::error::Error::source`]
/// chain say what happened.
#[derive(Debug)]
pub struct DbError(redb::Error);

impl DbError {
    /// Wraps one of redb's errors.
    pub fn new(error: impl Into<redb::Error>) -> DbError {
        DbError(error.into())
    }

    /// Whether the database failed on an I/O error of its file (disk full,
    /// device error, ...) rather than on its contents or its use.
    pub fn is_io(&self) -> bool {
        matches!(self.0, redb::Error::Io(_) | redb::Error::PreviousIo)
    }

    /// Whether this is redb's "Previous I/O error occurred": a refusal after
    /// an earlier I/O failure, which it does not name.
    pub fn is_previous_io(&self) -> bool {
        matches!(self.0, redb::Error::PreviousIo)
    }
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for DbError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl From<redb::DatabaseError> for DbError {
    fn from(error: redb::DatabaseError) -> DbError {
        DbError(error.into())
    }
}
