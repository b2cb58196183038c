//! A whole redb tier as one stream of bytes: every table strata keeps, read
//! from one read transaction and written out in order (`write_base`), and
//! a new database file built from such a stream (`load_base`). A replica
//! on another machine starts from it: the stream and the immutable files
//! its manifest lists are the datadir at that transaction's head.
//!
//! ```text
//! magic "STRATA-REDB-BASE" | version u32
//! section*: table u8 | present u8 | entries u64 | (key_len u32 | key | value_len u32 | value)*
//! end: 0xFF | xxh3-64 of every byte before it (u64)
//! ```
//! All integers little-endian; `u64` keys and values are written as their
//! eight little-endian bytes, text keys as UTF-8. A table the source does
//! not have is written absent and not created by the load (its absence
//! means something: no header was ever kept, no history is kept).

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use redb::{
    Database, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata,
    TableDefinition, TableError, WriteTransaction,
};
use xxhash_rust::xxh3::Xxh3;

use crate::history::{LEGACY_HISTORY_CHANGES, LEGACY_HISTORY_INDEX};
use crate::tables::{
    BLOCK_HASHES, BLOCK_HEADERS, BLOCK_NUMBERS, CODE_BY_HASH, META, ROOTS, domain_table,
};
use strata_types::Domain;

const MAGIC: &[u8; 16] = b"STRATA-REDB-BASE";
const VERSION: u32 = 1;
const END: u8 = 0xFF;

/// Why a base could not be written or loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BaseError {
    /// redb failed.
    #[error("base: database: {op}: {source}")]
    Db {
        /// The operation that failed.
        op: &'static str,
        /// redb's error.
        #[source]
        source: crate::DbError,
    },
    /// Reading or writing the stream failed.
    #[error("base: {op}: {source}")]
    Io {
        /// The operation that failed.
        op: &'static str,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The stream is not a whole base: what is wrong and at which byte.
    #[error("base: damaged at byte {offset}: {what}")]
    Damaged {
        /// Where reading stopped.
        offset: u64,
        /// What was wrong.
        what: String,
    },
    /// The source still holds history in the first layout's redb tables,
    /// which a writer's open moves into history files first.
    #[error(
        "base: the datadir still holds history in redb tables: open its writer once to move it"
    )]
    LegacyHistory,
    /// The source holds no flushed block.
    #[error("base: the datadir holds no flushed block yet")]
    NoHead,
    /// The source has no identity (written before datadirs had one).
    #[error("base: the datadir has no identity: open its writer once to give it one")]
    NoIdentity,
    /// The database file to load into exists already.
    #[error("base: {0} exists; a base is loaded into a new database only")]
    Exists(PathBuf),
}

fn db<E: Into<redb::Error>>(op: &'static str) -> impl FnOnce(E) -> BaseError {
    move |e| BaseError::Db {
        op,
        source: crate::DbError::new(e),
    }
}

/// How a table's keys or values are written in the stream.
#[derive(Clone, Copy)]
enum Shape {
    Bytes,
    Text,
    U64,
}

/// One table of the stream, in its fixed order.
#[derive(Clone, Copy)]
struct Section {
    tag: u8,
    name: &'static str,
    key: Shape,
    value: Shape,
}

