//! The HIP lane: device `index` made current with `hipSetDevice` around
//! each call, a stream of ours, and the engine's [`Backend`] calls. Built
//! and compile-tested on CI; not yet run on an AMD GPU (docs/gpu.md).
//!
//! A lane beside a caller's stream ([`HipLane::beside_stream`]) works as the
//! CUDA one does: a non-blocking stream of its own, ordered after the
//! caller's `hipStream_t` by an event per frame ([`HipLane::follow_caller`]).

use super::engine::{ArrayExtent, Backend, Pitched};
use crate::device::{DeviceKind, DeviceMemoryId};
use super::hip::{self, sys::*, HipRuntime};
use super::kernels::{KernelSource, BLOCK};
use crate::{Error, Result};
use std::ffi::{c_void, CString};

pub struct HipLane {
    api: &'static HipRuntime,
    device: i32,
    stream: HipStream,
    /// The caller's stream this lane follows (`beside_stream`), and the
    /// event recorded there each time (created on first use).
    caller: Option<(HipStream, HipEvent)>,
    modules: Vec<HipModule>,
    pub name: String,
    pub arch: String,
}

// SAFETY: HIP streams may be used from any thread once the device is set;
// the lane sets it around every call.
unsafe impl Send for HipLane {}

fn initialised() -> Result<&'static HipRuntime> {
    let api = hip::runtime()?;
    // SAFETY: flags 0; repeated calls are allowed.
    api.check(unsafe { (api.hipInit)(0) }, "hipInit")?;
    Ok(api)
}

pub fn device_count() -> Result<usize> {
    let api = initialised()?;
    let mut n = 0;
    // SAFETY: writes one int.
    let rc = unsafe { (api.hipGetDeviceCount)(&mut n) };
    if rc == 100 {
        return Ok(0); // hipErrorNoDevice
    }
    api.check(rc, "hipGetDeviceCount")?;
    Ok(n.max(0) as usize)
}

/// The device's `gcnArchName` ("gfx90a:sramecc+:xnack-"). `hipDeviceProp_t`
/// changed layout between ROCm 5, 6 and 7, so rather than declare each, the
/// property block is read into a generous buffer and the one "gfx..." string
/// in it is taken. `VMAFX_HIP_ARCH` overrides.
fn gcn_arch(api: &HipRuntime, device: i32) -> Result<String> {
    if let Ok(arch) = std::env::var("VMAFX_HIP_ARCH") {
        return Ok(arch);
    }
    let get = api.hipGetDeviceProperties.ok_or_else(|| {
        Error::Device(format!(
            "{}: no hipGetDeviceProperties; set VMAFX_HIP_ARCH",
            api.library
        ))
    })?;
    let mut props = vec![0u8; 16384];
    // SAFETY: the buffer is larger than hipDeviceProp_t of any ROCm release.
    api.check(
        unsafe { get(props.as_mut_ptr().cast(), device) },
        "hipGetDeviceProperties",
    )?;
    let at = props.windows(3).position(|w| w == b"gfx").ok_or_else(|| {
        Error::Device("no gfx target in hipDeviceProp_t; set VMAFX_HIP_ARCH".into())
    })?;
    let end = props[at..]
        .iter()
        .position(|&b| b == 0)
        .map_or(props.len(), |n| at + n);
    Ok(String::from_utf8_lossy(&props[at..end]).into_owned())
}

impl HipLane {
    /// Device `index` and a new stream.
    pub fn open(index: usize) -> Result<Self> {
        Self::open_with(index, None)
    }

    /// A scoring lane on device `index` for pictures the caller writes on
    /// `caller_stream` (NULL: the null stream): a non-blocking stream of
    /// ours, ordered after `caller_stream` by [`HipLane::follow_caller`].
    ///
    /// # Safety
    /// `caller_stream` is a live stream of device `index` (or NULL) that
    /// outlives the lane.
    pub unsafe fn beside_stream(index: usize, caller_stream: HipStream) -> Result<Self> {
        Self::open_with(index, Some(caller_stream))
    }

