//! Fuzz targets: each takes arbitrary bytes and drives one parser or entry
//! point the way hostile input would. A target must return for every
//! input, without a panic, a hang or memory beyond what the input itself
//! justifies; where the code keeps a promise that bytes can break (a frame
//! handed to the C interface is released exactly once), the target checks
//! it and panics when it is broken, which the fuzzer reports as a crash.
//!
//! The targets live in the library, not in `fuzz/`, so that two drivers
//! share them: the fuzzer (`fuzz/`, libFuzzer over `scripts/fuzz`) and the
//! corpus replay in the test suite (`tests/fuzz/corpus.rs`), which needs no
//! fuzzer build. See docs/reliability.md, "Fuzzing".

use std::ffi::{c_char, c_int, c_void, CString};
use std::io::Cursor;
use std::os::fd::AsRawFd;
use std::sync::Mutex;

use crate::avfilter::ffi::{self, VmafxFilterOptions, VmafxFrame, VmafxHost};
use crate::avfilter::frame::HOST_FORMATS;
use crate::avfilter::options::{parse_dict, FilterOptions, RawOptions};
use crate::import::cpu::HostImporter;
use crate::import::drm::{AvDrmFrameDescriptor, AV_DRM_MAX_PLANES};
use crate::import::FrameDescriptor;
use crate::io::{FrameReader, RawFormat, Y4mReader, YuvReader};
use crate::model::{LoadFlags, Model, ModelConfig, ModelDefinition};

/// A target: bytes in, nothing out but a panic on a broken promise.
pub(crate) type Target = fn(&[u8]);

/// Every target, by the name its corpus folder and fuzz binary carry.
pub const TARGETS: &[(&str, Target)] = &[
    ("y4m", y4m),
    ("yuv", yuv),
    ("model_json", model_json),
    ("cli_options", cli_options),
    ("filter_options", filter_options),
    ("drm_descriptor", drm_descriptor),
    ("c_api", c_api),
];

/// Reads fields off the front of the input; past its end, zeros.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().map_or((0, &[][..]), |(f, r)| (*f, r));
        self.0 = rest;
        first
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn u64(&mut self) -> u64 {
        (0..8).fold(0, |v, i| v | (self.u8() as u64) << (8 * i))
    }
    /// One of `choices`, by the next byte.
    fn pick<T: Copy>(&mut self, choices: &[T]) -> T {
        choices[self.u8() as usize % choices.len()]
    }
    /// A string up to the next NUL (or the end), lossily as UTF-8.
    fn text(&mut self) -> String {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(self.0.len());
        let s = String::from_utf8_lossy(&self.0[..end]).into_owned();
        self.0 = self.0.get(end + 1..).unwrap_or(&[]);
        s
    }
}

/// Every frame of a stream, each checked against the stream's geometry.
fn drain(reader: &mut dyn FrameReader) {
    while let Ok(Some(picture)) = reader.read_frame() {
        assert_eq!(
            (picture.width(), picture.height(), picture.format()),
            (reader.width(), reader.height(), reader.format()),
            "a frame of another geometry than its stream's"
        );
    }
}

/// A y4m file: header, FRAME lines, samples.
pub(crate) fn y4m(data: &[u8]) {
    if let Ok(mut reader) = Y4mReader::new(Cursor::new(data), "fuzz.y4m") {
        drain(&mut reader);
    }
}

/// Raw yuv: two bytes of size, one of pixel format, then the file.
pub(crate) fn yuv(data: &[u8]) {
    let mut b = Bytes(data);
    let (w, h) = (1 + b.u8() as usize % 48, 1 + b.u8() as usize % 48);
    let name = b.pick(&["420", "422", "444", "400", "yuv420p10le", "gray16le", "yuv444p12le", "nv12"]);
    let bits = b.pick(&[None, Some(8), Some(10), Some(12), Some(16), Some(9), Some(0)]);
    if let Ok(raw) = RawFormat::from_options(w, h, name, bits) {
        let mut reader = YuvReader::new(Cursor::new(b.0), "fuzz.yuv", raw).expect("an in-memory reader");
        drain(&mut reader);
    }
}

/// A libvmaf JSON model; one that loads is scored on a few feature vectors.
pub(crate) fn model_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let flags = LoadFlags { enable_transform: true, disable_clip: true };
    let _ = ModelDefinition::from_json(text, flags);
    let cfg = ModelConfig { enable_transform: true, ..Default::default() };
    if let Ok(model) = Model::from_json(text, &cfg) {
        let n = model.features().len();
        for v in [0.0, 1.0, -1.0, 1e300, f64::NAN] {
            let _ = model.score(&vec![v; n]);
        }
    }
}

