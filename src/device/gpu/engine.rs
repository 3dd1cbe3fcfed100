//! The GPU engine shared by both vendors: loads the kernels once per lane,
//! keeps grow-only device buffers, and runs the integer twins of the CPU
//! kernels. Only integer sums come back; the host adds per-row sums in u64
//! exactly as the CPU code does, so results are identical by construction.

use super::kernels::{self, KernelSource, BLOCK};
use crate::picture::PlaneView;
use crate::{Error, Result};
use std::ffi::c_void;

/// What a vendor lane provides: memory, copies, modules, launches. Device
/// pointers are carried as `u64` (CUDA's `CUdeviceptr`, HIP's `void *`).
pub trait Backend {
    type Function: Copy;
    /// Compiles (through the cache) and loads `kernel`, returning its entries
    /// in the order of `kernel.entries`.
    fn load(&mut self, kernel: &KernelSource) -> Result<Vec<Self::Function>>;
    fn alloc(&mut self, bytes: usize) -> Result<u64>;
    fn free(&mut self, ptr: u64);
    fn upload(&mut self, dst: u64, src: &[u8]) -> Result<()>;
    fn download(&mut self, dst: &mut [u8], src: u64) -> Result<()>;
    /// Launches `f` on a (grid_x, grid_y) grid of `BLOCK`-thread blocks.
    ///
    /// # Safety
    /// `args` point at one value per kernel parameter, of the parameter's
    /// type, and every device pointer among them spans what the kernel
    /// reads or writes for this grid.
    unsafe fn launch(
        &mut self,
        f: Self::Function,
        grid: (u32, u32),
        args: &mut [*mut c_void],
    ) -> Result<()>;
    fn synchronize(&mut self) -> Result<()>;
}

/// Errors from releases that cannot return one (frees, unloads, stream and
/// context releases in `Drop`), kept for [`take_drop_errors`] as cudarc
/// keeps them for `check_err`. Bounded, oldest kept.
static DROP_ERRORS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
const MAX_DROP_ERRORS: usize = 64;

pub(crate) fn record_drop_error(e: Error) {
    if let Ok(mut errors) = DROP_ERRORS.lock() {
        if errors.len() < MAX_DROP_ERRORS {
            errors.push(e.to_string());
        }
    }
}

/// The release errors recorded since the last call, oldest first.
pub fn take_drop_errors() -> Vec<String> {
    DROP_ERRORS
        .lock()
        .map(|mut e| std::mem::take(&mut *e))
        .unwrap_or_default()
}

/// A device buffer that grows and is freed by the engine.
#[derive(Default)]
struct Buffer {
    ptr: u64,
    bytes: usize,
}

pub struct Engine<B: Backend> {
    backend: B,
    motion: Vec<B::Function>,
    psnr: Vec<B::Function>,
    // prev/ref, cur/dis, blurred rows, per-row sums.
    buffers: [Buffer; 4],
}

// SAFETY: the functions are module handles valid in the backend's context
// from any thread; the backend (Send) makes that context current per call.
unsafe impl<B: Backend + Send> Send for Engine<B> {}

/// Bytes a plane view spans: up to the end of its last row.
fn plane_bytes(p: &PlaneView) -> usize {
    (p.height() - 1) * p.stride() + p.width() * p.bytes_per_sample()
}

fn int(v: usize, what: &str) -> Result<i32> {
    i32::try_from(v)
        .map_err(|_| Error::NotSupported(format!("{what} {v} is too large for the GPU kernels")))
}

