//! The GPU lanes' import (CUDA and HIP alike, through the kernel runner's
//! [`Backend`]): device pointers, device arrays and (HIP) dma-bufs become a
//! [`DeviceFrame`] wrapped in a [`PictureSource`] ([`GpuFrame`]), with no
//! copy through host memory. dma-bufs are imported as external memory once
//! per object and mapped per plane (src/import/external.rs); their fences
//! are polled on the host as on the CPU path (src/import/dmabuf.rs). Modelled on the CPU lane's dma-buf import (src/import/cpu.rs):
//! the same [`FrameDescriptor`], the same refusals, the same BUSY rule.
//!
//! - Planar planes (YUV420, YUV444, one R8/R16 layer per plane) are read in
//!   place at any offset and pitch. Semi-planar chroma (NV12, NV24, P010,
//!   P012, P016, VAAPI's R8+GR88 / R16+GR1616) is split into U and V planes
//!   by kernels/convert.cu, on the device, into memory the frame owns; only
//!   when the importer was asked for chroma (PSNR), else the frame is gray.
//!   MSB-aligned 16-bit samples below 16 bits (P010, P012, R16 at 10 bits)
//!   are shifted down the same way (src/avfilter/frame.rs does it on the
//!   host). Device arrays are copied out on the device into linear memory.
//! - Extents are checked against the allocation where the runtime can tell
//!   (`cuMemGetAddressRange`, `cuArrayGetDescriptor`): RANGE.
//! - All of an importer's copies and conversions run on one library stream
//!   per device (the importer's lane); the frame's `ready` event is recorded
//!   there after them. A reader's stream waits on it ([`wait_ready`]).
//! - Acquire fences: a device event is waited on by the library stream (no
//!   host wait); a host fence or a sync_file is polled, and a pending one
//!   refuses the import with BUSY (nothing is queued): retry, or
//!   [`GpuImporter::wait_and_import`].
//! - Release: when the last `Arc` of the frame drops, the library stream
//!   waits for every reader's stream ([`GpuFrame::reads_queued`]), then device-event
//!   release fences are recorded on it; host release fences and the release
//!   callback are signalled once that work is done (the dropping thread
//!   waits for it). A sync_file release fence is refused.
//!
//! Nothing here copies frame data between host and device (host pictures
//! are uploaded by the context, which counts them in its
//! [`crate::picture::HostCopies`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::dmabuf;
use super::external::{self, ExternalCache, ExternalObject, Graveyard};
use super::layout::{check_end, check_modifier, check_pitch, err, flatten, FlatPlane, Layout, ReaderFormats, Samples};
use super::{
    AcquireFence, DrmFourcc, FrameDescriptor, ImportError, ImportErrorKind as Kind, Memory,
    Object, Refusal, ReleaseFence,
};
use crate::device::gpu::backend::{int, Args, ArrayRef, Backend, DevPlane, DeviceEvent, DeviceMemory, KernelRunner, EventRef, Pitched};
use crate::device::gpu::kernels::{ConvertKernels, BLOCK};
use crate::device::gpu::lane::GpuLane;
use crate::device::{DeviceFrame, DeviceKind, DeviceMemoryId};
use crate::picture::PictureSource;
use crate::picture::{Chroma, Picture, PixelFormat};

/// Counters of one importer, shared by its frames; tests read them.
#[derive(Debug, Default)]
pub struct GpuImportStats {
    pub imports: AtomicU64,
    pub busy: AtomicU64,
    /// Planes handed to readers where the producer put them.
    pub in_place_planes: AtomicU64,
    /// Planes written by a convert kernel (deinterleaved or shifted).
    pub converted_planes: AtomicU64,
    /// Device arrays copied out into linear memory.
    pub array_copies: AtomicU64,
    /// Frames released (last reference dropped, readers done).
    pub releases: AtomicU64,
}

impl GpuImportStats {
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::SeqCst)
    }
}

/// Called once a frame is released (after its last reader is done).
pub(crate) type ReleaseCallback = Box<dyn FnOnce() + Send>;

/// The importer's lane: a kernel runner on a stream of its own (whose pool
/// holds the frames' buffers, free and retired), and the dma-buf imports
/// nobody references any more, to destroy on it.
struct ImportLane<B: Backend> {
    runner: KernelRunner<B>,
    graveyard: Graveyard,
}

impl<B: Backend> ImportLane<B> {
    /// Buffers of released frames back to the pool once their readers are
    /// done (waiting for them when `wait`), and the dma-bufs nobody reads
    /// destroyed.
    fn reclaim(&mut self, wait: bool) {
        self.runner.reclaim(wait);
        external::bury(&self.graveyard, self.runner.backend_mut());
    }
}

