//! Integration tests of strata-commitment (one binary, one module per topic).

mod bulk;
mod common;
mod differential;
mod encoding;
mod proof;
mod reads;
mod rehash;
mod vectors;
