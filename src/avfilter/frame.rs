//! Frames from the host (FFmpeg's AVFrame, seen through `VmafxFrame`) as
//! pictures the core scores, without copying where the layout allows.
//!
//! Planar YUV and gray are read in place. Semi-planar formats (nv12, p010,
//! p016) keep their luma in place; their interleaved chroma is split into
//! planes only when an extractor reads chroma (PSNR): the VMAF features read
//! luma only, so the picture is then presented as 4:0:0. p010 stores 10-bit
//! samples in the top bits of 16, so its luma is shifted down into a copy.
//! Every copy is counted (`host_copies`). Negative line sizes (bottom-up
//! frames, e.g. after `vflip`) are copied too.

use std::ffi::c_void;

use crate::picture::PictureSource;
use crate::picture::{Chroma, Picture, PixelFormat, PlaneView};
use crate::{Error, Result};

/// How samples of a pixel format are laid out in the host's planes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One plane per component (Y, U, V) or luma only.
    Planar,
    /// Y plane, then one plane of interleaved U/V pairs (4:2:0).
    SemiPlanar,
}

/// A host pixel format the filter accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostFormat {
    pub name: &'static str,
    pub chroma: Chroma,
    pub bits: u8,
    pub layout: Layout,
    /// Samples sit in the top `bits` of a 16-bit word (p010).
    pub msb_aligned: bool,
}

const fn planar(name: &'static str, chroma: Chroma, bits: u8) -> HostFormat {
    HostFormat { name, chroma, bits, layout: Layout::Planar, msb_aligned: false }
}
const fn semi(name: &'static str, bits: u8, msb_aligned: bool) -> HostFormat {
    HostFormat { name, chroma: Chroma::Yuv420, bits, layout: Layout::SemiPlanar, msb_aligned }
}

/// Formats by their FFmpeg names (`av_get_pix_fmt_name`); little-endian
/// only. Keep in sync with `pix_fmts[]` in vf_vmafx.c.
pub(crate) static HOST_FORMATS: &[HostFormat] = &[
    planar("yuv420p", Chroma::Yuv420, 8),
    planar("yuv422p", Chroma::Yuv422, 8),
    planar("yuv444p", Chroma::Yuv444, 8),
    planar("yuv420p10le", Chroma::Yuv420, 10),
    planar("yuv422p10le", Chroma::Yuv422, 10),
    planar("yuv444p10le", Chroma::Yuv444, 10),
    planar("yuv420p12le", Chroma::Yuv420, 12),
    planar("yuv422p12le", Chroma::Yuv422, 12),
    planar("yuv444p12le", Chroma::Yuv444, 12),
    planar("yuv420p16le", Chroma::Yuv420, 16),
    planar("yuv422p16le", Chroma::Yuv422, 16),
    planar("yuv444p16le", Chroma::Yuv444, 16),
    planar("gray", Chroma::Yuv400, 8),
    planar("gray10le", Chroma::Yuv400, 10),
    planar("gray12le", Chroma::Yuv400, 12),
    planar("gray16le", Chroma::Yuv400, 16),
    semi("nv12", 8, false),
    semi("p010le", 10, true),
    semi("p016le", 16, false),
];

impl HostFormat {
    pub fn by_name(name: &str) -> Result<&'static HostFormat> {
        HOST_FORMATS.iter().find(|f| f.name == name).ok_or_else(|| {
            let known: Vec<_> = HOST_FORMATS.iter().map(|f| f.name).collect();
            Error::NotSupported(format!("pixel format '{name}' (vmafx reads {})", known.join(", ")))
        })
    }

    /// The format the core sees. Semi-planar input without chroma readers
    /// is presented as luma only.
    pub fn core_format(&self, read_chroma: bool) -> PixelFormat {
        let chroma = if self.layout == Layout::SemiPlanar && !read_chroma {
            Chroma::Yuv400
        } else {
            self.chroma
        };
        PixelFormat { chroma, bits: self.bits }
    }

    fn bytes_per_sample(&self) -> usize {
        if self.bits > 8 {
            2
        } else {
            1
        }
    }
}