    fn open_with(index: usize, caller_stream: Option<HipStream>) -> Result<Self> {
        let api = initialised()?;
        let count = device_count()?;
        if index >= count {
            return Err(Error::invalid(format!(
                "HIP device {index} requested, {count} present"
            )));
        }
        let device = index as i32;
        let mut name = [0 as std::ffi::c_char; 256];
        // SAFETY: device < count; 256-byte buffer as passed.
        unsafe {
            api.check((api.hipSetDevice)(device), "hipSetDevice")?;
            api.check(
                (api.hipDeviceGetName)(name.as_mut_ptr(), 256, device),
                "hipDeviceGetName",
            )?;
        }
        let arch = gcn_arch(api, device)?;
        let mut stream: HipStream = std::ptr::null_mut();
        // SAFETY: device is current; writes one handle, destroyed in Drop.
        // Beside a caller's stream ours must not synchronise with the null
        // stream (the caller's may be it).
        match caller_stream {
            None => api.check(unsafe { (api.hipStreamCreate)(&mut stream) }, "hipStreamCreate")?,
            Some(_) => api.check(
                unsafe { (api.hipStreamCreateWithFlags)(&mut stream, HIP_STREAM_NON_BLOCKING) },
                "hipStreamCreateWithFlags",
            )?,
        }
        // SAFETY: NUL-terminated by the runtime within 256 bytes.
        let name = unsafe { super::loader::c_str(name.as_ptr()) };
        Ok(Self {
            api,
            device,
            stream,
            caller: caller_stream.map(|s| (s, std::ptr::null_mut())),
            modules: Vec::new(),
            name,
            arch,
        })
    }

    /// Makes this lane's later work wait for everything queued on the
    /// caller's stream so far (an event recorded there, waited for here; no
    /// host wait). Nothing for a lane that follows no caller.
    pub fn follow_caller(&mut self) -> Result<()> {
        let Some((caller_stream, event)) = self.caller else {
            return Ok(());
        };
        let event = if event.is_null() {
            let made = self.create_event()? as HipEvent;
            self.caller = Some((caller_stream, made));
            made
        } else {
            event
        };
        self.current()?;
        // SAFETY: a live event of this device (destroyed in Drop) and the
        // caller's live stream (beside_stream's contract); a stream wait takes
        // the event's state when it is queued, so re-recording it is allowed.
        self.api.check(
            unsafe { (self.api.hipEventRecord)(event, caller_stream) },
            "hipEventRecord (the caller's stream)",
        )?;
        self.wait_event(event as u64)
    }

    fn current(&self) -> Result<()> {
        // SAFETY: device index was validated in `open`.
        self.api.check(
            unsafe { (self.api.hipSetDevice)(self.device) },
            "hipSetDevice",
        )
    }
}

impl Backend for HipLane {
    type Function = HipFunction;

    fn load(&mut self, kernel: &KernelSource) -> Result<Vec<HipFunction>> {
        let code = super::compile::hip_code_object(kernel, &self.arch)?;
        self.current()?;
        let mut module: HipModule = std::ptr::null_mut();
        // SAFETY: code is a code object for this device's target.
        self.api.check(
            unsafe { (self.api.hipModuleLoadData)(&mut module, code.as_ptr().cast()) },
            "hipModuleLoadData",
        )?;
        self.modules.push(module);
        kernel
            .entries
            .iter()
            .map(|entry| {
                let c = CString::new(*entry).map_err(|_| Error::invalid("NUL in entry name"))?;
                let mut f: HipFunction = std::ptr::null_mut();
                // SAFETY: module is loaded; c is NUL-terminated.
                self.api.check(
                    unsafe { (self.api.hipModuleGetFunction)(&mut f, module, c.as_ptr()) },
                    entry,
                )?;
                Ok(f)
            })
            .collect()
    }

    fn alloc(&mut self, bytes: usize) -> Result<u64> {
        self.current()?;
        let mut ptr: HipDevicePtr = std::ptr::null_mut();
        // SAFETY: writes one pointer.
        self.api.check(
            unsafe { (self.api.hipMalloc)(&mut ptr, bytes) },
            "hipMalloc",
        )?;
        Ok(ptr as u64)
    }

