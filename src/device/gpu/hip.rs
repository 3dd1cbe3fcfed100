//! HIP (`libamdhip64`), hiprtc and the code-object manager, loaded at run
//! time, and the HIP lane's normalised driver table ([`table`]).
//!
//! The runtime is `libamdhip64.so.7`, `.so.6` or `.so.5` (ROCm 7, 6, 5), in
//! that order. hiprtc is paired with the runtime found: its own
//! `libhiprtc.so.N` from ROCm 6 on, the runtime itself in ROCm 5.x
//! ([`hiprtc`]). Before any compile, the target is checked against the
//! processors the code-object manager (`libamd_comgr`, what hiprtc compiles
//! with) lists through `amd_comgr_get_isa_name` ([`check_target`]): comgr
//! aborts the process (no error code) when asked for a target it lacks, such
//! as gfx1100 or gfx940 in ROCm 5.2.

use super::api::shared_types::*;
use super::api::{call, vendor_table, with_shared_calls, Current, DevicePtr, DmaBufFns, DriverApi, Quirks, RawArray, RawExternalMemory, RawStream, SharedCalls, VendorFns};
use super::rtc::rtc_table;
use super::backend::Pitched;
use super::kernels::{KernelSource, COMPAT_HEADER};
use super::loader::{c_str, fn_table, get_or_load, open_first, Cached};
use crate::device::DeviceKind;
use crate::{Error, Result};
use std::ffi::{c_char, c_int, c_uint, c_void};

/// The HIP runtime of ROCm 7, 6 and 5, newest first; only SONAMEs (the
/// unversioned name is a development symlink).
pub const HIP_CANDIDATES: &[&str] = &["libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"];
pub const HIP_ENV: &str = "VMAFX_HIP_LIB";
/// hiprtc's own library, tried alone where no runtime loads (a compile-only
/// host); beside a runtime, the one of its ROCm major is used.
pub(crate) const HIPRTC_CANDIDATES: &[&str] = &["libhiprtc.so.7", "libhiprtc.so.6"];
pub const HIPRTC_ENV: &str = "VMAFX_HIPRTC_LIB";
/// The code-object manager: `.so.3` from ROCm 7, `.so.2` before.
pub(crate) const COMGR_CANDIDATES: &[&str] = &["libamd_comgr.so.3", "libamd_comgr.so.2"];
pub const COMGR_ENV: &str = "VMAFX_COMGR_LIB";

pub mod sys {
    //! C types of `hip_runtime_api.h` the tables use, declared by hand.
    use std::ffi::{c_int, c_uint, c_void};

    // The handles are the normalised table's (api.rs), under HIP's names;
    // HipDevicePtr is `void *` in hip_runtime_api.h, declared as the lanes'
    // `u64` device address (same size and passing on 64-bit hosts, asserted
    // in api.rs).
    pub use super::super::api::{
        Code as HipError, DevicePtr as HipDevicePtr, RawArray as HipArray, RawEvent as HipEvent,
        RawExternalMemory as HipExternalMemory, RawFunction as HipFunction, RawModule as HipModule, RawStream as HipStream,
    };
    pub type HipDevice = c_int;
    pub const HIP_SUCCESS: HipError = 0;
    // The values both vendors share (api.rs), under HIP's names.
    pub use super::super::api::{
        EVENT_DISABLE_TIMING as HIP_EVENT_DISABLE_TIMING, NOT_READY as HIP_ERROR_NOT_READY,
        STREAM_NON_BLOCKING as HIP_STREAM_NON_BLOCKING,
    };
    /// `hipMemcpyDeviceToDevice` (the same in ROCm 5, 6 and 7).
    pub const HIP_MEMCPY_DEVICE_TO_DEVICE: c_uint = 3;