impl<B: Backend> Engine<B> {
    pub fn new(mut backend: B) -> Result<Self> {
        let motion = backend.load(&kernels::MOTION)?;
        let psnr = backend.load(&kernels::PSNR)?;
        Ok(Self {
            backend,
            motion,
            psnr,
            buffers: Default::default(),
        })
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    fn reserve(&mut self, slot: usize, bytes: usize) -> Result<u64> {
        let b = &mut self.buffers[slot];
        if b.bytes < bytes {
            if b.ptr != 0 {
                self.backend.free(b.ptr);
                *b = Buffer::default();
            }
            let ptr = self.backend.alloc(bytes.max(1))?;
            self.buffers[slot] = Buffer { ptr, bytes };
        }
        Ok(self.buffers[slot].ptr)
    }

    fn upload_plane(&mut self, slot: usize, p: &PlaneView) -> Result<u64> {
        let data = &p.data()[..plane_bytes(p)];
        let ptr = self.reserve(slot, data.len())?;
        self.backend.upload(ptr, data)?;
        Ok(ptr)
    }

    /// Motion SAD of two luma planes: [`crate::feature::motion::sad_scalar`].
    pub fn motion_sad(&mut self, prev: &PlaneView, cur: &PlaneView, bits: u32) -> Result<u64> {
        let (w, h) = (cur.width(), cur.height());
        if prev.width() != w || prev.height() != h || prev.stride() != cur.stride() {
            return Err(Error::Mismatch(
                "motion: planes differ in size or stride".into(),
            ));
        }
        let (wi, hi, stride) = (
            int(w, "width")?,
            int(h, "height")?,
            int(cur.stride(), "stride")?,
        );
        let p = self.upload_plane(0, prev)?;
        let c = self.upload_plane(1, cur)?;
        let y = self.reserve(2, w * h * 4)?;
        let rows = self.reserve(3, h * 4)?;
        let (mut p, mut c, mut y, mut rows) = (p, c, y, rows);
        let (mut wi, mut hi, mut stride, mut bits_i, mut y_stride) =
            (wi, hi, stride, bits as i32, wi);
        let grid_x = (w as u32).div_ceil(BLOCK);
        if bits == 8 {
            let mut args = [
                &mut p as *mut u64 as *mut c_void,
                &mut c as *mut u64 as _,
                &mut stride as *mut i32 as _,
                &mut wi as *mut i32 as _,
                &mut hi as *mut i32 as _,
                &mut y as *mut u64 as _,
                &mut y_stride as *mut i32 as _,
            ];
            // SAFETY: args follow the kernel signatures in kernels/; buffers were
            // reserved for the plane sizes above.
            unsafe {
                self.backend
                    .launch(self.motion[0], (grid_x, h as u32), &mut args)
            }?;
        } else {
            let mut args = [
                &mut p as *mut u64 as *mut c_void,
                &mut c as *mut u64 as _,
                &mut stride as *mut i32 as _,
                &mut wi as *mut i32 as _,
                &mut hi as *mut i32 as _,
                &mut bits_i as *mut i32 as _,
                &mut y as *mut u64 as _,
                &mut y_stride as *mut i32 as _,
            ];
            // SAFETY: args follow the kernel signatures in kernels/; buffers were
            // reserved for the plane sizes above.
            unsafe {
                self.backend
                    .launch(self.motion[1], (grid_x, h as u32), &mut args)
            }?;
        }
        let mut args = [
            &mut y as *mut u64 as *mut c_void,
            &mut y_stride as *mut i32 as _,
            &mut wi as *mut i32 as _,
            &mut rows as *mut u64 as _,
        ];
        // SAFETY: args follow the kernel signatures in kernels/; buffers were
        // reserved for the plane sizes above.
        unsafe {
            self.backend
                .launch(self.motion[2], (1, h as u32), &mut args)
        }?;
        let mut out = vec![0u8; h * 4];
        self.backend.download(&mut out, rows)?;
        self.backend.synchronize()?;
        Ok(out
            .chunks_exact(4)
            .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as u64)
            .sum())
    }

    /// SSE over the top-left `w` x `h`: [`crate::feature::psnr::sse_u8`] /
    /// [`crate::feature::psnr::sse_u16`].
    pub fn psnr_sse(&mut self, r: &PlaneView, d: &PlaneView, w: usize, h: usize) -> Result<u64> {
        if w > r.width().min(d.width()) || h > r.height().min(d.height()) || w == 0 || h == 0 {
            return Err(Error::invalid(format!(
                "psnr: region {w}x{h} outside the planes"
            )));
        }
        let wide = r.bytes_per_sample() == 2;
        let (mut wi, mut sr, mut sd) = (
            int(w, "width")?,
            int(r.stride(), "stride")?,
            int(d.stride(), "stride")?,
        );
        let mut a = self.upload_plane(0, r)?;
        let mut b = self.upload_plane(1, d)?;
        let mut rows = self.reserve(3, h * 8)?;
        let mut args = [
            &mut a as *mut u64 as *mut c_void,
            &mut b as *mut u64 as _,
            &mut sr as *mut i32 as _,
            &mut sd as *mut i32 as _,
            &mut wi as *mut i32 as _,
            &mut rows as *mut u64 as _,
        ];
        // SAFETY: args follow the kernel signatures in kernels/; buffers were
        // reserved for the plane sizes above.
        unsafe {
            self.backend
                .launch(self.psnr[usize::from(wide)], (1, h as u32), &mut args)
        }?;
        let mut out = vec![0u8; h * 8];
        self.backend.download(&mut out, rows)?;
        self.backend.synchronize()?;
        Ok(out
            .chunks_exact(8)
            .map(|b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
            .sum())
    }
}

impl<B: Backend> Drop for Engine<B> {
    fn drop(&mut self) {
        for b in &mut self.buffers {
            if b.ptr != 0 {
                self.backend.free(b.ptr);
                b.ptr = 0;
            }
        }
    }
}
