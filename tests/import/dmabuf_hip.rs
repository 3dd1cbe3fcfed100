//! DRM_PRIME frames scored on a HIP device without AMD hardware: the real
//! HIP lane and importer (src/device/gpu/lane.rs, src/import/gpu.rs,
//! src/import/external.rs) over a fake `libamdhip64` (tests/hip_fake/
//! fake_hip.cpp: the kernel emulator behind the HIP runtime calls, whose
//! hipImportExternalMemory mmaps the dma-buf), which the real loader finds
//! through LD_LIBRARY_PATH as `libamdhip64.so.7` (with `libhiprtc.so.7` and
//! `libamd_comgr.so.{2,3}` links to it).
//!
//! Two drivers start this binary again with the fake on the search path:
//! - `fake_hip_runs_the_import_through_the_loader`: here, on memfd
//!   objects (no fences), once as ROCm 7 (offsets honoured, ROCm 6 structs)
//!   and once as ROCm 5.2 (offsets ignored, ROCm 5 structs): the `child_*`
//!   tests;
//! - `runs_the_hip_dmabuf_tests_in_a_vm`: in the dma-buf VM
//!   (scripts/dmabuf-vm), on vgem dma-bufs under unsignalled write fences:
//!   the `vm_*` tests, compared with the CPU path on the same buffers.
//!
//! The filter (`vmafx=device=hip`) runs the same way, through its C
//! interface as FFmpeg's glue drives it (`vm_filter_*`, `child_filter_*`).
//!
//! The fake logs every import, map, free and destroy, and reports misuse as
//! VIOLATION lines; the tests read its log.

use crate::support::rerun;
use crate::support::synth;
use crate::support::vm_bed;
use crate::support::filter_capi;
use crate::support::hip_fake;

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nix::libc;
use filter_capi::*;
use hip_fake::*;
use vm_bed::*;
use vmafx::{AvDrmFrameDescriptor, Chroma, Context, ContextConfig, DeviceChoice, DeviceKind, FeatureOptions, FrameDescriptor, GpuVendor, HostImporter, Model, ModelConfig, OwnedPicture, PictureSource};
use vmafx::internals::avfilter::ffi::*;
use vmafx::internals::device::gpu::backend::{Backend, DeviceMemory, EventRef, Pitched};
use vmafx::internals::device::gpu::lane::GpuLane;
use vmafx::internals::import::drm::{AvDrmLayerDescriptor, AvDrmObjectDescriptor, AvDrmPlaneDescriptor};
use vmafx::internals::import::gpu::{wait_ready, GpuImporter};
use vmafx::internals::import::{DrmFourcc, DrmModifier, ImportErrorKind, Layer, Memory, Object, PlaneRef};


fn in_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

fn in_vm() -> bool {
    vm_bed::in_vm(&["/dev/dri/card0", "/dev/udmabuf"])
}

#[test]
fn fake_hip_runs_the_import_through_the_loader() {
    if in_child() || std::env::var_os(IN_VM).is_some() {
        return;
    }
    let Some(dir) = fake_dir() else { return };
    for version in [ROCM7, ROCM52] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([&rerun::filter(module_path!(), "child_"), "--test-threads", "1", "--nocapture"])
            .envs(fake_env(&dir, version))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        eprintln!("--- the fake as HIP_VERSION {version}:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && stdout.contains("test result: ok. 4 passed"), "the child tests on the fake (HIP_VERSION {version}) failed");
    }
}

#[test]
fn runs_the_hip_dmabuf_tests_in_a_vm() {
    if in_child() || std::env::var_os(IN_VM).is_some() {
        return;
    }
    let Some(dir) = fake_dir() else { return };
    let env = fake_env(&dir, ROCM7).into_iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| format!("{k}={v}")).collect();
    run_in_vm(VmRun { filter: &rerun::filter(module_path!(), "vm_"), threads: 1, expected: 5, env });
}

