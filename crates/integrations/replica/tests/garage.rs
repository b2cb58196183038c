//! Publisher and replicas against a real distributed object store: a
//! three-node Garage cluster on loopback with replication factor 3
//! (`testing/garage/cluster.sh`; without `garage` on PATH each test says
//! so and skips, except under `CI=true`).
//!
//! Every test holds the replica to the writer: its answers (accounts,
//! storage, code, block hashes, proofs) at its head and at older kept
//! blocks equal the writer's own at the same block, and no fault makes it
//! claim a block it does not hold.

mod cluster;

use std::path::Path;
use std::sync::Arc;

use alloy_primitives::{Address, B256, U256};
use bytes::Bytes;
use strata_engine::{
    Account, HistoryRetention, Options, ReadOnlyStateDb, Regime, StateDb, StateRead,
};
use strata_replica::{
    Bucket, BucketManifest, PublishOptions, Publisher, Replica, ReplicaError, ReplicaOptions,
};

use cluster::{Cluster, Rng};

const ACCOUNTS: u64 = 400;
const CONTRACTS: u64 = 40;
const SLOTS: u64 = 30;

fn address(i: u64) -> Address {
    let mut a = [0u8; 20];
    a[..8].copy_from_slice(&i.to_be_bytes());
    a[19] = 0x5a;
    Address::from(a)
}

fn slot(i: u64) -> B256 {
    B256::from(U256::from(i * 7919 + 1))
}

/// The writer's options: small steps and memory so that blocks flush,
/// collate into files and merge within a test; every block's history kept.
fn writer_options() -> Options {
    Options::default()
        .with_share_with_readers(true)
        .with_step_size(4)
        .with_keep_steps_in_db(1)
        .with_unwind_depth(16)
        .with_flush_batch_bytes(32 << 10)
        .with_memory_budget_bytes(96 << 10)
        .with_history(Some(HistoryRetention::Full))
}

/// Writes blocks `from..to`: accounts, slots (some zeroed), code, and now
/// and then an account deleted with its storage.
fn write_blocks(db: &StateDb, from: u64, to: u64, rng: &mut Rng) {
    for number in from..to {
        let mut block = db.begin_block(number).unwrap();
        for _ in 0..12 {
            let i = rng.below(ACCOUNTS);
            block.put_account(
                address(i),
                &Account {
                    nonce: rng.below(100),
                    balance: U256::from(rng.next()),
                    code_hash: alloy_primitives::KECCAK256_EMPTY,
                },
            );
        }
        for _ in 0..20 {
            let contract = ACCOUNTS + rng.below(CONTRACTS);
            let value = if rng.below(5) == 0 { 0 } else { rng.next() };
            // Storage lives under an account, as on chain.
            if block.account(&address(contract)).unwrap().is_none() {
                block.put_account(
                    address(contract),
                    &Account {
                        nonce: 1,
                        balance: U256::ZERO,
                        code_hash: alloy_primitives::KECCAK256_EMPTY,
                    },
                );
            }
            block.put_storage(address(contract), slot(rng.below(SLOTS)), U256::from(value));
        }
        if rng.below(4) == 0 {
            let contract = ACCOUNTS + rng.below(CONTRACTS);
            let code = Bytes::from(vec![0x60, rng.below(256) as u8, 0x00]);
            let hash = alloy_primitives::keccak256(&code);
            block.put_code(address(contract), code);
            block.put_account(
                address(contract),
                &Account {
                    nonce: 1,
                    balance: U256::ZERO,
                    code_hash: hash,
                },
            );
        }
        if number > 0 && rng.below(10) == 0 {
            block.delete_account(address(ACCOUNTS + rng.below(CONTRACTS)));
        }
        block.set_block_hash(B256::from(U256::from(number + 1_000_000)));
        block.set_block_header(Bytes::from(format!("header {number}").into_bytes()));
        block.commit().unwrap();
    }
}

/// A reader's options: the writer's unwind window (a reader with a wider
/// one rebuilds blocks whose undo data the writer no longer keeps, and
/// refuses them when their root does not hold).
fn reader_options() -> Options {
    Options::default().with_unwind_depth(16)
}

fn publish_options(scratch: &Path) -> PublishOptions {
    PublishOptions {
        base_every: 30,
        grace: std::time::Duration::from_secs(3600),
        batch_blocks: 8,
        scratch: scratch.to_path_buf(),
    }
}

/// A replica that reads the base's files in ranges only (no download in
/// the background, so that what it reads from the bucket is what its
/// reads need).
fn replica_options(cache: &Path) -> ReplicaOptions {
    ReplicaOptions {
        poll: std::time::Duration::from_secs(3600),
        store: Options::default().with_unwind_depth(16),
        fill_streams: 0,
        ..ReplicaOptions::new(cache)
    }
}

