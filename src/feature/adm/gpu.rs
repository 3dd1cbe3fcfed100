//! ADM's device twin (kernels/adm.cu) on a lane ([`TwinLane`]): the twin of
//! [`super::AdmCpu::sums`], libvmaf 3.2.0's
//! `feature/integer_adm.c` up to its integer accumulators. Per scale two
//! launches (DWT with decouple and CSF fused; masking, den and the row
//! sums), one zeroing launch and one download of the 36 accumulators per
//! frame; the float finish is the CPU's ([`AdmParams::scores`]).

use super::{self as adm, dwt, AdmParams, AdmScaleSums, AdmSums, Region, DEN_SQ_SHIFT};
use crate::device::gpu::backend::{int, scratch_struct, Args, DevPlane};
use crate::device::gpu::kernels::{AdmKernels, BLOCK};
use crate::device::gpu::twin::TwinLane;
use crate::picture::PlaneView;
use crate::{Error, Result};

/// Accumulators per scale: den, num, aim, each h, v, d.
const SUMS_PER_SCALE: usize = 9;

scratch_struct! {
/// The ADM twin's device buffers.
struct AdmScratch {
    /// Host planes uploaded by [`sums`].
    reference,
    distorted,
    /// Scale 0's low bands (i32) and h, v, d bands (i16) of both pictures.
    lo0,
    hvd16,
    /// Scales 1-3: h, v, d of both, then two pairs of low bands.
    b32,
    /// Per-row sums of the masking launches.
    sums,
    /// The 36 accumulators downloaded per frame.
    acc,
}
}

/// The fused decouple + CSF arguments of a DWT launch (ADM_FUSE_PARAMS).
fn fuse_args(args: Args, fuse: bool, taps: Region, egl: f64, rf: [u32; 3], do_aim: bool, sums: u64) -> Result<Args> {
    Ok(args
        .i32(i32::from(fuse))
        .i32(int(taps.top, "row")?)
        .i32(int(taps.bottom, "row")?)
        .i32(int(taps.left, "column")?)
        .i32(int(taps.right, "column")?)
        .f64(egl)
        .u32(rf[0])
        .u32(rf[1])
        .u32(rf[2])
        .i32(i32::from(do_aim))
        .ptr(sums))
}

/// ADM sums of two host luma planes (copied to the device first).
pub fn sums<L: TwinLane>(lane: &mut L, r: &PlaneView, d: &PlaneView, params: &AdmParams) -> Result<AdmSums> {
    adm::check_planes(params, r, d)?;
    lane.with_scratch(|lane, scratch: &mut AdmScratch<L::Buffer>| {
        let a = lane.upload_plane(&mut scratch.reference, r)?;
        let b = lane.upload_plane(&mut scratch.distorted, d)?;
        sums_on(lane, scratch, a, b, params)
    })
}

/// ADM sums of two luma planes in the lane's memory (any pitch), equal to
/// [`super::sums_scalar`].
pub fn sums_dev<L: TwinLane>(lane: &mut L, r: DevPlane, d: DevPlane, params: &AdmParams) -> Result<AdmSums> {
    lane.with_scratch(|lane, scratch: &mut AdmScratch<L::Buffer>| sums_on(lane, scratch, r, d, params))
}