// ------------------------------------------------------------ surfaces

/// A producer's surface: a vgem dma-buf in the VM, a memfd here.
fn surface(vgem: Option<&Arc<Vgem>>, len: usize) -> Buffer {
    match vgem {
        Some(v) => Buffer::vgem(v, len),
        None => {
            // SAFETY: plain syscalls on an fd we own; results checked.
            let fd = unsafe {
                let fd = libc::memfd_create(c"vmafx-surface".as_ptr(), libc::MFD_CLOEXEC);
                assert!(fd >= 0);
                assert_eq!(libc::ftruncate(fd, len as i64), 0);
                OwnedFd::from_raw_fd(fd)
            };
            Buffer::map(fd, len, None)
        }
    }
}

/// VAAPI's NV12 export: R8 + GR88 layers in one object, luma at `Y_AT`
/// with a padded pitch, chroma after it.
struct Nv12 {
    w: usize,
    h: usize,
    ypitch: usize,
    cpitch: usize,
    coff: usize,
    len: usize,
}

const Y_AT: usize = 128;

impl Nv12 {
    fn new(w: usize, h: usize) -> Nv12 {
        let (ypitch, cpitch) = (w + 45, 2 * w.div_ceil(2) + 20);
        let coff = Y_AT + ypitch * h + 64;
        Nv12 { w, h, ypitch, cpitch, coff, len: coff + cpitch * h.div_ceil(2) }
    }
    fn write(&self, buf: &mut Buffer, pic: &OwnedPicture) {
        write_plane(buf.bytes_mut(), pic, 0, Y_AT, self.ypitch, 0);
        write_interleaved(buf.bytes_mut(), pic, self.coff, self.cpitch, 0);
    }
    /// The AVDRMFrameDescriptor FFmpeg's VAAPI → DRM mapping gives this
    /// layout, with a duplicate of `buf`'s fd (owned by the returned fd).
    fn av_drm(&self, buf: &Buffer) -> (Box<AvDrmFrameDescriptor>, OwnedFd) {
        let fd = buf.dup_fd();
        let mut av = Box::new(AvDrmFrameDescriptor { nb_objects: 1, nb_layers: 2, ..Default::default() });
        av.objects[0] = AvDrmObjectDescriptor { fd: fd.as_raw_fd(), size: self.len, format_modifier: 0 };
        av.layers[0] = AvDrmLayerDescriptor { format: DrmFourcc::R8 as u32, nb_planes: 1, ..Default::default() };
        av.layers[0].planes[0] = AvDrmPlaneDescriptor { object_index: 0, offset: Y_AT as isize, pitch: self.ypitch as isize };
        av.layers[1] = AvDrmLayerDescriptor { format: DrmFourcc::Gr88 as u32, nb_planes: 1, ..Default::default() };
        av.layers[1].planes[0] = AvDrmPlaneDescriptor { object_index: 0, offset: self.coff as isize, pitch: self.cpitch as isize };
        (av, fd)
    }
    fn descriptor(&self, label: String, buf: &Buffer, implicit_sync: bool) -> FrameDescriptor {
        let mut d = FrameDescriptor::new(label, self.w, self.h, 8);
        d.objects.push(Object { memory: Memory::DmaBuf(buf.dup_fd()), size: self.len as u64, modifier: DrmModifier::Linear });
        d.layers.push(Layer { format: DrmFourcc::R8, planes: vec![PlaneRef { object: 0, offset: Y_AT as u64, pitch: self.ypitch as u64 }] });
        d.layers.push(Layer { format: DrmFourcc::Gr88, planes: vec![PlaneRef { object: 0, offset: self.coff as u64, pitch: self.cpitch as u64 }] });
        d.implicit_sync = implicit_sync;
        d
    }
}

// ------------------------------------------------------------ scoring