/// Bytes of the files under the datadir's `files` and `history`.
fn held(dir: &Path) -> u64 {
    ["files", "history"]
        .iter()
        .filter_map(|folder| std::fs::read_dir(dir.join(folder)).ok())
        .flatten()
        // A file merged away between the listing and its metadata counts
        // nothing: the files that replace it are counted instead.
        .filter_map(|entry| entry.ok()?.metadata().ok())
        .map(|metadata| metadata.len())
        .sum()
}

/// Files being written (named with the writers' temporary suffix) under
/// the datadir's `files` and `history`.
fn partial_files(dir: &Path) -> usize {
    ["files", "history"]
        .iter()
        .filter_map(|folder| std::fs::read_dir(dir.join(folder)).ok())
        .flatten()
        .filter(|entry| {
            let name = entry.as_ref().unwrap().file_name();
            name.to_string_lossy().ends_with(strata_files::TEMP_SUFFIX)
        })
        .count()
}

/// Waits up to a minute for `done`.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !done() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "still waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A writer of `blocks` blocks (from seed `seed`) published as a base to
/// the bucket's prefix `name`, and a reader of its datadir.
struct Published {
    work: tempfile::TempDir,
    writer: StateDb,
    rng: Rng,
    bucket: Arc<Bucket>,
    publisher: Publisher,
    manifest: BucketManifest,
    source: ReadOnlyStateDb,
}

fn published(cluster: &Cluster, name: &str, blocks: u64, seed: u64) -> Published {
    let work = tempfile::tempdir().unwrap();
    let datadir = work.path().join("writer");
    let writer = StateDb::open(&datadir, writer_options()).unwrap();
    let mut rng = Rng(seed);
    write_blocks(&writer, 0, blocks, &mut rng);
    let bucket = cluster.bucket(name);
    let mut publisher =
        Publisher::open(&datadir, bucket.clone(), publish_options(work.path())).unwrap();
    assert!(publisher.publish_once().unwrap().base);
    let manifest = publisher.manifest().unwrap().clone();
    let source = ReadOnlyStateDb::open(&datadir, reader_options()).unwrap();
    Published {
        work,
        writer,
        rng,
        bucket,
        publisher,
        manifest,
        source,
    }
}

/// Compares `reads` random reads and some proofs of `replica` with
/// `source` at `block`.
fn same_answers(
    source: &impl StateRead,
    replica: &impl StateRead,
    block: u64,
    reads: usize,
    seed: u64,
) {
    let mut rng = Rng(seed | 1);
    let (a, b) = (
        source.reader_at(block, Regime::Exec).unwrap(),
        replica.reader_at(block, Regime::Exec).unwrap(),
    );
    assert_eq!(a.root(), b.root(), "root at block {block}");
    for _ in 0..reads {
        let i = rng.below(ACCOUNTS + CONTRACTS + 10);
        let who = address(i);
        assert_eq!(
            a.account(&who).unwrap(),
            b.account(&who).unwrap(),
            "account {who} at {block}"
        );
        if i >= ACCOUNTS {
            let s = slot(rng.below(SLOTS));
            assert_eq!(
                a.storage(&who, &s).unwrap(),
                b.storage(&who, &s).unwrap(),
                "slot at {block}"
            );
            assert_eq!(
                a.code(&who).unwrap(),
                b.code(&who).unwrap(),
                "code at {block}"
            );
        }
    }
    assert_eq!(a.block_hash(block).unwrap(), b.block_hash(block).unwrap());
    for _ in 0..5 {
        let who = address(ACCOUNTS + rng.below(CONTRACTS));
        let slots = [slot(rng.below(SLOTS)), slot(rng.below(SLOTS))];
        assert_eq!(
            source.proof_at(block, &who, &slots).unwrap(),
            replica.proof_at(block, &who, &slots).unwrap(),
            "proof of {who} at {block}"
        );
    }
}

