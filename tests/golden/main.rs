//! Golden tests: vmafx against libvmaf 3.2.0 (vmaf-head-sys, its C code), every per-frame
//! feature, score and pooled value compared as f64 bits, and the logs byte for byte.
//!
//! Shared helpers: tests/support/ (one module, `crate::support`).
//!
//! - `adm` (was tests/adm_golden.rs)
//! - `bootstrap` (was tests/bootstrap_golden.rs)
//! - `cambi` (was tests/cambi_golden.rs)
//! - `ciede` (was tests/ciede_golden.rs)
//! - `float` (was tests/float_golden.rs)
//! - `float_models` (was tests/float_models_golden.rs)
//! - `vmaf` (was tests/golden.rs)
//! - `log_order` (was tests/log_order_golden.rs)
//! - `model` (was tests/model_golden.rs)
//! - `motion` (was tests/motion_golden.rs)
//! - `overload` (was tests/overload_golden.rs)
//! - `psnr` (was tests/psnr_golden.rs)
//! - `psnr_hvs` (was tests/psnr_hvs_golden.rs)
//! - `speed` (was tests/speed_golden.rs)
//! - `ssim` (was tests/ssim_golden.rs)
//! - `v1016` (was tests/v1016_golden.rs)
//! - `vif` (was tests/vif_golden.rs)
//! - `libvmaf_simd` (was tests/libvmaf_simd.rs)
//! - `log_format` (was tests/log_format.rs)
//! - `segments` (was tests/segments.rs)

#[path = "../support/mod.rs"]
mod support;

mod adm;
mod bootstrap;
mod cambi;
mod ciede;
mod float;
mod float_models;
mod vmaf;
mod log_order;
mod model;
mod motion;
mod overload;
mod psnr;
mod psnr_hvs;
mod speed;
mod ssim;
mod v1016;
mod vif;
mod libvmaf_simd;
mod log_format;
mod segments;
