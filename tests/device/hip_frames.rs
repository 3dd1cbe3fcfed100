//! HIP frames (`AV_PIX_FMT_HIP`) handed to the filter's C interface as
//! FFmpeg's glue hands them over, while the producer's writes into them are
//! still queued on its stream: vmafx must order its reads after that stream
//! by event (the scoring lanes' `wait_for_caller_stream`, and for frames the GPU
//! importer converts, the importer's wait on the input's stream), never
//! read what happens to be in device memory.
//!
//! Runs on the fake `libamdhip64` (tests/hip_fake/fake_hip.cpp) in its lazy
//! mode (VMAFX_FAKE_HIP_LAZY=1): a copy queued on the producer's stream
//! runs only when something ordered after it needs it, so a kernel on
//! another stream that skipped the wait reads hipMalloc's 0xa5 poison, and
//! its values differ from the CPU's. The device pointers are the fake's
//! hipMalloc allocations (the importer asks the runtime for their extents).
//!
//! Per case, every per-frame value of the HIP run equals the same frames
//! scored from host memory as f64 bits; every HIP frame went to the device,
//! none through host memory; the fake saw no misuse.
//!
//! Below the filter, the HIP importer on HIP-made device pointers (hipMalloc,
//! every layout of tests/support/device_planes.rs at an offset, with padded
//! rows): each plane it hands over, read back, is the plane the CPU reads,
//! and PSNR's twin on them gives the SSE of those planes.
//!
//! `hip_frames_ordered_after_the_producers_stream` starts this binary again
//! with the fake on the search path: the `child_*` tests.

use crate::support::rerun;
use crate::support::filter_capi;
use crate::support::hip_fake;
use crate::support::device_planes;

use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use device_planes::{device_bytes, read_plane};
use filter_capi::*;
use hip_fake::*;
use vmafx::{DeviceKind, PictureSource};
use vmafx::internals::avfilter::ffi::*;
use vmafx::internals::device::gpu::backend::{Backend, DeviceMemory, KernelRunner};
use vmafx::internals::device::gpu::lane::GpuLane;
use vmafx::internals::import::Memory;
use vmafx::internals::import::gpu::{wait_ready, GpuImporter};

const W: usize = 65;
const H: usize = 49;
const FRAMES: usize = 4;

#[test]
fn hip_frames_ordered_after_the_producers_stream() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let Some(dir) = fake_dir() else { return };
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([&rerun::filter(module_path!(), "child_"), "--test-threads", "1", "--nocapture"])
        .envs(fake_env(&dir, ROCM7))
        .env("VMAFX_FAKE_HIP_LAZY", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("--- the child on the lazy fake:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains("test result: ok. 2 passed"), "the child test on the fake failed");
}

/// The HIP runtime calls a producer (FFmpeg's HIP hwcontext) makes, from
/// the fake the lane loaded.
struct Producer {
    lib: libloading::Library,
    stream: *mut c_void,
}

type Malloc = unsafe extern "C" fn(*mut u64, usize) -> i32;
type Free = unsafe extern "C" fn(u64) -> i32;
type StreamCreate = unsafe extern "C" fn(*mut *mut c_void) -> i32;
type StreamOp = unsafe extern "C" fn(*mut c_void) -> i32;
type Copy2d = unsafe extern "C" fn(u64, usize, u64, usize, usize, usize, u32, *mut c_void) -> i32;

impl Producer {
    fn new() -> Producer {
        Fake::get();
        // SAFETY: the fake, already loaded by the lane's loader; the
        // symbols below have these signatures in fake_hip.cpp.
        let lib = unsafe { libloading::Library::new("libamdhip64.so.7") }.unwrap();
        let mut stream = std::ptr::null_mut();
        // SAFETY: as above; writes one stream handle.
        assert_eq!(unsafe { lib.get::<StreamCreate>(b"hipStreamCreate\0").unwrap()(&mut stream) }, 0);
        Producer { lib, stream }
    }

    fn malloc(&self, bytes: usize) -> u64 {
        let mut p = 0;
        // SAFETY: as in new; writes one pointer.
        assert_eq!(unsafe { self.lib.get::<Malloc>(b"hipMalloc\0").unwrap()(&mut p, bytes) }, 0);
        p
    }

    /// Queues the upload of `rows` rows of `row` bytes from `src` (pitch
    /// `row`) to `dst` (pitch `pitch`) on the producer's stream, and
    /// returns without waiting for it, as a decoder's copies are queued.
    fn upload_async(&self, dst: u64, pitch: usize, src: &[u8], row: usize, rows: usize) {
        assert!(src.len() >= row * rows);
        // SAFETY: `dst` holds `rows` rows of `pitch` bytes (malloc'd
        // above); `src` lives until the stream is synchronised (`finish`).
        let rc = unsafe { self.lib.get::<Copy2d>(b"hipMemcpy2DAsync\0").unwrap()(dst, pitch, src.as_ptr() as u64, row, row, rows, 1, self.stream) };
        assert_eq!(rc, 0);
    }

    fn finish(&self, allocations: &[u64]) {
        // SAFETY: as in new; our stream and our allocations.
        unsafe {
            assert_eq!(self.lib.get::<StreamOp>(b"hipStreamSynchronize\0").unwrap()(self.stream), 0);
            for &p in allocations {
                assert_eq!(self.lib.get::<Free>(b"hipFree\0").unwrap()(p), 0);
            }
        }
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        // SAFETY: our stream, destroyed once.
        unsafe { self.lib.get::<StreamOp>(b"hipStreamDestroy\0").unwrap()(self.stream) };
    }
}

/// One frame's planes in host memory, packed (pitch = row bytes), in the
/// sw_format's layout (nv12 / p010: Y, then interleaved UV).
struct Planes {
    planes: Vec<(Vec<u8>, usize, usize)>, // bytes, row bytes, rows
}

fn lcg(seed: &mut u64) -> u32 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (*seed >> 33) as u32
}

