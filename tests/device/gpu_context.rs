//! Whole scoring contexts on a GPU against the CPU context: motion and PSNR
//! (the features with device twins) on synthetic clips at 8, 10, 12 and 16
//! bits, every chroma layout, odd sizes up to 1920x1080, 0 and 2 worker
//! threads, a subsample rate; every per-frame value, aggregate and pooled
//! score equal as f64 bits. Host pictures must be copied once per frame per
//! picture (`Context::host_uploads`); CUDA pictures made on the device (odd
//! pitches) are read in place, with no copy, on lanes of vmafx's own streams
//! and on the caller's context and stream (`DeviceChoice::CudaStream`),
//! whose lanes wait for writes still queued on the caller's stream.
//!
//! No GPU or no driver: each lane is skipped with a note, unless
//! VMAFX_REQUIRE_GPU=cuda (or hip, or cuda,hip) makes a missing lane fail.
//! Run on a GPU host through `xtask twins run` (docs/gpu.md).

use crate::support::synth;
use crate::support::contexts;

use contexts::{assert_same, host, score, use_models, use_speed_chroma, use_ssim, Clip};
use std::sync::Arc;
use vmafx::{CallerStream, Chroma, Context, ContextConfig, DeviceChoice, GpuVendor, OwnedPicture, Picture, PictureSource};
use vmafx::internals::device::gpu::backend::DevPlane;
use vmafx::internals::device::gpu::cuda::{self, sys::*, ContextGuard, CudaDriver};
use vmafx::internals::device::{self, DeviceFrame, DeviceKind, DeviceMemoryId};

/// The out-of-memory test takes every byte of the GPU: it holds this for
/// writing, every other test of this binary for reading, so none runs
/// beside it.
static GPU_MEMORY: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A share of [`GPU_MEMORY`] (a panicked holder does not poison the rest).
fn gpu_memory() -> std::sync::RwLockReadGuard<'static, ()> {
    GPU_MEMORY.read().unwrap_or_else(|e| e.into_inner())
}

fn required(kind: &str) -> bool {
    std::env::var("VMAFX_REQUIRE_GPU").is_ok_and(|v| v.split(',').any(|k| k == kind))
}

/// Whether a GPU of `kind` is here; a missing one fails only when required.
fn present(kind: DeviceKind) -> bool {
    let label = if kind == DeviceKind::Cuda { "cuda" } else { "hip" };
    match device::count(kind) {
        Ok(0) => {
            assert!(!required(label), "VMAFX_REQUIRE_GPU={label} but no {label} device");
            eprintln!("SKIP {label}: no device");
            false
        }
        Ok(_) => true,
        Err(e) => {
            assert!(!required(label), "VMAFX_REQUIRE_GPU={label}: {e}");
            eprintln!("SKIP {label}: {e}");
            false
        }
    }
}

fn context(device: DeviceChoice, threads: usize, subsample: u32) -> Context {
    let cfg = ContextConfig { threads, subsample, device, ..Default::default() };
    Context::new(cfg).unwrap_or_else(|e| panic!("a context on {device}: {e}"))
}

#[test]
fn gpu_context_equals_the_cpu_context() {
    let _memory = gpu_memory();
    let cases = [
        (Chroma::Yuv420, 8, 1920, 1080, true),
        (Chroma::Yuv420, 10, 1920, 1080, true),
        (Chroma::Yuv422, 12, 333, 127, true),
        (Chroma::Yuv444, 16, 1023, 5, true),
        (Chroma::Yuv420, 16, 17, 9, true),
        (Chroma::Yuv420, 12, 641, 361, true),
        (Chroma::Yuv400, 10, 64, 33, true),
        (Chroma::Yuv422, 8, 3, 3, true),
        (Chroma::Yuv420, 8, 1, 2, false),
    ];
    for vendor in [GpuVendor::Cuda, GpuVendor::Hip] {
        let kind = DeviceKind::from(vendor);
        if !present(kind) {
            continue;
        }
        let device = DeviceChoice::Gpu { vendor, index: 0 };
        let (mut contexts, mut values) = (0, 0);
        let started = std::time::Instant::now();
        for (chroma, bits, w, h, motion) in cases {
            let frames: Clip = synth::clip(chroma, bits, w, h, 4, 0x600d ^ (w * h) as u64);
            for (threads, subsample) in [(0, 1), (2, 1), (2, 3)] {
                let what = format!("{device} {w}x{h} {} {bits}-bit, {threads} threads, subsample {subsample}", chroma.name());
                let cpu = score(context(DeviceChoice::Cpu, threads, subsample), &frames, motion, host).unwrap();
                let gpu = score(context(device, threads, subsample), &frames, motion, host)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                let n = assert_same(&cpu, &gpu, &what);
                if threads == 0 {
                    assert_eq!(gpu.host_uploads(), 2 * frames.len() as u64, "{what}: host copies");
                }
                println!("{what}: {n} values equal, {} host copies", gpu.host_uploads());
                contexts += 1;
                values += n;
            }
        }
        println!(
            "{device}: {contexts} contexts, {values} values equal to the CPU's ({:.1} s)",
            started.elapsed().as_secs_f64()
        );
    }
}

