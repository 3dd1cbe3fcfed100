//! Helpers of the device tests (tests/device/emu.rs, device_import.rs,
//! device_twins.rs): a seeded generator, planes in u16 storage (so 16-bit
//! samples are aligned) and their byte views, frames laid out as DRM
//! formats for import, device memory written and read back through a
//! lane (`device_bytes`, `read_plane`), and the `VMAFX_REQUIRE_GPU` rule.

use vmafx::{FrameDescriptor, PlaneView};
use vmafx::internals::device::gpu::backend::{Backend, DevPlane, DeviceMemory, KernelRunner};
use vmafx::internals::device::gpu::lane::{DeviceBuffer, GpuLane};
use vmafx::internals::import::{DrmFourcc, DrmModifier, Layer, Memory, Object, PlaneRef};

/// xorshift64*; seed with an odd number.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Whether `VMAFX_REQUIRE_GPU` (a comma list: cuda, hip) names `kind`: a
/// missing lane then fails instead of skipping.
pub fn gpu_required(kind: &str) -> bool {
    std::env::var("VMAFX_REQUIRE_GPU").is_ok_and(|v| v.split(',').any(|k| k == kind))
}

/// The bytes of u16 storage.
pub fn as_bytes(v: &[u16]) -> &[u8] {
    // SAFETY: u8 has no alignment or validity requirements; same memory.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), v.len() * 2) }
}

/// The bytes of u16 storage, writable.
pub fn as_bytes_mut(v: &mut [u16]) -> &mut [u8] {
    // SAFETY: as above.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), v.len() * 2) }
}

/// A plane of `f(x, y)` samples (called in row order) with `pad` bytes
/// after each row: (buffer, stride in bytes).
pub fn plane_of(w: usize, h: usize, bits: u32, pad: usize, mut f: impl FnMut(usize, usize) -> u64) -> (Vec<u16>, usize) {
    let bps = if bits == 8 { 1 } else { 2 };
    let stride = w * bps + pad;
    let mut buf = vec![0u16; (stride * h).div_ceil(2) + 1];
    let bytes = as_bytes_mut(&mut buf);
    for y in 0..h {
        for x in 0..w {
            let v = f(x, y);
            let at = y * stride + x * bps;
            if bps == 1 {
                bytes[at] = v as u8;
            } else {
                bytes[at..at + 2].copy_from_slice(&(v as u16).to_ne_bytes());
            }
        }
    }
    (buf, stride)
}

/// A view of a [`plane_of`] plane.
pub fn view(buf: &[u16], stride: usize, w: usize, h: usize, bits: u32) -> PlaneView<'_> {
    PlaneView::new(as_bytes(buf), stride, w, h, if bits == 8 { 1 } else { 2 }).unwrap()
}

/// A frame laid out as `format` in one byte buffer at `offset`, rows padded
/// by `pad` bytes (odd where the samples allow), and the planes it holds
/// as the core reads them (Y, U, V; 16-bit samples shifted down).
pub struct Layout {
    pub format: DrmFourcc,
    pub bits: u8,
    pub w: usize,
    pub h: usize,
    pub bytes: Vec<u8>,
    pub planes: Vec<PlaneRef>,
    pub want: Vec<Vec<Vec<u16>>>,
}

/// The formats [`layout`] lays out, in the order the tests walk them.
pub const LAYOUT_FORMATS: [DrmFourcc; 7] = [
    DrmFourcc::Nv12,
    DrmFourcc::P010,
    DrmFourcc::P012,
    DrmFourcc::P016,
    DrmFourcc::Yuv420,
    DrmFourcc::Nv24,
    DrmFourcc::Yuv444,
];