impl<B: Backend> Drop for ImportLane<B> {
    fn drop(&mut self) {
        self.reclaim(true);
    }
}

type Shared<B> = Arc<Mutex<ImportLane<B>>>;

fn lock<B: Backend>(lane: &Shared<B>) -> MutexGuard<'_, ImportLane<B>> {
    lane.lock().unwrap_or_else(|p| p.into_inner())
}

/// A GPU lane's importer: a library stream of its own (shared only with
/// the importers [`GpuImporter::with_chroma`] makes from it) and whether
/// chroma is wanted.
pub struct GpuImporter<B: Backend + Send + 'static> {
    lane: Shared<B>,
    memory: DeviceMemoryId,
    read_chroma: bool,
    stats: Arc<GpuImportStats>,
    /// dma-bufs imported by this importer, by identity: one importer per
    /// frames context (a decoder's surface pool), dropped with it.
    externals: Mutex<ExternalCache>,
}

impl GpuImporter<GpuLane> {
    /// An importer on a library stream of its own on CUDA device `index`'s
    /// primary context ([`GpuImporter::with_chroma`] shares it).
    pub fn cuda(index: usize, read_chroma: bool) -> crate::Result<Self> {
        Self::new(GpuLane::open(DeviceKind::Cuda, index)?, read_chroma)
    }

    /// An importer on a library stream of its own on HIP device `index`
    /// ([`GpuImporter::with_chroma`] shares it).
    pub fn hip(index: usize, read_chroma: bool) -> crate::Result<Self> {
        Self::new(GpuLane::open(DeviceKind::Hip, index)?, read_chroma)
    }
}

/// What an object is, once checked.
#[derive(Clone, Copy, Debug)]
enum Extent {
    /// A device pointer and the bytes after it, where known.
    Pointer { ptr: u64, bytes: Option<u64> },
    /// A device array and its row bytes and rows, where known.
    Array { array: u64, size: Option<(u64, u64)> },
    /// A dma-buf of `size` bytes, imported (or found in the cache) when
    /// the frame is queued.
    DmaBuf { size: u64 },
}

/// Everything checked: what `finish` queues.
struct Prepared {
    bps: usize,
    format: PixelFormat,
    shift: u32,
    planes: Vec<FlatPlane>,
    extents: Vec<Extent>,
    /// Each plane's (bytes per row, rows).
    rows: Vec<(u64, usize)>,
    device_waits: Vec<u64>,
}

/// A queued import: the frame, the buffers it owns, the dma-buf imports it
/// reads.
type Queued<B> = (DeviceFrame, <B as Backend>::Event, Vec<<B as Backend>::Buffer>, Vec<Arc<ExternalObject>>);

/// What the GPU lanes read.
const GPU_READERS: ReaderFormats = ReaderFormats {
    reads: "the GPU lanes read",
    formats: &[
        DrmFourcc::Nv12,
        DrmFourcc::Nv24,
        DrmFourcc::P010,
        DrmFourcc::P012,
        DrmFourcc::P016,
        DrmFourcc::Yuv420,
        DrmFourcc::Yuv444,
        DrmFourcc::R8,
        DrmFourcc::Gr88,
        DrmFourcc::R16,
        DrmFourcc::Gr1616,
    ],
    formats_text: "NV12, NV24, P010, P012, P016, YUV420, YUV444 and the one-layer-per-plane R8+GR88 / R16+GR1616 layouts",
};

