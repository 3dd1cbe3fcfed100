//! The lookup of an embedded kernel (src/device/gpu/embedded.rs), on
//! tables made here (no compiler, no GPU): a CUDA device takes the cubin of
//! its exact architecture, else the newest PTX not newer than it, else
//! nothing (a run-time compile); an AMD device the code object of its
//! processor, from a hiprtc of its runtime's ROCm major release; and an entry whose key is not the run-time path's key of the
//! same compile now (built before a kernel edit, or another kernel's code)
//! is never used.

use vmafx::internals::device::gpu::embedded::{self, EmbeddedKernel};
use vmafx::internals::device::gpu::{cache, kernels, nvrtc};

/// An entry for `kernel` (keyed as the run-time path keys it now) whose
/// code names its target, so a test sees which one was picked.
fn entry(kernel: &kernels::KernelSource, target: &'static str, compiler: &'static str) -> EmbeddedKernel {
    let key = embedded::run_time_key(kernel, target, compiler, (13, 0));
    EmbeddedKernel { file: kernel.name, target, compiler, version: (13, 0), key: Box::leak(key.into_boxed_str()), code: target.as_bytes() }
}

/// `entry` for the source as it was before an edit (or with other options).
fn stale(kernel: &kernels::KernelSource, target: &'static str, compiler: &'static str) -> EmbeddedKernel {
    let edited = kernels::KernelSource { source: Box::leak(format!("{}\n// edited", kernel.source).into_boxed_str()), ..*kernel };
    EmbeddedKernel { code: b"stale", ..entry(&edited, target, compiler) }
}

fn picked(table: &[EmbeddedKernel], device: &str) -> Option<&'static [u8]> {
    let hip = device.starts_with("gfx");
    let found = if hip { embedded::pick_hip(table, &kernels::MOTION, device, 13) } else { embedded::pick_cuda(table, &kernels::MOTION, device) };
    found.map(|e| e.code)
}

#[test]
fn the_lookup_takes_the_exact_cubin_then_ptx_the_device_runs_then_nothing() {
    let m = &kernels::MOTION;
    let table = [
        entry(&kernels::PSNR, "sm_90", "nvrtc"),
        entry(m, "sm_80", "nvrtc"),
        entry(m, "sm_90", "nvrtc"),
        entry(m, "compute_80", "nvrtc"),
        entry(m, "compute_100", "nvrtc"),
        entry(m, "gfx90a", "hiprtc"),
    ];
    assert_eq!(picked(&table, "compute_90"), Some(&b"sm_90"[..]));
    assert_eq!(picked(&table, "compute_80"), Some(&b"sm_80"[..]));
    // No cubin of its own: the newest PTX not newer than the device.
    assert_eq!(picked(&table, "compute_86"), Some(&b"compute_80"[..]));
    assert_eq!(picked(&table, "compute_120"), Some(&b"compute_100"[..]));
    // Older than every entry: compiled at run time.
    assert_eq!(picked(&table, "compute_75"), None);
    // AMD: by processor, whatever the feature suffixes.
    assert_eq!(picked(&table, "gfx90a:sramecc+:xnack-"), Some(&b"gfx90a"[..]));
    assert_eq!(picked(&table, "gfx90a"), Some(&b"gfx90a"[..]));
    assert_eq!(picked(&table, "gfx1030"), None);
    // A runtime of another ROCm major release than the build's hiprtc: its
    // own hiprtc compiles (its loader may not take the older code object).
    assert!(embedded::pick_hip(&table, m, "gfx90a", 12).is_none());
    assert!(embedded::pick_hip(&table, m, "gfx90a", 13).is_some());
    assert_eq!(picked(&[], "compute_90"), None);
}

#[test]
fn a_stale_embedded_kernel_is_never_used() {
    let m = &kernels::MOTION;
    // Built before the source was edited: refused, the current one taken.
    let table = [stale(m, "sm_90", "nvrtc"), entry(m, "sm_90", "nvrtc")];
    assert_eq!(picked(&table, "compute_90"), Some(&b"sm_90"[..]));
    for only_stale in [
        vec![stale(m, "sm_90", "nvrtc")],
        vec![stale(m, "compute_90", "nvrtc")],
        vec![stale(m, "gfx90a", "hiprtc")],
        // Another kernel's code under this kernel's name.
        vec![EmbeddedKernel { file: m.name, ..entry(&kernels::PSNR, "sm_90", "nvrtc") }],
    ] {
        for device in ["compute_90", "gfx90a"] {
            assert_eq!(picked(&only_stale, device), None, "{:?} on {device}", only_stale[0]);
        }
    }
    // The entry's key is the run-time path's cache key of the same compile.
    let e = entry(m, "sm_90", "nvrtc");
    assert_eq!(e.key, cache::key(m.source, &[kernels::COMPAT_HEADER], &nvrtc::options("sm_90"), "sm_90", "nvrtc", (13, 0)));
    assert!(e.is_current(m) && !stale(m, "sm_90", "nvrtc").is_current(m));
}
