//! An imported state installed in the store: [`strata_bulk::import::build`]
//! writes the files (module docs there: steps 1 to 3), and this lists them
//! in one redb transaction with the head, the root, the block hash, the
//! root record and the codes by hash, then publishes the state (step 4).
//! Nothing is visible before that transaction; a failure in it poisons the
//! store.

use std::sync::Arc;
use std::time::Instant;

use alloy_primitives::B256;
use strata_bulk::import::{
    AccountSource, BuiltFile, BuiltState, FileTarget, ImportOptions, ImportReport,
};
use strata_bulk::sort::{ScratchDir, SortedPairs};
use strata_db::meta;
use strata_db::value;
use strata_db::{DomainTables, HeadTables};
use strata_files::SortedFile;
use strata_types::datadir::IMPORT_DIR;
use strata_types::keys::ROOT_RECORD_KEY;
use strata_types::{Domain, Head};

use crate::error::{Error, Result, db_err};
use crate::inner::Inner;
use crate::ledger::Change;
use strata_view::fileset::FileSet;

/// Imports `accounts` into the empty store of `inner`, as the block
/// `options` names.
pub(crate) fn import(
    inner: &Arc<Inner>,
    accounts: impl AccountSource,
    options: &ImportOptions,
) -> Result<ImportReport> {
    let block = OwnedBlockId {
        hash: options.block_hash,
        header: options.block_header.clone(),
    };
    import_as(inner, accounts, options, |_| Ok(block))
}

/// [`import`], the block's hash and header given by `block_of` from the
/// state root once the files are built (a genesis's header holds its root),
/// before anything is listed.
pub(crate) fn import_as(
    inner: &Arc<Inner>,
    accounts: impl AccountSource,
    options: &ImportOptions,
    block_of: impl FnOnce(B256) -> Result<OwnedBlockId>,
) -> Result<ImportReport> {
    if let Some(last) = inner.current.load().block() {
        return Err(Error::ImportIntoNonEmpty { last });
    }
    let scratch = match &options.temp_dir {
        Some(dir) => ScratchDir::unique_in(dir, "strata-import-")?,
        None => ScratchDir::create(inner.files_dir.with_file_name(IMPORT_DIR))?,
    };
    let target = FileTarget {
        fs: inner.fs.clone(),
        files_dir: inner.files_dir.clone(),
        to_step: inner.step_of(options.block) + 1,
    };
    let BuiltState {
        head,
        files,
        codes,
        mut report,
    } = strata_bulk::import::build(accounts, options, scratch.path(), &target)?;
    let block = block_of(head.root)?;
    let started = Instant::now();
    // Only a failure from here on can leave the store between two states.
    let committed = commit(
        inner,
        head,
        BlockId {
            hash: block.hash,
            header: block.header.as_deref(),
        },
        &files,
        target.to_step,
        codes,
    );
    inner.poison_on_error(committed)?;
    report.write += started.elapsed();
    drop(scratch);
    Ok(report)
}

/// The imported block's hash and header, where the caller has them.
pub(crate) struct OwnedBlockId {
    pub(crate) hash: Option<B256>,
    pub(crate) header: Option<bytes::Bytes>,
}

/// What identifies the imported block, where the caller gave it.
struct BlockId<'a> {
    hash: Option<B256>,
    header: Option<&'a [u8]>,
}

/// Lists the files, records the head and publishes the imported state.
fn commit(
    inner: &Arc<Inner>,
    head: Head,
    block: BlockId<'_>,
    written: &[BuiltFile],
    to_step: u64,
    codes: SortedPairs,
) -> Result<()> {
    let commit = inner.lock_commit();
    let current = inner.current.load_full();
    let mut manifest = current.files.manifest.clone();
    let mut domains: [Vec<Arc<SortedFile>>; 4] = Default::default();
    for domain in Domain::ALL {
        let listed = manifest.domain_mut(domain);
        listed.collated_to = to_step;
        for written in written.iter().filter(|w| w.file.meta().domain == domain) {
            listed
                .files
                .push(strata_view::fileset::manifest_entry(&written.file));
            domains[domain.index()].push(Arc::clone(&written.file));
        }
    }
    let txn = inner.db.begin_write().map_err(db_err("begin write"))?;
    {
        let mut heads = HeadTables::open(&txn)?;
        let mut previous: Option<Vec<u8>> = None;
        for pair in codes {
            let (hash, code) = pair?;
            if previous.as_ref() != Some(&hash) {
                heads.put_code(&hash, &code)?;
            }
            previous = Some(hash);
        }
        let step = manifest.db_step(Domain::Commitment, to_step);
        DomainTables::open(&txn)?
            .of(Domain::Commitment)
            .insert(
                ROOT_RECORD_KEY,
                value::encode(step, Some(&head.encode())).as_slice(),
            )
            .map_err(db_err("write root record"))?;
        heads.put_block(head.block, head.root, block.hash)?;
        if let Some(header) = block.header {
            heads.put_header(head.block, header)?;
        }
        meta::write_manifest(heads.meta(), &manifest)?;
        heads.set_head(head)?;
    }
    txn.commit().map_err(db_err("commit import"))?;
    inner.values.reset(Some(head));
    inner.ledger.publish(
        inner,
        &commit,
        Change::Imported(head, FileSet::new(domains, manifest)),
    )?;
    inner.maintenance.request();
    Ok(())
}
