//! The GPU lanes: CUDA and HIP runtimes and their run-time compilers, all
//! opened with `dlopen` when first used, so the crate builds and runs
//! without either toolkit. Layout follows cudarc (sys types and function
//! tables, result wrappers, safe guards) and FFmpeg's ffnvcodec loader
//! (exact SONAMEs, required vs optional symbols, errors instead of aborts).
//! See docs/gpu.md.

pub(crate) mod loader;

pub mod cache;
pub mod compile;
pub mod cuda;
pub mod hip;
pub mod kernels;
pub mod nvrtc;
