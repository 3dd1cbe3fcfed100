//! The vmafx filter in a real libavfilter graph fed DRM_PRIME frames made by
//! FFmpeg's own DRM hwcontext, on real dma-bufs with real fences.
//!
//! Like tests/import/dmabuf_vm.rs, this runs inside the qemu VM of scripts/dmabuf-vm
//! (Debian's 6.12 kernel with vgem): the test `runs_the_graph_tests_in_a_vm`
//! boots it with this very binary and the `vm_*` tests run inside. The graph's
//! vmafx is the one linked into build/ffmpeg-9.0's libavfilter.so
//! (scripts/ffmpeg-build 9.0, configured with --enable-libdrm).
//!
//! The producer, as a hardware decoder's user would be:
//! - `av_hwdevice_ctx_create(AV_HWDEVICE_TYPE_DRM, "/dev/dri/card0")` (vgem);
//! - an `AVHWFramesContext` (format drm_prime; sw_format yuv420p, nv12 or
//!   p010le) whose frame pool (the DRM hwcontext has no allocator of its own)
//!   makes vgem dumb buffers on the device's fd, exported as dma-bufs, each
//!   described by an `AVDRMFrameDescriptor` in an `av_buffer_create`d buffer;
//!   frames come from `av_hwframe_get_buffer` (a real `hw_frames_ctx`);
//! - buffersrc (its `hw_frames_ctx` set through `av_buffersrc_parameters_set`)
//!   → vmafx → buffersink;
//! - each DRM frame's buffer holds poison and an unsignalled vgem write fence
//!   when pushed; only then does another thread write the real content and,
//!   100 ms later, signal the fence.
//!
//! Every output frame's metadata equals the software-frame run on the same
//! content as f64 bits; host copies (vmafx's verbose log line) are 0 for
//! planar and VAAPI-nv12 frames. Refusals go through the graph too: a tiled
//! modifier, a plane past the end of its object, a dma-buf fd its producer
//! closed, a fence never signalled (fence_timeout): the graph returns an error naming the frame and the
//! reason, the frames before it were scored and counted and written to
//! vmafx's log (marked incomplete, equal to a run on those frames alone),
//! the graph frees cleanly and every buffer the pool made is released.
//!
//! Run (scripts/ffmpeg-build 9.0 first):
//!   FFMPEG_DIR=build/ffmpeg-9.0/install LD_LIBRARY_PATH=build/ffmpeg-9.0/install/lib \
//!     VMAFX_REQUIRE_VM=1 cargo test --features lavfi-api-tests --test lavfi dmabuf_graph::

use crate::sink::{drain_vmafx, EAGAIN};
use crate::support::rerun;
use crate::support::synth;
use crate::support::vm_bed;
use crate::support::hip_fake;
use crate::support::partial_log;

use std::ffi::{c_void, CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ffmpeg_sys_next as ff;
use nix::libc;
use vm_bed::*;
use vmafx::{Chroma, OwnedPicture};
use vmafx::internals::import::DrmFourcc;

/// How long after a push the producer writes, then signals again as long.
const PRODUCER_DELAY: Duration = Duration::from_millis(50);

/// True inside the VM (the vgem node present there).
fn in_vm() -> bool {
    vm_bed::in_vm(&["/dev/dri/card0"])
}

// ---------------------------------------------------------------- vgem

/// A vgem write fence on the DRM device `drm_fd` (the hwcontext's own fd).
struct Fence {
    drm_fd: i32,
    id: u32,
}

impl Fence {
    fn attach(drm_fd: i32, handle: u32) -> Fence {
        let mut a = VgemFenceAttach { handle, flags: VGEM_FENCE_WRITE, ..Default::default() };
        ioctl(drm_fd, DRM_IOCTL_VGEM_FENCE_ATTACH, &mut a).expect("VGEM_FENCE_ATTACH");
        Fence { drm_fd, id: a.out_fence }
    }
    fn signal(&self) {
        let mut s = VgemFenceSignal { fence: self.id, flags: 0 };
        ioctl(self.drm_fd, DRM_IOCTL_VGEM_FENCE_SIGNAL, &mut s).expect("VGEM_FENCE_SIGNAL");
    }
}

// ------------------------------------------------------------- layouts

/// The sw_format of the DRM frames (and the pix_fmt of the software run).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Sw {
    Yuv420p,
    Nv12,
    P010,
}

impl Sw {
    fn name(self) -> &'static str {
        match self {
            Sw::Yuv420p => "yuv420p",
            Sw::Nv12 => "nv12",
            Sw::P010 => "p010le",
        }
    }
    fn bits(self) -> u8 {
        if self == Sw::P010 {
            10
        } else {
            8
        }
    }
    /// Left shift of the samples in memory (P010 is MSB-aligned).
    fn shift(self) -> u32 {
        if self == Sw::P010 {
            6
        } else {
            0
        }
    }
    fn pix_fmt(self) -> ff::AVPixelFormat {
        pix_fmt(self.name())
    }
}

fn pix_fmt(name: &str) -> ff::AVPixelFormat {
    let c = CString::new(name).unwrap();
    // SAFETY: a NUL-terminated name.
    let f = unsafe { ff::av_get_pix_fmt(c.as_ptr()) };
    assert_ne!(f, ff::AVPixelFormat::AV_PIX_FMT_NONE, "{name}");
    f
}