fn context(device: DeviceChoice) -> Context {
    let mut c = Context::new(ContextConfig { threads: 0, device, ..ContextConfig::default() }).unwrap();
    c.use_model(Model::builtin("vmaf_v0.6.1", &ModelConfig::default()).unwrap()).unwrap();
    c.use_feature("psnr", FeatureOptions::new()).unwrap();
    c
}

fn assert_same(got: &[(String, Vec<Option<u64>>)], want: &[(String, Vec<Option<u64>>)]) {
    assert!(want.iter().any(|(n, _)| n == "vmaf") && want.iter().any(|(n, _)| n.contains("psnr_cb")), "{want:?}");
    assert_eq!(got.len(), want.len(), "feature sets differ");
    for ((gn, gv), (wn, wv)) in got.iter().zip(want) {
        assert_eq!(gn, wn);
        assert_eq!(gv, wv, "{gn}: the HIP run differs from the CPU path (bits)");
    }
}

const HIP0: DeviceChoice = DeviceChoice::Gpu { vendor: GpuVendor::Hip, index: 0 };

/// NV12 frames from a pool of `pool` surfaces per input, `n` frames: scored
/// on the (fake) HIP device equal the CPU path as bits; each surface is
/// imported once; every plane mapped at its offset; each import destroyed
/// once the importer (the frames context) and the frames are gone, after
/// its buffers are freed. In the VM the distorted surfaces are written
/// under an unsignalled vgem fence: BUSY first, then waited for.
fn pool_scores_like_the_cpu_path(vgem: Option<&Arc<Vgem>>, n: usize, pool: usize, (w, h): (usize, usize)) {
    let fake = Fake::get();
    let before = fake.log().len();
    let l = Nv12::new(w, h);
    let frames = synth::clip(Chroma::Yuv420, 8, l.w, l.h, n, 31);
    let importer = GpuImporter::hip(0, true).unwrap();
    let cpu = HostImporter::new(true);
    let mut hip_ctx = context(HIP0);
    let mut cpu_ctx = context(DeviceChoice::Cpu);
    let mut surfaces: Vec<[Buffer; 2]> = (0..pool).map(|_| [surface(vgem, l.len), surface(vgem, l.len)]).collect();
    let mut busy_seen = 0;
    for (t, (r, d)) in frames.iter().enumerate() {
        let pair = &mut surfaces[t % pool];
        let mut hip = Vec::new();
        let mut on_cpu = Vec::new();
        for (k, (which, pic)) in [("reference", r), ("distorted", d)].into_iter().enumerate() {
            let buf = &mut pair[k];
            let fence = (vgem.is_some() && k == 1).then(|| buf.attach_fence());
            l.write(buf, pic);
            let desc = l.descriptor(format!("{which} frame {t}"), buf, vgem.is_some());
            let frame = match fence {
                Some(fence) => {
                    let refusal = importer.import(desc).expect_err("the writer's fence is pending: BUSY");
                    assert_eq!(refusal.error.kind, ImportErrorKind::Busy);
                    assert!(refusal.error.message.contains("implicit write fence of object 0"), "{}", refusal.error);
                    busy_seen += 1;
                    let s = fence.signal_later(Duration::from_millis(30));
                    let f = importer.wait_and_import(*refusal.descriptor, Duration::from_secs(10), None).expect("import after the fence");
                    s.join().unwrap();
                    f
                }
                None => importer.wait_and_import(desc, Duration::from_secs(10), None).expect("import"),
            };
            hip.push(frame as Arc<dyn PictureSource>);
            if vgem.is_some() {
                let cpu_desc = l.descriptor(format!("{which} frame {t}"), buf, true);
                on_cpu.push(Arc::new(cpu.wait_and_import(cpu_desc, Duration::from_secs(10)).expect("cpu import")) as Arc<dyn PictureSource>);
            } else {
                on_cpu.push(Arc::new(pic.clone()) as Arc<dyn PictureSource>);
            }
        }
        let (hd, hr) = (hip.pop().unwrap(), hip.pop().unwrap());
        hip_ctx.push(hr, hd).unwrap();
        let (cd, cr) = (on_cpu.pop().unwrap(), on_cpu.pop().unwrap());
        cpu_ctx.push(cr, cd).unwrap();
    }
    assert_same(&all_values(&mut hip_ctx), &all_values(&mut cpu_ctx));
    assert_eq!(busy_seen, if vgem.is_some() { n } else { 0 });
    assert_eq!(importer.dma_buf_imports(), (2 * pool as u64, 2 * pool), "each surface imported once, not per frame");
    let stats = importer.stats();
    assert_eq!(stats.converted_planes.load(std::sync::atomic::Ordering::SeqCst), 2 * 2 * n as u64, "U and V split on the device");
    drop(hip_ctx);
    let log = fake.log()[before..].to_string();
    let exts = imported(&log);
    assert_eq!(exts.len(), 2 * pool, "{log}");
    assert!(!log.contains("destroy"), "imports destroyed while the importer (the frames context) lives:\n{log}");
    drop(importer);
    let log = fake.log()[before..].to_string();
    no_violations(&log);
    let y_map = |ext: &str| format!("map ext={ext} offset={Y_AT} size={}", l.ypitch * (l.h - 1) + l.w);
    for ext in &exts {
        let lines = lines_of(&log, ext);
        assert!(lines[0].starts_with("import"), "{lines:?}");
        assert!(lines.contains(&y_map(ext).as_str()), "luma not mapped at its offset: {lines:?}");
        let destroy = lines.iter().position(|l| l.starts_with("destroy")).unwrap_or_else(|| panic!("never destroyed: {lines:?}"));
        assert_eq!(destroy, lines.len() - 1, "destroyed before its last use: {lines:?}");
        assert!(lines.iter().any(|l| l.starts_with("free")), "mapped buffers never freed: {lines:?}");
    }
}

