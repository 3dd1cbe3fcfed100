//! The fuzz targets on their committed corpora (its own binary: `corpus` installs a counting
//! global allocator).
//!
//! Shared helpers: tests/support/ (one module, `crate::support`).
//!
//! - `corpus` (was tests/fuzz_corpus.rs)

#[path = "../support/mod.rs"]
mod support;

mod corpus;
