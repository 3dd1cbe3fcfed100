//! Device-frame import on a real GPU (CUDA): frames in `cuMemAlloc`'d
//! buffers and `CUarray`s, at odd offsets and pitches, imported through
//! src/import/gpu.rs and read by the GPU engine; values equal to the CPU,
//! no host copies, one import shared by two contexts and released once
//! after both, and the stream order of acquire, library stream, readers and
//! release checked against a producer that is still writing (a kernel that
//! spins before it writes) and readers still reading (a spin before their
//! read). The emulated twins of these tests are in tests/device/emu.rs.
//!
//! Skips without a CUDA device, unless VMAFX_REQUIRE_GPU=cuda. Run on a
//! GPU host through `xtask twins run`.

use crate::support::device_planes;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use vmafx::{FrameDescriptor, PictureSource, PlaneView};
use vmafx::internals::device::gpu::backend::{Args, Backend, DevPlane, DeviceEvent, DeviceMemory, KernelRunner, EventRef, Pitched, Scratch};
use vmafx::internals::device::gpu::cuda::{self, sys::*, ContextGuard};
use vmafx::internals::device::gpu::kernels::KernelSource;
use vmafx::internals::device::gpu::lane::GpuLane;
use vmafx::internals::device::{self, DeviceKind};
use vmafx::internals::import::gpu::{wait_ready, GpuImporter};
use vmafx::internals::import::{AcquireFence, DrmFourcc, DrmModifier, HostFence, Layer, Memory, Object, PlaneRef, ReleaseFence};

use device_planes::{device_bytes, gpu_required, layout, read_plane, LAYOUT_FORMATS};

/// Test-only kernels: a producer (or reader) that is still busy, then
/// writes. One block; `spin` clock cycles first (~0.5 s at 1e9 on an H200).
const TEST_KERNELS: KernelSource = KernelSource {
    name: "device_import_test.cu",
    source: r#"
#include "vmafx_compat.h"
__device__ void vx_test_spin(long long spin) {
    if (spin > 0) {
        long long t0 = clock64();
        while (clock64() - t0 < spin) { }
    }
}
VMAFX_KERNEL void test_spin_copy(const vx_u8 *src, vx_u8 *dst, long long n, long long spin) {
    vx_test_spin(spin);
    __syncthreads();
    for (long long i = threadIdx.x; i < n; i += VMAFX_BLOCK) dst[i] = src[i];
}
VMAFX_KERNEL void test_spin_fill(vx_u8 *dst, long long n, int value, long long spin) {
    vx_test_spin(spin);
    __syncthreads();
    for (long long i = threadIdx.x; i < n; i += VMAFX_BLOCK) dst[i] = (vx_u8)value;
}
"#,
    entries: &["test_spin_copy", "test_spin_fill"],
};

const SPIN: i64 = 1_000_000_000;

fn gpu() -> bool {
    let required = gpu_required("cuda");
    match device::count(DeviceKind::Cuda) {
        Ok(n) if n > 0 => true,
        Ok(_) => {
            assert!(!required, "VMAFX_REQUIRE_GPU=cuda but no CUDA device");
            eprintln!("SKIP: no CUDA device");
            false
        }
        Err(e) => {
            assert!(!required, "VMAFX_REQUIRE_GPU=cuda: {e}");
            eprintln!("SKIP: {e}");
            false
        }
    }
}

/// A plane of `want` as host bytes, for the CPU functions.
fn host_plane(rows: &[Vec<u16>], bits: u8) -> (Vec<u8>, usize) {
    let bps = if bits > 8 { 2 } else { 1 };
    let (w, h) = (rows[0].len(), rows.len());
    let mut out = vec![0u8; w * bps * h + 2];
    for (y, r) in rows.iter().enumerate() {
        for (x, &v) in r.iter().enumerate() {
            let at = y * w * bps + x * bps;
            if bps == 1 {
                out[at] = v as u8;
            } else {
                out[at..at + 2].copy_from_slice(&v.to_ne_bytes());
            }
        }
    }
    (out, w * bps)
}