/// A reader still reading when the frame and its importer go: the memory
/// is destroyed only after the reader's event, never before.
fn destroyed_after_the_last_reader(vgem: Option<&Arc<Vgem>>) {
    let fake = Fake::get();
    let before = fake.log().len();
    let l = Nv12::new(40, 12);
    let pic = &synth::clip(Chroma::Yuv420, 8, l.w, l.h, 1, 5)[0].0;
    let mut buf = surface(vgem, l.len);
    l.write(&mut buf, pic);
    let importer = GpuImporter::hip(0, false).unwrap();
    let keeper = importer.with_chroma(false); // holds the library lane
    let frame = importer.wait_and_import(l.descriptor("reader frame 0".into(), &buf, vgem.is_some()), Duration::from_secs(10), None).unwrap();
    let mut reader = GpuLane::open(DeviceKind::Hip, 0).unwrap();
    let still_reading = fake.blocked_event();
    let dst_buffer = reader.alloc(l.w * l.h).unwrap();
    let dst = dst_buffer.ptr();
    wait_ready(frame.frame(), &mut reader).unwrap();
    // SAFETY: the fake's blocked event lives until the fake goes.
    reader.wait_event(unsafe { EventRef::from_handle(still_reading) }).unwrap();
    let y = frame.frame().planes[0];
    reader.copy_2d(Pitched { ptr: dst, pitch: l.w }, Pitched { ptr: y.ptr, pitch: y.pitch }, l.w, l.h).unwrap();
    frame.reads_queued(&mut reader).unwrap();
    drop(frame);
    drop(importer);
    let log = fake.log()[before..].to_string();
    let ext = imported(&log).pop().expect("imported");
    assert!(!lines_of(&log, &ext).iter().any(|l| l.starts_with("destroy")), "destroyed while a reader still reads it:\n{log}");
    fake.signal(still_reading);
    reader.synchronize().unwrap();
    let mut got = vec![0u8; l.w * l.h];
    reader.download(&mut got, dst).unwrap();
    let view = pic.view();
    let want: Vec<u8> = (0..l.h).flat_map(|yy| (0..l.w).map(move |x| view.plane(0).sample(x, yy) as u8)).collect();
    assert_eq!(got, want, "the reader read the frame's luma");
    drop(dst_buffer);
    drop(keeper); // the library lane goes: what is done is destroyed
    let log = fake.log()[before..].to_string();
    eprintln!("the fake's log:\n{log}");
    no_violations(&log);
    let lines = lines_of(&log, &ext);
    let ran = lines.iter().position(|l| l.starts_with("ran copy")).expect("the reader's copy ran");
    let destroy = lines.iter().position(|l| l.starts_with("destroy")).expect("destroyed at last");
    assert!(ran < destroy, "{lines:?}");
}