impl<B: Backend + Send + 'static> GpuImporter<B> {
    /// An importer whose library stream is `backend`'s stream (tests, and
    /// callers with a lane of their own).
    pub fn new(backend: B, read_chroma: bool) -> crate::Result<Self> {
        let lane = Arc::new(Mutex::new(ImportLane { runner: KernelRunner::new(backend)?, graveyard: Graveyard::default() }));
        Ok(Self::on_lane(lane, read_chroma))
    }

    fn on_lane(lane: Shared<B>, read_chroma: bool) -> Self {
        let memory = lock(&lane).runner.backend().memory();
        GpuImporter { lane, memory, read_chroma, stats: Arc::new(GpuImportStats::default()), externals: Mutex::default() }
    }

    /// An importer on the same library stream, reading chroma or not.
    pub fn with_chroma(&self, read_chroma: bool) -> Self {
        GpuImporter {
            lane: self.lane.clone(),
            memory: self.memory,
            read_chroma,
            stats: Arc::new(GpuImportStats::default()),
            externals: Mutex::default(),
        }
    }

    /// dma-buf objects imported by this importer (each once, however many
    /// frames read it) and held now.
    pub fn dma_buf_imports(&self) -> (u64, usize) {
        let cache = self.externals.lock().unwrap_or_else(|p| p.into_inner());
        (cache.imports, cache.len())
    }

    pub fn stats(&self) -> &Arc<GpuImportStats> {
        &self.stats
    }

    /// The device memory the frames' planes are in.
    pub fn memory(&self) -> DeviceMemoryId {
        self.memory
    }

    /// Runs `f` on the library stream's backend (tests: to allocate device
    /// memory, or to queue work on the library stream).
    pub fn with_backend<R>(&self, f: impl FnOnce(&mut B) -> R) -> R {
        f(lock(&self.lane).runner.backend_mut())
    }

    /// Imports `desc`, or refuses it and gives it back (BUSY while a host
    /// fence or sync_file is pending; nothing is queued then).
    pub fn import(&self, desc: FrameDescriptor) -> Result<Arc<GpuFrame<B>>, Refusal> {
        self.import_with(desc, None).map_err(|(r, _)| r)
    }

    /// [`GpuImporter::import`] with a callback run when the frame is
    /// released (after its last reader is done); a refusal hands it back.
    #[allow(clippy::type_complexity)]
    pub fn import_with(
        &self,
        desc: FrameDescriptor,
        on_release: Option<ReleaseCallback>,
    ) -> Result<Arc<GpuFrame<B>>, (Refusal, Option<ReleaseCallback>)> {
        let result = self.check(&desc).and_then(|prep| self.finish(&desc, prep));
        match result {
            Ok((frame, ready, owned, externals)) => Ok(Arc::new(self.wrap(desc, frame, ready, owned, externals, on_release))),
            Err(error) => {
                if error.kind == Kind::Busy {
                    self.stats.busy.fetch_add(1, Ordering::SeqCst);
                }
                Err((Refusal { error, descriptor: Box::new(desc) }, on_release))
            }
        }
    }

    /// Imports `desc`, waiting up to `timeout` for its host fences and
    /// sync_files. Past it, the error (BUSY) names the frame and the fence
    /// still pending.
    pub fn wait_and_import(
        &self,
        desc: FrameDescriptor,
        timeout: Duration,
        on_release: Option<ReleaseCallback>,
    ) -> Result<Arc<GpuFrame<B>>, Refusal> {
        let start = Instant::now();
        let (mut desc, mut on_release) = (desc, on_release);
        let mut nap = Duration::from_millis(1);
        loop {
            match self.import_with(desc, on_release) {
                Ok(frame) => return Ok(frame),
                Err((r, cb)) if r.error.kind == Kind::Busy => {
                    let elapsed = start.elapsed();
                    if elapsed >= timeout {
                        return Err(Refusal {
                            error: err(Kind::Busy, format!("gave up after {timeout:?}: {}", r.error.message)),
                            descriptor: r.descriptor,
                        });
                    }
                    std::thread::sleep(nap.min(timeout - elapsed));
                    nap = (nap * 2).min(Duration::from_millis(20));
                    desc = *r.descriptor;
                    on_release = cb;
                }
                Err((r, _)) => return Err(r),
            }
        }
    }

    /// Every check, before anything is queued: the frame's shape and
    /// release fences, each object's kind and extent, each plane inside its
    /// object, the acquire fences.
    fn check(&self, desc: &FrameDescriptor) -> Result<Prepared, ImportError> {
        check_frame_shape(desc)?;
        check_release_fences(desc)?;
        let extents = self.object_extents(desc)?;
        let layout = flatten(desc, &GPU_READERS)?;
        check_plane_extents(desc, &layout, &extents)?;
        let device_waits = acquire_device_waits(desc)?;
        let (bps, bits, chroma) = (layout.bps, layout.bits, layout.chroma);
        let interleaved = layout.planes.len() == 2;
        let out_chroma = if interleaved && !self.read_chroma { Chroma::Yuv400 } else { chroma };
        let shift = if bps == 2 { 16 - bits as u32 } else { 0 };
        Ok(Prepared {
            bps,
            format: PixelFormat { chroma: out_chroma, bits },
            shift,
            rows: (0..layout.planes.len()).map(|pi| layout.plane_rows(pi, desc.width, desc.height)).collect(),
            planes: layout.planes,
            extents,
            device_waits,
        })
    }

    /// Objects: one kind of device memory, linear, sized.
    fn object_extents(&self, desc: &FrameDescriptor) -> Result<Vec<Extent>, ImportError> {
        let label = &desc.label;
        let first = desc.objects[0].memory.kind();
        let mut extents = Vec::with_capacity(desc.objects.len());
        let mut lane = lock(&self.lane);
        let backend = lane.runner.backend_mut();
        for (oi, o) in desc.objects.iter().enumerate() {
            check_modifier(desc, oi, o, &GPU_READERS)?;
            if o.memory.kind() != first {
                return Err(err(
                    Kind::NotSupported,
                    format!("{label}: object {oi} is {:?} memory and object 0 {first:?}; one frame's objects must be of one kind", o.memory.kind()),
                ));
            }
            extents.push(self.object_extent(backend, label, oi, o)?);
        }
        Ok(extents)
    }

    /// One object's extent as the runtime knows it: a device pointer inside
    /// an allocation holding its declared size, a device array, or a dma-buf
    /// this runtime can import; host memory and GL textures refused.
    fn object_extent(&self, backend: &mut B, label: &str, oi: usize, o: &Object) -> Result<Extent, ImportError> {
        Ok(match o.memory {
            Memory::DevicePointer(ptr) => {
                if ptr == 0 {
                    return Err(err(Kind::Invalid, format!("{label}: object {oi} is a NULL device pointer")));
                }
                let known = backend.allocation_range(ptr).map_err(|e| {
                    err(Kind::Invalid, format!("{label}: object {oi} ({ptr:#x}) is not device memory of {:?} context {:#x}: {e}", self.memory.kind, self.memory.context))
                })?;
                let bytes = known.map(|(base, size)| (base + size as u64).saturating_sub(ptr));
                if let Some(have) = bytes {
                    if o.size > have {
                        return Err(err(
                            Kind::Range,
                            format!("{label}: object {oi} declares {} bytes, its allocation has {have} after {ptr:#x}", o.size),
                        ));
                    }
                }
                Extent::Pointer { ptr, bytes: bytes.or((o.size > 0).then_some(o.size)) }
            }
            Memory::DeviceArray(array) => {
                if array == 0 {
                    return Err(err(Kind::Invalid, format!("{label}: object {oi} is a NULL device array")));
                }
                // SAFETY: the producer keeps its array alive while the
                // frame is imported and read (the descriptor's contract).
                let known = backend.array_extent(unsafe { ArrayRef::from_handle(array) }).map_err(|e| {
                    err(Kind::Invalid, format!("{label}: object {oi} ({array:#x}) is not a device array: {e}"))
                })?;
                Extent::Array { array, size: known.map(|e| (e.row_bytes() as u64, e.height as u64)) }
            }
            Memory::DmaBuf(ref fd) => {
                if !backend.imports_dma_bufs() {
                    return Err(err(
                        Kind::NotSupported,
                        format!("{label}: object {oi} is a dma-buf; this lane's runtime cannot import dma-bufs (HIP with hipImportExternalMemory can; else score it on the CPU device)"),
                    ));
                }
                Extent::DmaBuf { size: dmabuf::object_size(label, oi, fd, o.size)? }
            }
            ref m @ (Memory::Host(_) | Memory::GlTexture { .. }) => {
                return Err(err(
                    Kind::NotSupported,
                    format!("{label}: object {oi} is {:?} memory; the GPU lanes import device pointers, device arrays and (HIP) dma-bufs (host pictures are uploaded by the context)", m.kind()),
                ))
            }
        })
    }

    /// Queues the acquire waits, copies and conversions on the library
    /// stream and records `ready` after them.
    fn finish(
        &self,
        desc: &FrameDescriptor,
        prep: Prepared,
    ) -> Result<Queued<B>, ImportError> {
        let label = &desc.label;
        let mut lane = lock(&self.lane);
        lane.reclaim(false);
        let (externals, plane_ptrs) = self.map_dma_bufs(&mut lane, desc, &prep)?;
        let ready = lane
            .runner
            .backend_mut()
            .create_event()
            .map_err(|e| err(Kind::Device, format!("{label}: {e}")))?;
        let mut owned = Vec::new();
        match self.queue(&mut lane, desc, &prep, &plane_ptrs, &ready, &mut owned) {
            Ok(frame) => {
                self.stats.imports.fetch_add(1, Ordering::SeqCst);
                Ok((frame, ready, owned, externals.into_iter().flatten().collect()))
            }
            Err(e) => {
                // Nothing queued may still run on memory we reuse: wait.
                let _ = lane.runner.backend_mut().synchronize();
                drop(ready);
                lane.runner.give_back(owned);
                Err(err(Kind::Device, format!("{label}: {e}")))
            }
        }
    }

    /// The dma-buf objects' imports (from the cache, or imported now) and
    /// each flat plane's device pointer where its object is a dma-buf.
    #[allow(clippy::type_complexity)]
    fn map_dma_bufs(
        &self,
        lane: &mut ImportLane<B>,
        desc: &FrameDescriptor,
        prep: &Prepared,
    ) -> Result<(Vec<Option<Arc<ExternalObject>>>, Vec<Option<u64>>), ImportError> {
        let label = &desc.label;
        let mut objects = Vec::with_capacity(desc.objects.len());
        let mut cache = self.externals.lock().unwrap_or_else(|p| p.into_inner());
        for (oi, o) in desc.objects.iter().enumerate() {
            let object = match (&o.memory, prep.extents[oi]) {
                (Memory::DmaBuf(fd), Extent::DmaBuf { size }) => {
                    let graveyard = lane.graveyard.clone();
                    let object = cache.get(fd, size, lane.runner.backend_mut(), &graveyard).map_err(|e| {
                        err(Kind::Device, format!("{label}: object {oi}: importing the dma-buf failed: {e}"))
                    })?;
                    Some(object)
                }
                _ => None,
            };
            objects.push(object);
        }
        drop(cache);
        let mut planes = Vec::with_capacity(prep.planes.len());
        for (pi, p) in prep.planes.iter().enumerate() {
            // Chroma that is not read is not mapped either.
            let wanted = pi == 0 || prep.format.chroma != Chroma::Yuv400;
            let ptr = match &objects[p.object] {
                Some(object) if wanted => {
                    let (row, h) = prep.rows[pi];
                    let len = p.pitch * (h as u64 - 1) + row;
                    let ptr = object.plane(lane.runner.backend_mut(), p.offset, len).map_err(|e| {
                        err(Kind::Device, format!("{label}: plane {pi} of object {} (offset {}): {e}", p.object, p.offset))
                    })?;
                    Some(ptr)
                }
                _ => None,
            };
            planes.push(ptr);
        }
        Ok((objects, planes))
    }

    fn queue(
        &self,
        lane: &mut ImportLane<B>,
        desc: &FrameDescriptor,
        prep: &Prepared,
        plane_ptrs: &[Option<u64>],
        ready: &B::Event,
        owned: &mut Vec<B::Buffer>,
    ) -> crate::Result<DeviceFrame> {
        let (w, h) = (desc.width, desc.height);
        let Prepared { bps, format, shift, planes, extents, device_waits, .. } = prep;
        let (bps, shift) = (*bps, *shift);
        for e in device_waits {
            // SAFETY: the producer keeps its event alive until the import
            // returns (AcquireFence::DeviceEvent); the wait is queued now.
            lane.runner.backend_mut().wait_event(unsafe { EventRef::from_handle(*e) })?;
        }
        let k: ConvertKernels<B::Function> = lane.runner.kernels()?;
        // Rows of what the lane allocates start 256-byte aligned.
        let pitch_of = |row: usize| row.div_ceil(256) * 256;
        let mut alloc = |lane: &mut ImportLane<B>, pitch: usize, rows: usize| -> crate::Result<u64> {
            let buffer = lane.runner.take_buffer(pitch * rows)?;
            let ptr = buffer.ptr();
            owned.push(buffer);
            Ok(ptr)
        };
        // Where each flat plane's samples are, linear in device memory
        // (arrays copied out first).
        let mut linear = Vec::with_capacity(planes.len());
        for (pi, p) in planes.iter().enumerate() {
            let full = PixelFormat { chroma: if format.chroma == Chroma::Yuv400 { Chroma::Yuv420 } else { format.chroma }, bits: format.bits };
            let (pw, ph) = full.plane_size(pi.min(1), w, h);
            let row = pw * bps * if p.samples == Samples::Interleaved { 2 } else { 1 };
            let wanted = pi == 0 || format.chroma != Chroma::Yuv400;
            match extents[p.object] {
                Extent::Pointer { ptr, .. } => linear.push(Some(Pitched { ptr: ptr + p.offset, pitch: p.pitch as usize })),
                Extent::DmaBuf { .. } => linear.push(plane_ptrs[pi].map(|ptr| Pitched { ptr, pitch: p.pitch as usize })),
                Extent::Array { array, .. } if wanted => {
                    let pitch = pitch_of(row);
                    let dst = alloc(lane, pitch, ph)?;
                    // SAFETY: as in `prepare`: the producer's array is live.
                    let array = unsafe { ArrayRef::from_handle(array) };
                    lane.runner.backend_mut().copy_from_array(Pitched { ptr: dst, pitch }, array, row, ph)?;
                    self.stats.array_copies.fetch_add(1, Ordering::SeqCst);
                    linear.push(Some(Pitched { ptr: dst, pitch }));
                }
                Extent::Array { .. } => linear.push(None),
            }
        }
        let mut out = Vec::with_capacity(3);
        for pi in 0..format.chroma.plane_count() {
            let (pw, ph) = format.plane_size(pi, w, h);
            let src_index = pi.min(planes.len() - 1);
            let src = linear[src_index].expect("wanted planes are linear");
            let (wi, hi) = (int(pw, "width")?, int(ph, "height")?);
            let grid = ((pw as u32).div_ceil(BLOCK), ph as u32);
            let plane = |ptr: u64, pitch: usize| DevPlane { ptr, pitch, width: pw, height: ph, bytes_per_sample: bps };
            match planes[src_index].samples {
                Samples::Single if shift == 0 => {
                    if matches!(extents[planes[src_index].object], Extent::Pointer { .. } | Extent::DmaBuf { .. }) {
                        self.stats.in_place_planes.fetch_add(1, Ordering::SeqCst);
                    }
                    out.push(plane(src.ptr, src.pitch));
                }
                Samples::Single => {
                    let pitch = pitch_of(pw * 2);
                    let dst = alloc(lane, pitch, ph)?;
                    let args = Args::new()
                        .ptr(src.ptr)
                        .i32(int(src.pitch, "pitch")?)
                        .i32(wi)
                        .i32(hi)
                        .i32(shift as i32)
                        .ptr(dst)
                        .i32(int(pitch, "pitch")?);
                    // SAFETY: convert_shift_16 (src, src_pitch, w, h, shift,
                    // dst, dst_pitch); src spans h rows of w u16 (checked at
                    // import), dst was allocated for h rows of `pitch`.
                    unsafe { lane.runner.launch(k.convert_shift_16, grid, args) }?;
                    self.stats.converted_planes.fetch_add(1, Ordering::SeqCst);
                    out.push(plane(dst, pitch));
                }
                Samples::Interleaved if pi == 1 => {
                    let pitch = pitch_of(pw * bps);
                    let u = alloc(lane, pitch, ph)?;
                    let v = alloc(lane, pitch, ph)?;
                    let args = Args::new().ptr(src.ptr).i32(int(src.pitch, "pitch")?).i32(wi).i32(hi);
                    let args = if bps == 1 { args } else { args.i32(shift as i32) };
                    let args = args.ptr(u).i32(int(pitch, "pitch")?).ptr(v).i32(int(pitch, "pitch")?);
                    // SAFETY: convert_uv_8 (src, src_pitch, w, h, u, u_pitch,
                    // v, v_pitch) / convert_uv_16 (.., h, shift, u, ..); src
                    // spans h rows of 2w samples (checked at import), u and v
                    // were allocated for h rows of `pitch`.
                    unsafe { lane.runner.launch(if bps == 2 { k.convert_uv_16 } else { k.convert_uv_8 }, grid, args) }?;
                    self.stats.converted_planes.fetch_add(2, Ordering::SeqCst);
                    out.push(plane(u, pitch));
                    out.push(plane(v, pitch));
                }
                Samples::Interleaved => {} // V: written with U above
            }
        }
        lane.runner.backend_mut().record_event(EventRef::of(ready))?;
        Ok(DeviceFrame {
            memory: self.memory,
            format: *format,
            width: w,
            height: h,
            planes: out,
            ready: Some(ready.handle()),
        })
    }

    fn wrap(
        &self,
        desc: FrameDescriptor,
        frame: DeviceFrame,
        ready: B::Event,
        owned: Vec<B::Buffer>,
        externals: Vec<Arc<ExternalObject>>,
        on_release: Option<ReleaseCallback>,
    ) -> GpuFrame<B> {
        GpuFrame {
            label: desc.label,
            readers: Mutex::default(),
            ready: Some(ready),
            owned,
            externals,
            frame,
            release: desc.release,
            on_release: Mutex::new(on_release),
            lane: self.lane.clone(),
            stats: self.stats.clone(),
        }
    }
}