/// Where the planes lie in the frame's one object: per layer, its DRM
/// fourcc and (offset, pitch) per plane.
#[derive(Clone, Debug)]
struct Layout {
    layers: Vec<(u32, Vec<(usize, usize)>)>,
    len: usize,
}

/// yuv420p: one YUV420 layer, padded pitches, planes not packed. nv12: as
/// VAAPI's hwmap to DRM gives it (R8 + GR88 layers, one object). p010: one
/// P010 layer of two planes.
fn layout(sw: Sw, w: usize, h: usize) -> Layout {
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    match sw {
        Sw::Yuv420p => {
            let pitch = [w + 40, cw + 24, cw + 24];
            let offset = [256, 256 + pitch[0] * h + 64, 256 + pitch[0] * h + 64 + pitch[1] * ch + 128];
            Layout {
                layers: vec![(DrmFourcc::Yuv420 as u32, (0..3).map(|i| (offset[i], pitch[i])).collect())],
                len: offset[2] + pitch[2] * ch,
            }
        }
        Sw::Nv12 => {
            let pitch = w.next_multiple_of(64);
            let coff = pitch * h + 128;
            Layout {
                layers: vec![(DrmFourcc::R8 as u32, vec![(0, pitch)]), (DrmFourcc::Gr88 as u32, vec![(coff, pitch)])],
                len: coff + pitch * ch,
            }
        }
        Sw::P010 => {
            let pitch = (2 * w).next_multiple_of(64) + 64;
            let coff = pitch * h;
            Layout { layers: vec![(DrmFourcc::P010 as u32, vec![(0, pitch), (coff, pitch)])], len: coff + pitch * ch }
        }
    }
}

/// `pic` in `dst` as `layout` says.
fn write_content(sw: Sw, l: &Layout, pic: &OwnedPicture, dst: &mut [u8]) {
    let s = sw.shift();
    match sw {
        Sw::Yuv420p => {
            for (i, &(off, pitch)) in l.layers[0].1.iter().enumerate() {
                write_plane(dst, pic, i, off, pitch, s);
            }
        }
        Sw::Nv12 => {
            write_plane(dst, pic, 0, l.layers[0].1[0].0, l.layers[0].1[0].1, s);
            write_interleaved(dst, pic, l.layers[1].1[0].0, l.layers[1].1[0].1, s);
        }
        Sw::P010 => {
            write_plane(dst, pic, 0, l.layers[0].1[0].0, l.layers[0].1[0].1, s);
            write_interleaved(dst, pic, l.layers[0].1[1].0, l.layers[0].1[1].1, s);
        }
    }
}

/// A software AVFrame of `pic` in pix_fmt `sw` (as tests/lavfi/api.rs).
unsafe fn software_frame(pic: &OwnedPicture, sw: Sw, pts: i64) -> *mut ff::AVFrame {
    // SAFETY: `f` is the frame av_frame_alloc just made and
    // av_frame_get_buffer gave it planes for `pic`'s size in `sw` (asserted 0):
    // each slice `rows(i, n)` covers plane `i`'s `n` rows of `linesize[i]` bytes
    // (`n` the luma height, or the 4:2:0 chroma height for planes 1 and 2), and
    // write_plane/write_interleaved stay inside it.
    unsafe {
        let f = ff::av_frame_alloc();
        (*f).width = pic.width() as i32;
        (*f).height = pic.height() as i32;
        (*f).format = sw.pix_fmt() as i32;
        (*f).pts = pts;
        assert_eq!(ff::av_frame_get_buffer(f, 0), 0);
        let rows = |i: usize, n: usize| std::slice::from_raw_parts_mut((*f).data[i], (*f).linesize[i] as usize * n);
        let (h, ch) = (pic.height(), pic.height().div_ceil(2));
        let (s, ls) = (sw.shift(), |i: usize| (*f).linesize[i] as usize);
        match sw {
            Sw::Yuv420p => {
                write_plane(rows(0, h), pic, 0, 0, ls(0), s);
                write_plane(rows(1, ch), pic, 1, 0, ls(1), s);
                write_plane(rows(2, ch), pic, 2, 0, ls(2), s);
            }
            Sw::Nv12 | Sw::P010 => {
                write_plane(rows(0, h), pic, 0, 0, ls(0), s);
                write_interleaved(rows(1, ch), pic, 0, ls(1), s);
            }
        }
        f
    }
}

// ------------------------------------------------- the hwcontext's pool

/// What the frame pool makes and releases, on the hwcontext's DRM fd.
struct Producer {
    drm_fd: i32,
    len: usize,
    allocated: AtomicUsize,
    released: AtomicUsize,
}

/// One pool buffer: FFmpeg sees the descriptor (first, so `data[0]` points
/// at it); the rest is the producer's.
#[repr(C)]
struct DrmBuffer {
    desc: ff::AVDRMFrameDescriptor,
    fd: OwnedFd,
    handle: u32,
    map: *mut u8,
    len: usize,
    producer: Arc<Producer>,
}

impl DrmBuffer {
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: our RW mapping of `len` bytes, written by one thread at a time.
        unsafe { std::slice::from_raw_parts_mut(self.map, self.len) }
    }
}

