//! The kernel runner shared by both vendors (and the `Backend` it runs on): loads the kernels once per lane,
//! keeps grow-only device buffers, and runs the integer twins of the CPU
//! kernels. Only integer sums come back; the host adds per-row sums in u64
//! exactly as the CPU code does, so results are identical by construction.

use super::kernels::{KernelSet, KernelSource, Loaded, MotionKernels, PsnrKernels};
use crate::device::DeviceMemoryId;
/// Device planes are picture data (`picture::device_frame`); kept at this
/// path because every twin's launch arguments name it here.
pub use crate::picture::DevPlane;
use crate::picture::PlaneView;
use crate::{Error, Result};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::ffi::c_void;

/// Device memory that is freed when dropped: a lane's allocation (or a
/// mapping of external memory). Its address is carried as `u64` (CUDA's
/// `CUdeviceptr`, HIP's `void *`) for kernel arguments and copies.
pub trait DeviceMemory: Send + Sync {
    /// The first byte's device address.
    fn ptr(&self) -> u64;
    /// Bytes allocated.
    fn bytes(&self) -> usize;
    /// Lets go of the memory without freeing it and returns its address:
    /// for a second handle to memory another buffer owns (a runtime that
    /// answers one mapping twice).
    fn into_raw(self: Box<Self>) -> u64;
}

impl DeviceMemory for Box<dyn DeviceMemory> {
    fn ptr(&self) -> u64 {
        (**self).ptr()
    }
    fn bytes(&self) -> usize {
        (**self).bytes()
    }
    fn into_raw(self: Box<Self>) -> u64 {
        (*self).into_raw()
    }
}

/// An event of a lane (timing disabled), destroyed when dropped: work it
/// was recorded after still completes, and waits queued on it stay valid
/// (as `cuEventDestroy` / `hipEventDestroy` allow).
pub trait DeviceEvent: Send + Sync {
    /// The driver's handle (`CUevent` / `hipEvent_t`): what a
    /// [`crate::device::DeviceFrame`]'s `ready` and the import's fences
    /// carry across the public interface.
    fn handle(&self) -> u64;
}

impl DeviceEvent for Box<dyn DeviceEvent> {
    fn handle(&self) -> u64 {
        (**self).handle()
    }
}

/// An event borrowed from its owner: one of ours ([`EventRef::of`]), or a
/// producer's or caller's (an acquire or release fence, a frame's
/// `ready`). It cannot be destroyed through this handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventRef<'a> {
    handle: u64,
    owner: std::marker::PhantomData<&'a ()>,
}

impl<'a> EventRef<'a> {
    /// Borrows `event` for as long as it lives.
    pub fn of<E: DeviceEvent + ?Sized>(event: &'a E) -> Self {
        EventRef { handle: event.handle(), owner: std::marker::PhantomData }
    }

    /// A producer's or caller's event.
    ///
    /// # Safety
    /// `handle` is an event of the device of the lane it is given to, live
    /// for every call that receives it (its owner destroys it after).
    pub unsafe fn from_handle(handle: u64) -> EventRef<'static> {
        EventRef { handle, owner: std::marker::PhantomData }
    }

    pub fn handle(self) -> u64 {
        self.handle
    }
}

/// A device array (`CUarray` / `hipArray_t`) borrowed from its owner (the
/// producer of an imported frame).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrayRef {
    handle: u64,
}

impl ArrayRef {
    /// # Safety
    /// `handle` is an array of the device of the lane it is given to, live
    /// for every call that receives it.
    pub unsafe fn from_handle(handle: u64) -> Self {
        ArrayRef { handle }
    }

    pub fn handle(self) -> u64 {
        self.handle
    }
}

