//! Kernel compilation for either vendor, through the disk cache.

use super::{cache, hip, kernels::KernelSource, kernels::COMPAT_HEADER, nvrtc};
use crate::Result;

/// PTX for a CUDA virtual architecture (`compute_90`), cached.
pub fn cuda_ptx(kernel: &KernelSource, arch: &str) -> Result<Vec<u8>> {
    let compiler = nvrtc::nvrtc()?;
    let headers = [COMPAT_HEADER];
    let key = cache::key(kernel.source, &headers, arch, "nvrtc", compiler.version()?);
    cache::get_or_compile(&key, || {
        compiler.compile_ptx(kernel.name, kernel.source, &headers, arch)
    })
}

/// An AMD code object for `arch` (`gfx90a`), cached.
pub fn hip_code_object(kernel: &KernelSource, arch: &str) -> Result<Vec<u8>> {
    let compiler = hip::hiprtc()?;
    let version = compiler.version()?;
    // Checked before the cache too: a refused target never compiles.
    hip::check_offload_arch(arch, version)?;
    let headers = [COMPAT_HEADER];
    let key = cache::key(kernel.source, &headers, arch, "hiprtc", version);
    cache::get_or_compile(&key, || {
        compiler.compile(kernel.name, kernel.source, &headers, arch)
    })
}