    /// `hipExternalMemoryHandleDesc` as ROCm 5.x declares it: 40 bytes, no
    /// `reserved` tail (CUDA's twin is 104; ROCm 6 added `reserved[16]`,
    /// making it 104 too). Pick the layout by the loaded runtime's version.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct HipExternalMemoryHandleDescRocm5 {
        pub handle_type: c_uint,
        pub handle: super::super::cuda::sys::ExternalHandleRocm,
        pub size: u64,
        pub flags: c_uint,
    }

    /// ROCm 6+ layout (`reserved[16]` appended): 104 bytes.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct HipExternalMemoryHandleDescRocm6 {
        pub handle_type: c_uint,
        pub handle: super::super::cuda::sys::ExternalHandleRocm,
        pub size: u64,
        pub flags: c_uint,
        pub reserved: [c_uint; 16],
    }

    /// `hipExternalMemoryBufferDesc` (ROCm 5.x): offset, size, flags.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct HipExternalMemoryBufferDescRocm5 {
        pub offset: u64,
        pub size: u64,
        pub flags: c_uint,
    }

    /// ROCm 6+ layout (`reserved[16]` appended): 88 bytes, as CUDA's.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct HipExternalMemoryBufferDescRocm6 {
        pub offset: u64,
        pub size: u64,
        pub flags: c_uint,
        pub reserved: [c_uint; 16],
    }

    /// `hipExternalMemoryHandleTypeOpaqueFd`: the handle a dma-buf is
    /// imported with (ROCm's runtime maps such an fd as a dma-buf).
    pub const HIP_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD: c_uint = 1;

    pub type Unused = c_void;
}

use sys::*;

with_shared_calls! { vendor_table! { @hip
    /// `libamdhip64.so.*`: the calls the GPU lanes make (the shared list's
    /// HIP column, then HIP's own).
    pub struct HipRuntime;
    own {
        required {
            hipDriverGetVersion: fn(*mut c_int) -> HipError;
            hipRuntimeGetVersion: fn(*mut c_int) -> HipError;
            hipGetErrorName: fn(HipError) -> *const c_char;
            hipGetErrorString: fn(HipError) -> *const c_char;
            hipSetDevice: fn(c_int) -> HipError;
            hipMemsetAsync: fn(HipDevicePtr, c_int, usize, HipStream) -> HipError;
            hipStreamCreate: fn(*mut HipStream) -> HipError;
            hipMemcpy2DAsync: fn(HipDevicePtr, usize, HipDevicePtr, usize, usize, usize, c_uint, HipStream) -> HipError;
        }
        optional {
            hipMemcpy2DFromArrayAsync: fn(HipDevicePtr, usize, HipArray, usize, usize, usize, usize, c_uint, HipStream) -> HipError;
            hipGetDeviceProperties: fn(*mut c_void, c_int) -> HipError;
            hipImportExternalMemory: fn(*mut HipExternalMemory, *const c_void) -> HipError;
            hipExternalMemoryGetMappedBuffer: fn(*mut HipDevicePtr, HipExternalMemory, *const c_void) -> HipError;
            hipDestroyExternalMemory: fn(HipExternalMemory) -> HipError;
        }
    }
} }

rtc_table! {
    /// hiprtc, from `libhiprtc.so.*` or (ROCm 5.x) `libamdhip64.so.5`.
    pub struct Hiprtc = "hiprtc";
    calls(hiprtcGetErrorString, hiprtcCreateProgram, hiprtcDestroyProgram, hiprtcCompileProgram,
          hiprtcGetCodeSize, hiprtcGetCode, hiprtcGetProgramLogSize, hiprtcGetProgramLog);
    // A code object for `arch` (`gfx90a`), the target checked first.
    compile compile(options, check_compiler_target);
    required {}
    optional {
        hiprtcVersion: fn(*mut c_int, *mut c_int) -> c_int;
    }
}

fn_table! {
    /// `libamd_comgr.so.*`: the processors it can compile for.
    pub(crate) struct Comgr;
    required {
        amd_comgr_get_isa_count: fn(*mut usize) -> c_int;
        amd_comgr_get_isa_name: fn(usize, *mut *const c_char) -> c_int;
    }
    optional {}
}

