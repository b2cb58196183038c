//! Ranges of a bucket's objects read on demand through a local cache
//! within a budget, against a three-node Garage cluster on loopback
//! (`testing/garage/cluster.sh`; without `garage` on PATH each test says
//! so and skips, except under `CI=true`): the bytes are the object's,
//! a cached chunk costs no request, the disk stays within the budget, a
//! damaged chunk is fetched again, and a sorted file in the bucket
//! answers through it as the same file opened locally.

mod cluster;

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use strata_files::{FileMeta, OsFileSystem, SortedFile, SortedFileWriter};
use strata_replica::{RangeCache, RangeCacheOptions};
use strata_types::Domain;

use cluster::{Cluster, Rng};

const CHUNK: u64 = 64 << 10;

fn options(dir: &Path, budget: u64) -> RangeCacheOptions {
    RangeCacheOptions {
        dir: dir.to_path_buf(),
        budget_bytes: budget,
        chunk_bytes: CHUNK,
    }
}

/// `object` (the file `local` uploaded) opened through `cache`.
fn open_remote(cache: &Arc<RangeCache>, object: &str, size: u64, local: &SortedFile) -> SortedFile {
    SortedFile::open_remote(
        Path::new(object),
        size,
        Some(local.checksum()),
        cache.object(object, size),
    )
    .unwrap()
}

#[test]
fn ranges_are_the_objects_and_the_cache_stays_within_its_budget() {
    let Some(cluster) = Cluster::start("ranges_within_budget") else {
        return;
    };
    let bucket = cluster.bucket("ranges");
    let mut rng = Rng(11);
    let object: Vec<u8> = (0..(1 << 20) + 12_345).map(|_| rng.next() as u8).collect();
    let size = object.len() as u64;
    bucket.put("blob", Bytes::from(object.clone())).unwrap();
    let work = tempfile::tempdir().unwrap();
    // Room for four chunks and their headers.
    let budget = 4 * (CHUNK + 64);
    let cache = RangeCache::open(bucket.clone(), options(work.path(), budget)).unwrap();

    let gets = || bucket.counters().gets;
    let before = gets();
    assert_eq!(
        cache.read("blob", size, 100..200).unwrap(),
        object[100..200],
        "a first read"
    );
    assert_eq!(gets() - before, 1, "one chunk, one GET");
    let before = gets();
    assert_eq!(
        cache.read("blob", size, 150..4_000).unwrap(),
        object[150..4_000]
    );
    assert_eq!(gets(), before, "a cached chunk costs no request");

    for _ in 0..300 {
        let start = rng.below(size);
        let end = (start + 1 + rng.below(150_000)).min(size);
        assert_eq!(
            cache.read("blob", size, start..end).unwrap(),
            object[start as usize..end as usize],
            "bytes {start}..{end}"
        );
        let stats = cache.stats();
        let on_disk: u64 = std::fs::read_dir(work.path())
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum();
        assert_eq!(stats.bytes, on_disk);
        // A read spanning more chunks than the budget holds keeps its last.
        assert!(stats.bytes <= budget.max(CHUNK + 64), "{stats:?}");
    }
    let stats = cache.stats();
    assert!(stats.evicted > 0 && stats.hits > 0, "{stats:?}");
    let last = size - 10..size;
    assert_eq!(
        cache.read("blob", size, last.clone()).unwrap(),
        object[size as usize - 10..]
    );
    let error = cache.read("blob", size, size - 10..size + 1).unwrap_err();
    assert!(error.to_string().contains("ranges/blob"), "{error}");

    // A chunk damaged on disk is fetched again, never served.
    drop(cache);
    let cache = RangeCache::open(bucket.clone(), options(work.path(), budget)).unwrap();
    let kept = cache.stats().bytes;
    assert!(
        kept > 0 && kept <= budget,
        "the chunks on disk are kept: {kept}"
    );
    for entry in std::fs::read_dir(work.path()).unwrap() {
        let path = entry.unwrap().path();
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x20;
        std::fs::write(&path, bytes).unwrap();
    }
    assert_eq!(
        cache.read("blob", size, last.clone()).unwrap(),
        object[size as usize - 10..]
    );
    let stats = cache.stats();
    assert_eq!((stats.damaged, stats.misses), (1, 1), "{stats:?}");
}

