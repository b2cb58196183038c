//! Positional parameters read one by one, each error naming the
//! parameter's position and meaning (-32602).

use jsonrpsee::types::Params;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::RpcError;

/// A call's positional parameters.
pub(crate) struct Positional {
    values: Vec<Value>,
    next: usize,
}

impl Positional {
    /// The parameters of a call (absent ones are an empty list); named
    /// parameters are refused.
    pub(crate) fn new(params: &Params<'_>) -> Result<Self, RpcError> {
        let values = if params.is_object() {
            return Err(RpcError::InvalidParams(
                "parameters must be a list (positional)".to_string(),
            ));
        } else {
            params
                .parse::<Option<Vec<Value>>>()
                .map_err(|error| RpcError::InvalidParams(error.message().to_string()))?
                .unwrap_or_default()
        };
        Ok(Self { values, next: 0 })
    }

    /// The next parameter, required.
    pub(crate) fn next<T: DeserializeOwned>(&mut self, name: &str) -> Result<T, RpcError> {
        let index = self.next;
        match self.optional(name)? {
            Some(value) => Ok(value),
            None => Err(RpcError::InvalidParams(format!(
                "parameter {} ({name}) is missing",
                index + 1
            ))),
        }
    }

    /// The next parameter; `None` when absent or null.
    pub(crate) fn optional<T: DeserializeOwned>(
        &mut self,
        name: &str,
    ) -> Result<Option<T>, RpcError> {
        let index = self.next;
        self.next += 1;
        match self.values.get(index) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => T::deserialize(value).map(Some).map_err(|error| {
                RpcError::InvalidParams(format!("parameter {} ({name}): {error}", index + 1))
            }),
        }
    }

    /// Refuses parameters after the ones read.
    pub(crate) fn end(self) -> Result<(), RpcError> {
        if self.values.len() > self.next {
            return Err(RpcError::InvalidParams(format!(
                "{} parameters given, at most {} expected",
                self.values.len(),
                self.next
            )));
        }
        Ok(())
    }
}
