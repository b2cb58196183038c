//! The object store, as the publisher and the replicas use it: a bucket
//! (S3: AWS, Garage, MinIO, R2, …) reached through one or more endpoints,
//! behind blocking calls on a runtime of its own. Every call names the
//! bucket and the object in its error; a call that fails on one endpoint
//! (a node down, refused, timed out) is tried on the next one.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use object_store::aws::{AmazonS3Builder, S3ConditionalPut};
use object_store::path::Path as ObjectPath;
use object_store::{
    BackoffConfig, ClientOptions, GetOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig,
    WriteMultipart,
};

use crate::error::{ReplicaError, Result, io_err};
use crate::location::BucketUrl;

/// Objects larger than this go up in parts of this size.
const PART_BYTES: usize = 16 << 20;

/// How to reach the object store.
#[derive(Clone, Debug)]
pub struct BucketConfig {
    /// Endpoint URLs (`http://host:port`), tried in order when one fails;
    /// empty: AWS's own endpoint for the region.
    pub endpoints: Vec<String>,
    /// The access key id.
    pub key_id: String,
    /// The secret access key.
    pub secret: String,
    /// The region (Garage: its `s3_region`).
    pub region: String,
    /// The longest one request may take.
    pub request_timeout: Duration,
    /// Retries of one request on one endpoint before the next is tried.
    pub retries: usize,
}

