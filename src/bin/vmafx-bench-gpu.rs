//! vmafx-bench-gpu: the GPU benchmark's vmafx side (`cargo xtask bench-gpu run`
//! runs it, next to libvmaf 3.2.0's CUDA backend driven by
//! tools/bench-gpu/bench_libvmaf_cuda.c on the same frames).
//!
//! ```text
//! vmafx-bench-gpu gen --width W --height H --bits B --distinct K --out DIR
//!     K reference and K distorted frames (planar 4:2:0, 16-bit little-endian
//!     above 8 bits) in DIR/ref.yuv and DIR/dis.yuv: a deterministic scene
//!     with structure and grain (gradients, rings, blocks, texture, a pan),
//!     and a blurred, block-quantised, noisier distorted copy.
//! vmafx-bench-gpu bandwidth [--mib 1024] [--iters 20]
//!     device memory bandwidth of a copy and of a read-only kernel (vmafx's
//!     own GPU engine, NVRTC, 16-byte loads), in GB/s (10^9 bytes).
//! vmafx-bench-gpu score --device cuda|cuda-stream|hip|cpu --dir DIR --width W --height H --bits B
//!         --distinct K --frames N [--repeat 3] [--threads T] [--check] [--model vmaf_v0.6.1]
//!     scores N frames (frame i is stored frame i % K) with a built-in model
//!     (vmaf_v0.6.1 unless --model names another, e.g. vmaf_v1.0.16_3d0h)
//!     through `vmafx::Context`. cuda: every frame is uploaded to
//!     device memory once, before timing, and handed over as a device-resident
//!     picture (`PictureSource::device_frame`) to a context on
//!     `DeviceChoice::Gpu { vendor: Cuda, index: 0 }` (cuda-stream: `DeviceChoice::CudaStream`
//!     on the same primary context); hip: the same through the HIP lane
//!     (`hipMalloc`'d frames, `DeviceChoice::Gpu { vendor: Hip, index: 0 }`; on an NVIDIA
//!     GPU through scripts/hip-standin); cpu: host pictures, T worker
//!     threads (default: every core). One untimed warm-up run, then `repeat`
//!     times: a timed run of N frames (push every frame, flush, pool) and one
//!     of N/5; fps = (N - N/5) / (median(N) - median(N/5)), the steady rate
//!     without the fixed cost every run pays (fixed_s: set-up, drain).
//!     --check (cuda, hip): also scores on the CPU lane and compares every
//!     feature and score of every frame as bits. The RESULT line lists every
//!     frame's score (`vmaf_frames`), for the xtask to compare with libvmaf's.
//!     cuda, cuda-stream: the device memory a scoring context takes
//!     (`cuMemGetInfo`, the whole device's free memory, before `Context::new`
//!     and after the context is set up, then the largest of the readings
//!     every N/8 frames pushed and before the flush, in a run of N frames
//!     and one of N/5): `device_bytes_context`, `device_bytes_end`,
//!     `device_bytes_end_short`; end minus end_short is the growth with
//!     frame count.
//! ```
//!
//! Every command prints one line `RESULT {json}` for the script to parse.

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use vmafx::{CallerStream, Chroma, Context, ContextConfig, DeviceChoice, DeviceKind, Error, GpuVendor, Model, ModelConfig, OwnedPicture, PictureSource, PixelFormat, PoolMethod, Result};
use vmafx::internals::device::gpu::backend::{Args, Backend, DevPlane, KernelRunner, Scratch};
use vmafx::internals::device::gpu::cuda::{self, sys, ContextGuard};
use vmafx::internals::device::gpu::hip;
use vmafx::internals::device::gpu::kernels::{KernelSet, KernelSource};
use vmafx::internals::device::gpu::lane::GpuLane;
use vmafx::internals::device::{DeviceFrame, DeviceMemoryId};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("gen") => Opts::parse(&args[1..]).and_then(|o| generate(&o)),
        Some("bandwidth") => Opts::parse(&args[1..]).and_then(|o| bandwidth(&o)),
        Some("score") => Opts::parse(&args[1..]).and_then(|o| score(&o)),
        Some("compile") => compile_check(),
        _ => {
            eprintln!("usage: vmafx-bench-gpu gen|bandwidth|score [--key value ...] (see the source's header)");
            std::process::exit(2);
        }
    };
    if let Err(e) = outcome {
        // The script reads the RESULT line; an error is a result too.
        println!("RESULT {{\"error\": {}}}", json_str(&e.to_string()));
        eprintln!("vmafx-bench-gpu: {e}");
        std::process::exit(1);
    }
}

// --- options ------------------------------------------------------------------

struct Opts {
    pairs: Vec<(String, String)>,
    flags: Vec<String>,
}