    fn free(&mut self, ptr: u64) {
        let freed = self.current().and_then(|_| {
            // SAFETY: ptr came from hipMalloc; freed once.
            self.api.check(
                unsafe { (self.api.hipFree)(ptr as HipDevicePtr) },
                "hipFree",
            )
        });
        if let Err(e) = freed {
            super::engine::record_drop_error(e);
        }
    }

    fn upload(&mut self, dst: u64, src: &[u8]) -> Result<()> {
        crate::import::gpu::count_host_copy(src.len());
        self.current()?;
        // SAFETY: dst has src.len() bytes; HIP takes a mutable pointer but only reads it.
        self.api.check(
            unsafe {
                (self.api.hipMemcpyHtoDAsync)(
                    dst as HipDevicePtr,
                    src.as_ptr() as *mut c_void,
                    src.len(),
                    self.stream,
                )
            },
            "hipMemcpyHtoDAsync",
        )?;
        // The source is pageable and may be freed right after: finish now.
        self.synchronize()
    }

    fn download(&mut self, dst: &mut [u8], src: u64) -> Result<()> {
        self.current()?;
        // SAFETY: src has dst.len() bytes; synchronized before dst is read.
        self.api.check(
            unsafe {
                (self.api.hipMemcpyDtoHAsync)(
                    dst.as_mut_ptr().cast(),
                    src as HipDevicePtr,
                    dst.len(),
                    self.stream,
                )
            },
            "hipMemcpyDtoHAsync",
        )?;
        self.synchronize()
    }