/// A frame handle the host gave us; released through the host's callback
/// when dropped.
pub struct FrameHandle {
    ptr: *mut c_void,
    free: unsafe extern "C" fn(*mut c_void),
}

// SAFETY: the handle is an AVFrame reference owned by us alone; the host
// promises (vmafx.h) that `free` may run on any thread (av_frame_free on a
// reference-counted frame is thread-safe).
unsafe impl Send for FrameHandle {}
// SAFETY: shared, the handle is only read (never freed through `&self`).
unsafe impl Sync for FrameHandle {}

impl FrameHandle {
    /// # Safety
    /// `ptr` must be a frame the host hands over (released exactly once,
    /// by this handle) and `free` its release function.
    pub unsafe fn new(ptr: *mut c_void, free: unsafe extern "C" fn(*mut c_void)) -> FrameHandle {
        FrameHandle { ptr, free }
    }
    pub fn as_ptr(&self) -> *mut c_void {
        self.ptr
    }
    /// Gives the frame back to the host without releasing it.
    pub fn into_raw(self) -> *mut c_void {
        let ptr = self.ptr;
        std::mem::forget(self);
        ptr
    }
}

impl Drop for FrameHandle {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: `new`'s contract: we own this frame, released once here.
            unsafe { (self.free)(self.ptr) }
        }
    }
}

/// Where a frame's planes are, as `VmafxFrame.pix_fmt` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameMemory {
    /// Software frame: planes in host memory.
    Host,
    /// DRM_PRIME: `data[0]` is its `AVDRMFrameDescriptor`, and the format
    /// given with it is the hw frames context's sw_format.
    DrmPrime,
    /// CUDA: `data[]` are device pointers in the `CUcontext` `context`, the
    /// format given with them the hw frames context's sw_format.
    Cuda { context: u64 },
    /// HIP (`AV_PIX_FMT_HIP`): `data[]` are device pointers of the HIP
    /// device the input was declared on, the format given with them the hw
    /// frames context's sw_format.
    Hip,
}

/// Planes of one host frame as `VmafxFrame` describes them.
#[derive(Clone, Copy, Debug)]
pub struct RawPlanes {
    pub data: [*const u8; 4],
    pub linesize: [i32; 4],
    pub width: usize,
    pub height: usize,
    pub memory: FrameMemory,
}

#[derive(Clone, Copy, Debug)]
enum PlaneSource {
    /// In the host's buffer: `len` bytes from `ptr`.
    Host { ptr: *const u8, stride: usize, len: usize },
    /// In `owned`, from byte `offset`.
    Owned { offset: usize, stride: usize, len: usize },
}

/// A host frame wrapped for the engine: keeps the frame referenced until
/// the engine drops it (scored, or no longer needed as the previous
/// reference), then releases it.
pub struct HostPicture {
    format: PixelFormat,
    width: usize,
    height: usize,
    planes: [Option<PlaneSource>; 3],
    /// Copies (deinterleaved chroma, shifted or flipped planes); u16 keeps
    /// 2-byte alignment.
    owned: Vec<u16>,
    // Declared last: the planes above may point into the frame.
    _frame: FrameHandle,
}

// SAFETY: the raw pointers point into the frame's buffers, which the handle
// keeps referenced and nobody writes while referenced (a frame with more
// than one reference is not writable in FFmpeg); reads from several threads
// are fine.
unsafe impl Send for HostPicture {}
// SAFETY: as above: the planes are only read while referenced.
unsafe impl Sync for HostPicture {}