static HIP: Cached<HipRuntime> = Cached::new();
static HIPRTC: Cached<Hiprtc> = Cached::new();
static COMGR: Cached<Comgr> = Cached::new();
static COMGR_TARGETS: Cached<Targets> = Cached::new();
static TABLE: Cached<DriverApi> = Cached::new();

/// The HIP runtime table. Loading runs no HIP call; `hipInit` is left to
/// the lane, so a machine without an AMD GPU can still load it.
pub fn runtime() -> Result<&'static HipRuntime> {
    get_or_load(&HIP, || {
        let (lib, name) = open_first("HIP runtime", HIP_ENV, HIP_CANDIDATES)?;
        // SAFETY: libamdhip64 exports these with hip_runtime_api.h's signatures.
        unsafe { HipRuntime::resolve(lib, name) }
    })
}

/// The hiprtc of the runtime found: `libhiprtc.so.N` for a runtime of ROCm
/// N >= 6, the runtime library itself for ROCm 5.x (whose hiprtc lives in
/// `libamdhip64.so.5`). Without a runtime, a `libhiprtc` alone
/// ([`HIPRTC_CANDIDATES`]). `VMAFX_HIPRTC_LIB` overrides all of it.
pub fn hiprtc() -> Result<&'static Hiprtc> {
    get_or_load(&HIPRTC, || {
        let (lib, name) = match (std::env::var_os(HIPRTC_ENV).filter(|v| !v.is_empty()), runtime()) {
            (Some(_), _) => open_first("hiprtc", HIPRTC_ENV, &[])?,
            (None, Ok(rt)) => {
                let (major, _) = rt.rocm_version()?;
                if major >= 6 {
                    let own = format!("libhiprtc.so.{major}");
                    open_first(&format!("hiprtc of ROCm {major} (beside {})", rt.library), HIPRTC_ENV, &[own.as_str()])?
                } else {
                    open_first(&format!("hiprtc of ROCm {major} (inside the HIP runtime)"), HIPRTC_ENV, &[rt.library.as_str()])?
                }
            }
            (None, Err(runtime)) => open_first("hiprtc", HIPRTC_ENV, HIPRTC_CANDIDATES)
                .map_err(|own| Error::Device(format!("{own}; and no HIP runtime to take it from: {runtime}")))?,
        };
        // SAFETY: these are hiprtc.h's signatures.
        unsafe { Hiprtc::resolve(lib, name) }
    })
}

impl HipRuntime {
    /// (major, minor) of ROCm from `hipRuntimeGetVersion` (`HIP_VERSION`,
    /// major * 10^7 + minor * 10^5 + patch). Needs no GPU.
    pub fn rocm_version(&self) -> Result<(i32, i32)> {
        let mut v = 0;
        // SAFETY: writes one int.
        self.check(unsafe { (self.hipRuntimeGetVersion)(&mut v) }, "hipRuntimeGetVersion")?;
        Ok((v / 10_000_000, (v / 100_000) % 100))
    }

    pub fn check(&self, code: HipError, call: &str) -> Result<()> {
        if code == HIP_SUCCESS {
            return Ok(());
        }
        Err(Error::Device(format!("{call} failed: error {code} {}", self.describe(code))))
    }

    /// `hipErrorNoDevice (no ROCm-capable device is detected)`.
    pub fn describe(&self, code: HipError) -> String {
        // SAFETY: both return static strings for any code.
        unsafe { format!("{} ({})", c_str((self.hipGetErrorName)(code)), c_str((self.hipGetErrorString)(code))) }
    }
}