/// What a vendor lane provides: memory, copies, modules, launches. Device
/// pointers given to copies and launches are `u64` addresses inside a
/// [`DeviceMemory`] (ours, or a caller's frame); the memory itself is
/// owned by [`Backend::Buffer`]s, which free themselves.
pub trait Backend {
    type Function: Copy;
    /// An allocation of this lane, freed on drop.
    type Buffer: DeviceMemory + 'static;
    /// An event of this lane, destroyed on drop.
    type Event: DeviceEvent + 'static;
    /// Compiles (through the cache) and loads `kernel`, returning its entries
    /// in the order of `kernel.entries`. Callers take them by name through
    /// a [`KernelSet`] ([`KernelRunner::kernels`]).
    fn load(&mut self, kernel: &KernelSource) -> Result<Vec<Self::Function>>;
    /// `bytes` (at least 1) of device memory, freed when the buffer drops.
    fn alloc(&mut self, bytes: usize) -> Result<Self::Buffer>;
    fn upload(&mut self, dst: u64, src: &[u8]) -> Result<()>;
    /// Copies `dst.len()` bytes from `src` after the work queued before it;
    /// returns once `dst` holds them (the lane has waited for its stream).
    fn download(&mut self, dst: &mut [u8], src: u64) -> Result<()>;
    /// Launches `f` on a (grid_x, grid_y) grid of `BLOCK`-thread blocks.
    ///
    /// # Safety
    /// `args` point at one value per kernel parameter, of the parameter's
    /// type, and every device pointer among them spans what the kernel
    /// reads or writes for this grid.
    unsafe fn launch(
        &mut self,
        f: Self::Function,
        grid: (u32, u32),
        args: &mut [*mut c_void],
    ) -> Result<()>;
    fn synchronize(&mut self) -> Result<()>;

