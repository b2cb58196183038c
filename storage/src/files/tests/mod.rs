//! Tests across the file modules.