/// The HIP runtime as the lane's normalised table ([`DriverApi`]).
pub(crate) fn table() -> Result<&'static DriverApi> {
    get_or_load(&TABLE, || {
        let api = runtime()?;
        let vendor = VendorFns { describe: describe_code, arch: gcn_arch, compile: kernel_image, copy_2d: copy_2d_device, copy_from_array: copy_2d_from_array };
        // HIP documents no staging of a pageable source for
        // hipMemcpyHtoDAsync: the lane waits before the source may go.
        let quirks = Quirks { upload_stages_pageable_source: false };
        let external_memory = api.hipImportExternalMemory.is_some() && api.hipExternalMemoryGetMappedBuffer.is_some();
        let current = Current::SetDevice { set: call!(api, hipSetDevice) };
        let dma_buf = (external_memory && api.hipDestroyExternalMemory.is_some())
            .then_some(DmaBufFns { import_fd: import_dma_buf, map_buffer: map_external_buffer, destroy: destroy_external });
        Ok(DriverApi { kind: DeviceKind::Hip, library: &api.library, calls: SharedCalls::hip(api), vendor, current, quirks, external_memory, dma_buf })
    })
}

fn describe_code(code: HipError) -> String {
    match runtime() {
        Ok(api) => api.describe(code),
        Err(_) => String::from("(runtime not loaded)"),
    }
}

/// The code object of `kernel` for a device of `arch`: the build's
/// embedded one when current and built by this runtime's ROCm major release
/// (src/device/gpu/embedded.rs; no hiprtc compile), else [`hip_code_object`].
fn kernel_image(kernel: &KernelSource, arch: &str) -> Result<Vec<u8>> {
    let rocm = runtime()?.rocm_version()?;
    match super::embedded::hip(kernel, arch, rocm) {
        Some(code) => Ok(code),
        None => hip_code_object(kernel, arch),
    }
}

/// An AMD code object for `arch` (`gfx90a`), cached.
pub fn hip_code_object(kernel: &KernelSource, arch: &str) -> Result<Vec<u8>> {
    let compiler = hiprtc()?;
    let version = compiler.version()?;
    // Checked before the cache too: a refused target never compiles.
    check_target(arch, version)?;
    let headers = [COMPAT_HEADER];
    let key = super::cache::key(kernel.source, &headers, &options(arch), arch, "hiprtc", version);
    super::cache::get_or_compile(&key, || compiler.compile(kernel.name, kernel.source, &headers, arch))
}

/// The device's `gcnArchName` ("gfx90a:sramecc+:xnack-"). `hipDeviceProp_t`
/// changed layout between ROCm 5, 6 and 7, so rather than declare each, the
/// property block is read into a generous buffer and the one "gfx..." string
/// in it is taken. `VMAFX_HIP_ARCH` overrides.
fn gcn_arch(device: c_int) -> Result<String> {
    if let Ok(arch) = std::env::var("VMAFX_HIP_ARCH") {
        return Ok(arch);
    }
    let api = runtime()?;
    let get = api.hipGetDeviceProperties.ok_or_else(|| {
        Error::Device(format!("{}: no hipGetDeviceProperties; set VMAFX_HIP_ARCH", api.library))
    })?;
    let mut props = vec![0u8; 16384];
    // SAFETY: the buffer is larger than hipDeviceProp_t of any ROCm release.
    api.check(unsafe { get(props.as_mut_ptr().cast(), device) }, "hipGetDeviceProperties")?;
    let at = props
        .windows(3)
        .position(|w| w == b"gfx")
        .ok_or_else(|| Error::Device("no gfx target in hipDeviceProp_t; set VMAFX_HIP_ARCH".into()))?;
    let end = props[at..].iter().position(|&b| b == 0).map_or(props.len(), |n| at + n);
    Ok(String::from_utf8_lossy(&props[at..end]).into_owned())
}

/// # Safety
/// As [`VendorFns::copy_2d`].
unsafe fn copy_2d_device(api: &DriverApi, dst: Pitched, src: Pitched, row_bytes: usize, rows: usize, stream: RawStream) -> Result<()> {
    let rt = runtime()?;
    // SAFETY: forwarded contract.
    let rc = unsafe { (rt.hipMemcpy2DAsync)(dst.ptr, dst.pitch, src.ptr, src.pitch, row_bytes, rows, HIP_MEMCPY_DEVICE_TO_DEVICE, stream) };
    api.check(rc, "hipMemcpy2DAsync")
}