/// A frame of at least one pixel with at least one memory object.
fn check_frame_shape(desc: &FrameDescriptor) -> Result<(), ImportError> {
    let label = &desc.label;
    if desc.width == 0 || desc.height == 0 {
        return Err(err(Kind::Invalid, format!("{label}: size {}x{}", desc.width, desc.height)));
    }
    if desc.objects.is_empty() {
        return Err(err(Kind::Invalid, format!("{label}: no memory objects")));
    }
    Ok(())
}

/// Release fences a GPU lane can signal: host fences and device events (no
/// sync_file can be made here).
fn check_release_fences(desc: &FrameDescriptor) -> Result<(), ImportError> {
    for (i, r) in desc.release.iter().enumerate() {
        if let ReleaseFence::SyncFile(_) = r {
            return Err(err(
                Kind::NotSupported,
                format!("{}: release fence {i} is a sync_file; vmafx cannot create sync_files (use a host or device-event release fence)", desc.label),
            ));
        }
    }
    Ok(())
}

/// Every plane inside its object: pitch, end and alignment for pointers
/// and dma-bufs; a device array holding exactly one plane, at offset 0,
/// large enough.
fn check_plane_extents(desc: &FrameDescriptor, layout: &Layout, extents: &[Extent]) -> Result<(), ImportError> {
    let label = &desc.label;
    let (bps, planes) = (layout.bps, &layout.planes);
        for (pi, p) in planes.iter().enumerate() {
            let (row, h) = layout.plane_rows(pi, desc.width, desc.height);
            match extents[p.object] {
                Extent::Pointer { ptr, bytes } => {
                    check_pitch(label, pi, p, row)?;
                    if int(p.pitch as usize, "pitch").is_err() {
                        return Err(err(Kind::NotSupported, format!("{label}: plane {pi} pitch {} is too large", p.pitch)));
                    }
                    check_end(label, pi, p, row, h, bytes)?;
                    if bps == 2 && (p.offset % 2 != 0 || p.pitch % 2 != 0 || ptr % 2 != 0) {
                        return Err(err(
                            Kind::NotSupported,
                            format!("{label}: plane {pi}: 16-bit samples at an odd address or pitch"),
                        ));
                    }
                }
                Extent::DmaBuf { size } => {
                    check_pitch(label, pi, p, row)?;
                    if int(p.pitch as usize, "pitch").is_err() {
                        return Err(err(Kind::NotSupported, format!("{label}: plane {pi} pitch {} is too large", p.pitch)));
                    }
                    check_end(label, pi, p, row, h, Some(size))?;
                    if bps == 2 && (p.offset % 2 != 0 || p.pitch % 2 != 0) {
                        return Err(err(
                            Kind::NotSupported,
                            format!("{label}: plane {pi}: 16-bit samples at an odd offset or pitch"),
                        ));
                    }
                }
                Extent::Array { array, size } => {
                    if p.offset != 0 {
                        return Err(err(
                            Kind::Invalid,
                            format!("{label}: plane {pi} starts at offset {} into device array {array:#x}; a device array holds one plane, at offset 0", p.offset),
                        ));
                    }
                    if planes.iter().filter(|q| q.object == p.object).count() > 1 {
                        return Err(err(
                            Kind::Invalid,
                            format!("{label}: device array {array:#x} holds more than one plane"),
                        ));
                    }
                    if let Some((row_bytes, rows)) = size {
                        if row > row_bytes || h as u64 > rows {
                            return Err(err(
                                Kind::Range,
                                format!("{label}: plane {pi} ({h} rows of {row} bytes) is larger than device array {array:#x} ({rows} rows of {row_bytes} bytes)"),
                            ));
                        }
                    }
                }
            }
        }
    Ok(())
}

