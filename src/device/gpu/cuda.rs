//! The CUDA driver API (`libcuda.so.1`, the exact SONAME the driver
//! installs, as FFmpeg's ffnvcodec loader uses), loaded at run time.
//!
//! Split as cudarc does: [`sys`] holds the C types and the function table,
//! [`result`] turns `CUresult` codes into [`crate::Error`] decoded with
//! `cuGetErrorName`/`cuGetErrorString`, and [`ContextGuard`] is the safe RAII
//! push/pop around calls on a context.

use super::api::shared_types::*;
use super::api::{call, vendor_table, with_shared_calls, Current, DriverApi, Quirks, RawArray, RawStream, SharedCalls, VendorFns};
use super::backend::Pitched;
use super::kernels::KernelSource;
use super::loader::{get_or_load, open_first, Cached};
use crate::device::DeviceKind;
use crate::{Error, Result};

/// The names tried for the driver, in order. Only the SONAME: the
/// unversioned `libcuda.so` is a development symlink and may be a stub.
pub(crate) const DRIVER_CANDIDATES: &[&str] = &["libcuda.so.1"];
/// Overrides the driver path (tests, unusual installs).
pub const DRIVER_ENV: &str = "VMAFX_CUDA_LIB";

pub mod sys {
    //! C types of `cuda.h` that the table uses, declared by hand.
    use std::ffi::{c_char, c_int, c_uint, c_void};

    // The handles are the normalised table's (api.rs), under cuda.h's names.
    pub use super::super::api::{
        Code as CUresult, DevicePtr as CUdeviceptr, RawArray as CUarray, RawContext as CUcontext, RawEvent as CUevent,
        RawExternalMemory as CUexternalMemory, RawFunction as CUfunction, RawModule as CUmodule, RawStream as CUstream,
    };
    pub type CUdevice = c_int;
    pub type CUexternalSemaphore = *mut c_void;

    pub const CUDA_SUCCESS: CUresult = 0;
    pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
    pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: c_int = 76;
    // The values both vendors share (api.rs), under cuda.h's names.
    pub use super::super::api::{
        EVENT_DISABLE_TIMING as CU_EVENT_DISABLE_TIMING, NOT_READY as CUDA_ERROR_NOT_READY,
        STREAM_NON_BLOCKING as CU_STREAM_NON_BLOCKING,
    };
    pub const CU_MEMORYTYPE_HOST: c_uint = 1;
    pub const CU_MEMORYTYPE_DEVICE: c_uint = 2;
    pub const CU_MEMORYTYPE_ARRAY: c_uint = 3;

    /// `CUDA_MEMCPY2D` (cuda.h, `_v2`): 128 bytes.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct CudaMemcpy2D {
        pub src_x_in_bytes: usize,
        pub src_y: usize,
        pub src_memory_type: c_uint,
        pub src_host: usize,
        pub src_device: u64,
        pub src_array: usize,
        pub src_pitch: usize,
        pub dst_x_in_bytes: usize,
        pub dst_y: usize,
        pub dst_memory_type: c_uint,
        pub dst_host: usize,
        pub dst_device: u64,
        pub dst_array: usize,
        pub dst_pitch: usize,
        pub width_in_bytes: usize,
        pub height: usize,
    }

    /// `CUDA_ARRAY_DESCRIPTOR` (`_v2`): the lanes' shared layout.
    pub use super::super::api::{array_format_bytes, ArrayDescriptor as CudaArrayDescriptor};

    /// `CUDA_EXTERNAL_MEMORY_HANDLE_DESC` (cuda.h, CUDA 10+): 104 bytes.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct CudaExternalMemoryHandleDesc {
        pub handle_type: c_uint,
        pub handle: ExternalHandle,
        pub size: u64,
        pub flags: c_uint,
        pub reserved: [c_uint; 16],
    }

    /// The handle union shared by memory and semaphore descriptors.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union ExternalHandle {
        pub fd: c_int,
        pub win32: Win32Handle,
        pub nv_sci_obj: *const c_void,
    }

    /// HIP's handle union: no `nvSciBufObject` member, same size.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union ExternalHandleRocm {
        pub fd: c_int,
        pub win32: Win32Handle,
    }

    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct Win32Handle {
        pub handle: *mut c_void,
        pub name: *const c_void,
    }

    /// `CUDA_EXTERNAL_MEMORY_BUFFER_DESC`: 88 bytes.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct CudaExternalMemoryBufferDesc {
        pub offset: u64,
        pub size: u64,
        pub flags: c_uint,
        pub reserved: [c_uint; 16],
    }

    pub type NameBuf = *mut c_char;
}

