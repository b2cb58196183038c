//! Benchmark placeholder until its issue lands.

fn main() {}
