//! The storage boundary against redb's panics: on some damaged pages redb
//! panics (an `unreachable!` in its b-tree code, a slice index out of range)
//! instead of returning an error. Every read of stored data goes through
//! [`guarded`], which turns such a panic into [`SchemaError::Corrupt`] naming the
//! table. The default panic hook still prints the panic's message (so a real
//! bug stays visible); the process does not crash.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::error::{Result, SchemaError};

/// Runs `read` (redb calls on `table`), turning a panic into
/// [`SchemaError::Corrupt`].
///
/// Unwind safety: `read` only reads; what a panic can leave behind is a
/// read transaction or table handle redb may refuse to use again, and each
/// later use goes through this guard too.
pub fn guarded<T, E: From<SchemaError>>(
    table: &'static str,
    read: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    catch_unwind(AssertUnwindSafe(read)).unwrap_or_else(|payload| {
        Err(E::from(SchemaError::Corrupt {
            table,
            what: format!("redb panicked: {}", panic_message(payload.as_ref())),
        }))
    })
}

/// The text of a panic's payload (the one helper for every caught panic
/// of strata: redb's here, a commit's in the engine's ledger). A payload
/// still in its box (`&Box<dyn Any + Send>` coerces to the box itself, an
/// easy slip) is opened, so its message is never lost.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(boxed) = payload.downcast_ref::<Box<dyn Any + Send>>() {
        panic_message(boxed.as_ref())
    } else if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_corrupt_error_naming_the_table() {
        let err =
            guarded::<(), SchemaError>("account", || panic!("page 7 is not a branch")).unwrap_err();
        assert!(
            matches!(
                err,
                SchemaError::Corrupt {
                    table: "account",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("page 7 is not a branch"), "{err}");
        assert_eq!(guarded::<_, SchemaError>("meta", || Ok(5)).unwrap(), 5);
    }

    #[test]
    fn a_joined_threads_payload_gives_its_message_boxed_or_not() {
        let payload = std::thread::spawn(|| panic!("root {} broke", 7))
            .join()
            .unwrap_err();
        assert_eq!(panic_message(&payload), "root 7 broke");
        assert_eq!(panic_message(&*payload), "root 7 broke");
        let literal = std::thread::spawn(|| panic!("plain")).join().unwrap_err();
        assert_eq!(panic_message(&literal), "plain");
    }
}
