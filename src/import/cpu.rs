//! The host importer (`HostImporter`): dma-bufs (and host memory) read in place.
//!
//! Each dma-buf object is mapped once, read-only, over its real size; reads
//! are bracketed with `DMA_BUF_IOCTL_SYNC` (START|READ at import, END|READ
//! when the frame is dropped, i.e. when the engine no longer holds it).
//! Planes are read at their offsets and pitches: a planar frame (YUV420 in
//! one layer, or one R8/R16 layer per plane) becomes a [`Picture`] whose
//! [`PlaneView`]s point into the mappings, with no copy. Interleaved chroma
//! (NV12, P010, P016, VAAPI's R8+GR88 / R16+GR1616) gives a luma-only (gray)
//! picture in place, unless the device was asked for chroma: then chroma is
//! deinterleaved into host memory, and that copy is counted. 16-bit DRM
//! samples are MSB-aligned (P010 keeps 10 bits in the high bits), so a depth
//! below 16 is shifted down into host memory, counted likewise.
//!
//! Only `DRM_FORMAT_MOD_LINEAR` is read; `DRM_FORMAT_MOD_INVALID` only when
//! the descriptor says the implicit layout is linear.

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::layout::{check_end, check_modifier, check_pitch, err, flatten, FlatPlane, Layout, ReaderFormats, Samples};
use super::dmabuf;
use super::sys::{self, Mapping};
use super::{
    DrmFourcc, FrameDescriptor, ImportError, ImportErrorKind as Kind, Memory,
    Object, Refusal, ReleaseFence,
};
use crate::picture::{HostCopies, HostCopy, PictureSource};
use crate::picture::{Chroma, OwnedPicture, Picture, PixelFormat, PlaneView};

/// Counters of one device, shared by its frames. Tests read them to prove
/// what happened: copies to host memory, SYNC ioctls, BUSY answers.
#[derive(Debug, Default)]
pub struct ImportStats {
    /// Pictures whose planes were copied into host memory (deinterleaved
    /// or shifted): the importer's share of a [`HostCopies`] counter (its
    /// own, or a context's: [`HostImporter::counting_in`]).
    pub copies: HostCopies,
    /// DMA_BUF_IOCTL_SYNC calls with START|READ and with END|READ.
    pub sync_starts: AtomicU64,
    pub sync_ends: AtomicU64,
    pub imports: AtomicU64,
    pub busy: AtomicU64,
}

impl ImportStats {
    /// Planes copied into host memory.
    pub fn host_copies(&self) -> u64 {
        self.copies.planes(HostCopy::InHostMemory)
    }
    /// Bytes of those planes.
    pub fn host_copy_bytes(&self) -> u64 {
        self.copies.bytes(HostCopy::InHostMemory)
    }
    pub fn sync_starts(&self) -> u64 {
        self.sync_starts.load(Ordering::SeqCst)
    }
    pub fn sync_ends(&self) -> u64 {
        self.sync_ends.load(Ordering::SeqCst)
    }
    pub fn imports(&self) -> u64 {
        self.imports.load(Ordering::SeqCst)
    }
    pub fn busy(&self) -> u64 {
        self.busy.load(Ordering::SeqCst)
    }
}

/// Imports frames for reading on the host (the CPU lane): dma-bufs mapped
/// in place, host memory shared.
#[derive(Debug, Default)]
pub struct HostImporter {
    read_chroma: bool,
    stats: Arc<ImportStats>,
}

/// Where a plane of the picture reads from.
#[derive(Clone, Copy, Debug)]
enum PlaneSource {
    /// In place: object, byte offset, stride.
    Object { object: usize, offset: usize, stride: usize },
    /// Plane `i` of the frame's host copy.
    Copy(usize),
}

/// An imported frame: owns its objects (fds), mappings and host copies;
/// closes the SYNC bracket and signals host release fences on drop.
pub struct CpuFrame {
    label: String,
    format: PixelFormat,
    width: usize,
    height: usize,
    sources: Vec<PlaneSource>,
    copy: Option<OwnedPicture>,
    mappings: Vec<Option<Mapping>>,
    objects: Vec<Object>,
    release: Vec<ReleaseFence>,
    stats: Arc<ImportStats>,
}

