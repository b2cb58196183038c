//! The warmup pool: rayon workers that pull what the commitment will need
//! into the cache while the block is still executing or hashing.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use parking_lot::{Condvar, Mutex};

use crate::{CacheError, LoadError};

/// The work a warmer does for one item (e.g. walk one hashed key's path and
/// load its branches through the cache).
pub type WarmupJob<T> = Arc<dyn Fn(&T) -> Result<(), LoadError> + Send + Sync>;

/// The most warmer threads a [`WarmupPool`] starts. Each warmer is an OS
/// thread with its own stack, and a commit hands every warmer a share of the
/// block's touched paths: beyond a few dozen the threads only contend for the
/// cache shards. 1,024 is far above any useful count and still a number of
/// threads every supported OS can start.
pub const MAX_WARMERS: usize = 1024;

/// A fixed pool of warmer threads, built once at start-up.
///
/// [`warm`](Self::warm) hands a batch to the pool and returns at once: the
/// caller (the commitment) never waits for warmup. With 0 warmers the pool
/// is disabled and batches are dropped unrun.
pub struct WarmupPool {
    pool: Option<rayon::ThreadPool>,
    warmers: usize,
    errors: Arc<AtomicU64>,
}

impl WarmupPool {
    /// Starts `warmers` threads named `strata-warmer-{i}`; 0 disables warmup.
    /// More than [`MAX_WARMERS`] is refused with [`CacheError::TooManyWarmers`].
    pub fn new(warmers: usize) -> Result<Self, CacheError> {
        if warmers > MAX_WARMERS {
            return Err(CacheError::TooManyWarmers {
                warmers,
                max: MAX_WARMERS,
            });
        }
        let pool = if warmers == 0 {
            None
        } else {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(warmers)
                .thread_name(|i| format!("strata-warmer-{i}"))
                .build()
                .map_err(|source| CacheError::WarmupPool { warmers, source })?;
            Some(pool)
        };
        Ok(Self {
            pool,
            warmers,
            errors: Arc::new(AtomicU64::new(0)),
        })
    }

    /// The number of warmer threads (0 = disabled).
    pub fn warmers(&self) -> usize {
        self.warmers
    }

    /// Failed or panicked items over the pool's lifetime, across all batches.
    pub fn error_count(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// Runs `job` on every item on the warmers, in roughly the given order,
    /// and returns immediately. Items are claimed one at a time, so a
    /// [`WarmupTicket::cancel`] takes effect after the items in flight.
    pub fn warm<T: Send + Sync + 'static>(&self, items: Vec<T>, job: WarmupJob<T>) -> WarmupTicket {
        let total = items.len();
        let Some(pool) = &self.pool else {
            return WarmupTicket {
                progress: Arc::new(Progress::new(total, 0, Arc::clone(&self.errors))),
            };
        };
        let tasks = self.warmers.min(total);
        let progress = Arc::new(Progress::new(total, tasks, Arc::clone(&self.errors)));
        let batch = Arc::new(Batch {
            items,
            job,
            next: AtomicUsize::new(0),
            progress: Arc::clone(&progress),
        });
        for _ in 0..tasks {
            let batch = Arc::clone(&batch);
            pool.spawn(move || batch.drain());
        }
        WarmupTicket { progress }
    }
}

impl std::fmt::Debug for WarmupPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmupPool")
            .field("warmers", &self.warmers)
            .field("errors", &self.error_count())
            .finish()
    }
}

/// One batch of items, shared by the warmers working on it.
struct Batch<T> {
    items: Vec<T>,
    job: WarmupJob<T>,
    next: AtomicUsize,
    progress: Arc<Progress>,
}

impl<T> Batch<T> {
    /// Claims and runs items until none are left or the batch is cancelled.
    fn drain(&self) {
        let progress = &self.progress;
        while !progress.cancelled.load(Ordering::Relaxed) {
            let index = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = self.items.get(index) else {
                break;
            };
            let outcome = catch_unwind(AssertUnwindSafe(|| (self.job)(item)))
                .unwrap_or_else(|panic| Err(panic_message(panic.as_ref()).into()));
            if let Err(error) = outcome {
                progress.pool_errors.fetch_add(1, Ordering::Relaxed);
                progress
                    .failures
                    .lock()
                    .push(WarmupFailure { item: index, error });
            }
            progress.done.fetch_add(1, Ordering::Relaxed);
        }
        let mut active = progress.active.lock();
        *active -= 1;
        if *active == 0 {
            progress.finished.notify_all();
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("non-string payload");
    format!("warmup job panicked: {text}")
}

/// What the warmers of one batch share with its ticket.
struct Progress {
    total: usize,
    cancelled: AtomicBool,
    done: AtomicUsize,
    failures: Mutex<Vec<WarmupFailure>>,
    /// Warmer tasks of this batch still running.
    active: Mutex<usize>,
    finished: Condvar,
    pool_errors: Arc<AtomicU64>,
}

impl Progress {
    fn new(total: usize, tasks: usize, pool_errors: Arc<AtomicU64>) -> Self {
        Self {
            total,
            cancelled: AtomicBool::new(false),
            done: AtomicUsize::new(0),
            failures: Mutex::new(Vec::new()),
            active: Mutex::new(tasks),
            finished: Condvar::new(),
            pool_errors,
        }
    }
}

/// A handle on one submitted batch. Dropping it leaves the batch running
/// (its errors still count in [`WarmupPool::error_count`]).
pub struct WarmupTicket {
    progress: Arc<Progress>,
}

impl WarmupTicket {
    /// Stops the batch: warmers finish the items they hold and claim no more.
    /// Call it when the block's commitment is done.
    pub fn cancel(&self) {
        self.progress.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether every warmer of the batch has stopped.
    pub fn is_finished(&self) -> bool {
        *self.progress.active.lock() == 0
    }

    /// Items finished so far (with or without error).
    pub fn items_done(&self) -> usize {
        self.progress.done.load(Ordering::Relaxed)
    }

    /// Blocks until the batch is finished or cancelled and drained, then
    /// reports what was done and every error, ordered by item.
    pub fn wait(self) -> WarmupReport {
        let progress = &self.progress;
        {
            let mut active = progress.active.lock();
            while *active > 0 {
                progress.finished.wait(&mut active);
            }
        }
        let mut errors = std::mem::take(&mut *progress.failures.lock());
        errors.sort_by_key(|failure| failure.item);
        WarmupReport {
            items_total: progress.total,
            items_done: progress.done.load(Ordering::Relaxed),
            cancelled: progress.cancelled.load(Ordering::Relaxed),
            errors,
        }
    }
}

impl std::fmt::Debug for WarmupTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmupTicket")
            .field("items_total", &self.progress.total)
            .field("items_done", &self.items_done())
            .finish()
    }
}

/// The outcome of one batch.
#[derive(Debug)]
pub struct WarmupReport {
    /// Items submitted.
    pub items_total: usize,
    /// Items whose job ran to the end (successfully or not); fewer than
    /// `items_total` when the batch was cancelled or the pool is disabled.
    pub items_done: usize,
    /// Whether [`WarmupTicket::cancel`] was called.
    pub cancelled: bool,
    /// Every item whose job failed or panicked, by item index.
    pub errors: Vec<WarmupFailure>,
}

/// One failed warmup item.
#[derive(Debug)]
pub struct WarmupFailure {
    /// The item's index in the submitted `Vec`.
    pub item: usize,
    /// What the job returned (or the panic message).
    pub error: LoadError,
}

impl std::fmt::Display for WarmupFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "warmup item {}: {}", self.item, self.error)
    }
}
