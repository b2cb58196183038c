//! Metadata kept in redb: format version, step size, the last committed block
//! and the manifest of live immutable files (the commit authority for files).

use redb::{ReadableTable, Table};
use serde::{Deserialize, Serialize};

use crate::error::{Result, SchemaError, db_err};
use strata_types::domain::Domain;
use strata_types::{DatadirId, HEAD_LEN, Head, HistoryRetention};

/// The on-disk format version this build reads and writes. Version 2 keeps
/// unwind data in the journal (no `changes` table) and redb's head is the
/// last flushed block: a version-1 build would ignore the journal's blocks.
pub const FORMAT_VERSION: u32 = 2;

const KEY_FORMAT: &str = "format_version";
const KEY_STEP_SIZE: &str = "step_size";
const KEY_HEAD: &str = "head";
const KEY_MANIFEST: &str = "manifest";
const KEY_UNWINDS: &str = "unwinds";
const KEY_JOURNAL_VOID_AFTER: &str = "journal_void_after";
const KEY_DATADIR_ID: &str = "datadir_id";
const KEY_CHAIN_CONFIG: &str = "chain_config";
const KEY_HISTORY: &str = "history";
const KEY_HISTORY_FROM: &str = "history_from";

/// One live immutable file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// File name inside the files directory.
    pub name: String,
    /// The file's own checksum, as its footer records it.
    pub checksum: u64,
}

/// The live files of one domain and how far collation has gone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainManifest {
    /// Steps below this have been collated into files.
    pub collated_to: u64,
    /// Live files, oldest first.
    pub files: Vec<ManifestFile>,
}

/// The live files of every domain.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Indexed by [`Domain::index`].
    pub domains: [DomainManifest; 4],
    /// The history files of every domain (indexed by [`Domain::index`]),
    /// oldest blocks first: each holds the domain's changes of the blocks
    /// `[from, to)` its name gives (a datadir that keeps history; empty in
    /// the others and in manifests written before history files existed).
    #[serde(default)]
    pub history: [Vec<ManifestFile>; 4],
}

impl Manifest {
    /// The live files of `domain`.
    pub fn domain(&self, domain: Domain) -> &DomainManifest {
        &self.domains[domain.index()]
    }

    /// The step a db-tier write of `domain` made at `step` is tagged with:
    /// never below the first step not yet collated, so a db record is
    /// always newer than every file (after an unwind into collated steps,
    /// the files may hold values of undone blocks).
    pub fn db_step(&self, domain: Domain, step: u64) -> u64 {
        step.max(self.domain(domain).collated_to)
    }

    /// The live files of `domain`, to change.
    pub fn domain_mut(&mut self, domain: Domain) -> &mut DomainManifest {
        &mut self.domains[domain.index()]
    }
}

/// The metadata table opened for writing.
pub type MetaTable<'txn> = Table<'txn, &'static str, &'static [u8]>;

/// Reads an entry from any table view of META.
fn read<T: ReadableTable<&'static str, &'static [u8]>>(
    table: &T,
    key: &str,
) -> Result<Option<Vec<u8>>> {
    Ok(table
        .get(key)
        .map_err(db_err("read metadata"))?
        .map(|guard| guard.value().to_vec()))
}

/// Everything the metadata table holds, read once at open.
#[derive(Clone, Debug)]
pub struct Meta {
    /// Blocks per step (the unit files cover).
    pub step_size: u64,
    /// The last block flushed to redb.
    pub head: Option<Head>,
    /// The live immutable files.
    pub manifest: Manifest,
    /// How many unwinds the datadir has seen: a reader that followed the
    /// journal starts over when it changes (the journal was cut).
    pub unwinds: u64,
    /// Set by an unwind to block N in the transaction that moves the head
    /// back to N, cleared once the journal is cut after N: until then the
    /// journal's records after N are the unwound blocks, not blocks to
    /// replay (a kill between the two leaves this set).
    pub journal_void_after: Option<u64>,
    /// The datadir's identity, which every journal segment carries (`None`
    /// for a datadir of an earlier release until a writer opens it).
    pub datadir_id: Option<DatadirId>,
    /// How much history the datadir keeps (fixed at creation; `Off` for a
    /// datadir of an earlier release).
    pub history: HistoryRetention,
    /// The oldest block the history rebuilds (recorded by the first flush
    /// that writes history; `None` before).
    pub history_from: Option<u64>,
}