/// Acquire fences: device events are waited on by the library stream
/// (returned); host fences, sync_files and dma-bufs' implicit fences are
/// polled on the host (BUSY while pending): ROCm has no sync_file semaphore.
fn acquire_device_waits(desc: &FrameDescriptor) -> Result<Vec<u64>, ImportError> {
    let label = &desc.label;
    let mut device_waits = Vec::new();
    dmabuf::poll_acquire(desc, |i, f| match f {
        AcquireFence::DeviceEvent(0) => Err(err(Kind::Invalid, format!("{label}: acquire fence {i} is a NULL device event"))),
        AcquireFence::DeviceEvent(e) => {
            device_waits.push(*e);
            Ok(())
        }
        _ => Err(err(
            Kind::NotSupported,
            format!("{label}: acquire fence {i} is a {}; the GPU lanes wait on device events, host fences and sync_files", f.describe()),
        )),
    })?;
    Ok(device_waits)
}

impl<B: Backend + Send + 'static> Drop for GpuImporter<B> {
    fn drop(&mut self) {
        // The frames context is gone: its surfaces' imports go once the
        // frames still out are released and their readers done.
        self.externals.get_mut().unwrap_or_else(|p| p.into_inner()).clear();
        lock(&self.lane).reclaim(false);
    }
}

