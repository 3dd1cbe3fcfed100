//! vmafx: VMAF and its companion metrics, bit-exact with libvmaf 3.2.0.
//!
//! Data flows one way through the rooms of this crate:
//!
//! ```text
//! picture (plane views) → feature (extractors, registry) → engine (frames in flight)
//!        → score (collector, pooling, logs) ← model (libvmaf JSON models, SVM)
//! ```
//!
//! # The API
//! Everything an application needs is re-exported here, at the crate root:
//! a [`Context`] (configured by a [`ContextConfig`], placed by a
//! [`DeviceChoice`]) takes [`Model`]s and features by name
//! ([`FeatureOptions`]), scores [`Picture`]s (or any [`PictureSource`]) pushed
//! in order, and hands back per-frame scores ([`FeatureCollector`]), pooled
//! ones ([`PoolMethod`]) and logs in libvmaf's formats ([`LogFormat`],
//! [`LogStream`]). [`io`] reads y4m and raw yuv files (and, with feature
//! `decode`, anything FFmpeg decodes). Errors are one [`Error`] that says
//! what and why. The CLI (`src/bin/vmafx.rs`) and the Python module are
//! built on these.
//!
//! # Cargo features
//! - `cli` (default): the `vmafx` binary and its option parsers (clap).
//! - `capi` (default): the C interface of `include/vmafx.h` that FFmpeg's
//!   `vmafx` filter links (`--no-default-features --features capi` for the
//!   staticlib, without clap).
//! - `decode`: any input FFmpeg's libavformat/libavcodec decode.
//!
//! # The other modules
//! The modules marked `#[doc(hidden)]` below are the crate's rooms
//! (docs/architecture.md). They stay `pub` only because the integration
//! tests, the benchmarks, the fuzz targets and the Python module check
//! their pieces against libvmaf one by one (an extractor, a kernel, an
//! importer); they are not a stable interface and are left out of the
//! documentation.

// Cargo.toml's [lints] only warns (two FFmpeg tests are not there yet);
// the library itself allows no bare unsafe operation in an unsafe fn.
#![deny(unsafe_op_in_unsafe_fn)]

#[doc(hidden)]
pub mod avfilter;
mod cfmt;
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;
#[doc(hidden)]
pub mod device;
#[doc(hidden)]
pub mod engine;
mod error;
// The SIMD kernels (feature/*/avx2.rs, avx512.rs) still do bare unsafe
// operations inside their `unsafe fn`s (docs/architecture.md, "Unsafe
// code"): the last room the deny below does not reach yet.
#[allow(unsafe_op_in_unsafe_fn)]
#[doc(hidden)]
pub mod feature;
#[cfg(all(feature = "cli", feature = "capi"))]
#[doc(hidden)]
pub mod fuzz;
#[doc(hidden)]
pub mod import;
pub mod io;
#[doc(hidden)]
pub mod model;
#[doc(hidden)]
pub mod picture;
#[doc(hidden)]
pub mod score;
#[doc(hidden)]
pub mod simd;

pub use device::DeviceKind;
pub use engine::{CallerStream, Context, ContextConfig, DeviceChoice, GpuVendor, HipCallerStream};
pub use picture::PictureSource;
pub use error::{Error, Result};
pub use feature::FeatureOptions;
pub use model::{FeatureOverload, LoadFlags, Model, ModelConfig};
pub use picture::{Chroma, OwnedPicture, Picture, PixelFormat, PlaneView};
pub use score::log::{LogFormat, LogStream};
pub use score::plot::PlotSpec;
pub use score::{FeatureCollector, PoolMethod};
pub use simd::CpuLevel;

/// The libvmaf release whose numbers vmafx reproduces.
pub const REFERENCE_LIBVMAF_VERSION: &str = "3.2.0";
