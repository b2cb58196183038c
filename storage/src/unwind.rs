//! Unwind: restore the exact state of a recent block from its unwind data.

use std::sync::Arc;

use alloy_primitives::B256;
use redb::{ReadableDatabase, ReadableTable};

use crate::commit::publish;
use crate::db::meta::{self, Head};
use crate::db::tables::{CHANGES, META, ROOTS, domain_table};
use crate::db::{changes, value};
use crate::domain::Domain;
use crate::error::{Error, Result, db_err};
use crate::inner::Inner;
use crate::sources::ROOT_RECORD_KEY;

/// Rolls the store back to `target`. The caller holds the writer lock.
pub(crate) fn unwind_to(inner: &Arc<Inner>, target: u64) -> Result<B256> {
    let current = inner.current.load_full();
    let Some(last) = current.block() else {
        return Err(Error::UnwindOutOfRange {
            target,
            oldest: 0,
            last: 0,
        });
    };
    let oldest = oldest_retained(inner)?.unwrap_or(last);
    if target > last || target < oldest {
        return Err(Error::UnwindOutOfRange {
            target,
            oldest,
            last,
        });
    }
    if target == last {
        return Ok(current.root());
    }
    let commit = inner.lock_commit();
    // Restored values are tagged with the step of the block being undone
    // (at least the first uncollated step: an earlier unwind may have left
    // the head inside collated steps), so they stay newer than every file
    // and a collation built before the unwind never prunes them.
    let manifest = &inner.current.load().files.manifest;
    let step_in = |domain: Domain| manifest.db_step(domain, inner.step_of(last));
    let txn = inner.db.begin_write().map_err(db_err("begin write"))?;
    let mut restored_records = Vec::new();
    let root = {
        let mut changes_table = txn.open_table(CHANGES).map_err(db_err("open changes"))?;
        let mut roots = txn.open_table(ROOTS).map_err(db_err("open roots"))?;
        let root = match roots.get(target).map_err(db_err("read root"))? {
            Some(guard) => B256::from_slice(guard.value()),
            None => return Err(Error::MissingUnwindData { block: target }),
        };
        for block in (target + 1..=last).rev() {
            let start = changes::block_start(block);
            let end = changes::block_start(block + 1);
            let mut count = 0usize;
            let mut restores = Vec::new();
            for entry in changes_table
                .range(start.as_slice()..end.as_slice())
                .map_err(db_err("read unwind data"))?
            {
                let (k, v) = entry.map_err(db_err("read unwind data"))?;
                let change = changes::decode(k.value(), v.value())?;
                restores.push((
                    change.domain,
                    change.key.to_vec(),
                    change.prev.map(<[u8]>::to_vec),
                ));
                count += 1;
            }
            if count == 0 {
                return Err(Error::MissingUnwindData { block });
            }
            for (domain, key, prev) in restores {
                let mut table = txn
                    .open_table(domain_table(domain))
                    .map_err(db_err("open table"))?;
                table
                    .insert(
                        key.as_slice(),
                        value::encode(step_in(domain), prev.as_deref()).as_slice(),
                    )
                    .map_err(db_err("restore value"))?;
                if domain == Domain::Commitment && key.as_slice() != ROOT_RECORD_KEY {
                    restored_records.push(key);
                }
            }
            changes_table
                .retain_in(start.as_slice()..end.as_slice(), |_, _| false)
                .map_err(db_err("drop unwind data"))?;
            roots.remove(block).map_err(db_err("drop root"))?;
        }
        let mut meta_table = txn.open_table(META).map_err(db_err("open meta"))?;
        meta::write_head(
            &mut meta_table,
            Head {
                block: target,
                root,
            },
        )?;
        root
    };
    txn.commit().map_err(db_err("commit unwind"))?;
    for key in &restored_records {
        if let Ok(path) = strata_commitment::record_path(key) {
            inner.cache.remove(&path);
        }
    }
    publish(
        inner,
        &commit,
        Some(Head {
            block: target,
            root,
        }),
    )?;
    Ok(root)
}

/// The oldest block whose root (and so whose state) can still be restored.
/// Unwind data is kept for the last `unwind_depth` blocks ever committed, so
/// after an unwind the window does not grow back until new blocks land.
pub(crate) fn oldest_retained(inner: &Inner) -> Result<Option<u64>> {
    let txn = inner.db.begin_read().map_err(db_err("begin read"))?;
    let roots = txn.open_table(ROOTS).map_err(db_err("open roots"))?;
    let first = roots.first().map_err(db_err("read roots"))?;
    Ok(first.map(|(block, _)| block.value()))
}