impl BucketConfig {
    /// Settings from the environment: `STRATA_S3_ENDPOINTS` (comma-separated;
    /// else `AWS_ENDPOINT_URL`), `STRATA_S3_KEY_ID` (else `AWS_ACCESS_KEY_ID`),
    /// `STRATA_S3_SECRET` (else `AWS_SECRET_ACCESS_KEY`), `STRATA_S3_REGION`
    /// (else `AWS_REGION`, else `us-east-1`).
    pub fn from_env() -> Result<BucketConfig> {
        let var = |names: &[&str]| {
            names
                .iter()
                .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
        };
        let endpoints = var(&["STRATA_S3_ENDPOINTS", "AWS_ENDPOINT_URL"])
            .map(|list| {
                list.split(',')
                    .map(|e| e.trim().to_string())
                    .filter(|e| !e.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let key_id = var(&["STRATA_S3_KEY_ID", "AWS_ACCESS_KEY_ID"]).ok_or_else(|| {
            ReplicaError::Config("no access key: set STRATA_S3_KEY_ID or AWS_ACCESS_KEY_ID".into())
        })?;
        let secret = var(&["STRATA_S3_SECRET", "AWS_SECRET_ACCESS_KEY"]).ok_or_else(|| {
            ReplicaError::Config(
                "no secret key: set STRATA_S3_SECRET or AWS_SECRET_ACCESS_KEY".into(),
            )
        })?;
        let region = var(&["STRATA_S3_REGION", "AWS_REGION"]).unwrap_or_else(|| "us-east-1".into());
        Ok(BucketConfig {
            endpoints,
            key_id,
            secret,
            region,
            request_timeout: Duration::from_secs(30),
            retries: 2,
        })
    }
}

/// Requests made and bytes moved through one [`Bucket`] since it opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BucketCounters {
    /// GET requests (whole or ranged, conditional ones included).
    pub gets: u64,
    /// PUT requests (a multipart upload counts its parts).
    pub puts: u64,
    /// LIST requests.
    pub lists: u64,
    /// DELETE requests.
    pub deletes: u64,
    /// Bytes downloaded.
    pub bytes_in: u64,
    /// Bytes uploaded.
    pub bytes_out: u64,
    /// Calls that failed on one endpoint and went to the next.
    pub failovers: u64,
}

#[derive(Debug, Default)]
struct Counters {
    gets: AtomicU64,
    puts: AtomicU64,
    lists: AtomicU64,
    deletes: AtomicU64,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    failovers: AtomicU64,
}

/// What a conditional read of an object found.
#[derive(Debug)]
pub enum Fetched {
    /// The object, with its entity tag.
    Object(Bytes, Option<String>),
    /// Unchanged since the entity tag given.
    NotModified,
    /// No such object.
    NotFound,
}

/// A bucket and prefix, reached through one or more endpoints.
#[derive(Debug)]
pub struct Bucket {
    url: BucketUrl,
    stores: Vec<Arc<dyn ObjectStore>>,
    /// The endpoint that answered last: tried first.
    current: AtomicUsize,
    runtime: tokio::runtime::Runtime,
    counters: Counters,
}

impl Bucket {
    /// A bucket reached with `config`; no request is made yet.
    pub fn open(url: BucketUrl, config: &BucketConfig) -> Result<Bucket> {
        let endpoints: Vec<Option<&String>> = if config.endpoints.is_empty() {
            vec![None]
        } else {
            config.endpoints.iter().map(Some).collect()
        };
        let mut stores: Vec<Arc<dyn ObjectStore>> = Vec::new();
        for endpoint in endpoints {
            let client = ClientOptions::new()
                .with_timeout(config.request_timeout)
                .with_connect_timeout(Duration::from_secs(2))
                .with_allow_http(endpoint.is_some_and(|e| e.starts_with("http://")));
            let mut builder = AmazonS3Builder::new()
                .with_bucket_name(&url.bucket)
                .with_access_key_id(&config.key_id)
                .with_secret_access_key(&config.secret)
                .with_region(&config.region)
                .with_client_options(client)
                // Garage (and others) ignore conditional puts: never rely
                // on them; a create-only write fails loudly instead.
                .with_conditional_put(S3ConditionalPut::Disabled)
                .with_retry(RetryConfig {
                    max_retries: config.retries,
                    retry_timeout: config.request_timeout,
                    backoff: BackoffConfig {
                        init_backoff: Duration::from_millis(50),
                        max_backoff: Duration::from_millis(500),
                        base: 2.0,
                    },
                });
            if let Some(endpoint) = endpoint {
                builder = builder.with_endpoint(endpoint);
            }
            let store = builder.build().map_err(|source| ReplicaError::Store {
                bucket: url.to_string(),
                key: String::new(),
                op: "configure",
                source: Box::new(source),
            })?;
            stores.push(Arc::new(store));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("strata-s3")
            .enable_all()
            .build()
            .map_err(|source| ReplicaError::Io {
                path: Default::default(),
                op: "start the object store's runtime",
                source,
            })?;
        Ok(Bucket {
            url,
            stores,
            current: AtomicUsize::new(0),
            runtime,
            counters: Counters::default(),
        })
    }

    /// The bucket and prefix.
    pub fn url(&self) -> &BucketUrl {
        &self.url
    }

    /// Requests and bytes so far.
    pub fn counters(&self) -> BucketCounters {
        let c = &self.counters;
        BucketCounters {
            gets: c.gets.load(Ordering::Relaxed),
            puts: c.puts.load(Ordering::Relaxed),
            lists: c.lists.load(Ordering::Relaxed),
            deletes: c.deletes.load(Ordering::Relaxed),
            bytes_in: c.bytes_in.load(Ordering::Relaxed),
            bytes_out: c.bytes_out.load(Ordering::Relaxed),
            failovers: c.failovers.load(Ordering::Relaxed),
        }
    }

    fn path(&self, name: &str) -> ObjectPath {
        ObjectPath::from(self.url.key(name))
    }

    fn error(&self, name: &str, op: &'static str, source: object_store::Error) -> ReplicaError {
        match source {
            object_store::Error::NotFound { .. } => ReplicaError::Missing {
                bucket: self.url.to_string(),
                key: self.url.key(name),
            },
            source => ReplicaError::Store {
                bucket: self.url.to_string(),
                key: self.url.key(name),
                op,
                source: Box::new(source),
            },
        }
    }

    /// Runs `call` on the endpoint that answered last, then on each other
    /// one while it fails with an error another node may not give (not a
    /// missing object, not an unchanged one).
    fn with_failover<T, F, Fut>(&self, call: F) -> std::result::Result<T, object_store::Error>
    where
        F: Fn(Arc<dyn ObjectStore>) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<T, object_store::Error>>,
    {
        let first = self.current.load(Ordering::Relaxed);
        let mut last_error = None;
        for attempt in 0..self.stores.len() {
            let index = (first + attempt) % self.stores.len();
            match self.runtime.block_on(call(self.stores[index].clone())) {
                Ok(value) => {
                    self.current.store(index, Ordering::Relaxed);
                    return Ok(value);
                }
                Err(
                    error @ (object_store::Error::NotFound { .. }
                    | object_store::Error::NotModified { .. }
                    | object_store::Error::Precondition { .. }),
                ) => return Err(error),
                Err(error) => {
                    if attempt + 1 < self.stores.len() {
                        self.counters.failovers.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(bucket = %self.url, %error, "endpoint failed; trying the next");
                    }
                    last_error = Some(error);
                }
            }
        }
        Err(last_error.expect("at least one endpoint"))
    }

    /// Writes `data` as object `name` (in parts when it is large).
    pub fn put(&self, name: &str, data: Bytes) -> Result<()> {
        let path = self.path(name);
        let len = data.len();
        let parts = if len > PART_BYTES {
            len.div_ceil(PART_BYTES)
        } else {
            1
        };
        self.with_failover(|store| {
            let (path, data) = (path.clone(), data.clone());
            async move {
                if data.len() <= PART_BYTES {
                    store.put(&path, PutPayload::from_bytes(data)).await?;
                    return Ok(());
                }
                let mut upload = WriteMultipart::new_with_chunk_size(
                    store.put_multipart(&path).await?,
                    PART_BYTES,
                );
                let mut offset = 0;
                while offset < data.len() {
                    let end = (offset + PART_BYTES).min(data.len());
                    upload.wait_for_capacity(4).await?;
                    upload.put(data.slice(offset..end));
                    offset = end;
                }
                upload.finish().await?;
                Ok(())
            }
        })
        .map_err(|e| self.error(name, "put", e))?;
        self.counters
            .puts
            .fetch_add(parts as u64, Ordering::Relaxed);
        self.counters
            .bytes_out
            .fetch_add(len as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Writes the local file `file` as object `name`, read in parts (never
    /// whole in memory).
    pub fn put_file(&self, name: &str, file: &Path) -> Result<u64> {
        let path = self.path(name);
        let len = std::fs::metadata(file).map_err(io_err(file, "stat"))?.len();
        self.with_failover(|store| {
            let (path, file) = (path.clone(), file.to_path_buf());
            async move {
                let mut source = std::fs::File::open(&file).map_err(|e| generic(&file, e))?;
                let mut upload = WriteMultipart::new_with_chunk_size(
                    store.put_multipart(&path).await?,
                    PART_BYTES,
                );
                let mut buffer = vec![0u8; PART_BYTES];
                loop {
                    let read =
                        read_full(&mut source, &mut buffer).map_err(|e| generic(&file, e))?;
                    if read == 0 {
                        break;
                    }
                    upload.wait_for_capacity(4).await?;
                    upload.write(&buffer[..read]);
                }
                upload.finish().await?;
                Ok(())
            }
        })
        .map_err(|e| self.error(name, "put", e))?;
        self.counters.puts.fetch_add(
            (len as usize).div_ceil(PART_BYTES).max(1) as u64,
            Ordering::Relaxed,
        );
        self.counters.bytes_out.fetch_add(len, Ordering::Relaxed);
        Ok(len)
    }

    /// Reads object `name` whole.
    pub fn get(&self, name: &str) -> Result<Bytes> {
        let path = self.path(name);
        let data = self
            .with_failover(|store| {
                let path = path.clone();
                async move { store.get(&path).await?.bytes().await }
            })
            .map_err(|e| self.error(name, "get", e))?;
        self.counters.gets.fetch_add(1, Ordering::Relaxed);
        self.counters
            .bytes_in
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        Ok(data)
    }

    /// Reads bytes `range` of object `name`, `size` bytes long (one ranged
    /// GET): refused as damaged unless exactly that many bytes came back.
    pub fn get_range_of(
        &self,
        name: &str,
        size: u64,
        range: std::ops::Range<u64>,
    ) -> Result<Bytes> {
        let (start, end) = (range.start, range.end);
        let data = self.get_range(name, range)?;
        if data.len() as u64 != end - start {
            return Err(ReplicaError::Damaged {
                bucket: self.url().to_string(),
                key: self.url().key(name),
                what: format!(
                    "bytes {start}..{end} came back {} bytes long: the object is not the {size} bytes named",
                    data.len()
                ),
            });
        }
        Ok(data)
    }

    /// Reads bytes `range` of object `name` (one ranged GET).
    pub fn get_range(&self, name: &str, range: std::ops::Range<u64>) -> Result<Bytes> {
        let path = self.path(name);
        let data = self
            .with_failover(|store| {
                let (path, range) = (path.clone(), range.clone());
                async move { store.get_range(&path, range).await }
            })
            .map_err(|e| self.error(name, "get a range of", e))?;
        self.counters.gets.fetch_add(1, Ordering::Relaxed);
        self.counters
            .bytes_in
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        Ok(data)
    }

    /// Reads object `name` unless its entity tag is still `etag`.
    pub fn get_if_changed(&self, name: &str, etag: Option<&str>) -> Result<Fetched> {
        let path = self.path(name);
        let result = self.with_failover(|store| {
            let path = path.clone();
            let options = GetOptions::new().with_if_none_match(etag.map(str::to_string));
            async move {
                let result = store.get_opts(&path, options).await?;
                let etag = result.meta.e_tag.clone();
                Ok((result.bytes().await?, etag))
            }
        });
        self.counters.gets.fetch_add(1, Ordering::Relaxed);
        match result {
            Ok((data, etag)) => {
                self.counters
                    .bytes_in
                    .fetch_add(data.len() as u64, Ordering::Relaxed);
                Ok(Fetched::Object(data, etag))
            }
            Err(object_store::Error::NotModified { .. }) => Ok(Fetched::NotModified),
            Err(object_store::Error::NotFound { .. }) => Ok(Fetched::NotFound),
            Err(e) => Err(self.error(name, "get", e)),
        }
    }

    /// Streams object `name` into the local file `file` (written beside it
    /// and renamed into place), returning its length.
    pub fn get_to_file(&self, name: &str, file: &Path) -> Result<u64> {
        let path = self.path(name);
        let partial = file.with_extension("part");
        let len = self
            .with_failover(|store| {
                let (path, partial) = (path.clone(), partial.clone());
                async move {
                    let mut stream = store.get(&path).await?.into_stream();
                    let mut out = std::io::BufWriter::new(
                        std::fs::File::create(&partial).map_err(|e| generic(&partial, e))?,
                    );
                    let mut len = 0u64;
                    while let Some(chunk) = stream.next().await {
                        let chunk = chunk?;
                        len += chunk.len() as u64;
                        out.write_all(&chunk).map_err(|e| generic(&partial, e))?;
                    }
                    out.into_inner()
                        .map_err(|e| generic(&partial, e.into_error()))?
                        .sync_all()
                        .map_err(|e| generic(&partial, e))?;
                    Ok(len)
                }
            })
            .map_err(|e| {
                let _ = std::fs::remove_file(&partial);
                self.error(name, "get", e)
            })?;
        std::fs::rename(&partial, file).map_err(io_err(file, "rename into place"))?;
        self.counters.gets.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes_in.fetch_add(len, Ordering::Relaxed);
        Ok(len)
    }

    /// Every object under `folder` (a name under the prefix), with its
    /// size: names relative to the prefix.
    pub fn list(&self, folder: &str) -> Result<Vec<(String, u64)>> {
        let path = self.path(folder);
        let strip = if self.url.prefix.is_empty() {
            String::new()
        } else {
            format!("{}/", self.url.prefix)
        };
        let objects = self
            .with_failover(|store| {
                let path = path.clone();
                async move {
                    let mut stream = store.list(Some(&path));
                    let mut objects = Vec::new();
                    while let Some(meta) = stream.next().await {
                        let meta = meta?;
                        objects.push((meta.location.to_string(), meta.size));
                    }
                    Ok(objects)
                }
            })
            .map_err(|e| self.error(folder, "list", e))?;
        self.counters.lists.fetch_add(1, Ordering::Relaxed);
        Ok(objects
            .into_iter()
            .filter_map(|(key, size)| Some((key.strip_prefix(&strip)?.to_string(), size)))
            .collect())
    }

    /// Deletes object `name` (absent already: fine).
    pub fn delete(&self, name: &str) -> Result<()> {
        let path = self.path(name);
        match self.with_failover(|store| {
            let path = path.clone();
            async move { store.delete(&path).await }
        }) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {
                self.counters.deletes.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err(self.error(name, "delete", e)),
        }
    }
}

/// A local I/O failure inside an object store call.
fn generic(path: &Path, error: std::io::Error) -> object_store::Error {
    object_store::Error::Generic {
        store: "local file",
        source: format!("{}: {error}", path.display()).into(),
    }
}

/// Reads until `buffer` is full or the source ends.
fn read_full(source: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match source.read(&mut buffer[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}
