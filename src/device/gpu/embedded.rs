//! Kernels compiled at build time (build.rs) and embedded in the library,
//! so a first run loads code instead of compiling it: per kernel source,
//! CUDA cubins for each architecture of [`kernel_key::CUDA_CUBIN_TARGETS`]
//! the build's NVRTC supports, PTX for the newest virtual architecture it
//! supports, and AMD code objects for [`kernel_key::HIP_TARGETS`].
//!
//! An entry is used only when its key is the one the run-time path would
//! give the same compile now (same source, compat header, options and
//! target, [`kernel_key::key`]): a kernel edited after the build, or options
//! changed, never run stale code; they fall through to the run-time compile.
//! `VMAFX_EMBEDDED_KERNELS=off` skips the embedded set (to measure, or to
//! rule it out).

use super::kernel_key;
use super::kernels::{KernelSource, COMPAT_HEADER};

/// One compiled kernel source for one target.
#[derive(Debug, Clone, Copy)]
pub struct EmbeddedKernel {
    /// The source's name (`motion.cu`, [`KernelSource::name`]).
    pub file: &'static str,
    /// `sm_90` (a cubin), `compute_120` (PTX) or `gfx90a` (a code object).
    pub target: &'static str,
    /// `nvrtc` or `hiprtc`, and its version, as the build found them.
    pub compiler: &'static str,
    pub version: (i32, i32),
    /// [`kernel_key::key`] of the compile.
    pub key: &'static str,
    pub code: &'static [u8],
}

include!(concat!(env!("OUT_DIR"), "/embedded_kernels.rs"));

impl EmbeddedKernel {
    /// Whether this entry is `kernel` as the run-time path would compile it
    /// now for the entry's target with the entry's compiler.
    pub fn is_current(&self, kernel: &KernelSource) -> bool {
        self.file == kernel.name && self.key == run_time_key(kernel, self.target, self.compiler, self.version)
    }
}

/// The key the run-time path gives `kernel` compiled for `target` by
/// `compiler` `version` (its cache key).
pub fn run_time_key(kernel: &KernelSource, target: &str, compiler: &str, version: (i32, i32)) -> String {
    let options = if compiler == "hiprtc" { kernel_key::hiprtc_options(target) } else { kernel_key::nvrtc_options(target) };
    kernel_key::key(kernel.source, &[COMPAT_HEADER], &options, target, compiler, version)
}

/// The number in `compute_90` or `sm_120`.
fn cuda_arch_number(arch: &str) -> Option<u32> {
    arch.strip_prefix("compute_").or_else(|| arch.strip_prefix("sm_"))?.parse().ok()
}

/// The entry of `table` for `kernel` on a CUDA device of `device_arch`
/// (`compute_90`): its exact cubin (`sm_90`), else the newest PTX of a
/// virtual architecture the device runs (not newer than it); only current
/// entries ([`EmbeddedKernel::is_current`]). `None`: compile at run time.
pub fn pick_cuda<'a>(table: &'a [EmbeddedKernel], kernel: &KernelSource, device_arch: &str) -> Option<&'a EmbeddedKernel> {
    let device = cuda_arch_number(device_arch)?;
    let current = || table.iter().filter(|e| e.compiler == "nvrtc" && e.is_current(kernel));
    let cubin = current().find(|e| e.target.starts_with("sm_") && cuda_arch_number(e.target) == Some(device));
    cubin.or_else(|| {
        current()
            .filter(|e| e.target.starts_with("compute_") && cuda_arch_number(e.target).is_some_and(|n| n <= device))
            .max_by_key(|e| cuda_arch_number(e.target))
    })
}

/// The entry of `table` for `kernel` on an AMD device of `device_arch`
/// (`gfx90a:sramecc+:xnack-`) under a runtime of ROCm `rocm_major`: the
/// code object of its processor (built with no feature suffix, so it runs
/// with either setting), if current and built by a hiprtc of the same ROCm
/// major release — ROCm's releases change the code object versions their
/// loaders accept, and a build's hiprtc is often older than the host's
/// runtime; otherwise the host's own hiprtc compiles it.
pub fn pick_hip<'a>(table: &'a [EmbeddedKernel], kernel: &KernelSource, device_arch: &str, rocm_major: i32) -> Option<&'a EmbeddedKernel> {
    let processor = device_arch.split(':').next()?;
    table
        .iter()
        .find(|e| e.compiler == "hiprtc" && e.target == processor && e.version.0 == rocm_major && e.is_current(kernel))
}

/// How many images this process took from the embedded set (tests: a
/// first frame compiled nothing).
static SERVED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

pub fn served() -> usize {
    SERVED.load(std::sync::atomic::Ordering::Relaxed)
}

fn count_served(code: Vec<u8>) -> Vec<u8> {
    SERVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    code
}

fn enabled() -> bool {
    std::env::var("VMAFX_EMBEDDED_KERNELS").map_or(true, |v| v != "off")
}

/// The embedded image for a CUDA device of `device_arch` whose driver is
/// `driver_version` (`cuDriverGetVersion`: 13000 for 13.0): code of an NVRTC
/// no newer than the driver (newer PTX would not load), NUL-terminated PTX.
pub(crate) fn cuda(kernel: &KernelSource, device_arch: &str, driver_version: i32) -> Option<Vec<u8>> {
    let entry = pick_cuda(EMBEDDED, kernel, device_arch).filter(|_| enabled())?;
    if entry.version.0 * 1000 + entry.version.1 * 10 > driver_version {
        return None;
    }
    let mut code = entry.code.to_vec();
    if entry.target.starts_with("compute_") && code.last() != Some(&0) {
        code.push(0);
    }
    Some(count_served(code))
}

/// The embedded code object for an AMD device of `device_arch` whose
/// runtime is ROCm `rocm` (major, minor); see [`pick_hip`].
pub(crate) fn hip(kernel: &KernelSource, device_arch: &str, rocm: (i32, i32)) -> Option<Vec<u8>> {
    pick_hip(EMBEDDED, kernel, device_arch, rocm.0).filter(|_| enabled()).map(|e| count_served(e.code.to_vec()))
}