/// A replica built from the bucket answers as the writer does — at its
/// head and at older blocks, read through the history files of the base —
/// and follows the writer through new bases and batches.
#[test]
fn a_replica_answers_as_the_writer_does_and_follows_it() {
    let Some(cluster) = Cluster::start("a_replica_answers_as_the_writer_does_and_follows_it")
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let datadir = work.path().join("writer");
    let writer = StateDb::open(&datadir, writer_options()).unwrap();
    let mut rng = Rng(0x9e3779b97f4a7c15);
    write_blocks(&writer, 0, 40, &mut rng);
    let bucket = cluster.bucket("follow");
    let mut publisher =
        Publisher::open(&datadir, bucket.clone(), publish_options(work.path())).unwrap();
    let first = publisher.publish_once().unwrap();
    assert!(first.base, "{first:?}");
    assert_eq!(first.head, Some(39));

    let replica = Replica::open(
        cluster.bucket("follow"),
        replica_options(&work.path().join("cache")),
    )
    .unwrap();
    assert_eq!(replica.status().head, 39);
    let served = replica.read_only(reader_options()).unwrap();
    let source = ReadOnlyStateDb::open(&datadir, reader_options()).unwrap();
    for block in [39, 38, 30, 17, 3, 0] {
        same_answers(&source, &served, block, 300, block + 11);
    }
    // The base's files were read in ranges, not downloaded.
    let ranges = replica
        .range_cache_stats()
        .expect("files read from the bucket");
    assert!(ranges.misses > 0, "{ranges:?}");
    let files = replica.base_files().unwrap();
    assert!(files.listed > 0 && files.whole == 0, "{files:?}");

    // The writer goes on; the publisher makes batches and, past 30 blocks,
    // a new base; the replica follows each round.
    let mut bases = 0;
    for round in 0..8 {
        write_blocks(&writer, 40 + round * 5, 45 + round * 5, &mut rng);
        let report = publisher.publish_once().unwrap();
        bases += u32::from(report.base);
        let status = replica.sync().unwrap();
        assert_eq!(status.head, 44 + round * 5, "{status:?}");
        served.catch_up().unwrap();
        source.catch_up().unwrap();
        same_answers(&source, &served, status.head, 200, round);
    }
    assert!(bases >= 1, "no new base in 40 blocks with base_every 30");
    for block in [70, 41, 39, 12] {
        same_answers(&source, &served, block, 200, block);
    }
    // A second replica starts from the newest base, downloading its files
    // whole, and holds the same.
    let late = Replica::open(
        cluster.bucket("follow"),
        ReplicaOptions {
            range_cache_bytes: None,
            ..replica_options(&work.path().join("late"))
        },
    )
    .unwrap();
    assert_eq!(late.status().head, 79);
    assert!(late.range_cache_stats().is_none());
    assert!(held(late.datadir()) > 0, "the base's files held whole");
    same_answers(&source, late.store(), 79, 300, 5);
    // A third within a range cache smaller than a file: the same answers,
    // the cache within its budget.
    let small = Replica::open(
        cluster.bucket("follow"),
        ReplicaOptions {
            range_cache_bytes: Some(256 << 10),
            ..replica_options(&work.path().join("small"))
        },
    )
    .unwrap();
    same_answers(&source, small.store(), 79, 300, 7);
    let ranges = small.range_cache_stats().unwrap();
    assert!(
        ranges.bytes <= (256 << 10) + (64 << 10) + 4096,
        "{ranges:?}"
    );
    // Reopened on its cache, the first replica resumes where it stood.
    drop(served);
    replica.close().unwrap();
    let reopened = Replica::open(
        cluster.bucket("follow"),
        replica_options(&work.path().join("cache")),
    )
    .unwrap();
    assert_eq!(reopened.status().head, 79);
    assert_eq!(reopened.status().applied, 0, "nothing replayed again");
    same_answers(&source, reopened.store(), 60, 200, 6);
    let counters = bucket.counters();
    assert!(counters.puts > 0 && counters.gets > 0, "{counters:?}");
}

/// One node of three killed: the publisher and the replica go on through
/// the others; the node restarted, the cluster serves again.
#[test]
fn one_node_killed_replicas_keep_serving() {
    let Some(cluster) = Cluster::start("one_node_killed_replicas_keep_serving") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let datadir = work.path().join("writer");
    let writer = StateDb::open(&datadir, writer_options()).unwrap();
    let mut rng = Rng(77);
    write_blocks(&writer, 0, 20, &mut rng);
    let mut publisher = Publisher::open(
        &datadir,
        cluster.bucket("node"),
        publish_options(work.path()),
    )
    .unwrap();
    publisher.publish_once().unwrap();
    let replica = Replica::open(
        cluster.bucket("node"),
        replica_options(&work.path().join("cache")),
    )
    .unwrap();
    let source = ReadOnlyStateDb::open(&datadir, reader_options()).unwrap();
    for node in [1, 2] {
        cluster.kill(node);
        let from = writer.last_block().unwrap() + 1;
        write_blocks(&writer, from, from + 6, &mut rng);
        publisher.publish_once().unwrap();
        let status = replica.sync().unwrap();
        assert_eq!(status.head, from + 5, "node {node} down: {status:?}");
        source.catch_up().unwrap();
        same_answers(&source, replica.store(), status.head, 200, node.into());
        cluster.restart(node);
    }
    assert!(
        publisher.bucket().counters().failovers + replica.bucket().counters().failovers > 0,
        "no call went to another node"
    );
}