#[allow(clippy::needless_range_loop)]
pub fn layout(format: DrmFourcc, w: usize, h: usize, offset: usize, pad: usize, seed: u64) -> Layout {
    let (bits, bps, planar, sub): (u8, usize, bool, usize) = match format {
        DrmFourcc::Nv12 => (8, 1, false, 2),
        DrmFourcc::Nv24 => (8, 1, false, 1),
        DrmFourcc::P010 => (10, 2, false, 2),
        DrmFourcc::P012 => (12, 2, false, 2),
        DrmFourcc::P016 => (16, 2, false, 2),
        DrmFourcc::Yuv420 => (8, 1, true, 2),
        DrmFourcc::Yuv444 => (8, 1, true, 1),
        f => panic!("no layout for {f}"),
    };
    let pad = if bps == 2 { pad & !1 } else { pad };
    let (cw, ch) = (w.div_ceil(sub), h.div_ceil(sub));
    let ypitch = w * bps + pad;
    let cpitch = if planar { cw * bps + pad } else { 2 * cw * bps + pad };
    let offs = [offset, offset + ypitch * h, offset + ypitch * h + cpitch * ch];
    let len = offs[2] + if planar { cpitch * ch } else { 0 } + 5;
    let mut rng = Rng(seed | 1);
    let mut bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
    let shift = 16 - bits as u32;
    let mut put = |at: usize, v: u16| {
        if bps == 1 {
            bytes[at] = v as u8;
        } else {
            bytes[at..at + 2].copy_from_slice(&((v as u32) << (shift % 16)).to_le_bytes()[..2]);
        }
    };
    let max = (1u32 << bits) - 1;
    let mut sample = |_: usize| (rng.next() % (max as u64 + 1)) as u16;
    let mut want = vec![vec![vec![0u16; w]; h], vec![vec![0u16; cw]; ch], vec![vec![0u16; cw]; ch]];
    for y in 0..h {
        for x in 0..w {
            let v = sample(0);
            want[0][y][x] = v;
            put(offs[0] + y * ypitch + x * bps, v);
        }
    }
    for y in 0..ch {
        for x in 0..cw {
            let (u, v) = (sample(1), sample(2));
            want[1][y][x] = u;
            want[2][y][x] = v;
            if planar {
                put(offs[1] + y * cpitch + x * bps, u);
                put(offs[2] + y * cpitch + x * bps, v);
            } else {
                put(offs[1] + y * cpitch + 2 * x * bps, u);
                put(offs[1] + y * cpitch + (2 * x + 1) * bps, v);
            }
        }
    }
    let n = if planar { 3 } else { 2 };
    let pitches = [ypitch, cpitch, cpitch];
    let planes = (0..n)
        .map(|i| PlaneRef { object: 0, offset: offs[i] as u64, pitch: pitches[i] as u64 })
        .collect();
    Layout { format, bits, w, h, bytes, planes, want }
}


impl Layout {
    /// A one-object descriptor of the frame in `memory`.
    pub fn descriptor(&self, label: &str, memory: Memory, size: u64) -> FrameDescriptor {
        let mut d = FrameDescriptor::new(label, self.w, self.h, self.bits);
        d.objects.push(Object { memory, size, modifier: DrmModifier::Linear });
        d.layers.push(Layer { format: self.format, planes: self.planes.clone() });
        d
    }
}

/// Device memory holding `bytes`, allocated and written through the lane's
/// driver table (a producer's frame; an upload, which the host-copy counter
/// sees: tests measure it around the imports only).
pub fn device_bytes(engine: &mut KernelRunner<GpuLane>, bytes: &[u8]) -> DeviceBuffer {
    let b = engine.backend_mut();
    let buffer = b.alloc(bytes.len()).unwrap();
    b.upload(buffer.ptr(), bytes).unwrap();
    b.synchronize().unwrap();
    buffer
}

/// A device plane read back through the lane (a test's own check, not the
/// library's), as samples.
pub fn read_plane(engine: &mut KernelRunner<GpuLane>, p: &DevPlane) -> Vec<Vec<u16>> {
    let mut bytes = vec![0u8; p.span()];
    engine.backend_mut().download(&mut bytes, p.ptr).unwrap();
    (0..p.height)
        .map(|y| {
            let row = &bytes[y * p.pitch..y * p.pitch + p.width * p.bytes_per_sample];
            if p.bytes_per_sample == 1 {
                row.iter().map(|&b| b as u16).collect()
            } else {
                row.chunks_exact(2).map(|c| u16::from_ne_bytes([c[0], c[1]])).collect()
            }
        })
        .collect()
}
