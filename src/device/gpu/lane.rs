//! The GPU lane, one for both vendors: a device made current around each
//! call, a stream, the modules it loaded, and the kernel runner's [`Backend`]
//! calls, all through the normalised [`DriverApi`] of [`super::cuda`] or
//! [`super::hip`]. Nothing here names a vendor.
//!
//! Ownership follows cudarc's safe layer: a [`Context`] (a retained primary
//! context, a caller's context, or a HIP device ordinal) is shared by
//! [`Arc`] with every handle made in it — [`Stream`], [`Event`],
//! [`Module`] — and each handle releases itself on drop, errors recorded
//! with [`record_drop_error`] rather than raised.
//!
//! A lane beside a caller's stream ([`GpuLane::beside_stream`]) queues on a
//! non-blocking stream of its own and orders itself after the caller's
//! stream by an event recorded there ([`GpuLane::wait_for_caller_stream`]): the
//! caller's later work (a decoder's next copies) does not queue behind our
//! kernels, and our downloads wait for our stream only.

use super::api::{Current, DevicePtr, DriverApi, RawContext, RawEvent, RawFunction, RawModule, RawStream};
use super::api::{EVENT_DISABLE_TIMING, NOT_READY, NO_DEVICE, STREAM_NON_BLOCKING};
use super::backend::{record_drop_error, ArrayExtent, ArrayRef, Backend, DeviceEvent, DeviceMemory, EventRef, Pitched};
use super::kernels::{KernelSource, BLOCK};
use crate::device::{DeviceKind, DeviceMemoryId};
use crate::{Error, Result};
use std::ffi::{c_int, c_void, CString};
use std::sync::Arc;

/// The driver table of `kind` (loaded on first use).
pub(crate) fn driver(kind: DeviceKind) -> Result<&'static DriverApi> {
    match kind {
        DeviceKind::Cuda => super::cuda::table(),
        DeviceKind::Hip => super::hip::table(),
        DeviceKind::Cpu => Err(Error::invalid("the CPU has no GPU driver")),
    }
}

fn vendor(kind: DeviceKind) -> &'static str {
    match kind {
        DeviceKind::Cuda => "CUDA",
        DeviceKind::Hip => "HIP",
        DeviceKind::Cpu => "CPU",
    }
}

/// How many devices of `kind` there are: 0 where the runtime loads but finds
/// no device (`NO_DEVICE` from its init or its count); an error naming the
/// library where it does not load.
pub fn device_count(kind: DeviceKind) -> Result<usize> {
    let api = driver(kind)?;
    // SAFETY: flags 0; both runtimes allow repeated initialisation.
    match unsafe { (api.calls.init.f)(0) } {
        NO_DEVICE => return Ok(0),
        rc => api.check(rc, api.calls.init.name)?,
    }
    let mut n: c_int = 0;
    // SAFETY: writes one int.
    match unsafe { (api.calls.device_count.f)(&mut n) } {
        NO_DEVICE => Ok(0),
        rc => api.check(rc, api.calls.device_count.name).map(|()| n.max(0) as usize),
    }
}

/// What must be current for calls on a device's handles.
pub struct Context {
    api: &'static DriverApi,
    /// The device handle (`CUdevice`; HIP: the ordinal).
    device: c_int,
    /// The CUDA context pushed around calls; NULL for HIP.
    raw: RawContext,
    /// Whether `raw` is the device's primary context, retained by us.
    retained: bool,
}

// SAFETY: a context (and a HIP device ordinal) may be made current on any
// thread; every call through it does so first ([`Context::enter`]).
unsafe impl Send for Context {}
// SAFETY: as for Send; the struct holds no state that calls mutate.
unsafe impl Sync for Context {}

/// The device made current on this thread until dropped (CUDA: the context
/// pushed and popped, so a caller's context stack is left as it was, even
/// on early return; HIP: the ordinal set).
pub struct Entered<'a> {
    context: &'a Context,
}