/// Before a reader's first read of `frame`'s planes: `reader`'s stream
/// waits, on the device, for the frame's `ready` event (the acquire fences
/// and the library stream's copies and conversions). No host wait.
pub fn wait_ready<B: Backend>(frame: &DeviceFrame, reader: &mut B) -> crate::Result<()> {
    if let Some(ready) = frame.ready {
        // SAFETY: a frame's `ready` lives as long as the frame (an import's
        // is owned by its GpuFrame), which the caller holds.
        reader.wait_event(unsafe { EventRef::from_handle(ready) })?;
    }
    Ok(())
}

/// An imported device frame: the planes, the memory they own (converted
/// planes, arrays copied out) and what to signal at release.
pub struct GpuFrame<B: Backend + Send + 'static> {
    label: String,
    /// The events its readers recorded after their last reads
    /// ([`GpuFrame::reads_queued`]); the release waits for each.
    readers: Mutex<Vec<Box<dyn DeviceEvent>>>,
    /// Recorded after the import's work, and again at release (taken then).
    ready: Option<B::Event>,
    /// Device memory the frame owns (converted planes, copied arrays).
    owned: Vec<B::Buffer>,
    /// The dma-buf imports it reads (shared with the importer's cache).
    externals: Vec<Arc<ExternalObject>>,
    frame: DeviceFrame,
    release: Vec<ReleaseFence>,
    on_release: Mutex<Option<ReleaseCallback>>,
    lane: Shared<B>,
    stats: Arc<GpuImportStats>,
}

