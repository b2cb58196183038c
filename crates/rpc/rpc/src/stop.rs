//! Stopping a call: a flag the server sets when a call passes its time
//! limit (or its client goes away), and an inspector that halts the EVM at
//! its next instruction once the flag is set. A run that was stopped ends
//! as an error ([`stopped_error`]), whatever the halted EVM returned.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use revm::inspector::Inspector;
use revm::interpreter::interpreter_types::InterpreterTypes;
use revm::interpreter::{InstructionResult, Interpreter};

/// A call's stop flag, shared by the server and the call's EVM runs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stop(Arc<AtomicBool>);

impl Stop {
    /// A flag not set.
    pub(crate) fn new() -> Stop {
        Stop::default()
    }

    /// Asks every run of the call to stop.
    pub(crate) fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the call was asked to stop.
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// An inspector that halts the EVM once the flag is set.
    pub(crate) fn halter(&self) -> Halter {
        Halter(self.clone())
    }
}

/// Sets the flag when dropped: held by the future that answers a call, so
/// a client that goes away stops the call's EVM too.
#[derive(Debug)]
pub(crate) struct StopOnDrop(pub(crate) Stop);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.set();
    }
}

/// Halts the EVM at the next instruction of any frame once its [`Stop`] is
/// set (one relaxed load per instruction).
#[derive(Debug, Clone)]
pub(crate) struct Halter(Stop);

impl<CTX, INTR: InterpreterTypes> Inspector<CTX, INTR> for Halter {
    fn step(&mut self, interp: &mut Interpreter<INTR>, _context: &mut CTX) {
        if self.0.is_set() {
            // Any halt ends the frame; its callers halt at their next
            // instruction, and the run's result is replaced by the stop.
            interp.halt(InstructionResult::OutOfGas);
        }
    }
}

/// The message of a run that was stopped.
pub(crate) fn stopped_error() -> String {
    "stopped: the call passed its time limit".to_owned()
}
