//! A verify stage run so that neither an error nor a panic of redb on a
//! damaged page ends the verification: either becomes a problem naming what
//! was being read.

use crate::error::guarded as guarded_read;
use crate::error::{Error, Result};

pub(super) use strata_db::panic_message;

/// Runs `stage` (reading `what`, e.g. "redb table `account`"); an error or a
/// panic becomes the returned problem text.
///
/// redb panics on some damaged pages (an `unreachable!` in its b-tree code)
/// instead of returning `Corrupted`; the storage boundary's guard turns that
/// into [`Error::Corrupt`]. Verify only reads, so a panic leaves nothing
/// half-written: the stage's partial results are dropped and the other
/// stages still run.
pub(super) fn guarded<T, E: Into<Error>>(
    what: &str,
    stage: impl FnOnce() -> Result<T, E>,
) -> Result<T, String> {
    guarded_read("(verify)", || stage().map_err(Into::into)).map_err(|error| match error {
        Error::Corrupt { what: cause, .. } => {
            format!("reading {what}: the database is damaged ({cause})")
        }
        other => format!("reading {what}: {other}"),
    })
}

#[cfg(test)]
mod tests {
    use super::guarded;
    use crate::error::Error;

    #[test]
    fn a_panic_becomes_a_problem_naming_what_was_read() {
        let problem = guarded::<(), Error>("redb table `account`", || panic!("unreachable page"))
            .expect_err("the panic is caught");
        assert!(problem.contains("redb table `account`"), "{problem}");
        assert!(problem.contains("unreachable page"), "{problem}");
    }

    #[test]
    fn an_error_becomes_a_problem_naming_what_was_read() {
        let problem = guarded::<(), Error>("redb table `code`", || {
            Err(Error::InvalidOptions("boom".into()))
        })
        .expect_err("the error is kept");
        assert!(
            problem.starts_with("reading redb table `code`: "),
            "{problem}"
        );
        assert_eq!(guarded("x", || Ok::<_, Error>(7)), Ok(7));
    }
}