use std::ffi::{c_char, c_int, c_uint, c_void};
use sys::*;

with_shared_calls! { vendor_table! { @cuda
    /// `libcuda.so.1`: the calls the GPU lanes make (the shared list's
    /// CUDA column, then CUDA's own).
    pub struct CudaDriver;
    own {
        required {
            cuDriverGetVersion: fn(*mut c_int) -> CUresult;
            cuGetErrorName: fn(CUresult, *mut *const c_char) -> CUresult;
            cuGetErrorString: fn(CUresult, *mut *const c_char) -> CUresult;
            cuDeviceGet: fn(*mut CUdevice, c_int) -> CUresult;
            cuDeviceGetAttribute: fn(*mut c_int, c_int, CUdevice) -> CUresult;
            cuDevicePrimaryCtxRetain: fn(*mut CUcontext, CUdevice) -> CUresult;
            cuDevicePrimaryCtxRelease_v2: fn(CUdevice) -> CUresult;
            cuCtxPushCurrent_v2: fn(CUcontext) -> CUresult;
            cuCtxPopCurrent_v2: fn(*mut CUcontext) -> CUresult;
            cuCtxGetDevice: fn(*mut CUdevice) -> CUresult;
            cuMemsetD8Async: fn(CUdeviceptr, u8, usize, CUstream) -> CUresult;
            cuMemcpy2DAsync_v2: fn(*const CudaMemcpy2D, CUstream) -> CUresult;
        }
        optional {
            cuArrayCreate_v2: fn(*mut CUarray, *const CudaArrayDescriptor) -> CUresult;
            cuArrayDestroy: fn(CUarray) -> CUresult;
            cuImportExternalMemory: fn(*mut CUexternalMemory, *const CudaExternalMemoryHandleDesc) -> CUresult;
            cuExternalMemoryGetMappedBuffer: fn(*mut CUdeviceptr, CUexternalMemory, *const CudaExternalMemoryBufferDesc) -> CUresult;
            cuDestroyExternalMemory: fn(CUexternalMemory) -> CUresult;
            cuDestroyExternalSemaphore: fn(CUexternalSemaphore) -> CUresult;
        }
    }
} }

static DRIVER: Cached<CudaDriver> = Cached::new();

/// The process-wide driver table, loaded and `cuInit(0)`-ed on first use.
pub fn driver() -> Result<&'static CudaDriver> {
    get_or_load(&DRIVER, || {
        let (lib, name) = open_first("CUDA driver", DRIVER_ENV, DRIVER_CANDIDATES)?;
        // SAFETY: libcuda exports these symbols with cuda.h's signatures.
        let api = unsafe { CudaDriver::resolve(lib, name)? };
        // SAFETY: cuInit takes flags 0 and may be called more than once.
        result::check(&api, unsafe { (api.cuInit)(0) }, "cuInit")?;
        Ok(api)
    })
}

static TABLE: Cached<DriverApi> = Cached::new();

