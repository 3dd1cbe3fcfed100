//! The one support module of the test chapters (each `tests/CHAPTER/main.rs`
//! declares it as `#[path = "../support/mod.rs"] mod support;`): the
//! libvmaf reference, clips, and the beds the device, import and FFmpeg
//! tests run on. A chapter uses only part of it, hence `dead_code` allowed.
#![allow(dead_code)]

/// The lossy golden clips, made with ffmpeg (x264/x265) and cached.
pub mod clips;
/// Contexts scored on the CPU and on a device, compared value by value.
pub mod contexts;
/// The SIMD levels a checkasm test can run on this CPU.
pub mod cpu;
/// Device planes and DRM layouts for the device tests, `VMAFX_REQUIRE_GPU`.
pub mod device_planes;
/// The kernel emulator (kernels/ as host C++) as a device backend.
pub mod emulator;
/// The FFmpeg builds of scripts/ffmpeg-build and the system's ffmpeg.
pub mod ffmpeg;
/// The filter's C interface driven as FFmpeg's glue drives it.
pub mod filter_capi;
/// The fake `libamdhip64` built and loaded for a test.
pub mod hip_fake;
/// Logs compared with libvmaf's, the version and fps lines masked.
pub mod logs;
/// A log cut short, checked against the frames it must keep.
pub mod partial_log;
/// libvmaf 3.2.0 through vmaf-head-sys, always on its C code.
pub mod reference;
/// Filters for a test binary running its own tests again.
pub mod rerun;
/// Synthetic clips and y4m files.
pub mod synth;
/// The dma-buf VM bed (scripts/dmabuf-vm) and vgem/udmabuf producers.
pub mod vm_bed;
