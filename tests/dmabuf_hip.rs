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
//! The fake logs every import, map, free and destroy, and reports misuse as
//! VIOLATION lines; the tests read its log.

#[path = "common/synth.rs"]
#[allow(dead_code)]
mod synth;
#[path = "common/vm_bed.rs"]
mod vm_bed;

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use nix::libc;
use vm_bed::*;
use vmafx::device::gpu::engine::{Backend, DeviceMemory, EventRef, Pitched};
use vmafx::device::gpu::lane::GpuLane;
use vmafx::device::DeviceKind;
use vmafx::engine::{Context, ContextConfig, DeviceChoice, PictureSource};
use vmafx::feature::FeatureOptions;
use vmafx::import::cpu::CpuDevice;
use vmafx::import::gpu::{reads_queued, wait_ready, GpuImporter};
use vmafx::import::{DrmFourcc, DrmModifier, FrameDescriptor, ImportErrorKind, Layer, Memory, Object, PlaneRef};
use vmafx::model::{Model, ModelConfig};
use vmafx::picture::{Chroma, OwnedPicture};

/// Set for the child runs on the fake.
const CHILD: &str = "VMAFX_FAKE_HIP_CHILD";
const ROCM7: &str = "70000000";
const ROCM52: &str = "50221153";

fn in_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

fn in_vm() -> bool {
    vm_bed::in_vm(&["/dev/dri/card0", "/dev/udmabuf"])
}

/// Builds the fake into a folder of its own (once per process) and links
/// hiprtc's and comgr's names to it.
fn fake_dir() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hip-fake-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join("libamdhip64.so.7");
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
        let required = std::env::var("VMAFX_REQUIRE_GPU_COMPILERS").is_ok_and(|v| v == "1");
        let status = std::process::Command::new(&cxx)
            .args(["-std=c++20", "-O2", "-shared", "-fPIC", "-pthread", "-Wall", "-Werror", "-fvisibility=hidden"])
            .arg("-I").arg(root.join("kernels"))
            .arg("-I").arg(root.join("tests/device_emu"))
            .arg(root.join("tests/hip_fake/fake_hip.cpp"))
            .arg("-o").arg(&lib)
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => panic!("{cxx} failed to build the fake libamdhip64: {s}"),
            Err(e) => {
                assert!(!required, "no C++ compiler ({cxx}): {e}");
                eprintln!("SKIP: no C++ compiler ({cxx}): {e}");
                return None;
            }
        }
        for name in ["libhiprtc.so.7", "libamd_comgr.so.3", "libamd_comgr.so.2"] {
            let link = dir.join(name);
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink("libamdhip64.so.7", &link).unwrap();
        }
        Some(dir)
    })
    .clone()
}

/// The guest's (or child's) environment for the fake.
fn fake_env(dir: &Path, version: &str) -> Vec<(String, String)> {
    vec![
        (CHILD.into(), "1".into()),
        ("LD_LIBRARY_PATH".into(), dir.display().to_string()),
        ("VMAFX_FAKE_HIP_VERSION".into(), version.into()),
        ("VMAFX_KERNEL_CACHE".into(), "off".into()),
        ("VMAFX_HIP_LIB".into(), String::new()),
        ("VMAFX_HIPRTC_LIB".into(), String::new()),
        ("VMAFX_COMGR_LIB".into(), String::new()),
    ]
}

#[test]
fn fake_hip_runs_the_import_through_the_loader() {
    if in_child() || std::env::var_os(IN_VM).is_some() {
        return;
    }
    let Some(dir) = fake_dir() else { return };
    for version in [ROCM7, ROCM52] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["child_", "--test-threads", "1", "--nocapture"])
            .envs(fake_env(&dir, version))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        eprintln!("--- the fake as HIP_VERSION {version}:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && stdout.contains("test result: ok. 3 passed"), "the child tests on the fake (HIP_VERSION {version}) failed");
    }
}

#[test]
fn runs_the_hip_dmabuf_tests_in_a_vm() {
    if in_child() || std::env::var_os(IN_VM).is_some() {
        return;
    }
    let Some(dir) = fake_dir() else { return };
    let env = fake_env(&dir, ROCM7).into_iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| format!("{k}={v}")).collect();
    run_in_vm(VmRun { filter: "vm_", threads: 1, expected: 3, env });
}

// ------------------------------------------------------------ the fake

/// The fake's test controls, from the library the lane loaded.
struct Fake {
    lib: libloading::Library,
}

impl Fake {
    fn get() -> Fake {
        vmafx::device::gpu::hip::runtime().expect("the fake libamdhip64 on LD_LIBRARY_PATH");
        // SAFETY: already loaded by the lane's loader: the same handle.
        let lib = unsafe { libloading::Library::new("libamdhip64.so.7") }.unwrap();
        // SAFETY: exported by fake_hip.cpp with this signature.
        assert!(unsafe { lib.get::<unsafe extern "C" fn() -> *const libc::c_char>(b"vx_fake_hip_log\0") }.is_ok(), "libamdhip64.so.7 is not the fake");
        Fake { lib }
    }
    fn log(&self) -> String {
        // SAFETY: as in get; the string is copied before the next call.
        unsafe {
            let f = self.lib.get::<unsafe extern "C" fn() -> *const libc::c_char>(b"vx_fake_hip_log\0").unwrap();
            std::ffi::CStr::from_ptr(f()).to_string_lossy().into_owned()
        }
    }
    fn blocked_event(&self) -> u64 {
        // SAFETY: as in get.
        unsafe { self.lib.get::<unsafe extern "C" fn() -> u64>(b"vx_fake_hip_blocked_event\0").unwrap()() }
    }
    fn signal(&self, event: u64) {
        // SAFETY: as in get; a blocked event of the fake.
        unsafe { self.lib.get::<unsafe extern "C" fn(u64)>(b"vx_fake_hip_signal\0").unwrap()(event) }
    }
}

/// Log lines that mention `ext`.
fn lines_of<'a>(log: &'a str, ext: &str) -> Vec<&'a str> {
    log.lines().filter(|l| l.contains(&format!("ext={ext}"))).collect()
}

/// Every external memory the log shows imported.
fn imported(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| l.strip_prefix("import ext="))
        .map(|rest| rest.split(' ').next().unwrap().to_string())
        .collect()
}

fn no_violations(log: &str) {
    let bad: Vec<&str> = log.lines().filter(|l| l.starts_with("VIOLATION")).collect();
    assert!(bad.is_empty(), "the fake saw misuse:\n{}", bad.join("\n"));
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

const HIP0: DeviceChoice = DeviceChoice::Gpu { kind: DeviceKind::Hip, index: 0 };

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
    let cpu = CpuDevice::new(true);
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
    reads_queued(frame.frame(), &mut reader).unwrap();
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
    let cpu = CpuDevice::new(true);
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
