//! Motion's device twin (kernels/motion.cu): the SAD of libvmaf 3.2.0's
//! `integer_motion.c` on a lane ([`TwinLane`]). Two launches (the blurred
//! difference, its row sums) and one download of the rows, added on the
//! host in u64 as [`super::sad_scalar`] adds them.

use crate::device::gpu::backend::{int, scratch_struct, Args, DevPlane};
use crate::device::gpu::kernels::{MotionKernels, BLOCK};
use crate::device::gpu::twin::TwinLane;
use crate::picture::PlaneView;
use crate::{Error, Result};

scratch_struct! {
/// The motion twin's device buffers.
struct MotionScratch {
    /// Host planes uploaded by [`sad`].
    prev,
    cur,
    /// The blurred difference, then its per-row sums.
    y,
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
    let y = lane.grow(&mut s.y, w * h * 4)?;
    let rows = lane.grow(&mut s.rows, h * 4)?;
    let grid_x = (w as u32).div_ceil(BLOCK);
    let args = Args::new()
        .ptr(prev.ptr)
        .ptr(cur.ptr)
        .i32(int(prev.pitch, "pitch")?)
        .i32(int(cur.pitch, "pitch")?)
        .i32(wi)
        .i32(hi);
    let (entry, args) = if bits == 8 {
        (k.motion_blur_y_8, args.ptr(y).i32(wi))
    } else {
        (k.motion_blur_y_16, args.i32(bits as i32).ptr(y).i32(wi))
    };
    // SAFETY: motion_blur_y_8 (prev, cur, prev_pitch, cur_pitch, w, h, y,
    // y_stride) and motion_blur_y_16 (.., h, bits, y, y_stride); each plane
    // spans h rows of its pitch, y holds w * h i32.
    unsafe { lane.launch(entry, (grid_x, h as u32), args) }?;
    // SAFETY: motion_row_sad (y, y_stride, w, row_sad); rows holds h u32.
    unsafe { lane.launch(k.motion_row_sad, (1, h as u32), Args::new().ptr(y).i32(wi).i32(wi).ptr(rows)) }?;
    Ok(lane.download_vec::<u32>(rows, h)?.into_iter().map(u64::from).sum())
}