impl std::fmt::Debug for CpuFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CpuFrame({} {}x{} {})", self.label, self.width, self.height, self.format)
    }
}

/// What the CPU lane reads.
const HOST_READER: ReaderFormats = ReaderFormats {
    reads: "the CPU device reads",
    formats: &[
        DrmFourcc::Nv12,
        DrmFourcc::P010,
        DrmFourcc::P016,
        DrmFourcc::Yuv420,
        DrmFourcc::R8,
        DrmFourcc::Gr88,
        DrmFourcc::R16,
        DrmFourcc::Gr1616,
    ],
    formats_text: "NV12, P010, P016, YUV420 and the one-layer-per-plane R8+GR88 / R16+GR1616 layouts",
};

impl HostImporter {
    /// `read_chroma`: deinterleave NV12-like chroma for chroma features
    /// (a counted host copy); false gives NV12-like frames as gray pictures.
    pub fn new(read_chroma: bool) -> Self {
        Self::counting_in(read_chroma, HostCopies::new())
    }

    /// An importer whose host copies count in `copies` (a context's).
    pub fn counting_in(read_chroma: bool, copies: HostCopies) -> Self {
        HostImporter { read_chroma, stats: Arc::new(ImportStats { copies, ..ImportStats::default() }) }
    }

    pub fn stats(&self) -> &Arc<ImportStats> {
        &self.stats
    }

    /// Imports `desc`, or refuses it (BUSY when a fence is pending) and gives
    /// it back.
    pub fn import(&self, desc: FrameDescriptor) -> Result<CpuFrame, Refusal> {
        match self.import_inner(&desc) {
            Ok(prepared) => Ok(self.finish(desc, prepared)),
            Err(error) => {
                if error.kind == Kind::Busy {
                    self.stats.busy.fetch_add(1, Ordering::SeqCst);
                }
                Err(Refusal { error, descriptor: Box::new(desc) })
            }
        }
    }

    /// Imports `desc`, waiting up to `timeout` for its fences. Past it, the
    /// error (BUSY) names the frame and the fence still pending.
    pub fn wait_and_import(
        &self,
        desc: FrameDescriptor,
        timeout: Duration,
    ) -> Result<CpuFrame, Refusal> {
        let start = Instant::now();
        let mut desc = desc;
        let mut nap = Duration::from_millis(1);
        loop {
            match self.import(desc) {
                Ok(frame) => return Ok(frame),
                Err(r) if r.error.kind == Kind::Busy => {
                    let elapsed = start.elapsed();
                    if elapsed >= timeout {
                        return Err(Refusal {
                            error: err(
                                Kind::Busy,
                                format!("gave up after {timeout:?}: {}", r.error.message),
                            ),
                            descriptor: r.descriptor,
                        });
                    }
                    std::thread::sleep(nap.min(timeout - elapsed));
                    nap = (nap * 2).min(Duration::from_millis(20));
                    desc = *r.descriptor;
                }
                Err(r) => return Err(r),
            }
        }
    }

    /// Everything that can refuse the frame, in order, before its pixels
    /// are read: size, release fences, objects, plane extents, acquire
    /// fences; then the host copy allocated, the dma-bufs mapped and their
    /// SYNC brackets opened.
    fn import_inner(&self, desc: &FrameDescriptor) -> Result<Prepared, ImportError> {
        check_size(desc)?;
        check_release_fences(desc)?;
        let sizes = object_sizes(desc)?;
        // The CPU lane's formats are all 4:2:0 (or leave chroma to them).
        let layout = flatten(desc, &HOST_READER)?;
        check_plane_extents(desc, &layout, &sizes)?;
        let (bps, bits) = (layout.bps, layout.bits);
        let planes = layout.planes;
        // Fences: the caller's, then each dma-buf's implicit writers' fences.
        let label = &desc.label;
        dmabuf::poll_acquire(desc, |i, f| {
            Err(err(
                Kind::NotSupported,
                format!("{label}: acquire fence {i} is a {}; the CPU device waits on host fences and sync_files", f.describe()),
            ))
        })?;
        let (format, shift, copy) = self.host_copy(desc, planes.len(), bps, bits)?;
        let mappings = map_objects(desc, &sizes)?;
        self.open_sync_brackets(desc)?;
        Ok(Prepared { bps, format, shift, planes, mappings, copy })
    }