fn reader() -> KernelRunner<GpuLane> {
    KernelRunner::new(GpuLane::open(DeviceKind::Cuda, 0).unwrap()).unwrap()
}

/// Host-to-device copies queued by the importer's lane and the readers'.
fn uploads(importer: &GpuImporter<GpuLane>, readers: &[&KernelRunner<GpuLane>]) -> u64 {
    importer.with_backend(|lane| lane.uploads()) + readers.iter().map(|r| r.backend().uploads()).sum::<u64>()
}

#[test]
fn imported_layouts_equal_the_cpu() {
    if !gpu() {
        return;
    }
    let importer = GpuImporter::cuda(0, true).unwrap();
    let mut setup = reader();
    let mut engine = reader();
    let mut cases = 0;
    let mut y_row = Vec::new();
    for format in LAYOUT_FORMATS {
        for (w, h) in [(17, 9), (333, 127), (1920, 1080), (1, 1)] {
            for (offset, pad) in [(0, 0), (6, 3), (4098, 70)] {
                let seed = (w * 7919 + h * 31 + offset * 3 + pad) as u64 ^ format as u64;
                let (a, b) = (layout(format, w, h, offset, pad, seed), layout(format, w, h, offset, pad, !seed));
                let what = format!("{format} {w}x{h} offset {offset} pad {pad} seed {seed:#x}");
                let (ba, bb) = (device_bytes(&mut setup, &a.bytes), device_bytes(&mut setup, &b.bytes));
                let (pa, pb) = (ba.ptr(), bb.ptr());
                let copies = uploads(&importer, &[&engine]);
                let fa = importer.import(a.descriptor(&what, Memory::DevicePointer(pa), 0)).unwrap_or_else(|r| panic!("{what}: {r}"));
                let fb = importer.import(b.descriptor(&what, Memory::DevicePointer(pb), 0)).unwrap_or_else(|r| panic!("{what}: {r}"));
                let (da, db) = (fa.device_frame().unwrap(), fb.device_frame().unwrap());
                wait_ready(da, engine.backend_mut()).unwrap();
                wait_ready(db, engine.backend_mut()).unwrap();
                for i in 0..3 {
                    let (pw, ph) = (a.want[i][0].len(), a.want[i].len());
                    let got = vmafx::internals::feature::psnr::gpu::sse_dev(&mut engine, da.planes[i], db.planes[i], pw, ph).unwrap();
                    let (ha, stride) = host_plane(&a.want[i], a.bits);
                    let (hb, _) = host_plane(&b.want[i], a.bits);
                    let bps = if a.bits > 8 { 2 } else { 1 };
                    let (va, vb) = (
                        PlaneView::new(&ha, stride, pw, ph, bps).unwrap(),
                        PlaneView::new(&hb, stride, pw, ph, bps).unwrap(),
                    );
                    let want = if bps == 1 {
                        vmafx::internals::feature::psnr::sse_u8(&va, &vb, pw, ph)
                    } else {
                        vmafx::internals::feature::psnr::sse_u16(&va, &vb, pw, ph)
                    };
                    assert_eq!(got, want, "{what}: SSE of plane {i}");
                    // Motion on frames of at least 8x8, as device_twins runs it.
                    if i == 0 && w >= 8 && h >= 8 {
                        let got = vmafx::internals::feature::motion::gpu::sad_dev(&mut engine, da.planes[0], db.planes[0], a.bits as u32).unwrap();
                        assert_eq!(got, vmafx::internals::feature::motion::sad_scalar(&va, &vb, a.bits as u32, &mut y_row), "{what}: motion");
                    }
                }
                assert_eq!(uploads(&importer, &[&engine]), copies, "{what}: a host copy");
                for i in 0..3 {
                    assert_eq!(read_plane(&mut engine, &da.planes[i]), a.want[i], "{what}: plane {i}");
                }
                if a.bits == 8 || a.bits == 16 {
                    assert_eq!(da.planes[0].ptr, pa + offset as u64, "{what}: luma read in place");
                }
                drop((fa, fb));
                drop((ba, bb));
                cases += 1;
            }
        }
    }
    println!("{cases} layouts: planes, SSE and motion equal to the CPU; 0 host copies");
}

