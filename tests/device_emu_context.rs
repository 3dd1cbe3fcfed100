//! Whole scoring contexts on an emulated GPU, checked against the CPU
//! context on a machine without a GPU: `GpuDevice::from_backend` puts the
//! kernel emulator (tests/device_emu/kernel_emu.cpp, the kernels of
//! kernels/ built as host C++) behind each lane, and a context on such
//! lanes (0 and 2 worker threads) must write every value, aggregate and
//! pooled score the CPU context writes, as the same bits: host pictures
//! (copied once per frame per picture), device pictures (read in place
//! after their ready events), mixed pairs; and refuse what it cannot read.
//!
//! Needs a C++20 compiler (`c++`, or $CXX); missing, it skips unless
//! VMAFX_REQUIRE_GPU_COMPILERS=1.

#[path = "common/synth.rs"]
#[allow(dead_code)]
mod synth;
#[path = "common/contexts.rs"]
mod contexts;

use contexts::{add_features, assert_same, host, score, Clip};
use std::collections::HashMap;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use vmafx::device::gpu::engine::{Backend, DevPlane};
use vmafx::device::gpu::kernels::KernelSource;
use vmafx::device::gpu::{GpuDevice, StreamWait};
use vmafx::device::{DeviceFrame, DeviceInfo, DeviceKind, DeviceMemoryId, FenceKind, MemoryKind};
use vmafx::engine::{Context, ContextConfig, PictureSource};
use vmafx::feature::FeatureOptions;
use vmafx::picture::{Chroma, OwnedPicture, Picture};

// ---- The emulated device: one library per process, one Backend per lane ----
type Launch = unsafe extern "C" fn(i32, u32, u32, *mut *mut c_void) -> i32;
type Find = unsafe extern "C" fn(*const std::ffi::c_char) -> i32;

/// The emulator library, built once per test process.
struct EmuLib {
    launch: Launch,
    find: Find,
    _lib: libloading::Library,
}

/// One lane's emulated device: its own allocations; launches go to the one
/// library, one at a time (its thread pool runs one block at a time).
struct Emulator {
    lib: &'static EmuLib,
    memory: HashMap<u64, Vec<u64>>,
    /// Events waited on (`stream_wait`), shared with the test.
    waited: Arc<Mutex<Vec<u64>>>,
}

static EMU_LIB: OnceLock<Option<EmuLib>> = OnceLock::new();
static EMU_LAUNCH: Mutex<()> = Mutex::new(());

fn build_emulator() -> Option<Emulator> {
    let lib = EMU_LIB.get_or_init(build_library).as_ref()?;
    Some(Emulator {
        lib,
        memory: HashMap::new(),
        waited: Arc::default(),
    })
}

fn build_library() -> Option<EmuLib> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("vmafx_kernel_emu_{}.so", std::process::id()));
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let status = std::process::Command::new(&cxx)
        .args([
            "-std=c++20",
            "-O2",
            "-shared",
            "-fPIC",
            "-pthread",
            "-Wall",
            "-Werror",
        ])
        .arg("-I")
        .arg(root.join("kernels"))
        .arg(root.join("tests/device_emu/kernel_emu.cpp"))
        .arg("-o")
        .arg(&out)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{cxx} failed to build the kernel emulator: {s}"),
        Err(e) => {
            let required = std::env::var("VMAFX_REQUIRE_GPU_COMPILERS").is_ok_and(|v| v == "1");
            assert!(!required, "no C++ compiler ({cxx}): {e}");
            eprintln!("SKIP: no C++ compiler ({cxx}): {e}");
            return None;
        }
    }
    // SAFETY: our own library, built just now.
    let lib = unsafe { libloading::Library::new(&out) }.unwrap();
    // SAFETY: kernel_emu.cpp defines vx_emu_launch with this signature.
    let launch = unsafe { *lib.get::<Launch>(b"vx_emu_launch\0").unwrap() };
    // SAFETY: kernel_emu.cpp defines vx_emu_find with this signature.
    let find = unsafe { *lib.get::<Find>(b"vx_emu_find\0").unwrap() };
    std::fs::remove_file(&out).ok();
    Some(EmuLib {
        launch,
        find,
        _lib: lib,
    })
}

