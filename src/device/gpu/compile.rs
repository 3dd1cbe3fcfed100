//! Kernel compilation for either vendor, through the disk cache.

use std::ffi::{c_char, c_int, c_void, CString};

use super::{cache, hip, kernels::KernelSource, kernels::COMPAT_HEADER, nvrtc};
use crate::{Error, Result};

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

/// An AMD code object for `arch` (`gfx90a`), cached.
pub fn hip_code_object(kernel: &KernelSource, arch: &str) -> Result<Vec<u8>> {
    let compiler = hip::hiprtc()?;
    let version = compiler.version()?;
    // Checked before the cache too: a refused target never compiles.
    hip::check_target(arch, version)?;
    let headers = [COMPAT_HEADER];
    let key = cache::key(
        kernel.source,
        &headers,
        &hip::options(arch),
        arch,
        "hiprtc",
        version,
    );
    cache::get_or_compile(&key, || {
        compiler.compile(kernel.name, kernel.source, &headers, arch)
    })
}

/// One vendor's run-time compiler: NVRTC and hiprtc share one API shape
/// (a program handle; create, compile, code size, code, log, destroy), so
/// one function drives both and the vendors differ only in this table.
pub struct RtcCalls {
    /// Prefix of the C names, for errors ("nvrtc", "hiprtc").
    pub prefix: &'static str,
    pub create: unsafe extern "C" fn(
        *mut *mut c_void,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> c_int,
    pub destroy: unsafe extern "C" fn(*mut *mut c_void) -> c_int,
    pub compile: unsafe extern "C" fn(*mut c_void, c_int, *const *const c_char) -> c_int,
    pub code_size: unsafe extern "C" fn(*mut c_void, *mut usize) -> c_int,
    pub code: unsafe extern "C" fn(*mut c_void, *mut c_char) -> c_int,
    pub log_size: unsafe extern "C" fn(*mut c_void, *mut usize) -> c_int,
    pub log: unsafe extern "C" fn(*mut c_void, *mut c_char) -> c_int,
}

/// Compiles `source` (named `name`, with `headers` as (include name,
/// text)) with `options`; a failed compile's error carries the log.
/// `check` turns a result code into the vendor's error.
pub fn run_rtc(
    calls: &RtcCalls,
    check: &dyn Fn(c_int, &str) -> Result<()>,
    name: &str,
    source: &str,
    headers: &[(&str, &str)],
    options: &[String],
    arch: &str,
) -> Result<Vec<u8>> {
    let cstr =
        |s: &str| CString::new(s).map_err(|_| Error::invalid("NUL in kernel source or option"));
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
    let c_options = options
        .iter()
        .map(|s| cstr(s))
        .collect::<Result<Vec<_>>>()?;
    let option_ptrs: Vec<*const c_char> = c_options.iter().map(|s| s.as_ptr()).collect();
    let call = |what: &str| format!("{}{what}", calls.prefix);

    let mut prog: *mut c_void = std::ptr::null_mut();
    // SAFETY: every string is NUL-terminated and outlives the program; the
    // header arrays have headers.len() entries.
    check(
        unsafe {
            (calls.create)(
                &mut prog,
                c_source.as_ptr(),
                c_name.as_ptr(),
                headers.len() as c_int,
                text_ptrs.as_ptr(),
                name_ptrs.as_ptr(),
            )
        },
        &call("CreateProgram"),
    )?;
    let out = (|| {
        // SAFETY: prog is live; the options outlive the call.
        let compiled =
            unsafe { (calls.compile)(prog, option_ptrs.len() as c_int, option_ptrs.as_ptr()) };
        if compiled != 0 {
            let log = program_log(calls, prog);
            check(compiled, &call("CompileProgram")).map_err(|e| match e {
                Error::Device(s) => {
                    Error::Device(format!("{s} compiling {name} for {arch}:\n{log}"))
                }
                other => other,
            })?;
        }
        let mut size = 0usize;
        // SAFETY: prog compiled; the buffer has the size the compiler reported.
        check(
            unsafe { (calls.code_size)(prog, &mut size) },
            &call("GetCodeSize"),
        )?;
        let mut code = vec![0u8; size];
        check(
            unsafe { (calls.code)(prog, code.as_mut_ptr().cast()) },
            &call("GetCode"),
        )?;
        Ok(code)
    })();
    // SAFETY: prog was created above and is destroyed once.
    unsafe { (calls.destroy)(&mut prog) };
    out
}

fn program_log(calls: &RtcCalls, prog: *mut c_void) -> String {
    let mut size = 0usize;
    // SAFETY: prog is live; the buffer has the reported size.
    unsafe {
        if (calls.log_size)(prog, &mut size) != 0 || size == 0 {
            return String::new();
        }
        let mut buf = vec![0u8; size];
        (calls.log)(prog, buf.as_mut_ptr().cast());
        String::from_utf8_lossy(&buf)
            .trim_end_matches('\0')
            .to_string()
    }
}