/// The whole store unreachable: the replica answers what it holds at the
/// block it claims, and its error names the bucket; back, it catches up.
#[test]
fn store_unreachable_the_replica_serves_its_head_and_names_the_bucket() {
    let Some(cluster) = Cluster::start("store_unreachable") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let datadir = work.path().join("writer");
    let writer = StateDb::open(&datadir, writer_options()).unwrap();
    let mut rng = Rng(5);
    write_blocks(&writer, 0, 25, &mut rng);
    let mut publisher = Publisher::open(
        &datadir,
        cluster.bucket("down"),
        publish_options(work.path()),
    )
    .unwrap();
    publisher.publish_once().unwrap();
    let replica = Replica::open(
        cluster.bucket("down"),
        replica_options(&work.path().join("cache")),
    )
    .unwrap();
    // What the replica has read, its cache holds: the same reads, once the
    // store is gone, are answered from it.
    let source = ReadOnlyStateDb::open(&datadir, reader_options()).unwrap();
    same_answers(&source, replica.store(), 24, 300, 9);
    cluster.stop();
    write_blocks(&writer, 25, 30, &mut rng);
    let error = replica.sync().unwrap_err().to_string();
    assert!(error.contains("s3://strata-test/down"), "{error}");
    let status = replica.status();
    assert_eq!(status.head, 24, "claims only what it holds");
    assert!(status.last_error.unwrap().contains("strata-test"));
    same_answers(&source, replica.store(), 24, 300, 9);
    // What it has not read is answered if its cache holds it, else refused
    // naming the bucket; never a value other than the writer's at the block.
    let (a, b) = (
        source.reader_at(24, Regime::Exec).unwrap(),
        replica.store().reader_at(24, Regime::Exec).unwrap(),
    );
    let (mut answered, mut refused) = (0, 0);
    for i in 0..ACCOUNTS + CONTRACTS {
        let who = address(i);
        match b.account(&who) {
            Ok(account) => {
                assert_eq!(a.account(&who).unwrap(), account, "account {who}");
                answered += 1;
            }
            Err(error) => {
                assert!(error.to_string().contains("strata-test/down"), "{error}");
                refused += 1;
            }
        }
    }
    assert_eq!(answered + refused, ACCOUNTS + CONTRACTS);
    // A datadir given as the cache is refused, untouched.
    let refused = Replica::open(cluster.bucket("down"), replica_options(&datadir));
    let error = refused
        .err()
        .expect("a datadir taken as a cache")
        .to_string();
    assert!(error.contains("is a datadir"), "{error}");
    assert!(!datadir.join("datadir").exists() && !datadir.join("replica.json").exists());
    // A replica cannot start without its bucket: the error says which.
    let cold = Replica::open(
        cluster.bucket("down"),
        replica_options(&work.path().join("cold")),
    );
    let error = cold.err().expect("no bucket, no replica").to_string();
    assert!(error.contains("s3://strata-test/down"), "{error}");
}

