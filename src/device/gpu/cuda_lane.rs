//! The CUDA lane: a context (the device's primary one, or a caller's), a
//! stream (ours or the caller's), and the engine's [`Backend`] calls, each
//! made with the context pushed by a [`ContextGuard`].
//!
//! A lane beside a caller's stream ([`CudaLane::beside_stream`]) queues on
//! a non-blocking stream of its own and orders itself after the caller's
//! stream by event ([`CudaLane::follow_caller`]): the caller's later work
//! (a decoder's next copies) does not queue behind our kernels, and our
//! downloads wait for our stream only.

use super::cuda::{self, result::check, sys::*, ContextGuard, CudaDriver};
use super::engine::{ArrayExtent, Backend, Pitched};
use crate::device::{DeviceKind, DeviceMemoryId};
use super::kernels::{KernelSource, BLOCK};
use crate::{Error, Result};
use std::ffi::{c_void, CString};

pub struct CudaLane {
    api: &'static CudaDriver,
    /// Set when we retained the primary context of this device.
    primary_of: Option<CUdevice>,
    ctx: CUcontext,
    stream: CUstream,
    owns_stream: bool,
    /// The caller's stream this lane follows (`beside_stream`), and the
    /// event recorded there each time (created on first use).
    caller: Option<(CUstream, CUevent)>,
    modules: Vec<CUmodule>,
    pub name: String,
    pub arch: String,
    pub memory_bytes: usize,
}

// SAFETY: CUDA contexts and streams may be used from any thread once
// pushed; the lane pushes its context around every call.
unsafe impl Send for CudaLane {}

pub fn device_count() -> Result<usize> {
    let api = cuda::driver()?;
    let mut n = 0;
    // SAFETY: writes one int.
    check(
        api,
        unsafe { (api.cuDeviceGetCount)(&mut n) },
        "cuDeviceGetCount",
    )?;
    Ok(n.max(0) as usize)
}

fn describe_device(api: &CudaDriver, dev: CUdevice) -> Result<(String, String, usize)> {
    let mut name = [0 as std::ffi::c_char; 256];
    let (mut major, mut minor, mut mem) = (0, 0, 0usize);
    // SAFETY: the buffer has 256 bytes as passed; the others write one value.
    unsafe {
        check(
            api,
            (api.cuDeviceGetName)(name.as_mut_ptr(), 256, dev),
            "cuDeviceGetName",
        )?;
        check(
            api,
            (api.cuDeviceGetAttribute)(
                &mut major,
                CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                dev,
            ),
            "cuDeviceGetAttribute",
        )?;
        check(
            api,
            (api.cuDeviceGetAttribute)(
                &mut minor,
                CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                dev,
            ),
            "cuDeviceGetAttribute",
        )?;
        check(
            api,
            (api.cuDeviceTotalMem_v2)(&mut mem, dev),
            "cuDeviceTotalMem",
        )?;
        Ok((
            super::loader::c_str(name.as_ptr()),
            format!("compute_{major}{minor}"),
            mem,
        ))
    }
}

/// PTX from an NVRTC newer than the driver is refused by the JIT
/// (CUDA_ERROR_UNSUPPORTED_PTX_VERSION); say so before compiling.
fn check_ptx_loadable(api: &CudaDriver) -> Result<()> {
    let compiler = super::nvrtc::nvrtc()?;
    let (major, minor) = compiler.version()?;
    let mut driver = 0;
    // SAFETY: writes one int.
    check(
        api,
        unsafe { (api.cuDriverGetVersion)(&mut driver) },
        "cuDriverGetVersion",
    )?;
    if major * 1000 + minor * 10 > driver {
        return Err(Error::Device(format!(
            "NVRTC {major}.{minor} ({}) is newer than the CUDA driver ({}.{}); its PTX would not load: \
             point {} at a libnvrtc of CUDA {}.x or older",
            compiler.library,
            driver / 1000,
            (driver % 1000) / 10,
            super::nvrtc::ENV,
            driver / 1000
        )));
    }
    Ok(())
}

