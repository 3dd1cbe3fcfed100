//! The GPU engine shared by both vendors: loads the kernels once per lane,
//! keeps grow-only device buffers, and runs the integer twins of the CPU
//! kernels. Only integer sums come back; the host adds per-row sums in u64
//! exactly as the CPU code does, so results are identical by construction.

use super::kernels::{self, KernelSource, BLOCK};
use crate::device::DeviceMemoryId;
use crate::picture::PlaneView;
use crate::{Error, Result};
use std::collections::HashMap;
use std::ffi::c_void;

/// What a vendor lane provides: memory, copies, modules, launches. Device
/// pointers are carried as `u64` (CUDA's `CUdeviceptr`, HIP's `void *`).
pub trait Backend {
    type Function: Copy;
    /// Compiles (through the cache) and loads `kernel`, returning its entries
    /// in the order of `kernel.entries`.
    fn load(&mut self, kernel: &KernelSource) -> Result<Vec<Self::Function>>;
    fn alloc(&mut self, bytes: usize) -> Result<u64>;
    fn free(&mut self, ptr: u64);
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
    fn create_event(&mut self) -> Result<u64>;
    /// Destroys `event` (work it was recorded after still completes).
    fn destroy_event(&mut self, event: u64);
    /// Records `event` on this lane's stream, after the work queued so far.
    fn record_event(&mut self, event: u64) -> Result<()>;
    /// This lane's stream waits, on the device (the host does not block),
    /// for the work `event` was last recorded after.
    fn wait_event(&mut self, event: u64) -> Result<()>;
    /// Whether the work `event` was last recorded after is done, without
    /// waiting (an event never recorded is done, as CUDA and HIP say).
    fn query_event(&mut self, event: u64) -> Result<bool>;
    /// Blocks the host until `event` is done.
    fn synchronize_event(&mut self, event: u64) -> Result<()>;
    /// Queues a copy of `rows` rows of `row_bytes` bytes, device memory to
    /// device memory, on this lane's stream.
    fn copy_2d(&mut self, dst: Pitched, src: Pitched, row_bytes: usize, rows: usize)
        -> Result<()>;
    /// Queues a copy of the top-left `rows` x `row_bytes` of device array
    /// `array` (`CUarray` / `hipArray_t`) into device memory.
    fn copy_from_array(&mut self, dst: Pitched, array: u64, row_bytes: usize, rows: usize)
        -> Result<()>;
    /// The allocation holding `ptr`, as (base, bytes); `None` where the
    /// runtime cannot tell. An error: `ptr` is not device memory here.
    fn allocation_range(&mut self, ptr: u64) -> Result<Option<(u64, usize)>>;
    /// `array`'s extent; `None` where the runtime cannot tell.
    fn array_extent(&mut self, array: u64) -> Result<Option<ArrayExtent>>;

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
    /// A device pointer to `size` bytes at `offset` of external memory
    /// `memory`, freed with [`Backend::free`]. A runtime may ignore
    /// `offset` (ROCm 5.2): the caller checks.
    fn map_external(&mut self, memory: u64, offset: u64, size: u64) -> Result<u64> {
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

/// A device buffer that grows and is freed by the engine.
#[derive(Default)]
struct Buffer {
    ptr: u64,
    bytes: usize,
}

/// A plane in device memory (a `CUdeviceptr`, a HIP pointer), read in
/// place: `pitch` bytes from one row to the next, `width` samples of
/// `bytes_per_sample` bytes each per row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevPlane {
    pub ptr: u64,
    pub pitch: usize,
    pub width: usize,
    pub height: usize,
    pub bytes_per_sample: usize,
}

impl DevPlane {
    /// Bytes the plane spans: up to the end of its last row.
    pub fn span(&self) -> usize {
        (self.height.max(1) - 1) * self.pitch + self.width * self.bytes_per_sample
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

pub struct Engine<B: Backend> {
    backend: B,
    /// Loaded kernel entries by source name, in `KernelSource::entries` order.
    functions: HashMap<&'static str, Vec<B::Function>>,
    /// Grow-only scratch buffers by name.
    buffers: HashMap<&'static str, Buffer>,
}

// SAFETY: the functions are module handles valid in the backend's context
// from any thread; the backend (Send) makes that context current per call.
unsafe impl<B: Backend + Send> Send for Engine<B> {}

/// `v` as an i32 kernel parameter, or NOT SUPPORTED.
pub fn int(v: usize, what: &str) -> Result<i32> {
    i32::try_from(v)
        .map_err(|_| Error::NotSupported(format!("{what} {v} is too large for the GPU kernels")))
}

impl<B: Backend> Engine<B> {
    pub fn new(backend: B) -> Result<Self> {
        let mut engine = Self {
            backend,
            functions: HashMap::new(),
            buffers: HashMap::new(),
        };
        // Load what every context needs now, so a broken compiler or driver
        // shows at open, not at the first frame.
        engine.functions(&kernels::MOTION)?;
        engine.functions(&kernels::PSNR)?;
        Ok(engine)
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    /// `kernel`'s entries (compiled and loaded on first use), in the order
    /// of `kernel.entries`.
    pub fn functions(&mut self, kernel: &KernelSource) -> Result<Vec<B::Function>> {
        if let Some(f) = self.functions.get(kernel.name) {
            return Ok(f.clone());
        }
        let f = self.backend.load(kernel)?;
        self.functions.insert(kernel.name, f.clone());
        Ok(f)
    }

    /// The scratch buffer `name`, grown to at least `bytes` (contents are
    /// kept only while it does not grow).
    pub fn scratch(&mut self, name: &'static str, bytes: usize) -> Result<u64> {
        let have = self.buffers.get(name).map_or(0, |b| b.bytes);
        if have < bytes.max(1) {
            if let Some(old) = self.buffers.remove(name) {
                self.backend.free(old.ptr);
            }
            let ptr = self.backend.alloc(bytes.max(1))?;
            self.buffers.insert(
                name,
                Buffer {
                    ptr,
                    bytes: bytes.max(1),
                },
            );
        }
        Ok(self.buffers[name].ptr)
    }

    /// A read-only table (`data`) in device buffer `name`, uploaded on the
    /// first call only; later calls return the same buffer without a copy.
    /// `name` must not be used with [`Self::scratch`].
    pub fn table(&mut self, name: &'static str, data: &[u8]) -> Result<u64> {
        if let Some(b) = self.buffers.get(name) {
            if b.bytes == data.len().max(1) {
                return Ok(b.ptr);
            }
        }
        let ptr = self.scratch(name, data.len())?;
        self.backend.upload(ptr, data)?;
        Ok(ptr)
    }

    /// Copies a host plane into scratch buffer `name`, rows kept at the
    /// host stride.
    pub fn upload_plane(&mut self, name: &'static str, p: &PlaneView) -> Result<DevPlane> {
        let plane = DevPlane {
            ptr: 0,
            pitch: p.stride(),
            width: p.width(),
            height: p.height(),
            bytes_per_sample: p.bytes_per_sample(),
        };
        let data = &p.data()[..plane.span()];
        let ptr = self.scratch(name, data.len())?;
        self.backend.upload(ptr, data)?;
        Ok(DevPlane { ptr, ..plane })
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

    /// Motion SAD of two host luma planes (copied to the device first).
    pub fn motion_sad(&mut self, prev: &PlaneView, cur: &PlaneView, bits: u32) -> Result<u64> {
        let p = self.upload_plane("motion.prev", prev)?;
        let c = self.upload_plane("motion.cur", cur)?;
        self.motion_sad_dev(p, c, bits)
    }

    /// SSE of two host planes over the top-left `w` x `h`.
    pub fn psnr_sse(&mut self, r: &PlaneView, d: &PlaneView, w: usize, h: usize) -> Result<u64> {
        let a = self.upload_plane("psnr.ref", r)?;
        let b = self.upload_plane("psnr.dis", d)?;
        self.psnr_sse_dev(a, b, w, h)
    }

    /// Motion SAD of two luma planes in device memory:
    /// [`crate::feature::motion::sad_scalar`].
    pub fn motion_sad_dev(&mut self, prev: DevPlane, cur: DevPlane, bits: u32) -> Result<u64> {
        let (w, h) = (cur.width, cur.height);
        if prev.width != w || prev.height != h || prev.bytes_per_sample != cur.bytes_per_sample {
            return Err(Error::Mismatch(
                "motion: planes differ in size or depth".into(),
            ));
        }
        let f = self.functions(&kernels::MOTION)?;
        let (wi, hi) = (int(w, "width")?, int(h, "height")?);
        let y = self.scratch("motion.y", w * h * 4)?;
        let rows = self.scratch("motion.rows", h * 4)?;
        let grid_x = (w as u32).div_ceil(BLOCK);
        let args = Args::new()
            .ptr(prev.ptr)
            .ptr(cur.ptr)
            .i32(int(prev.pitch, "pitch")?)
            .i32(int(cur.pitch, "pitch")?)
            .i32(wi)
            .i32(hi);
        let (entry, args) = if bits == 8 {
            (f[0], args.ptr(y).i32(wi))
        } else {
            (f[1], args.i32(bits as i32).ptr(y).i32(wi))
        };
        // SAFETY: motion_blur_y_8 (prev, cur, prev_pitch, cur_pitch, w, h, y,
        // y_stride) and motion_blur_y_16 (.., h, bits, y, y_stride); each
        // plane spans h rows of its pitch, y holds w * h i32.
        unsafe { self.launch(entry, (grid_x, h as u32), args) }?;
        // SAFETY: motion_row_sad (y, y_stride, w, row_sad); rows holds h u32.
        unsafe {
            self.launch(
                f[2],
                (1, h as u32),
                Args::new().ptr(y).i32(wi).i32(wi).ptr(rows),
            )
        }?;
        Ok(self
            .download_vec::<u32>(rows, h)?
            .into_iter()
            .map(u64::from)
            .sum())
    }

    /// SSE over the top-left `w` x `h` of two planes in device memory:
    /// [`crate::feature::psnr::sse_u8`] / [`crate::feature::psnr::sse_u16`].
    pub fn psnr_sse_dev(&mut self, r: DevPlane, d: DevPlane, w: usize, h: usize) -> Result<u64> {
        if w > r.width.min(d.width) || h > r.height.min(d.height) || w == 0 || h == 0 {
            return Err(Error::invalid(format!(
                "psnr: region {w}x{h} outside the planes"
            )));
        }
        let f = self.functions(&kernels::PSNR)?;
        let wide = r.bytes_per_sample == 2;
        let rows = self.scratch("psnr.rows", h * 8)?;
        let args = Args::new()
            .ptr(r.ptr)
            .ptr(d.ptr)
            .i32(int(r.pitch, "pitch")?)
            .i32(int(d.pitch, "pitch")?)
            .i32(int(w, "width")?)
            .ptr(rows);
        // SAFETY: psnr_sse_row_8/16 (ref, dis, ref_stride, dis_stride, w,
        // row_sse); each plane spans h rows; rows holds h u64.
        unsafe { self.launch(f[usize::from(wide)], (1, h as u32), args) }?;
        Ok(self.download_vec::<u64>(rows, h)?.into_iter().sum())
    }
}

/// Plain integers read back from the device.
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
device_scalar!(u32, i32, u64, i64);

impl<B: Backend> Drop for Engine<B> {
    fn drop(&mut self) {
        for (_, b) in self.buffers.drain() {
            self.backend.free(b.ptr);
        }
    }
}
