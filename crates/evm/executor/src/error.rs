//! The executor's errors: a block refused by a named check
//! ([`InvalidBlock`]), and failures of the store or the input around it
//! ([`ExecError`]).

use alloy_primitives::{B256, Bloom};

/// Why a block is invalid: each variant is one consensus check, named by
/// [`InvalidBlock::check`]. A block refused with one of these leaves
/// nothing in the store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidBlock {
    /// The block's RLP does not decode as a block, or has bytes after it.
    #[error("block RLP does not decode: {0}")]
    Rlp(String),
    /// The parent block is not known.
    #[error("unknown parent {0}")]
    UnknownParent(B256),
    /// The number is not the parent's plus one.
    #[error("block number {got}, expected {expected} (parent + 1)")]
    Number {
        /// The parent's number plus one.
        expected: u64,
        /// The header's.
        got: u64,
    },
    /// The timestamp is not after the parent's.
    #[error("timestamp {got} is not after the parent's {parent}")]
    Timestamp {
        /// The parent's timestamp.
        parent: u64,
        /// The header's.
        got: u64,
    },
    /// The gas limit moved too far from the parent's, or is out of range.
    #[error("gas limit {got} is outside {min}..={max} allowed by the parent's {parent}")]
    GasLimit {
        /// The parent's gas limit (doubled at the London block).
        parent: u64,
        /// The smallest limit allowed.
        min: u64,
        /// The largest limit allowed.
        max: u64,
        /// The header's.
        got: u64,
    },
    /// The header's gas used exceeds its gas limit.
    #[error("gas used {used} exceeds the gas limit {limit}")]
    GasUsedAboveLimit {
        /// Header gas used.
        used: u64,
        /// Header gas limit.
        limit: u64,
    },
    /// The extra data is longer than 32 bytes.
    #[error("extra data is {0} bytes (at most 32)")]
    ExtraDataTooLong(usize),
    /// A block of the DAO fork's first ten does not carry "dao-hard-fork".
    #[error("extra data of a DAO fork block is not \"dao-hard-fork\"")]
    DaoExtraData,
    /// A header field the block's fork requires is absent, or one it forbids is present.
    #[error("header field {field} {problem}")]
    HeaderField {
        /// The field's name.
        field: &'static str,
        /// "is missing" or "is not allowed before its fork".
        problem: &'static str,
    },
    /// EIP-1559 base fee differs from the one the parent implies.
    #[error("base fee {got}, expected {expected}")]
    BaseFee {
        /// What the parent implies.
        expected: u64,
        /// The header's.
        got: u64,
    },
    /// EIP-4844 excess blob gas differs from the one the parent implies.
    #[error("excess blob gas {got}, expected {expected}")]
    ExcessBlobGas {
        /// What the parent implies.
        expected: u64,
        /// The header's.
        got: u64,
    },
    /// The blob gas used differs from the transactions' blobs, or is out of range.
    #[error("blob gas used {got}, expected {expected}")]
    BlobGasUsed {
        /// The transactions' blob gas (or the maximum).
        expected: u64,
        /// The header's.
        got: u64,
    },
    /// The difficulty differs from the one the parent implies (zero after the merge).
    #[error("difficulty {got}, expected {expected}")]
    Difficulty {
        /// What the parent implies.
        expected: alloy_primitives::U256,
        /// The header's.
        got: alloy_primitives::U256,
    },
    /// A proof-of-stake block with a non-zero nonce.
    #[error("nonce {0:#x} of a proof-of-stake block (must be zero)")]
    Nonce(u64),
    /// Ommers in a proof-of-stake block.
    #[error("{0} ommers in a proof-of-stake block")]
    OmmersAfterMerge(usize),
    /// An ommer that may not be included.
    #[error("ommer {index}: {reason}")]
    Ommer {
        /// Position in the block's ommer list.
        index: usize,
        /// Which rule it breaks.
        reason: String,
    },
    /// A root or hash over the body differs from the header's.
    #[error("{what} {computed} differs from the header's {header}")]
    BodyRoot {
        /// "transactions root", "ommers hash" or "withdrawals root".
        what: &'static str,
        /// The header's.
        header: B256,
        /// Computed from the body.
        computed: B256,
    },
    /// A transaction's signature does not recover a sender.
    #[error("transaction {index}: no sender recovers from its signature")]
    Signature {
        /// Position in the block.
        index: usize,
    },
    /// A transaction the EVM refuses (nonce, funds, intrinsic gas, type, blobs, ...).
    #[error("transaction {index}: {reason}")]
    Transaction {
        /// Position in the block.
        index: usize,
        /// The EVM's reason.
        reason: String,
    },
    /// A request system contract (EIP-7002, EIP-7251) has no code when the
    /// block's system call runs.
    #[error("the system contract {address} has no code")]
    SystemContractEmpty {
        /// The contract's address.
        address: alloy_primitives::Address,
    },
    /// EIP-7928: the access list the block's execution built does not hash
    /// to the header's `blockAccessListHash`.
    #[error("the block's access list hashes to {executed}, its header says {header}")]
    AccessListHash {
        /// The header's.
        header: B256,
        /// The hash of the list execution built.
        executed: B256,
    },
    /// EIP-7928: the access list that came with the block differs from
    /// the one its execution built.
    #[error("the block's access list is not what it read and wrote: {difference}")]
    AccessListDiffers {
        /// The first difference: the account (its position in the lists
        /// and its address) and which of its changes or reads differ.
        difference: String,
    },
    /// EIP-7928: the block's access list holds more items (accounts and
    /// slots) than its gas limit pays for at 2,000 gas an item.
    #[error("the block's access list holds {items} items, its gas limit pays for {most}")]
    AccessListTooLarge {
        /// Accounts plus the slots they change or read.
        items: u64,
        /// The gas limit over the gas of an item.
        most: u64,
    },
    /// EIP-7928: the access list that came with the block does not decode,
    /// or breaks its order and uniqueness rules.
    #[error("the block's access list is malformed: {0}")]
    AccessListMalformed(String),
    /// The block's system calls, rewards or withdrawals failed.
    #[error("block execution: {0}")]
    Execution(String),
    /// The gas the transactions used differs from the header's.
    #[error("gas used {executed}, header says {header}")]
    GasUsed {
        /// The header's.
        header: u64,
        /// Executed.
        executed: u64,
    },
    /// The receipts root differs from the header's.
    #[error("receipts root {executed}, header says {header}")]
    ReceiptsRoot {
        /// The header's.
        header: B256,
        /// Of the executed receipts.
        executed: B256,
    },
    /// The logs bloom differs from the header's.
    #[error("logs bloom differs from the header's ({executed} ≠ {header})")]
    LogsBloom {
        /// The header's.
        header: Box<Bloom>,
        /// Of the executed receipts.
        executed: Box<Bloom>,
    },
    /// EIP-7685 requests hash differs from the header's.
    #[error("requests hash {executed}, header says {header:?}")]
    RequestsHash {
        /// The header's.
        header: Option<B256>,
        /// Of the executed requests.
        executed: B256,
    },
    /// The state root after the block differs from the header's.
    #[error("state root {computed}, header says {header}")]
    StateRoot {
        /// The header's.
        header: B256,
        /// Computed by strata's commitment.
        computed: B256,
    },
}

