//! The checks behind the cargo-fuzz targets, one module per parser of
//! untrusted input. Each module is also compiled into a stable property
//! test (`#[path]` include) that drives the same functions with seeded
//! random, mutated and grammar-shaped inputs in CI; the fuzz targets in
//! `fuzz_targets/` are one-line wrappers.

pub mod bpf_text;
pub mod captures;
pub mod dynamic;
pub mod foreign_cbpf;
pub mod input;
pub mod pipeline;
pub mod updates;
