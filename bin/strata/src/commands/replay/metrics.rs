//! `replay --metrics ADDR`: the endpoint serves the store of the run in
//! progress (a sweep opens a fresh store per run, so counters start again
//! with each run, as after a restart).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Registry;
use strata_storage::StateDb;
use strata_storage::telemetry::prometheus::{PREFIX, StoreCollector};

use crate::CliError;
use crate::metrics_server::MetricsServer;

/// The collector of the store a run has open, if any.
#[derive(Debug, Default)]
pub(super) struct CurrentStore {
    store: Mutex<Option<StoreCollector>>,
}

impl CurrentStore {
    fn slot(&self) -> MutexGuard<'_, Option<StoreCollector>> {
        // A panic while holding it leaves only an Option behind: still usable.
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Serves `db` until the guard is dropped (drop it before the store:
    /// a scrape in progress finishes first, so it never holds the store
    /// past its close).
    pub(super) fn publish(&self, db: &StateDb) -> Published<'_> {
        *self.slot() = Some(StoreCollector::new(db));
        Published(self)
    }
}

/// Clears the [`CurrentStore`] when dropped.
pub(super) struct Published<'a>(&'a CurrentStore);

impl Drop for Published<'_> {
    fn drop(&mut self) {
        *self.0.slot() = None;
    }
}

impl Collector for CurrentStore {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        match &*self.slot() {
            Some(store) => store.encode(encoder),
            None => Ok(()),
        }
    }
}

/// Starts the endpoint at `addr` for `current` and prints where it listens
/// (stderr: "metrics: listening on http://ADDR/metrics").
pub(super) fn serve(
    addr: SocketAddr,
    current: &Arc<CurrentStore>,
) -> Result<MetricsServer, CliError> {
    let mut registry = Registry::default();
    registry
        .sub_registry_with_prefix(PREFIX)
        .register_collector(Box::new(current.clone()));
    let server = MetricsServer::start(addr, registry)?;
    eprintln!("metrics: listening on http://{}/metrics", server.addr());
    Ok(server)
}
