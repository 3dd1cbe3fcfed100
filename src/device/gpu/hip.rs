//! HIP (`libamdhip64`) and hiprtc, loaded at run time.
//!
//! hiprtc lives inside `libamdhip64.so.5` in ROCm 5.x and in its own
//! `libhiprtc.so.6`/`.7` from ROCm 6: [`hiprtc()`] tries the latter first,
//! then the HIP runtime itself. ROCm 5.2's code-object manager aborts the
//! process (no error code) when asked for targets it does not know, such as
//! gfx11 and gfx940, so [`check_offload_arch`] refuses targets outside a
//! list known good for the loaded hiprtc version before any compile.

use super::compile::{run_rtc, RtcCalls};
use super::loader::{c_str, fn_table, get_or_load, open_first, Cached};
use crate::{Error, Result};
use std::ffi::{c_char, c_int, c_uint, c_void};

pub const HIP_CANDIDATES: &[&str] = &[
    "libamdhip64.so",
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
];
pub const HIP_ENV: &str = "VMAFX_HIP_LIB";
pub const HIPRTC_CANDIDATES: &[&str] = &["libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6"];
pub const HIPRTC_ENV: &str = "VMAFX_HIPRTC_LIB";

pub mod sys {
    //! C types of `hip_runtime_api.h` the tables use, declared by hand.
    use std::ffi::{c_int, c_uint, c_void};

    pub type HipError = c_int;
    pub type HipDevice = c_int;
    pub type HipDevicePtr = *mut c_void;
    pub type HipModule = *mut c_void;
    pub type HipFunction = *mut c_void;
    pub type HipStream = *mut c_void;
    pub type HipExternalMemory = *mut c_void;
    pub type HipEvent = *mut c_void;
    pub type HipArray = *mut c_void;
    pub const HIP_SUCCESS: HipError = 0;
    pub const HIP_ERROR_NOT_READY: HipError = 600;
    /// `hipEventDisableTiming`.
    pub const HIP_EVENT_DISABLE_TIMING: c_uint = 0x2;
    /// `hipStreamNonBlocking`: no implicit synchronisation with the null stream.
    pub const HIP_STREAM_NON_BLOCKING: c_uint = 0x1;
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

    pub type Unused = c_void;
}

use sys::*;

fn_table! {
    /// `libamdhip64.so.*`: the calls the GPU lanes make.
    pub struct HipRuntime;
    required {
        hipInit: fn(c_uint) -> HipError;
        hipDriverGetVersion: fn(*mut c_int) -> HipError;
        hipRuntimeGetVersion: fn(*mut c_int) -> HipError;
        hipGetErrorName: fn(HipError) -> *const c_char;
        hipGetErrorString: fn(HipError) -> *const c_char;
        hipGetDeviceCount: fn(*mut c_int) -> HipError;
        hipSetDevice: fn(c_int) -> HipError;
        hipDeviceGetName: fn(*mut c_char, c_int, HipDevice) -> HipError;
        hipModuleLoadData: fn(*mut HipModule, *const c_void) -> HipError;
        hipModuleUnload: fn(HipModule) -> HipError;
        hipModuleGetFunction: fn(*mut HipFunction, HipModule, *const c_char) -> HipError;
        hipMalloc: fn(*mut HipDevicePtr, usize) -> HipError;
        hipFree: fn(HipDevicePtr) -> HipError;
        hipMemcpyHtoDAsync: fn(HipDevicePtr, *mut c_void, usize, HipStream) -> HipError;
        hipMemcpyDtoHAsync: fn(*mut c_void, HipDevicePtr, usize, HipStream) -> HipError;
        hipMemsetAsync: fn(HipDevicePtr, c_int, usize, HipStream) -> HipError;
        hipStreamCreate: fn(*mut HipStream) -> HipError;
        hipStreamCreateWithFlags: fn(*mut HipStream, c_uint) -> HipError;
        hipStreamDestroy: fn(HipStream) -> HipError;
        hipStreamSynchronize: fn(HipStream) -> HipError;
        hipModuleLaunchKernel: fn(HipFunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, HipStream, *mut *mut c_void, *mut *mut c_void) -> HipError;
        hipEventCreateWithFlags: fn(*mut HipEvent, c_uint) -> HipError;
        hipEventRecord: fn(HipEvent, HipStream) -> HipError;
        hipEventQuery: fn(HipEvent) -> HipError;
        hipEventSynchronize: fn(HipEvent) -> HipError;
        hipEventDestroy: fn(HipEvent) -> HipError;
        hipStreamWaitEvent: fn(HipStream, HipEvent, c_uint) -> HipError;
        hipMemcpy2DAsync: fn(HipDevicePtr, usize, *const c_void, usize, usize, usize, c_uint, HipStream) -> HipError;
    }
    optional {
        hipMemcpy2DFromArrayAsync: fn(HipDevicePtr, usize, HipArray, usize, usize, usize, usize, c_uint, HipStream) -> HipError;
        hipMemGetAddressRange: fn(*mut HipDevicePtr, *mut usize, HipDevicePtr) -> HipError;
        hipArrayGetDescriptor: fn(*mut super::cuda::sys::CudaArrayDescriptor, HipArray) -> HipError;
        hipGetDeviceProperties: fn(*mut c_void, c_int) -> HipError;
        hipImportExternalMemory: fn(*mut HipExternalMemory, *const c_void) -> HipError;
        hipExternalMemoryGetMappedBuffer: fn(*mut HipDevicePtr, HipExternalMemory, *const c_void) -> HipError;
        hipDestroyExternalMemory: fn(HipExternalMemory) -> HipError;
    }
}

