//! The vmafx filter inside FFmpeg builds of scripts/ffmpeg-build (skipped with a note where a
//! build is missing; `VMAFX_REQUIRE_FFMPEG=1` fails instead): beside libvmaf's filter, the full
//! 8.1 build, the CUDA glue on a fake libcuda, FFmpeg's HIP hwcontext on the fake libamdhip64.
//!
//! Shared helpers: tests/support/ (one module, `crate::support`).
//!
//! - `filter` (was tests/ffmpeg_filter.rs)
//! - `full` (was tests/ffmpeg_full.rs)
//! - `cuda_glue` (was tests/ffmpeg_cuda_glue.rs)
//! - `hip` (was tests/ffmpeg_hip.rs)

#[path = "../support/mod.rs"]
mod support;

mod filter;
mod full;
mod cuda_glue;
mod hip;