    unsafe fn launch(
        &mut self,
        f: HipFunction,
        grid: (u32, u32),
        args: &mut [*mut c_void],
    ) -> Result<()> {
        self.current()?;
        // SAFETY: args match the kernel's parameters (engine.rs).
        self.api.check(
            unsafe {
                (self.api.hipModuleLaunchKernel)(
                    f,
                    grid.0,
                    grid.1,
                    1,
                    BLOCK,
                    1,
                    1,
                    0,
                    self.stream,
                    args.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            },
            "hipModuleLaunchKernel",
        )
    }

    fn synchronize(&mut self) -> Result<()> {
        // SAFETY: stream is live.
        self.api.check(
            unsafe { (self.api.hipStreamSynchronize)(self.stream) },
            "hipStreamSynchronize",
        )
    }

    fn memory(&self) -> DeviceMemoryId {
        DeviceMemoryId {
            kind: DeviceKind::Hip,
            context: self.device as u64,
        }
    }

    fn create_event(&mut self) -> Result<u64> {
        self.current()?;
        let mut event: HipEvent = std::ptr::null_mut();
        // SAFETY: writes one handle; destroyed by destroy_event.
        self.api.check(
            unsafe { (self.api.hipEventCreateWithFlags)(&mut event, HIP_EVENT_DISABLE_TIMING) },
            "hipEventCreateWithFlags",
        )?;
        Ok(event as u64)
    }

    fn destroy_event(&mut self, event: u64) {
        let destroyed = self.current().and_then(|()| {
            // SAFETY: an event of this device, destroyed once.
            self.api.check(
                unsafe { (self.api.hipEventDestroy)(event as HipEvent) },
                "hipEventDestroy",
            )
        });
        if let Err(e) = destroyed {
            super::engine::record_drop_error(e);
        }
    }

    fn record_event(&mut self, event: u64) -> Result<()> {
        self.current()?;
        // SAFETY: a live event; the stream is live.
        self.api.check(
            unsafe { (self.api.hipEventRecord)(event as HipEvent, self.stream) },
            "hipEventRecord",
        )
    }

    fn wait_event(&mut self, event: u64) -> Result<()> {
        self.current()?;
        // SAFETY: a live event (the caller's or ours); flags 0.
        self.api.check(
            unsafe { (self.api.hipStreamWaitEvent)(self.stream, event as HipEvent, 0) },
            "hipStreamWaitEvent",
        )
    }

    fn query_event(&mut self, event: u64) -> Result<bool> {
        self.current()?;
        // SAFETY: a live event.
        match unsafe { (self.api.hipEventQuery)(event as HipEvent) } {
            HIP_ERROR_NOT_READY => Ok(false),
            rc => self.api.check(rc, "hipEventQuery").map(|()| true),
        }
    }

    fn synchronize_event(&mut self, event: u64) -> Result<()> {
        // SAFETY: a live event.
        self.api.check(
            unsafe { (self.api.hipEventSynchronize)(event as HipEvent) },
            "hipEventSynchronize",
        )
    }

    fn copy_2d(&mut self, dst: Pitched, src: Pitched, row_bytes: usize, rows: usize) -> Result<()> {
        self.current()?;
        // SAFETY: both regions span `rows` rows of their pitches (checked by
        // the import); queued on our stream.
        self.api.check(
            unsafe {
                (self.api.hipMemcpy2DAsync)(
                    dst.ptr as HipDevicePtr,
                    dst.pitch,
                    src.ptr as *const c_void,
                    src.pitch,
                    row_bytes,
                    rows,
                    HIP_MEMCPY_DEVICE_TO_DEVICE,
                    self.stream,
                )
            },
            "hipMemcpy2DAsync",
        )
    }

    fn copy_from_array(
        &mut self,
        dst: Pitched,
        array: u64,
        row_bytes: usize,
        rows: usize,
    ) -> Result<()> {
        let copy = self.api.hipMemcpy2DFromArrayAsync.ok_or_else(|| {
            Error::NotSupported(format!(
                "{}: no hipMemcpy2DFromArrayAsync (device arrays need ROCm 5.1 or later)",
                self.api.library
            ))
        })?;
        self.current()?;
        // SAFETY: dst spans `rows` rows of its pitch; the array's extent
        // was checked where the runtime can tell it.
        self.api.check(
            unsafe {
                copy(
                    dst.ptr as HipDevicePtr,
                    dst.pitch,
                    array as HipArray,
                    0,
                    0,
                    row_bytes,
                    rows,
                    HIP_MEMCPY_DEVICE_TO_DEVICE,
                    self.stream,
                )
            },
            "hipMemcpy2DFromArrayAsync",
        )
    }

    fn allocation_range(&mut self, ptr: u64) -> Result<Option<(u64, usize)>> {
        let Some(get) = self.api.hipMemGetAddressRange else {
            return Ok(None);
        };
        self.current()?;
        let (mut base, mut bytes): (HipDevicePtr, usize) = (std::ptr::null_mut(), 0);
        // SAFETY: writes two values; any pointer value may be asked about.
        self.api.check(
            unsafe { get(&mut base, &mut bytes, ptr as HipDevicePtr) },
            "hipMemGetAddressRange",
        )?;
        Ok(Some((base as u64, bytes)))
    }

    fn array_extent(&mut self, array: u64) -> Result<Option<ArrayExtent>> {
        let Some(get) = self.api.hipArrayGetDescriptor else {
            return Ok(None);
        };
        self.current()?;
        let mut d = super::cuda::sys::CudaArrayDescriptor::default();
        // SAFETY: writes one descriptor (HIP_ARRAY_DESCRIPTOR has CUDA's layout).
        self.api.check(
            unsafe { get(&mut d, array as HipArray) },
            "hipArrayGetDescriptor",
        )?;
        Ok(
            super::cuda::sys::array_format_bytes(d.format).map(|channel_bytes| ArrayExtent {
                width: d.width,
                height: d.height.max(1),
                channels: d.num_channels as usize,
                channel_bytes,
            }),
        )
    }
}

impl Drop for HipLane {
    fn drop(&mut self) {
        let api = self.api;
        let record = |rc: HipError, call: &str| {
            if let Err(e) = api.check(rc, call) {
                super::engine::record_drop_error(e);
            }
        };
        match self.current() {
            // SAFETY: handles created by this lane, released once.
            Ok(()) => unsafe {
                for m in self.modules.drain(..) {
                    record((api.hipModuleUnload)(m), "hipModuleUnload");
                }
                if !self.stream.is_null() {
                    record((api.hipStreamDestroy)(self.stream), "hipStreamDestroy");
                }
                if let Some((_, event)) = self.caller.filter(|(_, e)| !e.is_null()) {
                    record((api.hipEventDestroy)(event), "hipEventDestroy");
                }
            },
            Err(e) => super::engine::record_drop_error(e),
        }
    }
}
