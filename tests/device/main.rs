//! GPU lanes: the kernels and engine on the kernel emulator (anywhere), the loaders and kernel
//! compilers, and on a GPU host (`VMAFX_REQUIRE_GPU`) the twins, contexts, device functions and
//! imports against the CPU lane (skipped, with a note, where no GPU is).
//!
//! Shared helpers: tests/support/ (one module, `crate::support`).
//!
//! - `gpu_context` (was tests/device_context.rs)
//! - `emu` (was tests/device_emu.rs)
//! - `emu_context` (was tests/device_emu_context.rs)
//! - `fns` (was tests/device_fns.rs)
//! - `import` (was tests/device_import.rs)
//! - `loaders` (was tests/device_loaders.rs)
//! - `twins` (was tests/device_twins.rs)
//! - `kernels_compile` (was tests/kernels_compile.rs)
//! - `hip_frames` (was tests/hip_frames.rs)
//! - `kernels_ahead`: the embedded kernels against their compilers
//! - `embedded_lookup`: which embedded kernel a device takes
//! - `cold_start`: a GPU context's start-up with the kernels built ahead

#[path = "../support/mod.rs"]
mod support;

mod gpu_context;
mod emu;
mod emu_context;
mod fns;
mod import;
mod loaders;
mod twins;
mod kernels_compile;
mod hip_frames;
mod cold_start;
mod embedded_lookup;
mod kernels_ahead;
