//! strata-storage integration tests: one binary, one module per concern.

mod access_list;
mod api;
mod base;
mod concurrency;
mod crash;
mod damaged;
mod datadir;
mod history;
mod import;
mod interleavings;
mod journal;
mod model;
mod oracle;
mod pre_split;
mod range;
mod refusal;
mod root_stream;
mod sample;
mod stress;
mod vectors;
mod verify;
mod writer;