impl Context {
    /// Device `index`'s own context: CUDA's primary context, retained for
    /// the context's life; HIP's device ordinal.
    fn of_device(api: &'static DriverApi, index: usize) -> Result<Arc<Self>> {
        let count = device_count(api.kind)?;
        if index >= count {
            return Err(Error::invalid(format!(
                "{} device {index} requested, {count} present",
                vendor(api.kind)
            )));
        }
        let ordinal = index as c_int;
        match api.current {
            Current::PushContext { device_of_ordinal, retain_primary, .. } => {
                let mut device: c_int = 0;
                // SAFETY: index < count; writes one handle.
                api.checked(&device_of_ordinal, |f| unsafe { f(&mut device, ordinal) })?;
                let mut raw: RawContext = std::ptr::null_mut();
                // SAFETY: a valid device; released in Drop.
                api.checked(&retain_primary, |f| unsafe { f(&mut raw, device) })?;
                Ok(Arc::new(Context { api, device, raw, retained: true }))
            }
            Current::SetDevice { .. } => Ok(Arc::new(Context { api, device: ordinal, raw: std::ptr::null_mut(), retained: false })),
        }
    }

    /// A caller's CUDA context (borrowed: the caller keeps it alive).
    ///
    /// # Safety
    /// `raw` is a live context of this driver that outlives every handle
    /// made in it.
    unsafe fn borrowed(api: &'static DriverApi, raw: RawContext) -> Result<Arc<Self>> {
        let Current::PushContext { device_of_current, .. } = api.current else {
            return Err(Error::invalid(format!("{} has no contexts: name a device instead", vendor(api.kind))));
        };
        let mut device: c_int = 0;
        {
            let context = Context { api, device, raw, retained: false };
            let _current = context.enter()?;
            // SAFETY: writes one int; the context is current.
            api.checked(&device_of_current, |f| unsafe { f(&mut device) })?;
        }
        Ok(Arc::new(Context { api, device, raw, retained: false }))
    }

    /// Makes the device current until the guard drops.
    pub fn enter(&self) -> Result<Entered<'_>> {
        match self.api.current {
            // SAFETY: the context is live while `self` is (retained, or the
            // caller's by `borrowed`'s contract).
            Current::PushContext { push, .. } => self.api.checked(&push, |f| unsafe { f(self.raw) })?,
            // SAFETY: the ordinal was checked against the device count.
            Current::SetDevice { set } => self.api.checked(&set, |f| unsafe { f(self.device) })?,
        }
        Ok(Entered { context: self })
    }

    /// The memory device pointers of this context are valid in.
    pub fn memory(&self) -> DeviceMemoryId {
        let context = match self.api.current {
            Current::PushContext { .. } => self.raw as u64,
            Current::SetDevice { .. } => self.device as u64,
        };
        DeviceMemoryId { kind: self.api.kind, context }
    }

    pub fn api(&self) -> &'static DriverApi {
        self.api
    }

    /// The CUDA context (NULL for HIP).
    pub fn raw(&self) -> RawContext {
        self.raw
    }

    /// Runs `release` with the device current, recording its error (or the
    /// failure to make the device current) instead of returning it.
    fn release(&self, call: &str, release: impl FnOnce() -> c_int) {
        let done = self.enter().and_then(|_current| self.api.check(release(), call));
        if let Err(e) = done {
            record_drop_error(e);
        }
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        if let Current::PushContext { pop, .. } = self.context.api.current {
            let mut popped: RawContext = std::ptr::null_mut();
            // SAFETY: pops exactly the context `enter` pushed; a failure can
            // only mean the caller destroyed the context under us.
            if let Err(e) = self.context.api.checked(&pop, |f| unsafe { f(&mut popped) }) {
                record_drop_error(e);
            }
        }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if let (true, Current::PushContext { release_primary, .. }) = (self.retained, self.api.current) {
            // SAFETY: balances the retain in `of_device`; nothing made in the
            // context is left (each handle holds the Arc).
            if let Err(e) = self.api.checked(&release_primary, |f| unsafe { f(self.device) }) {
                record_drop_error(e);
            }
        }
    }
}

/// A stream: one of ours (destroyed on drop), or a caller's (borrowed).
pub(crate) struct Stream {
    context: Arc<Context>,
    raw: RawStream,
    owned: bool,
}

// SAFETY: streams may be used from any thread with their device current;
// every call through the handle makes it so.
unsafe impl Send for Stream {}