fn sums_on<L: TwinLane>(
    lane: &mut L,
    scratch: &mut AdmScratch<L::Buffer>,
    r: DevPlane,
    d: DevPlane,
    p: &AdmParams,
) -> Result<AdmSums> {
    let bps = if p.bits == 8 { 1 } else { 2 };
    for plane in [&r, &d] {
        if plane.width != p.width || plane.height != p.height || plane.bytes_per_sample != bps {
            return Err(Error::Mismatch(format!(
                "adm: a {}x{} plane of {} bytes per sample for ADM made for {}x{} {}-bit",
                plane.width, plane.height, plane.bytes_per_sample, p.width, p.height, p.bits
            )));
        }
        // The kernels read 16-bit samples as u16: rows must stay aligned.
        if bps == 2 && (plane.pitch % 2 != 0 || plane.ptr % 2 != 0) {
            return Err(Error::NotSupported(format!(
                "adm: 16-bit samples at an odd address or pitch ({:#x}, {})",
                plane.ptr, plane.pitch
            )));
        }
    }
    let k: AdmKernels<L::Kernel> = lane.kernels()?;
    let s0 = &p.scales[0];
    let n0 = s0.w * s0.h;
    let n1 = p.scales[1].w * p.scales[1].h;
    // Scale 0: low bands (i32) and h, v, d (i16), reference then distorted.
    let lo0 = lane.grow(&mut scratch.lo0, 2 * n0 * 4)?;
    let hvd16 = lane.grow(&mut scratch.hvd16, 2 * 3 * n0 * 2)?;
    // Scales 1-3: h, v, d of both, then two pairs of low bands (ping-pong).
    let b32 = lane.grow(&mut scratch.b32, 10 * n1 * 4)?;
    let sums = lane.grow(&mut scratch.sums, 4 * n0 * 4)?;
    let acc = lane.grow(&mut scratch.acc, 4 * SUMS_PER_SCALE * 8)?;
    let do_aim = !p.skip_aim;
    let egl = p.enhn_gain_limit;

    // SAFETY: adm_zero (acc, n); acc holds 36 u64.
    unsafe { lane.launch(k.adm_zero, (1, 1), Args::new().ptr(acc).i32((4 * SUMS_PER_SCALE) as i32)) }?;

    // Scale 0.
    let w = int(s0.w, "width")?;
    let fuse = !p.skip_scale0;
    let shift = if p.bits == 8 { 8 } else { p.bits as i32 };
    let rf0 = p.s0.i_rfactor.map(u32::from);
    let args = Args::new()
        .ptr(r.ptr)
        .ptr(d.ptr)
        .i32(int(r.pitch, "pitch")?)
        .i32(int(d.pitch, "pitch")?)
        .i32(int(s0.in_w, "width")?)
        .i32(int(s0.in_h, "height")?)
        .i32(shift)
        .i32(w)
        .i32(int(n0, "band size")?)
        .ptr(lo0)
        .ptr(lo0 + (n0 * 4) as u64)
        .ptr(hvd16)
        .ptr(hvd16 + (3 * n0 * 2) as u64);
    let args = fuse_args(args, fuse, s0.taps, egl, rf0, do_aim, sums)?;
    let entry = if p.bits == 8 { k.adm_dwt_s0_8 } else { k.adm_dwt_s0_16 };
    let grid = ((s0.w as u32).div_ceil(BLOCK), s0.h as u32);
    // SAFETY: adm_dwt_s0_8/16 (ADM_DWT_S0_ARGS); the planes span in_h rows
    // of their pitches (checked sizes), lo0 holds 2 * n0 i32, hvd16 6 * n0
    // i16, sums 4 * n0 i32.
    unsafe { lane.launch(entry, grid, args) }?;
    if fuse {
        let c = p.s0.cm;
        let args = cm_args(hvd16, hvd16 + (3 * n0 * 2) as u64, p, 0, rf0, sums)?
            .i32((c.cub_hv.0 & 63) as i32)
            .i64(c.cub_hv.1 as i64)
            .i32((c.cub_d.0 & 63) as i32)
            .i64(c.cub_d.1 as i64)
            .i32((c.inner.0 & 63) as i32)
            .i64(c.inner.1 as i64)
            .i32(0)
            .i32(0)
            .i64(0)
            .i32((s0.den.accum.0 & 63) as i32)
            .i64(s0.den.accum.1 as i64)
            .ptr(acc);
        let rows = (s0.score.bottom - s0.score.top) as u32;
        // SAFETY: adm_cm_s0 (ADM_CM_ARGS(vx_i16)); it reads the bands and
        // sums written above (score region and one more row/column of
        // reach, inside the taps region) and adds to acc[0..9].
        unsafe { lane.launch(k.adm_cm_s0, (1, rows), args) }?;
    }

    // Scales 1-3: read the previous low bands, write this scale's.
    let ref_hvd = b32;
    let dis_hvd = b32 + (3 * n1 * 4) as u64;
    let lo_pairs = [b32 + (6 * n1 * 4) as u64, b32 + (8 * n1 * 4) as u64];
    let mut src = (lo0, lo0 + (n0 * 4) as u64);
    for scale in 1..4 {
        let sp = &p.scales[scale];
        let c = &p.s123[scale - 1];
        let n = sp.w * sp.h;
        let dst = lo_pairs[(scale - 1) % 2];
        let dst = (dst, dst + (n1 * 4) as u64);
        let (vadd, vshift, hadd, hshift) = dwt::S123_ROUNDING[scale - 1];
        let args = Args::new()
            .ptr(src.0)
            .ptr(src.1)
            .i32(int(sp.in_w, "width")?)
            .i32(int(sp.in_h, "height")?)
            .i64(vadd)
            .i32(vshift as i32)
            .i64(hadd)
            .i32(hshift as i32)
            .i32(int(sp.w, "width")?)
            .i32(int(n, "band size")?)
            .ptr(dst.0)
            .ptr(dst.1)
            .ptr(ref_hvd)
            .ptr(dis_hvd);
        let args = fuse_args(args, true, sp.taps, egl, c.i_rfactor, do_aim, sums)?;
        let grid = ((sp.w as u32).div_ceil(BLOCK), sp.h as u32);
        // SAFETY: adm_dwt_s123; src holds in_w * in_h i32 per picture (the
        // previous scale's packed low bands), dst n, the hvd planes 3 * n
        // each (n <= n1), sums 4 * n (<= n0).
        unsafe { lane.launch(k.adm_dwt_s123, grid, args) }?;
        let sh = c.cm;
        let args = cm_args(ref_hvd, dis_hvd, p, scale, c.i_rfactor, sums)?
            .i32((sh.cub.0 & 63) as i32)
            .i64(sh.cub.1 as i64)
            .i32((sh.cub.0 & 63) as i32)
            .i64(sh.cub.1 as i64)
            .i32((sh.inner.0 & 63) as i32)
            .i64(sh.inner.1 as i64)
            .i32(DEN_SQ_SHIFT[scale - 1] as i32)
            .i32((sp.den.cub.0 & 63) as i32)
            .i64(sp.den.cub.1 as i64)
            .i32((sp.den.accum.0 & 63) as i32)
            .i64(sp.den.accum.1 as i64)
            .ptr(acc + (scale * SUMS_PER_SCALE * 8) as u64);
        let rows = (sp.score.bottom - sp.score.top) as u32;
        // SAFETY: adm_cm_s123 (ADM_CM_ARGS(vx_i32)), as scale 0's; acc has
        // this scale's nine u64.
        unsafe { lane.launch(k.adm_cm_s123, (1, rows), args) }?;
        src = dst;
    }

    let v = lane.download_vec::<u64>(acc, 4 * SUMS_PER_SCALE)?;
    let mut out = AdmSums::default();
    for (scale, t) in out.scales.iter_mut().enumerate() {
        let s = &v[scale * SUMS_PER_SCALE..(scale + 1) * SUMS_PER_SCALE];
        *t = AdmScaleSums {
            den: [s[0], s[1], s[2]],
            num: [s[3] as i64, s[4] as i64, s[5] as i64],
            aim: [s[6] as i64, s[7] as i64, s[8] as i64],
        };
    }
    Ok(out)
}

/// The leading arguments of adm_cm_s0 / adm_cm_s123, up to `sums`.
fn cm_args(ref_hvd: u64, dis_hvd: u64, p: &AdmParams, scale: usize, rf: [u32; 3], sums: u64) -> Result<Args> {
    let sp = &p.scales[scale];
    Ok(Args::new()
        .ptr(ref_hvd)
        .ptr(dis_hvd)
        .i32(int(sp.w, "width")?)
        .i32(int(sp.h, "height")?)
        .i32(int(sp.w * sp.h, "band size")?)
        .i32(int(sp.score.top, "row")?)
        .i32(int(sp.score.left, "column")?)
        .i32(int(sp.score.right, "column")?)
        .f64(p.enhn_gain_limit)
        .u32(rf[0])
        .u32(rf[1])
        .u32(rf[2])
        .i32(i32::from(!p.skip_aim))
        .ptr(sums))
}