/// The CLI's `--model`, `--feature`, `--device` and `--cpumask` strings.
pub(crate) fn cli_options(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = crate::option_strings::parse_model(&text);
    let _ = crate::option_strings::parse_feature(&text);
    let _ = crate::option_strings::parse_device(&text);
    let _ = crate::option_strings::parse_c_unsigned(&text);
}

/// The filter's `model`, `feature`, `log_fmt`, `pool` and `device` options
/// (NUL between them), then thread and subsample counts.
pub(crate) fn filter_options(data: &[u8]) {
    let mut b = Bytes(data);
    let (model, feature, log_fmt, pool, device) = (b.text(), b.text(), b.text(), b.text(), b.text());
    let _ = parse_dict(&model);
    let raw = RawOptions {
        model: (!model.is_empty()).then_some(&model),
        feature: (!feature.is_empty()).then_some(&feature),
        log_path: None,
        log_fmt: (!log_fmt.is_empty()).then_some(&log_fmt),
        pool: (!pool.is_empty()).then_some(&pool),
        device: (!device.is_empty()).then_some(&device),
        n_threads: b.u16() as i16 as i64,
        n_subsample: b.u16() as i16 as i64,
    };
    let _ = FilterOptions::parse(&raw);
}

/// The memfd the DRM target's objects point at (real fds, so the checks
/// after the descriptor's run too: sizes, mappings).
fn object_fd() -> i32 {
    static FD: std::sync::OnceLock<std::os::fd::OwnedFd> = std::sync::OnceLock::new();
    FD.get_or_init(|| {
        std::os::fd::OwnedFd::from(object_file(1 << 16))
    })
    .as_raw_fd()
}