impl Stream {
    /// A new stream (`non_blocking`: no implicit synchronisation with the
    /// legacy default / null stream).
    pub(crate) fn create(context: &Arc<Context>, non_blocking: bool) -> Result<Self> {
        let api = context.api;
        let _current = context.enter()?;
        let mut raw: RawStream = std::ptr::null_mut();
        let flags = if non_blocking { STREAM_NON_BLOCKING } else { 0 };
        // SAFETY: the device is current; writes one handle, destroyed in Drop.
        api.checked(&api.calls.stream_create, |f| unsafe { f(&mut raw, flags) })?;
        Ok(Stream { context: context.clone(), raw, owned: true })
    }

    /// A caller's stream (NULL: the default / null stream).
    ///
    /// # Safety
    /// `raw` is a stream of `context`'s device that outlives the handle.
    pub(crate) unsafe fn borrowed(context: &Arc<Context>, raw: RawStream) -> Self {
        Stream { context: context.clone(), raw, owned: false }
    }

    pub(crate) fn raw(&self) -> RawStream {
        self.raw
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.owned {
            let api = self.context.api;
            // SAFETY: our stream, destroyed once; queued work still completes.
            self.context.release(api.calls.stream_destroy.name, || unsafe { (api.calls.stream_destroy.f)(self.raw) });
        }
    }
}

/// An event of ours (timing disabled), destroyed on drop; work it was
/// recorded after still completes, and waits queued on it stay valid.
pub struct Event {
    context: Arc<Context>,
    raw: RawEvent,
}

// SAFETY: as for Stream.
unsafe impl Send for Event {}
// SAFETY: nothing is mutated through &Event; the driver's event calls may
// come from any thread.
unsafe impl Sync for Event {}

impl Event {
    pub fn create(context: &Arc<Context>) -> Result<Self> {
        let api = context.api;
        let _current = context.enter()?;
        let mut raw: RawEvent = std::ptr::null_mut();
        // SAFETY: the device is current; writes one handle, destroyed in Drop.
        api.checked(&api.calls.event_create, |f| unsafe { f(&mut raw, EVENT_DISABLE_TIMING) })?;
        Ok(Event { context: context.clone(), raw })
    }

    pub fn raw(&self) -> RawEvent {
        self.raw
    }

}

impl DeviceEvent for Event {
    fn handle(&self) -> u64 {
        self.raw as u64
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let api = self.context.api;
        // SAFETY: our event, destroyed once.
        self.context.release(api.calls.event_destroy.name, || unsafe { (api.calls.event_destroy.f)(self.raw) });
    }
}

/// A loaded module, unloaded on drop.
pub(crate) struct Module {
    context: Arc<Context>,
    raw: RawModule,
}

// SAFETY: as for Stream.
unsafe impl Send for Module {}

impl Module {
    /// Loads `image` (NUL-terminated PTX, an AMD code object).
    pub(crate) fn load(context: &Arc<Context>, image: &[u8]) -> Result<Self> {
        let api = context.api;
        let _current = context.enter()?;
        let mut raw: RawModule = std::ptr::null_mut();
        // SAFETY: image is what the vendor's compiler produced for this
        // device (compile() NUL-terminates PTX); the driver copies it.
        api.checked(&api.calls.module_load, |f| unsafe { f(&mut raw, image.as_ptr().cast()) })?;
        Ok(Module { context: context.clone(), raw })
    }

    /// The kernel `entry`, valid while this module is loaded.
    pub(crate) fn function(&self, entry: &str) -> Result<Function> {
        let api = self.context.api;
        let c = CString::new(entry).map_err(|_| Error::invalid("NUL in entry name"))?;
        let _current = self.context.enter()?;
        let mut raw: RawFunction = std::ptr::null_mut();
        // SAFETY: the module is loaded; c is NUL-terminated.
        api.check(unsafe { (api.calls.module_function.f)(&mut raw, self.raw, c.as_ptr()) }, entry)?;
        Ok(Function(raw))
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        let api = self.context.api;
        // SAFETY: our module, unloaded once; launches of its functions were
        // queued before and complete.
        self.context.release(api.calls.module_unload.name, || unsafe { (api.calls.module_unload.f)(self.raw) });
    }
}

/// Device memory of ours (an allocation, or a mapping of external memory
/// that the runtime frees the same way), freed on drop.
pub struct DeviceBuffer {
    context: Arc<Context>,
    ptr: DevicePtr,
    bytes: usize,
}

