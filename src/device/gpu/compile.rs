//! Kernel compilation for either vendor, through the disk cache. The
//! compilers' shared table is the leaf [`super::rtc`]; hip.rs compiles its
//! own code objects (the HIP table names it), re-exported here.

use super::{cache, kernels::KernelSource, kernels::COMPAT_HEADER, nvrtc};
use crate::Result;

pub use super::hip::hip_code_object;

/// PTX for a CUDA virtual architecture (`compute_90`), cached.
pub fn cuda_ptx(kernel: &KernelSource, arch: &str) -> Result<Vec<u8>> {
    let compiler = nvrtc::nvrtc()?;
    let headers = [COMPAT_HEADER];
    let key = cache::key(
        kernel.source,
        &headers,
        &nvrtc::options(arch),
        arch,
        "nvrtc",
        compiler.version()?,
    );
    cache::get_or_compile(&key, || {
        compiler.compile_ptx(kernel.name, kernel.source, &headers, arch)
    })
}