impl Backend for Emulator {
    type Function = i32;
    fn load(&mut self, kernel: &KernelSource) -> vmafx::Result<Vec<i32>> {
        Ok(kernel
            .entries
            .iter()
            .map(|entry| {
                let name = std::ffi::CString::new(*entry).unwrap();
                // SAFETY: a NUL-terminated name.
                let id = unsafe { (self.lib.find)(name.as_ptr()) };
                assert!(
                    id >= 0,
                    "{}: no emulation for entry {entry} (add it to kernel_emu.cpp)",
                    kernel.name
                );
                id
            })
            .collect())
    }
    fn alloc(&mut self, bytes: usize) -> vmafx::Result<u64> {
        let buf = vec![0xa5a5_a5a5_a5a5_a5a5u64; bytes.div_ceil(8)];
        let ptr = buf.as_ptr() as u64;
        self.memory.insert(ptr, buf);
        Ok(ptr)
    }
    fn free(&mut self, ptr: u64) {
        assert!(
            self.memory.remove(&ptr).is_some(),
            "free of unknown {ptr:#x}"
        );
    }
    fn upload(&mut self, dst: u64, src: &[u8]) -> vmafx::Result<()> {
        let buf = self.memory.get_mut(&dst).expect("upload to an allocation");
        assert!(src.len() <= buf.len() * 8);
        // SAFETY: buf has at least src.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), buf.as_mut_ptr().cast(), src.len()) };
        Ok(())
    }
    fn download(&mut self, dst: &mut [u8], src: u64) -> vmafx::Result<()> {
        let buf = &self.memory[&src];
        assert!(dst.len() <= buf.len() * 8);
        // SAFETY: buf has at least dst.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr().cast(), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }
    unsafe fn launch(
        &mut self,
        f: i32,
        grid: (u32, u32),
        args: &mut [*mut c_void],
    ) -> vmafx::Result<()> {
        let _one_at_a_time = EMU_LAUNCH.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: args point at the kernel's argument values (engine.rs).
        assert_eq!(
            unsafe { (self.lib.launch)(f, grid.0, grid.1, args.as_mut_ptr()) },
            0
        );
        Ok(())
    }
    fn synchronize(&mut self) -> vmafx::Result<()> {
        Ok(())
    }
}

impl StreamWait for Emulator {
    fn stream_wait(&mut self, event: u64) -> vmafx::Result<()> {
        // Launches run to completion before they return: nothing is pending.
        self.waited.lock().unwrap().push(event);
        Ok(())
    }
}

// ---- Whole contexts on emulated lanes ----

/// The memory an emulated lane reads in place: its "device pointers" are
/// host addresses.
const EMU_MEMORY: DeviceMemoryId = DeviceMemoryId {
    kind: DeviceKind::Cuda,
    context: 0xe1a7_0000,
};

fn emulated_lane(waited: &Arc<Mutex<Vec<u64>>>) -> vmafx::Result<GpuDevice> {
    let mut emu = build_emulator().expect("the emulator built");
    emu.waited = Arc::clone(waited);
    let info = DeviceInfo {
        kind: DeviceKind::Cuda,
        index: 0,
        name: "kernel emulator".into(),
        arch: "host C++".into(),
        memory_bytes: 0,
        memory_kinds: vec![MemoryKind::Host, MemoryKind::CudaDevice],
        fence_kinds: vec![FenceKind::None, FenceKind::Stream],
    };
    GpuDevice::from_backend(emu, info, EMU_MEMORY)
}

/// A picture with no host planes, only device ones (for the emulator,
/// the addresses of an [`OwnedPicture`]'s planes).
struct DevicePicture {
    _owner: OwnedPicture,
    frame: DeviceFrame,
}

impl PictureSource for DevicePicture {
    fn host(&self) -> Option<Picture<'_>> {
        None
    }
    fn device_frame(&self) -> Option<&DeviceFrame> {
        Some(&self.frame)
    }
}

fn on_device(p: &OwnedPicture, memory: DeviceMemoryId, ready: Option<u64>) -> Arc<dyn PictureSource> {
    let owner = p.clone();
    let view = owner.view();
    let planes = (0..view.plane_count())
        .map(|i| {
            let plane = view.plane(i);
            DevPlane {
                ptr: plane.data().as_ptr() as u64,
                pitch: plane.stride(),
                width: plane.width(),
                height: plane.height(),
                bytes_per_sample: plane.bytes_per_sample(),
            }
        })
        .collect();
    let frame = DeviceFrame {
        memory,
        format: view.format(),
        width: view.width(),
        height: view.height(),
        planes,
        ready,
    };
    // The planes are heap buffers: moving their owner keeps them in place.
    Arc::new(DevicePicture { _owner: owner, frame })
}

fn cpu_context(frames: &Clip, threads: usize, motion: bool) -> Context {
    let cfg = ContextConfig { threads, ..Default::default() };
    score(Context::new(cfg).unwrap(), frames, motion, host).unwrap()
}

fn emulated_context(threads: usize, waited: &Arc<Mutex<Vec<u64>>>) -> Context {
    let cfg = ContextConfig { threads, ..Default::default() };
    Context::with_lanes(cfg, || emulated_lane(waited)).unwrap()
}