impl CudaLane {
    /// Device `index`'s primary context and a new stream.
    pub fn open(index: usize) -> Result<Self> {
        let api = cuda::driver()?;
        let count = device_count()?;
        if index >= count {
            return Err(Error::invalid(format!(
                "CUDA device {index} requested, {count} present"
            )));
        }
        let mut dev: CUdevice = 0;
        // SAFETY: index < count.
        check(
            api,
            unsafe { (api.cuDeviceGet)(&mut dev, index as i32) },
            "cuDeviceGet",
        )?;
        let (name, arch, memory_bytes) = describe_device(api, dev)?;
        let mut ctx: CUcontext = std::ptr::null_mut();
        // SAFETY: dev is valid; released in Drop.
        check(
            api,
            unsafe { (api.cuDevicePrimaryCtxRetain)(&mut ctx, dev) },
            "cuDevicePrimaryCtxRetain",
        )?;
        let mut lane = Self {
            api,
            primary_of: Some(dev),
            ctx,
            stream: std::ptr::null_mut(),
            owns_stream: true,
            caller: None,
            modules: Vec::new(),
            name,
            arch,
            memory_bytes,
        };
        // SAFETY: ctx was just retained (released in Drop).
        let _guard = unsafe { ContextGuard::push(api, ctx) }?;
        // SAFETY: context current; flags 0.
        check(
            api,
            unsafe { (api.cuStreamCreate)(&mut lane.stream, 0) },
            "cuStreamCreate",
        )?;
        Ok(lane)
    }

    /// A lane on the caller's context and stream (FFmpeg's hw frames, an
    /// application's pipeline); the caller keeps ownership of both and must
    /// keep them alive while the lane lives.
    ///
    /// # Safety
    /// `ctx` is a live context and `stream` a stream in it (or NULL for the
    /// context's default stream).
    pub unsafe fn from_stream(ctx: CUcontext, stream: CUstream) -> Result<Self> {
        let api = cuda::driver()?;
        let mut dev: CUdevice = 0;
        {
            // SAFETY: ctx is live (the caller's contract).
            let _guard = unsafe { ContextGuard::push(api, ctx) }?;
            // SAFETY: writes one int; the context is current.
            check(
                api,
                unsafe { (api.cuCtxGetDevice)(&mut dev) },
                "cuCtxGetDevice",
            )?;
        }
        let (name, arch, memory_bytes) = describe_device(api, dev)?;
        Ok(Self {
            api,
            primary_of: None,
            ctx,
            stream,
            owns_stream: false,
            caller: None,
            modules: Vec::new(),
            name,
            arch,
            memory_bytes,
        })
    }
}

impl CudaLane {
    /// A lane on the caller's context with a stream of its own (created
    /// here, non-blocking, destroyed with the lane): an import library
    /// stream for frames of a context that is not the primary one (FFmpeg's
    /// hw device contexts create their own).
    ///
    /// # Safety
    /// `ctx` is a live context that outlives the lane.
    pub unsafe fn own_stream_in(ctx: CUcontext) -> Result<Self> {
        // SAFETY: forwarded contract; a NULL stream is replaced below.
        let mut lane = unsafe { Self::from_stream(ctx, std::ptr::null_mut()) }?;
        let _guard = lane.guard()?;
        let mut stream: CUstream = std::ptr::null_mut();
        // SAFETY: the context is current; writes one handle, destroyed in Drop.
        check(
            lane.api,
            unsafe { (lane.api.cuStreamCreate)(&mut stream, CU_STREAM_NON_BLOCKING) },
            "cuStreamCreate",
        )?;
        drop(_guard);
        lane.stream = stream;
        lane.owns_stream = true;
        Ok(lane)
    }

    /// A scoring lane for frames the caller writes on `caller_stream` (FFmpeg's
    /// `AVCUDADeviceContext` stream, NULL for the legacy default stream): a
    /// non-blocking stream of ours in the caller's context, ordered after
    /// `caller_stream` by [`CudaLane::follow_caller`].
    ///
    /// # Safety
    /// `ctx` is a live context and `caller_stream` a stream in it (or NULL),
    /// both outliving the lane.
    pub unsafe fn beside_stream(ctx: CUcontext, caller_stream: CUstream) -> Result<Self> {
        // SAFETY: forwarded contract.
        let mut lane = unsafe { Self::own_stream_in(ctx) }?;
        lane.caller = Some((caller_stream, std::ptr::null_mut()));
        Ok(lane)
    }