/// # Safety
/// As [`VendorFns::copy_from_array`].
unsafe fn copy_2d_from_array(api: &DriverApi, dst: Pitched, array: RawArray, row_bytes: usize, rows: usize, stream: RawStream) -> Result<()> {
    let rt = runtime()?;
    let copy = rt.hipMemcpy2DFromArrayAsync.ok_or_else(|| {
        Error::NotSupported(format!("{}: no hipMemcpy2DFromArrayAsync (device arrays need ROCm 5.1 or later)", rt.library))
    })?;
    // SAFETY: forwarded contract.
    let rc = unsafe { copy(dst.ptr, dst.pitch, array, 0, 0, row_bytes, rows, HIP_MEMCPY_DEVICE_TO_DEVICE, stream) };
    api.check(rc, "hipMemcpy2DFromArrayAsync")
}

/// Whether the runtime declares ROCm 6's external-memory structs (with
/// their `reserved[16]` tails) rather than ROCm 5's.
fn rocm6_layouts(rt: &HipRuntime) -> Result<bool> {
    Ok(rt.rocm_version()?.0 >= 6)
}

/// # Safety
/// As [`DmaBufFns::import_fd`].
unsafe fn import_dma_buf(api: &DriverApi, fd: c_int, size: u64) -> Result<RawExternalMemory> {
    let rt = runtime()?;
    let import = rt.hipImportExternalMemory.ok_or_else(|| Error::NotSupported(format!("{}: no hipImportExternalMemory", rt.library)))?;
    let handle = super::cuda::sys::ExternalHandleRocm { fd };
    let mut memory: RawExternalMemory = std::ptr::null_mut();
    let (rocm5, rocm6);
    let desc: *const c_void = if rocm6_layouts(rt)? {
        rocm6 = HipExternalMemoryHandleDescRocm6 { handle_type: HIP_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD, handle, size, flags: 0, reserved: [0; 16] };
        std::ptr::from_ref(&rocm6).cast()
    } else {
        rocm5 = HipExternalMemoryHandleDescRocm5 { handle_type: HIP_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD, handle, size, flags: 0 };
        std::ptr::from_ref(&rocm5).cast()
    };
    // SAFETY: `desc` points at the handle descriptor of the loaded
    // runtime's layout, alive for the call; forwarded contract for fd.
    api.check(unsafe { import(&mut memory, desc) }, "hipImportExternalMemory")?;
    Ok(memory)
}

/// # Safety
/// As [`DmaBufFns::map_buffer`].
unsafe fn map_external_buffer(api: &DriverApi, memory: RawExternalMemory, offset: u64, size: u64) -> Result<DevicePtr> {
    let rt = runtime()?;
    let map = rt.hipExternalMemoryGetMappedBuffer.ok_or_else(|| Error::NotSupported(format!("{}: no hipExternalMemoryGetMappedBuffer", rt.library)))?;
    let mut ptr: DevicePtr = 0;
    let (rocm5, rocm6);
    let desc: *const c_void = if rocm6_layouts(rt)? {
        rocm6 = HipExternalMemoryBufferDescRocm6 { offset, size, flags: 0, reserved: [0; 16] };
        std::ptr::from_ref(&rocm6).cast()
    } else {
        rocm5 = HipExternalMemoryBufferDescRocm5 { offset, size, flags: 0 };
        std::ptr::from_ref(&rocm5).cast()
    };
    // SAFETY: `desc` points at the buffer descriptor of the loaded
    // runtime's layout, alive for the call; `memory` is live (contract).
    api.check(unsafe { map(&mut ptr, memory, desc) }, "hipExternalMemoryGetMappedBuffer")?;
    Ok(ptr)
}

/// # Safety
/// As [`DmaBufFns::destroy`].
unsafe fn destroy_external(api: &DriverApi, memory: RawExternalMemory) -> Result<()> {
    let rt = runtime()?;
    let destroy = rt.hipDestroyExternalMemory.ok_or_else(|| Error::NotSupported(format!("{}: no hipDestroyExternalMemory", rt.library)))?;
    // SAFETY: forwarded contract: a live external memory, destroyed once.
    api.check(unsafe { destroy(memory) }, "hipDestroyExternalMemory")
}