/// Damaged and foreign objects are refused, never applied: the replica
/// stays at the block before and says which object.
#[test]
fn damaged_and_foreign_objects_are_refused() {
    let Some(cluster) = Cluster::start("damaged_and_foreign_objects_are_refused") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let (one, two) = (work.path().join("one"), work.path().join("two"));
    let writer = StateDb::open(&one, writer_options()).unwrap();
    let other = StateDb::open(&two, writer_options()).unwrap();
    let mut rng = Rng(11);
    write_blocks(&writer, 0, 20, &mut rng);
    write_blocks(&other, 0, 26, &mut Rng(12));
    let bucket = cluster.bucket("one");
    let mut publisher =
        Publisher::open(&one, bucket.clone(), publish_options(work.path())).unwrap();
    publisher.publish_once().unwrap();
    let mut foreign =
        Publisher::open(&two, cluster.bucket("two"), publish_options(work.path())).unwrap();
    foreign.publish_once().unwrap();
    write_blocks(&other, 26, 30, &mut Rng(13));
    foreign.publish_once().unwrap();
    // The second datadir's publisher cannot take over the first's prefix.
    let taken = Publisher::open(&two, bucket.clone(), publish_options(work.path()));
    assert!(
        matches!(taken, Err(ReplicaError::Foreign { .. })),
        "published over another datadir"
    );

    let replica =
        Replica::open(bucket.clone(), replica_options(&work.path().join("cache"))).unwrap();
    assert_eq!(replica.status().head, 19);
    write_blocks(&writer, 20, 26, &mut rng);
    publisher.publish_once().unwrap();
    let manifest = publisher.manifest().unwrap().clone();
    let newest = manifest.batches.last().unwrap().object.key.clone();

    // A flipped byte in the newest batch.
    let good = bucket.get(&newest).unwrap();
    let mut bad = good.to_vec();
    let middle = bad.len() / 2;
    bad[middle] ^= 0x40;
    bucket.put(&newest, bad.into()).unwrap();
    let error = replica.sync().unwrap_err();
    assert!(matches!(error, ReplicaError::Damaged { .. }), "{error}");
    assert!(error.to_string().contains(&newest), "{error}");
    assert!(replica.status().head < 25);
    let held = replica.status().head;
    let source = ReadOnlyStateDb::open(&one, reader_options()).unwrap();
    same_answers(&source, replica.store(), held, 200, 1);

    // Another datadir's batch under the same name.
    let other_manifest = foreign.manifest().unwrap().clone();
    let theirs = cluster
        .bucket("two")
        .get(&other_manifest.batches.last().unwrap().object.key)
        .unwrap();
    bucket.put(&newest, theirs).unwrap();
    let error = replica.sync().unwrap_err();
    assert!(matches!(error, ReplicaError::Foreign { .. }), "{error}");
    assert_eq!(replica.status().head, held);

    // Another datadir's manifest over this one's.
    let their_manifest = cluster.bucket("two").get("manifest.json").unwrap();
    let ours = bucket.get("manifest.json").unwrap();
    bucket.put("manifest.json", their_manifest).unwrap();
    let error = replica.sync().unwrap_err();
    assert!(matches!(error, ReplicaError::Foreign { .. }), "{error}");
    assert_eq!(replica.status().head, held);
    // Still there a round later: the refusal stays (an unchanged manifest
    // is read again after a failed round, not passed over).
    let again = replica.sync().unwrap_err();
    assert!(matches!(again, ReplicaError::Foreign { .. }), "{again}");
    assert!(replica.status().last_error.is_some());

    // Put right, the replica catches up.
    bucket.put("manifest.json", ours).unwrap();
    bucket.put(&newest, good).unwrap();
    assert_eq!(replica.sync().unwrap().head, 25);
    source.catch_up().unwrap();
    same_answers(&source, replica.store(), 25, 200, 2);

    // A damaged base: a new replica refuses to start from it, and leaves
    // no datadir behind.
    let base = manifest.base.db.key.clone();
    let mut stream = bucket.get(&base).unwrap().to_vec();
    stream[40] ^= 1;
    bucket.put(&base, stream.into()).unwrap();
    let cache = work.path().join("cold");
    let error = Replica::open(bucket, replica_options(&cache))
        .err()
        .expect("a damaged base was loaded");
    assert!(matches!(error, ReplicaError::Damaged { .. }), "{error}");
    assert!(error.to_string().contains(&base), "{error}");
    assert!(!cache.join("datadir").exists());
}

/// A round cut short (objects uploaded, the manifest not written) leaves
/// the bucket at the last manifest; the next publisher skips what is there.
#[test]
fn a_round_cut_short_leaves_the_last_manifest_and_resumes() {
    let Some(cluster) = Cluster::start("a_round_cut_short") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let datadir = work.path().join("writer");
    let writer = StateDb::open(&datadir, writer_options()).unwrap();
    let mut rng = Rng(3);
    write_blocks(&writer, 0, 20, &mut rng);
    let bucket = cluster.bucket("cut");
    let mut publisher =
        Publisher::open(&datadir, bucket.clone(), publish_options(work.path())).unwrap();
    publisher.publish_once().unwrap();
    write_blocks(&writer, 20, 28, &mut rng);
    // What a killed round leaves: a later batch without the manifest that names it.
    let published = publisher.manifest().unwrap().clone();
    drop(publisher);
    let stray = "blocks/00000000000000000099-00000000000000000099-0000000000000000.blk";
    bucket.put(stray, Bytes::from_static(b"partial")).unwrap();
    let replica =
        Replica::open(bucket.clone(), replica_options(&work.path().join("cache"))).unwrap();
    assert_eq!(
        replica.status().head,
        published.head,
        "the last manifest's head"
    );
    let mut resumed =
        Publisher::open(&datadir, bucket.clone(), publish_options(work.path())).unwrap();
    let report = resumed.publish_once().unwrap();
    assert!(!report.base, "resumed without a new base: {report:?}");
    assert_eq!(report.head, Some(27));
    assert!(
        resumed
            .manifest()
            .unwrap()
            .retired
            .iter()
            .any(|r| r.key == stray),
        "the stray object is retired"
    );
    assert_eq!(replica.sync().unwrap().head, 27);
}