    /// Host memory for what cannot be read in place: a depth below 16 in
    /// 16-bit samples (shifted down), interleaved chroma when asked for
    /// (deinterleaved). Allocated before the SYNC bracket opens, so a
    /// failure leaves nothing to undo.
    fn host_copy(
        &self,
        desc: &FrameDescriptor,
        plane_count: usize,
        bps: usize,
        bits: u8,
    ) -> Result<(PixelFormat, u32, Option<OwnedPicture>), ImportError> {
        let label = &desc.label;
        let interleaved = plane_count == 2;
        let shift = if bps == 2 { 16 - bits as u32 } else { 0 };
        let chroma = if interleaved && !self.read_chroma { Chroma::Yuv400 } else { Chroma::Yuv420 };
        let format = PixelFormat { chroma, bits };
        let copy = if shift != 0 || (interleaved && self.read_chroma) {
            Some(OwnedPicture::new(format, desc.width, desc.height).map_err(|e| {
                err(Kind::Invalid, format!("{label}: {e}"))
            })?)
        } else {
            None
        };
        Ok((format, shift, copy))
    }

    /// Opens every dma-buf's SYNC bracket (START|READ); on a failure the
    /// ones already opened are closed again.
    fn open_sync_brackets(&self, desc: &FrameDescriptor) -> Result<(), ImportError> {
        let label = &desc.label;
        let mut started: Vec<usize> = Vec::new();
        for (oi, o) in desc.objects.iter().enumerate() {
            if let Memory::DmaBuf(fd) = &o.memory {
                if let Err(e) = bracket(&self.stats, fd.as_fd(), Bracket::Start) {
                    for &s in &started {
                        if let Memory::DmaBuf(fd) = &desc.objects[s].memory {
                            let _ = bracket(&self.stats, fd.as_fd(), Bracket::End);
                        }
                    }
                    return Err(err(Kind::Device, format!("{label}: object {oi}: DMA_BUF_IOCTL_SYNC START|READ failed ({e})")));
                }
                started.push(oi);
            }
        }
        Ok(())
    }

    /// Builds the picture's planes (in place, or copied where the core needs
    /// a layout the buffer does not have).
    fn finish(&self, desc: FrameDescriptor, prep: Prepared) -> CpuFrame {
        let Prepared { bps, format, shift, planes, mappings, mut copy } = prep;
        let (w, h) = (desc.width, desc.height);
        let objects = desc.objects;
        let bytes_of = |object: usize| -> &[u8] {
            match (&mappings[object], &objects[object].memory) {
                (Some(m), _) => m.bytes(),
                (None, Memory::Host(b)) => b,
                // flatten/import_inner admit only host memory and dma-bufs.
                _ => &[],
            }
        };
        let mut sources = Vec::new();
        let (mut copied_planes, mut copied_bytes) = (0, 0);
        for pi in 0..format.chroma.plane_count() {
            let src = &planes[pi.min(planes.len() - 1)];
            let in_place = shift == 0 && src.samples == Samples::Single;
            if in_place {
                sources.push(PlaneSource::Object {
                    object: src.object,
                    offset: src.offset as usize,
                    stride: src.pitch as usize,
                });
                continue;
            }
            let dst = copy.as_mut().expect("import_inner allocates the copy whenever a plane is not in place");
            let (pw, ph) = format.plane_size(pi, w, h);
            let dst_stride = dst.stride(pi);
            let data = bytes_of(src.object);
            let (step, lane) = match src.samples {
                Samples::Single => (1, 0),
                Samples::Interleaved => (2, pi - 1),
            };
            let out = dst.plane_bytes_mut(pi);
            for y in 0..ph {
                let row = &data[src.offset as usize + y * src.pitch as usize..];
                let drow = &mut out[y * dst_stride..];
                for x in 0..pw {
                    let i = x * step + lane;
                    if bps == 1 {
                        drow[x] = row[i];
                    } else {
                        let v = u16::from_le_bytes([row[2 * i], row[2 * i + 1]]) >> shift;
                        drow[2 * x..2 * x + 2].copy_from_slice(&v.to_ne_bytes());
                    }
                }
            }
            copied_planes += 1;
            copied_bytes += pw * ph * bps;
            sources.push(PlaneSource::Copy(pi));
        }
        if copied_planes > 0 {
            self.stats.copies.count(HostCopy::InHostMemory, copied_planes, copied_bytes);
        }
        self.stats.imports.fetch_add(1, Ordering::SeqCst);
        let mut acquire = desc.acquire;
        acquire.clear(); // signalled: the sync_files close here
        CpuFrame {
            label: desc.label,
            format,
            width: w,
            height: h,
            sources,
            copy,
            mappings,
            objects,
            release: desc.release,
            stats: self.stats.clone(),
        }
    }
}