#[test]
fn emulated_context_equals_the_cpu_context() {
    if build_emulator().is_none() {
        return;
    }
    let started = std::time::Instant::now();
    let mut values = 0;
    // Odd sizes, every chroma layout, 8 to 16 bits; 1x2 4:2:0 has empty
    // chroma planes (PSNR alone: motion needs 3x3).
    // The emulator runs a block at ~10 ms on a busy machine: small frames,
    // and 2 threads on two of them.
    let cases = [
        (Chroma::Yuv420, 8, 21, 9, true, 2),
        (Chroma::Yuv422, 10, 19, 7, true, 0),
        (Chroma::Yuv444, 12, 17, 5, true, 0),
        (Chroma::Yuv420, 16, 23, 9, true, 2),
        (Chroma::Yuv400, 8, 16, 6, true, 0),
        (Chroma::Yuv420, 8, 1, 2, false, 0),
    ];
    for (chroma, bits, w, h, motion, max_threads) in cases {
        let frames = synth::clip(chroma, bits, w, h, 3, 0x5eed ^ w as u64);
        let thread_counts = if max_threads > 0 { vec![0, max_threads] } else { vec![0] };
        for threads in thread_counts {
            let what = format!("{w}x{h} {} {bits}-bit, {threads} threads", chroma.name());
            let cpu = cpu_context(&frames, threads, motion);
            let waited = Arc::default();
            let dev = score(emulated_context(threads, &waited), &frames, motion, host).unwrap();
            assert_eq!(dev.device_memory(), Some(EMU_MEMORY));
            assert_eq!(cpu.device_memory(), None);
            values += assert_same(&cpu, &dev, &what);
            if threads == 0 {
                // One lane: each frame copies its reference and distorted
                // pictures; the previous reference is still on the lane.
                assert_eq!(dev.host_uploads(), 2 * frames.len() as u64, "{what}: host copies");
            }
            assert!(waited.lock().unwrap().is_empty(), "{what}: host pictures have no events");
        }
    }
    eprintln!("{values} values equal ({:.1} s)", started.elapsed().as_secs_f64());
}

#[test]
fn emulated_context_reads_device_pictures_in_place() {
    if build_emulator().is_none() {
        return;
    }
    let frames = synth::clip(Chroma::Yuv420, 10, 19, 7, 3, 0xd1ce);
    let cpu = cpu_context(&frames, 0, true);
    let event = |i: usize, which: &str| 0xe7e0_0000 + 2 * i as u64 + u64::from(which == "distorted");

    // Both pictures on the device, each with a ready event: no copy, every
    // event waited on before the reads.
    for threads in [0, 2] {
        let waited = Arc::default();
        let dev = score(emulated_context(threads, &waited), &frames, true, |p, i, which| {
            on_device(p, EMU_MEMORY, Some(event(i, which)))
        })
        .unwrap();
        assert_same(&cpu, &dev, &format!("device pictures, {threads} threads"));
        assert_eq!(dev.host_uploads(), 0, "device pictures are read in place");
        let mut waited = waited.lock().unwrap().clone();
        waited.sort();
        waited.dedup();
        let mut want: Vec<u64> = (0..frames.len())
            .flat_map(|i| [event(i, "reference"), event(i, "distorted")])
            .collect();
        want.sort();
        assert_eq!(waited, want, "every ready event waited on");
    }

    // Mixed pairs: a host reference (copied) and a device distorted picture.
    let waited = Arc::default();
    let dev = score(emulated_context(0, &waited), &frames, true, |p, i, which| {
        if which == "reference" {
            host(p, i, which)
        } else {
            on_device(p, EMU_MEMORY, None)
        }
    })
    .unwrap();
    assert_same(&cpu, &dev, "host reference, device distorted");
    assert_eq!(dev.host_uploads(), frames.len() as u64, "only the references are copied");
}

#[test]
fn emulated_context_refuses_what_it_cannot_read() {
    if build_emulator().is_none() {
        return;
    }
    let frames = synth::clip(Chroma::Yuv420, 8, 9, 7, 1, 7);
    let (r, d) = &frames[0];
    let waited = Arc::default();

    // A device picture of another context: the error names both memories.
    let other = DeviceMemoryId {
        kind: DeviceKind::Cuda,
        context: 0xbad0,
    };
    let mut ctx = emulated_context(0, &waited);
    add_features(&mut ctx, true).unwrap();
    let err = ctx
        .push(host(r, 0, ""), on_device(d, other, None))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("0xbad0") && err.contains("0xe1a70000") && err.contains("distorted"),
        "{err}"
    );

    // An extractor without a device twin is refused by name, not run on
    // the CPU behind the caller's back.
    let mut ctx = emulated_context(0, &waited);
    ctx.use_feature("vif", FeatureOptions::new()).unwrap();
    let big = synth::clip(Chroma::Yuv420, 8, 32, 32, 1, 7);
    let err = ctx
        .push(host(&big[0].0, 0, ""), host(&big[0].1, 0, ""))
        .unwrap_err()
        .to_string();
    assert!(err.contains("vif") && err.contains("no device twin"), "{err}");

    // A CPU context refuses a device picture.
    let mut ctx = Context::new(ContextConfig::default()).unwrap();
    add_features(&mut ctx, true).unwrap();
    let err = ctx
        .push(on_device(r, EMU_MEMORY, None), host(d, 0, ""))
        .unwrap_err()
        .to_string();
    assert!(err.contains("scores on the CPU"), "{err}");
}