const SECTIONS: [Section; 10] = [
    Section {
        tag: 1,
        name: "meta",
        key: Shape::Text,
        value: Shape::Bytes,
    },
    Section {
        tag: 2,
        name: "roots",
        key: Shape::U64,
        value: Shape::Bytes,
    },
    Section {
        tag: 3,
        name: "code_by_hash",
        key: Shape::Bytes,
        value: Shape::Bytes,
    },
    Section {
        tag: 4,
        name: "block_hashes",
        key: Shape::U64,
        value: Shape::Bytes,
    },
    Section {
        tag: 5,
        name: "block_headers",
        key: Shape::U64,
        value: Shape::Bytes,
    },
    Section {
        tag: 6,
        name: "block_numbers",
        key: Shape::Bytes,
        value: Shape::U64,
    },
    Section {
        tag: 7,
        name: "account",
        key: Shape::Bytes,
        value: Shape::Bytes,
    },
    Section {
        tag: 8,
        name: "storage",
        key: Shape::Bytes,
        value: Shape::Bytes,
    },
    Section {
        tag: 9,
        name: "code",
        key: Shape::Bytes,
        value: Shape::Bytes,
    },
    Section {
        tag: 10,
        name: "commitment",
        key: Shape::Bytes,
        value: Shape::Bytes,
    },
];

/// What a written base holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BaseSummary {
    /// Entries over every table.
    pub entries: u64,
    /// Bytes of the stream.
    pub bytes: u64,
    /// The stream's closing checksum.
    pub checksum: u64,
}

/// A writer that hashes and counts what passes through it.
struct Hashing<W> {
    inner: W,
    hash: Xxh3,
    bytes: u64,
}

impl<W: Write> Hashing<W> {
    fn put(&mut self, data: &[u8]) -> Result<(), BaseError> {
        self.hash.update(data);
        self.bytes += data.len() as u64;
        self.inner.write_all(data).map_err(|source| BaseError::Io {
            op: "write",
            source,
        })
    }

    fn entry(&mut self, key: &[u8], value: &[u8]) -> Result<(), BaseError> {
        self.put(&(key.len() as u32).to_le_bytes())?;
        self.put(key)?;
        self.put(&(value.len() as u32).to_le_bytes())?;
        self.put(value)
    }
}

/// Values that replace a domain table's rows in a base: per domain (by
/// [`Domain::index`]), key → the encoded row (`step ‖ value`, a bare step
/// for a tombstone), sorted by key.
pub type BaseOverrides = [std::collections::BTreeMap<Vec<u8>, Vec<u8>>; 4];

/// Writes every table `txn` sees to `out` (see the module's format) and
/// returns what it wrote. The rows of `overrides` replace (or add to) the
/// domain tables' rows: a transaction taken while a flush was half done
/// holds plain values of blocks after its head, which the caller takes
/// back to the head this way.
pub fn write_base(
    txn: &ReadTransaction,
    overrides: &BaseOverrides,
    out: &mut dyn Write,
) -> Result<BaseSummary, BaseError> {
    for legacy in [LEGACY_HISTORY_CHANGES, LEGACY_HISTORY_INDEX] {
        match txn.open_table(legacy) {
            Ok(_) => return Err(BaseError::LegacyHistory),
            Err(TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(db("open legacy history")(e)),
        }
    }
    let mut out = Hashing {
        inner: out,
        hash: Xxh3::new(),
        bytes: 0,
    };
    out.put(MAGIC)?;
    out.put(&VERSION.to_le_bytes())?;
    let mut entries = 0;
    for section in SECTIONS {
        entries += match section.tag {
            1 => write_table(
                txn,
                &mut out,
                section,
                META,
                |k| k.as_bytes().to_vec(),
                |v| v.to_vec(),
            )?,
            2 => write_table(
                txn,
                &mut out,
                section,
                ROOTS,
                |k| k.to_le_bytes().to_vec(),
                |v| v.to_vec(),
            )?,
            3 => write_table(
                txn,
                &mut out,
                section,
                CODE_BY_HASH,
                |k| k.to_vec(),
                |v| v.to_vec(),
            )?,
            4 => write_table(
                txn,
                &mut out,
                section,
                BLOCK_HASHES,
                |k| k.to_le_bytes().to_vec(),
                |v| v.to_vec(),
            )?,
            5 => write_table(
                txn,
                &mut out,
                section,
                BLOCK_HEADERS,
                |k| k.to_le_bytes().to_vec(),
                |v| v.to_vec(),
            )?,
            6 => write_table(
                txn,
                &mut out,
                section,
                BLOCK_NUMBERS,
                |k| k.to_vec(),
                |v| v.to_le_bytes().to_vec(),
            )?,
            tag => {
                let domain = Domain::ALL[usize::from(tag - 7)];
                write_domain(txn, &mut out, section, domain, &overrides[domain.index()])?
            }
        };
    }
    out.put(&[END])?;
    let checksum = out.hash.digest();
    out.inner
        .write_all(&checksum.to_le_bytes())
        .and_then(|()| out.inner.flush())
        .map_err(|source| BaseError::Io {
            op: "write",
            source,
        })?;
    Ok(BaseSummary {
        entries,
        bytes: out.bytes + 8,
        checksum,
    })
}

fn write_table<K, V, W>(
    txn: &ReadTransaction,
    out: &mut Hashing<W>,
    section: Section,
    table: TableDefinition<'static, K, V>,
    key: impl Fn(K::SelfType<'_>) -> Vec<u8>,
    value: impl Fn(V::SelfType<'_>) -> Vec<u8>,
) -> Result<u64, BaseError>
where
    K: redb::Key + 'static,
    V: redb::Value + 'static,
    W: Write,
{
    let table = match txn.open_table(table) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_)) => {
            out.put(&[section.tag, 0])?;
            out.put(&0u64.to_le_bytes())?;
            return Ok(0);
        }
        Err(e) => return Err(db("open table")(e)),
    };
    let count = table.len().map_err(db("count table"))?;
    out.put(&[section.tag, 1])?;
    out.put(&count.to_le_bytes())?;
    let mut written = 0;
    for entry in table.iter().map_err(db("iterate table"))? {
        let (k, v) = entry.map_err(db("read table"))?;
        out.entry(&key(k.value()), &value(v.value()))?;
        written += 1;
    }
    written_as_counted(section, count, written, out.bytes)
}

