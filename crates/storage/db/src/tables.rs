//! redb table definitions.

use redb::TableDefinition;

use strata_types::domain::Domain;

/// Domain key → `step (u64 BE) ‖ value`; a bare step is a tombstone.
pub type DomainTable = TableDefinition<'static, &'static [u8], &'static [u8]>;

const ACCOUNT: DomainTable = TableDefinition::new("account");
const STORAGE: DomainTable = TableDefinition::new("storage");
const CODE: DomainTable = TableDefinition::new("code");
const COMMITMENT: DomainTable = TableDefinition::new("commitment");

/// Named metadata entries (format version, last block, file manifest).
pub const META: TableDefinition<'static, &'static str, &'static [u8]> =
    TableDefinition::new("meta");

/// Block number → state root (32 bytes), for the blocks retained for unwind.
pub const ROOTS: TableDefinition<'static, u64, &'static [u8]> = TableDefinition::new("roots");

/// keccak256(code) → bytecode: code by hash in one read (content-addressed,
/// never collated or unwound: an entry is valid whoever holds the code).
pub const CODE_BY_HASH: TableDefinition<'static, &'static [u8], &'static [u8]> =
    TableDefinition::new("code_by_hash");

/// Block number → block hash, for the last 256 blocks the client committed.
pub const BLOCK_HASHES: TableDefinition<'static, u64, &'static [u8]> =
    TableDefinition::new("block_hashes");

/// Block number → the block's header as the client gave it (RLP for
/// Ethereum), for the same window as [`BLOCK_HASHES`]. Created by the first
/// write that keeps a header: a datadir written before headers were kept
/// has no such table, and its blocks have no header.
pub const BLOCK_HEADERS: TableDefinition<'static, u64, &'static [u8]> =
    TableDefinition::new("block_headers");

/// Block hash → block number, in a datadir that keeps history (created
/// with it): a block given by hash is found among every kept block, not
/// only the last 256.
pub const BLOCK_NUMBERS: TableDefinition<'static, &'static [u8], u64> =
    TableDefinition::new("block_numbers");

/// How many block hashes (and headers) are kept (the EVM's BLOCKHASH window).
pub const BLOCK_HASH_WINDOW: u64 = 256;

/// The table of a domain.
pub const fn domain_table(domain: Domain) -> DomainTable {
    match domain {
        Domain::Account => ACCOUNT,
        Domain::Storage => STORAGE,
        Domain::Code => CODE,
        Domain::Commitment => COMMITMENT,
    }
}