/// Garage can lose `manifest.json` itself when the PUT overwriting it is
/// cut at the moment it completes (the new version marked aborted, the
/// old one already dropped): every manifest is also written under a name
/// of its own, and a replica or a publisher that finds no `manifest.json`
/// reads the newest copy; the publisher writes `manifest.json` again.
#[test]
fn a_lost_manifest_is_read_from_its_newest_copy() {
    let Some(cluster) = Cluster::start("a_lost_manifest") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let datadir = work.path().join("writer");
    let writer = StateDb::open(&datadir, writer_options()).unwrap();
    let mut rng = Rng(5);
    write_blocks(&writer, 0, 20, &mut rng);
    let bucket = cluster.bucket("lost");
    let mut publisher =
        Publisher::open(&datadir, bucket.clone(), publish_options(work.path())).unwrap();
    publisher.publish_once().unwrap();
    write_blocks(&writer, 20, 26, &mut rng);
    publisher.publish_once().unwrap();
    let published = publisher.manifest().unwrap().clone();
    assert_eq!(published.head, 25);
    let copies: Vec<String> = bucket
        .list(strata_replica::MANIFEST_COPIES)
        .unwrap()
        .into_iter()
        .map(|(key, _)| key)
        .collect();
    let newest = strata_replica::manifest_copy(published.sequence);
    assert!(copies.contains(&newest), "{copies:?}");
    assert!(
        copies
            .iter()
            .filter(|key| **key != newest)
            .all(|key| published.retired.iter().any(|r| &r.key == key)),
        "every older copy is retired: {copies:?}, {:?}",
        published.retired
    );
    drop(publisher);
    bucket.delete(strata_replica::MANIFEST).unwrap();

    let replica =
        Replica::open(bucket.clone(), replica_options(&work.path().join("cache"))).unwrap();
    assert_eq!(replica.status().head, 25, "the newest copy's head");
    let served = replica.read_only(reader_options()).unwrap();
    let source = ReadOnlyStateDb::open(&datadir, reader_options()).unwrap();
    same_answers(&source, &served, 25, 200, 5);
    write_blocks(&writer, 26, 30, &mut rng);
    let mut resumed =
        Publisher::open(&datadir, bucket.clone(), publish_options(work.path())).unwrap();
    let report = resumed.publish_once().unwrap();
    assert!(
        !report.base,
        "resumed from the copy, no new base: {report:?}"
    );
    assert_eq!(report.head, Some(29));
    assert!(
        bucket
            .list("")
            .unwrap()
            .iter()
            .any(|(key, _)| key == strata_replica::MANIFEST),
        "manifest.json is written again"
    );
    assert_eq!(replica.sync().unwrap().head, 29);
}

/// The writer unwinds (a reorg) and writes other blocks: the publisher
/// makes a new base at the block it went back to, and the replica goes
/// back to it and follows the new blocks, answering as the writer does.
#[test]
fn a_writer_unwind_is_followed() {
    let Some(cluster) = Cluster::start("a_writer_unwind_is_followed") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let datadir = work.path().join("writer");
    let writer = StateDb::open(&datadir, writer_options()).unwrap();
    let mut rng = Rng(21);
    write_blocks(&writer, 0, 16, &mut rng);
    let bucket = cluster.bucket("reorg");
    let mut publisher =
        Publisher::open(&datadir, bucket.clone(), publish_options(work.path())).unwrap();
    publisher.publish_once().unwrap();
    let replica = Replica::open(
        cluster.bucket("reorg"),
        replica_options(&work.path().join("cache")),
    )
    .unwrap();
    // The replica replays blocks 16..24 itself: its journal can undo them.
    write_blocks(&writer, 16, 24, &mut rng);
    publisher.publish_once().unwrap();
    assert_eq!(replica.sync().unwrap().head, 23);

    // The publisher's next round sees the journal cut back: a new base at
    // the block the writer went back to; the replica goes back there too.
    writer.unwind_to(21).unwrap();
    let report = publisher.publish_once().unwrap();
    assert!(report.base, "an unwind makes a new base: {report:?}");
    assert_eq!(report.head, Some(21));
    assert_eq!(replica.sync().unwrap().head, 21);
    write_blocks(&writer, 22, 27, &mut Rng(99));
    assert_eq!(publisher.publish_once().unwrap().head, Some(26));
    let status = replica.sync().unwrap();
    assert_eq!(status.head, 26, "{status:?}");
    let source = ReadOnlyStateDb::open(&datadir, reader_options()).unwrap();
    for block in [26, 24, 22, 21] {
        same_answers(&source, replica.store(), block, 200, block);
    }
}