/// A smooth picture with noise, different per frame and input.
fn picture(format: &str, frame: usize, distorted: bool) -> Planes {
    let mut seed = (frame * 2 + distorted as usize) as u64 * 7919 + 13;
    let (cw, ch) = (W.div_ceil(2), H.div_ceil(2));
    let mut sample = |x: usize, y: usize, plane: usize| -> u32 {
        let base = (x * 3 + y * 5 + frame * 11 + plane * 40) % 200 + 20;
        let noise = if distorted { lcg(&mut seed) % 9 } else { lcg(&mut seed) % 3 };
        (base as u32 + noise).min(255)
    };
    let plane8 = |w: usize, h: usize, p: usize, s: &mut dyn FnMut(usize, usize, usize) -> u32| {
        let mut v = Vec::with_capacity(w * h);
        for y in 0..h {
            for x in 0..w {
                v.push(s(x, y, p) as u8);
            }
        }
        (v, w, h)
    };
    match format {
        "yuv420p" => Planes { planes: vec![plane8(W, H, 0, &mut sample), plane8(cw, ch, 1, &mut sample), plane8(cw, ch, 2, &mut sample)] },
        "nv12" | "p010le" => {
            let wide = format == "p010le";
            let put = |v: &mut Vec<u8>, s: u32| {
                if wide {
                    // 10 bits, MSB-aligned in 16.
                    let s10 = (s << 2) | (s & 3);
                    v.extend_from_slice(&((s10 << 6) as u16).to_le_bytes());
                } else {
                    v.push(s as u8);
                }
            };
            let bps = if wide { 2 } else { 1 };
            let mut y_plane = Vec::new();
            for y in 0..H {
                for x in 0..W {
                    put(&mut y_plane, sample(x, y, 0));
                }
            }
            let mut uv = Vec::new();
            for y in 0..ch {
                for x in 0..cw {
                    put(&mut uv, sample(x, y, 1));
                    put(&mut uv, sample(x, y, 2));
                }
            }
            Planes { planes: vec![(y_plane, W * bps, H), (uv, cw * 2 * bps, ch)] }
        }
        other => unreachable!("{other}"),
    }
}

fn filter(model: &CStr, feature: Option<&CStr>) -> *mut VmafxFilter {
    let opts = VmafxFilterOptions {
        model: model.as_ptr(),
        feature: feature.map_or(std::ptr::null(), CStr::as_ptr),
        log_path: std::ptr::null(),
        log_fmt: std::ptr::null(),
        pool: std::ptr::null(),
        n_threads: 2,
        n_subsample: 1,
        fence_timeout_us: 1_000_000,
        device: std::ptr::null(),
    };
    let host = VmafxHost { frame_free: Some(host_free), frame_set_metadata: Some(host_set_metadata) };
    let mut err = [0 as std::ffi::c_char; 1024];
    // SAFETY: valid options, host and error buffer.
    let f = unsafe { vmafx_filter_new(&opts, &host, err.as_mut_ptr(), err.len()) };
    // SAFETY: NUL-terminated by vmafx_filter_new.
    assert!(!f.is_null(), "{}", unsafe { CStr::from_ptr(err.as_ptr()) }.to_string_lossy());
    f
}

