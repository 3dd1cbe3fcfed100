//! NVRTC, CUDA's run-time compiler, loaded at run time: CUDA 13, 12, then
//! the unversioned name. PyPI's `nvidia-cuda-nvrtc` wheel ships it under
//! `site-packages/nvidia/cu13/lib` (CUDA 13) or `nvidia/cuda_nvrtc/lib`
//! (CUDA 12); point `VMAFX_NVRTC_LIB` at it (scripts/gpu-ci-deps does).

use super::loader::{get_or_load, open_first, Cached};
use super::rtc::{rtc_table, Program};
use crate::Result;
use std::ffi::{c_char, c_int};

pub(crate) const CANDIDATES: &[&str] = &["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];
pub const ENV: &str = "VMAFX_NVRTC_LIB";

rtc_table! {
    /// `libnvrtc.so.*`.
    pub struct Nvrtc = "nvrtc";
    calls(nvrtcGetErrorString, nvrtcCreateProgram, nvrtcDestroyProgram, nvrtcCompileProgram,
          nvrtcGetPTXSize, nvrtcGetPTX, nvrtcGetProgramLogSize, nvrtcGetProgramLog);
    // PTX for a virtual architecture (`compute_90`).
    compile compile_ptx(options);
    required {
        nvrtcVersion: fn(*mut c_int, *mut c_int) -> c_int;
    }
    optional {
        nvrtcGetCUBINSize: fn(Program, *mut usize) -> c_int;
        nvrtcGetCUBIN: fn(Program, *mut c_char) -> c_int;
        nvrtcGetNumSupportedArchs: fn(*mut c_int) -> c_int;
        nvrtcGetSupportedArchs: fn(*mut c_int) -> c_int;
    }
}

static NVRTC: Cached<Nvrtc> = Cached::new();

pub fn nvrtc() -> Result<&'static Nvrtc> {
    get_or_load(&NVRTC, || {
        let (lib, name) = open_first("NVRTC", ENV, CANDIDATES)?;
        preload_builtins_beside(&name);
        // SAFETY: libnvrtc exports these with nvrtc.h's signatures.
        unsafe { Nvrtc::resolve(lib, name) }
    })
}

/// NVRTC `dlopen`s `libnvrtc-builtins.so.<major>.<minor>` by bare name when
/// it compiles; a wheel's lib directory is not on the search path, so load
/// the builtins from beside an NVRTC opened by path first (the loader then
/// matches the name to the library already mapped). Kept for the process.
fn preload_builtins_beside(nvrtc_path: &str) {
    let Some(dir) = std::path::Path::new(nvrtc_path)
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("libnvrtc-builtins.so") {
            // SAFETY: NVRTC's own companion library; its initialisers take
            // no arguments.
            if let Ok(lib) = unsafe { libloading::Library::new(entry.path()) } {
                std::mem::forget(lib);
            }
        }
    }
}

impl Nvrtc {
    /// (major, minor) of the compiler, part of the kernel cache key.
    pub fn version(&self) -> Result<(i32, i32)> {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: writes two ints.
        self.calls().check(unsafe { (self.nvrtcVersion)(&mut major, &mut minor) }, "nvrtcVersion")?;
        Ok((major, minor))
    }

    /// The architectures this NVRTC compiles for (`[75, 80, .., 120]`);
    /// empty where it cannot say (before CUDA 11.2).
    pub fn supported_archs(&self) -> Result<Vec<i32>> {
        let (Some(count), Some(list)) = (self.nvrtcGetNumSupportedArchs, self.nvrtcGetSupportedArchs) else {
            return Ok(Vec::new());
        };
        let mut n = 0;
        // SAFETY: writes one int.
        self.calls().check(unsafe { count(&mut n) }, "nvrtcGetNumSupportedArchs")?;
        let mut archs = vec![0; n.max(0) as usize];
        // SAFETY: the array has the count NVRTC gave.
        self.calls().check(unsafe { list(archs.as_mut_ptr()) }, "nvrtcGetSupportedArchs")?;
        Ok(archs)
    }

    /// Compiles `source` to a cubin for `arch` (`sm_90`), as build.rs does
    /// for the embedded kernels; needs NVRTC's cubin calls (CUDA 11.1 on).
    pub fn compile_cubin(
        &self,
        name: &str,
        source: &str,
        headers: &[(&str, &str)],
        arch: &str,
    ) -> Result<Vec<u8>> {
        let missing = || crate::Error::Device(format!("{}: no nvrtcGetCUBIN", self.library));
        let calls = super::rtc::RtcCalls {
            code_size: self.nvrtcGetCUBINSize.ok_or_else(missing)?,
            code: self.nvrtcGetCUBIN.ok_or_else(missing)?,
            ..self.calls()
        };
        calls.compile(name, source, headers, &options(arch), arch)
    }
}

/// NVRTC's options for `arch`; part of the cache key (kernel_key.rs,
/// shared with build.rs).
pub fn options(arch: &str) -> Vec<String> {
    super::kernel_key::nvrtc_options(arch)
}
