//! Errors of the trace reader: each names the line, and where it applies
//! the section, the address and the field.

use strata_storage::genesis::{GenesisError, ValueError};

/// Why a trace line could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// Reading the input failed.
    #[error("line {line}: cannot read the trace: {source}")]
    Io {
        /// 1-based line number being read.
        line: usize,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The line is not valid JSON.
    #[error("line {line}: invalid JSON at column {column}: {message}")]
    Json {
        /// 1-based line number.
        line: usize,
        /// 1-based column of the syntax error.
        column: usize,
        /// What the JSON parser reported.
        message: String,
    },
    /// A value that must be an object is something else.
    #[error("line {line}: {context}: expected a JSON object, found {found}")]
    NotAnObject {
        /// 1-based line number.
        line: usize,
        /// Where ("line", "reads", "writes 0xab..").
        context: String,
        /// Short rendering of what was found.
        found: String,
    },
    /// The `kind` is neither `genesis` nor `block`.
    #[error("line {line}: unknown kind {kind} (expected \"genesis\" or \"block\")")]
    UnknownKind {
        /// 1-based line number.
        line: usize,
        /// The kind as written (JSON).
        kind: String,
    },
    /// A required field is missing.
    #[error("line {line}: {context}: missing field {field:?}")]
    MissingField {
        /// 1-based line number.
        line: usize,
        /// Where the field was expected ("block", "reads 0xab..").
        context: String,
        /// The field name.
        field: &'static str,
    },
    /// A field the format does not define (likely a typo).
    #[error("line {line}: {context}: unknown field {field:?}")]
    UnknownField {
        /// 1-based line number.
        line: usize,
        /// Where ("block", "writes 0xab..").
        context: String,
        /// The field name as written.
        field: String,
    },
    /// The block's `access_list` is not an EIP-7928 list.
    #[error("line {line}: field \"access_list\": {message}")]
    AccessList {
        /// 1-based line number.
        line: usize,
        /// Why it does not decode.
        message: String,
    },
    /// A top-level field of the line has a bad value.
    #[error("line {line}: field {field:?}: {source}")]
    Field {
        /// 1-based line number.
        line: usize,
        /// The field name.
        field: &'static str,
        /// What is wrong with the value.
        #[source]
        source: ValueError,
    },
    /// A key of `reads` or `writes` is not a 20-byte address.
    #[error("line {line}: {section}: invalid address {text:?}: {source}")]
    Address {
        /// 1-based line number.
        line: usize,
        /// "reads" or "writes".
        section: &'static str,
        /// The key as written.
        text: String,
        /// What is wrong with it.
        #[source]
        source: ValueError,
    },
    /// A field of one account entry has a bad value.
    #[error("line {line}: {section} {address}: field {field:?}: {source}")]
    Account {
        /// 1-based line number.
        line: usize,
        /// "reads" or "writes".
        section: &'static str,
        /// The account's address.
        address: String,
        /// The field ("balance", "storage", "storage[0x..]", ...).
        field: String,
        /// What is wrong with the value.
        #[source]
        source: ValueError,
    },
    /// A read's `code_hash` is not keccak256 of its `code`.
    #[error(
        "line {line}: reads {address}: field \"code_hash\": {found} is not keccak256(code) = {expected}"
    )]
    CodeHashMismatch {
        /// 1-based line number.
        line: usize,
        /// The account's address.
        address: String,
        /// keccak256 of the given code.
        expected: String,
        /// The code hash as written.
        found: String,
    },
    /// A write entry that neither deletes nor changes anything.
    #[error("line {line}: writes {address}: empty entry (give \"deleted\" or a field to change)")]
    EmptyWrite {
        /// 1-based line number.
        line: usize,
        /// The account's address.
        address: String,
    },
    /// The genesis line's alloc is malformed.
    #[error("line {line}: genesis alloc: {source}")]
    Genesis {
        /// 1-based line number.
        line: usize,
        /// What is wrong with the alloc.
        #[source]
        source: GenesisError,
    },
    /// A genesis line that is not the first line.
    #[error("line {line}: a genesis line may only be the first line of a trace")]
    GenesisNotFirst {
        /// 1-based line number.
        line: usize,
    },
    /// Block numbers must increase by exactly one.
    #[error("line {line}: block number {found} does not follow block {previous} (expected {})", previous.saturating_add(1))]
    OutOfOrder {
        /// 1-based line number.
        line: usize,
        /// The previous block's number.
        previous: u64,
        /// The number found on this line.
        found: u64,
    },
    /// Valid JSON that does not have the trace's shape: an unknown or
    /// repeated field, or a value of the wrong kind where an object is due.
    #[error("line {line}: {context}: {message} (column {column})")]
    Schema {
        /// 1-based line number.
        line: usize,
        /// Where: "line", or the keys leading to it ("writes 0xab..").
        context: String,
        /// 1-based column where the parser noticed it.
        column: usize,
        /// What the parser reported (names the field).
        message: String,
    },
    /// The same address twice in `reads` or `writes` (perhaps in another
    /// letter case, or without `0x`).
    #[error("line {line}: {section}: address {second} is listed twice (first as {first})")]
    RepeatedAddress {
        /// 1-based line number.
        line: usize,
        /// "reads" or "writes".
        section: &'static str,
        /// The first spelling.
        first: String,
        /// The repeated spelling.
        second: String,
    },
    /// The same slot twice in an entry's `storage` (`0x1` and `0x01`).
    #[error(
        "line {line}: {section} {address}: storage slot {second} is listed twice (first as {first})"
    )]
    RepeatedSlot {
        /// 1-based line number.
        line: usize,
        /// "reads" or "writes".
        section: &'static str,
        /// The account's address as written.
        address: String,
        /// The first spelling.
        first: String,
        /// The repeated spelling.
        second: String,
    },
}

impl TraceError {
    /// The 1-based line the error is about.
    pub fn line(&self) -> usize {
        match self {
            Self::Io { line, .. }
            | Self::Json { line, .. }
            | Self::NotAnObject { line, .. }
            | Self::UnknownKind { line, .. }
            | Self::MissingField { line, .. }
            | Self::UnknownField { line, .. }
            | Self::AccessList { line, .. }
            | Self::Field { line, .. }
            | Self::Address { line, .. }
            | Self::Account { line, .. }
            | Self::CodeHashMismatch { line, .. }
            | Self::EmptyWrite { line, .. }
            | Self::Genesis { line, .. }
            | Self::GenesisNotFirst { line }
            | Self::OutOfOrder { line, .. }
            | Self::Schema { line, .. }
            | Self::RepeatedAddress { line, .. }
            | Self::RepeatedSlot { line, .. } => *line,
        }
    }
}