    /// The device memory this lane's pointers are valid in (its context).
    fn memory(&self) -> DeviceMemoryId;
    /// A new event (`CUevent` / `hipEvent_t`, timing disabled).
    fn create_event(&mut self) -> Result<Self::Event>;
    /// Records `event` (ours, or a caller's release event) on this lane's
    /// stream, after the work queued so far.
    fn record_event(&mut self, event: EventRef<'_>) -> Result<()>;
    /// This lane's stream waits, on the device (the host does not block),
    /// for the work `event` was last recorded after.
    fn wait_event(&mut self, event: EventRef<'_>) -> Result<()>;
    /// Whether the work `event` was last recorded after is done, without
    /// waiting (an event never recorded is done, as CUDA and HIP say).
    fn query_event(&mut self, event: EventRef<'_>) -> Result<bool>;
    /// Blocks the host until `event` is done.
    fn synchronize_event(&mut self, event: EventRef<'_>) -> Result<()>;
    /// Queues a copy of `rows` rows of `row_bytes` bytes, device memory to
    /// device memory, on this lane's stream.
    fn copy_2d(&mut self, dst: Pitched, src: Pitched, row_bytes: usize, rows: usize)
        -> Result<()>;
    /// Queues a copy of the top-left `rows` x `row_bytes` of device array
    /// `array` (`CUarray` / `hipArray_t`) into device memory.
    fn copy_from_array(&mut self, dst: Pitched, array: ArrayRef, row_bytes: usize, rows: usize)
        -> Result<()>;
    /// The allocation holding `ptr`, as (base, bytes); `None` where the
    /// runtime cannot tell. An error: `ptr` is not device memory here.
    fn allocation_range(&mut self, ptr: u64) -> Result<Option<(u64, usize)>>;
    /// `array`'s extent; `None` where the runtime cannot tell.
    fn array_extent(&mut self, array: ArrayRef) -> Result<Option<ArrayExtent>>;

    /// Makes this lane's later work wait for what its producer queued so
    /// far on the caller's stream (a lane beside a caller's stream); nothing
    /// for a lane of its own, the default.
    fn wait_for_caller_stream(&mut self) -> Result<()> {
        Ok(())
    }

    /// Whether [`Backend::import_dma_buf`] works here (HIP with
    /// `hipImportExternalMemory`).
    fn imports_dma_bufs(&self) -> bool {
        false
    }
    /// Imports dma-buf `fd` of `size` bytes as external memory. The fd's
    /// ownership passes to the runtime on success (the caller hands a
    /// duplicate); on an error it is closed here.
    fn import_dma_buf(&mut self, fd: std::os::fd::OwnedFd, size: u64) -> Result<u64> {
        let _ = (fd, size);
        Err(Error::NotSupported("this lane does not import dma-bufs".into()))
    }
    /// `size` bytes at `offset` of external memory `memory`, unmapped when
    /// the buffer drops. A runtime may ignore `offset` (ROCm 5.2): the
    /// caller checks.
    fn map_external(&mut self, memory: u64, offset: u64, size: u64) -> Result<Self::Buffer> {
        let _ = (memory, offset, size);
        Err(Error::NotSupported("this lane does not import dma-bufs".into()))
    }
    /// Destroys external memory `memory`: its mapped buffers are freed and
    /// no queued work reads it any more.
    fn destroy_external(&mut self, memory: u64) {
        let _ = memory;
    }
}

/// A pitched region of device memory: `ptr`, `pitch` bytes per row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pitched {
    pub ptr: u64,
    pub pitch: usize,
}

/// The size of a device array: `width` x `height` elements of `channels`
/// channels of `channel_bytes` each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrayExtent {
    pub width: usize,
    pub height: usize,
    pub channels: usize,
    pub channel_bytes: usize,
}

impl ArrayExtent {
    pub fn row_bytes(&self) -> usize {
        self.width * self.channels * self.channel_bytes
    }
}

/// Errors from releases that cannot return one (frees, unloads, stream and
/// context releases in `Drop`), kept for [`take_drop_errors`] as cudarc
/// keeps them for `check_err`. Bounded, oldest kept.
static DROP_ERRORS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
const MAX_DROP_ERRORS: usize = 64;

pub(crate) fn record_drop_error(e: Error) {
    if let Ok(mut errors) = DROP_ERRORS.lock() {
        if errors.len() < MAX_DROP_ERRORS {
            errors.push(e.to_string());
        }
    }
}

/// The release errors recorded since the last call, oldest first.
pub fn take_drop_errors() -> Vec<String> {
    DROP_ERRORS
        .lock()
        .map(|mut e| std::mem::take(&mut *e))
        .unwrap_or_default()
}

/// A named scratch buffer that grows on demand (contents kept only while
/// it does not grow); its memory is freed when it drops. Each metric keeps
/// its scratch in fields of its own state, never under a string key.
pub struct Scratch<M> {
    buffer: Option<M>,
}

impl<M> Default for Scratch<M> {
    fn default() -> Self {
        Scratch { buffer: None }
    }
}

impl<M: DeviceMemory> Scratch<M> {
    /// The buffer's address, grown first to at least `bytes`.
    pub fn at_least<B: Backend<Buffer = M>>(&mut self, backend: &mut B, bytes: usize) -> Result<u64> {
        let bytes = bytes.max(1);
        match &self.buffer {
            Some(b) if b.bytes() >= bytes => Ok(b.ptr()),
            _ => {
                // The old buffer goes first: a device near full may not
                // hold both.
                self.buffer = None;
                let b = backend.alloc(bytes)?;
                let ptr = b.ptr();
                self.buffer = Some(b);
                Ok(ptr)
            }
        }
    }

    /// A read-only table (`data`), uploaded on the first call only; later
    /// calls return the same buffer without a copy.
    pub fn table<B: Backend<Buffer = M>>(&mut self, backend: &mut B, data: &[u8]) -> Result<u64> {
        if let Some(b) = &self.buffer {
            return Ok(b.ptr());
        }
        let ptr = self.at_least(backend, data.len())?;
        backend.upload(ptr, data)?;
        Ok(ptr)
    }

    /// Copies a host plane into this buffer, rows kept at the host stride.
    pub fn upload_plane<B: Backend<Buffer = M>>(&mut self, backend: &mut B, p: &PlaneView) -> Result<DevPlane> {
        let plane = DevPlane {
            ptr: 0,
            pitch: p.stride(),
            width: p.width(),
            height: p.height(),
            bytes_per_sample: p.bytes_per_sample(),
        };
        let data = &p.data()[..plane.span()];
        let ptr = self.at_least(backend, data.len())?;
        backend.upload(ptr, data)?;
        Ok(DevPlane { ptr, ..plane })
    }
}

/// Kernel arguments, each in its own 8-byte slot, in parameter order; the
/// launch passes a pointer to each slot, as `cuLaunchKernel` wants.
#[derive(Default)]
pub struct Args {
    slots: Vec<[u8; 8]>,
}

impl Args {
    pub fn new() -> Self {
        Self::default()
    }
    fn push(mut self, bytes: &[u8]) -> Self {
        let mut slot = [0u8; 8];
        slot[..bytes.len()].copy_from_slice(bytes);
        self.slots.push(slot);
        self
    }
    /// A device pointer parameter (`T *`).
    pub fn ptr(self, p: u64) -> Self {
        self.push(&p.to_ne_bytes())
    }
    pub fn i32(self, v: i32) -> Self {
        self.push(&v.to_ne_bytes())
    }
    pub fn u32(self, v: u32) -> Self {
        self.push(&v.to_ne_bytes())
    }
    pub fn i64(self, v: i64) -> Self {
        self.push(&v.to_ne_bytes())
    }
    pub fn f64(self, v: f64) -> Self {
        self.push(&v.to_ne_bytes())
    }
    pub fn f32(self, v: f32) -> Self {
        self.push(&v.to_ne_bytes())
    }
    fn pointers(&mut self) -> Vec<*mut c_void> {
        self.slots
            .iter_mut()
            .map(|s| s.as_mut_ptr().cast())
            .collect()
    }
}

/// A struct of named [`Scratch`] buffers, all empty by default (a derive
/// would ask `M: Default`).
macro_rules! scratch_struct {
    ($(#[$m:meta])* $vis:vis struct $name:ident { $($(#[$fm:meta])* $fvis:vis $field:ident),+ $(,)? }) => {
        $(#[$m])*
        $vis struct $name<M> { $($(#[$fm])* $fvis $field: $crate::device::gpu::backend::Scratch<M>),+ }
        impl<M> Default for $name<M> {
            fn default() -> Self {
                $name { $($field: Default::default()),+ }
            }
        }
    };
}
pub(crate) use scratch_struct;

/// Buffers a lane keeps for reuse: frames of a stream have the same
/// sizes, and a `cuMemFree` may wait for the whole device.
const POOL_BUFFERS: usize = 32;

/// Buffers given back, and what must outlive their last reader, behind the
/// event recorded after it ([`KernelRunner::retire`]).
struct Retired<B: Backend> {
    event: B::Event,
    buffers: Vec<B::Buffer>,
    keep_alive: Box<dyn Send>,
}

/// A lane's one pool of device buffers: free ones, and retired ones that
/// become free once the work that reads them is done. Every buffer a lane
/// hands out for a frame comes from here and goes back here
/// ([`KernelRunner::take_buffer`], [`KernelRunner::retire`]).
struct BufferPool<B: Backend> {
    free: Vec<B::Buffer>,
    retired: Vec<Retired<B>>,
}

impl<B: Backend> Default for BufferPool<B> {
    fn default() -> Self {
        BufferPool { free: Vec::new(), retired: Vec::new() }
    }
}

pub struct KernelRunner<B: Backend> {
    /// Loaded kernel entries by source file, in `KernelSource::entries`
    /// order; taken by name through [`KernelRunner::kernels`].
    loaded: HashMap<&'static str, Vec<B::Function>>,
    /// Each twin's scratch (a struct of [`Scratch`] buffers), one per type,
    /// made on the twin's first frame ([`TwinLane::with_scratch`]).
    twin_scratch: HashMap<TypeId, Box<dyn Any + Send>>,
    /// Buffers for frames (an import's converted planes), reused.
    pool: BufferPool<B>,
    /// Last, so the buffers above are freed while the lane still holds its
    /// stream and modules.
    backend: B,
}

// SAFETY: the functions are module handles valid in the backend's context
// from any thread; the backend (Send) makes that context current per call;
// the buffers are Send.
unsafe impl<B: Backend + Send> Send for KernelRunner<B> {}

/// `v` as an i32 kernel parameter, or NOT SUPPORTED.
pub(crate) fn int(v: usize, what: &str) -> Result<i32> {
    i32::try_from(v)
        .map_err(|_| Error::NotSupported(format!("{what} {v} is too large for the GPU kernels")))
}

impl<B: Backend> KernelRunner<B> {
    pub fn new(backend: B) -> Result<Self> {
        let mut runner = Self {
            loaded: HashMap::new(),
            twin_scratch: HashMap::new(),
            pool: BufferPool::default(),
            backend,
        };
        // Load what every context needs now, so a broken compiler or driver
        // shows at open, not at the first frame.
        runner.kernels::<MotionKernels<B::Function>>()?;
        runner.kernels::<PsnrKernels<B::Function>>()?;
        Ok(runner)
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    /// The kernels of set `K`, each taken by its entry name (the source is
    /// compiled and loaded on first use).
    pub fn kernels<K: KernelSet<B::Function>>(&mut self) -> Result<K> {
        let source = K::SOURCE;
        K::from_loaded(&self.loaded(&source)?)
    }

    /// Kernel `entry` of `source`, by name (the source is loaded on first
    /// use): for sources without a [`KernelSet`] (test kernels).
    pub fn kernel(&mut self, source: &KernelSource, entry: &str) -> Result<B::Function> {
        self.loaded(source)?.get(entry)
    }

    fn loaded(&mut self, source: &KernelSource) -> Result<Loaded<'_, B::Function>> {
        if !self.loaded.contains_key(source.name) {
            let f = self.backend.load(source)?;
            self.loaded.insert(source.name, f);
        }
        Ok(Loaded::new(source, &self.loaded[source.name]))
    }

    /// A buffer of at least `bytes` in `slot` (grown as needed), for
    /// scratch a caller keeps itself (tests, benchmarks).
    pub fn scratch(&mut self, slot: &mut Scratch<B::Buffer>, bytes: usize) -> Result<u64> {
        slot.at_least(&mut self.backend, bytes)
    }

    /// Runs `f` with the twin scratch of type `S` (made empty on first use
    /// and kept for the lane's life): a metric's device buffers, taken out
    /// while `f` runs so `f` can use the lane too.
    pub fn with_scratch<S: Default + Send + 'static, R>(&mut self, f: impl FnOnce(&mut Self, &mut S) -> R) -> R {
        let mut scratch = self
            .twin_scratch
            .remove(&TypeId::of::<S>())
            .and_then(|s| s.downcast::<S>().ok())
            .unwrap_or_default();
        let out = f(self, &mut scratch);
        self.twin_scratch.insert(TypeId::of::<S>(), scratch);
        out
    }

    /// Copies a host plane into `slot` (grown as needed), rows kept at the
    /// host stride; queued on the lane's stream.
    pub fn upload_plane(&mut self, slot: &mut Scratch<B::Buffer>, p: &PlaneView) -> Result<DevPlane> {
        slot.upload_plane(&mut self.backend, p)
    }

    /// A buffer of at least `bytes` from the lane's pool (the smallest free
    /// one that fits), or a new one.
    pub fn take_buffer(&mut self, bytes: usize) -> Result<B::Buffer> {
        let free = &mut self.pool.free;
        let fit = (0..free.len()).filter(|&i| free[i].bytes() >= bytes).min_by_key(|&i| free[i].bytes());
        match fit {
            Some(i) => Ok(free.swap_remove(i)),
            None => self.backend.alloc(bytes),
        }
    }

    /// Gives `buffers` back to the pool now: nothing queued reads or
    /// writes them any more (the caller has synchronised the stream).
    pub fn give_back(&mut self, buffers: impl IntoIterator<Item = B::Buffer>) {
        self.pool.free.extend(buffers);
    }

    /// Retires `buffers`, and `keep_alive` (what their readers also read:
    /// a frame's dma-buf imports), behind `event`, recorded after their
    /// last reader's work: the buffers go back to the pool, and
    /// `keep_alive` is dropped, once that work is done ([`Self::reclaim`]).
    pub fn retire(&mut self, event: B::Event, buffers: Vec<B::Buffer>, keep_alive: Box<dyn Send>) {
        self.pool.retired.push(Retired { event, buffers, keep_alive });
    }

    /// Retired buffers whose event is done back to the pool (waiting for
    /// each event first when `wait`), and the pool trimmed to
    /// [`POOL_BUFFERS`], the smallest freed first.
    pub fn reclaim(&mut self, wait: bool) {
        let mut keep = Vec::new();
        for r in std::mem::take(&mut self.pool.retired) {
            let event = EventRef::of(&r.event);
            let done = if wait { self.backend.synchronize_event(event).map(|()| true) } else { self.backend.query_event(event) };
            match done {
                Ok(true) => {
                    self.pool.free.extend(r.buffers);
                    drop(r.keep_alive);
                }
                Ok(false) => keep.push(r),
                Err(e) => {
                    // Reusing or freeing memory a kernel may still read is
                    // worse than leaking it.
                    for b in r.buffers {
                        Box::new(b).into_raw();
                    }
                    record_drop_error(e);
                }
            }
        }
        self.pool.retired = keep;
        let free = &mut self.pool.free;
        while free.len() > POOL_BUFFERS {
            let smallest = (0..free.len()).min_by_key(|&i| free[i].bytes()).unwrap_or(0);
            drop(free.swap_remove(smallest));
        }
    }

    /// Launches `f` on `grid` with `args`.
    ///
    /// # Safety
    /// `args` match `f`'s parameter list in kernels/ (types and order), and
    /// every pointer among them spans what `f` touches for this grid.
    pub unsafe fn launch(
        &mut self,
        f: B::Function,
        grid: (u32, u32),
        mut args: Args,
    ) -> Result<()> {
        let mut pointers = args.pointers();
        // SAFETY: forwarded contract; `args` outlives the call.
        unsafe { self.backend.launch(f, grid, &mut pointers) }
    }

    /// Reads `count` values of `T` from device memory at `src`, after the
    /// work queued so far.
    pub fn download_vec<T: DeviceScalar>(&mut self, src: u64, count: usize) -> Result<Vec<T>> {
        let mut bytes = vec![0u8; count * std::mem::size_of::<T>()];
        // The download itself waits for the stream (Backend::download).
        self.backend.download(&mut bytes, src)?;
        Ok(bytes
            .chunks_exact(std::mem::size_of::<T>())
            .map(T::from_ne_bytes)
            .collect())
    }
}

impl<B: Backend> Drop for KernelRunner<B> {
    fn drop(&mut self) {
        // Retired buffers may still be read: wait for their readers before
        // the pool (and then the stream) goes.
        self.reclaim(true);
        // Freed while the lane still holds its stream.
        self.pool.free.clear();
    }
}

/// Plain numbers read back from the device (floats bit for bit).
pub trait DeviceScalar: Copy {
    fn from_ne_bytes(b: &[u8]) -> Self;
}

macro_rules! device_scalar {
    ($($t:ty),*) => {$(
        impl DeviceScalar for $t {
            fn from_ne_bytes(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_ne_bytes(a)
            }
        }
    )*};
}
device_scalar!(u8, u16, u32, i32, u64, i64, f32, f64);
