//! Encoded inputs through the system's FFmpeg libraries (cargo feature `decode`).
//!
//! Shared helpers: tests/support/ (one module, `crate::support`).
//!
//! - `inputs` (was tests/decode.rs)
//! - `seek` (was tests/decode_seek.rs)

#[path = "../support/mod.rs"]
mod support;

mod inputs;
mod seek;