/// Loads the metadata, or `None` for a database that was never initialised.
pub fn load<T: ReadableTable<&'static str, &'static [u8]>>(
    table: &T,
) -> Result<Option<(u32, Meta)>> {
    let Some(format) = read(table, KEY_FORMAT)? else {
        return Ok(None);
    };
    let format =
        u32::from_be_bytes(
            format
                .as_slice()
                .try_into()
                .map_err(|_| SchemaError::CorruptMeta {
                    name: KEY_FORMAT,
                    what: format!("{} bytes, expected 4", format.len()),
                })?,
        );
    if format != FORMAT_VERSION {
        return Ok(Some((
            format,
            Meta {
                step_size: 0,
                head: None,
                manifest: Manifest::default(),
                unwinds: 0,
                journal_void_after: None,
                datadir_id: None,
                history: HistoryRetention::Off,
                history_from: None,
            },
        )));
    }
    let step_size = read(table, KEY_STEP_SIZE)?.ok_or(SchemaError::CorruptMeta {
        name: KEY_STEP_SIZE,
        what: "missing".into(),
    })?;
    let step_size = u64::from_be_bytes(step_size.as_slice().try_into().map_err(|_| {
        SchemaError::CorruptMeta {
            name: KEY_STEP_SIZE,
            what: format!("{} bytes, expected 8", step_size.len()),
        }
    })?);
    let head = read(table, KEY_HEAD)?
        .map(|raw| decode_head(&raw))
        .transpose()?;
    let manifest = match read(table, KEY_MANIFEST)? {
        Some(raw) => serde_json::from_slice(&raw).map_err(|e| SchemaError::CorruptMeta {
            name: KEY_MANIFEST,
            what: e.to_string(),
        })?,
        None => Manifest::default(),
    };
    let unwinds =
        match read(table, KEY_UNWINDS)? {
            Some(raw) => u64::from_be_bytes(raw.as_slice().try_into().map_err(|_| {
                SchemaError::CorruptMeta {
                    name: KEY_UNWINDS,
                    what: format!("{} bytes, expected 8", raw.len()),
                }
            })?),
            None => 0,
        };
    let journal_void_after = read(table, KEY_JOURNAL_VOID_AFTER)?
        .map(|raw| {
            raw.as_slice()
                .try_into()
                .map(u64::from_be_bytes)
                .map_err(|_| SchemaError::CorruptMeta {
                    name: KEY_JOURNAL_VOID_AFTER,
                    what: format!("{} bytes, expected 8", raw.len()),
                })
        })
        .transpose()?;
    let datadir_id = match read(table, KEY_DATADIR_ID)? {
        Some(raw) => Some(DatadirId(raw.as_slice().try_into().map_err(|_| {
            SchemaError::CorruptMeta {
                name: KEY_DATADIR_ID,
                what: format!("{} bytes, expected 16", raw.len()),
            }
        })?)),
        None => None,
    };
    let history = read_u64(table, KEY_HISTORY)?
        .map(HistoryRetention::from_u64)
        .unwrap_or_default();
    let history_from = read_u64(table, KEY_HISTORY_FROM)?;
    Ok(Some((
        format,
        Meta {
            step_size,
            head,
            manifest,
            unwinds,
            journal_void_after,
            datadir_id,
            history,
            history_from,
        },
    )))
}

/// Reads a `u64` entry.
fn read_u64<T: ReadableTable<&'static str, &'static [u8]>>(
    table: &T,
    key: &'static str,
) -> Result<Option<u64>> {
    read(table, key)?
        .map(|raw| {
            raw.as_slice()
                .try_into()
                .map(u64::from_be_bytes)
                .map_err(|_| SchemaError::CorruptMeta {
                    name: key,
                    what: format!("{} bytes, expected 8", raw.len()),
                })
        })
        .transpose()
}