/// An unlinked temp file of `len` bytes of a ramp.
fn object_file(len: usize) -> std::fs::File {
    use std::io::Write;
    let path = std::env::temp_dir().join(format!("vmafx-fuzz-object-{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .expect("a temp file for the DRM target's objects");
    let _ = std::fs::remove_file(&path);
    let ramp: Vec<u8> = (0..len).map(|i| i as u8).collect();
    file.write_all(&ramp).expect("the DRM target's object");
    file
}

/// An `AVDRMFrameDescriptor` (layers, planes, offsets, pitches, modifiers,
/// object sizes; fds open, closed or foreign) and the frame size, through
/// `from_av_drm` and the CPU lane's import; a frame it accepts is read.
pub(crate) fn drm_descriptor(data: &[u8]) {
    let mut b = Bytes(data);
    let fds = [object_fd(), -1, 1 << 20];
    let mut av = AvDrmFrameDescriptor { nb_objects: b.u8() as i8 as i32, nb_layers: b.u8() as i8 as i32, ..Default::default() };
    for o in av.objects.iter_mut() {
        o.fd = b.pick(&fds);
        let any = b.u16() as usize;
        o.size = b.pick(&[0, 1, 4096, 1 << 16, (1 << 16) + 1, usize::MAX, any]);
        let any = b.u64();
        o.format_modifier = b.pick(&[0, (1 << 56) - 1, 0x0100_0000_0000_0001, any]);
    }
    let formats = [
        drm_fourcc::DrmFourcc::Nv12 as u32,
        drm_fourcc::DrmFourcc::P010 as u32,
        drm_fourcc::DrmFourcc::Yuv420 as u32,
        drm_fourcc::DrmFourcc::R8 as u32,
        drm_fourcc::DrmFourcc::Gr88 as u32,
        drm_fourcc::DrmFourcc::R16 as u32,
        drm_fourcc::DrmFourcc::Argb8888 as u32,
        0,
    ];
    for l in av.layers.iter_mut() {
        l.format = b.pick(&formats);
        l.nb_planes = b.u8() as i8 as i32;
        for p in l.planes.iter_mut() {
            p.object_index = b.u8() as i8 as i32 % (AV_DRM_MAX_PLANES as i32 + 1);
            let any = b.u16() as isize;
            p.offset = b.pick(&[0, 1, 4096, -1, isize::MAX, any]);
            let any = b.u16() as isize;
            p.pitch = b.pick(&[0, -64, 1, 64, 65, isize::MAX, any]);
        }
    }
    let (width, height) = (b.u16() as usize % 300, b.u16() as usize % 300);
    let bits = b.pick(&[8, 10, 16, 0, 12]);
    let Ok(mut desc) = FrameDescriptor::from_av_drm(&av, "fuzz", width, height, bits) else { return };
    // The object is a plain file, not a dma-buf: no implicit fence to export.
    desc.implicit_sync = false;
    let device = HostImporter::new(b.u8() & 1 == 1);
    if let Ok(frame) = device.import(desc) {
        let picture = crate::picture::PictureSource::host(&frame).expect("a CPU frame is on the host");
        let mut sum = 0u64;
        for i in 0..picture.plane_count() {
            let plane = picture.plane(i);
            for y in 0..plane.height() {
                for x in 0..plane.width() {
                    sum += plane.sample(x, y) as u64;
                }
            }
        }
        std::hint::black_box(sum);
    }
}

/// Handles the C-interface target gave the filter and not yet got back.
static LIVE_HANDLES: Mutex<Vec<usize>> = Mutex::new(Vec::new());

fn handle(id: usize) -> *mut c_void {
    LIVE_HANDLES.lock().unwrap_or_else(|p| p.into_inner()).push(id);
    id as *mut c_void
}

unsafe extern "C" fn frame_free(frame: *mut c_void) {
    let mut live = LIVE_HANDLES.lock().unwrap_or_else(|p| p.into_inner());
    let i = live.iter().position(|&h| h == frame as usize);
    let i = i.unwrap_or_else(|| panic!("vmafx freed frame handle {frame:p}, not live (twice, or never handed over)"));
    live.swap_remove(i);
}

unsafe extern "C" fn set_metadata(frame: *mut c_void, _key: *const c_char, _value: *const c_char) -> c_int {
    // A handle the filter holds (it must not set metadata on a freed one).
    let live = LIVE_HANDLES.lock().unwrap_or_else(|p| p.into_inner());
    assert!(live.contains(&(frame as usize)), "metadata set on frame {frame:p}, not live");
    0
}

/// Pixel buffers for one hostile `VmafxFrame`, kept alive beside it.
struct FrameBuffers {
    // Never read here: the frame points into them.
    _planes: Vec<Vec<u8>>,
    _format: CString,
}

/// A frame of the size and format the bytes say, its planes as large as
/// its linesizes claim (so reading within the claim stays in bounds).
fn hostile_frame(b: &mut Bytes<'_>, id: usize, keep: &mut Vec<FrameBuffers>) -> VmafxFrame {
    let names: Vec<&str> = HOST_FORMATS.iter().map(|f| f.name).chain(["drm_prime", "cuda", "rgb24", ""]).collect();
    let format = CString::new(b.pick(&names)).expect("no NUL in a format name");
    let (width, height) = (b.u8() as i8 as c_int, b.u8() as i8 as c_int);
    let mut frame = VmafxFrame {
        data: [std::ptr::null(); 4],
        linesize: [0; 4],
        width,
        height,
        pix_fmt: format.as_ptr(),
        handle: handle(id),
        sw_format: std::ptr::null(),
        hw_context: std::ptr::null_mut(),
    };
    let mut planes = Vec::new();
    // DRM_PRIME and CUDA frames carry descriptors and device pointers in
    // data[]: none is given, so the filter must refuse before reading.
    let host = !matches!(format.to_bytes(), b"drm_prime" | b"cuda");
    for i in 0..4 {
        let any = b.u8() as c_int;
        let linesize = b.pick(&[0, 1, 64, 128, 130, -64, any]);
        frame.linesize[i] = linesize;
        if host && !b.u8().is_multiple_of(8) {
            let rows = height.max(0) as usize + 1;
            let len = (linesize.unsigned_abs() as usize).max(4 * width.max(0) as usize + 8) * rows;
            let plane = vec![0x80u8; len];
            frame.data[i] = plane.as_ptr();
            planes.push(plane);
        }
    }
    keep.push(FrameBuffers { _planes: planes, _format: format });
    frame
}

/// The C interface with hostile arguments: NULL pointers, strings that are
/// not UTF-8, sizes and formats that disagree, linesizes shorter than a
/// row, frames after the end; each frame handle must come back exactly
/// once, and nothing may panic across the boundary.
pub(crate) fn c_api(data: &[u8]) {
    let mut b = Bytes(data);
    let text = |b: &mut Bytes<'_>| -> Option<CString> {
        match b.u8() % 4 {
            0 => None,
            // Bytes as they come: not UTF-8 at times.
            1 => Some(CString::new(b.text().into_bytes()).unwrap_or_default()),
            2 => Some(CString::new(b.pick(&["name=psnr", "name=motion", "name=psnr|name=motion:motion_force_zero=true", "name=adm"])).unwrap()),
            _ => Some(CString::new(&[0xff, 0xfe, b'x'][..]).unwrap()),
        }
    };
    // No model file is opened: a `path=` could name anything (/dev/zero).
    let model = text(&mut b).filter(|m| !m.to_bytes().windows(4).any(|w| w == b"path"));
    let feature = text(&mut b);
    let log_fmt = text(&mut b);
    let pool = text(&mut b);
    // Never a usable "hip": that would open the HIP runtime when one is
    // installed; the parser's refusals are what is fuzzed here.
    let device = [None, Some(c"cpu"), Some(c"cuda"), Some(c"hip:x"), Some(c"hip:-1"), Some(c"")][b.u8() as usize % 6];
    let ptr_of = |s: &Option<CString>| s.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
    let options = VmafxFilterOptions {
        model: ptr_of(&model),
        feature: ptr_of(&feature),
        log_path: std::ptr::null(),
        log_fmt: ptr_of(&log_fmt),
        pool: ptr_of(&pool),
        device: device.map_or(std::ptr::null(), |d| d.as_ptr()),
        n_threads: b.pick(&[0, 1, 2, -1, 5000]),
        n_subsample: b.pick(&[1, 2, 0, -3]),
        fence_timeout_us: b.pick(&[0, 1000, -1]),
    };
    let host = VmafxHost { frame_free: Some(frame_free), frame_set_metadata: Some(set_metadata) };
    let mut err = [0 as c_char; 256];
    let err_len = b.pick(&[0usize, 1, 256]);
    let null_options = b.u8() % 16 == 0;
    let options_ptr = if null_options { std::ptr::null() } else { &options as *const _ };
    // SAFETY: valid (or NULL) pointers and NUL-terminated strings, as vmafx.h asks.
    let f = unsafe { ffi::vmafx_filter_new(options_ptr, &host, err.as_mut_ptr(), err_len) };
    if f.is_null() {
        return;
    }
    let mut keep = Vec::new();
    let mut next_id = 0x1000usize;
    let mut id = || {
        next_id += 16;
        next_id
    };
    let (mw, mh) = (b.u8() as i8 as c_int, b.u8() as i8 as c_int);
    let fmt = CString::new(b.pick(&["yuv420p", "nv12", "gray10le", "yuv444p16le", "bogus", "drm_prime"])).unwrap();
    let ref_fmt = if b.u8() % 4 == 0 { CString::new("yuv422p").unwrap() } else { fmt.clone() };
    // SAFETY: a live handle, NUL-terminated strings.
    unsafe { ffi::vmafx_filter_configure(f, mw, mh, fmt.as_ptr(), mw, mh, ref_fmt.as_ptr()) };
    for _ in 0..b.u8() % 6 {
        let main = hostile_frame(&mut b, id(), &mut keep);
        let reference = hostile_frame(&mut b, id(), &mut keep);
        let output = handle(id());
        let null_main = b.u8() % 16 == 0;
        let main_ptr = if null_main { std::ptr::null() } else { &main as *const _ };
        if null_main {
            // A NULL frame hands nothing over: its handle is not the filter's.
            frame_free_ours(main.handle);
        }
        // SAFETY: a live handle; frames filled as far as they claim.
        unsafe {
            ffi::vmafx_filter_push(f, main_ptr, &reference, output);
            pop_all(f);
        }
    }
    // SAFETY: a live handle.
    unsafe {
        ffi::vmafx_filter_finish(f, b.u8() as i64 - 2, (b.u8() & 1) as c_int);
        pop_all(f);
        let _ = ffi::vmafx_filter_summary(f);
        let _ = ffi::vmafx_filter_take_warnings(f);
        let _ = ffi::vmafx_filter_last_error(f);
        let _ = ffi::vmafx_filter_frames_scored(f);
        ffi::vmafx_filter_free(f);
    }
    let live = std::mem::take(&mut *LIVE_HANDLES.lock().unwrap_or_else(|p| p.into_inner()));
    assert!(live.is_empty(), "frame handles never released: {live:x?}");
    drop(keep);
}

/// Takes back a handle the target made but did not hand over.
fn frame_free_ours(h: *mut c_void) {
    // SAFETY: our own callback on our own handle.
    unsafe { frame_free(h) };
}

/// Pops every frame ready; each comes back to us, to release.
///
/// # Safety
/// `f` is a live handle.
unsafe fn pop_all(f: *mut ffi::VmafxFilter) {
    loop {
        let mut out: *mut c_void = std::ptr::null_mut();
        // SAFETY: a live handle and a writable slot.
        if unsafe { ffi::vmafx_filter_pop(f, &mut out) } != 1 {
            break;
        }
        frame_free_ours(out);
    }
}
