//! What every call reads: the datadir, the chain, the bounds, and the
//! server's own accounting (metrics, calls in flight). Below the method
//! modules and the server, which builds it.

use std::sync::Arc;

use strata_storage::ReadOnlyStateDb;
use tokio::sync::Semaphore;

use crate::chain::{Chain, ChainRules};
use crate::limits::Limits;
use crate::metrics::RpcMetrics;

/// What every call reads.
pub struct Context {
    /// The datadir, read-only, following its writer.
    pub db: Arc<ReadOnlyStateDb>,
    /// The bounds.
    pub limits: Limits,
    pub(crate) chain: ChainRules,
    pub(crate) metrics: RpcMetrics,
    /// One permit per call running (`--max-in-flight`), held by the
    /// running method itself.
    pub(crate) in_flight: Arc<Semaphore>,
}

impl Context {
    /// The context of a server over `db`.
    pub(crate) fn new(
        db: Arc<ReadOnlyStateDb>,
        chain: Chain,
        limits: Limits,
        metrics: RpcMetrics,
    ) -> Self {
        Self {
            db,
            chain: ChainRules::new(chain),
            in_flight: Arc::new(Semaphore::new(limits.max_in_flight)),
            limits,
            metrics,
        }
    }
}