/// The CUDA driver as the lane's normalised table ([`DriverApi`]).
pub(crate) fn table() -> Result<&'static DriverApi> {
    get_or_load(&TABLE, || {
        let api = driver()?;
        let current = Current::PushContext {
            push: call!(api, cuCtxPushCurrent_v2),
            pop: call!(api, cuCtxPopCurrent_v2),
            device_of_ordinal: call!(api, cuDeviceGet),
            retain_primary: call!(api, cuDevicePrimaryCtxRetain),
            release_primary: call!(api, cuDevicePrimaryCtxRelease_v2),
            device_of_current: call!(api, cuCtxGetDevice),
        };
        let vendor = VendorFns { describe: describe_code, arch: compute_capability, compile: kernel_image, copy_2d: copy_2d_device, copy_from_array: copy_2d_from_array };
        // cuda.h, "API synchronization behavior": from pageable memory the
        // upload returns once the source is staged.
        let quirks = Quirks { upload_stages_pageable_source: true };
        let external_memory = api.cuImportExternalMemory.is_some() && api.cuExternalMemoryGetMappedBuffer.is_some();
        Ok(DriverApi { kind: DeviceKind::Cuda, library: &api.library, calls: SharedCalls::cuda(api), vendor, current, quirks, external_memory, dma_buf: None })
    })
}

fn describe_code(code: CUresult) -> String {
    match driver() {
        Ok(api) => result::describe(api, code),
        Err(_) => String::from("(driver not loaded)"),
    }
}

/// `compute_XY` of a device, from its compute capability.
fn compute_capability(device: CUdevice) -> Result<String> {
    let api = driver()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: each call writes one int.
    unsafe {
        result::check(api, (api.cuDeviceGetAttribute)(&mut major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), "cuDeviceGetAttribute")?;
        result::check(api, (api.cuDeviceGetAttribute)(&mut minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device), "cuDeviceGetAttribute")?;
    }
    Ok(format!("compute_{major}{minor}"))
}

/// The image of `kernel` for a device of `arch`: the build's embedded
/// cubin or PTX when it is current and this driver loads it
/// (src/device/gpu/embedded.rs; no NVRTC opened), else a run-time compile.
fn kernel_image(kernel: &KernelSource, arch: &str) -> Result<Vec<u8>> {
    let api = driver()?;
    let mut version = 0;
    // SAFETY: writes one int.
    result::check(api, unsafe { (api.cuDriverGetVersion)(&mut version) }, "cuDriverGetVersion")?;
    match super::embedded::cuda(kernel, arch, version) {
        Some(image) => Ok(image),
        None => loadable_ptx(kernel, arch),
    }
}

/// NUL-terminated PTX for `arch`, after checking the driver can load the
/// PTX of the NVRTC found: PTX from an NVRTC newer than the driver is
/// refused by the JIT (CUDA_ERROR_UNSUPPORTED_PTX_VERSION).
fn loadable_ptx(kernel: &KernelSource, arch: &str) -> Result<Vec<u8>> {
    let api = driver()?;
    let compiler = super::nvrtc::nvrtc()?;
    let (major, minor) = compiler.version()?;
    let mut version = 0;
    // SAFETY: writes one int.
    result::check(api, unsafe { (api.cuDriverGetVersion)(&mut version) }, "cuDriverGetVersion")?;
    if major * 1000 + minor * 10 > version {
        return Err(Error::Device(format!(
            "NVRTC {major}.{minor} ({}) is newer than the CUDA driver ({}.{}); its PTX would not load: \
             point {} at a libnvrtc of CUDA {}.x or older",
            compiler.library,
            version / 1000,
            (version % 1000) / 10,
            super::nvrtc::ENV,
            version / 1000
        )));
    }
    let mut ptx = super::compile::cuda_ptx(kernel, arch)?;
    if ptx.last() != Some(&0) {
        ptx.push(0);
    }
    Ok(ptx)
}

/// Queues `copy` on `stream`.
///
/// # Safety
/// The descriptor names live memory spanning the rows copied; the context
/// is current.
unsafe fn memcpy_2d(api: &DriverApi, copy: &CudaMemcpy2D, stream: RawStream) -> Result<()> {
    let raw = driver()?;
    // SAFETY: forwarded contract.
    api.check(unsafe { (raw.cuMemcpy2DAsync_v2)(copy, stream) }, "cuMemcpy2DAsync")
}

/// A copy of `rows` x `row_bytes` into device memory at `dst`; the source
/// is filled in by the caller.
fn into_device(dst: Pitched, row_bytes: usize, rows: usize) -> CudaMemcpy2D {
    CudaMemcpy2D { dst_memory_type: CU_MEMORYTYPE_DEVICE, dst_device: dst.ptr, dst_pitch: dst.pitch, width_in_bytes: row_bytes, height: rows, ..Default::default() }
}