#[test]
fn a_sorted_file_in_the_bucket_answers_through_the_cache_as_it_does_locally() {
    let Some(cluster) = Cluster::start("ranges_sorted_file") else {
        return;
    };
    let bucket = cluster.bucket("files");
    let work = tempfile::tempdir().unwrap();
    let mut rng = Rng(5);
    // 30,000 storage-like entries (52-byte keys, 32-byte values), some
    // deleted: about 2.7 MB, 700 blocks.
    let mut keys: Vec<Vec<u8>> = (0..30_000)
        .map(|_| (0..52).map(|_| rng.next() as u8).collect())
        .collect();
    keys.sort();
    keys.dedup();
    let meta = FileMeta {
        domain: Domain::Storage,
        from_step: 0,
        to_step: 4,
    };
    let fs: Arc<dyn strata_files::FileSystem> = Arc::new(OsFileSystem);
    let mut writer = SortedFileWriter::new(fs.clone(), work.path(), meta).unwrap();
    for (i, key) in keys.iter().enumerate() {
        let value = (i % 9 != 4).then_some([i as u8; 32]);
        writer.push(key, value.as_ref().map(|v| &v[..])).unwrap();
    }
    let info = writer.finish().unwrap();
    let local = SortedFile::open(&OsFileSystem, &info.path).unwrap();
    let object = format!("files/{}", info.name);
    bucket.put_file(&object, &info.path).unwrap();

    let cache_dir = work.path().join("cache");
    let cache = RangeCache::open(bucket.clone(), options(&cache_dir, 8 << 20)).unwrap();
    let gets = || bucket.counters().gets;
    let before = gets();
    let remote = open_remote(&cache, &object, info.size, &local);
    let opened = gets() - before;
    let tail = info.size - info.size / 100 * 97;
    assert!(opened <= 2 + tail / CHUNK + 2, "open: {opened} GETs");

    // Five lookups fetch their blocks' chunks, not the file.
    let before = gets();
    for key in keys.iter().step_by(keys.len() / 5).take(5) {
        assert_eq!(remote.get(key).unwrap(), local.get(key).unwrap());
    }
    assert!(gets() - before <= 5, "{} GETs", gets() - before);
    let fetched = cache.stats().bytes;
    assert!(
        fetched < info.size / 4,
        "five lookups and the open fetched {fetched} of the file's {} bytes",
        info.size
    );

    let before = gets();
    let mut probes: Vec<Vec<u8>> = (0..200)
        .map(|_| keys[rng.below(keys.len() as u64) as usize].clone())
        .collect();
    probes.extend((0..50).map(|_| (0..52).map(|_| rng.next() as u8).collect::<Vec<u8>>()));
    for key in &probes {
        assert_eq!(remote.get(key).unwrap(), local.get(key).unwrap());
    }
    let lookups = gets() - before;
    assert!(
        lookups <= probes.len() as u64,
        "{lookups} GETs for {} lookups",
        probes.len()
    );

    // Reopened over the same folder: what was read costs no request.
    drop(remote);
    drop(cache);
    let cache = RangeCache::open(bucket.clone(), options(&cache_dir, 8 << 20)).unwrap();
    let before = gets();
    let remote = open_remote(&cache, &object, info.size, &local);
    for key in &probes {
        assert_eq!(remote.get(key).unwrap(), local.get(key).unwrap());
    }
    assert_eq!(gets(), before, "all of it came from the cache folder");

    // The store unreachable: what is cached still answers; the rest is an
    // error naming the bucket and the object, never a wrong answer.
    let cache =
        RangeCache::open(bucket.clone(), options(&work.path().join("cold"), 8 << 20)).unwrap();
    let cold = open_remote(&cache, &object, info.size, &local);
    let few = &probes[..5];
    for key in few {
        assert_eq!(cold.get(key).unwrap(), local.get(key).unwrap());
    }
    cluster.stop();
    for key in few {
        assert_eq!(cold.get(key).unwrap(), local.get(key).unwrap());
        assert_eq!(remote.get(key).unwrap(), local.get(key).unwrap());
    }
    let mut failed = 0;
    for key in keys.iter().step_by(997).take(10) {
        match cold.get(key) {
            Ok(found) => assert_eq!(found, local.get(key).unwrap()),
            Err(error) => {
                let message = error.to_string();
                assert!(message.contains("s3://strata-test/files"), "{message}");
                failed += 1;
            }
        }
    }
    assert!(failed > 0, "every block was cached");
    drop(remote);
}