/// The CPU path's refusals, with its messages (the lane named as itself).
fn refusals_match_the_cpu_path(vgem: Option<&Arc<Vgem>>) {
    let l = Nv12::new(32, 16);
    let buf = surface(vgem, l.len);
    let importer = GpuImporter::hip(0, true).unwrap();
    let cpu = HostImporter::new(true);
    type Change = Box<dyn Fn(&mut FrameDescriptor)>;
    let cases: Vec<(&str, Change)> = vec![
        ("tiled", Box::new(|d| d.objects[0].modifier = DrmModifier::from(I915_FORMAT_MOD_X_TILED))),
        ("mod invalid", Box::new(|d| d.objects[0].modifier = DrmModifier::Invalid)),
        ("past the end", Box::new(|d| d.layers[1].planes[0].offset += 4096)),
        ("declared too large", Box::new(|d| d.objects[0].size = 1 << 40)),
        ("short pitch", Box::new(|d| d.layers[0].planes[0].pitch = 7)),
        ("missing object", Box::new(|d| d.layers[1].planes[0].object = 3)),
    ];
    for (what, change) in cases {
        let mut a = l.descriptor("distorted frame 7".into(), &buf, false);
        let mut b = l.descriptor("distorted frame 7".into(), &buf, false);
        change(&mut a);
        change(&mut b);
        let on_hip = importer.import(a).expect_err(what).error;
        let on_cpu = cpu.import(b).expect_err(what).error;
        assert_eq!(on_hip.kind, on_cpu.kind, "{what}: {on_hip} / {on_cpu}");
        assert_eq!(on_hip.message.replace("the GPU lanes read", "the CPU device reads"), on_cpu.message, "{what}");
        eprintln!("{what}: {on_hip}");
    }
    if vgem.is_some() {
        // A fence never signalled: BUSY past the timeout, named as the CPU path names it.
        let fence = buf.attach_fence();
        let a = importer.wait_and_import(l.descriptor("main frame 1".into(), &buf, true), Duration::from_millis(200), None).expect_err("never signalled").error;
        let b = cpu.wait_and_import(l.descriptor("main frame 1".into(), &buf, true), Duration::from_millis(200)).expect_err("never signalled").error;
        assert_eq!((a.kind, &a.message), (b.kind, &b.message));
        assert!(a.message.starts_with("gave up after 200ms: main frame 1: the implicit write fence of object 0"), "{a}");
        fence.signal();
    }
    assert_eq!(importer.dma_buf_imports().0, 0, "nothing refused was imported");
}

#[test]
fn child_pool_scores_like_the_cpu_path() {
    if in_child() {
        pool_scores_like_the_cpu_path(None, 6, 3, (41, 35));
    }
}

#[test]
fn child_destroyed_after_the_last_reader() {
    if in_child() {
        destroyed_after_the_last_reader(None);
    }
}

#[test]
fn child_refusals_match_the_cpu_path() {
    if in_child() {
        refusals_match_the_cpu_path(None);
    }
}

#[test]
fn vm_pool_scores_like_the_cpu_path() {
    if in_vm() {
        // Small: the emulated kernels run slowly under TCG (~4 s a frame).
        pool_scores_like_the_cpu_path(Some(&Vgem::open()), 3, 2, (34, 33));
    }
}