/// A VmafxFrame over planes at `data` / `linesize`, owned by a fresh
/// HostFrame (released by vmafx).
fn frame(live: &Arc<AtomicUsize>, data: [*const u8; 4], linesize: [i32; 4], pix_fmt: &CStr, sw: &CStr) -> VmafxFrame {
    VmafxFrame {
        data,
        linesize,
        width: W as i32,
        height: H as i32,
        pix_fmt: pix_fmt.as_ptr(),
        handle: host_frame(live, None, None) as *mut _,
        sw_format: sw.as_ptr(),
        hw_context: std::ptr::null_mut(),
    }
}

/// Scores `pictures` (distorted, reference) from host memory (`hip`
/// None) or as HIP frames uploaded on the producer's stream and pushed
/// before that upload ran. Returns each output's metadata (f64 bits) and
/// the filter's (device frames, host copies).
fn run(format: &CStr, model: &CStr, feature: Option<&CStr>, pictures: &[(Planes, Planes)], hip: Option<&Producer>) -> (Vec<Vec<(String, u64)>>, u64, u64) {
    let f = filter(model, feature);
    let live = Arc::new(AtomicUsize::new(0));
    if let Some(p) = hip {
        for input in 0..2 {
            // SAFETY: a live filter; the stream outlives it.
            assert_eq!(unsafe { vmafx_filter_set_hip_device(f, input, 0, p.stream) }, 0, "{}", last_error(f));
        }
    }
    // SAFETY: a live filter, NUL-terminated names.
    assert_eq!(unsafe { vmafx_filter_configure(f, W as i32, H as i32, format.as_ptr(), W as i32, H as i32, format.as_ptr()) }, 0, "{}", last_error(f));
    let mut allocations = Vec::new();
    for (t, (d, r)) in pictures.iter().enumerate() {
        let mut frames = Vec::new();
        for pic in [d, r] {
            let (mut data, mut linesize) = ([std::ptr::null(); 4], [0; 4]);
            for (i, (bytes, row, rows)) in pic.planes.iter().enumerate() {
                match hip {
                    None => {
                        data[i] = bytes.as_ptr();
                        linesize[i] = *row as i32;
                    }
                    Some(p) => {
                        let pitch = row.div_ceil(256) * 256;
                        let dst = p.malloc(pitch * rows);
                        allocations.push(dst);
                        p.upload_async(dst, pitch, bytes, *row, *rows);
                        data[i] = dst as *const u8;
                        linesize[i] = pitch as i32;
                    }
                }
            }
            frames.push(match hip {
                None => frame(&live, data, linesize, format, format),
                Some(_) => frame(&live, data, linesize, c"hip", format),
            });
        }
        let out = host_frame(&live, None, None);
        // SAFETY: filled frames over planes alive until the run's end.
        let ret = unsafe { vmafx_filter_push(f, &frames[0], &frames[1], out as *mut _) };
        assert_eq!(ret, 0, "frame {t}: {}", last_error(f));
    }
    let outputs = finish_and_pop(f, pictures.len());
    // SAFETY: a live filter.
    let counters = unsafe { (vmafx_filter_device_frames(f), vmafx_filter_host_copies(f)) };
    // SAFETY: freed once.
    unsafe { vmafx_filter_free(f) };
    if let Some(p) = hip {
        p.finish(&allocations);
    }
    assert_eq!(live.load(Ordering::SeqCst), 0, "a frame handed over was never released");
    (outputs, counters.0, counters.1)
}