impl HostPicture {
    /// Wraps `frame` (planes `raw`, in host format `host`); `read_chroma`
    /// says whether any extractor reads chroma. Returns the picture and
    /// whether a host copy was made.
    ///
    /// # Safety
    /// `raw` must describe the frame's planes: for each plane the format
    /// has, `data[i]` points to `height_i` rows of `linesize[i]` bytes
    /// (rows going up when negative) holding at least `width_i` samples,
    /// valid for as long as `frame` is referenced.
    pub unsafe fn wrap(
        frame: FrameHandle,
        raw: &RawPlanes,
        host: &HostFormat,
        read_chroma: bool,
    ) -> Result<(HostPicture, bool)> {
        let (width, height) = (raw.width, raw.height);
        if width == 0 || height == 0 {
            return Err(Error::invalid(format!("empty frame {width}x{height}")));
        }
        let format = host.core_format(read_chroma);
        let bps = host.bytes_per_sample();
        let mut pic = HostPicture {
            format,
            width,
            height,
            planes: [None; 3],
            owned: Vec::new(),
            _frame: frame,
        };
        let mut copied = false;

        // Luma: in place unless shifted (p010) or bottom-up.
        let ls = raw.linesize[0];
        if raw.data[0].is_null() {
            return Err(Error::invalid("frame has no luma plane"));
        }
        if host.msb_aligned || ls < 0 {
            let shift = if host.msb_aligned { 16 - host.bits as u32 } else { 0 };
            // SAFETY: this function's contract: the luma plane holds `height`
            // rows of `width` samples, `ls` bytes apart.
            pic.planes[0] = Some(unsafe { pic.copy_plane(raw.data[0], ls, width, height, bps, shift, 1, 0) });
            copied = true;
        } else {
            pic.planes[0] = Some(host_plane(raw.data[0], ls, width, height, bps)?);
        }

        match (host.layout, format.chroma) {
            (_, Chroma::Yuv400) => {}
            (Layout::Planar, _) => {
                for i in 1..3 {
                    let (w, h) = format.plane_size(i, width, height);
                    if raw.data[i].is_null() {
                        return Err(Error::invalid(format!("frame has no plane {i}")));
                    }
                    if raw.linesize[i] < 0 {
                        // SAFETY: this function's contract: plane i holds
                        // `h` rows of `w` samples, `linesize[i]` bytes apart.
                        pic.planes[i] =
                            Some(unsafe { pic.copy_plane(raw.data[i], raw.linesize[i], w, h, bps, 0, 1, 0) });
                        copied = true;
                    } else {
                        pic.planes[i] = Some(host_plane(raw.data[i], raw.linesize[i], w, h, bps)?);
                    }
                }
            }
            (Layout::SemiPlanar, _) => {
                // Split U/V pairs into two planes.
                let (w, h) = format.plane_size(1, width, height);
                if raw.data[1].is_null() {
                    return Err(Error::invalid("frame has no chroma plane"));
                }
                let shift = if host.msb_aligned { 16 - host.bits as u32 } else { 0 };
                for i in 1..3 {
                    // SAFETY: this function's contract: plane 1 holds `h`
                    // rows of `w` U/V pairs, `linesize[1]` bytes apart.
                    pic.planes[i] =
                        Some(unsafe { pic.copy_plane(raw.data[1], raw.linesize[1], w, h, bps, shift, 2, i - 1) });
                }
                copied = true;
            }
        }
        // Validate once here, so `picture()` cannot fail later.
        pic.view()?;
        Ok((pic, copied))
    }

    /// The planes copied into host memory and their bytes ((0, 0): every
    /// plane read in place).
    pub fn copied(&self) -> (usize, usize) {
        let copies = self.planes.iter().flatten().filter_map(|p| match p {
            PlaneSource::Owned { len, .. } => Some(*len),
            PlaneSource::Host { .. } => None,
        });
        copies.fold((0, 0), |(planes, bytes), len| (planes + 1, bytes + len))
    }