#[test]
fn vm_destroyed_after_the_last_reader() {
    if in_vm() {
        destroyed_after_the_last_reader(Some(&Vgem::open()));
    }
}

#[test]
fn vm_refusals_match_the_cpu_path() {
    if in_vm() {
        refusals_match_the_cpu_path(Some(&Vgem::open()));
    }
}

// ------------------------------------------------------------ the filter

/// One run of the filter's C interface over `frames` (reference,
/// distorted), both inputs DRM_PRIME nv12 frames from a pool of `pool`
/// vgem surfaces per input, with `device` (None: the CPU path). As a
/// decoder does, a surface is written again only once vmafx released the
/// frame that last held it, and poisoned the moment it is released (a frame
/// released before the device's last read of it scores poison); each
/// distorted surface is written under an
/// unsignalled write fence signalled 50 ms after the push started, so every
/// push must wait for it. Returns the outputs' metadata (f64 bits), and
/// vmafx's device-frame and host-copy counters; `before_free` runs on the
/// live filter after the last output.
fn filter_run(
    vgem: &Arc<Vgem>,
    device: Option<&std::ffi::CStr>,
    frames: &[(OwnedPicture, OwnedPicture)],
    pool: usize,
    before_free: impl FnOnce(),
) -> (Vec<Vec<(String, u64)>>, u64, u64) {
    let (w, h) = (frames[0].0.width(), frames[0].0.height());
    let l = Nv12::new(w, h);
    let f = new_filter(c"version=vmaf_v0.6.1", 2, 10_000_000, device).expect("vmafx_filter_new");
    // SAFETY: a live filter, NUL-terminated names.
    assert_eq!(unsafe { vmafx_filter_configure(f, w as i32, h as i32, c"nv12".as_ptr(), w as i32, h as i32, c"nv12".as_ptr()) }, 0, "{}", last_error(f));
    // Per surface: the buffer and how many frames on it vmafx still holds.
    let mut surfaces: Vec<[(Buffer, Arc<AtomicUsize>); 2]> = (0..pool)
        .map(|_| [0, 1].map(|_| (Buffer::vgem(vgem, l.len), Arc::new(AtomicUsize::new(0)))))
        .collect();
    let outputs_live = Arc::new(AtomicUsize::new(0));
    for (t, (r, d)) in frames.iter().enumerate() {
        let pair = &mut surfaces[t % pool];
        let mut handles = Vec::new();
        let mut signaller = None;
        let signalling = Arc::new(AtomicBool::new(false));
        for (k, pic) in [d, r].into_iter().enumerate() {
            let (buf, held) = &mut pair[k];
            let since = std::time::Instant::now();
            while held.load(Ordering::SeqCst) != 0 {
                assert!(since.elapsed() < Duration::from_secs(120), "frame {t}: vmafx never released the frame on surface {}", t % pool);
                std::thread::sleep(Duration::from_millis(5));
            }
            if k == 0 {
                let (fence, flag) = (buf.attach_fence(), signalling.clone());
                signaller = Some(std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(50));
                    flag.store(true, Ordering::SeqCst);
                    fence.signal();
                }));
            }
            l.write(buf, pic);
            let (at, len) = (buf.bytes_mut().as_mut_ptr() as usize, buf.len);
            let poison = Box::new(move || {
                // SAFETY: the surface's mapping (`len` bytes at `at`) lives
                // until the run's end, after every frame is released.
                let bytes = unsafe { std::slice::from_raw_parts_mut(at as *mut u8, len) };
                for (i, b) in bytes.iter_mut().enumerate() {
                    *b = (i * 13 + 7) as u8;
                }
            });
            handles.push(host_frame_with(held, None, Some(l.av_drm(buf)), Some(poison)));
        }
        let out = host_frame(&outputs_live, None, None);
        let (mf, rf) = (vmafx_frame(handles[0], w, h, c"nv12"), vmafx_frame(handles[1], w, h, c"nv12"));
        // SAFETY: filled frames whose descriptors live as long as their handles.
        let ret = unsafe { vmafx_filter_push(f, &mf, &rf, out as *mut _) };
        assert_eq!(ret, 0, "frame {t}: {}", last_error(f));
        assert!(signalling.load(Ordering::SeqCst), "frame {t}: the push did not wait for the distorted surface's fence");
        signaller.unwrap().join().unwrap();
    }
    let outputs = finish_and_pop(f, frames.len());
    // SAFETY: a live filter.
    let (scored, device_frames, copies) = unsafe { (vmafx_filter_frames_scored(f), vmafx_filter_device_frames(f), vmafx_filter_host_copies(f)) };
    assert_eq!(scored, frames.len() as u64);
    before_free();
    // SAFETY: freed once.
    unsafe { vmafx_filter_free(f) };
    for (k, (_, held)) in surfaces.iter().flatten().enumerate() {
        assert_eq!(held.load(Ordering::SeqCst), 0, "surface {k}: a frame handed over was never released");
    }
    assert_eq!(outputs_live.load(Ordering::SeqCst), 0);
    (outputs, device_frames, copies)
}

