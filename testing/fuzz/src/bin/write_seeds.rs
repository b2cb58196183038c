//! Writes the seed corpora of the fuzz targets with strata's own writers:
//!
//! ```text
//! cargo run --manifest-path testing/fuzz/Cargo.toml --bin write_seeds [OUT_DIR]
//! ```
//!
//! `OUT_DIR` defaults to `testing/fuzz/seeds`; one sub-directory per target. The
//! output is deterministic, so re-running it reproduces the committed seeds.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use alloy_primitives::{Address, B256, KECCAK256_EMPTY, U256};
use strata_commitment::{
    AccountLeaf, ComputeOptions, MemoryBranchStore, MemoryState, TrieUpdate, compute_root,
    record_key,
};
use strata_fuzz::entries_to_bytes;
use strata_storage::Domain;
use strata_storage::files::{FileMeta, FileSystem, MemFileSystem, SortedFileWriter};
use strata_trace::TraceWriter;
use strata_trace::generator::{GenConfig, generate};

type Entries = Vec<(Vec<u8>, Option<Vec<u8>>)>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds"));
    let n = sorted_file_seeds(&out.join("sorted_file"))?
        + branch_record_seeds(&out.join("branch_record"))?
        + trace_parser_seeds(&out.join("trace_parser"))?
        + state_ops_seeds(&out.join("state_ops"))?;
    println!("wrote {n} seeds under {}", out.display());
    Ok(())
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<usize> {
    fs::create_dir_all(dir)?;
    fs::write(dir.join(name), bytes)?;
    Ok(1)
}

/// A sorted file of `entries` (sorted, unique keys) as written by strata.
fn sorted_file(domain: Domain, entries: &Entries) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFileSystem::new());
    let meta = FileMeta {
        domain,
        from_step: 0,
        to_step: 16,
    };
    let mut w = SortedFileWriter::new(Arc::clone(&fs), Path::new("/seeds"), meta)?;
    for (k, v) in entries {
        w.push(k, v.as_deref())?;
    }
    let info = w.finish()?;
    Ok(fs.read(&info.path)?)
}

fn sorted_file_seeds(dir: &Path) -> Result<usize, Box<dyn std::error::Error>> {
    let small: Entries = vec![
        (b"".to_vec(), Some(b"empty key".to_vec())),
        (b"alice".to_vec(), Some(b"balance 10".to_vec())),
        (b"bob".to_vec(), None),
        (b"carol".to_vec(), Some(Vec::new())),
    ];
    // Three blocks of storage-shaped keys (address ‖ slot) sharing prefixes.
    let many: Entries = (0u16..180)
        .map(|i| {
            let mut key = vec![0xaa; 20];
            key.extend_from_slice(&[0; 30]);
            key.extend_from_slice(&i.to_be_bytes());
            let value = (i % 7 != 3).then(|| i.to_le_bytes().repeat(1 + usize::from(i % 5)));
            (key, value)
        })
        .collect();
    let mut n = 0;
    // The reader target: flags 0x02 (name from the footer), 0x03 (also repair).
    let empty = sorted_file(Domain::Account, &Vec::new())?;
    n += write(dir, "empty", &[&[0x02][..], &empty].concat())?;
    let small_file = sorted_file(Domain::Code, &small)?;
    n += write(dir, "small", &[&[0x02][..], &small_file].concat())?;
    n += write(dir, "small-repair", &[&[0x03][..], &small_file].concat())?;
    let many_file = sorted_file(Domain::Storage, &many)?;
    n += write(dir, "three-blocks", &[&[0x03][..], &many_file].concat())?;
    // The round-trip target: flags = domain | first step << 2, then entries.
    let dir = dir.with_file_name("sorted_file_roundtrip");
    n += write(
        &dir,
        "small",
        &[&[0x01][..], &entries_to_bytes(&small)].concat(),
    )?;
    let few: Entries = many.iter().step_by(9).cloned().collect();
    n += write(
        &dir,
        "few",
        &[&[0x06][..], &entries_to_bytes(&few)].concat(),
    )?;
    Ok(n)
}

fn account(i: u64) -> Address {
    let mut a = [0u8; 20];
    a[12..].copy_from_slice(&i.to_be_bytes());
    Address::from(a)
}

fn branch_record_seeds(dir: &Path) -> Result<usize, Box<dyn std::error::Error>> {
    let mut state = MemoryState::new();
    let mut store = MemoryBranchStore::new();
    let leaf = |i: u64| AccountLeaf {
        nonce: i,
        balance: U256::from(i * 1000),
        code_hash: KECCAK256_EMPTY,
    };
    let mut n = 0;
    let save = |store: &MemoryBranchStore, tag: &str| -> io::Result<usize> {
        let mut saved = 0;
        let mut records: Vec<_> = store.iter().collect();
        records.sort();
        // A few records per shape: the root, a deeper branch, a storage root.
        for (i, (path, rec)) in records.iter().enumerate().take(4) {
            let key = record_key(path);
            let seed = [&[key.len() as u8][..], &key, rec].concat();
            saved += write(dir, &format!("{tag}-{i}"), &seed)?;
        }
        Ok(saved)
    };
    // One account: the root is a root cell holding a leaf.
    state.set_account(account(1), leaf(1));
    let update = TrieUpdate {
        accounts: vec![account(1)],
        storage: vec![],
        wiped: vec![],
    };
    store.apply(&compute_root(&update, &store, &state, &ComputeOptions::default())?.writes);
    n += save(&store, "one-account")?;
    // Forty accounts, one with three slots: branch records and a storage root.
    let mut accounts = Vec::new();
    for i in 1..=40 {
        state.set_account(account(i), leaf(i));
        accounts.push(account(i));
    }
    let slots: Vec<(Address, B256)> = (1u8..=3)
        .map(|s| (account(7), B256::repeat_byte(s)))
        .collect();
    for (a, s) in &slots {
        state.set_storage(*a, *s, U256::from(s[0]));
    }
    let update = TrieUpdate {
        accounts,
        storage: slots,
        wiped: vec![],
    };
    store.apply(&compute_root(&update, &store, &state, &ComputeOptions::default())?.writes);
    n += save(&store, "forty-accounts")?;
    let storage_roots: Vec<_> = store.iter().filter(|(p, _)| p.len() >= 64).collect();
    for (i, (path, rec)) in storage_roots.iter().enumerate().take(2) {
        let key = record_key(path);
        n += write(
            dir,
            &format!("storage-{i}"),
            &[&[key.len() as u8][..], &key, rec].concat(),
        )?;
    }
    Ok(n)
}

fn trace_parser_seeds(dir: &Path) -> Result<usize, Box<dyn std::error::Error>> {
    let config = GenConfig {
        accounts: 6,
        contracts: 2,
        blocks: 3,
        seed: 7,
        account_reads: Some(3),
        account_writes: Some(2),
        slot_reads: Some(3),
        slot_writes: Some(2),
    };
    let mut writer = TraceWriter::new(Vec::new());
    generate(&config, &mut writer, None)?;
    let trace = writer.finish()?;
    let mut n = write(dir, "generated", &trace)?;
    // Each line on its own too (a block line without its genesis).
    for (i, line) in trace
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        n += write(dir, &format!("line-{i}"), line)?;
    }
    Ok(n)
}

fn state_ops_seeds(dir: &Path) -> Result<usize, Box<dyn std::error::Error>> {
    let mut n = 0;
    for (name, bytes) in strata_fuzz::state_ops::seeds::seeds() {
        n += write(dir, &name, &bytes)?;
    }
    Ok(n)
}