impl Opts {
    fn parse(args: &[String]) -> Result<Opts> {
        let (mut pairs, mut flags) = (Vec::new(), Vec::new());
        let mut i = 0;
        while i < args.len() {
            let key = args[i]
                .strip_prefix("--")
                .ok_or_else(|| Error::invalid(format!("unexpected argument {}", args[i])))?;
            if key == "check" {
                flags.push(key.to_owned());
                i += 1;
                continue;
            }
            let value = args.get(i + 1).ok_or_else(|| Error::invalid(format!("--{key} needs a value")))?;
            pairs.push((key.to_owned(), value.clone()));
            i += 2;
        }
        Ok(Opts { pairs, flags })
    }
    fn str(&self, key: &str) -> Option<&str> {
        self.pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
    fn need(&self, key: &str) -> Result<&str> {
        self.str(key).ok_or_else(|| Error::invalid(format!("--{key} is required")))
    }
    fn num(&self, key: &str, default: Option<usize>) -> Result<usize> {
        match (self.str(key), default) {
            (Some(v), _) => v.parse().map_err(|_| Error::invalid(format!("--{key} {v}: not a number"))),
            (None, Some(d)) => Ok(d),
            (None, None) => Err(Error::invalid(format!("--{key} is required"))),
        }
    }
    fn flag(&self, key: &str) -> bool {
        self.flags.iter().any(|f| f == key)
    }
}

/// Frame geometry shared by `gen` and `score`.
#[derive(Clone, Copy)]
struct ClipGeometry {
    width: usize,
    height: usize,
    format: PixelFormat,
}

impl ClipGeometry {
    fn from(o: &Opts) -> Result<ClipGeometry> {
        let (width, height, bits) = (o.num("width", None)?, o.num("height", None)?, o.num("bits", Some(8))?);
        if width < 16 || height < 16 || width % 2 != 0 || height % 2 != 0 {
            return Err(Error::invalid(format!("{width}x{height}: even sizes of at least 16 only")));
        }
        let format = PixelFormat::new(Chroma::Yuv420, u8::try_from(bits).unwrap_or(0))?;
        Ok(ClipGeometry { width, height, format })
    }
    fn plane(&self, i: usize) -> (usize, usize) {
        self.format.plane_size(i, self.width, self.height)
    }
    /// Bytes of one frame in a raw planar file.
    fn frame_bytes(&self) -> usize {
        (0..3).map(|i| self.plane(i).0 * self.plane(i).1).sum::<usize>() * self.format.bytes_per_sample()
    }
}

// --- frames -------------------------------------------------------------------

fn mix(mut z: u64) -> u64 {
    // splitmix64's finaliser: a well-spread hash of the integer inputs.
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn hash(a: i64, b: i64, c: u64) -> u64 {
    mix((a as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (b as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
        ^ c.wrapping_mul(0x1656_67b1_9e37_79f9))
}

/// Triangle wave of period `2 * half`, 0..=half.
fn tri(v: i64, half: i64) -> i64 {
    let m = v.rem_euclid(2 * half);
    if m < half {
        m
    } else {
        2 * half - m
    }
}

/// Reference luma of frame `f` at (x, y), 10-bit scale. World coordinates
/// are in 1/16 of a 1080p pixel, so 4K shows the same scene, finer.
fn scene(x: usize, y: usize, f: usize, g: &ClipGeometry) -> i64 {
    let scale = (1920 * 16 / g.width) as i64;
    let (sx, sy) = (x as i64 * scale, y as i64 * scale);
    // The background pans (1.5 px right, 0.5 px down per frame at 1080p);
    // the rings stay put, so motion differs across the picture.
    let (px, py) = (sx + f as i64 * 24, sy + f as i64 * 8);
    let gradient = tri((px + 2 * py) >> 6, 400);
    let (dx, dy) = (sx - 960 * 16, sy - 540 * 16);
    let rings = tri((dx * dx + dy * dy) >> 14, 300);
    let block = (hash(px >> 10, py >> 10, 1) % 500) as i64;
    let texture = (hash(px >> 5, py >> 5, 2) % 160) as i64;
    let grain = (hash(x as i64, y as i64, 3 + f as u64) % 25) as i64 - 12;
    (40 + gradient / 2 + rings + block / 2 + texture / 2 + grain).clamp(0, 1023)
}

/// One frame pair as raw planar bytes (reference, distorted).
fn frame_pair(f: usize, g: &ClipGeometry) -> (Vec<u8>, Vec<u8>) {
    let (w, h) = (g.width, g.height);
    let reference: Vec<i64> = (0..h).flat_map(|y| (0..w).map(move |x| (x, y))).map(|(x, y)| scene(x, y, f, g)).collect();
    // Distorted: [1 2 1] blur both ways, then each 8x8 block loses 1..4 low
    // bits (a coarse quantiser), then its own grain.
    let at = |x: isize, y: isize| reference[(y.clamp(0, h as isize - 1) as usize) * w + x.clamp(0, w as isize - 1) as usize];
    let mut distorted = vec![0i64; w * h];
    for y in 0..h {
        for x in 0..w {
            let (xi, yi) = (x as isize, y as isize);
            let row = |yy: isize| at(xi - 1, yy) + 2 * at(xi, yy) + at(xi + 1, yy);
            let blurred = (row(yi - 1) + 2 * row(yi) + row(yi + 1) + 8) >> 4;
            let q = 1 + (hash((x >> 3) as i64, (y >> 3) as i64, 1000 + f as u64) % 4) as u32;
            let quantised = ((blurred >> q) << q) + (1 << (q - 1));
            let grain = (hash(x as i64, y as i64, 5000 + f as u64) % 9) as i64 - 4;
            distorted[y * w + x] = (quantised + grain).clamp(0, 1023);
        }
    }
    let pack = |luma: &[i64]| {
        let bits = g.format.bits as u32;
        let put = |out: &mut Vec<u8>, v10: i64| {
            let v = if bits >= 10 { (v10 << (bits - 10)) as u16 } else { (v10 >> (10 - bits)) as u16 };
            if bits == 8 {
                out.push(v as u8);
            } else {
                out.extend_from_slice(&v.to_le_bytes());
            }
        };
        let mut out = Vec::with_capacity(g.frame_bytes());
        for v in luma {
            put(&mut out, *v);
        }
        // Chroma: a smooth function of the luma below it (VMAF reads luma
        // only; the planes are there so both tools get real 4:2:0 frames).
        let (cw, ch) = g.plane(1);
        for plane in 0..2 {
            for cy in 0..ch {
                for cx in 0..cw {
                    let l = luma[(2 * cy).min(h - 1) * w + (2 * cx).min(w - 1)];
                    let v = if plane == 0 { 512 + (l - 512) / 4 } else { 512 - (l - 512) / 5 };
                    put(&mut out, v);
                }
            }
        }
        out
    };
    (pack(&reference), pack(&distorted))
}

fn generate(o: &Opts) -> Result<()> {
    let g = ClipGeometry::from(o)?;
    if g.format.bits < 8 || g.format.bits > 16 {
        return Err(Error::invalid("--bits 8..16"));
    }
    let k = o.num("distinct", None)?.max(1);
    let dir = PathBuf::from(o.need("out")?);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let start = Instant::now();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(k);
    let mut pairs: Vec<Option<(Vec<u8>, Vec<u8>)>> = (0..k).map(|_| None).collect();
    std::thread::scope(|s| {
        let chunks: Vec<_> = pairs.chunks_mut(k.div_ceil(threads)).enumerate().collect();
        let per = k.div_ceil(threads);
        for (c, chunk) in chunks {
            s.spawn(move || {
                for (j, slot) in chunk.iter_mut().enumerate() {
                    *slot = Some(frame_pair(c * per + j, &g));
                }
            });
        }
    });
    let mut files = [Vec::new(), Vec::new()];
    for (r, d) in pairs.into_iter().flatten() {
        files[0].extend_from_slice(&r);
        files[1].extend_from_slice(&d);
    }
    for (name, bytes) in ["ref.yuv", "dis.yuv"].iter().zip(&files) {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))?;
    }
    println!(
        "RESULT {{\"generated\": {k}, \"width\": {}, \"height\": {}, \"bits\": {}, \"bytes\": {}, \"seconds\": {:.3}}}",
        g.width,
        g.height,
        g.format.bits,
        2 * files[0].len(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Reads `k` frames of a raw planar file into host pictures.
fn read_frames(path: &Path, g: &ClipGeometry, k: usize) -> Result<Vec<OwnedPicture>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let fb = g.frame_bytes();
    if bytes.len() < k * fb {
        return Err(Error::invalid(format!(
            "{}: {} bytes, {k} frames of {fb} expected",
            path.display(),
            bytes.len()
        )));
    }
    let bps = g.format.bytes_per_sample();
    (0..k)
        .map(|f| {
            let mut p = OwnedPicture::new(g.format, g.width, g.height)?;
            let mut off = f * fb;
            for i in 0..3 {
                let (w, h) = g.plane(i);
                p.fill_plane_from_packed(i, &bytes[off..off + w * h * bps])?;
                off += w * h * bps;
            }
            Ok(p)
        })
        .collect()
}

// --- device memory --------------------------------------------------------------

/// Device 0's primary context (the one a `DeviceChoice::Gpu { vendor: Cuda, index: 0 }`
/// context scores in), retained while the bench runs.
struct Primary {
    api: &'static cuda::CudaDriver,
    device: sys::CUdevice,
    ctx: sys::CUcontext,
    allocations: Vec<u64>,
}

fn check(api: &cuda::CudaDriver, rc: sys::CUresult, call: &str) -> Result<()> {
    cuda::result::check(api, rc, call)
}

impl Primary {
    fn open() -> Result<Primary> {
        let api = cuda::driver()?;
        let mut device = 0;
        // SAFETY: writes one int; device 0 exists if cuDeviceGet succeeds.
        check(api, unsafe { (api.cuDeviceGet)(&mut device, 0) }, "cuDeviceGet")?;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: released in Drop.
        check(api, unsafe { (api.cuDevicePrimaryCtxRetain)(&mut ctx, device) }, "cuDevicePrimaryCtxRetain")?;
        Ok(Primary { api, device, ctx, allocations: Vec::new() })
    }

    /// Copies a host plane to new device memory at the same pitch.
    fn upload(&mut self, data: &[u8]) -> Result<u64> {
        let api = self.api;
        // SAFETY: ctx is retained by self.
        let _guard = unsafe { ContextGuard::push(api, self.ctx) }?;
        let mut ptr = 0u64;
        // SAFETY: writes one pointer; the allocation is freed in Drop.
        check(api, unsafe { (api.cuMemAlloc_v2)(&mut ptr, data.len()) }, "cuMemAlloc")?;
        self.allocations.push(ptr);
        // SAFETY: ptr holds data.len() bytes; the legacy stream is
        // synchronised before `data` can go away.
        unsafe {
            check(api, (api.cuMemcpyHtoDAsync_v2)(ptr, data.as_ptr().cast::<c_void>(), data.len(), std::ptr::null_mut()), "cuMemcpyHtoDAsync")?;
            check(api, (api.cuStreamSynchronize)(std::ptr::null_mut()), "cuStreamSynchronize")?;
        }
        Ok(ptr)
    }

    /// A host picture's planes in device memory, as a device-only picture.
    fn device_picture(&mut self, p: &OwnedPicture) -> Result<DevicePicture> {
        let memory = DeviceMemoryId { kind: DeviceKind::Cuda, context: self.ctx as u64 };
        device_picture(p, memory, |data| self.upload(data))
    }
}

/// `p`'s planes, each copied to device memory by `upload` at the host
/// pitch, as a device-only picture in `memory` (either vendor).
fn device_picture(p: &OwnedPicture, memory: DeviceMemoryId, mut upload: impl FnMut(&[u8]) -> Result<u64>) -> Result<DevicePicture> {
    let view = p.view();
    let mut planes = Vec::new();
    for i in 0..view.plane_count() {
        let plane = view.plane(i);
        planes.push(DevPlane {
            ptr: upload(plane.data())?,
            pitch: plane.stride(),
            width: plane.width(),
            height: plane.height(),
            bytes_per_sample: plane.bytes_per_sample(),
        });
    }
    Ok(DevicePicture(DeviceFrame { memory, format: p.format(), width: p.width(), height: p.height(), planes, ready: None }))
}

impl Drop for Primary {
    fn drop(&mut self) {
        let api = self.api;
        // SAFETY: frees what `upload` allocated, then balances the retain.
        unsafe {
            if let Ok(_guard) = ContextGuard::push(api, self.ctx) {
                for p in self.allocations.drain(..) {
                    (api.cuMemFree_v2)(p);
                }
            }
            (api.cuDevicePrimaryCtxRelease_v2)(self.device);
        }
    }
}

/// HIP device 0's memory for device-resident frames of a HIP context.
struct HipFrames {
    api: &'static hip::HipRuntime,
    allocations: Vec<hip::sys::HipDevicePtr>,
}

impl HipFrames {
    fn open() -> Result<HipFrames> {
        let api = hip::runtime()?;
        // SAFETY: plain calls; device 0 exists if hipSetDevice succeeds.
        unsafe {
            api.check((api.hipInit)(0), "hipInit")?;
            api.check((api.hipSetDevice)(0), "hipSetDevice")?;
        }
        Ok(HipFrames { api, allocations: Vec::new() })
    }

    /// Copies a host plane to new device memory at the same pitch.
    fn upload(&mut self, data: &[u8]) -> Result<u64> {
        let api = self.api;
        let mut ptr: hip::sys::HipDevicePtr = 0;
        // SAFETY: writes one pointer; freed in Drop. The copy reads `data`
        // only until the null stream is synchronised, before it returns.
        unsafe {
            api.check((api.hipMalloc)(&mut ptr, data.len()), "hipMalloc")?;
            self.allocations.push(ptr);
            api.check((api.hipMemcpyHtoDAsync)(ptr, data.as_ptr().cast(), data.len(), std::ptr::null_mut()), "hipMemcpyHtoDAsync")?;
            api.check((api.hipStreamSynchronize)(std::ptr::null_mut()), "hipStreamSynchronize")?;
        }
        Ok(ptr)
    }

    fn device_picture(&mut self, p: &OwnedPicture) -> Result<DevicePicture> {
        device_picture(p, DeviceMemoryId { kind: DeviceKind::Hip, context: 0 }, |data| self.upload(data))
    }
}

impl Drop for HipFrames {
    fn drop(&mut self) {
        for p in self.allocations.drain(..) {
            // SAFETY: each came from hipMalloc on device 0, freed once.
            unsafe { (self.api.hipFree)(p) };
        }
    }
}

/// A picture that lives only in device memory.
struct DevicePicture(DeviceFrame);

impl PictureSource for DevicePicture {
    fn host(&self) -> Option<vmafx::Picture<'_>> {
        None
    }
    fn device_frame(&self) -> Option<&DeviceFrame> {
        Some(&self.0)
    }
}

// --- device memory in use ------------------------------------------------------

/// `cuMemGetInfo` of the driver, for the device memory a context takes: the
/// crate's driver table has no use for it, so the bench opens it itself.
struct MemInfo {
    _lib: libloading::Library,
    get_info: unsafe extern "C" fn(*mut usize, *mut usize) -> sys::CUresult,
    api: &'static cuda::CudaDriver,
    ctx: sys::CUcontext,
}

impl MemInfo {
    fn open(primary: &Primary) -> Result<MemInfo> {
        // The driver the lanes loaded: VMAFX_CUDA_LIB's when set.
        let path = std::env::var_os(cuda::DRIVER_ENV).unwrap_or_else(|| "libcuda.so.1".into());
        let fail = |e: libloading::Error| Error::Internal(format!("cuMemGetInfo_v2 from {}: {e}", path.to_string_lossy()));
        // SAFETY: the driver the lane has loaded already; loading it again
        // runs no new initialisers.
        let lib = unsafe { libloading::Library::new(&path) }.map_err(fail)?;
        // SAFETY: cuMemGetInfo_v2(size_t *free, size_t *total), cuda.h's
        // signature; the pointer lives as long as `_lib`.
        let get_info = unsafe { *lib.get::<unsafe extern "C" fn(*mut usize, *mut usize) -> sys::CUresult>(b"cuMemGetInfo_v2\0").map_err(fail)? };
        Ok(MemInfo { _lib: lib, get_info, api: primary.api, ctx: primary.ctx })
    }

    /// Device memory in use now (total minus free), bytes, on the whole
    /// device: every context of this process and any other's.
    fn used(&self) -> Result<usize> {
        // SAFETY: ctx is the primary context, retained by the bench for its
        // whole run.
        let _guard = unsafe { ContextGuard::push(self.api, self.ctx) }?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: writes two size_t.
        check(self.api, unsafe { (self.get_info)(&mut free, &mut total) }, "cuMemGetInfo")?;
        Ok(total - free)
    }
}

/// Device memory a run's context took: after set-up and the largest reading
/// while its frames were in flight, both as the increase over what was in
/// use before `Context::new`.
#[derive(Clone, Copy, Default)]
struct ContextMemory {
    after_setup: i64,
    at_end: i64,
}

// --- bandwidth --------------------------------------------------------------------

vmafx::kernel_set! {
    /// Grid-stride copy and read of 16-byte words.
    struct BandwidthKernels = "bench_bandwidth.cu", r#"
#include "vmafx_compat.h"
// Grid-stride copy and read of 16-byte words: the device memory ceiling
// the scoring kernels are compared with.
VMAFX_KERNEL void bench_copy(const uint4 *src, uint4 *dst, long long n) {
    long long step = (long long)gridDim.x * VMAFX_BLOCK;
    for (long long i = (long long)blockIdx.x * VMAFX_BLOCK + threadIdx.x; i < n; i += step)
        dst[i] = src[i];
}
VMAFX_KERNEL void bench_read(const uint4 *src, long long n, vx_u32 *out) {
    __shared__ vx_u32 scratch[VMAFX_BLOCK];
    long long step = (long long)gridDim.x * VMAFX_BLOCK;
    vx_u32 acc = 0;
    for (long long i = (long long)blockIdx.x * VMAFX_BLOCK + threadIdx.x; i < n; i += step) {
        uint4 v = src[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    vx_u32 s = vx_block_sum_u32(acc, scratch);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
"#, {
        bench_copy, bench_read,
    }
}
const BANDWIDTH: KernelSource = <BandwidthKernels<()> as KernelSet<()>>::SOURCE;

/// Compiles the bandwidth kernels with NVRTC for compute_90 (no GPU
/// needed): the check `cargo xtask bench-gpu pack` runs here.
fn compile_check() -> Result<()> {
    let ptx = vmafx::internals::device::gpu::compile::cuda_ptx(&BANDWIDTH, "compute_90")?;
    let text = String::from_utf8_lossy(&ptx);
    for entry in BANDWIDTH.entries {
        if !text.contains(&format!(".entry {entry}")) {
            return Err(Error::Internal(format!("{entry} missing from the PTX")));
        }
    }
    println!("RESULT {{\"compiled\": {}, \"ptx_bytes\": {}}}", json_str(BANDWIDTH.name), ptx.len());
    Ok(())
}

fn bandwidth(o: &Opts) -> Result<()> {
    let bytes = o.num("mib", Some(1024))? << 20;
    let iters = o.num("iters", Some(20))?.max(1);
    let lane = GpuLane::open(DeviceKind::Cuda, 0)?;
    let device = lane.name.clone();
    let mut engine = KernelRunner::new(lane)?;
    let k: BandwidthKernels<_> = engine.kernels()?;
    // Freed when the function returns.
    let (mut src_buf, mut dst_buf, mut out_buf) = (Scratch::default(), Scratch::default(), Scratch::default());
    let src = engine.scratch(&mut src_buf, bytes)?;
    let dst = engine.scratch(&mut dst_buf, bytes)?;
    const GRID: u32 = 4096;
    let out = engine.scratch(&mut out_buf, GRID as usize * 4)?;
    let words = (bytes / 16) as i64;
    let mut time = |copy: bool| -> Result<f64> {
        let run = |engine: &mut KernelRunner<GpuLane>| -> Result<()> {
            let (entry, args) = if copy {
                (k.bench_copy, Args::new().ptr(src).ptr(dst).i64(words))
            } else {
                (k.bench_read, Args::new().ptr(src).i64(words).ptr(out))
            };
            // SAFETY: bench_copy (src, dst, n) / bench_read (src, n, out):
            // src and dst hold n 16-byte words, out one u32 per block.
            unsafe { engine.launch(entry, (GRID, 1), args) }
        };
        run(&mut engine)?; // warm-up (first touch, JIT)
        engine.backend_mut().synchronize()?;
        let start = Instant::now();
        for _ in 0..iters {
            run(&mut engine)?;
        }
        engine.backend_mut().synchronize()?;
        Ok(start.elapsed().as_secs_f64())
    };
    let copy = time(true)?;
    let read = time(false)?;
    let gb = (bytes * iters) as f64 / 1e9;
    println!(
        "RESULT {{\"device\": {}, \"buffer_mib\": {}, \"iters\": {iters}, \"copy_gbs\": {:.1}, \"read_gbs\": {:.1}}}",
        json_str(&device),
        bytes >> 20,
        2.0 * gb / copy,
        gb / read
    );
    Ok(())
}

// --- scoring ------------------------------------------------------------------------

struct Run {
    seconds: f64,
    context: Context,
}

fn score_once(
    config: &ContextConfig,
    model: &Model,
    refs: &[Arc<dyn PictureSource>],
    dists: &[Arc<dyn PictureSource>],
    frames: usize,
    memory: Option<&MemInfo>,
) -> Result<(Run, f64, ContextMemory)> {
    let used = || memory.map_or(Ok(0), MemInfo::used).map(|b| b as i64);
    let before = used()?;
    let init = Instant::now();
    let mut context = Context::new(config.clone())?;
    context.use_model(model.clone())?;
    let init = init.elapsed().as_secs_f64();
    let after_setup = used()? - before;
    // Memory is read while frames are in flight, every eighth of the run and
    // before the flush: the flush stops the workers, whose lanes free their
    // buffers then (a reading after it saw 0 on the H200, 2026-12-04).
    let every = (frames / 8).max(1);
    let mut peak = after_setup;
    let start = Instant::now();
    for i in 0..frames {
        context.push(Arc::clone(&refs[i % refs.len()]), Arc::clone(&dists[i % dists.len()]))?;
        if memory.is_some() && ((i + 1) % every == 0 || i + 1 == frames) {
            peak = peak.max(used()? - before);
        }
    }
    context.flush()?;
    context.pooled(model.name(), PoolMethod::Mean, 0, frames as u32 - 1)?;
    let seconds = start.elapsed().as_secs_f64();
    Ok((Run { seconds, context }, init, ContextMemory { after_setup, at_end: peak }))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Frames per second from the median time of `frames` frames and of
/// `short` frames (0: none), and the fixed time per run (set-up + drain).
fn steady_rate(frames: usize, t: f64, short: usize, short_times: &[f64]) -> (f64, f64) {
    if short > 0 && !short_times.is_empty() {
        let per_frame = (t - median(short_times.to_vec())) / (frames - short) as f64;
        if per_frame > 0.0 {
            return (1.0 / per_frame, (t - frames as f64 * per_frame).max(0.0));
        }
    }
    (frames as f64 / t, 0.0)
}

/// The first difference between two contexts' features and scores, as bits.
fn compare(a: &Context, b: &Context, frames: usize) -> std::result::Result<usize, String> {
    let (ca, cb) = (a.collector(), b.collector());
    let mut names: Vec<&String> = ca.names().iter().collect();
    names.sort();
    let mut nb: Vec<&String> = cb.names().iter().collect();
    nb.sort();
    if names != nb {
        return Err(format!("feature names differ: {names:?} vs {nb:?}"));
    }
    let mut compared = 0;
    for name in names {
        for i in 0..frames as u32 {
            let (x, y) = (ca.get(name, i), cb.get(name, i));
            if x.map(f64::to_bits) != y.map(f64::to_bits) {
                return Err(format!("{name} frame {i}: {x:?} vs {y:?}"));
            }
            compared += 1;
        }
    }
    Ok(compared)
}

fn score(o: &Opts) -> Result<()> {
    let g = ClipGeometry::from(o)?;
    let device = o.need("device")?;
    let dir = PathBuf::from(o.need("dir")?);
    let k = o.num("distinct", None)?.max(1);
    let frames = o.num("frames", Some(k))?.max(1);
    let repeat = o.num("repeat", Some(3))?.max(1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // CPU: every core; GPU: one lane on the caller's thread unless asked
    // (each worker thread is a lane with its own stream, frames overlap).
    let threads = o.num("threads", Some(if device == "cpu" { cores } else { 0 }))?;
    let model_name = o.str("model").unwrap_or("vmaf_v0.6.1");
    let model = Model::builtin(model_name, &ModelConfig::default())?;

    let arcs = |v: Vec<OwnedPicture>| v.into_iter().map(Arc::new).collect::<Vec<_>>();
    let host_refs = arcs(read_frames(&dir.join("ref.yuv"), &g, k)?);
    let host_dists = arcs(read_frames(&dir.join("dis.yuv"), &g, k)?);
    let as_sources = |v: &[Arc<OwnedPicture>]| -> Vec<Arc<dyn PictureSource>> {
        v.iter().map(|p| Arc::clone(p) as Arc<dyn PictureSource>).collect()
    };

    let mut primary = None;
    let mut hip_frames = None;
    let (config, refs, dists, lane) = match device {
        "cpu" => (
            ContextConfig { threads, ..Default::default() },
            as_sources(&host_refs),
            as_sources(&host_dists),
            format!("vmafx-cpu-t{threads}"),
        ),
        "cuda" | "cuda-stream" => {
            let p = primary.insert(Primary::open()?);
            let ctx = p.ctx as u64;
            let mut upload = |v: &[Arc<OwnedPicture>]| -> Result<Vec<Arc<dyn PictureSource>>> {
                v.iter().map(|h| Ok(Arc::new(p.device_picture(h)?) as Arc<dyn PictureSource>)).collect()
            };
            let (r, d) = (upload(&host_refs)?, upload(&host_dists)?);
            // cuda: the context's own lane on device 0 (its primary context,
            // where the frames are); cuda-stream: the caller's context and
            // stream (here the primary context and its legacy default stream),
            // as FFmpeg hands over its CUDA device.
            let (device, lane) = if device == "cuda" {
                (DeviceChoice::Gpu { vendor: GpuVendor::Cuda, index: 0 }, "vmafx-cuda")
            } else {
                // SAFETY: the primary context `p` holds for the whole run,
                // and its default stream.
                (DeviceChoice::CudaStream(unsafe { CallerStream::new(ctx, 0) }), "vmafx-cuda-stream")
            };
            (ContextConfig { device, threads, ..Default::default() }, r, d, format!("{lane}-t{threads}"))
        }
        "hip" => {
            let h = hip_frames.insert(HipFrames::open()?);
            let mut upload = |v: &[Arc<OwnedPicture>]| -> Result<Vec<Arc<dyn PictureSource>>> {
                v.iter().map(|p| Ok(Arc::new(h.device_picture(p)?) as Arc<dyn PictureSource>)).collect()
            };
            let (r, d) = (upload(&host_refs)?, upload(&host_dists)?);
            let device = DeviceChoice::Gpu { vendor: GpuVendor::Hip, index: 0 };
            (ContextConfig { device, threads, ..Default::default() }, r, d, format!("vmafx-hip-t{threads}"))
        }
        other => return Err(Error::invalid(format!("--device {other}: cpu, cuda, cuda-stream or hip"))),
    };

    let memory = match &primary {
        Some(p) => Some(MemInfo::open(p)?),
        None => None,
    };
    let memory = memory.as_ref();
    // Warm-up: kernel compilation (or the cache), JIT, first allocations.
    let warm = Instant::now();
    score_once(&config, &model, &refs, &dists, frames.min(8), memory)?;
    let warmup = warm.elapsed().as_secs_f64();
    // Each repeat scores all frames, then a shorter run (a fifth of them)
    // on a fresh context: the difference of the medians is the steady rate,
    // free of what every run pays once (first-frame set-up, the drain at
    // flush), which is reported apart as fixed_s.
    let short = if frames >= 16 { (frames / 5).max(8) } else { 0 };
    let (mut times, mut short_times) = (Vec::new(), Vec::new());
    let mut init = 0.0;
    let mut last = None;
    // Device memory in runs of its own, untimed: the readings during a run
    // (cuMemGetInfo while the lanes allocate and launch) slowed the timed
    // runs they were taken in, up to twice at 4K on the H200 (2026-12-04).
    // Each run's figures are increases over what was in use before its
    // context, so each context drops before the next run.
    let (mut mem, mut mem_short) = (ContextMemory::default(), ContextMemory::default());
    if memory.is_some() {
        mem = score_once(&config, &model, &refs, &dists, frames, memory)?.2;
        if short > 0 {
            mem_short = score_once(&config, &model, &refs, &dists, short, memory)?.2;
        }
    }
    for _ in 0..repeat {
        drop(last.take());
        let (run, i, _) = score_once(&config, &model, &refs, &dists, frames, None)?;
        times.push(run.seconds);
        init = i;
        if short > 0 {
            let (short_run, _, _) = score_once(&config, &model, &refs, &dists, short, None)?;
            short_times.push(short_run.seconds);
        }
        last = Some(run.context);
    }
    let context = last.expect("repeat >= 1");
    let pooled = context.pooled(model.name(), PoolMethod::Mean, 0, frames as u32 - 1)?;
    let per_frame: Vec<String> = (0..frames as u32)
        .map(|i| context.score_at(model.name(), i).map_or("null".into(), |v| format!("{v:?}")))
        .collect();
    let first = &per_frame[..frames.min(3)];

    let mut check = String::from("null");
    let mut cpu_seconds = String::from("null");
    let mut cpu_pooled = String::from("null");
    if o.flag("check") && device != "cpu" {
        let cpu = ContextConfig { threads: cores, ..Default::default() };
        let (run, _, _) = score_once(&cpu, &model, &as_sources(&host_refs), &as_sources(&host_dists), frames, None)?;
        cpu_seconds = format!("{:.6}", run.seconds);
        cpu_pooled = format!("{:?}", run.context.pooled(model.name(), PoolMethod::Mean, 0, frames as u32 - 1)?);
        check = match compare(&context, &run.context, frames) {
            Ok(n) => json_str(&format!("equal: {n} values (every feature and score of {frames} frames, as bits)")),
            Err(e) => json_str(&format!("DIFFERENT: {e}")),
        };
    }
    drop(context);
    let memory_measured = memory.is_some();
    drop(refs);
    drop(dists);
    drop(primary);

    let t = median(times.clone());
    let (fps, fixed) = steady_rate(frames, t, short, &short_times);
    let bytes_per_frame = 3 * g.width * g.height * g.format.bytes_per_sample();
    println!(
        "RESULT {{\"lane\": {}, \"model\": {}, \"width\": {}, \"height\": {}, \"bits\": {}, \"frames\": {frames}, \"distinct\": {k}, \
         \"runs_s\": [{}], \"median_s\": {t:.6}, \"short_frames\": {short}, \"runs_short_s\": [{}], \"fps\": {fps:.2}, \
         \"fps_whole\": {:.2}, \"fixed_s\": {fixed:.4}, \"ms_per_frame\": {:.4}, \"bytes_per_frame\": {bytes_per_frame}, \
         \"gbs\": {:.2}, \"init_s\": {init:.4}, \"warmup_s\": {warmup:.3}, \"vmaf_pooled\": {pooled:?}, \"vmaf_first\": [{}], \
         \"check\": {check}, \"check_cpu_s\": {cpu_seconds}, \"check_cpu_threads\": {cores}, \"check_cpu_pooled\": {cpu_pooled}, \
         {}\"vmaf_frames\": [{}]}}",
        json_str(&lane),
        json_str(model_name),
        g.width,
        g.height,
        g.format.bits,
        times.iter().map(|s| format!("{s:.6}")).collect::<Vec<_>>().join(", "),
        short_times.iter().map(|s| format!("{s:.6}")).collect::<Vec<_>>().join(", "),
        frames as f64 / t,
        1e3 / fps,
        bytes_per_frame as f64 * fps / 1e9,
        first.join(", "),
        if memory_measured {
            format!(
                "\"device_bytes_context\": {}, \"device_bytes_end\": {}, \"device_bytes_end_short\": {}, ",
                mem.after_setup, mem.at_end, mem_short.at_end
            )
        } else {
            String::new()
        },
        per_frame.join(", "),
    );
    Ok(())
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into())
}