/// Device memory of the primary context of CUDA device 0 (the context the
/// lanes of `DeviceChoice::Gpu` use), freed on drop.
struct CudaPicture {
    api: &'static CudaDriver,
    ctx: usize,
    frame: DeviceFrame,
}

impl PictureSource for CudaPicture {
    fn host(&self) -> Option<Picture<'_>> {
        None
    }
    fn device_frame(&self) -> Option<&DeviceFrame> {
        Some(&self.frame)
    }
}

impl Drop for CudaPicture {
    fn drop(&mut self) {
        // SAFETY: the primary context is retained for the whole test; each
        // pointer came from cuMemAlloc in it and is freed once.
        unsafe {
            let _guard = ContextGuard::push(self.api, self.ctx as CUcontext).unwrap();
            for p in &self.frame.planes {
                (self.api.cuMemFree_v2)(p.ptr);
            }
        }
    }
}

/// `p` copied to device memory of `ctx`, rows `pad` bytes longer than the
/// samples (odd pitches: nothing is 256-byte aligned).
fn to_cuda(api: &'static CudaDriver, ctx: CUcontext, p: &OwnedPicture, pad: usize) -> Arc<dyn PictureSource> {
    let check = |rc, call| cuda::result::check(api, rc, call).unwrap();
    let view = p.view();
    // SAFETY: ctx is the retained primary context.
    let _guard = unsafe { ContextGuard::push(api, ctx) }.unwrap();
    let planes = (0..view.plane_count())
        .map(|i| {
            let plane = view.plane(i);
            let row = plane.width() * plane.bytes_per_sample();
            let pitch = row + pad;
            let mut ptr: CUdeviceptr = 0;
            // SAFETY: writes one pointer; each copy stays inside the
            // allocation (row bytes at y * pitch, y < height) and reads a
            // host row of `row` bytes; synchronized before the source goes.
            unsafe {
                check((api.cuMemAlloc_v2)(&mut ptr, pitch * plane.height()), "cuMemAlloc");
                for y in 0..plane.height() {
                    let src = &plane.data()[y * plane.stride()..][..row];
                    let dst = ptr + (y * pitch) as u64;
                    check((api.cuMemcpyHtoDAsync_v2)(dst, src.as_ptr().cast(), row, std::ptr::null_mut()), "cuMemcpyHtoD");
                }
                check((api.cuStreamSynchronize)(std::ptr::null_mut()), "cuStreamSynchronize");
            }
            DevPlane { ptr, pitch, width: plane.width(), height: plane.height(), bytes_per_sample: plane.bytes_per_sample() }
        })
        .collect();
    let frame = DeviceFrame {
        memory: DeviceMemoryId { kind: DeviceKind::Cuda, context: ctx as u64 },
        format: view.format(),
        width: view.width(),
        height: view.height(),
        planes,
        ready: None,
    };
    Arc::new(CudaPicture { api, ctx: ctx as usize, frame })
}

#[test]
fn cuda_context_reads_device_pictures_in_place() {
    let _memory = gpu_memory();
    if !present(DeviceKind::Cuda) {
        return;
    }
    let api = cuda::driver().unwrap();
    let check = |rc, call| cuda::result::check(api, rc, call).unwrap();
    let (mut dev, mut ctx): (CUdevice, CUcontext) = (0, std::ptr::null_mut());
    // SAFETY: device 0 exists (present); the retain is released at the end.
    unsafe {
        check((api.cuDeviceGet)(&mut dev, 0), "cuDeviceGet");
        check((api.cuDevicePrimaryCtxRetain)(&mut ctx, dev), "cuDevicePrimaryCtxRetain");
    }
    for (chroma, bits, w, h, pad) in [(Chroma::Yuv420, 10, 1921, 1081, 34), (Chroma::Yuv444, 8, 333, 127, 7), (Chroma::Yuv422, 16, 65, 17, 2)] {
        let frames: Clip = synth::clip(chroma, bits, w, h, 4, 0xdef1 ^ w as u64);
        let cpu = score(context(DeviceChoice::Cpu, 0, 1), &frames, true, host).unwrap();
        let on_cuda = |p: &OwnedPicture, _: usize, _: &str| to_cuda(api, ctx, p, pad);
        // SAFETY: the primary context, retained for the whole test, and its
        // default stream.
        let caller = DeviceChoice::CudaStream(unsafe { CallerStream::new(ctx as u64, 0) });
        for (device, threads) in [
            (DeviceChoice::Gpu { vendor: GpuVendor::Cuda, index: 0 }, 0),
            (DeviceChoice::Gpu { vendor: GpuVendor::Cuda, index: 0 }, 2),
            (caller, 0),
            (caller, 2),
        ] {
            let what = format!("device pictures {w}x{h} {} {bits}-bit pitch +{pad}, {device}, {threads} threads", chroma.name());
            let gpu = score(context(device, threads, 1), &frames, true, on_cuda).unwrap_or_else(|e| panic!("{what}: {e}"));
            let n = assert_same(&cpu, &gpu, &what);
            assert_eq!(gpu.host_uploads(), 0, "{what}: read in place");
            println!("{what}: {n} values equal, no host copy");
        }
        // Mixed pairs: a host reference (copied), a device distorted picture.
        let device = DeviceChoice::Gpu { vendor: GpuVendor::Cuda, index: 0 };
        let gpu = score(context(device, 0, 1), &frames, true, |p, i, which| {
            if which == "reference" { host(p, i, which) } else { on_cuda(p, i, which) }
        })
        .unwrap();
        assert_same(&cpu, &gpu, "host reference, device distorted");
        assert_eq!(gpu.host_uploads(), frames.len() as u64, "only the references are copied");
    }
    // SAFETY: balances the retain above.
    check(unsafe { (api.cuDevicePrimaryCtxRelease_v2)(dev) }, "cuDevicePrimaryCtxRelease");
}