impl DeviceBuffer {
    /// `bytes` (at least 1) of device memory in `context`.
    pub fn alloc(context: &Arc<Context>, bytes: usize) -> Result<Self> {
        let api = context.api;
        let bytes = bytes.max(1);
        let _current = context.enter()?;
        let mut ptr: DevicePtr = 0;
        // SAFETY: the device is current; writes one pointer, freed in Drop.
        api.checked(&api.calls.mem_alloc, |f| unsafe { f(&mut ptr, bytes) }).map_err(|e| match e {
            // Out of memory is the likely failure: say where and how much.
            Error::Device(why) => Error::Device(format!("{} device {}: {bytes} bytes: {why}", vendor(api.kind), context.device)),
            other => other,
        })?;
        Ok(DeviceBuffer { context: context.clone(), ptr, bytes })
    }
}

impl DeviceMemory for DeviceBuffer {
    fn ptr(&self) -> u64 {
        self.ptr
    }
    fn bytes(&self) -> usize {
        self.bytes
    }
    fn into_raw(self: Box<Self>) -> u64 {
        let ptr = self.ptr;
        let this = std::mem::ManuallyDrop::new(*self);
        // SAFETY: `this` is never dropped, so its context is dropped once,
        // here, and the memory is not freed.
        drop(unsafe { std::ptr::read(&this.context) });
        ptr
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        let api = self.context.api;
        // SAFETY: our allocation (or mapping), freed once; the free waits
        // for work queued on it (cuMemFree / hipFree synchronise).
        self.context.release(api.calls.mem_free.name, || unsafe { (api.calls.mem_free.f)(self.ptr) });
    }
}

/// A kernel of a module the lane keeps loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Function(RawFunction);

/// A GPU lane: a stream on a device (ours, or a caller's), the modules it
/// loaded, and optionally a caller's stream it follows.
pub struct GpuLane {
    stream: Stream,
    /// The caller's stream this lane follows (`beside_stream`), and the
    /// event recorded there each time (created on first use).
    caller: Option<(Stream, Option<Event>)>,
    modules: Vec<Module>,
    context: Arc<Context>,
    pub name: String,
    pub arch: String,
    pub memory_bytes: usize,
    /// Host-to-device copies queued on this lane (any data: kernel tables,
    /// host pictures); the picture copies are counted, once per picture,
    /// by the context that asks for them (`picture::HostCopies`).
    uploads: u64,
}

impl GpuLane {
    /// Device `index` of `kind`: its own context and a new stream.
    pub fn open(kind: DeviceKind, index: usize) -> Result<Self> {
        let api = driver(kind)?;
        let context = Context::of_device(api, index)?;
        let stream = Stream::create(&context, false)?;
        Self::on(context, stream, None)
    }

    /// A lane on device `index` of `kind` for pictures the caller writes on
    /// `caller_stream` (NULL: the default / null stream): a non-blocking
    /// stream of ours, ordered after `caller_stream` by
    /// [`GpuLane::wait_for_caller_stream`].
    ///
    /// # Safety
    /// `caller_stream` is a live stream of device `index` (or NULL) that
    /// outlives the lane.
    pub unsafe fn beside_stream_of_device(kind: DeviceKind, index: usize, caller_stream: RawStream) -> Result<Self> {
        let context = Context::of_device(driver(kind)?, index)?;
        // SAFETY: forwarded contract.
        unsafe { Self::beside(context, caller_stream) }
    }

    /// A lane in a caller's CUDA context for frames it writes on
    /// `caller_stream` (NULL: the legacy default stream): as
    /// [`GpuLane::beside_stream_of_device`].
    ///
    /// # Safety
    /// `ctx` is a live context and `caller_stream` a stream in it (or
    /// NULL), both outliving the lane.
    pub unsafe fn beside_stream(ctx: RawContext, caller_stream: RawStream) -> Result<Self> {
        // SAFETY: forwarded contract.
        let context = unsafe { Context::borrowed(super::cuda::table()?, ctx) }?;
        // SAFETY: forwarded contract.
        unsafe { Self::beside(context, caller_stream) }
    }

