//! The run-time compilers' one API shape: NVRTC and hiprtc both have a
//! program handle (create, compile, code size, code, log, destroy), an
//! error-string call and a version call, so one [`RtcCalls`] table per
//! vendor (filled in nvrtc.rs and hip.rs) drives both. A leaf: it uses
//! nothing of the lanes, so the compilers depend on it and not on each
//! other or on compile.rs.

use std::ffi::{c_char, c_int, c_void, CString};

use super::loader::c_str;
use crate::{Error, Result};

/// One vendor's run-time compiler, as loaded: the only per-vendor part.
pub(crate) struct RtcCalls<'a> {
    /// The library, for errors.
    pub library: &'a str,
    /// Prefix of the C names, for errors ("nvrtc", "hiprtc").
    pub prefix: &'static str,
    pub error_string: unsafe extern "C" fn(c_int) -> *const c_char,
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

/// A run-time compiler's symbol table (`fn_table!`) with its [`RtcCalls`]
/// (`calls()`): the eight calls every compiler has, in one C shape, named
/// as the vendor names them, then the vendor's own symbols. The shape is
/// written once, here; nvrtc.rs and hip.rs give only names.
macro_rules! rtc_table {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident = $prefix:literal;
        calls($es:ident, $create:ident, $destroy:ident, $compile:ident,
              $code_size:ident, $code:ident, $log_size:ident, $log:ident);
        compile $compile_method:ident($options:ident $(, $check:ident)?);
        required { $( $rf:ident : fn($($rt:ty),* $(,)?) -> $rr:ty; )* }
        optional { $( $of:ident : fn($($ot:ty),* $(,)?) -> $or:ty; )* }
    ) => {
        $crate::device::gpu::loader::fn_table! {
            $(#[$meta])*
            $vis struct $name;
            required {
                $es: fn(std::ffi::c_int) -> *const std::ffi::c_char;
                $create: fn(
                    *mut $crate::device::gpu::rtc::Program,
                    *const std::ffi::c_char,
                    *const std::ffi::c_char,
                    std::ffi::c_int,
                    *const *const std::ffi::c_char,
                    *const *const std::ffi::c_char,
                ) -> std::ffi::c_int;
                $destroy: fn(*mut $crate::device::gpu::rtc::Program) -> std::ffi::c_int;
                $compile: fn($crate::device::gpu::rtc::Program, std::ffi::c_int, *const *const std::ffi::c_char) -> std::ffi::c_int;
                $code_size: fn($crate::device::gpu::rtc::Program, *mut usize) -> std::ffi::c_int;
                $code: fn($crate::device::gpu::rtc::Program, *mut std::ffi::c_char) -> std::ffi::c_int;
                $log_size: fn($crate::device::gpu::rtc::Program, *mut usize) -> std::ffi::c_int;
                $log: fn($crate::device::gpu::rtc::Program, *mut std::ffi::c_char) -> std::ffi::c_int;
                $( $rf: fn($($rt),*) -> $rr; )*
            }
            optional { $( $of: fn($($ot),*) -> $or; )* }
        }

        impl $name {
            /// Compiles `source` (named `name`, with `headers` as (include
            /// name, text)) for `arch` with this compiler's options; a
            /// failed compile's error carries the log.
            pub fn $compile_method(&self, name: &str, source: &str, headers: &[(&str, &str)], arch: &str) -> $crate::Result<Vec<u8>> {
                $( $check(self, arch)?; )?
                self.calls().compile(name, source, headers, &$options(arch), arch)
            }

            /// This compiler as the compilers' shared table.
            fn calls(&self) -> $crate::device::gpu::rtc::RtcCalls<'_> {
                $crate::device::gpu::rtc::RtcCalls {
                    library: &self.library,
                    prefix: $prefix,
                    error_string: self.$es,
                    create: self.$create,
                    destroy: self.$destroy,
                    compile: self.$compile,
                    code_size: self.$code_size,
                    code: self.$code,
                    log_size: self.$log_size,
                    log: self.$log,
                }
            }
        }
    };
}
pub(crate) use rtc_table;

/// A compiler's program handle (`nvrtcProgram` / `hiprtcProgram`).
pub(crate) type Program = *mut c_void;

impl RtcCalls<'_> {
    /// `code` of C call `call` as a result: the compiler's own text for an
    /// error.
    pub(crate) fn check(&self, code: c_int, call: &str) -> Result<()> {
        if code == 0 {
            return Ok(());
        }
        // SAFETY: both compilers return a static string for any code.
        let text = unsafe { c_str((self.error_string)(code)) };
        Err(Error::Device(format!("{}: {call} failed: {text}", self.library)))
    }

    /// Compiles `source` (named `name`, with `headers` as (include name,
    /// text)) with `options` for `arch`; a failed compile's error carries
    /// the log.
    pub(crate) fn compile(&self, name: &str, source: &str, headers: &[(&str, &str)], options: &[String], arch: &str) -> Result<Vec<u8>> {
        compile(self, name, source, headers, options, arch)
    }
}

fn compile(
    calls: &RtcCalls,
    name: &str,
    source: &str,
    headers: &[(&str, &str)],
    options: &[String],
    arch: &str,
) -> Result<Vec<u8>> {
    let check = |code, call: &str| calls.check(code, call);
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
    check(
        // SAFETY: every string is NUL-terminated and outlives the program; the
        // header arrays have headers.len() entries.
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
        check(
            // SAFETY: prog compiled.
            unsafe { (calls.code_size)(prog, &mut size) },
            &call("GetCodeSize"),
        )?;
        let mut code = vec![0u8; size];
        check(
            // SAFETY: prog compiled; the buffer has the size the compiler reported.
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