/// `vmafx=device=hip` on DRM_PRIME frames (VAAPI's nv12 layout, real vgem
/// dma-bufs under unsignalled fences): every per-frame value equals the CPU
/// path's on the same surfaces as f64 bits; every frame went to the (fake)
/// HIP device, none through host memory; each surface of the pool was
/// imported once, its planes mapped at their offsets, and destroyed only
/// once the filter (its frames context) was freed, after its buffers.
#[test]
fn vm_filter_device_hip_scores_like_the_cpu_path() {
    if !in_vm() {
        return;
    }
    let vgem = Vgem::open();
    let (n, pool) = (3, 2);
    let frames = synth::clip(Chroma::Yuv420, 8, 34, 33, n, 41);
    let (want, on_device, _) = filter_run(&vgem, None, &frames, pool, || {});
    assert_eq!(on_device, 0, "the CPU path");
    assert!(want[0].iter().any(|(k, _)| k == "lavfi.vmafx.vmaf") && want[0].iter().any(|(k, _)| k.contains("motion")), "{want:?}");
    let fake = Fake::get();
    let before = fake.log().len();
    let mut log_at_free = String::new();
    let (got, on_device, copies) = filter_run(&vgem, Some(c"hip"), &frames, pool, || log_at_free = fake.log()[before..].to_string());
    assert_eq!(got, want, "device=hip differs from the CPU path (bits)");
    assert_eq!((on_device, copies), (2 * n as u64, 0), "every frame imported on the device, none copied through the host");
    let exts = imported(&log_at_free);
    assert_eq!(exts.len(), 2 * pool, "each surface imported once, not per frame:\n{log_at_free}");
    assert!(!log_at_free.contains("destroy"), "imports destroyed while the filter lives:\n{log_at_free}");
    let log = fake.log()[before..].to_string();
    no_violations(&log);
    let l = Nv12::new(34, 33);
    for ext in &exts {
        let lines = lines_of(&log, ext);
        assert!(lines.contains(&format!("map ext={ext} offset={Y_AT} size={}", l.ypitch * (l.h - 1) + l.w).as_str()), "luma not mapped at its offset: {lines:?}");
        let destroy = lines.iter().position(|l| l.starts_with("destroy")).unwrap_or_else(|| panic!("never destroyed: {lines:?}"));
        assert_eq!(destroy, lines.len() - 1, "destroyed before its last use: {lines:?}");
    }
    eprintln!("device=hip: {n} frames bit-exact with the CPU path, {} surfaces imported once each", exts.len());
}