impl<B: Backend + Send + 'static> std::fmt::Debug for GpuFrame<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuFrame({} {}x{} {})", self.label, self.frame.width, self.frame.height, self.frame.format)
    }
}

impl<B: Backend + Send + 'static> GpuFrame<B> {
    pub fn label(&self) -> &str {
        &self.label
    }
    pub fn frame(&self) -> &DeviceFrame {
        &self.frame
    }

    /// After a reader has queued its last read of the frame on `reader`'s
    /// stream: the frame's release (when its last reference drops) waits
    /// for that work. A reader that synchronises its stream before dropping
    /// its reference needs not call this.
    pub fn reads_queued<R: Backend>(&self, reader: &mut R) -> crate::Result<()> {
        let memory = self.frame.memory;
        if reader.memory() != memory {
            return Err(crate::Error::Mismatch(format!(
                "reads_queued: the reader is in {:?} memory {:#x}, the frame in {:?} {:#x}",
                reader.memory().kind,
                reader.memory().context,
                memory.kind,
                memory.context
            )));
        }
        let event = reader.create_event()?;
        reader.record_event(EventRef::of(&event))?;
        self.readers.lock().unwrap_or_else(|p| p.into_inner()).push(Box::new(event));
        Ok(())
    }
}

impl<B: Backend + Send + 'static> PictureSource for GpuFrame<B> {
    fn host(&self) -> Option<Picture<'_>> {
        None
    }
    fn device_frame(&self) -> Option<&DeviceFrame> {
        Some(&self.frame)
    }
}

