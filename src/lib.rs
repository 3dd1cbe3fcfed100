//! vmafx: VMAF and its companion metrics, bit-exact with libvmaf 3.2.0.
//!
//! Data flows one way through the rooms of this crate:
//!
//! ```text
//! picture (plane views) → feature (extractors, registry) → engine (frames in flight)
//!        → score (collector, pooling, logs) ← model (libvmaf JSON models, SVM)
//! ```
//!
//! The entry point for applications is [`engine::Context`]; the CLI in
//! `src/bin/vmafx.rs` uses only the public API.

pub mod avfilter;
pub mod cfmt;
#[cfg(feature = "cli")]
pub mod cli;
pub mod device;
pub mod engine;
pub mod error;
pub mod feature;
#[cfg(all(feature = "cli", feature = "capi"))]
#[doc(hidden)]
pub mod fuzz;
pub mod import;
pub mod io;
pub mod model;
pub mod picture;
pub mod score;
pub mod simd;

pub use error::{Error, Result};

/// The libvmaf release whose numbers vmafx reproduces.
pub const REFERENCE_LIBVMAF_VERSION: &str = "3.2.0";