pub type HiprtcResult = c_int;
pub type HiprtcProgram = *mut c_void;

fn_table! {
    /// hiprtc, from `libhiprtc.so.*` or (ROCm 5.x) `libamdhip64.so.5`.
    pub struct Hiprtc;
    required {
        hiprtcGetErrorString: fn(HiprtcResult) -> *const c_char;
        hiprtcCreateProgram: fn(*mut HiprtcProgram, *const c_char, *const c_char, c_int, *const *const c_char, *const *const c_char) -> HiprtcResult;
        hiprtcDestroyProgram: fn(*mut HiprtcProgram) -> HiprtcResult;
        hiprtcCompileProgram: fn(HiprtcProgram, c_int, *const *const c_char) -> HiprtcResult;
        hiprtcGetCodeSize: fn(HiprtcProgram, *mut usize) -> HiprtcResult;
        hiprtcGetCode: fn(HiprtcProgram, *mut c_char) -> HiprtcResult;
        hiprtcGetProgramLogSize: fn(HiprtcProgram, *mut usize) -> HiprtcResult;
        hiprtcGetProgramLog: fn(HiprtcProgram, *mut c_char) -> HiprtcResult;
    }
    optional {
        hiprtcVersion: fn(*mut c_int, *mut c_int) -> HiprtcResult;
    }
}

static HIP: Cached<HipRuntime> = Cached::new();
static HIPRTC: Cached<Hiprtc> = Cached::new();

/// The HIP runtime table. Loading runs no HIP call; `hipInit` is left to
/// the device code, so a machine without an AMD GPU can still load it.
pub fn runtime() -> Result<&'static HipRuntime> {
    get_or_load(&HIP, || {
        let (lib, name) = open_first("HIP runtime", HIP_ENV, HIP_CANDIDATES)?;
        // SAFETY: libamdhip64 exports these with hip_runtime_api.h's signatures.
        unsafe { HipRuntime::resolve(lib, name) }
    })
}

