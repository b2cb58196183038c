//! Genesis: the whole initial state written as block 0, its root computed by
//! the commitment's streaming bulk builder (not one insert per key).

use std::sync::Arc;

use alloy_primitives::{B256, KECCAK256_EMPTY, keccak256};
use bytes::Bytes;
use strata_commitment::{AccountLeaf, BulkBuilder};

use crate::account::{Account, encode_slot_value};
use crate::commit::publish;
use crate::db::meta::{self, Head};
use crate::db::tables::{CODE_BY_HASH, META, ROOTS, domain_table};
use crate::db::value;
use crate::domain::Domain;
use crate::error::{Error, Result, db_err};
use crate::genesis::GenesisAlloc;
use crate::inner::Inner;
use crate::keys::storage_key;
use crate::sources::ROOT_RECORD_KEY;

/// Writes `alloc` as block 0 of an empty store and returns its root.
pub(crate) fn init_genesis(inner: &Arc<Inner>, alloc: &GenesisAlloc) -> Result<B256> {
    if let Some(last) = inner.current.load().block() {
        return Err(Error::GenesisExists { last });
    }
    // The trie wants accounts in hashed order, and each account's slots too.
    let mut accounts: Vec<_> = alloc.iter().map(|(a, g)| (keccak256(a), a, g)).collect();
    accounts.sort_unstable_by_key(|(hashed, _, _)| *hashed);

    let mut records: Vec<(Vec<u8>, Bytes)> = Vec::new();
    let mut builder = BulkBuilder::new(|path: Vec<u8>, record: Bytes| records.push((path, record)));
    for (hashed, address, genesis) in &accounts {
        let code_hash = if genesis.code.is_empty() {
            KECCAK256_EMPTY
        } else {
            keccak256(&genesis.code)
        };
        let leaf = AccountLeaf {
            nonce: genesis.nonce,
            balance: genesis.balance,
            code_hash,
        };
        let mut slots: Vec<_> = genesis
            .storage
            .iter()
            .filter(|(_, v)| !v.is_zero())
            .map(|(slot, value)| (keccak256(slot), *slot, *value))
            .collect();
        slots.sort_unstable_by_key(|(hashed, _, _)| *hashed);
        builder
            .add_account(*hashed, **address, &leaf, slots)
            .map_err(|source| Error::Commitment { block: 0, source })?;
    }
    let root = builder
        .finish()
        .map_err(|source| Error::Commitment { block: 0, source })?;

    let head = Head { block: 0, root };
    let _commit = inner.commit_lock.lock();
    let txn = inner.db.begin_write().map_err(db_err("begin write"))?;
    {
        let mut tables = Vec::with_capacity(Domain::ALL.len());
        for domain in Domain::ALL {
            tables.push(
                txn.open_table(domain_table(domain))
                    .map_err(db_err("open table"))?,
            );
        }
        let mut by_hash = txn
            .open_table(CODE_BY_HASH)
            .map_err(db_err("open code by hash"))?;
        let mut put = |domain: Domain, key: &[u8], value: &[u8]| -> Result<()> {
            tables[domain.index()]
                .insert(key, value::encode(0, Some(value)).as_slice())
                .map_err(db_err("write genesis"))?;
            Ok(())
        };
        for (_, address, genesis) in &accounts {
            let code_hash = if genesis.code.is_empty() {
                KECCAK256_EMPTY
            } else {
                keccak256(&genesis.code)
            };
            let account = Account {
                nonce: genesis.nonce,
                balance: genesis.balance,
                code_hash,
            };
            put(Domain::Account, address.as_slice(), &account.encode())?;
            if !genesis.code.is_empty() {
                put(Domain::Code, address.as_slice(), &genesis.code)?;
                by_hash
                    .insert(code_hash.as_slice(), genesis.code.as_ref())
                    .map_err(db_err("write code by hash"))?;
            }
            for (slot, value) in genesis.storage.iter().filter(|(_, v)| !v.is_zero()) {
                put(
                    Domain::Storage,
                    &storage_key(address, slot),
                    &encode_slot_value(*value),
                )?;
            }
        }
        for (path, record) in &records {
            put(
                Domain::Commitment,
                &strata_commitment::record_key(path),
                record,
            )?;
        }
        let mut root_record = 0u64.to_be_bytes().to_vec();
        root_record.extend_from_slice(root.as_slice());
        put(Domain::Commitment, ROOT_RECORD_KEY, &root_record)?;
        let mut roots = txn.open_table(ROOTS).map_err(db_err("open roots"))?;
        roots
            .insert(0, root.as_slice())
            .map_err(db_err("write root"))?;
        let mut meta_table = txn.open_table(META).map_err(db_err("open meta"))?;
        meta::write_head(&mut meta_table, head)?;
    }
    txn.commit().map_err(db_err("commit genesis"))?;
    for (path, record) in records {
        inner.cache.insert(&path, record);
    }
    publish(inner, Some(head))?;
    inner.maintenance.wake();
    Ok(root)
}