/// The pool's allocator: a vgem dumb buffer exported as a dma-buf, mapped
/// for the producer's writes, described as one linear object.
unsafe extern "C" fn pool_alloc(opaque: *mut c_void, _size: usize) -> *mut ff::AVBufferRef {
    // SAFETY: the pool's opaque is a Box<Arc<Producer>> (pool_free drops it).
    let producer = unsafe { (*(opaque as *const Arc<Producer>)).clone() };
    let mut c = CreateDumb { width: 4096, height: producer.len.div_ceil(4096) as u32, bpp: 8, ..Default::default() };
    ioctl(producer.drm_fd, DRM_IOCTL_MODE_CREATE_DUMB, &mut c).expect("CREATE_DUMB");
    let mut p = PrimeHandle { handle: c.handle, flags: (libc::O_CLOEXEC | libc::O_RDWR) as u32, fd: -1 };
    ioctl(producer.drm_fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &mut p).expect("PRIME_HANDLE_TO_FD");
    // SAFETY: a fresh fd we own; a fresh shared RW mapping of its whole size.
    let (fd, map) = unsafe {
        let fd = OwnedFd::from_raw_fd(p.fd);
        let map = libc::mmap(ptr::null_mut(), c.size as usize, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0);
        assert!(map != libc::MAP_FAILED, "mmap: {}", std::io::Error::last_os_error());
        (fd, map as *mut u8)
    };
    // SAFETY: AVDRMFrameDescriptor is plain C data; all zeros is valid.
    let mut desc: ff::AVDRMFrameDescriptor = unsafe { std::mem::zeroed() };
    desc.nb_objects = 1;
    desc.objects[0].fd = fd.as_raw_fd();
    desc.objects[0].size = c.size as usize;
    producer.allocated.fetch_add(1, Ordering::SeqCst);
    let b = Box::into_raw(Box::new(DrmBuffer { desc, fd, handle: c.handle, map, len: c.size as usize, producer }));
    // SAFETY: `b` lives until drm_buffer_free gets it back.
    unsafe {
        ff::av_buffer_create(b as *mut u8, std::mem::size_of::<ff::AVDRMFrameDescriptor>(), Some(drm_buffer_free), b as *mut c_void, 0)
    }
}