/// The hiprtc table: `libhiprtc` (ROCm 6+), else the HIP runtime (5.x).
pub fn hiprtc() -> Result<&'static Hiprtc> {
    get_or_load(&HIPRTC, || {
        let (lib, name) = match open_first("hiprtc", HIPRTC_ENV, HIPRTC_CANDIDATES) {
            Ok(found) => found,
            Err(own) => open_first("hiprtc", HIP_ENV, HIP_CANDIDATES).map_err(|runtime| {
                Error::Device(format!("{own}; and inside the HIP runtime: {runtime}"))
            })?,
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
        self.check(
            unsafe { (self.hipRuntimeGetVersion)(&mut v) },
            "hipRuntimeGetVersion",
        )?;
        Ok((v / 10_000_000, (v / 100_000) % 100))
    }

    pub fn check(&self, code: HipError, call: &str) -> Result<()> {
        if code == HIP_SUCCESS {
            return Ok(());
        }
        // SAFETY: both return static strings for any code.
        let (name, text) = unsafe {
            (
                c_str((self.hipGetErrorName)(code)),
                c_str((self.hipGetErrorString)(code)),
            )
        };
        Err(Error::Device(format!(
            "{call} failed: error {code} {name} ({text})"
        )))
    }
}

/// Targets that hiprtc of a given ROCm major compiles without aborting.
/// Feature suffixes (`gfx90a:xnack-`) are checked by their base name.
///
/// The ROCm 5 list was probed target by target with Debian's hiprtc 5.2.3
/// (each compiled a kernel; gfx1100 and gfx940 abort the process in
/// comgr with `munmap_chunk(): invalid pointer`). The ROCm 6 and 7 lists
/// follow AMD's supported-target tables and are not probed here.
pub fn known_good_targets(hiprtc_major: i32) -> &'static [&'static str] {
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

/// Refuses a target the loaded hiprtc is not known to handle (ROCm 5.2's
/// comgr aborts the process on gfx11 and gfx940 instead of failing).
pub fn check_offload_arch(arch: &str, version: (i32, i32)) -> Result<()> {
    let base = arch.split(':').next().unwrap_or(arch);
    if known_good_targets(version.0).contains(&base) {
        Ok(())
    } else {
        Err(Error::NotSupported(format!(
            "hiprtc {}.{} cannot safely compile for {arch} (known good: {})",
            version.0,
            version.1,
            known_good_targets(version.0).join(", ")
        )))
    }
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
        self.check(unsafe { f(&mut major, &mut minor) }, "hiprtcVersion")?;
        Ok(if major >= 9 { (5, 0) } else { (major, minor) })
    }

    fn check(&self, code: HiprtcResult, call: &str) -> Result<()> {
        if code == 0 {
            return Ok(());
        }
        // SAFETY: returns a static string for any code.
        let text = unsafe { c_str((self.hiprtcGetErrorString)(code)) };
        Err(Error::Device(format!(
            "{}: {call} failed: {text}",
            self.library
        )))
    }

    /// Compiles `source` to a code object for `arch` (`gfx90a`), after
    /// checking the target against [`known_good_targets`].
    pub fn compile(
        &self,
        name: &str,
        source: &str,
        headers: &[(&str, &str)],
        arch: &str,
    ) -> Result<Vec<u8>> {
        check_offload_arch(arch, self.version()?)?;
        let options = options(arch);
        let calls = RtcCalls {
            prefix: "hiprtc",
            create: self.hiprtcCreateProgram,
            destroy: self.hiprtcDestroyProgram,
            compile: self.hiprtcCompileProgram,
            code_size: self.hiprtcGetCodeSize,
            code: self.hiprtcGetCode,
            log_size: self.hiprtcGetProgramLogSize,
            log: self.hiprtcGetProgramLog,
        };
        run_rtc(
            &calls,
            &|code, call| self.check(code, call),
            name,
            source,
            headers,
            &options,
            arch,
        )
    }
}

/// hiprtc's options for `arch`; part of the cache key.
pub fn options(arch: &str) -> Vec<String> {
    // -ffp-contract=off: no FMA contraction, so float steps round as on the
    // CPU (see nvrtc.rs's --fmad=false).
    vec![
        format!("--offload-arch={arch}"),
        "-O3".into(),
        "-ffp-contract=off".into(),
    ]
}

#[cfg(test)]
mod layout {
    use super::sys::*;
    #[test]
    fn external_memory_descriptors_match_rocm_headers() {
        // ROCm 5.2 hip_runtime_api.h: no reserved tail.
        assert_eq!(std::mem::size_of::<HipExternalMemoryHandleDescRocm5>(), 40);
        assert_eq!(std::mem::align_of::<HipExternalMemoryHandleDescRocm5>(), 8);
        assert_eq!(std::mem::size_of::<HipExternalMemoryHandleDescRocm6>(), 104);
        assert_eq!(std::mem::size_of::<HipExternalMemoryBufferDescRocm5>(), 24);
    }

    #[test]
    fn rocm5_refuses_targets_its_comgr_aborts_on() {
        for arch in ["gfx1100", "gfx940", "gfx942"] {
            let e = super::check_offload_arch(arch, (5, 2))
                .unwrap_err()
                .to_string();
            assert!(e.contains(arch) && e.contains("5.2"), "{e}");
        }
        super::check_offload_arch("gfx90a:xnack-", (5, 2)).unwrap();
        super::check_offload_arch("gfx1030", (5, 2)).unwrap();
    }
}
