//! PSNR's device twin (kernels/psnr.cu, libvmaf 3.2.0 `integer_psnr.c`) on
//! a lane ([`TwinLane`]): the row kernels for every plane of a picture into
//! one buffer, one download, the rows added on the host in u64 as
//! [`super::sse_u8`] / [`super::sse_u16`] add them. A context on a GPU
//! scores PSNR with one stream sync per frame instead of one per plane.

use crate::device::gpu::backend::{int, scratch_struct, Args, DevPlane};
use crate::device::gpu::kernels::PsnrKernels;
use crate::device::gpu::twin::TwinLane;
use crate::picture::PlaneView;
use crate::{Error, Result};

scratch_struct! {
/// The PSNR twin's device buffers.
struct PsnrScratch {
    /// Host planes uploaded by [`sse`].
    reference,
    distorted,
    /// Per-row sums of every region.
    rows,
}
}

/// One plane pair and the top-left region whose SSE is wanted.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SseRegion {
    pub reference: DevPlane,
    pub distorted: DevPlane,
    pub width: usize,
    pub height: usize,
}

/// The SSE over the top-left `w` x `h` of two host planes (copied to the
/// device first).
pub fn sse<L: TwinLane>(lane: &mut L, r: &PlaneView, d: &PlaneView, w: usize, h: usize) -> Result<u64> {
    lane.with_scratch(|lane, s: &mut PsnrScratch<L::Buffer>| {
        let a = lane.upload_plane(&mut s.reference, r)?;
        let b = lane.upload_plane(&mut s.distorted, d)?;
        Ok(regions_on(lane, s, &[one_region(a, b, w, h)?])?[0])
    })
}

/// The SSE over the top-left `w` x `h` of two planes in the lane's memory.
pub fn sse_dev<L: TwinLane>(lane: &mut L, r: DevPlane, d: DevPlane, w: usize, h: usize) -> Result<u64> {
    Ok(sse_regions_dev(lane, &[one_region(r, d, w, h)?])?[0])
}

/// A non-empty region inside both planes.
fn one_region(reference: DevPlane, distorted: DevPlane, width: usize, height: usize) -> Result<SseRegion> {
    if width == 0 || height == 0 || width > reference.width.min(distorted.width) || height > reference.height.min(distorted.height) {
        return Err(Error::invalid(format!("psnr: region {width}x{height} outside the planes")));
    }
    Ok(SseRegion { reference, distorted, width, height })
}

/// The SSE of each region; empty regions are 0, as on the CPU, and launch
/// nothing.
pub(crate) fn sse_regions_dev<L: TwinLane>(lane: &mut L, regions: &[SseRegion]) -> Result<Vec<u64>> {
    lane.with_scratch(|lane, s: &mut PsnrScratch<L::Buffer>| regions_on(lane, s, regions))
}

fn regions_on<L: TwinLane>(lane: &mut L, s: &mut PsnrScratch<L::Buffer>, regions: &[SseRegion]) -> Result<Vec<u64>> {
    for r in regions {
        let (a, b) = (&r.reference, &r.distorted);
        if r.width > a.width.min(b.width) || r.height > a.height.min(b.height) {
            return Err(Error::invalid(format!("psnr: region {}x{} outside the planes", r.width, r.height)));
        }
        if a.bytes_per_sample != b.bytes_per_sample {
            return Err(Error::Mismatch("psnr: planes differ in depth".into()));
        }
    }
    let rows_total: usize = regions.iter().map(|r| if r.width == 0 { 0 } else { r.height }).sum();
    if rows_total == 0 {
        return Ok(vec![0; regions.len()]);
    }
    let k: PsnrKernels<L::Kernel> = lane.kernels()?;
    let rows = lane.grow(&mut s.rows, rows_total * 8)?;
    let mut at = 0usize;
    for r in regions {
        if r.width == 0 || r.height == 0 {
            continue;
        }
        let entry = if r.reference.bytes_per_sample == 2 { k.psnr_sse_row_16 } else { k.psnr_sse_row_8 };
        let args = Args::new()
            .ptr(r.reference.ptr)
            .ptr(r.distorted.ptr)
            .i32(int(r.reference.pitch, "pitch")?)
            .i32(int(r.distorted.pitch, "pitch")?)
            .i32(int(r.width, "width")?)
            .ptr(rows + (at * 8) as u64);
        // SAFETY: psnr_sse_row_8/16 (ref, dis, ref_stride, dis_stride, w,
        // row_sse); each plane spans `height` rows of its pitch (checked
        // above against the planes' sizes); rows + at holds `height` u64
        // (at + height <= rows_total).
        unsafe { lane.launch(entry, (1, int(r.height, "height")? as u32), args) }?;
        at += r.height;
    }
    let sums = lane.download_vec::<u64>(rows, rows_total)?;
    let mut at = 0usize;
    Ok(regions
        .iter()
        .map(|r| {
            if r.width == 0 || r.height == 0 {
                return 0;
            }
            let sse = sums[at..at + r.height].iter().sum();
            at += r.height;
            sse
        })
        .collect())
}