/// A `CUarray` of `width` x `height` elements of `channels` x `bps` bytes,
/// holding `rows` (tight).
fn cu_array(lane: &GpuLane, width: usize, height: usize, channels: u32, bps: usize, rows: &[u8]) -> u64 {
    let api = cuda::driver().unwrap();
    // SAFETY: the lane's context lives while the guard does.
    let _g = unsafe { ContextGuard::push(api, lane.context().raw()) }.unwrap();
    let desc = CudaArrayDescriptor {
        width,
        height,
        format: if bps == 1 { 0x01 } else { 0x02 },
        num_channels: channels,
    };
    let mut array: CUarray = std::ptr::null_mut();
    // SAFETY: writes one handle.
    assert_eq!(unsafe { (api.cuArrayCreate_v2.unwrap())(&mut array, &desc) }, 0);
    let row_bytes = width * channels as usize * bps;
    let copy = CudaMemcpy2D {
        src_memory_type: CU_MEMORYTYPE_HOST,
        src_host: rows.as_ptr() as usize,
        src_pitch: row_bytes,
        dst_memory_type: CU_MEMORYTYPE_ARRAY,
        dst_array: array as usize,
        width_in_bytes: row_bytes,
        height,
        ..Default::default()
    };
    // SAFETY: rows holds height rows of row_bytes; synchronized below.
    unsafe {
        assert_eq!((api.cuMemcpy2DAsync_v2)(&copy, lane.stream()), 0);
        assert_eq!((api.cuStreamSynchronize)(lane.stream()), 0);
    }
    array as u64
}

#[test]
fn device_arrays_copied_out_equal_the_cpu() {
    if !gpu() {
        return;
    }
    let importer = GpuImporter::cuda(0, true).unwrap();
    let mut engine = reader();
    for (format, w, h) in [(DrmFourcc::Nv12, 333usize, 127usize), (DrmFourcc::P010, 17, 9), (DrmFourcc::P016, 1921, 1081)] {
        let l = layout(format, w, h, 0, 0, w as u64);
        let bps = if l.bits == 8 { 1 } else { 2 };
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let ypitch = l.planes[0].pitch as usize;
        let lane = engine.backend();
        let y = cu_array(lane, w, h, 1, bps, &l.bytes[..ypitch * h]);
        let uv = cu_array(lane, cw, ch, 2, bps, &l.bytes[ypitch * h..ypitch * h + 2 * cw * bps * ch]);
        let mut d = FrameDescriptor::new("array frame", w, h, l.bits);
        for a in [y, uv] {
            d.objects.push(Object { memory: Memory::DeviceArray(a), size: 0, modifier: DrmModifier::Linear });
        }
        let (one, two) = if bps == 1 { (DrmFourcc::R8, DrmFourcc::Gr88) } else { (DrmFourcc::R16, DrmFourcc::Gr1616) };
        d.layers.push(Layer { format: one, planes: vec![PlaneRef { object: 0, offset: 0, pitch: 0 }] });
        d.layers.push(Layer { format: two, planes: vec![PlaneRef { object: 1, offset: 0, pitch: 0 }] });
        let copies = uploads(&importer, &[&engine]);
        let frame = importer.import(d).unwrap();
        let f = frame.device_frame().unwrap();
        wait_ready(f, engine.backend_mut()).unwrap();
        for i in 0..3 {
            assert_eq!(read_plane(&mut engine, &f.planes[i]), l.want[i], "{format} array plane {i}");
        }
        assert_eq!(uploads(&importer, &[&engine]), copies);
        // A plane larger than its array: RANGE.
        let mut d = FrameDescriptor::new("too big", w + 2, h, l.bits);
        d.objects.push(Object { memory: Memory::DeviceArray(y), size: 0, modifier: DrmModifier::Linear });
        d.objects.push(Object { memory: Memory::DeviceArray(uv), size: 0, modifier: DrmModifier::Linear });
        d.layers.push(Layer { format: one, planes: vec![PlaneRef { object: 0, offset: 0, pitch: 0 }] });
        d.layers.push(Layer { format: two, planes: vec![PlaneRef { object: 1, offset: 0, pitch: 0 }] });
        let r = importer.import(d).expect_err("range");
        assert_eq!(r.error.kind, vmafx::internals::import::ImportErrorKind::Range, "{}", r.error);
    }
}