/// `count`, when a table's rows written to the stream (up to `offset`) are
/// the `count` it announced before them; else the stream is damaged.
fn written_as_counted(
    section: Section,
    count: u64,
    written: u64,
    offset: u64,
) -> Result<u64, BaseError> {
    if written != count {
        return Err(BaseError::Damaged {
            offset,
            what: format!(
                "table {} counted {count} entries but held {written}",
                section.name
            ),
        });
    }
    Ok(count)
}

/// Writes a domain table merged with `overrides` (their rows win).
fn write_domain<W: Write>(
    txn: &ReadTransaction,
    out: &mut Hashing<W>,
    section: Section,
    domain: Domain,
    overrides: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
) -> Result<u64, BaseError> {
    let table = match txn.open_table(domain_table(domain)) {
        Ok(table) => Some(table),
        Err(TableError::TableDoesNotExist(_)) => None,
        Err(e) => return Err(db("open table")(e)),
    };
    let Some(table) = table else {
        if !overrides.is_empty() {
            return Err(BaseError::Damaged {
                offset: out.bytes,
                what: format!("table {} is missing but has rows to replace", section.name),
            });
        }
        out.put(&[section.tag, 0])?;
        out.put(&0u64.to_le_bytes())?;
        return Ok(0);
    };
    let mut added = 0u64;
    for key in overrides.keys() {
        if table
            .get(key.as_slice())
            .map_err(db("read table"))?
            .is_none()
        {
            added += 1;
        }
    }
    let count = table.len().map_err(db("count table"))? + added;
    out.put(&[section.tag, 1])?;
    out.put(&count.to_le_bytes())?;
    let mut pending = overrides.iter().peekable();
    let mut written = 0u64;
    for entry in table.iter().map_err(db("iterate table"))? {
        let (k, v) = entry.map_err(db("read table"))?;
        let key = k.value();
        while let Some((over, row)) = pending.next_if(|(over, _)| over.as_slice() < key) {
            out.entry(over, row)?;
            written += 1;
        }
        match pending.next_if(|(over, _)| over.as_slice() == key) {
            Some((_, row)) => out.entry(key, row)?,
            None => out.entry(key, v.value())?,
        }
        written += 1;
    }
    for (over, row) in pending {
        out.entry(over, row)?;
        written += 1;
    }
    written_as_counted(section, count, written, out.bytes)
}