/// A replica reading the base's files from the bucket holds whole the ones
/// a newer base retires, before the publisher deletes them: after the
/// grace period it still answers at every kept block.
#[test]
fn a_replica_holds_the_base_files_a_new_base_retires() {
    let Some(cluster) = Cluster::start("retired_base_files") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let datadir = work.path().join("writer");
    let writer = StateDb::open(&datadir, writer_options()).unwrap();
    let mut rng = Rng(77);
    write_blocks(&writer, 0, 40, &mut rng);
    let bucket = cluster.bucket("retire");
    let grace = std::time::Duration::from_millis(1500);
    let mut publisher = Publisher::open(
        &datadir,
        bucket.clone(),
        PublishOptions {
            grace,
            ..publish_options(work.path())
        },
    )
    .unwrap();
    assert!(publisher.publish_once().unwrap().base);
    // A range cache of one chunk: nearly every read goes to the bucket.
    let replica = Replica::open(
        cluster.bucket("retire"),
        ReplicaOptions {
            range_cache_bytes: Some(64 << 10),
            ..replica_options(&work.path().join("cache"))
        },
    )
    .unwrap();
    let source = ReadOnlyStateDb::open(&datadir, reader_options()).unwrap();
    same_answers(&source, replica.store(), 39, 200, 1);

    // 35 blocks on, a new base: the merged files of the old one retired.
    write_blocks(&writer, 40, 75, &mut rng);
    let report = publisher.publish_once().unwrap();
    assert!(report.base, "{report:?}");
    replica.sync().unwrap();
    std::thread::sleep(grace + std::time::Duration::from_millis(200));
    write_blocks(&writer, 75, 78, &mut rng);
    let report = publisher.publish_once().unwrap();
    assert!(
        report.deleted > 0,
        "nothing retired was deleted: {report:?}"
    );
    replica.sync().unwrap();
    assert_eq!(replica.status().head, 77);
    source.catch_up().unwrap();
    for block in [77, 70, 39, 20, 2] {
        same_answers(&source, replica.store(), block, 300, block);
    }
    // Reopened, it reads the files it holds and the bucket's for the rest.
    replica.close().unwrap();
    let reopened = Replica::open(
        cluster.bucket("retire"),
        ReplicaOptions {
            range_cache_bytes: Some(64 << 10),
            ..replica_options(&work.path().join("cache"))
        },
    )
    .unwrap();
    same_answers(&source, reopened.store(), 77, 300, 3);
}

/// In the background a replica downloads the base's files whole, as far as
/// three quarters of its budget holds them (the commitment's first), its
/// open readers reading them there once verified; a file that is not what
/// the base names stays in the bucket, read in checked ranges.
#[test]
fn a_replica_downloads_the_base_files_whole_behind_its_first_answers() {
    let Some(cluster) = Cluster::start("base_files_downloaded_whole") else {
        return;
    };
    let Published {
        work,
        writer,
        mut rng,
        bucket,
        mut publisher,
        manifest,
        source,
    } = published(&cluster, "whole", 40, 91);
    let downloaded = |replica: &Replica| {
        wait_for("the download to end", || {
            !replica.base_files().unwrap().downloading && partial_files(replica.datadir()) == 0
        });
        replica.base_files().unwrap()
    };

    // Every file, within a budget that holds them all.
    let replica = Replica::open(
        cluster.bucket("whole"),
        ReplicaOptions {
            fill_streams: 3,
            ..replica_options(&work.path().join("all"))
        },
    )
    .unwrap();
    same_answers(&source, replica.store(), 39, 200, 1);
    let files = downloaded(&replica);
    assert!(files.listed >= 3, "{files:?}");
    assert_eq!(files.whole, files.listed, "{files:?}");
    // The chunks of files held whole left the range cache.
    assert_eq!(replica.range_cache_stats().unwrap().bytes, 0);
    for block in [39, 20, 3] {
        same_answers(&source, replica.store(), block, 300, block);
    }
    // The writer goes on; the replica follows over the files it holds.
    write_blocks(&writer, 40, 46, &mut rng);
    publisher.publish_once().unwrap();
    assert_eq!(replica.sync().unwrap().head, 45);
    source.catch_up().unwrap();
    same_answers(&source, replica.store(), 45, 300, 4);

    // A budget of which three quarters hold only some of the files: those
    // are downloaded (taken in order as long as they fit), the rest read
    // in ranges, and the disk holds no more than the budget.
    let mut sizes: Vec<u64> = manifest.base.files.iter().map(|f| f.object.bytes).collect();
    sizes.sort_unstable();
    let budget = (sizes[0] + sizes[1]) * 4 / 3 + 4;
    let part = Replica::open(
        cluster.bucket("whole"),
        ReplicaOptions {
            range_cache_bytes: Some(budget),
            fill_streams: 2,
            ..replica_options(&work.path().join("part"))
        },
    )
    .unwrap();
    let files = downloaded(&part);
    assert!(
        files.whole >= 1 && files.whole < files.listed && files.whole_bytes <= budget / 4 * 3,
        "{files:?} within {budget}"
    );
    for block in [45, 30] {
        same_answers(&source, part.store(), block, 300, block + 1);
    }
    let ranges = part.range_cache_stats().unwrap();
    assert!(
        files.whole_bytes + ranges.bytes <= budget + (64 << 10) + 4096,
        "{ranges:?}"
    );

    // A damaged file in the bucket: the others are held whole, that one
    // is not (nothing of it renamed into place).
    let largest = manifest
        .base
        .files
        .iter()
        .max_by_key(|f| f.object.bytes)
        .unwrap();
    let mut data = bucket.get(&largest.object.key).unwrap().to_vec();
    data[largest.object.bytes as usize / 3] ^= 0x20;
    bucket.put(&largest.object.key, data.into()).unwrap();
    let damaged = Replica::open(
        cluster.bucket("whole"),
        ReplicaOptions {
            fill_streams: 3,
            catch_up_at_open: false,
            ..replica_options(&work.path().join("damaged"))
        },
    )
    .unwrap();
    let files = downloaded(&damaged);
    let path = damaged.datadir().join(&largest.folder).join(&largest.name);
    assert!(!path.exists(), "a damaged file was taken in");
    assert_eq!(files.whole + 1, files.listed, "{files:?}");
    // Its blocks are checked as they are read: the replay that reads the
    // damaged one is refused, naming it; one that does not gives the
    // writer's answers.
    match damaged.sync() {
        Err(error) => {
            let told = error.to_string();
            assert!(
                told.contains(&largest.name) && told.contains("checksum"),
                "{told}"
            );
            // At the block before the one refused.
            let head = damaged.status().head;
            assert!((manifest.head..45).contains(&head), "head {head}");
        }
        Ok(status) => {
            assert_eq!(status.head, 45);
            same_answers(&source, damaged.store(), 45, 300, 9);
        }
    }
}