#[test]
fn extents_checked_against_the_allocation() {
    if !gpu() {
        return;
    }
    let importer = GpuImporter::cuda(0, false).unwrap();
    let mut setup = reader();
    let l = layout(DrmFourcc::Nv12, 333, 127, 6, 3, 1);
    let buffer = device_bytes(&mut setup, &l.bytes);
    let ptr = buffer.ptr();
    let mut d = l.descriptor("frame 9", Memory::DevicePointer(ptr), 0);
    // Chroma runs past the cuMemAlloc (by more than any rounding of it).
    d.layers[0].planes[1].offset += 8 << 20;
    let r = importer.import(d).expect_err("range");
    assert_eq!(r.error.kind, vmafx::internals::import::ImportErrorKind::Range, "{}", r.error);
    let mut d = l.descriptor("frame 9", Memory::DevicePointer(ptr), 0);
    d.objects[0].modifier = DrmModifier::I915_y_tiled;
    assert_eq!(importer.import(d).err().unwrap().error.kind, vmafx::internals::import::ImportErrorKind::NotSupported);
    drop(buffer);
}

#[test]
fn two_contexts_share_one_import_released_once_after_both() {
    if !gpu() {
        return;
    }
    let importer = GpuImporter::cuda(0, true).unwrap();
    let mut setup = reader();
    let (a, b) = (layout(DrmFourcc::P010, 1921, 1081, 2, 6, 3), layout(DrmFourcc::P010, 1921, 1081, 2, 6, 4));
    let (ba, bb) = (device_bytes(&mut setup, &a.bytes), device_bytes(&mut setup, &b.bytes));
    let (pa, pb) = (ba.ptr(), bb.ptr());
    let fence = HostFence::new();
    let called = Arc::new(AtomicUsize::new(0));
    let c = called.clone();
    let copies = uploads(&importer, &[]);
    let mut da = a.descriptor("reference 0", Memory::DevicePointer(pa), 0);
    da.release.push(ReleaseFence::Host(fence.clone()));
    let fa = importer
        .import_with(da, Some(Box::new(move || {
            c.fetch_add(1, Ordering::SeqCst);
        })))
        .map_err(|(r, _)| r)
        .unwrap();
    let fb = importer.import(b.descriptor("distorted 0", Memory::DevicePointer(pb), 0)).unwrap();
    let mut contexts = [reader(), reader()];
    let mut held = Vec::new();
    let mut sums = Vec::new();
    for e in contexts.iter_mut() {
        let (ra, rb) = (fa.clone(), fb.clone());
        let (x, y) = (ra.device_frame().unwrap(), rb.device_frame().unwrap());
        wait_ready(x, e.backend_mut()).unwrap();
        wait_ready(y, e.backend_mut()).unwrap();
        let mut s = Vec::new();
        for i in 0..3 {
            s.push(vmafx::internals::feature::psnr::gpu::sse_dev(e, x.planes[i], y.planes[i], x.planes[i].width, x.planes[i].height).unwrap());
        }
        ra.reads_queued(e.backend_mut()).unwrap();
        rb.reads_queued(e.backend_mut()).unwrap();
        sums.push(s);
        held.push((ra, rb));
    }
    assert_eq!(sums[0], sums[1]);
    assert_eq!(uploads(&importer, &[&contexts[0], &contexts[1]]), copies, "host copies while importing and scoring device frames");
    drop((fa, fb));
    held.pop();
    assert!(!fence.is_signalled(), "released with a context still holding the frame");
    assert_eq!(called.load(Ordering::SeqCst), 0);
    held.pop();
    assert!(fence.is_signalled());
    assert_eq!(called.load(Ordering::SeqCst), 1);
    drop((ba, bb));
}