/// # Safety
/// As [`VendorFns::copy_2d`].
unsafe fn copy_2d_device(api: &DriverApi, dst: Pitched, src: Pitched, row_bytes: usize, rows: usize, stream: RawStream) -> Result<()> {
    let copy = CudaMemcpy2D { src_memory_type: CU_MEMORYTYPE_DEVICE, src_device: src.ptr, src_pitch: src.pitch, ..into_device(dst, row_bytes, rows) };
    // SAFETY: forwarded contract.
    unsafe { memcpy_2d(api, &copy, stream) }
}

/// # Safety
/// As [`VendorFns::copy_from_array`].
unsafe fn copy_2d_from_array(api: &DriverApi, dst: Pitched, array: RawArray, row_bytes: usize, rows: usize, stream: RawStream) -> Result<()> {
    let copy = CudaMemcpy2D { src_memory_type: CU_MEMORYTYPE_ARRAY, src_array: array as usize, ..into_device(dst, row_bytes, rows) };
    // SAFETY: forwarded contract.
    unsafe { memcpy_2d(api, &copy, stream) }
}

pub mod result {
    //! `CUresult` → [`crate::Error`], named by the driver itself.
    use super::*;

    /// The driver's name and description for `code`, e.g.
    /// `CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)`.
    pub fn describe(api: &CudaDriver, code: CUresult) -> String {
        let mut name: *const c_char = std::ptr::null();
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: both calls write a pointer to a static string or leave it
        // NULL for unknown codes; c_str handles NULL.
        unsafe {
            (api.cuGetErrorName)(code, &mut name);
            (api.cuGetErrorString)(code, &mut text);
            format!(
                "{} ({})",
                super::super::loader::c_str(name),
                super::super::loader::c_str(text)
            )
        }
    }

    pub fn check(api: &CudaDriver, code: CUresult, call: &str) -> Result<()> {
        if code == CUDA_SUCCESS {
            Ok(())
        } else {
            Err(Error::Device(format!(
                "{call} failed: error {code} {}",
                describe(api, code)
            )))
        }
    }
}

/// Makes a context current on this thread for the guard's lifetime
/// (`cuCtxPushCurrent` / `cuCtxPopCurrent`), so a caller's context stack is
/// left as it was, even on early return (the bug in FFmpeg's
/// `vf_libvmaf.c` copy helper).
pub struct ContextGuard<'a> {
    api: &'a CudaDriver,
}

impl<'a> ContextGuard<'a> {
    /// # Safety
    /// `ctx` is a live context that outlives the guard.
    pub unsafe fn push(api: &'a CudaDriver, ctx: CUcontext) -> Result<Self> {
        result::check(
            api,
            // SAFETY: ctx is live (the caller's contract).
            unsafe { (api.cuCtxPushCurrent_v2)(ctx) },
            "cuCtxPushCurrent",
        )?;
        Ok(Self { api })
    }
}

impl Drop for ContextGuard<'_> {
    fn drop(&mut self) {
        let mut popped: CUcontext = std::ptr::null_mut();
        // SAFETY: pops exactly the context pushed in `push`; a failure here
        // can only mean the caller destroyed the context under us.
        unsafe { (self.api.cuCtxPopCurrent_v2)(&mut popped) };
    }
}

#[cfg(test)]
mod layout {
    use super::sys::*;
    #[test]
    fn copy_and_array_descriptors_match_cuda_h() {
        assert_eq!(std::mem::size_of::<CudaMemcpy2D>(), 128);
        assert_eq!(std::mem::offset_of!(CudaMemcpy2D, src_host), 24);
        assert_eq!(std::mem::offset_of!(CudaMemcpy2D, dst_x_in_bytes), 56);
        assert_eq!(std::mem::offset_of!(CudaMemcpy2D, dst_host), 80);
        assert_eq!(std::mem::offset_of!(CudaMemcpy2D, width_in_bytes), 112);
        assert_eq!(std::mem::size_of::<CudaArrayDescriptor>(), 24);
    }
}