impl<B: Backend + Send + 'static> Drop for GpuFrame<B> {
    fn drop(&mut self) {
        let reader_events = std::mem::take(self.readers.get_mut().unwrap_or_else(|p| p.into_inner()));
        let mut lane = lock(&self.lane);
        let record = |r: crate::Result<()>| {
            if let Err(e) = r {
                crate::device::gpu::backend::record_drop_error(e);
            }
        };
        let backend = lane.runner.backend_mut();
        // The library stream goes past every reader's last read (its own
        // work on the frame is before, in stream order), then says so.
        for e in &reader_events {
            record(backend.wait_event(EventRef::of(&**e)));
        }
        for r in &self.release {
            if let ReleaseFence::DeviceEvent(e) = r {
                // SAFETY: the caller keeps its release event alive until it
                // is signalled (ReleaseFence::DeviceEvent); recorded now.
                record(backend.record_event(unsafe { EventRef::from_handle(*e) }));
            }
        }
        // `ready` now marks the release point: re-recorded after the waits.
        let Some(released) = self.ready.take() else { return };
        record(backend.record_event(EventRef::of(&released)));
        let host_side = self.release.iter().any(|r| matches!(r, ReleaseFence::Host(_)))
            || self.on_release.get_mut().map(|c| c.is_some()).unwrap_or(true);
        // Host-side release needs the host to see the readers done; if it
        // cannot, signalling now could hand the producer a buffer still
        // being read: leave host fences and the callback unsignalled.
        let mut host_release = true;
        if host_side {
            if let Err(e) = backend.synchronize_event(EventRef::of(&released)) {
                crate::device::gpu::backend::record_drop_error(e);
                host_release = false;
            }
        }
        // The readers' events go (the waits queued on them stay valid).
        drop(reader_events);
        let buffers = std::mem::take(&mut self.owned);
        let externals = std::mem::take(&mut self.externals);
        lane.runner.retire(released, buffers, Box::new(externals));
        lane.reclaim(false);
        drop(lane);
        if !host_release {
            return;
        }
        self.stats.releases.fetch_add(1, Ordering::SeqCst);
        for r in &self.release {
            if let ReleaseFence::Host(h) = r {
                h.signal();
            }
        }
        if let Some(cb) = self.on_release.get_mut().ok().and_then(Option::take) {
            cb();
        }
    }
}

// Frames of both lanes travel to worker threads as `Arc<dyn PictureSource>`.
const _: fn() = || {
    fn shareable<T: Send + Sync>() {}
    shareable::<GpuFrame<GpuLane>>();
    shareable::<GpuImporter<GpuLane>>();
};