/// A refused DRM_PRIME frame under `device=hip` fails the push with the CPU
/// path's message (the lane named as itself), imports nothing, and releases
/// both frames.
#[test]
fn vm_filter_device_hip_refuses_as_the_cpu_path() {
    if !in_vm() {
        return;
    }
    let vgem = Vgem::open();
    let l = Nv12::new(32, 16);
    let pic = &synth::clip(Chroma::Yuv420, 8, l.w, l.h, 1, 9)[0].0;
    let mut buf = Buffer::vgem(&vgem, l.len);
    l.write(&mut buf, pic);
    let fake = Fake::get();
    let before = fake.log().len();
    let mut messages = Vec::new();
    for device in [None, Some(c"hip:0")] {
        let live = Arc::new(AtomicUsize::new(0));
        let f = new_filter(c"version=vmaf_v0.6.1", 2, 1_000_000, device).expect("vmafx_filter_new");
        // SAFETY: a live filter, NUL-terminated names.
        assert_eq!(unsafe { vmafx_filter_configure(f, 32, 16, c"nv12".as_ptr(), 32, 16, c"nv12".as_ptr()) }, 0, "{}", last_error(f));
        let (mut tiled, fd) = l.av_drm(&buf);
        tiled.objects[0].format_modifier = I915_FORMAT_MOD_X_TILED;
        let mh = host_frame(&live, None, Some((tiled, fd)));
        let rh = host_frame(&live, None, Some(l.av_drm(&buf)));
        let out = host_frame(&live, None, None);
        let (mf, rf) = (vmafx_frame(mh, 32, 16, c"nv12"), vmafx_frame(rh, 32, 16, c"nv12"));
        // SAFETY: filled frames whose descriptors live as long as their handles.
        assert!(unsafe { vmafx_filter_push(f, &mf, &rf, out as *mut _) } < 0, "a tiled surface must be refused");
        messages.push(last_error(f));
        // SAFETY: a live filter, freed once.
        unsafe { vmafx_filter_free(f) };
        assert_eq!(live.load(Ordering::SeqCst), 0, "{device:?}: the frames of a refused push are released");
    }
    eprintln!("refused: {messages:?}");
    assert!(messages[0].contains("main frame 0 (drm_prime nv12)") && messages[0].contains("DRM_FORMAT_MOD_LINEAR"), "{}", messages[0]);
    assert_eq!(messages[1].replace("the GPU lanes read", "the CPU device reads"), messages[0]);
    assert!(imported(&fake.log()[before..]).is_empty(), "a refused frame was imported");
}

/// `device=hip` where it cannot score: a HIP device the runtime lacks fails
/// at init naming it; CUDA frames beside a HIP device fail at configure.
fn filter_refuses_what_it_cannot_score_on_hip() {
    let e = new_filter(c"version=vmaf_v0.6.1", 0, 0, Some(c"hip:1")).expect_err("the fake has one device");
    assert!(e.starts_with("device: device=hip:1: HIP device 1 cannot be used here: "), "{e}");
    let f = new_filter(c"version=vmaf_v0.6.1", 0, 0, Some(c"hip")).expect("device=hip on the fake");
    // SAFETY: a live filter; the CUDA context is never used (refused first).
    unsafe {
        assert_eq!(vmafx_filter_set_cuda_device(f, 1, 0xc1 as *mut _, std::ptr::null_mut()), 0, "{}", last_error(f));
        assert!(vmafx_filter_configure(f, 64, 48, c"nv12".as_ptr(), 64, 48, c"nv12".as_ptr()) < 0);
    }
    let e = last_error(f);
    assert!(e.contains("device=hip:0, but the reference input is CUDA frames"), "{e}");
    // SAFETY: freed once.
    unsafe { vmafx_filter_free(f) };
}

#[test]
fn child_filter_refuses_what_it_cannot_score_on_hip() {
    if in_child() {
        filter_refuses_what_it_cannot_score_on_hip();
    }
}
