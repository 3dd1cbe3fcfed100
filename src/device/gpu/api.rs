//! One GPU driver as the lane sees it: the normalised table that
//! [`super::lane::GpuLane`] runs on, whatever the vendor. CUDA's driver API
//! and HIP's runtime share most of their C shapes (a stream, an event, a
//! module handle; `cuMemAlloc` and `hipMalloc` both write one device
//! pointer), so those entries are the vendor's own C functions; where the
//! shapes differ (making a device current, error names, 2D copies, the
//! architecture, the compiler) the entry says how, by a small enum or a Rust
//! function written beside the vendor's table. The C calls are listed once,
//! CUDA's symbol beside HIP's ([`SharedCalls`]); the tables are built in
//! [`super::cuda::table`] and [`super::hip::table`] and are all that is
//! vendor-specific in the lane, as [`super::rtc::RtcCalls`] is for the
//! two run-time compilers.

use super::backend::{ArrayExtent, Pitched};
use super::kernels::KernelSource;
use crate::device::DeviceKind;
use crate::{Error, Result};
use std::ffi::{c_char, c_int, c_uint, c_void};

/// A driver call's status: `CUresult` / `hipError_t` (0 is success).
pub type Code = c_int;
/// `CUcontext`; HIP has none (its device ordinal is made current instead).
pub type RawContext = *mut c_void;
/// `CUstream` / `hipStream_t`.
pub type RawStream = *mut c_void;
/// `CUevent` / `hipEvent_t`.
pub type RawEvent = *mut c_void;
/// `CUmodule` / `hipModule_t`.
pub type RawModule = *mut c_void;
/// `CUfunction` / `hipFunction_t`.
pub type RawFunction = *mut c_void;
/// `CUarray` / `hipArray_t`.
pub type RawArray = *mut c_void;
/// A device address: `CUdeviceptr`, or HIP's `void *` (declared as `u64`
/// in HIP's table: same size and same passing on the 64-bit hosts vmafx
/// builds for, asserted below).
pub type DevicePtr = u64;

const _: () = assert!(std::mem::size_of::<*mut c_void>() == std::mem::size_of::<DevicePtr>());

/// Status code shared by both vendors: the work an event or stream was
/// queried for has not finished (`CUDA_ERROR_NOT_READY`, `hipErrorNotReady`).
pub const NOT_READY: Code = 600;
/// No device of this vendor (`CUDA_ERROR_NO_DEVICE`, `hipErrorNoDevice`).
pub(crate) const NO_DEVICE: Code = 100;
/// Stream flag: no implicit synchronisation with the legacy default / null
/// stream (`CU_STREAM_NON_BLOCKING`, `hipStreamNonBlocking`).
pub const STREAM_NON_BLOCKING: c_uint = 0x1;
/// Event flag: ordering only, no timestamps (`CU_EVENT_DISABLE_TIMING`,
/// `hipEventDisableTiming`).
pub const EVENT_DISABLE_TIMING: c_uint = 0x2;

/// One C entry of the table and the name errors give it.
#[derive(Clone, Copy)]
pub struct Call<F> {
    pub name: &'static str,
    pub f: F,
}

/// `Call { name: "cuMemAlloc", f: api.cuMemAlloc_v2 }`: the name without
/// the ABI suffix, as the vendors' documentation spells it.
macro_rules! call {
    ($api:expr, $sym:ident) => {
        $crate::device::gpu::api::Call { name: $crate::device::gpu::api::doc_name(stringify!($sym)), f: $api.$sym }
    };
    ($api:expr, $sym:ident?) => {
        $api.$sym.map(|f| $crate::device::gpu::api::Call { name: $crate::device::gpu::api::doc_name(stringify!($sym)), f })
    };
}
pub(crate) use call;

