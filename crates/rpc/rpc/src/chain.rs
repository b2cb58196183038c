//! Which chain the server serves: the chain id `eth_chainId` answers and
//! the fork rules a call's EVM runs under. What the server was given
//! (`--chain-id`, `--genesis`) wins; otherwise the chain configuration the
//! datadir records (`strata import-chain` writes it), read once.

use std::sync::{Arc, OnceLock};

use strata_chainspec::ChainSpec;
use strata_storage::ReadOnlyStateDb;

use crate::error::RpcError;

/// The chain id answered when nothing names one (mainnet's).
const DEFAULT_CHAIN_ID: u64 = 1;

/// What the server is told of its chain.
#[derive(Clone, Debug, Default)]
pub struct Chain {
    /// The chain id to answer, and the calls' `CHAINID` (`--chain-id`).
    pub chain_id: Option<u64>,
    /// The fork rules (`--genesis`): they win over the datadir's recorded
    /// configuration.
    pub spec: Option<ChainSpec>,
}

/// [`Chain`] with the datadir's recorded configuration behind it.
pub(crate) struct ChainRules {
    given: Chain,
    /// The recorded configuration, once read and parsed (a datadir records
    /// it once, at import).
    recorded: OnceLock<Arc<ChainSpec>>,
}

impl ChainRules {
    pub(crate) fn new(given: Chain) -> Self {
        Self {
            given,
            recorded: OnceLock::new(),
        }
    }

    /// `eth_chainId`: the given id, else the given or recorded rules' id,
    /// else 1.
    pub(crate) fn chain_id(&self, db: &ReadOnlyStateDb) -> Result<u64, RpcError> {
        if let Some(id) = self.given.chain_id {
            return Ok(id);
        }
        if let Some(spec) = &self.given.spec {
            return Ok(spec.chain_id);
        }
        Ok(self
            .recorded(db)?
            .map_or(DEFAULT_CHAIN_ID, |spec| spec.chain_id))
    }

    /// The fork rules `method` runs under, with the given chain id; refused
    /// with [`RpcError::NoChainConfig`] when there are none.
    pub(crate) fn spec(
        &self,
        db: &ReadOnlyStateDb,
        method: &'static str,
    ) -> Result<Arc<ChainSpec>, RpcError> {
        let spec = match &self.given.spec {
            Some(spec) => Arc::new(spec.clone()),
            None => self
                .recorded(db)?
                .ok_or(RpcError::NoChainConfig { method })?,
        };
        Ok(match self.given.chain_id {
            Some(id) if id != spec.chain_id => {
                let mut spec = (*spec).clone();
                spec.chain_id = id;
                Arc::new(spec)
            }
            _ => spec,
        })
    }

    /// The datadir's recorded rules, read on first need.
    fn recorded(&self, db: &ReadOnlyStateDb) -> Result<Option<Arc<ChainSpec>>, RpcError> {
        if let Some(spec) = self.recorded.get() {
            return Ok(Some(spec.clone()));
        }
        let Some(bytes) = db.chain_config()? else {
            return Ok(None);
        };
        let spec = ChainSpec::from_recorded(&bytes)
            .map_err(|error| RpcError::BadChainConfig(error.to_string()))?;
        Ok(Some(self.recorded.get_or_init(|| Arc::new(spec)).clone()))
    }
}