/// A frame of at least one pixel.
fn check_size(desc: &FrameDescriptor) -> Result<(), ImportError> {
    if desc.width == 0 || desc.height == 0 {
        return Err(err(Kind::Invalid, format!("{}: size {}x{}", desc.label, desc.width, desc.height)));
    }
    Ok(())
}

/// Release fences the host can signal: host fences only (no sync_file can
/// be made here, no device event recorded).
fn check_release_fences(desc: &FrameDescriptor) -> Result<(), ImportError> {
    let label = &desc.label;
    for (i, r) in desc.release.iter().enumerate() {
        match r {
            ReleaseFence::Host(_) => {}
            ReleaseFence::SyncFile(_) => {
                return Err(err(
                    Kind::NotSupported,
                    format!("{label}: release fence {i} is a sync_file; vmafx cannot create sync_files (use a host release fence)"),
                ))
            }
            ReleaseFence::DeviceEvent(e) => {
                return Err(err(
                    Kind::NotSupported,
                    format!("{label}: release fence {i} is device event {e:#x}; the CPU device cannot record device events"),
                ))
            }
        }
    }
    Ok(())
}

/// Each object's real size, once its kind (host memory or a dma-buf) and
/// modifier are ones the host reads and its declared size is not more
/// than it holds.
fn object_sizes(desc: &FrameDescriptor) -> Result<Vec<u64>, ImportError> {
    let label = &desc.label;
    let mut sizes = Vec::with_capacity(desc.objects.len());
    for (oi, o) in desc.objects.iter().enumerate() {
        check_modifier(desc, oi, o, &HOST_READER)?;
        let real = match &o.memory {
            Memory::Host(bytes) => {
                let real = bytes.len() as u64;
                dmabuf::check_declared(label, oi, real, o.size)?;
                real
            }
            Memory::DmaBuf(fd) => dmabuf::object_size(label, oi, fd, o.size)?,
            Memory::GlTexture { target, name } => {
                return Err(err(
                    Kind::NotSupported,
                    format!("{label}: object {oi} is GL texture {name} (target {target:#x}); the CPU device cannot read GL textures"),
                ))
            }
            m @ (Memory::DevicePointer(_) | Memory::DeviceArray(_)) => {
                return Err(err(
                    Kind::NotSupported,
                    format!("{label}: object {oi} is {:?} memory; the CPU device reads host memory and dma-bufs", m.kind()),
                ))
            }
        };
        sizes.push(real);
    }
    Ok(sizes)
}

/// Every plane's extent inside its object, before anything is read; 16-bit
/// samples 2-byte aligned.
fn check_plane_extents(desc: &FrameDescriptor, layout: &Layout, sizes: &[u64]) -> Result<(), ImportError> {
    let label = &desc.label;
    for (pi, p) in layout.planes.iter().enumerate() {
        let (row, h) = layout.plane_rows(pi, desc.width, desc.height);
        check_pitch(label, pi, p, row)?;
        check_end(label, pi, p, row, h, Some(sizes[p.object]))?;
        let host_base_odd = match &desc.objects[p.object].memory {
            Memory::Host(b) => b.as_ptr() as usize % 2 != 0,
            _ => false, // mappings are page-aligned
        };
        if layout.bps == 2 && (p.offset % 2 != 0 || p.pitch % 2 != 0 || host_base_odd) {
            return Err(err(
                Kind::NotSupported,
                format!("{label}: plane {pi}: 16-bit samples at an odd offset or pitch"),
            ));
        }
    }
    Ok(())
}

