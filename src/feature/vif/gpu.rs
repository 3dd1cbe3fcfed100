//! VIF's device twin (kernels/vif.cu) on a lane ([`TwinLane`]): the twin of
//! [`super::VifComputer::sums`], a port of libvmaf 3.2.0's
//! `feature/integer_vif.c` (`vif_statistic_8/16`, `subsample_rd_8/16`).
//! Per frame: one launch zeroing the sums, four statistic launches (each
//! block adding its sums to its scale's four; the first three also
//! subsample their tiles into the next scale of a device pyramid, which a
//! launch of its own does only when scale 0's statistic is skipped), and
//! one download of 4 scales x 4 sums. The host turns them into scores with
//! the CPU's own [`VifSums::num_den`], so results are the CPU's by
//! construction.

use super::{self as vif, log2_table, VifSums};
use crate::device::gpu::backend::{int, scratch_struct, Args, DevPlane};
use crate::device::gpu::kernels::VifKernels;
use crate::device::gpu::twin::TwinLane;
use crate::picture::PlaneView;
use crate::{Error, Result};
use std::sync::OnceLock;

/// Output tile of `vif_stat_*` at `scale` (VX_VIF_TW(S) x VX_VIF_TH in
/// vif.cu): 8 rows; 128 columns with the filter's halo, down to a multiple
/// of 4.
fn stat_tile(scale: usize) -> (usize, usize) {
    let half = vif::FILTERS[scale].len() / 2;
    ((128 - 2 * half) & !3, 8)
}
/// Output tile of `vif_subsample_0_*` (VX_VIF_OW x VX_VIF_OH).
const SUB_TILE: (usize, usize) = (64, 8);

scratch_struct! {
/// The VIF twin's device buffers.
struct VifScratch {
    /// Host planes uploaded by [`sums`].
    reference,
    distorted,
    /// [`log2_table`], uploaded once.
    log2,
    /// Scales 1..=3 of both pictures.
    pyramid,
    /// Four sums per scale, zeroed per frame, added to by every block.
    sums,
}
}

/// [`log2_table`] as the device reads it (native-endian u16).
fn log2_table_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| log2_table().iter().flat_map(|v| v.to_ne_bytes()).collect())
}

fn blocks(w: usize, h: usize, tile: (usize, usize)) -> (u32, u32) {
    (w.div_ceil(tile.0) as u32, h.div_ceil(tile.1) as u32)
}

/// [`super::sums_scalar`] of two host luma planes (copied to the device
/// first).
pub fn sums<L: TwinLane>(
    lane: &mut L,
    r: &PlaneView,
    d: &PlaneView,
    bpc: u32,
    enhn_gain_limit: f64,
    skip_scale0: bool,
) -> Result<[VifSums; 4]> {
    lane.with_scratch(|lane, scratch: &mut VifScratch<L::Buffer>| {
        let a = lane.upload_plane(&mut scratch.reference, r)?;
        let b = lane.upload_plane(&mut scratch.distorted, d)?;
        sums_on(lane, scratch, a, b, bpc, enhn_gain_limit, skip_scale0)
    })
}

/// The VIF sums of the four scales of two luma planes in the lane's memory
/// (8-bit samples at bpc 8, else 16-bit): equal to
/// [`super::sums_scalar`]. With `skip_scale0`, scale 0's sums are zero.
pub fn sums_dev<L: TwinLane>(
    lane: &mut L,
    r: DevPlane,
    d: DevPlane,
    bpc: u32,
    enhn_gain_limit: f64,
    skip_scale0: bool,
) -> Result<[VifSums; 4]> {
    lane.with_scratch(|lane, scratch: &mut VifScratch<L::Buffer>| {
        sums_on(lane, scratch, r, d, bpc, enhn_gain_limit, skip_scale0)
    })
}

