//! Fuzz target for `StateDb` operation sequences
//! (`strata_fuzz::state_ops`): blocks of writes and deletions, compactions,
//! unwinds, reopens, power cuts and injected I/O failures, checked after
//! every step against an in-memory model and its HashBuilder root.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strata_fuzz::state_ops::run(data);
});
