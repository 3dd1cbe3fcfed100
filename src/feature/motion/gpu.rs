//! Motion's device twin (kernels/motion.cu): the SAD of libvmaf 3.2.0's
//! `integer_motion.c` on a lane ([`TwinLane`]). Two launches (the row sums
//! zeroed, then both blur passes per tile adding into them) and one
//! download of the rows, added on the host in u64 as
//! [`super::sad_scalar`] adds them.

use crate::device::gpu::backend::{int, scratch_struct, Args, DevPlane};
use crate::device::gpu::kernels::{MotionKernels, BLOCK};
use crate::device::gpu::twin::TwinLane;
use crate::picture::PlaneView;
use crate::{Error, Result};

/// kernels/motion.cu's tile (VX_MOTION_TW x VX_MOTION_TH).
const TILE_W: u32 = 256;
const TILE_H: u32 = 16;

scratch_struct! {
/// The motion twin's device buffers.
struct MotionScratch {
    /// Host planes uploaded by [`sad`].
    prev,
    cur,
    /// The per-row sums (u32, wrapping).
    rows,
}
}

/// [`super::sad_scalar`] of two host luma planes (copied to the device first).
pub fn sad<L: TwinLane>(lane: &mut L, prev: &PlaneView, cur: &PlaneView, bits: u32) -> Result<u64> {
    lane.with_scratch(|lane, s: &mut MotionScratch<L::Buffer>| {
        let p = lane.upload_plane(&mut s.prev, prev)?;
        let c = lane.upload_plane(&mut s.cur, cur)?;
        sad_on(lane, s, p, c, bits)
    })
}

/// [`super::sad_scalar`] of two luma planes in the lane's memory.
pub fn sad_dev<L: TwinLane>(lane: &mut L, prev: DevPlane, cur: DevPlane, bits: u32) -> Result<u64> {
    lane.with_scratch(|lane, s: &mut MotionScratch<L::Buffer>| sad_on(lane, s, prev, cur, bits))
}

fn sad_on<L: TwinLane>(lane: &mut L, s: &mut MotionScratch<L::Buffer>, prev: DevPlane, cur: DevPlane, bits: u32) -> Result<u64> {
    let (w, h) = (cur.width, cur.height);
    if prev.width != w || prev.height != h || prev.bytes_per_sample != cur.bytes_per_sample {
        return Err(Error::Mismatch("motion: planes differ in size or depth".into()));
    }
    let k: MotionKernels<L::Kernel> = lane.kernels()?;
    let (wi, hi) = (int(w, "width")?, int(h, "height")?);
    let rows = lane.grow(&mut s.rows, h * 4)?;
    // SAFETY: motion_zero (p, n); rows holds h u32.
    unsafe { lane.launch(k.motion_zero, ((h as u32).div_ceil(BLOCK), 1), Args::new().ptr(rows).i32(hi)) }?;
    let grid = ((w as u32).div_ceil(TILE_W), (h as u32).div_ceil(TILE_H));
    let args = Args::new()
        .ptr(prev.ptr)
        .ptr(cur.ptr)
        .i32(int(prev.pitch, "pitch")?)
        .i32(int(cur.pitch, "pitch")?)
        .i32(wi)
        .i32(hi);
    let (entry, args) = if bits == 8 {
        (k.motion_sad_8, args.ptr(rows))
    } else {
        (k.motion_sad_16, args.i32(bits as i32).ptr(rows))
    };
    // SAFETY: motion_sad_8 (prev, cur, prev_pitch, cur_pitch, w, h,
    // row_sad) and motion_sad_16 (.., h, bits, row_sad); each plane spans h
    // rows of its pitch, rows holds h u32, zeroed above on the same stream.
    unsafe { lane.launch(entry, grid, args) }?;
    Ok(lane.download_vec::<u32>(rows, h)?.into_iter().map(u64::from).sum())
}