    /// Makes this lane's later work wait for everything queued on the
    /// caller's stream so far (an event recorded there, waited for here; no
    /// host wait). Nothing for a lane that follows no caller.
    pub fn follow_caller(&mut self) -> Result<()> {
        let Some((caller_stream, event)) = self.caller else {
            return Ok(());
        };
        let event = if event.is_null() {
            let made = self.create_event()? as CUevent;
            self.caller = Some((caller_stream, made));
            made
        } else {
            event
        };
        {
            let _guard = self.guard()?;
            // SAFETY: a live event of this context (destroyed in Drop) and the
            // caller's live stream (beside_stream's contract). Re-recording is
            // allowed: a stream wait takes the event's state when it is queued.
            check(
                self.api,
                unsafe { (self.api.cuEventRecord)(event, caller_stream) },
                "cuEventRecord (the caller's stream)",
            )?;
        }
        self.wait_event(event as u64)
    }

    fn guard(&self) -> Result<ContextGuard<'static>> {
        // SAFETY: the lane's context lives as long as the lane (retained
        // primary context, or the caller's by from_stream's contract).
        unsafe { ContextGuard::push(self.api, self.ctx) }
    }
}

impl Backend for CudaLane {
    type Function = CUfunction;

    fn load(&mut self, kernel: &KernelSource) -> Result<Vec<CUfunction>> {
        check_ptx_loadable(self.api)?;
        let ptx = super::compile::cuda_ptx(kernel, &self.arch)?;
        let mut ptx = ptx;
        if ptx.last() != Some(&0) {
            ptx.push(0);
        }
        let _guard = self.guard()?;
        let mut module: CUmodule = std::ptr::null_mut();
        // SAFETY: ptx is NUL-terminated PTX text; the driver JITs it.
        check(
            self.api,
            unsafe { (self.api.cuModuleLoadData)(&mut module, ptx.as_ptr().cast()) },
            "cuModuleLoadData",
        )?;
        self.modules.push(module);
        kernel
            .entries
            .iter()
            .map(|entry| {
                let c = CString::new(*entry).map_err(|_| Error::invalid("NUL in entry name"))?;
                let mut f: CUfunction = std::ptr::null_mut();
                // SAFETY: module is loaded; c is NUL-terminated.
                check(
                    self.api,
                    unsafe { (self.api.cuModuleGetFunction)(&mut f, module, c.as_ptr()) },
                    entry,
                )?;
                Ok(f)
            })
            .collect()
    }

    fn alloc(&mut self, bytes: usize) -> Result<u64> {
        let _guard = self.guard()?;
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: writes one pointer.
        check(
            self.api,
            unsafe { (self.api.cuMemAlloc_v2)(&mut ptr, bytes) },
            "cuMemAlloc",
        )?;
        Ok(ptr)
    }

    fn free(&mut self, ptr: u64) {
        let freed = self.guard().and_then(|_guard| {
            // SAFETY: ptr came from cuMemAlloc on this context; freed once.
            check(
                self.api,
                unsafe { (self.api.cuMemFree_v2)(ptr) },
                "cuMemFree",
            )
        });
        if let Err(e) = freed {
            super::engine::record_drop_error(e);
        }
    }

    fn upload(&mut self, dst: u64, src: &[u8]) -> Result<()> {
        crate::import::gpu::count_host_copy(src.len());
        let _guard = self.guard()?;
        // SAFETY: dst has at least src.len() bytes (engine reserves them);
        // pageable source, so the call returns once src is staged.
        check(
            self.api,
            unsafe {
                (self.api.cuMemcpyHtoDAsync_v2)(dst, src.as_ptr().cast(), src.len(), self.stream)
            },
            "cuMemcpyHtoDAsync",
        )
    }