/// A background download a store error stops goes on once the store
/// answers again, fetching only what is still missing; the range cache's
/// budget gives back what each stopped round had reserved, so that in the
/// end it is the budget less exactly the files held whole.
#[test]
fn a_download_stopped_by_the_store_goes_on_once_it_answers() {
    let Some(cluster) = Cluster::start("download_stopped_goes_on") else {
        return;
    };
    let Published {
        work,
        writer,
        mut rng,
        bucket,
        mut publisher,
        manifest,
        source,
    } = published(&cluster, "again", 30, 17);
    let cache = work.path().join("cache");
    let budget = 1 << 30;

    // A first run reads in ranges only: the files' footers, indexes and
    // filters, and what the answers need, stay in its range cache.
    let ranged = Replica::open(
        cluster.bucket("again"),
        ReplicaOptions {
            range_cache_bytes: Some(budget),
            ..replica_options(&cache)
        },
    )
    .unwrap();
    same_answers(&source, ranged.store(), 29, 200, 3);
    assert_eq!(ranged.base_files().unwrap().whole, 0);
    ranged.close().unwrap();

    // The largest object goes missing: the next run opens from what its
    // cache holds, and its download stops at that object, round after
    // round.
    let largest = manifest
        .base
        .files
        .iter()
        .max_by_key(|f| f.object.bytes)
        .unwrap();
    let kept = bucket.get(&largest.object.key).unwrap();
    bucket.delete(&largest.object.key).unwrap();
    let replica = Replica::open(
        cluster.bucket("again"),
        ReplicaOptions {
            range_cache_bytes: Some(budget),
            fill_streams: 2,
            catch_up_at_open: false,
            ..replica_options(&cache)
        },
    )
    .unwrap();
    wait_for("two rounds stopped by the missing object", || {
        replica.base_files().unwrap().failed_rounds >= 2
    });
    let files = replica.base_files().unwrap();
    assert!(files.downloading, "{files:?}");
    assert!(files.whole < files.listed, "{files:?}");
    let path = replica.datadir().join(&largest.folder).join(&largest.name);
    assert!(!path.exists(), "a file taken in without its object");
    same_answers(&source, replica.store(), 29, 200, 3);

    // The object is back: the download finishes, every file whole, and the
    // budget left to the chunks is the budget less those files.
    bucket.put(&largest.object.key, kept).unwrap();
    wait_for("the download to end", || {
        !replica.base_files().unwrap().downloading && partial_files(replica.datadir()) == 0
    });
    let files = replica.base_files().unwrap();
    assert_eq!(files.whole, files.listed, "{files:?}");
    assert!(path.exists());
    let ranges = replica.range_cache_stats().unwrap();
    assert_eq!(
        ranges.budget,
        budget - files.whole_bytes,
        "{ranges:?} {files:?}"
    );
    assert_eq!(ranges.bytes, 0, "chunks of files held whole");
    same_answers(&source, replica.store(), 29, 300, 7);
    write_blocks(&writer, 30, 34, &mut rng);
    publisher.publish_once().unwrap();
    assert_eq!(replica.sync().unwrap().head, 33);
    source.catch_up().unwrap();
    same_answers(&source, replica.store(), 33, 300, 11);
}