    /// # Safety
    /// `caller_stream` is a live stream of the context's device (or NULL)
    /// that outlives the lane.
    unsafe fn beside(context: Arc<Context>, caller_stream: RawStream) -> Result<Self> {
        // Ours must not synchronise with the default stream: the caller's
        // may be it.
        let stream = Stream::create(&context, true)?;
        // SAFETY: forwarded contract.
        let caller = unsafe { Stream::borrowed(&context, caller_stream) };
        Self::on(context, stream, Some(caller))
    }

    /// A lane on the caller's CUDA context and stream (FFmpeg's hw frames,
    /// an application's pipeline); the caller keeps ownership of both.
    ///
    /// # Safety
    /// `ctx` is a live context and `stream` a stream in it (or NULL for the
    /// context's default stream), both outliving the lane.
    pub unsafe fn on_caller_stream(ctx: RawContext, stream: RawStream) -> Result<Self> {
        // SAFETY: forwarded contract.
        let context = unsafe { Context::borrowed(super::cuda::table()?, ctx) }?;
        // SAFETY: forwarded contract.
        let stream = unsafe { Stream::borrowed(&context, stream) };
        Self::on(context, stream, None)
    }

    /// A lane on the caller's CUDA context with a non-blocking stream of
    /// its own: an import library stream for frames of a context that is
    /// not the primary one (FFmpeg's hw device contexts create their own).
    ///
    /// # Safety
    /// `ctx` is a live context that outlives the lane.
    pub unsafe fn own_stream_in(ctx: RawContext) -> Result<Self> {
        // SAFETY: forwarded contract.
        let context = unsafe { Context::borrowed(super::cuda::table()?, ctx) }?;
        let stream = Stream::create(&context, true)?;
        Self::on(context, stream, None)
    }

    fn on(context: Arc<Context>, stream: Stream, caller: Option<Stream>) -> Result<Self> {
        let api = context.api;
        let (name, arch, memory_bytes) = {
            let _current = context.enter()?;
            let mut name = [0 as std::ffi::c_char; 256];
            // SAFETY: a 256-byte buffer as passed.
            api.checked(&api.calls.device_name, |f| unsafe { f(name.as_mut_ptr(), 256, context.device) })?;
            let mut memory = 0usize;
            if let Some(total) = &api.calls.device_memory {
                // SAFETY: writes one size.
                api.checked(total, |f| unsafe { f(&mut memory, context.device) })?;
            }
            // SAFETY: NUL-terminated by the runtime within 256 bytes.
            let name = unsafe { super::loader::c_str(name.as_ptr()) };
            (name, (api.vendor.arch)(context.device)?, memory)
        };
        Ok(GpuLane {
            stream,
            caller: caller.map(|s| (s, None)),
            modules: Vec::new(),
            context,
            name,
            arch,
            memory_bytes,
            uploads: 0,
        })
    }

    pub fn kind(&self) -> DeviceKind {
        self.context.api.kind
    }

    pub fn api(&self) -> &'static DriverApi {
        self.context.api
    }

    /// The stream work is queued on.
    pub fn stream(&self) -> RawStream {
        self.stream.raw()
    }

    /// Host-to-device copies queued on this lane so far.
    pub fn uploads(&self) -> u64 {
        self.uploads
    }

    /// The context the lane's handles are made in.
    pub fn context(&self) -> &Arc<Context> {
        &self.context
    }

    /// Makes this lane's later work wait for everything queued on the
    /// caller's stream so far (an event recorded there, waited for here; no
    /// host wait). Nothing for a lane that follows no caller.
    pub fn wait_for_caller_stream(&mut self) -> Result<()> {
        let Some((caller, event)) = &mut self.caller else {
            return Ok(());
        };
        if event.is_none() {
            *event = Some(Event::create(&self.context)?);
        }
        // Ours, kept in `self.caller` for the lane's life.
        let Some(event) = event.as_ref().map(Event::raw) else { return Ok(()) };
        let api = self.context.api;
        {
            let _current = self.context.enter()?;
            // SAFETY: a live event of this context and the caller's live
            // stream (beside_stream's contract). Re-recording is allowed: a
            // stream wait takes the event's state when it is queued.
            let rc = unsafe { (api.calls.event_record.f)(event, caller.raw()) };
            api.check(rc, &format!("{} (the caller's stream)", api.calls.event_record.name))?;
        }
        // SAFETY: our live event (above); flags 0.
        self.on_stream(&api.calls.stream_wait_event, |f, s| unsafe { f(s, event, 0) })
    }

    /// Runs `call` (a driver call on this lane's stream) with the device
    /// current, checking its status.
    fn on_stream<F>(&self, call: &super::api::Call<F>, run: impl FnOnce(&F, RawStream) -> c_int) -> Result<()> {
        let _current = self.context.enter()?;
        self.context.api.checked(call, |f| run(f, self.stream.raw))
    }
}