/// Records how much history the datadir keeps (at its creation).
pub fn write_history_retention(
    table: &mut MetaTable<'_>,
    retention: HistoryRetention,
) -> Result<()> {
    table
        .insert(KEY_HISTORY, retention.to_u64().to_be_bytes().as_slice())
        .map_err(db_err("write history retention"))?;
    Ok(())
}

/// Records the oldest block the history rebuilds.
pub fn write_history_from(table: &mut MetaTable<'_>, block: u64) -> Result<()> {
    table
        .insert(KEY_HISTORY_FROM, block.to_be_bytes().as_slice())
        .map_err(db_err("write history start"))?;
    Ok(())
}

/// Records the datadir's identity (once: when it is created, or when a
/// writer first opens a datadir of an earlier release that had none).
pub fn write_datadir_id(table: &mut MetaTable<'_>, id: DatadirId) -> Result<()> {
    table
        .insert(KEY_DATADIR_ID, id.0.as_slice())
        .map_err(db_err("write datadir identity"))?;
    Ok(())
}

/// Writes the fields of a new database, its identity among them.
pub fn init(table: &mut MetaTable<'_>, step_size: u64, id: DatadirId) -> Result<()> {
    write_datadir_id(table, id)?;
    table
        .insert(KEY_FORMAT, FORMAT_VERSION.to_be_bytes().as_slice())
        .map_err(db_err("write format version"))?;
    table
        .insert(KEY_STEP_SIZE, step_size.to_be_bytes().as_slice())
        .map_err(db_err("write step size"))?;
    Ok(())
}

/// Records the last committed block and its root.
pub fn write_head(table: &mut MetaTable<'_>, head: Head) -> Result<()> {
    let raw = head.encode();
    table
        .insert(KEY_HEAD, raw.as_slice())
        .map_err(db_err("write head"))?;
    Ok(())
}

/// Counts one more unwind (see [`Meta::unwinds`]).
pub fn count_unwind(table: &mut MetaTable<'_>) -> Result<()> {
    let unwinds = match read(table, KEY_UNWINDS)? {
        Some(raw) if raw.len() == 8 => u64::from_be_bytes(raw.try_into().expect("8 bytes")),
        _ => 0,
    };
    table
        .insert(KEY_UNWINDS, (unwinds + 1).to_be_bytes().as_slice())
        .map_err(db_err("count unwind"))?;
    Ok(())
}

/// Marks the journal's records after `block` as unwound ([`Meta::journal_void_after`]),
/// or clears the mark with `None`.
pub fn void_journal_after(table: &mut MetaTable<'_>, block: Option<u64>) -> Result<()> {
    match block {
        Some(block) => table
            .insert(KEY_JOURNAL_VOID_AFTER, block.to_be_bytes().as_slice())
            .map(drop),
        None => table.remove(KEY_JOURNAL_VOID_AFTER).map(drop),
    }
    .map_err(db_err("mark the unwound journal records"))
}

/// Records the chain's configuration as the client encodes it (opaque to
/// the store: `strata` keeps a geth genesis `config` object as JSON).
pub fn write_chain_config(table: &mut MetaTable<'_>, config: &[u8]) -> Result<()> {
    table
        .insert(KEY_CHAIN_CONFIG, config)
        .map_err(db_err("write chain configuration"))?;
    Ok(())
}

/// The chain's configuration [`write_chain_config`] recorded, if any.
pub fn read_chain_config<T: ReadableTable<&'static str, &'static [u8]>>(
    table: &T,
) -> Result<Option<Vec<u8>>> {
    read(table, KEY_CHAIN_CONFIG)
}

/// Records the manifest of live files.
pub fn write_manifest(table: &mut MetaTable<'_>, manifest: &Manifest) -> Result<()> {
    let raw = serde_json::to_vec(manifest).expect("manifest serialises");
    table
        .insert(KEY_MANIFEST, raw.as_slice())
        .map_err(db_err("write manifest"))?;
    Ok(())
}

fn decode_head(raw: &[u8]) -> Result<Head> {
    Head::decode(raw).ok_or_else(|| SchemaError::CorruptMeta {
        name: KEY_HEAD,
        what: format!("{} bytes, expected {HEAD_LEN}", raw.len()),
    })
}