/// In place (yuv420p: the scoring lanes read the planes where the producer
/// put them, after following its stream) and through the importer (nv12
/// with PSNR's chroma deinterleaved, p010 shifted: the importer's stream
/// waits for the input's stream): the values of frames pushed before the
/// producer's upload ran equal the CPU's as bits.
#[test]
fn child_hip_frames_score_as_host_frames_with_the_upload_still_queued() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let fake = Fake::get();
    let producer = Producer::new();
    let cases: [(&CStr, &CStr, Option<&CStr>); 3] = [
        (c"yuv420p", c"version=vmaf_v0.6.1", None),
        (c"nv12", c"version=vmaf_v0.6.1", Some(c"name=psnr")),
        (c"p010le", c"version=vmaf_v0.6.1", None),
    ];
    for (format, model, feature) in cases {
        let name = format.to_str().unwrap();
        let pictures: Vec<_> = (0..FRAMES).map(|t| (picture(name, t, true), picture(name, t, false))).collect();
        let (cpu, _, cpu_copies) = run(format, model, feature, &pictures, None);
        // Host frames: p010's luma shifted, nv12's chroma split for PSNR,
        // each picture counted once in the filter's (its context's) counter.
        let shifted_or_split = if name == "yuv420p" { 0 } else { 2 * FRAMES as u64 };
        assert_eq!(cpu_copies, shifted_or_split, "{name}: host frames copied in host memory");
        let (gpu, device_frames, copies) = run(format, model, feature, &pictures, Some(&producer));
        assert_eq!(cpu.len(), FRAMES, "{name}: outputs");
        assert!(cpu[0].iter().any(|(k, _)| k.contains("vmaf")), "{name}: no VMAF score: {:?}", cpu[0]);
        if feature.is_some() {
            assert!(cpu[0].iter().any(|(k, _)| k.contains("psnr_cb")), "{name}: no chroma PSNR: {:?}", cpu[0]);
        }
        for (t, (c, g)) in cpu.iter().zip(&gpu).enumerate() {
            assert_eq!(g, c, "{name} frame {t}: HIP frames pushed before their upload ran scored differently from host frames (a read not ordered after the producer's stream, or planes read wrong)");
        }
        assert_eq!(device_frames, 2 * FRAMES as u64, "{name}: every HIP frame read on the device");
        assert_eq!(copies, 0, "{name}: no HIP frame copied through host memory");
        println!("{name}: {FRAMES} frames, every value equal to the CPU's");
    }
    no_violations(&fake.log());
}

/// HIP-made frames (device pointers from hipMalloc) imported by the HIP
/// importer: every layout read in place or planarised on the device into
/// the planes the CPU reads, and PSNR's twin on them equal to the SSE of
/// those planes.
#[test]
fn child_hip_device_pointers_import_like_the_cpu() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let fake = Fake::get();
    let importer = GpuImporter::hip(0, true).unwrap();
    let mut lane = KernelRunner::new(GpuLane::open(DeviceKind::Hip, 0).unwrap()).unwrap();
    let mut cases = 0;
    for format in device_planes::LAYOUT_FORMATS {
        for (w, h, offset, pad) in [(17, 9, 0, 0), (33, 19, 6, 3)] {
            let seed = (w * 7919 + h * 31 + offset * 3 + pad) as u64 ^ format as u64;
            let a = device_planes::layout(format, w, h, offset, pad, seed);
            let b = device_planes::layout(format, w, h, offset, pad, !seed);
            let what = format!("HIP {format} {w}x{h} offset {offset} pad {pad} seed {seed:#x}");
            let (ba, bb) = (device_bytes(&mut lane, &a.bytes), device_bytes(&mut lane, &b.bytes));
            let fa = importer.import(a.descriptor(&what, Memory::DevicePointer(ba.ptr()), 0)).unwrap_or_else(|r| panic!("{what}: {r}"));
            let fb = importer.import(b.descriptor(&what, Memory::DevicePointer(bb.ptr()), 0)).unwrap_or_else(|r| panic!("{what}: {r}"));
            let (da, db) = (fa.device_frame().unwrap(), fb.device_frame().unwrap());
            wait_ready(da, lane.backend_mut()).unwrap();
            wait_ready(db, lane.backend_mut()).unwrap();
            for i in 0..3 {
                let (pw, ph) = (a.want[i][0].len(), a.want[i].len());
                assert_eq!(read_plane(&mut lane, &da.planes[i]), a.want[i], "{what}: plane {i}");
                let want: u64 = a.want[i]
                    .iter()
                    .flatten()
                    .zip(b.want[i].iter().flatten())
                    .map(|(&x, &y)| (x as i64 - y as i64).pow(2) as u64)
                    .sum();
                let got = vmafx::internals::feature::psnr::gpu::sse_dev(&mut lane, da.planes[i], db.planes[i], pw, ph).unwrap();
                assert_eq!(got, want, "{what}: SSE of plane {i}");
            }
            if a.bits == 8 || a.bits == 16 {
                assert_eq!(da.planes[0].ptr, ba.ptr() + offset as u64, "{what}: luma read in place");
            }
            fa.reads_queued(lane.backend_mut()).unwrap();
            fb.reads_queued(lane.backend_mut()).unwrap();
            drop((fa, fb));
            lane.backend_mut().synchronize().unwrap();
            drop((ba, bb));
            cases += 1;
        }
    }
    assert_eq!(cases, 2 * device_planes::LAYOUT_FORMATS.len());
    no_violations(&fake.log());
    println!("{cases} HIP-made frames: planes and SSE equal to the CPU's");
}