impl Backend for GpuLane {
    type Function = Function;
    type Buffer = DeviceBuffer;
    type Event = Event;

    fn wait_for_caller_stream(&mut self) -> Result<()> {
        GpuLane::wait_for_caller_stream(self)
    }

    fn load(&mut self, kernel: &KernelSource) -> Result<Vec<Function>> {
        let image = (self.context.api.vendor.compile)(kernel, &self.arch)?;
        let module = Module::load(&self.context, &image)?;
        let functions = kernel.entries.iter().map(|entry| module.function(entry)).collect::<Result<Vec<_>>>()?;
        self.modules.push(module);
        Ok(functions)
    }

    fn alloc(&mut self, bytes: usize) -> Result<DeviceBuffer> {
        DeviceBuffer::alloc(&self.context, bytes)
    }

    fn upload(&mut self, dst: u64, src: &[u8]) -> Result<()> {
        self.uploads += 1;
        let api = self.context.api;
        // SAFETY: dst has at least src.len() bytes (the kernel runner reserves them).
        self.on_stream(&api.calls.upload, |f, s| unsafe { f(dst, src.as_ptr().cast(), src.len(), s) })?;
        if api.quirks.upload_stages_pageable_source {
            Ok(())
        } else {
            // The source is pageable and may be freed once we return.
            self.synchronize()
        }
    }

    fn download(&mut self, dst: &mut [u8], src: u64) -> Result<()> {
        let api = self.context.api;
        // SAFETY: src has at least dst.len() bytes; the stream is
        // synchronised before dst is read.
        self.on_stream(&api.calls.download, |f, s| unsafe { f(dst.as_mut_ptr().cast(), src, dst.len(), s) })?;
        self.synchronize()
    }

    unsafe fn launch(&mut self, f: Function, grid: (u32, u32), args: &mut [*mut c_void]) -> Result<()> {
        let api = self.context.api;
        // SAFETY: args match the kernel's parameter list (the kernel runner builds
        // them next to the kernel's signature in kernels/); f belongs to a
        // module this lane keeps loaded.
        self.on_stream(&api.calls.launch, |launch, s| unsafe {
            launch(f.0, grid.0, grid.1, 1, BLOCK, 1, 1, 0, s, args.as_mut_ptr(), std::ptr::null_mut())
        })
    }

    fn synchronize(&mut self) -> Result<()> {
        let api = self.context.api;
        // SAFETY: the stream is live.
        self.on_stream(&api.calls.stream_synchronize, |f, s| unsafe { f(s) })
    }

    fn memory(&self) -> DeviceMemoryId {
        self.context.memory()
    }

    fn create_event(&mut self) -> Result<Event> {
        Event::create(&self.context)
    }

    fn record_event(&mut self, event: EventRef<'_>) -> Result<()> {
        let api = self.context.api;
        // SAFETY: a live event of this device (EventRef's contract); the
        // stream is live.
        self.on_stream(&api.calls.event_record, |f, s| unsafe { f(event.handle() as RawEvent, s) })
    }

    fn wait_event(&mut self, event: EventRef<'_>) -> Result<()> {
        let api = self.context.api;
        // SAFETY: a live event (the caller's or ours: EventRef's contract);
        // flags 0.
        self.on_stream(&api.calls.stream_wait_event, |f, s| unsafe { f(s, event.handle() as RawEvent, 0) })
    }

    fn query_event(&mut self, event: EventRef<'_>) -> Result<bool> {
        let api = self.context.api;
        let _current = self.context.enter()?;
        // SAFETY: a live event (EventRef's contract).
        match unsafe { (api.calls.event_query.f)(event.handle() as RawEvent) } {
            NOT_READY => Ok(false),
            rc => api.check(rc, api.calls.event_query.name).map(|()| true),
        }
    }

