//! Values of flags that several commands share, with their parsers and
//! bounds: the warmer-count lists of `replay` and `import-chain`, the cache
//! sizes, the observer's rate, the transaction workers of `import-chain`
//! and `ef-test`.

/// Largest `--cache-mib` (1 TiB): `MIB << 20` must fit in 64 bits, and a
/// branch cache larger than the machine's memory is a typo.
pub(crate) const MAX_CACHE_MIB: u64 = 1 << 20;

/// The list of warmer counts to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarmerList(pub Vec<usize>);

/// Parses a `--warmers` list ("0,2,4"), each count at most
/// [`strata_storage::MAX_WARMERS`].
pub(crate) fn warmer_list(text: &str) -> Result<WarmerList, String> {
    let max = strata_storage::MAX_WARMERS;
    let counts = text
        .split(',')
        .map(|part| match part.trim().parse::<usize>() {
            Ok(count) if count <= max => Ok(count),
            Ok(count) => Err(format!(
                "warmer count {count} is more than the limit of {max} warmer threads"
            )),
            Err(_) => Err(format!(
                "invalid warmer count {part:?} (expected a list like \"0,2,4\", each at most {max})"
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(WarmerList(counts))
}

/// Parses an observer's reads per second (`--observer-rate`): finite,
/// above zero, at most a million.
pub(crate) fn observer_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 && rate <= 1_000_000.0 => Ok(rate),
        _ => Err(format!(
            "invalid observer rate {text:?} (expected reads per second, e.g. 1000)"
        )),
    }
}

/// Parses a `--transaction-workers` count: at most
/// [`strata_executor::MAX_TRANSACTION_WORKERS`].
pub(crate) fn transaction_workers(text: &str) -> Result<usize, String> {
    let max = strata_executor::MAX_TRANSACTION_WORKERS;
    match text.trim().parse::<usize>() {
        Ok(count) if count <= max => Ok(count),
        Ok(count) => Err(format!(
            "{count} transaction workers is more than the limit of {max}"
        )),
        Err(_) => Err(format!(
            "invalid transaction worker count {text:?} (expected a number from 0 to {max})"
        )),
    }
}

/// Parses one value of an on/off switch (`--prefetch`, `--warm-start`).
pub(crate) fn on_off(text: &str) -> Result<bool, String> {
    match text.trim() {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(format!(
            "invalid value {other:?} (expected on, off or off,on)"
        )),
    }
}