    /// Copies `h` rows of `w` samples (taking every `step`-th sample from
    /// `first`, shifted right by `shift`) into `owned`.
    ///
    /// # Safety
    /// As [`HostPicture::wrap`]'s: `src` starts `h` rows `linesize` bytes
    /// apart (going up when negative), each holding `step * w` samples of
    /// `bps` bytes, readable while the frame is referenced.
    #[allow(clippy::too_many_arguments)]
    unsafe fn copy_plane(
        &mut self,
        src: *const u8,
        linesize: i32,
        w: usize,
        h: usize,
        bps: usize,
        shift: u32,
        step: usize,
        first: usize,
    ) -> PlaneSource {
        let stride = (w * bps + 63) & !63;
        let offset = self.owned.len() * 2;
        self.owned.resize(self.owned.len() + (stride * h).div_ceil(2), 0);
        // SAFETY: u16 storage viewed as bytes, within its length.
        let dst = unsafe {
            std::slice::from_raw_parts_mut(self.owned.as_mut_ptr() as *mut u8, self.owned.len() * 2)
        };
        for y in 0..h {
            // SAFETY: `wrap`'s contract: row y starts linesize * y bytes
            // from src (negative: going up) and holds `step * w` samples.
            let row = unsafe { std::slice::from_raw_parts(src.offset(linesize as isize * y as isize), step * w * bps) };
            let d = &mut dst[offset + y * stride..offset + y * stride + w * bps];
            if bps == 1 {
                for x in 0..w {
                    d[x] = row[step * x + first];
                }
            } else {
                for x in 0..w {
                    let j = 2 * (step * x + first);
                    let v = u16::from_ne_bytes([row[j], row[j + 1]]) >> shift;
                    d[2 * x..2 * x + 2].copy_from_slice(&v.to_ne_bytes());
                }
            }
        }
        PlaneSource::Owned { offset, stride, len: stride * h }
    }

    fn view(&self) -> Result<Picture<'_>> {
        let bps = self.format.bytes_per_sample();
        // SAFETY: u16 storage viewed as bytes.
        let owned = unsafe {
            std::slice::from_raw_parts(self.owned.as_ptr() as *const u8, self.owned.len() * 2)
        };
        let mut views = Vec::with_capacity(3);
        for i in 0..self.format.chroma.plane_count() {
            let (w, h) = self.format.plane_size(i, self.width, self.height);
            let (data, stride) = match self.planes[i] {
                Some(PlaneSource::Host { ptr, stride, len }) => {
                    // SAFETY: `wrap`'s contract: `len` bytes from `ptr` lie in
                    // the frame's buffer, referenced by `_frame`.
                    (unsafe { std::slice::from_raw_parts(ptr, len) }, stride)
                }
                Some(PlaneSource::Owned { offset, stride, len }) => (&owned[offset..offset + len], stride),
                None => return Err(Error::Internal(format!("plane {i} missing"))),
            };
            views.push(PlaneView::new(data, stride, w, h, bps)?);
        }
        Picture::new(self.format, self.width, self.height, &views)
    }
}

fn host_plane(ptr: *const u8, linesize: i32, w: usize, h: usize, bps: usize) -> Result<PlaneSource> {
    let stride = linesize as usize;
    if stride < w * bps {
        return Err(Error::invalid(format!(
            "line size {linesize} is shorter than a row of {w} samples"
        )));
    }
    Ok(PlaneSource::Host { ptr, stride, len: (h - 1) * stride + w * bps })
}

impl HostPicture {
    pub fn picture(&self) -> Picture<'_> {
        // `wrap` built this view once already; the same inputs give the
        // same result.
        self.view().expect("host picture validated in wrap")
    }
}