    fn synchronize_event(&mut self, event: EventRef<'_>) -> Result<()> {
        let api = self.context.api;
        let _current = self.context.enter()?;
        // SAFETY: a live event (EventRef's contract).
        api.checked(&api.calls.event_synchronize, |f| unsafe { f(event.handle() as RawEvent) })
    }

    fn copy_2d(&mut self, dst: Pitched, src: Pitched, row_bytes: usize, rows: usize) -> Result<()> {
        let api = self.context.api;
        let _current = self.context.enter()?;
        // SAFETY: both regions span the rows copied (the import checks
        // extents first); queued on our stream with the device current.
        unsafe { (api.vendor.copy_2d)(api, dst, src, row_bytes, rows, self.stream.raw) }
    }

    fn copy_from_array(&mut self, dst: Pitched, array: ArrayRef, row_bytes: usize, rows: usize) -> Result<()> {
        let api = self.context.api;
        let _current = self.context.enter()?;
        // SAFETY: dst spans the rows copied; the array is live (ArrayRef's
        // contract) and its extent was checked where the runtime can tell.
        unsafe { (api.vendor.copy_from_array)(api, dst, array.handle() as usize as _, row_bytes, rows, self.stream.raw) }
    }

    fn allocation_range(&mut self, ptr: u64) -> Result<Option<(u64, usize)>> {
        let api = self.context.api;
        let Some(range) = &api.calls.address_range else {
            return Ok(None);
        };
        let _current = self.context.enter()?;
        let (mut base, mut bytes): (DevicePtr, usize) = (0, 0);
        // SAFETY: writes two values; any address may be asked about.
        api.checked(range, |f| unsafe { f(&mut base, &mut bytes, ptr) })?;
        Ok(Some((base, bytes)))
    }

    fn array_extent(&mut self, array: ArrayRef) -> Result<Option<ArrayExtent>> {
        let api = self.context.api;
        let Some(get) = &api.calls.array_descriptor else {
            return Ok(None);
        };
        let _current = self.context.enter()?;
        let mut d = super::api::ArrayDescriptor::default();
        // SAFETY: writes one descriptor; the array is the caller's.
        api.checked(get, |f| unsafe { f(&mut d, array.handle() as usize as _) })?;
        Ok(d.extent())
    }

    fn imports_dma_bufs(&self) -> bool {
        self.context.api.dma_buf.is_some()
    }

    fn import_dma_buf(&mut self, fd: std::os::fd::OwnedFd, size: u64) -> Result<u64> {
        use std::os::fd::{AsRawFd, IntoRawFd};
        let api = self.context.api;
        let dma_buf = api.dma_buf.ok_or_else(|| Error::NotSupported(format!("{}: no dma-buf import", api.library)))?;
        let _current = self.context.enter()?;
        // SAFETY: a live dma-buf fd of `size` bytes (the import sized it);
        // the device is current.
        let memory = unsafe { (dma_buf.import_fd)(api, fd.as_raw_fd(), size) }?;
        // The runtime owns the fd now (it closes it on destroy); on the
        // error above `fd` was dropped, i.e. closed, by us.
        let _ = fd.into_raw_fd();
        Ok(memory as u64)
    }

    fn map_external(&mut self, memory: u64, offset: u64, size: u64) -> Result<DeviceBuffer> {
        let api = self.context.api;
        let dma_buf = api.dma_buf.ok_or_else(|| Error::NotSupported(format!("{}: no dma-buf import", api.library)))?;
        let _current = self.context.enter()?;
        // SAFETY: `memory` came from import_dma_buf of this lane and is
        // live; offset + size lie in it (checked by the import).
        let ptr = unsafe { (dma_buf.map_buffer)(api, memory as usize as _, offset, size) }?;
        // A mapped buffer is freed as an allocation is (hipFree).
        Ok(DeviceBuffer { context: self.context.clone(), ptr, bytes: size as usize })
    }

    fn destroy_external(&mut self, memory: u64) {
        let api = self.context.api;
        let Some(dma_buf) = api.dma_buf else { return };
        // SAFETY: the Backend contract: `memory` is live, its buffers are
        // freed and no queued work reads it; destroyed once.
        let done = self.context.enter().and_then(|_current| unsafe { (dma_buf.destroy)(api, memory as usize as _) });
        if let Err(e) = done {
            record_drop_error(e);
        }
    }
}