unsafe extern "C" fn drm_buffer_free(opaque: *mut c_void, _data: *mut u8) {
    // SAFETY: the Box made in pool_alloc, released once by FFmpeg.
    let b = unsafe { Box::from_raw(opaque as *mut DrmBuffer) };
    // SAFETY: our mapping, unmapped once.
    unsafe { libc::munmap(b.map as *mut c_void, b.len) };
    let mut close = GemClose { handle: b.handle, pad: 0 };
    ioctl(b.producer.drm_fd, DRM_IOCTL_GEM_CLOSE, &mut close).expect("GEM_CLOSE");
    b.producer.released.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn pool_free(opaque: *mut c_void) {
    // SAFETY: the Box<Arc<Producer>> given to av_buffer_pool_init2.
    drop(unsafe { Box::from_raw(opaque as *mut Arc<Producer>) });
}

/// AVHWFramesContext.free: a pool set by the caller is the caller's to free.
unsafe extern "C" fn frames_free(ctx: *mut ff::AVHWFramesContext) {
    // SAFETY: FFmpeg calls this once, with its frames context.
    unsafe { ff::av_buffer_pool_uninit(&mut (*ctx).pool) };
}

// ------------------------------------------------------------- logs

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Keeps FFmpeg's lines up to verbose (vmafx's errors and its "N frame pairs
/// scored, M host copies" line); errors are also printed.
unsafe extern "C" fn log_callback(avcl: *mut c_void, level: i32, fmt: *const libc::c_char, vl: *mut ff::__va_list_tag) {
    if level > 40 {
        return;
    }
    let mut buf = [0 as libc::c_char; 2048];
    let mut prefix = 1;
    // SAFETY: FFmpeg's own arguments, passed on; a sized buffer.
    let line = unsafe {
        ff::av_log_format_line2(avcl, level, fmt, vl, buf.as_mut_ptr(), buf.len() as i32, &mut prefix);
        CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
    };
    if level <= 24 {
        eprint!("{line}");
    }
    LOG.lock().unwrap().push(line);
}

fn err_text(code: i32) -> String {
    let mut buf = [0 as libc::c_char; 128];
    // SAFETY: a sized buffer.
    unsafe {
        ff::av_strerror(code, buf.as_mut_ptr(), buf.len());
        CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
    }
}

// ------------------------------------------------------------- the graph

#[derive(Clone, Copy, Debug, PartialEq)]
enum Defect {
    /// `I915_FORMAT_MOD_X_TILED` on the object.
    Tiled,
    /// The last plane's offset puts its rows past the end of the object.
    PastEnd,
    /// The fence is never signalled (the content is written).
    NeverSignalled,
    /// The descriptor names an fd its producer has closed (the pool
    /// buffer's own fd stays open and is closed as usual when it is freed).
    ClosedFd,
}

/// An fd number that is not open and will not be soon: a dup far above the
/// fds in use, then closed (new fds take the lowest free number).
fn closed_fd(open: i32) -> i32 {
    // SAFETY: duplicates an open fd to a free number >= 900, then closes
    // that new fd, which is ours.
    unsafe {
        let high = libc::fcntl(open, libc::F_DUPFD_CLOEXEC, 900);
        assert!(high >= 900, "F_DUPFD: {}", std::io::Error::last_os_error());
        libc::close(high);
        high
    }
}

#[derive(Clone, Copy)]
struct Case {
    sw: Sw,
    w: usize,
    h: usize,
    drm_main: bool,
    drm_ref: bool,
    /// (frame index, input: true = main, defect)
    bad: Option<(usize, bool, Defect)>,
    /// vmafx's options
    options: &'static str,
}

/// Output frames: (pts, metadata under lavfi.vmafx. as f64 bits).
type Output = Vec<(i64, Vec<(String, u64)>)>;

/// Pulls every frame `sink` has ready into `out`; Ok(true) at EOF.
/// Safety: `sink` is the buffersink of a configured graph.
unsafe fn drain(sink: *mut ff::AVFilterContext, out: &mut Output) -> Result<bool, i32> {
    let as_bits = |(name, v): (String, String)| {
        let value: f64 = v.parse().unwrap_or_else(|_| panic!("metadata {name}={v}"));
        (name, value.to_bits())
    };
    // SAFETY: this fn's contract is drain_vmafx's.
    unsafe { drain_vmafx(sink, |pts, meta| out.push((pts, meta.into_iter().map(as_bits).collect()))) }
}

struct RunResult {
    out: Output,
    /// The error the graph returned, and when (frame index).
    error: Option<(i32, usize)>,
    /// How long the failing call took.
    error_after: Duration,
    /// vmafx's "N frame pairs scored, M host copies" (None: not logged).
    scored_and_copies: Option<(u64, u64)>,
    log: Vec<String>,
    /// Pulls after pushing fenced DRM frames, and how many of them returned
    /// only after the fences signalled.
    fenced_pulls: usize,
    waited_pulls: usize,
    /// DRM buffers the pool made.
    allocated: usize,
}

/// A buffersrc of `fmt` (with `frames` as its hw_frames_ctx when DRM).
/// Safety: `graph` is live; `frames` is null or a frames context reference
/// the source takes over.
unsafe fn source(graph: *mut ff::AVFilterGraph, name: &str, w: usize, h: usize, fmt: ff::AVPixelFormat, frames: *mut ff::AVBufferRef) -> *mut ff::AVFilterContext {
    // SAFETY: the caller gives a live graph and, for a DRM source, a frames
    // context reference for it (this fn's contract); `ctx` is allocated in that
    // graph (asserted non-null), `par` is the parameters block
    // av_buffersrc_parameters_alloc made, read by parameters_set and then freed once;
    // `name` outlives the calls that read it.
    unsafe {
        let name = CString::new(name).unwrap();
        let ctx = ff::avfilter_graph_alloc_filter(graph, ff::avfilter_get_by_name(c"buffer".as_ptr()), name.as_ptr());
        assert!(!ctx.is_null());
        let par = ff::av_buffersrc_parameters_alloc();
        (*par).format = fmt as i32;
        (*par).width = w as i32;
        (*par).height = h as i32;
        (*par).time_base = ff::AVRational { num: 1, den: 25 };
        (*par).sample_aspect_ratio = ff::AVRational { num: 1, den: 1 };
        (*par).hw_frames_ctx = frames;
        assert_eq!(ff::av_buffersrc_parameters_set(ctx, par), 0);
        ff::av_free(par as *mut c_void);
        let r = ff::avfilter_init_str(ctx, ptr::null());
        assert_eq!(r, 0, "buffersrc {name:?}: {}", err_text(r));
        ctx
    }
}

/// One graph run over `frames` (reference, distorted): main = distorted.
fn run(case: &Case, frames: &[(OwnedPicture, OwnedPicture)]) -> RunResult {
    LOG.lock().unwrap().clear();
    let (w, h, sw) = (case.w, case.h, case.sw);
    let lay = layout(sw, w, h);
    // SAFETY: FFmpeg's API used as documented; every pointer is checked or
    // comes from FFmpeg; frames and buffers are released on every path.
    unsafe {
        ff::av_log_set_level(40);
        ff::av_log_set_callback(Some(log_callback));

        // The DRM device (vgem) and its frames context, with our pool.
        let mut dev = ptr::null_mut();
        let r = ff::av_hwdevice_ctx_create(&mut dev, ff::AVHWDeviceType::AV_HWDEVICE_TYPE_DRM, c"/dev/dri/card0".as_ptr(), ptr::null_mut(), 0);
        assert_eq!(r, 0, "av_hwdevice_ctx_create(DRM, /dev/dri/card0): {}", err_text(r));
        let hwdev = (*dev).data as *mut ff::AVHWDeviceContext;
        let drm_fd = (*((*hwdev).hwctx as *mut ff::AVDRMDeviceContext)).fd;
        let producer = Arc::new(Producer { drm_fd, len: lay.len, allocated: AtomicUsize::new(0), released: AtomicUsize::new(0) });
        let mut frames_ref = ff::av_hwframe_ctx_alloc(dev);
        let fc = (*frames_ref).data as *mut ff::AVHWFramesContext;
        (*fc).format = ff::AVPixelFormat::AV_PIX_FMT_DRM_PRIME;
        (*fc).sw_format = sw.pix_fmt();
        (*fc).width = w as i32;
        (*fc).height = h as i32;
        (*fc).pool = ff::av_buffer_pool_init2(
            std::mem::size_of::<ff::AVDRMFrameDescriptor>(),
            Box::into_raw(Box::new(producer.clone())) as *mut c_void,
            Some(pool_alloc),
            Some(pool_free),
        );
        (*fc).free = Some(frames_free);
        let r = ff::av_hwframe_ctx_init(frames_ref);
        assert_eq!(r, 0, "av_hwframe_ctx_init: {}", err_text(r));

        // buffersrc ×2 → vmafx → buffersink.
        let mut graph = ff::avfilter_graph_alloc();
        let drm = ff::AVPixelFormat::AV_PIX_FMT_DRM_PRIME;
        let fmt_of = |is_drm: bool| if is_drm { (drm, frames_ref) } else { (sw.pix_fmt(), ptr::null_mut()) };
        let (mf, mfr) = fmt_of(case.drm_main);
        let (rf, rfr) = fmt_of(case.drm_ref);
        let main = source(graph, "main", w, h, mf, mfr);
        let reference = source(graph, "reference", w, h, rf, rfr);
        let mut vmafx = ptr::null_mut();
        let opts = CString::new(scaled_fence_timeout(case.options)).unwrap();
        let r = ff::avfilter_graph_create_filter(&mut vmafx, ff::avfilter_get_by_name(c"vmafx".as_ptr()), c"vmafx".as_ptr(), opts.as_ptr(), ptr::null_mut(), graph);
        assert_eq!(r, 0, "vmafx={}: {}", case.options, err_text(r));
        let mut sink = ptr::null_mut();
        let r = ff::avfilter_graph_create_filter(&mut sink, ff::avfilter_get_by_name(c"buffersink".as_ptr()), c"sink".as_ptr(), ptr::null(), ptr::null_mut(), graph);
        assert_eq!(r, 0);
        assert_eq!(ff::avfilter_link(main, 0, vmafx, 0), 0);
        assert_eq!(ff::avfilter_link(reference, 0, vmafx, 1), 0);
        assert_eq!(ff::avfilter_link(vmafx, 0, sink, 0), 0);
        let r = ff::avfilter_graph_config(graph, ptr::null_mut());
        assert_eq!(r, 0, "graph config: {}", err_text(r));

        let mut out = Output::new();
        let mut error = None;
        let mut error_after = Duration::ZERO;
        let mut pending_fences = Vec::new();
        let (mut fenced_pulls, mut waited_pulls) = (0, 0);
        for (i, (rp, dp)) in frames.iter().enumerate() {
            // Each input's frame: software, or a DRM frame from the pool
            // holding poison under an unsignalled fence.
            let mut writes = Vec::new();
            let mut make = |pic: &OwnedPicture, is_drm: bool, is_main: bool| -> *mut ff::AVFrame {
                if !is_drm {
                    return software_frame(pic, sw, i as i64);
                }
                let f = ff::av_frame_alloc();
                let r = ff::av_hwframe_get_buffer(frames_ref, f, 0);
                assert_eq!(r, 0, "av_hwframe_get_buffer: {}", err_text(r));
                (*f).pts = i as i64;
                let b = (*(*f).buf[0]).data as *mut DrmBuffer;
                assert_eq!((*f).data[0], b as *mut u8, "data[0] is the AVDRMFrameDescriptor");
                assert!(!(*f).hw_frames_ctx.is_null());
                let defect = match case.bad {
                    Some((bi, bm, d)) if bi == i && bm == is_main => Some(d),
                    _ => None,
                };
                let desc = &mut (*b).desc;
                desc.objects[0].format_modifier = if defect == Some(Defect::Tiled) { I915_FORMAT_MOD_X_TILED } else { 0 };
                desc.nb_layers = lay.layers.len() as i32;
                for (li, (fourcc, planes)) in lay.layers.iter().enumerate() {
                    desc.layers[li].format = *fourcc;
                    desc.layers[li].nb_planes = planes.len() as i32;
                    for (pi, &(offset, pitch)) in planes.iter().enumerate() {
                        desc.layers[li].planes[pi] = ff::AVDRMPlaneDescriptor { object_index: 0, offset: offset as isize, pitch: pitch as isize };
                    }
                }
                if defect == Some(Defect::ClosedFd) {
                    desc.objects[0].fd = closed_fd((*b).fd.as_raw_fd());
                }
                if defect == Some(Defect::PastEnd) {
                    let last = &mut desc.layers[desc.nb_layers as usize - 1];
                    let p = &mut last.planes[last.nb_planes as usize - 1];
                    p.offset = (*b).len as isize - p.pitch;
                }
                // Poison: what an early read would see (a reused buffer
                // also still holds an older frame).
                for (k, byte) in (*b).bytes_mut().iter_mut().enumerate() {
                    *byte = (k * 7 + 91) as u8;
                }
                let fence = Fence::attach(drm_fd, (*b).handle);
                writes.push((b as usize, pic.clone(), fence, defect == Some(Defect::NeverSignalled)));
                f
            };
            let mut mframe = make(dp, case.drm_main, true);
            let mut rframe = make(rp, case.drm_ref, false);
            for (src, f) in [(main, &mut mframe), (reference, &mut rframe)] {
                let r = ff::av_buffersrc_add_frame_flags(src, *f, 0);
                assert_eq!(r, 0, "add frame {i}: {}", err_text(r));
                ff::av_frame_free(f);
            }
            // After the push: the producer writes the content, then signals.
            let written = Arc::new(AtomicBool::new(false));
            let lay2 = lay.clone();
            let flag = written.clone();
            let producer_thread = (!writes.is_empty()).then(|| {
                std::thread::spawn(move || {
                    std::thread::sleep(PRODUCER_DELAY);
                    let mut never = Vec::new();
                    for (b, pic, _, _) in &writes {
                        // SAFETY: the pool buffer stays referenced by the
                        // frame in the graph until its fence signals.
                        write_content(sw, &lay2, pic, (*(*b as *mut DrmBuffer)).bytes_mut());
                    }
                    std::thread::sleep(PRODUCER_DELAY);
                    flag.store(true, Ordering::SeqCst);
                    for (_, _, fence, never_signal) in writes {
                        if never_signal {
                            never.push(fence);
                        } else {
                            fence.signal();
                        }
                    }
                    never
                })
            });
            let t0 = Instant::now();
            let drained = drain(sink, &mut out);
            let took = t0.elapsed();
            // Read before the join: set only just before the signal, so a
            // pull that returns with it set took the pair and waited.
            let signalled_first = written.load(Ordering::SeqCst);
            if let Some(t) = producer_thread {
                pending_fences.extend(t.join().unwrap());
                fenced_pulls += 1;
                waited_pulls += signalled_first as usize;
            }
            if let Err(r) = drained {
                error = Some((r, i));
                error_after = took;
                break;
            }
        }
        if error.is_none() {
            for src in [main, reference] {
                assert_eq!(ff::av_buffersrc_add_frame_flags(src, ptr::null_mut(), 0), 0);
            }
            loop {
                match drain(sink, &mut out) {
                    Ok(true) => break,
                    Ok(false) => {}
                    Err(r) => panic!("at end of stream: {}", err_text(r)),
                }
                let r = ff::avfilter_graph_request_oldest(graph);
                if r == ff::AVERROR_EOF {
                    drain(sink, &mut out).unwrap();
                    break;
                }
                assert!(r >= 0 || r == EAGAIN, "request at end of stream: {}", err_text(r));
            }
        }
        // Frees the graph (vmafx logs its counters) even after an error.
        ff::avfilter_graph_free(&mut graph);
        for fence in pending_fences {
            fence.signal();
        }
        ff::av_buffer_unref(&mut frames_ref);
        ff::av_buffer_unref(&mut dev);
        ff::av_log_set_callback(Some(ff::av_log_default_callback));
        let allocated = producer.allocated.load(Ordering::SeqCst);
        assert_eq!(producer.released.load(Ordering::SeqCst), allocated, "every pool buffer released once the graph is freed");
        if case.drm_main || case.drm_ref {
            assert!(allocated > 0);
        }
        let log = LOG.lock().unwrap().clone();
        let scored_and_copies = log.iter().find_map(|l| {
            let (_, rest) = l.split_once("] ")?;
            let (n, rest) = rest.split_once(" frame pairs scored, ")?;
            let (m, _) = rest.split_once(" host copies")?;
            Some((n.trim().parse().ok()?, m.trim().parse().ok()?))
        });
        RunResult { out, error, error_after, scored_and_copies, log, fenced_pulls, waited_pulls, allocated }
    }
}

const MODEL: &str = "model=version=vmaf_v0.6.1:n_threads=2";

/// `options` with its fence_timeout (1 s when unset) multiplied by
/// [`time_scale`]; unchanged at scale 1.
fn scaled_fence_timeout(options: &str) -> String {
    let scale = time_scale();
    if scale == 1 {
        return options.to_string();
    }
    let mut seconds = 1.0;
    let mut kept: Vec<&str> = Vec::new();
    for o in options.split(':') {
        match o.strip_prefix("fence_timeout=") {
            Some(v) => seconds = v.parse().unwrap(),
            None => kept.push(o),
        }
    }
    format!("{}:fence_timeout={}", kept.join(":"), seconds * scale as f64)
}

fn clip(sw: Sw, w: usize, h: usize, n: usize, seed: u64) -> Vec<(OwnedPicture, OwnedPicture)> {
    synth::clip(Chroma::Yuv420, sw.bits(), w, h, n, seed)
}

// ------------------------------------------------------------- tests

/// DRM_PRIME frames from the DRM hwcontext (yuv420p, VAAPI's nv12, p010;
/// both inputs, and main only) score exactly as the software frames of the
/// same content; each buffer was poisoned and fenced when pushed, so an
/// early read would show. Host copies: 0 for yuv420p and nv12 (luma-only
/// vmaf), one shifted luma per p010 picture (as for software p010).
#[test]
fn vm_graph_drm_prime_frames_score_like_software() {
    if !in_vm() {
        return;
    }
    let n = 5;
    for (sw, w, h, seed) in [(Sw::Yuv420p, 71, 41, 3), (Sw::Nv12, 66, 38, 4), (Sw::P010, 64, 36, 5)] {
        let frames = clip(sw, w, h, n, seed);
        let base = Case { sw, w, h, drm_main: false, drm_ref: false, bad: None, options: MODEL };
        let want = run(&base, &frames);
        assert!(want.error.is_none(), "{sw:?} software run failed: {:?}", want.log);
        assert_eq!(want.out.iter().map(|(p, _)| *p).collect::<Vec<_>>(), (0..n as i64).collect::<Vec<_>>(), "{sw:?}: every frame, in order");
        assert!(want.out[0].1.iter().any(|(k, _)| k == "vmaf"), "{:?}", want.out[0]);
        assert!(want.out[0].1.iter().any(|(k, _)| k.contains("motion")));
        let sw_copies = want.scored_and_copies.expect("vmafx's counters line").1;
        let mut variants = vec![(true, true)];
        if sw == Sw::Yuv420p {
            variants.push((true, false));
        }
        for (drm_main, drm_ref) in variants {
            let got = run(&Case { drm_main, drm_ref, ..base }, &frames);
            let what = format!("{sw:?} drm main {drm_main} ref {drm_ref}");
            assert!(got.error.is_none(), "{what}: {}: {:?}", err_text(got.error.unwrap().0), got.log);
            assert_eq!(got.out, want.out, "{what}: differs from the software run (bits)");
            let (scored, copies) = got.scored_and_copies.expect("vmafx's counters line");
            assert_eq!(scored, n as u64, "{what}");
            match sw {
                Sw::P010 => assert_eq!(copies, sw_copies, "{what}: one shifted luma per picture, as for software p010"),
                _ => assert_eq!(copies, 0, "{what}: read in place"),
            }
            assert_eq!(got.fenced_pulls, n, "{what}");
            assert_eq!(got.waited_pulls, n, "{what}: every pull after a fenced push waited for the fences");
            eprintln!("{what}: {n} frames bit-exact with the software run, {copies} host copies, {} pulls waited for fences", got.waited_pulls);
        }
    }
}

/// Refusals through the graph, at frame 2 of 4 (the fence one at frame 1):
/// a tiled surface, a plane past its object, a dma-buf fd its producer
/// closed, a fence never signalled:
/// the graph returns the error, vmafx's message names the frame and the
/// reason, the pairs before it were scored and counted (their outputs, if
/// out, equal the software run's), and the graph frees cleanly with every
/// pool buffer released. Nothing scored is lost: vmafx's JSON log (written
/// at uninit) holds the frames before the fault, marked incomplete with the
/// fault's reason, equal as text to a software run's log of those frames
/// alone (the last kept frame's look-ahead ends with the stream there).
#[test]
fn vm_graph_refusals_end_the_graph_cleanly() {
    if !in_vm() {
        return;
    }
    let (w, h, n) = (64, 36, 4);
    let frames = clip(Sw::Yuv420p, w, h, n, 7);
    let base = Case { sw: Sw::Yuv420p, w, h, drm_main: true, drm_ref: true, bad: None, options: MODEL };
    let want = run(&Case { drm_main: false, drm_ref: false, ..base }, &frames);
    let cases: [(usize, bool, Defect, &str, i32, &[&str]); 4] = [
        (2, true, Defect::Tiled, MODEL, -38, &["main frame 2 (drm_prime yuv420p)", "I915", "DRM_FORMAT_MOD_LINEAR"]),
        (2, true, Defect::ClosedFd, MODEL, -22, &["main frame 2 (drm_prime yuv420p)", "object 0", "a closed fd?"]),
        (2, false, Defect::PastEnd, MODEL, -22, &["reference frame 2 (drm_prime yuv420p)", "past the end of object 0"]),
        (
            1,
            true,
            Defect::NeverSignalled,
            "model=version=vmaf_v0.6.1:n_threads=2:fence_timeout=0.3",
            ff::AVERROR_EXTERNAL,
            &["main frame 1 (drm_prime yuv420p)", "implicit write fence of object 0"],
        ),
    ];
    // `options` with vmafx's JSON log at `name` in the guest's /tmp.
    let logged = |options: &str, name: &str| -> (&'static str, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!("vmafx-graph-{name}.json"));
        let _ = std::fs::remove_file(&path);
        let with_log = format!("{options}:log_fmt=json:log_path={}", path.display());
        (Box::leak(with_log.into_boxed_str()), path)
    };
    for (at, on_main, defect, options, code, words) in cases {
        let (options, log_path) = logged(options, &format!("{defect:?}"));
        let got = run(&Case { bad: Some((at, on_main, defect)), options, ..base }, &frames);
        let (r, when) = got.error.unwrap_or_else(|| panic!("{defect:?}: the graph did not fail: {:?}", got.log));
        assert_eq!((r, when), (code, at), "{defect:?}: {} at frame {when}", err_text(r));
        let line = got.log.iter().find(|l| l.starts_with("[vmafx") && words.iter().all(|w| l.contains(w)));
        assert!(line.is_some(), "{defect:?}: no vmafx error naming {words:?} in {:#?}", got.log);
        if defect == Defect::NeverSignalled {
            assert!(line.unwrap().contains(&gave_up_after(300)), "{defect:?}: {}", line.unwrap());
        }
        eprintln!("{defect:?} at frame {at}: {} ({})", line.unwrap().trim_end(), err_text(r));
        assert!(!got.log.iter().any(|l| l.contains("frame counts differ")), "{defect:?}: a torn-down graph is no count mismatch: {:#?}", got.log);
        if defect == Defect::NeverSignalled {
            let scale = time_scale();
            assert!(got.error_after >= Duration::from_millis(300) * scale && got.error_after < Duration::from_secs(15) * scale, "waited {:?}", got.error_after);
        }
        assert_eq!(got.scored_and_copies, Some((at as u64, 0)), "{defect:?}: the pairs before the refused one are counted");
        assert!(got.out.len() <= at, "{defect:?}: no output for the refused frame");
        assert_eq!(got.out[..], want.out[..got.out.len()], "{defect:?}: the frames out before the error");

        // The log the graph left, against a software run of the kept frames.
        let cut = partial_log::read_json(&log_path);
        let why = cut["incomplete"].as_str().unwrap_or_else(|| panic!("{defect:?}: no \"incomplete\" mark in {cut}"));
        assert!(why.contains(&format!("frame {at}")), "{defect:?}: incomplete = {why:?}, expected it to name frame {at}");
        assert_eq!(partial_log::frames_by_number(&cut).len(), at, "{defect:?}: the frames scored before the fault");
        let (clean_options, clean_path) = logged(MODEL, &format!("{defect:?}-clean"));
        let clean_run = run(&Case { drm_main: false, drm_ref: false, options: clean_options, ..base }, &frames[..at]);
        assert!(clean_run.error.is_none(), "{defect:?}: the software run of {at} frames failed: {:?}", clean_run.log);
        let clean = partial_log::read_json(&clean_path);
        assert!(clean.get("incomplete").is_none(), "{defect:?}: {clean}");
        assert_eq!(cut["frames"], clean["frames"], "{defect:?}: the kept frames differ from a run on them alone");
        assert_eq!(cut["pooled_metrics"], clean["pooled_metrics"], "{defect:?}: pooled values");
        eprintln!("{defect:?}: the log holds the {at} frame(s) before the fault, marked incomplete ({why})");
    }
}

/// `vmafx=device=hip` in the graph (FFmpeg's glue passes the option; the
/// HIP runtime is the fake libamdhip64 of tests/hip_fake, the kernel
/// emulator behind HIP's calls): DRM_PRIME nv12 frames from the DRM
/// hwcontext, poisoned and fenced when pushed, score exactly as the CPU
/// path's on the same graph (f64 bits); every frame is imported on the
/// device (no host copy), each pool buffer once, and every import is
/// destroyed, last, after the graph is freed. Small: the emulated kernels
/// run slowly under TCG.
#[test]
fn vm_graph_device_hip_scores_like_the_cpu_path() {
    if !in_vm() {
        return;
    }
    // The driver passes the fake's settings when it could build it (no C++
    // compiler: it said SKIP, or failed with VMAFX_REQUIRE_GPU_COMPILERS=1).
    if std::env::var_os("VMAFX_FAKE_HIP_VERSION").is_none() {
        eprintln!("SKIP: no fake HIP runtime was built for the VM");
        return;
    }
    vmafx::internals::device::gpu::hip::runtime().expect("the fake libamdhip64 on LD_LIBRARY_PATH");
    let fake = hip_fake::Fake::get();
    let (sw, w, h, n) = (Sw::Nv12, 34, 34, 3);
    let frames = clip(sw, w, h, n, 11);
    let base = Case { sw, w, h, drm_main: true, drm_ref: true, bad: None, options: MODEL };
    let want = run(&base, &frames);
    assert!(want.error.is_none(), "the CPU path failed: {:?}", want.log);
    assert_eq!(want.out.len(), n);
    let before = fake.log().len();
    let got = run(&Case { options: "model=version=vmaf_v0.6.1:n_threads=2:device=hip", ..base }, &frames);
    assert!(got.error.is_none(), "device=hip: {}: {:?}", err_text(got.error.unwrap().0), got.log);
    assert_eq!(got.out, want.out, "device=hip differs from the CPU path (bits)");
    assert_eq!(got.scored_and_copies, Some((n as u64, 0)), "every frame on the device, none copied through the host: {:?}", got.log);
    assert!(got.log.iter().any(|l| l.contains(&format!("{} GPU frames in place", 2 * n))), "{:?}", got.log);
    assert!(got.log.iter().any(|l| l.contains("dma-bufs imported on the HIP device")), "{:?}", got.log);
    assert_eq!(got.waited_pulls, n, "every pull after a fenced push waited for the fences");
    let log = fake.log()[before..].to_string();
    hip_fake::no_violations(&log);
    let exts = hip_fake::imported(&log);
    assert_eq!(exts.len(), got.allocated, "each pool buffer imported once, not per frame:\n{log}");
    for ext in &exts {
        let lines = hip_fake::lines_of(&log, ext);
        let destroy = lines.iter().position(|l| l.starts_with("destroy")).unwrap_or_else(|| panic!("never destroyed: {lines:?}"));
        assert_eq!(destroy, lines.len() - 1, "destroyed before its last use: {lines:?}");
    }
    eprintln!("device=hip in the graph: {n} frames bit-exact with the CPU path, {} pool buffers imported once each", exts.len());
}

/// Boots the VM with this test binary (its `vm_*` tests, one at a time:
/// FFmpeg's log callback is process-wide); outside the VM this is the test
/// that stands for them. The 9.0 libraries (and libdrm) are found in the
/// guest as here: the host's root is the guest's, read-only.
#[test]
fn runs_the_graph_tests_in_a_vm() {
    // The fake HIP runtime first on the search path, then FFmpeg's.
    let mut env = Vec::new();
    let mut path: Vec<String> = Vec::new();
    if let Some(dir) = hip_fake::fake_dir() {
        path.push(dir.display().to_string());
        env.extend(
            hip_fake::fake_env(&dir, hip_fake::ROCM7)
                .into_iter()
                .filter(|(k, v)| !v.is_empty() && k != "LD_LIBRARY_PATH" && k != hip_fake::CHILD)
                .map(|(k, v)| format!("{k}={v}")),
        );
    }
    path.extend(std::env::var_os("LD_LIBRARY_PATH").map(|p| p.to_string_lossy().into_owned()));
    if !path.is_empty() {
        env.push(format!("LD_LIBRARY_PATH={}", path.join(":")));
    }
    vm_bed::run_in_vm(vm_bed::VmRun { filter: &rerun::filter(module_path!(), "vm_"), threads: 1, expected: 3, env });
}