/// A caller whose writes are still queued on its own stream when it hands
/// the pictures over (a decoder's copies): the lanes of a
/// `DeviceChoice::CudaStream` context run on streams of their own, and must
/// wait for the caller's stream by event before reading. Each picture's
/// planes hold poison until the caller's stream, after some milliseconds of
/// memsets, copies the content in; scoring starts at once. A lane that did
/// not wait would read poison (the planted defect "wait_for_caller_stream skipped").
#[test]
fn cuda_stream_context_waits_for_the_callers_queued_writes() {
    let _memory = gpu_memory();
    if !present(DeviceKind::Cuda) {
        return;
    }
    let api = cuda::driver().unwrap();
    let check = |rc, call| cuda::result::check(api, rc, call).unwrap();
    let (mut dev, mut ctx, mut stream): (CUdevice, CUcontext, CUstream) = (0, std::ptr::null_mut(), std::ptr::null_mut());
    // The delay: memsets of a 1 GiB buffer queued before each copy.
    const DELAY_BYTES: usize = 1 << 30;
    let mut delay: CUdeviceptr = 0;
    // SAFETY: device 0 exists (present); everything made here is released
    // at the end of the test, after the caller's stream is synchronised.
    unsafe {
        check((api.cuDeviceGet)(&mut dev, 0), "cuDeviceGet");
        check((api.cuDevicePrimaryCtxRetain)(&mut ctx, dev), "cuDevicePrimaryCtxRetain");
        let _guard = ContextGuard::push(api, ctx).unwrap();
        check((api.cuStreamCreate)(&mut stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        check((api.cuMemAlloc_v2)(&mut delay, DELAY_BYTES), "cuMemAlloc");
    }
    for (chroma, bits, w, h, threads) in [(Chroma::Yuv420, 8, 1920, 1080, 0), (Chroma::Yuv420, 10, 1280, 720, 2)] {
        let frames: Clip = synth::clip(chroma, bits, w, h, 6, 0x57a1 ^ w as u64);
        let cpu = score(context(DeviceChoice::Cpu, 0, 1), &frames, true, host).unwrap();
        // The staging copies live until the caller's stream is done.
        let mut staging: Vec<Arc<dyn PictureSource>> = Vec::new();
        let late = |p: &OwnedPicture, _: usize, _: &str| -> Arc<dyn PictureSource> {
            let src = to_cuda(api, ctx, p, 0);
            let src_frame = src.device_frame().unwrap().clone();
            // SAFETY: the retained primary context; every copy stays inside
            // the source and destination allocations (pitch x height each).
            let planes = unsafe {
                let _guard = ContextGuard::push(api, ctx).unwrap();
                for k in 0..12u8 {
                    check((api.cuMemsetD8Async)(delay, k, DELAY_BYTES, stream), "cuMemsetD8Async");
                }
                src_frame
                    .planes
                    .iter()
                    .map(|sp| {
                        let mut ptr: CUdeviceptr = 0;
                        check((api.cuMemAlloc_v2)(&mut ptr, sp.pitch * sp.height), "cuMemAlloc");
                        check((api.cuMemsetD8Async)(ptr, 0xa5, sp.pitch * sp.height, std::ptr::null_mut()), "poison");
                        check((api.cuStreamSynchronize)(std::ptr::null_mut()), "cuStreamSynchronize");
                        let copy = CudaMemcpy2D {
                            src_memory_type: CU_MEMORYTYPE_DEVICE,
                            src_device: sp.ptr,
                            src_pitch: sp.pitch,
                            dst_memory_type: CU_MEMORYTYPE_DEVICE,
                            dst_device: ptr,
                            dst_pitch: sp.pitch,
                            width_in_bytes: sp.width * sp.bytes_per_sample,
                            height: sp.height,
                            ..Default::default()
                        };
                        check((api.cuMemcpy2DAsync_v2)(&copy, stream), "cuMemcpy2DAsync");
                        DevPlane { ptr, ..*sp }
                    })
                    .collect()
            };
            staging.push(src);
            Arc::new(CudaPicture { api, ctx: ctx as usize, frame: DeviceFrame { planes, ready: None, ..src_frame } })
        };
        // SAFETY: the retained primary context and a stream made in it, both
        // alive until after the contexts are dropped.
        let caller = DeviceChoice::CudaStream(unsafe { CallerStream::new(ctx as u64, stream as u64) });
        let what = format!("{w}x{h} {bits}-bit written late on the caller's stream, {threads} threads");
        let gpu = score(context(caller, threads, 1), &frames, true, late).unwrap_or_else(|e| panic!("{what}: {e}"));
        let n = assert_same(&cpu, &gpu, &what);
        println!("{what}: {n} values equal");
        // SAFETY: the caller's stream, synchronised before its sources go.
        unsafe {
            let _guard = ContextGuard::push(api, ctx).unwrap();
            check((api.cuStreamSynchronize)(stream), "cuStreamSynchronize");
        }
        drop(gpu);
        drop(staging);
    }
    // SAFETY: made above; nothing is queued any more.
    unsafe {
        let _guard = ContextGuard::push(api, ctx).unwrap();
        check((api.cuMemFree_v2)(delay), "cuMemFree");
        check((api.cuStreamDestroy_v2)(stream), "cuStreamDestroy");
    }
    // SAFETY: balances the retain above.
    check(unsafe { (api.cuDevicePrimaryCtxRelease_v2)(dev) }, "cuDevicePrimaryCtxRelease");
}

/// A HIP picture in device memory of device 0, freed on drop.
struct HipPicture {
    api: &'static vmafx::internals::device::gpu::hip::HipRuntime,
    frame: DeviceFrame,
}

impl PictureSource for HipPicture {
    fn host(&self) -> Option<Picture<'_>> {
        None
    }
    fn device_frame(&self) -> Option<&DeviceFrame> {
        Some(&self.frame)
    }
}

impl Drop for HipPicture {
    fn drop(&mut self) {
        for p in &self.frame.planes {
            // SAFETY: each pointer came from hipMalloc on device 0 and is
            // freed once (hipFree waits for work that uses it).
            unsafe { (self.api.hipFree)(p.ptr) };
        }
    }
}

/// `cuda_stream_context_waits_for_the_callers_queued_writes` on HIP
/// (`DeviceChoice::HipStream`): pictures whose content the caller's stream
/// copies in only after queued memsets. Runs where an AMD GPU is; compiled
/// everywhere.
#[test]
fn hip_stream_context_waits_for_the_callers_queued_writes() {
    let _memory = gpu_memory();
    use vmafx::HipCallerStream;
    use vmafx::internals::device::gpu::hip::{self, sys::*};
    if !present(DeviceKind::Hip) {
        return;
    }
    let api = hip::runtime().unwrap();
    let check = |rc, call: &str| api.check(rc, call).unwrap();
    const DELAY_BYTES: usize = 1 << 30;
    let (mut stream, mut delay): (HipStream, HipDevicePtr) = (std::ptr::null_mut(), 0);
    // SAFETY: device 0 exists (present); released at the end of the test.
    unsafe {
        check((api.hipSetDevice)(0), "hipSetDevice");
        check((api.hipStreamCreateWithFlags)(&mut stream, HIP_STREAM_NON_BLOCKING), "hipStreamCreateWithFlags");
        check((api.hipMalloc)(&mut delay, DELAY_BYTES), "hipMalloc");
    }
    let alloc = |bytes: usize| -> HipDevicePtr {
        let mut p: HipDevicePtr = 0;
        // SAFETY: writes one pointer; freed by HipPicture.
        unsafe { check((api.hipMalloc)(&mut p, bytes), "hipMalloc") };
        p
    };
    for (chroma, bits, w, h, threads) in [(Chroma::Yuv420, 8, 1920, 1080, 0), (Chroma::Yuv420, 10, 1280, 720, 2)] {
        let frames: Clip = synth::clip(chroma, bits, w, h, 6, 0x57a1 ^ w as u64);
        let cpu = score(context(DeviceChoice::Cpu, 0, 1), &frames, true, host).unwrap();
        let mut staging: Vec<Arc<dyn PictureSource>> = Vec::new();
        let late = |p: &OwnedPicture, _: usize, _: &str| -> Arc<dyn PictureSource> {
            let view = p.view();
            let (mut src_planes, mut dst_planes) = (Vec::new(), Vec::new());
            for i in 0..view.plane_count() {
                let plane = view.plane(i);
                let row = plane.width() * plane.bytes_per_sample();
                let (src, dst) = (alloc(row * plane.height()), alloc(row * plane.height()));
                // SAFETY: copies stay inside the allocations (row x height);
                // the host rows are read before the synchronisation returns.
                unsafe {
                    for y in 0..plane.height() {
                        let host_row = plane.data()[y * plane.stride()..][..row].as_ptr();
                        check(
                            (api.hipMemcpyHtoDAsync)(src + (y * row) as u64, host_row.cast(), row, std::ptr::null_mut()),
                            "hipMemcpyHtoDAsync",
                        );
                    }
                    check((api.hipMemsetAsync)(dst, 0xa5, row * plane.height(), std::ptr::null_mut()), "poison");
                    check((api.hipStreamSynchronize)(std::ptr::null_mut()), "hipStreamSynchronize");
                }
                let dev = |ptr: HipDevicePtr| DevPlane {
                    ptr: ptr as usize as u64,
                    pitch: row,
                    width: plane.width(),
                    height: plane.height(),
                    bytes_per_sample: plane.bytes_per_sample(),
                };
                src_planes.push(dev(src));
                dst_planes.push(dev(dst));
            }
            // SAFETY: the delay buffer and the planes are live; each copy
            // stays inside its planes.
            unsafe {
                for k in 0..12 {
                    check((api.hipMemsetAsync)(delay, k, DELAY_BYTES, stream), "hipMemsetAsync");
                }
                for (s, d) in src_planes.iter().zip(&dst_planes) {
                    check(
                        (api.hipMemcpy2DAsync)(
                            d.ptr,
                            d.pitch,
                            s.ptr,
                            s.pitch,
                            s.width * s.bytes_per_sample,
                            s.height,
                            HIP_MEMCPY_DEVICE_TO_DEVICE,
                            stream,
                        ),
                        "hipMemcpy2DAsync",
                    );
                }
            }
            let memory = DeviceMemoryId { kind: DeviceKind::Hip, context: 0 };
            let frame = |planes| DeviceFrame { memory, format: view.format(), width: view.width(), height: view.height(), planes, ready: None };
            staging.push(Arc::new(HipPicture { api, frame: frame(src_planes) }));
            Arc::new(HipPicture { api, frame: frame(dst_planes) })
        };
        // SAFETY: a stream of device 0 made above, alive until after the
        // contexts are dropped.
        let caller = DeviceChoice::HipStream(unsafe { HipCallerStream::new(0, stream as usize as u64) });
        let what = format!("HIP {w}x{h} {bits}-bit written late on the caller's stream, {threads} threads");
        let gpu = score(context(caller, threads, 1), &frames, true, late).unwrap_or_else(|e| panic!("{what}: {e}"));
        let n = assert_same(&cpu, &gpu, &what);
        println!("{what}: {n} values equal");
        // SAFETY: the caller's stream, synchronised before its sources go.
        unsafe { check((api.hipStreamSynchronize)(stream), "hipStreamSynchronize") };
        drop(gpu);
        drop(staging);
    }
    // SAFETY: made above; nothing is queued any more.
    unsafe {
        check((api.hipFree)(delay), "hipFree");
        check((api.hipStreamDestroy)(stream), "hipStreamDestroy");
    }
}

/// The VMAF models (VIF, ADM, motion on the device) on a GPU context equal
/// the CPU context, per frame and pooled; prints the time per frame of
/// each (the GPU's includes copying host pictures to it).
#[test]
fn gpu_context_scores_vmaf_models_as_the_cpu() {
    let _memory = gpu_memory();
    for vendor in [GpuVendor::Cuda, GpuVendor::Hip] {
        let kind = DeviceKind::from(vendor);
        if !present(kind) {
            continue;
        }
        let device = DeviceChoice::Gpu { vendor, index: 0 };
        for (chroma, bits, w, h, threads) in [
            (Chroma::Yuv420, 8, 1920, 1080, 0),
            (Chroma::Yuv420, 10, 1920, 1080, 2),
            (Chroma::Yuv422, 12, 333, 127, 2),
            (Chroma::Yuv444, 16, 65, 33, 0),
            (Chroma::Yuv420, 10, 3840, 2160, 4),
        ] {
            let frames: Clip = synth::clip(chroma, bits, w, h, 4, 0x7a1f ^ w as u64);
            let run = |device: DeviceChoice| -> (Context, f64) {
                let mut ctx = context(device, threads, 1);
                use_models(&mut ctx, &[("vmaf_v0.6.1", "vmaf"), ("vmaf_4k_v0.6.1", "vmaf_4k")]);
                let started = std::time::Instant::now();
                let ctx = score(ctx, &frames, false, host).unwrap_or_else(|e| panic!("{device}: {e}"));
                (ctx, started.elapsed().as_secs_f64() * 1e3 / frames.len() as f64)
            };
            let what = format!("VMAF {device} {w}x{h} {} {bits}-bit, {threads} threads", chroma.name());
            let (cpu, cpu_ms) = run(DeviceChoice::Cpu);
            let (gpu, gpu_ms) = run(device);
            let n = assert_same(&cpu, &gpu, &what);
            println!("{what}: {n} values equal; {cpu_ms:.1} ms/frame on the CPU, {gpu_ms:.1} on the GPU");
        }
    }
}

/// float_ssim and float_ms_ssim (kernels/ssim.cu) on a GPU: every value,
/// with each scale's l/c/s terms and the dB forms, equal to the CPU
/// context's as bits, up to 3840x2160 (float_ssim's automatic decimation
/// by 4 and 8, MS-SSIM's five scales), odd sizes, 8 to 16 bits, threads.
#[test]
fn gpu_context_scores_ssim_and_ms_ssim_as_the_cpu() {
    let _memory = gpu_memory();
    for vendor in [GpuVendor::Cuda, GpuVendor::Hip] {
        let kind = DeviceKind::from(vendor);
        if !present(kind) {
            continue;
        }
        let device = DeviceChoice::Gpu { vendor, index: 0 };
        for (chroma, bits, w, h, threads, scale, db) in [
            (Chroma::Yuv420, 8, 1920, 1080, 0, 0, false),
            (Chroma::Yuv420, 10, 3840, 2160, 2, 0, true),
            (Chroma::Yuv444, 12, 333, 197, 2, 3, true),
            (Chroma::Yuv400, 16, 181, 177, 0, 1, false),
            (Chroma::Yuv420, 8, 719, 481, 0, 2, false),
        ] {
            let frames: Clip = synth::clip(chroma, bits, w, h, 3, 0x551 ^ w as u64);
            let run = |device: DeviceChoice| -> (Context, f64) {
                let mut ctx = context(device, threads, 1);
                use_ssim(&mut ctx, scale, db, true);
                let started = std::time::Instant::now();
                let ctx = score(ctx, &frames, false, host).unwrap_or_else(|e| panic!("{device}: {e}"));
                (ctx, started.elapsed().as_secs_f64() * 1e3 / frames.len() as f64)
            };
            let what = format!("SSIM {device} {w}x{h} {} {bits}-bit, {threads} threads, scale {scale}", chroma.name());
            let (cpu, cpu_ms) = run(DeviceChoice::Cpu);
            let (gpu, gpu_ms) = run(device);
            let n = assert_same(&cpu, &gpu, &what);
            println!("{what}: {n} values equal; {cpu_ms:.1} ms/frame on the CPU, {gpu_ms:.1} on the GPU");
        }
    }
}

/// speed_chroma (kernels/speed.cu: the blur and decimation by 16 on the
/// device, the block statistics on the host) on a GPU with the v1.0.16
/// models' options: every value equal to the CPU context's as bits, up to
/// 3840x2160, odd sizes, 8 to 16 bits, threads.
#[test]
fn gpu_context_scores_speed_chroma_as_the_cpu() {
    let _memory = gpu_memory();
    for vendor in [GpuVendor::Cuda, GpuVendor::Hip] {
        let kind = DeviceKind::from(vendor);
        if !present(kind) {
            continue;
        }
        let device = DeviceChoice::Gpu { vendor, index: 0 };
        for (chroma, bits, w, h, threads, ks) in [
            (Chroma::Yuv420, 8, 1920, 1080, 0, "1"),
            (Chroma::Yuv420, 10, 3840, 2160, 2, "1"),
            (Chroma::Yuv444, 12, 641, 483, 2, "1.5"),
            (Chroma::Yuv422, 16, 645, 250, 0, "0.5"),
        ] {
            let frames: Clip = synth::clip(chroma, bits, w, h, 4, 0x5bed ^ w as u64);
            let run = |device: DeviceChoice| -> (Context, f64) {
                let mut ctx = context(device, threads, 1);
                use_speed_chroma(&mut ctx, ks, "5", &[("speed_max_val", "45")]);
                let started = std::time::Instant::now();
                let ctx = score(ctx, &frames, false, host).unwrap_or_else(|e| panic!("{device}: {e}"));
                (ctx, started.elapsed().as_secs_f64() * 1e3 / frames.len() as f64)
            };
            let what = format!("speed_chroma {device} {w}x{h} {} {bits}-bit, {threads} threads, ks {ks}", chroma.name());
            let (cpu, cpu_ms) = run(DeviceChoice::Cpu);
            let (gpu, gpu_ms) = run(device);
            let n = assert_same(&cpu, &gpu, &what);
            println!("{what}: {n} values equal; {cpu_ms:.1} ms/frame on the CPU, {gpu_ms:.1} on the GPU");
        }
    }
}

/// speed_temporal (kernels/speed.cu: both frames' copies, their
/// difference, the blur and decimation by 16 on the device; the block
/// statistics on the host) on a GPU with the v1.0.16 models' options:
/// every value equal to the CPU context's as bits, up to 3840x2160, odd
/// sizes, 8 to 16 bits, threads, with and without speed_use_ref_diff.
#[test]
fn gpu_context_scores_speed_temporal_as_the_cpu() {
    let _memory = gpu_memory();
    use vmafx::FeatureOptions;
    use vmafx::internals::feature::speed::TEMPORAL_DESCRIPTOR;
    for vendor in [GpuVendor::Cuda, GpuVendor::Hip] {
        let kind = DeviceKind::from(vendor);
        if !present(kind) {
            continue;
        }
        let device = DeviceChoice::Gpu { vendor, index: 0 };
        for (chroma, bits, w, h, threads, ks, ref_diff) in [
            (Chroma::Yuv420, 8, 1920, 1080, 0, "1", "false"),
            (Chroma::Yuv420, 10, 3840, 2160, 2, "1", "false"),
            (Chroma::Yuv444, 12, 641, 483, 2, "1.5", "true"),
            (Chroma::Yuv400, 16, 645, 250, 0, "0.5", "false"),
        ] {
            let frames: Clip = synth::clip(chroma, bits, w, h, 4, 0x7e3 ^ w as u64);
            let run = |device: DeviceChoice| -> (Context, f64) {
                let mut ctx = context(device, threads, 1);
                let mut o = FeatureOptions::new();
                for (k, v) in [("speed_nn_floor", "0.1"), ("speed_sigma_nn", "0.19"), ("speed_kernelscale", ks), ("speed_use_ref_diff", ref_diff)] {
                    o.set_text(TEMPORAL_DESCRIPTOR.options, k, v).unwrap();
                }
                ctx.use_feature("speed_temporal", o).unwrap();
                let started = std::time::Instant::now();
                let ctx = score(ctx, &frames, false, host).unwrap_or_else(|e| panic!("{device}: {e}"));
                (ctx, started.elapsed().as_secs_f64() * 1e3 / frames.len() as f64)
            };
            let what = format!("speed_temporal {device} {w}x{h} {} {bits}-bit, {threads} threads, ks {ks}, ref diff {ref_diff}", chroma.name());
            let (cpu, cpu_ms) = run(DeviceChoice::Cpu);
            let (gpu, gpu_ms) = run(device);
            let n = assert_same(&cpu, &gpu, &what);
            println!("{what}: {n} values equal; {cpu_ms:.1} ms/frame on the CPU, {gpu_ms:.1} on the GPU");
        }
    }
}

/// cambi (kernels/cambi.cu: each scale's c-values on the device, the
/// image, mask and pooling on the host) and the VMAF v1.0.16 models that
/// read it (3d0h, hfr_3d0h: motion's five-frame window) on a GPU: every value equal to the CPU context's as bits, up
/// to 3840x2160 (with and without the high-res speed-up), odd sizes, 8 to
/// 16 bits, full_ref, threads.
#[test]
fn gpu_context_scores_cambi_and_vmaf_v1016_as_the_cpu() {
    let _memory = gpu_memory();
    use vmafx::{FeatureOptions, Model, ModelConfig};
    use vmafx::internals::feature::cambi::DESCRIPTOR;
    for vendor in [GpuVendor::Cuda, GpuVendor::Hip] {
        let kind = DeviceKind::from(vendor);
        if !present(kind) {
            continue;
        }
        let device = DeviceChoice::Gpu { vendor, index: 0 };
        let cases: [(Chroma, u8, usize, usize, usize, &[(&str, &str)]); 4] = [
            (Chroma::Yuv420, 8, 1920, 1080, 0, &[]),
            (Chroma::Yuv420, 10, 3840, 2160, 2, &[("cambi_high_res_speedup", "2160")]),
            (Chroma::Yuv444, 12, 641, 483, 2, &[("full_ref", "true"), ("max_log_contrast", "3")]),
            (Chroma::Yuv400, 16, 645, 251, 0, &[("enc_bitdepth", "8"), ("window_size", "127")]),
        ];
        for (chroma, bits, w, h, threads, options) in cases {
            let frames: Clip = synth::banded_clip(chroma, bits, w, h, 3, 0xca ^ w as u64);
            let run = |device: DeviceChoice| -> (Context, f64) {
                let mut ctx = context(device, threads, 1);
                let mut o = FeatureOptions::new();
                for (k, v) in options {
                    o.set_text(DESCRIPTOR.options, k, v).unwrap();
                }
                ctx.use_feature("cambi", o).unwrap();
                let started = std::time::Instant::now();
                let ctx = score(ctx, &frames, false, host).unwrap_or_else(|e| panic!("{device}: {e}"));
                (ctx, started.elapsed().as_secs_f64() * 1e3 / frames.len() as f64)
            };
            let what = format!("cambi {device} {w}x{h} {} {bits}-bit, {threads} threads, {options:?}", chroma.name());
            let (cpu, cpu_ms) = run(DeviceChoice::Cpu);
            let (gpu, gpu_ms) = run(device);
            let n = assert_same(&cpu, &gpu, &what);
            println!("{what}: {n} values equal; {cpu_ms:.1} ms/frame on the CPU, {gpu_ms:.1} on the GPU");
        }
        // Whole v1.0.16 models (cambi, speed_chroma, adm3, motion3 (the
        // hfr one's with the five-frame window), vif).
        for (bits, w, h, threads) in [(8, 1920, 1080, 0), (10, 3840, 2160, 2)] {
            let frames: Clip = synth::banded_clip(Chroma::Yuv420, bits, w, h, 4, 0x1016);
            let run = |device: DeviceChoice| -> (Context, f64) {
                let mut ctx = context(device, threads, 1);
                for (version, name) in [("vmaf_v1.0.16_3d0h", "vmaf"), ("vmaf_v1.0.16_hfr_3d0h", "vmaf_hfr")] {
                    let cfg = ModelConfig { name: Some(name.into()), ..Default::default() };
                    ctx.use_model(Model::builtin(version, &cfg).unwrap()).unwrap();
                }
                let started = std::time::Instant::now();
                let ctx = score(ctx, &frames, false, host).unwrap_or_else(|e| panic!("{device}: {e}"));
                (ctx, started.elapsed().as_secs_f64() * 1e3 / frames.len() as f64)
            };
            let what = format!("vmaf_v1.0.16_3d0h and _hfr_3d0h {device} {w}x{h} {bits}-bit, {threads} threads");
            let (cpu, cpu_ms) = run(DeviceChoice::Cpu);
            let (gpu, gpu_ms) = run(device);
            let n = assert_same(&cpu, &gpu, &what);
            println!("{what}: {n} values equal; {cpu_ms:.1} ms/frame on the CPU, {gpu_ms:.1} on the GPU");
        }
    }
}

/// GPU memory runs out while scoring (issue 17; on the H200 through
/// `xtask twins run`): the test itself takes every byte the device
/// will give after context A scored its first frames. A's later frames need
/// no new memory and go on, equal to the CPU as bits. A new context fails
/// with an error naming the device and the driver's out-of-memory code: at
/// creation (its streams) while nothing is left, and, once a few MiB are
/// given back so that it can be made, at its first frame, naming the bytes
/// it asked for. Once the memory is given back a new context C scores
/// again, equal to the CPU. Holds [`GPU_MEMORY`] for writing: the other
/// tests of this binary wait.
#[test]
fn cuda_out_of_memory_is_named_and_running_contexts_go_on() {
    let _alone = GPU_MEMORY.write().unwrap_or_else(|e| e.into_inner());
    if !present(DeviceKind::Cuda) {
        return;
    }
    let api = cuda::driver().unwrap();
    let check = |rc, call| cuda::result::check(api, rc, call).unwrap();
    let (mut dev, mut ctx): (CUdevice, CUcontext) = (0, std::ptr::null_mut());
    // SAFETY: device 0 exists (present); the retain is released at the end.
    unsafe {
        check((api.cuDeviceGet)(&mut dev, 0), "cuDeviceGet");
        check((api.cuDevicePrimaryCtxRetain)(&mut ctx, dev), "cuDevicePrimaryCtxRetain");
    }
    let frames: Clip = synth::clip(Chroma::Yuv420, 10, 1920, 1080, 6, 0x00a1);
    let cpu = score(context(DeviceChoice::Cpu, 0, 1), &frames, true, host).unwrap();
    let gpu = DeviceChoice::Gpu { vendor: GpuVendor::Cuda, index: 0 };
    let mut a = context(gpu, 0, 1);
    contexts::add_features(&mut a, true).unwrap();
    for (r, d) in &frames[..2] {
        a.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
    }
    // Take everything: 1 GiB blocks, then 64 MiB, then 1 MiB ones.
    let mut hog = Hog { api, ctx, blocks: Vec::new() };
    for block in [1usize << 30, 64 << 20, 1 << 20] {
        while hog.take(block) {}
    }
    println!("took {} blocks of device memory", hog.blocks.len());
    let cfg = || ContextConfig { threads: 0, subsample: 1, device: gpu, ..Default::default() };
    let named = |msg: &str| msg.contains("CUDA device 0") && msg.contains("OUT_OF_MEMORY");
    let mut creation_refused = None;
    // Give back the smallest blocks one by one until a context can be made.
    let mut b = loop {
        match Context::new(cfg()) {
            Ok(b) => break b,
            Err(e) => {
                let msg = e.to_string();
                assert!(named(&msg), "context creation out of memory: {msg}");
                creation_refused.get_or_insert(msg);
                assert!(hog.give_back_one(), "a context could not be made even with all memory back");
            }
        }
    };
    let creation_refused = creation_refused.expect("with no memory left, a context was still made");
    println!("out of memory at creation: {creation_refused}");
    contexts::add_features(&mut b, true).unwrap();
    let (r, d) = &frames[0];
    let err = b.push(Arc::new(r.clone()), Arc::new(d.clone())).map(|_| ()).and_then(|_| b.flush());
    let msg = err.expect_err("the first frame's memory cannot be had").to_string();
    println!("out of memory at the first frame: {msg}");
    assert!(named(&msg) && msg.contains("frame 0") && msg.contains("bytes: cuMemAlloc"), "{msg}");
    drop(b);
    for (r, d) in &frames[2..] {
        a.push(Arc::new(r.clone()), Arc::new(d.clone())).expect("a context holding its memory goes on");
    }
    a.flush().unwrap();
    assert_same(&cpu, &a, "the context that scored through the shortage");
    drop(hog);
    let c = score(context(gpu, 0, 1), &frames, true, host).unwrap();
    assert_same(&cpu, &c, "a context after the memory came back");
    // SAFETY: balances the retain above.
    check(unsafe { (api.cuDevicePrimaryCtxRelease_v2)(dev) }, "cuDevicePrimaryCtxRelease");
}

/// Device memory held by a test, given back when dropped (also when the
/// test panics, so the tests after it find the GPU as it was).
struct Hog {
    api: &'static CudaDriver,
    ctx: CUcontext,
    blocks: Vec<CUdeviceptr>,
}

impl Hog {
    /// Takes one block of `bytes`; false when the driver has none left.
    fn take(&mut self, bytes: usize) -> bool {
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: ctx is a retained primary context; the call writes one
        // pointer, freed in give_back_one or drop.
        let ok = unsafe {
            let _guard = ContextGuard::push(self.api, self.ctx).unwrap();
            (self.api.cuMemAlloc_v2)(&mut ptr, bytes) == CUDA_SUCCESS
        };
        if ok {
            self.blocks.push(ptr);
        }
        ok
    }

    /// Frees the block taken last; false when none is held.
    fn give_back_one(&mut self) -> bool {
        let Some(ptr) = self.blocks.pop() else { return false };
        // SAFETY: one of our blocks, freed once, in the context it came from.
        unsafe {
            let _guard = ContextGuard::push(self.api, self.ctx).unwrap();
            (self.api.cuMemFree_v2)(ptr);
        }
        true
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        while self.give_back_one() {}
    }
}
