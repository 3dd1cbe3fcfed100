//! libvmaf's float ADM divides by `n * rcp_s(d)`: the CPU's approximate
//! reciprocal (`rcpss`) refined by one Newton step. The approximation is
//! the CPU's own (Intel and AMD differ), so vmafx issues the same
//! instruction to give the bits libvmaf gives on the same machine.

/// libvmaf's `DIVS(n, d)` (built with SSE2, as every x86-64 build is):
/// `n * rcp_s(d)`, `rcp_s(x) = xi + xi * (1 - x * xi)`, `xi = rcpss(x)`,
/// in float.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(super) fn divs(n: f32, d: f32) -> f32 {
    use std::arch::x86_64::{_mm_cvtss_f32, _mm_rcp_ss, _mm_set_ss};
    // SAFETY: SSE is part of the x86-64 baseline, so these intrinsics run
    // on every CPU this code is built for; they touch no memory.
    let xi = unsafe { _mm_cvtss_f32(_mm_rcp_ss(_mm_set_ss(d))) };
    n * (xi + xi * (1.0 - d * xi))
}

/// Without SSE2 libvmaf's `DIVS` is a plain division.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
pub fn divs(n: f32, d: f32) -> f32 {
    n / d
}