/// The processors a code-object manager compiles for, and which one said so.
#[derive(Debug, Clone)]
pub struct Targets {
    /// `libamd_comgr.so.2`, or where the fallback list came from.
    pub source: String,
    /// Processor names: `gfx90a`, `gfx1030`, ... (no feature suffixes).
    pub processors: Vec<String>,
}

impl Targets {
    /// Whether `arch` (`gfx90a:sramecc+:xnack-`) is listed, by its processor.
    pub fn supports(&self, arch: &str) -> bool {
        let base = arch.split(':').next().unwrap_or(arch);
        self.processors.iter().any(|p| p == base)
    }
}

/// The processors the code-object manager beside the loaded hiprtc lists
/// (`amd_comgr_get_isa_name`: `amdgcn-amd-amdhsa--gfx90a`, ...). comgr is
/// already mapped by hiprtc, so opening it by SONAME finds that one; the
/// `.so.3` of ROCm 7 is tried first for a ROCm 7 hiprtc, else `.so.2`.
pub fn comgr_targets(rocm_major: i32) -> Result<&'static Targets> {
    get_or_load(&COMGR_TARGETS, || {
        // Kept loaded, in a static: unloading comgr and letting the runtime
        // load it again registers LLVM's options twice, which aborts.
        let comgr = get_or_load(&COMGR, || {
            let order: Vec<&str> = if rocm_major >= 7 { COMGR_CANDIDATES.to_vec() } else { COMGR_CANDIDATES.iter().rev().copied().collect() };
            let (lib, name) = open_first("the AMD code-object manager", COMGR_ENV, &order)?;
            // SAFETY: amd_comgr.h's signatures.
            unsafe { Comgr::resolve(lib, name) }
        })?;
        let mut count = 0usize;
        // SAFETY: writes one size.
        comgr_check(&comgr, unsafe { (comgr.amd_comgr_get_isa_count)(&mut count) }, "amd_comgr_get_isa_count")?;
        let mut processors = Vec::with_capacity(count);
        for i in 0..count {
            let mut isa: *const c_char = std::ptr::null();
            // SAFETY: i < count; writes a pointer to a static string.
            comgr_check(&comgr, unsafe { (comgr.amd_comgr_get_isa_name)(i, &mut isa) }, "amd_comgr_get_isa_name")?;
            // SAFETY: NULL or a static NUL-terminated string.
            let isa = unsafe { c_str(isa) };
            if let Some(processor) = isa.rsplit("--").next() {
                processors.push(processor.split(':').next().unwrap_or(processor).to_string());
            }
        }
        Ok(Targets { source: comgr.library.clone(), processors })
    })
}

fn comgr_check(comgr: &Comgr, code: c_int, call: &str) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(Error::Device(format!("{}: {call} failed: status {code}", comgr.library)))
    }
}

/// Targets that hiprtc of a given ROCm major compiles without aborting, for
/// when no code-object manager can be asked ([`comgr_targets`]).
///
/// The ROCm 5 list is what Debian's comgr 2.4 (ROCm 5.2) lists, each probed
/// with hiprtc 5.2.3 (gfx1100 and gfx940 abort the process in comgr with
/// `munmap_chunk(): invalid pointer`). The ROCm 6 and 7 lists follow AMD's
/// supported-target tables and are not probed here.
pub(crate) fn known_good_targets(hiprtc_major: i32) -> &'static [&'static str] {
    const ROCM5: &[&str] = &[
        "gfx803", "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c",
        "gfx1010", "gfx1011", "gfx1012", "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034",
        "gfx1035", "gfx1036",
    ];
    const ROCM6: &[&str] = &[
        "gfx803", "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c",
        "gfx940", "gfx941", "gfx942", "gfx1010", "gfx1011", "gfx1012", "gfx1030", "gfx1031",
        "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036", "gfx1100", "gfx1101", "gfx1102",
        "gfx1103",
    ];
    const ROCM7: &[&str] = &[
        "gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1031",
        "gfx1032", "gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151", "gfx1200", "gfx1201",
    ];
    match hiprtc_major {
        ..=5 => ROCM5,
        6 => ROCM6,
        _ => ROCM7,
    }
}