impl PictureSource for HostPicture {
    fn host(&self) -> Option<Picture<'_>> {
        Some(self.picture())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static FREED: AtomicUsize = AtomicUsize::new(0);
    /// The tests count released frames in one counter: one test at a time.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    unsafe extern "C" fn count_free(p: *mut c_void) {
        FREED.fetch_add(1, Ordering::SeqCst);
        // SAFETY: the tests' handles are Box<Vec<u8>>s, each released once.
        drop(unsafe { Box::from_raw(p as *mut Vec<u8>) });
    }

    fn handle(buf: Vec<u8>) -> (FrameHandle, *const u8) {
        let b = Box::new(buf);
        let ptr = b.as_ptr();
        // SAFETY: the pointer is a Box<Vec<u8>> given up here; `count_free`
        // takes it back as one, once, when the handle is dropped.
        (unsafe { FrameHandle::new(Box::into_raw(b) as *mut c_void, count_free) }, ptr)
    }

    #[test]
    fn nv12_luma_in_place_chroma_split_on_demand() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let (w, h) = (5usize, 3usize);
        let mut buf = vec![0u8; 8 * 3 + 8 * 2];
        for y in 0..h { for x in 0..w { buf[y * 8 + x] = (10 * y + x) as u8; } }
        for y in 0..2 { for x in 0..3 { buf[24 + y * 8 + 2 * x] = 100 + x as u8; buf[24 + y * 8 + 2 * x + 1] = 200 + y as u8; } }
        let nv12 = HostFormat::by_name("nv12").unwrap();
        for read_chroma in [false, true] {
            let before = FREED.load(Ordering::SeqCst);
            let (hnd, p) = handle(buf.clone());
            // SAFETY: `p` is the start of the handle's 40-byte buffer: the
            // luma is 3 rows of 8 bytes (24), the interleaved chroma the 2
            // rows of 8 bytes after it; the buffer lives as long as `hnd`.
            let raw = RawPlanes { data: [p, unsafe { p.add(24) }, std::ptr::null(), std::ptr::null()], linesize: [8, 8, 0, 0], width: w, height: h, memory: FrameMemory::Host };
            // SAFETY: `raw` describes those planes (above).
            let (pic, copied) = unsafe { HostPicture::wrap(hnd, &raw, nv12, read_chroma) }.unwrap();
            assert_eq!(copied, read_chroma);
            let v = pic.picture();
            assert_eq!(v.luma().sample(4, 2), 24);
            if read_chroma {
                assert_eq!(v.format().chroma, Chroma::Yuv420);
                assert_eq!(v.plane(1).sample(2, 1), 102);
                assert_eq!(v.plane(2).sample(2, 1), 201);
            } else {
                assert_eq!(v.format().chroma, Chroma::Yuv400);
            }
            drop(pic);
            assert_eq!(FREED.load(Ordering::SeqCst), before + 1);
        }
    }

    #[test]
    fn p010_shifts_down_and_negative_linesize_is_copied() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let (w, h) = (2usize, 2usize);
        let mut buf = vec![0u8; 8 * 2 + 8];
        for (i, v) in [1023u16, 512, 3, 0].iter().enumerate() {
            let (x, y) = (i % 2, i / 2);
            buf[y * 8 + 2 * x..y * 8 + 2 * x + 2].copy_from_slice(&(v << 6).to_ne_bytes());
        }
        let (hnd, p) = handle(buf);
        // Bottom-up: start at the last row, negative line size.
        // The planes inside the handle's 24-byte buffer: the luma's last row
        // starts at 8 (rows 8 bytes apart, going up to 0), the chroma row at
        // 16 runs to its end.
        // SAFETY: offset 8 is inside the buffer (above).
        let luma = unsafe { p.add(8) };
        // SAFETY: offset 16 is inside the buffer (above).
        let chroma = unsafe { p.add(16) };
        let raw = RawPlanes { data: [luma, chroma, std::ptr::null(), std::ptr::null()], linesize: [-8, 8, 0, 0], width: w, height: h, memory: FrameMemory::Host };
        // SAFETY: `raw` describes those planes, alive as long as `hnd`.
        let (pic, copied) = unsafe { HostPicture::wrap(hnd, &raw, HostFormat::by_name("p010le").unwrap(), false) }.unwrap();
        assert!(copied);
        let v = pic.picture();
        assert_eq!(v.bits(), 10);
        assert_eq!((v.luma().sample(0, 0), v.luma().sample(1, 0)), (3, 0));
        assert_eq!((v.luma().sample(0, 1), v.luma().sample(1, 1)), (1023, 512));
    }

    #[test]
    fn unknown_format_and_short_linesize_are_refused() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        assert!(HostFormat::by_name("rgb24").is_err());
        let (hnd, p) = handle(vec![0u8; 64]);
        let raw = RawPlanes { data: [p, std::ptr::null(), std::ptr::null(), std::ptr::null()], linesize: [4, 0, 0, 0], width: 8, height: 2, memory: FrameMemory::Host };
        // SAFETY: the one plane is the handle's 64 bytes, more than the
        // 2 rows of 4 bytes `raw` claims (wrap refuses the short line size
        // before reading a sample).
        assert!(unsafe { HostPicture::wrap(hnd, &raw, HostFormat::by_name("gray").unwrap(), false) }.is_err());
    }
}