/// A reader that hashes and counts what it hands out.
struct Checked<R> {
    inner: R,
    hash: Xxh3,
    offset: u64,
}

impl<R: Read> Checked<R> {
    fn take(&mut self, buf: &mut [u8]) -> Result<(), BaseError> {
        self.inner.read_exact(buf).map_err(|source| {
            if source.kind() == io::ErrorKind::UnexpectedEof {
                self.damaged("the stream ends early")
            } else {
                BaseError::Io { op: "read", source }
            }
        })?;
        self.hash.update(buf);
        self.offset += buf.len() as u64;
        Ok(())
    }

    fn u8(&mut self) -> Result<u8, BaseError> {
        let mut b = [0u8; 1];
        self.take(&mut b)?;
        Ok(b[0])
    }

    fn u32(&mut self) -> Result<u32, BaseError> {
        let mut b = [0u8; 4];
        self.take(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self) -> Result<u64, BaseError> {
        let mut b = [0u8; 8];
        self.take(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn bytes(&mut self, limit: u32) -> Result<Vec<u8>, BaseError> {
        let len = self.u32()?;
        if len > limit {
            return Err(self.damaged(&format!("an entry of {len} bytes (at most {limit})")));
        }
        let mut data = vec![0u8; len as usize];
        self.take(&mut data)?;
        Ok(data)
    }

    fn damaged(&self, what: &str) -> BaseError {
        BaseError::Damaged {
            offset: self.offset,
            what: what.to_string(),
        }
    }
}

/// The largest key or value a base may carry (a contract's code is at most
/// 24 KiB on mainnet, 48 KiB of initcode; a header a few hundred bytes).
const ENTRY_LIMIT: u32 = 16 << 20;

/// Builds a new redb database at `path` from the stream `input` (written by
/// [`write_base`]): every table in one transaction, committed only when the
/// whole stream has been read and its checksum holds; on any error the new
/// file is removed. Returns what was loaded.
pub fn load_base(path: &Path, input: &mut dyn Read) -> Result<BaseSummary, BaseError> {
    if path.exists() {
        return Err(BaseError::Exists(path.to_path_buf()));
    }
    let result = (|| {
        let database = Database::create(path).map_err(db("create database"))?;
        let txn = database.begin_write().map_err(db("begin write"))?;
        let summary = load_into(&txn, input)?;
        txn.commit().map_err(db("commit"))?;
        Ok(summary)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(path);
    }
    result
}

fn load_into(txn: &WriteTransaction, input: &mut dyn Read) -> Result<BaseSummary, BaseError> {
    let mut input = Checked {
        inner: input,
        hash: Xxh3::new(),
        offset: 0,
    };
    let mut magic = [0u8; 16];
    input.take(&mut magic)?;
    if &magic != MAGIC {
        return Err(BaseError::Damaged {
            offset: 0,
            what: "not a strata base (magic)".into(),
        });
    }
    let version = input.u32()?;
    if version != VERSION {
        return Err(input.damaged(&format!(
            "base version {version}, this build reads {VERSION}"
        )));
    }
    let mut entries = 0;
    for section in SECTIONS {
        let tag = input.u8()?;
        if tag != section.tag {
            return Err(input.damaged(&format!("section {tag} where {} was due", section.name)));
        }
        let present = input.u8()?;
        let count = input.u64()?;
        if present > 1 || (present == 0 && count > 0) {
            return Err(input.damaged(&format!("table {}: bad presence", section.name)));
        }
        if present == 1 {
            load_section(txn, &mut input, section, count)?;
        }
        entries += count;
    }
    if input.u8()? != END {
        return Err(input.damaged("no end marker after the last table"));
    }
    let expected = input.hash.digest();
    let mut stored = [0u8; 8];
    input
        .inner
        .read_exact(&mut stored)
        .map_err(|_| input.damaged("the stream ends before its checksum"))?;
    if u64::from_le_bytes(stored) != expected {
        return Err(input.damaged("checksum mismatch"));
    }
    let mut rest = [0u8; 1];
    if input
        .inner
        .read(&mut rest)
        .map_err(|source| BaseError::Io { op: "read", source })?
        != 0
    {
        return Err(input.damaged("bytes after the checksum"));
    }
    Ok(BaseSummary {
        entries,
        bytes: input.offset + 8,
        checksum: expected,
    })
}

fn load_section<R: Read>(
    txn: &WriteTransaction,
    input: &mut Checked<R>,
    section: Section,
    count: u64,
) -> Result<(), BaseError> {
    let word = |input: &Checked<R>, bytes: &[u8]| -> Result<u64, BaseError> {
        let b: [u8; 8] = bytes.try_into().map_err(|_| {
            input.damaged(&format!(
                "table {}: a number of {} bytes",
                section.name,
                bytes.len()
            ))
        })?;
        Ok(u64::from_le_bytes(b))
    };
    match (section.key, section.value) {
        (Shape::Text, _) => {
            let mut table = txn.open_table(META).map_err(db("open table"))?;
            for _ in 0..count {
                let (k, v) = (input.bytes(ENTRY_LIMIT)?, input.bytes(ENTRY_LIMIT)?);
                let key = std::str::from_utf8(&k)
                    .map_err(|_| input.damaged("meta: a key that is not text"))?;
                table.insert(key, v.as_slice()).map_err(db("insert"))?;
            }
        }
        (Shape::U64, _) => {
            let def = match section.tag {
                2 => ROOTS,
                4 => BLOCK_HASHES,
                _ => BLOCK_HEADERS,
            };
            let mut table = txn.open_table(def).map_err(db("open table"))?;
            for _ in 0..count {
                let (k, v) = (input.bytes(ENTRY_LIMIT)?, input.bytes(ENTRY_LIMIT)?);
                let key = word(input, &k)?;
                table.insert(key, v.as_slice()).map_err(db("insert"))?;
            }
        }
        (Shape::Bytes, Shape::U64) => {
            let mut table = txn.open_table(BLOCK_NUMBERS).map_err(db("open table"))?;
            for _ in 0..count {
                let (k, v) = (input.bytes(ENTRY_LIMIT)?, input.bytes(ENTRY_LIMIT)?);
                let value = word(input, &v)?;
                table.insert(k.as_slice(), value).map_err(db("insert"))?;
            }
        }
        (Shape::Bytes, _) => {
            let def = if section.tag == 3 {
                CODE_BY_HASH
            } else {
                domain_table(Domain::ALL[usize::from(section.tag - 7)])
            };
            let mut table = txn.open_table(def).map_err(db("open table"))?;
            for _ in 0..count {
                let (k, v) = (input.bytes(ENTRY_LIMIT)?, input.bytes(ENTRY_LIMIT)?);
                table
                    .insert(k.as_slice(), v.as_slice())
                    .map_err(db("insert"))?;
            }
        }
    }
    Ok(())
}

/// Opens `path` and writes its base to `out` (a convenience for tests and
/// tools: the engine writes from the transaction of a published snapshot).
pub fn write_base_of(path: &Path, out: &mut dyn Write) -> Result<BaseSummary, BaseError> {
    let database = redb::ReadOnlyDatabase::open(path).map_err(db("open database"))?;
    let txn = database.begin_read().map_err(db("begin read"))?;
    write_base(&txn, &Default::default(), out)
}