#[test]
fn a_slow_producer_is_waited_for_on_the_device() {
    // The producer's kernel spins, then writes the frame, then its event is
    // recorded: imports that skip the acquire wait, or readers that do not
    // wait for the library stream, read the stale (zero) buffer instead.
    if !gpu() {
        return;
    }
    let importer = GpuImporter::cuda(0, true).unwrap();
    let mut producer = reader();
    let spin_copy = producer.kernel(&TEST_KERNELS, "test_spin_copy").unwrap();
    let mut engine = reader();
    for format in [DrmFourcc::Nv12, DrmFourcc::P010] {
        let l = layout(format, 333, 127, 6, 3, 21);
        let staged_buffer = device_bytes(&mut producer, &l.bytes);
        let target_buffer = device_bytes(&mut producer, &vec![0u8; l.bytes.len()]);
        let (staged, target) = (staged_buffer.ptr(), target_buffer.ptr());
        // Warm: the convert kernels are compiled at the first import, which
        // must not eat the producer's head start. Other content, so that
        // pooled buffers it leaves cannot pass for this frame's planes.
        let warm = layout(format, 333, 127, 6, 3, 99);
        let warm_buffer = device_bytes(&mut producer, &warm.bytes);
        let warm_ptr = warm_buffer.ptr();
        drop(importer.import(warm.descriptor("warm-up", Memory::DevicePointer(warm_ptr), 0)).unwrap());
        let event = producer.backend_mut().create_event().unwrap();
        let event_ref = EventRef::of(&event);
        let args = Args::new().ptr(staged).ptr(target).i64(l.bytes.len() as i64).i64(SPIN);
        // SAFETY: test_spin_copy (src, dst, n, spin); both buffers hold n bytes.
        unsafe { producer.launch(spin_copy, (1, 1), args) }.unwrap();
        producer.backend_mut().record_event(event_ref).unwrap();
        let mut d = l.descriptor("frame 1", Memory::DevicePointer(target), 0);
        d.acquire.push(AcquireFence::DeviceEvent(event.handle()));
        let t0 = std::time::Instant::now();
        let frame = importer.import(d).unwrap();
        // The producer spins ~0.5 s: an import that waited for it on the
        // host would take that long.
        assert!(t0.elapsed() < Duration::from_millis(250), "the import waited on the host for a device event");
        let f = frame.device_frame().unwrap();
        wait_ready(f, engine.backend_mut()).unwrap();
        for i in 0..3 {
            assert_eq!(read_plane(&mut engine, &f.planes[i]), l.want[i], "{format}: plane {i} read before the producer was done");
        }
        drop(frame);
        producer.backend_mut().synchronize().unwrap();
        drop(event);
        drop((staged_buffer, target_buffer, warm_buffer));
    }
}