/// Refuses `arch` unless `targets` lists its processor, naming both.
pub(crate) fn check_target_in(arch: &str, version: (i32, i32), targets: &Targets) -> Result<()> {
    if targets.supports(arch) {
        return Ok(());
    }
    Err(Error::NotSupported(format!(
        "hiprtc {}.{} cannot compile for {arch}: {} supports {}",
        version.0,
        version.1,
        targets.source,
        targets.processors.join(", ")
    )))
}

/// Refuses a target the loaded hiprtc's code-object manager lacks (it would
/// abort the process): the processors comgr lists, else, where comgr cannot
/// be opened, [`known_good_targets`] of the ROCm major.
pub(crate) fn check_target(arch: &str, version: (i32, i32)) -> Result<()> {
    let fallback;
    let targets = match comgr_targets(version.0) {
        Ok(t) => t,
        Err(e) => {
            fallback = Targets {
                source: format!("the known-good list of ROCm {} (comgr not asked: {e})", version.0),
                processors: known_good_targets(version.0).iter().map(|s| s.to_string()).collect(),
            };
            &fallback
        }
    };
    check_target_in(arch, version, targets)
}

impl Hiprtc {
    /// The ROCm (major, minor) this hiprtc belongs to: the HIP runtime's
    /// `hipRuntimeGetVersion` when it loads (ROCm 5.2's `hiprtcVersion`
    /// answers a fixed 9.0), else `hiprtcVersion`, its 9.x read as 5.0.
    pub fn version(&self) -> Result<(i32, i32)> {
        if let Ok(v) = runtime().and_then(|rt| rt.rocm_version()) {
            return Ok(v);
        }
        let Some(f) = self.hiprtcVersion else {
            return Ok((5, 0));
        };
        let (mut major, mut minor) = (0, 0);
        // SAFETY: writes two ints.
        self.calls().check(unsafe { f(&mut major, &mut minor) }, "hiprtcVersion")?;
        Ok(if major >= 9 { (5, 0) } else { (major, minor) })
    }
}

/// [`check_target`] for this compiler's ROCm release.
fn check_compiler_target(compiler: &Hiprtc, arch: &str) -> Result<()> {
    check_target(arch, compiler.version()?)
}

/// hiprtc's options for `arch`; part of the cache key (kernel_key.rs,
/// shared with build.rs).
pub(crate) fn options(arch: &str) -> Vec<String> {
    super::kernel_key::hiprtc_options(arch)
}

#[cfg(test)]
mod layout {
    #[test]
    fn targets_are_checked_by_processor_and_refusals_name_the_list() {
        let t = super::Targets { source: "libamd_comgr.so.2".into(), processors: vec!["gfx90a".into(), "gfx1030".into()] };
        super::check_target_in("gfx90a:sramecc+:xnack-", (5, 2), &t).unwrap();
        super::check_target_in("gfx1030", (5, 2), &t).unwrap();
        for arch in ["gfx1100", "gfx940", "gfx90"] {
            let e = super::check_target_in(arch, (5, 2), &t).unwrap_err().to_string();
            assert!(e.contains(arch) && e.contains("5.2") && e.contains("libamd_comgr.so.2") && e.contains("gfx1030"), "{e}");
        }
    }

    #[test]
    fn the_fallback_list_of_rocm5_lacks_what_its_comgr_aborts_on() {
        let rocm5 = super::known_good_targets(5);
        assert!(!rocm5.contains(&"gfx1100") && !rocm5.contains(&"gfx940") && rocm5.contains(&"gfx90a"));
    }
}