fn sums_on<L: TwinLane>(
    lane: &mut L,
    scratch: &mut VifScratch<L::Buffer>,
    r: DevPlane,
    d: DevPlane,
    bpc: u32,
    enhn_gain_limit: f64,
    skip_scale0: bool,
) -> Result<[VifSums; 4]> {
    let (w, h) = (r.width, r.height);
    if d.width != w || d.height != h || d.bytes_per_sample != r.bytes_per_sample {
        return Err(Error::Mismatch(
            "vif: reference and distorted luma differ in size or depth".into(),
        ));
    }
    if !(8..=16).contains(&bpc) {
        return Err(Error::invalid(format!("vif: {bpc} bits per sample")));
    }
    let bps = if bpc == 8 { 1 } else { 2 };
    if r.bytes_per_sample != bps {
        return Err(Error::invalid(format!(
            "vif: {bpc}-bit luma with {} bytes per sample",
            r.bytes_per_sample
        )));
    }
    if bps == 2 && (r.ptr | d.ptr | r.pitch as u64 | d.pitch as u64) & 1 != 0 {
        return Err(Error::invalid("vif: 16-bit planes must be 2-byte aligned"));
    }
    vif::check_size(w, h)?;
    let k: VifKernels<L::Kernel> = lane.kernels()?;
    let table = lane.table(&mut scratch.log2, log2_table_bytes())?;

    // Scales 1..=3, each a packed (w_s x h_s) u16 plane pair in one buffer.
    let mut dims = [(w, h); 4];
    for s in 1..4 {
        dims[s] = (dims[s - 1].0 / 2, dims[s - 1].1 / 2);
    }
    let mut plane_at = [0usize; 4];
    let mut pyramid_bytes = 0;
    for s in 1..4 {
        plane_at[s] = pyramid_bytes;
        // Two planes, each rounded up to 256 bytes.
        pyramid_bytes += 2 * (dims[s].0 * dims[s].1 * 2).next_multiple_of(256);
    }
    let pyramid = lane.grow(&mut scratch.pyramid, pyramid_bytes)?;
    let plane = |s: usize| -> (DevPlane, DevPlane) {
        let (pw, ph) = dims[s];
        let one = (pw * ph * 2).next_multiple_of(256) as u64;
        let at = pyramid + plane_at[s] as u64;
        let p = DevPlane {
            ptr: at,
            pitch: pw * 2,
            width: pw,
            height: ph,
            bytes_per_sample: 2,
        };
        (p, DevPlane { ptr: at + one, ..p })
    };

    let sums = lane.grow(&mut scratch.sums, 16 * 8)?;
    // SAFETY: vif_zero (sums): sums holds 16 u64.
    unsafe { lane.launch(k.vif_zero, (1, 1), Args::new().ptr(sums)) }?;

    for s in 0..4 {
        let (sr, sd) = if s == 0 { (r, d) } else { plane(s) };
        let (sw, sh) = dims[s];
        // Scales 0-2 write the next scale's planes: the statistic's blocks
        // subsample their tiles, or vif_subsample_0 when scale 0's
        // statistic is skipped. Scale 3 writes none (null, unused).
        let (nr, nd, next_width) = if s < 3 {
            let (nr, nd) = plane(s + 1);
            (nr.ptr, nd.ptr, nr.width)
        } else {
            (0, 0, 0)
        };
        let mu_shift = if s == 0 { bpc } else { 16 };
        if s > 0 || !skip_scale0 {
            let sq_shift = if s == 0 { 2 * (bpc - 8) } else { 16 };
            let entry = match s {
                0 if bps == 1 => k.vif_stat_0_8,
                0 => k.vif_stat_0_16,
                1 => k.vif_stat_1,
                2 => k.vif_stat_2,
                _ => k.vif_stat_3,
            };
            let args = Args::new()
                .ptr(sr.ptr)
                .ptr(sd.ptr)
                .i32(int(sr.pitch, "pitch")?)
                .i32(int(sd.pitch, "pitch")?)
                .i32(int(sw, "width")?)
                .i32(int(sh, "height")?)
                .i32(mu_shift as i32)
                .i32(sq_shift as i32)
                .f64(enhn_gain_limit)
                .ptr(table)
                .ptr(sums + 32 * s as u64)
                .ptr(nr)
                .ptr(nd)
                .i32(int(next_width, "width")?);
            // SAFETY: vif_stat_* (ref, dis, ref_pitch, dis_pitch, w, h,
            // mu_shift, sq_shift, egl, table, sums, out_r, out_d,
            // out_stride): each plane spans sh rows of its pitch (scale 0:
            // the caller's planes, checked by DevPlane; others: the
            // pyramid), table holds 65537 u16, sums + 32 s is the scale's
            // 4 u64 of the 16; scales 0-2: out_r and out_d hold (sw/2) x
            // (sh/2) u16 each, packed (the pyramid); scale 3 does not
            // touch them.
            unsafe { lane.launch(entry, blocks(sw, sh, stat_tile(s)), args) }?;
        } else {
            // Scale 0's statistic skipped: its subsampling alone.
            let entry = if bps == 1 { k.vif_subsample_0_8 } else { k.vif_subsample_0_16 };
            let args = Args::new()
                .ptr(sr.ptr)
                .ptr(sd.ptr)
                .i32(int(sr.pitch, "pitch")?)
                .i32(int(sd.pitch, "pitch")?)
                .i32(int(sw, "width")?)
                .i32(int(sh, "height")?)
                .i32(mu_shift as i32)
                .ptr(nr)
                .ptr(nd)
                .i32(int(next_width, "width")?);
            // SAFETY: vif_subsample_0_* (ref, dis, ref_pitch, dis_pitch,
            // w, h, mu_shift, out_r, out_d, out_stride): inputs as above;
            // the outputs hold (w/2) x (h/2) u16 each, packed.
            unsafe { lane.launch(entry, blocks(sw / 2, sh / 2, SUB_TILE), args) }?;
        }
    }
    let v = lane.download_vec::<u64>(sums, 16)?;
    let mut out = [VifSums::default(); 4];
    for (s, o) in out.iter_mut().enumerate() {
        *o = VifSums {
            num_log: v[4 * s] as i64,
            den_log: v[4 * s + 1] as i64,
            num_non_log: v[4 * s + 2] as i64,
            den_non_log: v[4 * s + 3] as i64,
        };
    }
    Ok(out)
}
