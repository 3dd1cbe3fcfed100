//! checkasm: every SIMD kernel against its scalar twin, as bits, at every level this CPU runs
//! (scripts/test runs this chapter again on an emulated CPU without AVX-512).
//!
//! Shared helpers: tests/support/ (one module, `crate::support`).
//!
//! - `adm` (was tests/checkasm_adm.rs)
//! - `cambi` (the c-value pass)
//! - `motion` (was tests/checkasm_motion.rs)
//! - `speed` (the anti-alias blur of only the samples kept)
//! - `vif` (was tests/checkasm_vif.rs)
//! - `timing`: helpers of the ignored timing tests (1080p frames, thread CPU time,
//!   libvmaf's extractors on this thread, every variant timed frame by frame in turn)

#[path = "../support/mod.rs"]
mod support;

mod adm;
mod cambi;
mod motion;
mod speed;
mod timing;
mod vif;
