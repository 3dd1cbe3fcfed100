//! NVRTC, CUDA's run-time compiler, loaded at run time: CUDA 13, 12, then
//! the unversioned name. PyPI's `nvidia-cuda-nvrtc` wheel ships it under
//! `site-packages/nvidia/cu13/lib` (CUDA 13) or `nvidia/cuda_nvrtc/lib`
//! (CUDA 12); point `VMAFX_NVRTC_LIB` at it (scripts/gpu-ci-deps does).

use super::loader::{c_str, fn_table, get_or_load, open_first, Cached};
use crate::{Error, Result};
use std::ffi::{c_char, c_int, c_void, CString};

pub const CANDIDATES: &[&str] = &["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];
pub const ENV: &str = "VMAFX_NVRTC_LIB";

pub type NvrtcResult = c_int;
pub type NvrtcProgram = *mut c_void;

fn_table! {
    /// `libnvrtc.so.*`.
    pub struct Nvrtc;
    required {
        nvrtcVersion: fn(*mut c_int, *mut c_int) -> NvrtcResult;
        nvrtcGetErrorString: fn(NvrtcResult) -> *const c_char;
        nvrtcCreateProgram: fn(*mut NvrtcProgram, *const c_char, *const c_char, c_int, *const *const c_char, *const *const c_char) -> NvrtcResult;
        nvrtcDestroyProgram: fn(*mut NvrtcProgram) -> NvrtcResult;
        nvrtcCompileProgram: fn(NvrtcProgram, c_int, *const *const c_char) -> NvrtcResult;
        nvrtcGetPTXSize: fn(NvrtcProgram, *mut usize) -> NvrtcResult;
        nvrtcGetPTX: fn(NvrtcProgram, *mut c_char) -> NvrtcResult;
        nvrtcGetProgramLogSize: fn(NvrtcProgram, *mut usize) -> NvrtcResult;
        nvrtcGetProgramLog: fn(NvrtcProgram, *mut c_char) -> NvrtcResult;
    }
    optional {
        nvrtcGetCUBINSize: fn(NvrtcProgram, *mut usize) -> NvrtcResult;
        nvrtcGetCUBIN: fn(NvrtcProgram, *mut c_char) -> NvrtcResult;
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
        self.check(
            unsafe { (self.nvrtcVersion)(&mut major, &mut minor) },
            "nvrtcVersion",
        )?;
        Ok((major, minor))
    }

    fn check(&self, code: NvrtcResult, call: &str) -> Result<()> {
        if code == 0 {
            return Ok(());
        }
        // SAFETY: returns a static string for any code.
        let text = unsafe { c_str((self.nvrtcGetErrorString)(code)) };
        Err(Error::Device(format!(
            "{}: {call} failed: {text}",
            self.library
        )))
    }

    /// Compiles `source` (named `name`, with `headers` as (include name,
    /// text)) to PTX for `arch` (`compute_90`); the log is in the error.
    pub fn compile_ptx(
        &self,
        name: &str,
        source: &str,
        headers: &[(&str, &str)],
        arch: &str,
    ) -> Result<Vec<u8>> {
        let cstr = |s: &str| CString::new(s).map_err(|_| Error::invalid("NUL in kernel source"));
        let (c_source, c_name) = (cstr(source)?, cstr(name)?);
        let header_texts = headers
            .iter()
            .map(|h| cstr(h.1))
            .collect::<Result<Vec<_>>>()?;
        let header_names = headers
            .iter()
            .map(|h| cstr(h.0))
            .collect::<Result<Vec<_>>>()?;
        let text_ptrs: Vec<*const c_char> = header_texts.iter().map(|s| s.as_ptr()).collect();
        let name_ptrs: Vec<*const c_char> = header_names.iter().map(|s| s.as_ptr()).collect();
        let options = [
            format!("--gpu-architecture={arch}"),
            "--std=c++17".into(),
            "-default-device".into(),
        ];
        let c_options = options
            .iter()
            .map(|s| cstr(s))
            .collect::<Result<Vec<_>>>()?;
        let option_ptrs: Vec<*const c_char> = c_options.iter().map(|s| s.as_ptr()).collect();

        let mut prog: NvrtcProgram = std::ptr::null_mut();
        // SAFETY: all strings are NUL-terminated and outlive the program;
        // the header arrays have headers.len() entries.
        self.check(
            unsafe {
                (self.nvrtcCreateProgram)(
                    &mut prog,
                    c_source.as_ptr(),
                    c_name.as_ptr(),
                    headers.len() as c_int,
                    text_ptrs.as_ptr(),
                    name_ptrs.as_ptr(),
                )
            },
            "nvrtcCreateProgram",
        )?;
        let out = (|| {
            // SAFETY: prog is live; options outlive the call.
            let compiled = unsafe {
                (self.nvrtcCompileProgram)(prog, option_ptrs.len() as c_int, option_ptrs.as_ptr())
            };
            if compiled != 0 {
                let log = self.log(prog);
                self.check(compiled, "nvrtcCompileProgram")
                    .map_err(|e| match e {
                        Error::Device(s) => {
                            Error::Device(format!("{s} compiling {name} for {arch}:\n{log}"))
                        }
                        other => other,
                    })?;
            }
            let mut size = 0usize;
            // SAFETY: prog compiled; the buffer has the size NVRTC reported.
            self.check(
                unsafe { (self.nvrtcGetPTXSize)(prog, &mut size) },
                "nvrtcGetPTXSize",
            )?;
            let mut ptx = vec![0u8; size];
            self.check(
                unsafe { (self.nvrtcGetPTX)(prog, ptx.as_mut_ptr().cast()) },
                "nvrtcGetPTX",
            )?;
            Ok(ptx)
        })();
        // SAFETY: prog was created above and is destroyed once.
        unsafe { (self.nvrtcDestroyProgram)(&mut prog) };
        out
    }

    fn log(&self, prog: NvrtcProgram) -> String {
        let mut size = 0usize;
        // SAFETY: prog is live; the buffer has the reported size.
        unsafe {
            if (self.nvrtcGetProgramLogSize)(prog, &mut size) != 0 || size == 0 {
                return String::new();
            }
            let mut buf = vec![0u8; size];
            (self.nvrtcGetProgramLog)(prog, buf.as_mut_ptr().cast());
            String::from_utf8_lossy(&buf)
                .trim_end_matches('\0')
                .to_string()
        }
    }
}