impl InvalidBlock {
    /// A short stable name of the check that failed, for reports.
    pub fn check(&self) -> &'static str {
        match self {
            Self::Rlp(_) => "rlp",
            Self::UnknownParent(_) => "parent",
            Self::Number { .. } => "number",
            Self::Timestamp { .. } => "timestamp",
            Self::GasLimit { .. } => "gas-limit",
            Self::GasUsedAboveLimit { .. } => "gas-used-above-limit",
            Self::ExtraDataTooLong(_) => "extra-data",
            Self::DaoExtraData => "dao-extra-data",
            Self::HeaderField { .. } => "header-fields",
            Self::BaseFee { .. } => "base-fee",
            Self::ExcessBlobGas { .. } => "excess-blob-gas",
            Self::BlobGasUsed { .. } => "blob-gas-used",
            Self::Difficulty { .. } => "difficulty",
            Self::Nonce(_) => "nonce",
            Self::OmmersAfterMerge(_) => "ommers-after-merge",
            Self::Ommer { .. } => "ommer",
            Self::BodyRoot { what, .. } => match *what {
                "transactions root" => "transactions-root",
                "ommers hash" => "ommers-hash",
                _ => "withdrawals-root",
            },
            Self::Signature { .. } => "signature",
            Self::Transaction { .. } => "transaction",
            Self::Execution(_) => "execution",
            Self::SystemContractEmpty { .. } => "system-contract-empty",
            Self::AccessListHash { .. } => "access-list-hash",
            Self::AccessListDiffers { .. } => "access-list",
            Self::AccessListMalformed(_) => "access-list-malformed",
            Self::AccessListTooLarge { .. } => "access-list-too-large",
            Self::GasUsed { .. } => "gas-used",
            Self::ReceiptsRoot { .. } => "receipts-root",
            Self::LogsBloom { .. } => "logs-bloom",
            Self::RequestsHash { .. } => "requests-hash",
            Self::StateRoot { .. } => "state-root",
        }
    }
}

/// A block that could not be executed: refused as invalid, or stopped by
/// the store. Every variant names the block.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The block breaks a consensus rule; nothing of it was written.
    #[error("block {number} ({hash}) is invalid: {reason}")]
    Invalid {
        /// Its number.
        number: u64,
        /// Its hash.
        hash: B256,
        /// The check it failed.
        reason: Box<InvalidBlock>,
    },
    /// The store failed while the block was read or committed.
    #[error("block {number}: {source}")]
    Store {
        /// Its number.
        number: u64,
        /// The store's error.
        source: Box<strata_storage::Error>,
    },
    /// The block needs a rule the EVM does not implement; nothing of it
    /// was written.
    #[error("block {number}: cannot be executed: {reason}")]
    Unsupported {
        /// Its number.
        number: u64,
        /// The rule and where it applies.
        reason: String,
    },
    /// The store failed under the EVM (a read or an apply).
    #[error("block {number}: the EVM's database: {message}")]
    Database {
        /// Its number.
        number: u64,
        /// What failed.
        message: String,
    },
}

impl ExecError {
    /// The block the error is about.
    pub fn number(&self) -> u64 {
        match self {
            ExecError::Invalid { number, .. }
            | ExecError::Store { number, .. }
            | ExecError::Unsupported { number, .. }
            | ExecError::Database { number, .. } => *number,
        }
    }

    /// The consensus check the block failed, if it was refused as invalid.
    pub fn invalid(&self) -> Option<&InvalidBlock> {
        match self {
            Self::Invalid { reason, .. } => Some(reason),
            _ => None,
        }
    }
}