    fn download(&mut self, dst: &mut [u8], src: u64) -> Result<()> {
        let _guard = self.guard()?;
        // SAFETY: src has at least dst.len() bytes; synchronized before dst is read.
        check(
            self.api,
            unsafe {
                (self.api.cuMemcpyDtoHAsync_v2)(
                    dst.as_mut_ptr().cast(),
                    src,
                    dst.len(),
                    self.stream,
                )
            },
            "cuMemcpyDtoHAsync",
        )?;
        // SAFETY: stream is live.
        check(
            self.api,
            unsafe { (self.api.cuStreamSynchronize)(self.stream) },
            "cuStreamSynchronize",
        )
    }

    unsafe fn launch(
        &mut self,
        f: CUfunction,
        grid: (u32, u32),
        args: &mut [*mut c_void],
    ) -> Result<()> {
        let _guard = self.guard()?;
        // SAFETY: args match the kernel's parameter list (engine.rs builds
        // them next to the kernel's signature in kernels/).
        check(
            self.api,
            unsafe {
                (self.api.cuLaunchKernel)(
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
            "cuLaunchKernel",
        )
    }

    fn synchronize(&mut self) -> Result<()> {
        let _guard = self.guard()?;
        // SAFETY: stream is live.
        check(
            self.api,
            unsafe { (self.api.cuStreamSynchronize)(self.stream) },
            "cuStreamSynchronize",
        )
    }

    fn memory(&self) -> DeviceMemoryId {
        DeviceMemoryId {
            kind: DeviceKind::Cuda,
            context: self.ctx as u64,
        }
    }

    fn create_event(&mut self) -> Result<u64> {
        let _guard = self.guard()?;
        let mut event: CUevent = std::ptr::null_mut();
        // SAFETY: writes one handle; destroyed by destroy_event.
        check(
            self.api,
            unsafe { (self.api.cuEventCreate)(&mut event, CU_EVENT_DISABLE_TIMING) },
            "cuEventCreate",
        )?;
        Ok(event as u64)
    }

    fn destroy_event(&mut self, event: u64) {
        let destroyed = self.guard().and_then(|_guard| {
            // SAFETY: an event of this context, destroyed once.
            check(
                self.api,
                unsafe { (self.api.cuEventDestroy_v2)(event as CUevent) },
                "cuEventDestroy",
            )
        });
        if let Err(e) = destroyed {
            super::engine::record_drop_error(e);
        }
    }

    fn record_event(&mut self, event: u64) -> Result<()> {
        let _guard = self.guard()?;
        // SAFETY: a live event of this context; the stream is live.
        check(
            self.api,
            unsafe { (self.api.cuEventRecord)(event as CUevent, self.stream) },
            "cuEventRecord",
        )
    }

    fn wait_event(&mut self, event: u64) -> Result<()> {
        let _guard = self.guard()?;
        // SAFETY: a live event (the caller's or ours); flags 0.
        check(
            self.api,
            unsafe { (self.api.cuStreamWaitEvent)(self.stream, event as CUevent, 0) },
            "cuStreamWaitEvent",
        )
    }

    fn query_event(&mut self, event: u64) -> Result<bool> {
        let _guard = self.guard()?;
        // SAFETY: a live event.
        match unsafe { (self.api.cuEventQuery)(event as CUevent) } {
            CUDA_ERROR_NOT_READY => Ok(false),
            rc => check(self.api, rc, "cuEventQuery").map(|()| true),
        }
    }

    fn synchronize_event(&mut self, event: u64) -> Result<()> {
        let _guard = self.guard()?;
        // SAFETY: a live event.
        check(
            self.api,
            unsafe { (self.api.cuEventSynchronize)(event as CUevent) },
            "cuEventSynchronize",
        )
    }

    fn copy_2d(&mut self, dst: Pitched, src: Pitched, row_bytes: usize, rows: usize) -> Result<()> {
        let copy = CudaMemcpy2D {
            src_memory_type: CU_MEMORYTYPE_DEVICE,
            src_device: src.ptr,
            src_pitch: src.pitch,
            dst_memory_type: CU_MEMORYTYPE_DEVICE,
            dst_device: dst.ptr,
            dst_pitch: dst.pitch,
            width_in_bytes: row_bytes,
            height: rows,
            ..Default::default()
        };
        self.memcpy_2d(&copy)
    }

    fn copy_from_array(
        &mut self,
        dst: Pitched,
        array: u64,
        row_bytes: usize,
        rows: usize,
    ) -> Result<()> {
        let copy = CudaMemcpy2D {
            src_memory_type: CU_MEMORYTYPE_ARRAY,
            src_array: array as usize,
            dst_memory_type: CU_MEMORYTYPE_DEVICE,
            dst_device: dst.ptr,
            dst_pitch: dst.pitch,
            width_in_bytes: row_bytes,
            height: rows,
            ..Default::default()
        };
        self.memcpy_2d(&copy)
    }

    fn allocation_range(&mut self, ptr: u64) -> Result<Option<(u64, usize)>> {
        let _guard = self.guard()?;
        let (mut base, mut bytes): (CUdeviceptr, usize) = (0, 0);
        // SAFETY: writes two values; any ptr value may be asked about.
        check(
            self.api,
            unsafe { (self.api.cuMemGetAddressRange_v2)(&mut base, &mut bytes, ptr) },
            "cuMemGetAddressRange",
        )?;
        Ok(Some((base, bytes)))
    }

    fn array_extent(&mut self, array: u64) -> Result<Option<ArrayExtent>> {
        let Some(get) = self.api.cuArrayGetDescriptor_v2 else {
            return Ok(None);
        };
        let _guard = self.guard()?;
        let mut d = CudaArrayDescriptor::default();
        // SAFETY: writes one descriptor; the array is the caller's.
        check(
            self.api,
            unsafe { get(&mut d, array as CUarray) },
            "cuArrayGetDescriptor",
        )?;
        Ok(array_format_bytes(d.format).map(|channel_bytes| ArrayExtent {
            width: d.width,
            height: d.height.max(1),
            channels: d.num_channels as usize,
            channel_bytes,
        }))
    }
}

impl CudaLane {
    fn memcpy_2d(&mut self, copy: &CudaMemcpy2D) -> Result<()> {
        let _guard = self.guard()?;
        // SAFETY: the descriptor names live memory spanning the rows copied
        // (the import checks extents first); queued on our stream.
        check(
            self.api,
            unsafe { (self.api.cuMemcpy2DAsync_v2)(copy, self.stream) },
            "cuMemcpy2DAsync",
        )
    }

    /// The stream work is queued on (ours, or the caller's).
    pub fn stream(&self) -> CUstream {
        self.stream
    }

    /// The context the lane's calls run in.
    pub fn context(&self) -> CUcontext {
        self.ctx
    }
}

impl Drop for CudaLane {
    fn drop(&mut self) {
        let api = self.api;
        let record = |rc: CUresult, call: &str| {
            if let Err(e) = check(api, rc, call) {
                super::engine::record_drop_error(e);
            }
        };
        match self.guard() {
            Ok(_guard) => {
                // SAFETY: each handle was created by this lane and is
                // released once.
                unsafe {
                    for m in self.modules.drain(..) {
                        record((api.cuModuleUnload)(m), "cuModuleUnload");
                    }
                    if self.owns_stream && !self.stream.is_null() {
                        record((api.cuStreamDestroy_v2)(self.stream), "cuStreamDestroy");
                    }
                    if let Some((_, event)) = self.caller.filter(|(_, e)| !e.is_null()) {
                        record((api.cuEventDestroy_v2)(event), "cuEventDestroy");
                    }
                }
            }
            Err(e) => super::engine::record_drop_error(e),
        }
        if let Some(dev) = self.primary_of {
            // SAFETY: balances the retain in `open`.
            record(
                unsafe { (api.cuDevicePrimaryCtxRelease_v2)(dev) },
                "cuDevicePrimaryCtxRelease",
            );
        }
    }
}