/// Each dma-buf mapped once, read-only, over its real size (`None` for
/// host memory).
fn map_objects(desc: &FrameDescriptor, sizes: &[u64]) -> Result<Vec<Option<Mapping>>, ImportError> {
    let label = &desc.label;
    let mut mappings: Vec<Option<Mapping>> = Vec::with_capacity(desc.objects.len());
    for (oi, o) in desc.objects.iter().enumerate() {
        let m = match &o.memory {
            Memory::DmaBuf(fd) => Some(Mapping::map_read_only(fd.as_fd(), sizes[oi] as usize).map_err(|e| {
                err(Kind::Device, format!("{label}: object {oi}: mmap of {} bytes failed ({e})", sizes[oi]))
            })?),
            _ => None,
        };
        mappings.push(m);
    }
    Ok(mappings)
}

#[derive(Clone, Copy)]
enum Bracket {
    Start,
    End,
}

/// One side of the CPU-access bracket (DMA_BUF_IOCTL_SYNC with READ),
/// counted in `stats` once the kernel has accepted it: vgem mappings are
/// coherent, so the counters are how tests see that reads were bracketed.
fn bracket(stats: &ImportStats, fd: std::os::fd::BorrowedFd<'_>, side: Bracket) -> std::io::Result<()> {
    let (flags, counter) = match side {
        Bracket::Start => (sys::DMA_BUF_SYNC_START | sys::DMA_BUF_SYNC_READ, &stats.sync_starts),
        Bracket::End => (sys::DMA_BUF_SYNC_END | sys::DMA_BUF_SYNC_READ, &stats.sync_ends),
    };
    sys::dma_buf_sync(fd, flags)?;
    counter.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

struct Prepared {
    bps: usize,
    format: PixelFormat,
    /// Right shift from MSB-aligned 16-bit samples to `format.bits`.
    shift: u32,
    planes: Vec<FlatPlane>,
    mappings: Vec<Option<Mapping>>,
    copy: Option<OwnedPicture>,
}

impl CpuFrame {
    pub fn label(&self) -> &str {
        &self.label
    }
    pub fn format(&self) -> PixelFormat {
        self.format
    }

    fn object_bytes(&self, object: usize) -> &[u8] {
        match (&self.mappings[object], &self.objects[object].memory) {
            (Some(m), _) => m.bytes(),
            (None, Memory::Host(b)) => b,
            _ => &[],
        }
    }
}

impl PictureSource for CpuFrame {
    fn host(&self) -> Option<Picture<'_>> {
        Some(self.picture())
    }
}

impl CpuFrame {
    /// The imported planes, read in place (or from the copy made for
    /// semi-planar chroma).
    pub fn picture(&self) -> Picture<'_> {
        let bps = self.format.bytes_per_sample();
        let copied = self.copy.as_ref().map(|c| c.view());
        let mut views = Vec::with_capacity(3);
        for (pi, s) in self.sources.iter().enumerate() {
            let (w, h) = self.format.plane_size(pi, self.width, self.height);
            let view = match *s {
                PlaneSource::Object { object, offset, stride } => {
                    let data = &self.object_bytes(object)[offset..offset + stride * (h - 1) + w * bps];
                    PlaneView::new(data, stride, w, h, bps)
                        .expect("plane extent and alignment checked at import")
                }
                PlaneSource::Copy(i) => copied.as_ref().expect("copy exists").plane(i),
            };
            views.push(view);
        }
        Picture::new(self.format, self.width, self.height, &views)
            .expect("plane sizes follow the format by construction")
    }
}

impl Drop for CpuFrame {
    fn drop(&mut self) {
        for o in &self.objects {
            if let Memory::DmaBuf(fd) = &o.memory {
                // An END failure leaves nothing to undo: the mapping goes next.
                let _ = bracket(&self.stats, fd.as_fd(), Bracket::End);
            }
        }
        for r in &self.release {
            if let ReleaseFence::Host(h) = r {
                h.signal();
            }
        }
    }
}
