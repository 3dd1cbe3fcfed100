//! The `vmafx` program and its inputs: end to end against libvmaf, the plot, the faults a farm
//! meets, and the y4m/yuv readers (scripts/test runs `end_to_end::` again without AVX-512).
//!
//! Shared helpers: tests/support/ (one module, `crate::support`).
//!
//! - `end_to_end` (was tests/cli.rs)
//! - `plot` (was tests/plot.rs)
//! - `faults` (was tests/faults.rs)
//! - `io_y4m` (was tests/io_y4m.rs)

#[path = "../support/mod.rs"]
mod support;

mod end_to_end;
mod plot;
mod faults;
mod io_y4m;