/// `cuMemAlloc_v2` → `cuMemAlloc`.
pub(crate) fn doc_name(symbol: &'static str) -> &'static str {
    symbol.strip_suffix("_v2").unwrap_or(symbol)
}

/// How a device is made current for the lane's calls.
#[derive(Clone, Copy)]
pub enum Current {
    /// CUDA: a context pushed before and popped after each call, so the
    /// caller's context stack is left as it was; a lane of its own retains
    /// the device's primary context.
    PushContext {
        push: Call<unsafe extern "C" fn(RawContext) -> Code>,
        pop: Call<unsafe extern "C" fn(*mut RawContext) -> Code>,
        device_of_ordinal: Call<unsafe extern "C" fn(*mut c_int, c_int) -> Code>,
        retain_primary: Call<unsafe extern "C" fn(*mut RawContext, c_int) -> Code>,
        release_primary: Call<unsafe extern "C" fn(c_int) -> Code>,
        device_of_current: Call<unsafe extern "C" fn(*mut c_int) -> Code>,
    },
    /// HIP: the device ordinal set on the calling thread before each call.
    SetDevice { set: Call<unsafe extern "C" fn(c_int) -> Code> },
}

/// Behaviours the vendors document differently.
#[derive(Clone, Copy, Debug)]
pub struct Quirks {
    /// An upload from pageable host memory returns only once the source has
    /// been read or staged (CUDA documents this for `cuMemcpyHtoDAsync`);
    /// without it the lane waits for its stream before the source may be
    /// freed (HIP promises nothing of the kind for `hipMemcpyHtoDAsync`).
    pub upload_stages_pageable_source: bool,
}

/// The C calls both vendors make in one shape, CUDA's symbol beside HIP's:
/// `field: cuSymbol | hipSymbol => fn(args);`, each returning a status
/// [`Code`]. The one list that [`SharedCalls`] and the shared part of each
/// vendor's raw table ([`vendor_table!`]) are made from, so a signature is
/// written once and the vendors' files give only what differs. `required`
/// calls are required of both; `cuda_required` ones of CUDA only (HIP
/// added them late: `None` where its runtime lacks them); `optional` ones
/// of neither. Hands the list, after `$input`, to `$then!`; its types
/// resolve where `$then!` expands (`use super::api::shared_types::*`).
macro_rules! with_shared_calls {
    ($then:ident ! { $($input:tt)* }) => {
        $then! {
            $($input)*
            required {
                init: cuInit | hipInit => fn(c_uint);
                device_count: cuDeviceGetCount | hipGetDeviceCount => fn(*mut c_int);
                device_name: cuDeviceGetName | hipDeviceGetName => fn(*mut c_char, c_int, c_int);
                module_load: cuModuleLoadData | hipModuleLoadData => fn(*mut RawModule, *const c_void);
                module_unload: cuModuleUnload | hipModuleUnload => fn(RawModule);
                module_function: cuModuleGetFunction | hipModuleGetFunction => fn(*mut RawFunction, RawModule, *const c_char);
                mem_alloc: cuMemAlloc_v2 | hipMalloc => fn(*mut DevicePtr, usize);
                mem_free: cuMemFree_v2 | hipFree => fn(DevicePtr);
                upload: cuMemcpyHtoDAsync_v2 | hipMemcpyHtoDAsync => fn(DevicePtr, *const c_void, usize, RawStream);
                download: cuMemcpyDtoHAsync_v2 | hipMemcpyDtoHAsync => fn(*mut c_void, DevicePtr, usize, RawStream);
                stream_create: cuStreamCreate | hipStreamCreateWithFlags => fn(*mut RawStream, c_uint);
                stream_destroy: cuStreamDestroy_v2 | hipStreamDestroy => fn(RawStream);
                stream_synchronize: cuStreamSynchronize | hipStreamSynchronize => fn(RawStream);
                stream_wait_event: cuStreamWaitEvent | hipStreamWaitEvent => fn(RawStream, RawEvent, c_uint);
                /// Grid x, y, z; block x, y, z; shared bytes; stream; args; extra.
                launch: cuLaunchKernel | hipModuleLaunchKernel => fn(RawFunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, RawStream, *mut *mut c_void, *mut *mut c_void);
                event_create: cuEventCreate | hipEventCreateWithFlags => fn(*mut RawEvent, c_uint);
                event_record: cuEventRecord | hipEventRecord => fn(RawEvent, RawStream);
                event_query: cuEventQuery | hipEventQuery => fn(RawEvent);
                event_synchronize: cuEventSynchronize | hipEventSynchronize => fn(RawEvent);
                event_destroy: cuEventDestroy_v2 | hipEventDestroy => fn(RawEvent);
            }
            cuda_required {
                /// Device memory in bytes.
                device_memory: cuDeviceTotalMem_v2 | hipDeviceTotalMem => fn(*mut usize, c_int);
                /// The allocation holding an address.
                address_range: cuMemGetAddressRange_v2 | hipMemGetAddressRange => fn(*mut DevicePtr, *mut usize, DevicePtr);
            }
            optional {
                /// An array's descriptor (HIP's `HIP_ARRAY_DESCRIPTOR` has CUDA's layout).
                array_descriptor: cuArrayGetDescriptor_v2 | hipArrayGetDescriptor => fn(*mut ArrayDescriptor, RawArray);
            }
        }
    };
}
pub(crate) use with_shared_calls;

/// The names the shared list's signatures use, for the files that expand
/// it.
pub(crate) mod shared_types {
    pub(crate) use super::{ArrayDescriptor, DevicePtr, RawEvent, RawFunction, RawModule};
    
}

/// One vendor's raw symbol table (a `fn_table!`): the shared list's column
/// of that vendor (`@cuda` or `@hip`), then the vendor's own symbols
/// (`own`), which only it has. Invoked through [`with_shared_calls!`]: the
/// list is split into both vendors' columns once, then one is picked.
macro_rules! vendor_table {
    (@ $vendor:ident $(#[$meta:meta])* $vis:vis struct $name:ident; own { $($own:tt)* }
     required { $( $(#[$rd:meta])* $rf:ident: $rcu:ident | $rhip:ident => fn($($rt:ty),* $(,)?); )* }
     cuda_required { $( $(#[$cd:meta])* $cf:ident: $ccu:ident | $chip:ident => fn($($ct:ty),* $(,)?); )* }
     optional { $( $(#[$od:meta])* $of:ident: $ocu:ident | $ohip:ident => fn($($ot:ty),* $(,)?); )* }
    ) => {
        $crate::device::gpu::api::vendor_table! {
            pick $vendor; header { $(#[$meta])* $vis struct $name; } own { $($own)* }
            cuda {
                required { $( $rcu: fn($($rt),*) -> $crate::device::gpu::api::Code; )* $( $ccu: fn($($ct),*) -> $crate::device::gpu::api::Code; )* }
                optional { $( $ocu: fn($($ot),*) -> $crate::device::gpu::api::Code; )* }
            }
            hip {
                required { $( $rhip: fn($($rt),*) -> $crate::device::gpu::api::Code; )* }
                optional { $( $chip: fn($($ct),*) -> $crate::device::gpu::api::Code; )* $( $ohip: fn($($ot),*) -> $crate::device::gpu::api::Code; )* }
            }
        }
    };
    (pick cuda; header { $($header:tt)* } own { $($own:tt)* } cuda { $($column:tt)* } hip { $($other:tt)* }) => {
        $crate::device::gpu::api::vendor_table! { emit { $($header)* } own { $($own)* } column { $($column)* } }
    };
    (pick hip; header { $($header:tt)* } own { $($own:tt)* } cuda { $($other:tt)* } hip { $($column:tt)* }) => {
        $crate::device::gpu::api::vendor_table! { emit { $($header)* } own { $($own)* } column { $($column)* } }
    };
    (emit { $($header:tt)* } own { required { $($own:tt)* } optional { $($own_optional:tt)* } }
     column { required { $($shared:tt)* } optional { $($shared_optional:tt)* } }) => {
        $crate::device::gpu::loader::fn_table! {
            $($header)*
            required { $($shared)* $($own)* }
            optional { $($shared_optional)* $($own_optional)* }
        }
    };
}
pub(crate) use vendor_table;

/// [`SharedCalls`] and the two constructors filling it from the vendors'
/// raw tables.
macro_rules! shared_calls {
    (
        required { $( $(#[$rd:meta])* $rf:ident: $rcu:ident | $rhip:ident => fn($($rt:ty),* $(,)?); )* }
        cuda_required { $( $(#[$cd:meta])* $cf:ident: $ccu:ident | $chip:ident => fn($($ct:ty),* $(,)?); )* }
        optional { $( $(#[$od:meta])* $of:ident: $ocu:ident | $ohip:ident => fn($($ot:ty),* $(,)?); )* }
    ) => {
        /// The C calls of both vendors, in one shape (`None`: the runtime
        /// lacks the symbol).
        pub struct SharedCalls {
            $( $(#[$rd])* pub $rf: Call<unsafe extern "C" fn($($rt),*) -> Code>, )*
            $( $(#[$cd])* pub $cf: Option<Call<unsafe extern "C" fn($($ct),*) -> Code>>, )*
            $( $(#[$od])* pub $of: Option<Call<unsafe extern "C" fn($($ot),*) -> Code>>, )*
        }

        impl SharedCalls {
            pub(crate) fn cuda(cu: &super::cuda::CudaDriver) -> Self {
                Self { $( $rf: call!(cu, $rcu), )* $( $cf: Some(call!(cu, $ccu)), )* $( $of: call!(cu, $ocu?), )* }
            }
            pub(crate) fn hip(hip: &super::hip::HipRuntime) -> Self {
                Self { $( $rf: call!(hip, $rhip), )* $( $cf: call!(hip, $chip?), )* $( $of: call!(hip, $ohip?), )* }
            }
        }
    };
}

with_shared_calls! { shared_calls! {} }

/// What a vendor does its own way, as Rust functions written beside its
/// raw table.
#[derive(Clone, Copy)]
pub struct VendorFns {
    /// "NAME (description)" of a status code, from the driver itself.
    pub describe: fn(Code) -> String,
    /// The architecture the kernels are compiled for (`compute_90`,
    /// `gfx90a:sramecc+:xnack-`) of device handle `device`; the device is
    /// current when called.
    pub arch: fn(c_int) -> Result<String>,
    /// Kernel source → the image `module_load` takes (NUL-terminated PTX,
    /// an AMD code object) for `arch`, through the cache, after the
    /// compiler's own checks (PTX newer than the driver, targets the
    /// compiler lacks).
    pub compile: fn(&KernelSource, &str) -> Result<Vec<u8>>,
    /// Queues a device-to-device copy of `rows` rows of `row_bytes` on the
    /// stream (CUDA describes it in a `CUDA_MEMCPY2D`, HIP passes it flat).
    /// Unsafe: both regions span the rows copied; the device is current.
    pub copy_2d: unsafe fn(&DriverApi, Pitched, Pitched, usize, usize, RawStream) -> Result<()>,
    /// Queues a copy of an array's top-left `rows` x `row_bytes` into
    /// device memory. Unsafe: `dst` spans the rows copied, the array is
    /// live; the device is current.
    pub copy_from_array: unsafe fn(&DriverApi, Pitched, RawArray, usize, usize, RawStream) -> Result<()>,
}

/// `hipExternalMemory_t`: an imported external memory object.
pub type RawExternalMemory = *mut c_void;

/// Importing a dma-buf as device memory, where the vendor can (HIP:
/// `hipImportExternalMemory` with an OpaqueFd handle, which ROCm's runtime
/// maps as a dma-buf, as rocDecode does for VAAPI surfaces; CUDA has no
/// dma-buf import). Each function is unsafe: the handles passed are live
/// ones of this table, and the device is current.
#[derive(Clone, Copy)]
pub struct DmaBufFns {
    /// Imports `fd` (a dma-buf of `size` bytes) and returns the external
    /// memory. On success the runtime owns `fd` (it closes it when the
    /// memory is destroyed); on an error the caller still does.
    pub import_fd: unsafe fn(&DriverApi, c_int, u64) -> Result<RawExternalMemory>,
    /// A device pointer to `size` bytes at `offset` of the memory, freed
    /// with `mem_free` (ROCm 5.2 ignores the offset: see the import).
    pub map_buffer: unsafe fn(&DriverApi, RawExternalMemory, u64, u64) -> Result<DevicePtr>,
    /// Destroys the external memory (after every mapped buffer is freed
    /// and no queued work reads it).
    pub destroy: unsafe fn(&DriverApi, RawExternalMemory) -> Result<()>,
}

/// The normalised driver table. Every pointer stays valid for the process
/// (the vendor library is kept loaded in a static).
pub struct DriverApi {
    pub kind: DeviceKind,
    /// The library opened (`libcuda.so.1`, `libamdhip64.so.6`, or a path).
    pub library: &'static str,
    pub calls: SharedCalls,
    pub vendor: VendorFns,
    pub current: Current,
    pub quirks: Quirks,
    /// Whether the runtime can import external memory (an fd).
    pub external_memory: bool,
    /// How the runtime imports a dma-buf, where it can.
    pub dma_buf: Option<DmaBufFns>,
}

impl std::fmt::Debug for DriverApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DriverApi").field("kind", &self.kind).field("library", &self.library).finish_non_exhaustive()
    }
}

/// `CUDA_ARRAY_DESCRIPTOR` (`_v2`; HIP's `HIP_ARRAY_DESCRIPTOR` is the
/// same): 24 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ArrayDescriptor {
    pub width: usize,
    pub height: usize,
    pub format: c_uint,
    pub num_channels: c_uint,
}

impl ArrayDescriptor {
    /// The extent, where the channel format is one the import reads.
    pub fn extent(&self) -> Option<ArrayExtent> {
        array_format_bytes(self.format).map(|channel_bytes| ArrayExtent {
            width: self.width,
            height: self.height.max(1),
            channels: self.num_channels as usize,
            channel_bytes,
        })
    }
}

/// Bytes of one channel of `CUarray_format` (`CU_AD_FORMAT_*`; HIP's
/// `HIP_AD_FORMAT_*` share the values), `None` for formats the import
/// does not read (floats, packed video formats).
pub fn array_format_bytes(format: c_uint) -> Option<usize> {
    match format {
        0x01 | 0x08 => Some(1), // UNSIGNED_INT8, SIGNED_INT8
        0x02 | 0x09 => Some(2), // UNSIGNED_INT16, SIGNED_INT16
        0x03 | 0x0a => Some(4), // UNSIGNED_INT32, SIGNED_INT32
        _ => None,
    }
}

impl DriverApi {
    /// `code` as an error naming `call` and the driver's own words for it.
    pub fn check(&self, code: Code, call: &str) -> Result<()> {
        if code == 0 {
            Ok(())
        } else {
            Err(Error::Device(format!("{call} failed: error {code} {}", (self.vendor.describe)(code))))
        }
    }

    /// Calls a table entry and checks its status, naming the entry.
    pub fn checked<F>(&self, call: &Call<F>, run: impl FnOnce(&F) -> Code) -> Result<()> {
        self.check(run(&call.f), call.name)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn doc_names_drop_the_abi_suffix_only() {
        assert_eq!(super::doc_name("cuMemAlloc_v2"), "cuMemAlloc");
        assert_eq!(super::doc_name("hipMalloc"), "hipMalloc");
        assert_eq!(super::doc_name("cuStreamCreate"), "cuStreamCreate");
    }

    /// Both vendors' external-memory descriptors, as their headers lay
    /// them out: cuda.h (CUDA 10+); ROCm 5.2's hip_runtime_api.h without
    /// the `reserved` tails ROCm 6 added.
    #[test]
    fn external_memory_descriptors_match_the_vendor_headers() {
        use super::super::{cuda::sys as cu, hip::sys as hip};
        use std::mem::{align_of, offset_of, size_of};
        let sizes = [
            ("CUDA_EXTERNAL_MEMORY_HANDLE_DESC", size_of::<cu::CudaExternalMemoryHandleDesc>(), 104),
            ("CUDA_EXTERNAL_MEMORY_BUFFER_DESC", size_of::<cu::CudaExternalMemoryBufferDesc>(), 88),
            ("hipExternalMemoryHandleDesc (ROCm 5)", size_of::<hip::HipExternalMemoryHandleDescRocm5>(), 40),
            ("hipExternalMemoryHandleDesc (ROCm 6)", size_of::<hip::HipExternalMemoryHandleDescRocm6>(), 104),
            ("hipExternalMemoryBufferDesc (ROCm 5)", size_of::<hip::HipExternalMemoryBufferDescRocm5>(), 24),
            ("hipExternalMemoryBufferDesc (ROCm 6)", size_of::<hip::HipExternalMemoryBufferDescRocm6>(), 88),
            ("CUDA_EXTERNAL_MEMORY_HANDLE_DESC alignment", align_of::<cu::CudaExternalMemoryHandleDesc>(), 8),
            ("hipExternalMemoryHandleDesc (ROCm 5) alignment", align_of::<hip::HipExternalMemoryHandleDescRocm5>(), 8),
            ("CUDA_EXTERNAL_MEMORY_HANDLE_DESC.size", offset_of!(cu::CudaExternalMemoryHandleDesc, size), 24),
            ("hipExternalMemoryHandleDesc (ROCm 5).size", offset_of!(hip::HipExternalMemoryHandleDescRocm5, size), 24),
            ("hipExternalMemoryHandleDesc (ROCm 6).reserved", offset_of!(hip::HipExternalMemoryHandleDescRocm6, reserved), 36),
        ];
        for (what, ours, header) in sizes {
            assert_eq!(ours, header, "{what}");
        }
    }

    #[test]
    fn array_descriptor_has_cuda_h_layout() {
        assert_eq!(std::mem::size_of::<super::ArrayDescriptor>(), 24);
    }
}