#[test]
fn release_follows_the_last_reader() {
    // Two readers are still busy (a spin) when they queue their reads and
    // drop their references; the producer overwrites the buffer once the
    // release event says so. A release recorded at import (or before the
    // readers' work) lets the overwrite reach what they read.
    if !gpu() {
        return;
    }
    let importer = GpuImporter::cuda(0, false).unwrap();
    let mut producer = reader();
    let spin_fill = producer.kernel(&TEST_KERNELS, "test_spin_fill").unwrap();
    let l = layout(DrmFourcc::Nv12, 333, 127, 0, 3, 5);
    let buffer = device_bytes(&mut producer, &l.bytes);
    let ptr = buffer.ptr();
    let release = producer.backend_mut().create_event().unwrap();
    let mut d = l.descriptor("frame 2", Memory::DevicePointer(ptr), 0);
    d.release.push(ReleaseFence::DeviceEvent(release.handle()));
    let frame = importer.import(d).unwrap();
    let luma = frame.device_frame().unwrap().luma();
    let mut readers = Vec::new();
    for _ in 0..2 {
        let mut r = reader();
        let f = r.kernel(&TEST_KERNELS, "test_spin_fill").unwrap();
        let mut busy = Scratch::default();
        let scratch = r.scratch(&mut busy, 1).unwrap();
        let args = Args::new().ptr(scratch).i64(1).i32(0).i64(SPIN);
        // SAFETY: test_spin_fill (dst, n, value, spin); scratch has 1 byte.
        unsafe { r.launch(f, (1, 1), args) }.unwrap();
        let held = frame.clone();
        let df = held.device_frame().unwrap();
        wait_ready(df, r.backend_mut()).unwrap();
        let copy = r.backend_mut().alloc(luma.pitch * luma.height).unwrap();
        let src = Pitched { ptr: luma.ptr, pitch: luma.pitch };
        r.backend_mut().copy_2d(Pitched { ptr: copy.ptr(), pitch: luma.pitch }, src, luma.width, luma.height).unwrap();
        held.reads_queued(r.backend_mut()).unwrap();
        readers.push((r, copy, held, busy));
    }
    drop(frame);
    let mut engines = Vec::new();
    for (r, copy, held, busy) in readers {
        drop(held);
        engines.push((r, copy, busy));
    }
    // The producer's next frame goes into the same buffer after release.
    producer.backend_mut().wait_event(EventRef::of(&release)).unwrap();
    let args = Args::new().ptr(ptr).i64(l.bytes.len() as i64).i32(0xee).i64(0);
    // SAFETY: test_spin_fill over the producer's buffer (n bytes).
    unsafe { producer.launch(spin_fill, (1, 1), args) }.unwrap();
    producer.backend_mut().synchronize().unwrap();
    for (mut r, copy, busy) in engines {
        let read = read_plane(&mut r, &DevPlane { ptr: copy.ptr(), ..luma });
        assert_eq!(read, l.want[0], "a reader saw the producer's next frame: released before its read");
        drop((copy, busy));
    }
    drop(release);
    drop(buffer);
}

#[test]
fn test_kernels_compile_with_nvrtc() {
    // Runs anywhere NVRTC is (CI too): the spinning producer of these tests
    // must compile before a GPU host sees it.
    if std::env::var_os(vmafx::internals::device::gpu::nvrtc::ENV).is_none() {
        let wheel = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("build/gpu-deps/nvrtc/nvidia/cu13/lib/libnvrtc.so.13");
        if wheel.exists() {
            std::env::set_var(vmafx::internals::device::gpu::nvrtc::ENV, wheel);
        }
    }
    match vmafx::internals::device::gpu::nvrtc::nvrtc() {
        Ok(_) => {
            let ptx = vmafx::internals::device::gpu::compile::cuda_ptx(&TEST_KERNELS, "compute_90").unwrap();
            let text = String::from_utf8_lossy(&ptx);
            for entry in TEST_KERNELS.entries {
                assert!(text.contains(entry), "{entry} missing from the PTX");
            }
        }
        Err(e) => {
            let required = std::env::var("VMAFX_REQUIRE_GPU_COMPILERS").is_ok_and(|v| v == "1");
            assert!(!required, "NVRTC: {e}");
            eprintln!("SKIP: NVRTC: {e}");
        }
    }
}
