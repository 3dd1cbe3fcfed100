//! CAMBI's device twin (kernels/cambi.cu) on a lane ([`TwinLane`]): a
//! frame's whole luma pass on the device, from the device plane to each
//! scale's pooling inputs, and one small read-back (the pooling state of
//! the five scales, 256 bytes) instead of the plane and the c-values.
//!
//! The picture passes (10-bit copy with the encode-size resize,
//! anti-dithering, the spatial mask, decimation, the mode filter) are the
//! CPU's integer code out of place. The c-value kernel counts each pixel's
//! window directly over the rows libvmaf's sliding histogram holds
//! ([`super::scalar::window_rows`]). The pooling (libvmaf's quick_select,
//! then a double sum of the k largest c-values in the order it leaves them)
//! is reproduced without the order: the device finds the k-th largest value
//! T and adds the values above it exactly, as integers ([`exact_pool`]
//! says when that equals libvmaf's sum as bits); where it may not, the
//! scale's c-values are read back and pooled with the CPU's code.

use super::scalar::{mask_index, reciprocal_lut, spatial_pooling, window_rows, ContrastTables};
use super::NUM_SCALES;
use crate::device::gpu::backend::{int, scratch_struct, Args, DevPlane};
use crate::device::gpu::kernels::{CambiKernels, BLOCK};
use crate::device::gpu::twin::TwinLane;
use crate::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};

scratch_struct! {
/// The CAMBI twin's device buffers.
struct CambiScratch {
    /// The reciprocal table (uploaded once).
    lut,
    /// The frame's header ([`Header`]) then its geometry (resize columns
    /// and rows, each scale's window rows, the contrast tables): one upload.
    frame,
    /// Working pictures, ping-ponged: each pass reads one and writes the other.
    image_a,
    image_b,
    mask_a,
    mask_b,
    /// Every scale's c-values, one after the other (a scale whose exact
    /// pooling fails is read back from here).
    c_values,
    /// The pooling's histogram (65536 counts).
    bins,
}
}

/// Counts of the pooling's histograms (kernels/cambi.cu `VX_CAMBI_BINS`).
const BINS: usize = 65536;
/// Rows a block of a picture pass covers, values a thread of a pooling
/// pass (`VX_CAMBI_ROWS`, `VX_CAMBI_PER_THREAD`).
const ROWS: usize = 8;
const PER_THREAD: usize = 16;
/// u32 words of the frame header, then of one scale's pooling state
/// (`VX_CAMBI_STATE_WORDS`) and where the state's words are.
const HEADER_WORDS: usize = 64;
const STATE_WORDS: usize = 8;
const T_BITS: usize = 2;
const ABOVE_T: usize = 3;
const LOW_BIT: usize = 4;
const INEXACT: usize = 5;
const FOUND: usize = 6;
/// Header word of the first out-of-range sample (y * w + x; u32::MAX none).
const FIRST_BAD: usize = NUM_SCALES * STATE_WORDS;
/// Header word where the scales' u64 sums start (two words each).
const SUMS: usize = 48;
/// The exact sums' unit, 2^-24: every c-value is a whole number of them
/// (the smallest non-zero one is 0.5, with 24 significant bits).
const UNIT_BITS: i32 = 24;

/// Scales pooled on the host since the process started (their c-values
/// read back): none where every pass is right and libvmaf's sum cannot
/// round, which the tests check.
static POOLED_ON_HOST: AtomicU64 = AtomicU64::new(0);

pub(crate) fn scales_pooled_on_host() -> u64 {
    POOLED_ON_HOST.load(Ordering::Relaxed)
}

fn ne_bytes<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// One side's luma pass: its size, its resize (the frame's columns and
/// rows it samples, `None`: every one) and its window.
pub(crate) struct SideJob<'a> {
    pub plane: DevPlane,
    pub bits: u32,
    pub width: usize,
    pub height: usize,
    pub resize: Option<(&'a [usize], &'a [usize])>,
    pub window: usize,
    pub anti_dither: bool,
    pub scales: [(usize, usize); NUM_SCALES],
    /// Whether scale 0 is decimated too (the high-resolution speed-up).
    pub decimate_first: bool,
    pub topk: f64,
    /// No code can have a c-value: every scale pools to 0.
    pub band_empty: bool,
}

/// A value in units of 2^-24, where it is a whole number of them below
/// 2^14 (kernels/cambi.cu `cambi_top_sum` converts the values above T the
/// same way).
fn units_of(v: f32) -> Option<u64> {
    let bits = v.to_bits();
    if bits == 0 {
        return Some(0);
    }
    let exponent = (bits >> 23) as i32;
    if exponent == 0 || exponent >= 141 || bits >> 31 != 0 {
        return None;
    }
    let mantissa = (bits & 0x7f_ffff) as u64 | 0x80_0000;
    let shift = exponent - 150 + UNIT_BITS;
    if shift >= 0 {
        Some(mantissa << shift)
    } else if mantissa & ((1u64 << -shift) - 1) == 0 {
        Some(mantissa >> -shift)
    } else {
        None
    }
}

/// libvmaf's pooled value of a scale (`spatial_pooling`: the mean of the k
/// largest c-values, added as doubles in quick_select's order) from the
/// device's pooling state: T (`t_bits`), the count above it, their exact
/// sum in 2^-24 units and its lowest set bit. The k largest are the values
/// above T and k - above copies of T. When every one is a multiple of
/// 2^low and their total is below 2^(53 + low), every partial sum in any
/// order is such a multiple below the total, so a double holds it exactly:
/// libvmaf's sum never rounds and equals the exact total. `None` where
/// that does not hold (the caller pools on the host).
pub(crate) fn exact_pool(k: usize, t_bits: u32, above_t: u32, sum_units: u64, low_bit: u32, inexact: bool) -> Option<f64> {
    if inexact {
        return None;
    }
    let ties = (k as u64).checked_sub(above_t as u64).filter(|&t| t > 0)?;
    let t_units = units_of(f32::from_bits(t_bits))?;
    let total = sum_units.checked_add(ties.checked_mul(t_units)?)?;
    let low = if t_units != 0 { low_bit.min(t_units.trailing_zeros()) } else { low_bit };
    if total != 0 && (low >= 64 || total >> low >= 1u64 << 53) {
        return None;
    }
    // total = q 2^low with q < 2^53: converted exactly, and scaled exactly.
    let sum = total as f64 * (-UNIT_BITS as f64).exp2();
    Some(sum / k as f64)
}

/// libvmaf's pooled count of a scale of n values (`spatial_pooling`).
fn top_count(n: usize, topk: f64) -> usize {
    let n = n as i32;
    ((topk * n as f64) as i32).clamp(1, n) as usize
}

/// One side's per-scale pooled values (before the scale weights), the
/// luma read from `job.plane` on the device.
pub(crate) fn score_dev<L: TwinLane>(lane: &mut L, job: &SideJob<'_>, t: &ContrastTables<'_>) -> Result<[f64; NUM_SCALES]> {
    let (w, h) = (job.width, job.height);
    let nd = t.num_diffs;
    if nd > 32 || t.tvi_for_diff.len() < nd || t.diff_weights.len() < nd {
        return Err(Error::Internal(format!("cambi: {nd} contrast steps (the device twin takes at most 32)")));
    }
    let two_bytes = match (job.plane.bytes_per_sample, job.bits) {
        (1, 8) => 0,
        (2, 9..=16) => 1,
        (b, bits) => {
            return Err(Error::Mismatch(format!("cambi: a device luma plane of {b}-byte samples, {bits}-bit pictures expected")))
        }
    };
    let (pic_w, pic_h) = (job.plane.width, job.plane.height);
    // The frame upload: the header, then the geometry, as i32 words.
    let mut words = vec![0i32; HEADER_WORDS];
    for s in 0..NUM_SCALES {
        words[s * STATE_WORDS + LOW_BIT] = 64;
    }
    words[FIRST_BAD] = -1;
    let place = |words: &mut Vec<i32>, v: &[i32]| -> u64 {
        let at = words.len();
        words.extend_from_slice(v);
        4 * at as u64
    };
    let (xs, ys): (Vec<i32>, Vec<i32>) = match job.resize {
        Some((xs, ys)) => (xs.iter().map(|&x| x as i32).collect(), ys.iter().map(|&y| y as i32).collect()),
        None => ((0..w as i32).collect(), (0..h as i32).collect()),
    };
    if xs.len() != w || ys.len() != h || xs.iter().any(|&x| x as usize >= pic_w) || ys.iter().any(|&y| y as usize >= pic_h) {
        return Err(Error::Internal(format!("cambi: a {w}x{h} side does not sample inside the {pic_w}x{pic_h} frame")));
    }
    let xs_at = place(&mut words, &xs);
    let ys_at = place(&mut words, &ys);
    let rows_at: Vec<u64> = job
        .scales
        .iter()
        .map(|&(_, sh)| place(&mut words, &window_rows(sh, job.window).into_iter().flatten().collect::<Vec<_>>()))
        .collect();
    let tvi: Vec<i32> = t.tvi_for_diff[..nd].iter().map(|&v| v as i32).collect();
    let tvi_at = place(&mut words, &tvi);
    let weights_at = place(&mut words, &t.diff_weights[..nd]);
    let offsets: Vec<usize> = job.scales.iter().scan(0, |at, &(sw, sh)| Some(std::mem::replace(at, *at + sw * sh))).collect();
    let total_values: usize = job.scales.iter().map(|&(sw, sh)| sw * sh).sum();
    let stride = w;

    // One thread a pixel (the c-values), a column of ROWS pixels (the
    // picture passes), PER_THREAD values (the pooling passes).
    let grid2 = |sw: usize, sh: usize| -> Result<(u32, u32)> { Ok((sw.div_ceil(BLOCK as usize) as u32, int(sh, "height")? as u32)) };
    let picture_grid = |sw: usize, sh: usize| -> Result<(u32, u32)> { Ok((sw.div_ceil(BLOCK as usize) as u32, int(sh.div_ceil(ROWS), "height")? as u32)) };
    let pooling_grid = |n: usize| -> Result<(u32, u32)> { Ok((int(n.div_ceil(BLOCK as usize * PER_THREAD), "blocks")? as u32, 1)) };
    let (first_bad, per_scale) = lane.with_scratch(|lane, s: &mut CambiScratch<L::Buffer>| -> Result<(u32, [f64; NUM_SCALES])> {
        let k: CambiKernels<L::Kernel> = lane.kernels()?;
        let lut = lane.table(&mut s.lut, &ne_bytes(reciprocal_lut(), f32::to_ne_bytes))?;
        let frame = lane.upload_bytes(&mut s.frame, &ne_bytes(&words, i32::to_ne_bytes))?;
        let picture_bytes = stride * h * 2;
        let mut img = [lane.grow(&mut s.image_a, picture_bytes)?, lane.grow(&mut s.image_b, picture_bytes)?];
        let mut msk = [lane.grow(&mut s.mask_a, picture_bytes)?, lane.grow(&mut s.mask_b, picture_bytes)?];
        let cv = lane.grow(&mut s.c_values, total_values * 4)?;
        let bins = lane.grow(&mut s.bins, BINS * 4)?;
        let stride_i = int(stride, "stride")?;
        let (wi, hi) = (int(w, "width")?, int(h, "height")?);
        let pitch = job.plane.pitch as i64;

        if job.bits != 8 && job.bits != 16 {
            let args = Args::new()
                .ptr(job.plane.ptr)
                .i64(pitch)
                .i32(int(pic_w, "width")?)
                .i32(int(pic_h, "height")?)
                .u32((1u32 << job.bits) - 1)
                .ptr(frame + 4 * FIRST_BAD as u64);
            // SAFETY: cambi_range_check (plane, pitch, w, h, max, first):
            // the plane holds pic_h rows of pic_w 2-byte samples at `pitch`
            // (a DevPlane of the frame), first is a header word.
            unsafe { lane.launch(k.cambi_range_check, picture_grid(pic_w, pic_h)?, args) }?;
        }
        let args = Args::new()
            .ptr(job.plane.ptr)
            .i64(pitch)
            .i32(two_bytes)
            .i32(job.bits as i32)
            .ptr(frame + xs_at)
            .ptr(frame + ys_at)
            .i32(wi)
            .i32(hi)
            .ptr(img[0])
            .i32(stride_i);
        // SAFETY: cambi_load (plane, pitch, two_bytes, bits, xs, ys, w, h,
        // out, stride): xs and ys hold w and h coordinates inside the plane
        // (checked above), out holds h rows of `stride` = w samples.
        unsafe { lane.launch(k.cambi_load, picture_grid(w, h)?, args) }?;
        if job.anti_dither {
            let args = Args::new().ptr(img[0]).ptr(img[1]).i32(stride_i).i32(wi).i32(hi);
            // SAFETY: cambi_anti_dither (in, out, stride, w, h): both
            // pictures hold h rows of `stride` samples.
            unsafe { lane.launch(k.cambi_anti_dither, picture_grid(w, h)?, args) }?;
            img.swap(0, 1);
        }
        let threshold = int(mask_index(w, h) as usize, "mask threshold")?;
        let args = Args::new().ptr(img[0]).ptr(msk[0]).i32(stride_i).i32(wi).i32(hi).i32(threshold);
        // SAFETY: cambi_spatial_mask (img, mask, stride, w, h, threshold):
        // both hold h rows of `stride` samples.
        unsafe { lane.launch(k.cambi_spatial_mask, picture_grid(w, h)?, args) }?;

        // The scales pooled on the device, with their pixel counts.
        let mut pooled = Vec::new();
        if !job.band_empty {
            let args = Args::new().ptr(bins).i32(BINS as i32);
            // SAFETY: cambi_zero (p, n): bins holds BINS words.
            unsafe { lane.launch(k.cambi_zero, (16, 1), args) }?;
        }
        for (scale, &(sw, sh)) in job.scales.iter().enumerate() {
            let (swi, shi) = (int(sw, "width")?, int(sh, "height")?);
            if scale > 0 || job.decimate_first {
                for pair in [&mut img, &mut msk] {
                    let args = Args::new().ptr(pair[0]).ptr(pair[1]).i32(stride_i).i32(swi).i32(shi);
                    // SAFETY: cambi_decimate (in, out, stride, w, h): the
                    // scale is at most half the previous one (rounded up),
                    // so (2x, 2y) stays inside its pictures of h rows of
                    // `stride` samples.
                    unsafe { lane.launch(k.cambi_decimate, picture_grid(sw, sh)?, args) }?;
                    pair.swap(0, 1);
                }
            }
            let args = Args::new().ptr(img[0]).ptr(img[1]).i32(stride_i).i32(swi).i32(shi);
            // SAFETY: cambi_filter_mode (in, out, stride, w, h): both hold
            // the scale's sh rows of `stride` samples.
            unsafe { lane.launch(k.cambi_filter_mode, picture_grid(sw, sh)?, args) }?;
            img.swap(0, 1);
            if job.band_empty {
                continue;
            }
            let n = sw * sh;
            let ni = int(n, "pixels")?;
            let out = cv + 4 * offsets[scale] as u64;
            let args = Args::new()
                .ptr(img[0])
                .ptr(msk[0])
                .i32(stride_i)
                .i32(swi)
                .i32(shi)
                .ptr(frame + rows_at[scale])
                .i32(int(job.window >> 1, "window")?)
                .i32(nd as i32)
                .ptr(frame + tvi_at)
                .i32(t.vlt_luma as i32)
                .ptr(frame + weights_at)
                .i32(t.band_base as i32)
                .i32(t.band_size as i32)
                .ptr(lut)
                .ptr(out);
            // SAFETY: cambi_c_values (image, mask, stride, w, h, rows, pad,
            // nd, tvi, vlt, weights, band_base, band_size, lut, out): image
            // and mask hold sh rows of `stride` >= sw samples, rows 2 sh
            // row indices within 0..sh (window_rows), tvi and weights nd i32
            // each, the window's counts stay below the reciprocal table's
            // size (create refuses larger windows), out holds sw sh floats
            // (this scale's part of c_values).
            unsafe { lane.launch(k.cambi_c_values, grid2(sw, sh)?, args) }?;

            let state = frame + 4 * (scale * STATE_WORDS) as u64;
            let top = int(top_count(n, job.topk), "top count")?;
            for level in 0..2 {
                let args = Args::new().ptr(out).i32(ni).ptr(state).i32(level).ptr(bins);
                // SAFETY: cambi_histogram (c, n, state, level, bins): c
                // holds n floats, state this scale's header words, bins
                // BINS words (indices are 16-bit).
                unsafe { lane.launch(k.cambi_histogram, pooling_grid(n)?, args) }?;
                let args = Args::new().ptr(bins).i32(top).i32(level).ptr(state);
                // SAFETY: cambi_select (bins, k, level, state): one block
                // over BINS words (it zeroes them); 1 <= k <= n, the
                // histograms' total.
                unsafe { lane.launch(k.cambi_select, (1, 1), args) }?;
            }
            let sum = frame + 4 * (SUMS + 2 * scale) as u64;
            let args = Args::new().ptr(out).i32(ni).ptr(state).ptr(sum);
            // SAFETY: cambi_top_sum (c, n, state, sum): c holds n floats,
            // state this scale's header words, sum its u64 (8-byte aligned:
            // SUMS is even).
            unsafe { lane.launch(k.cambi_top_sum, pooling_grid(n)?, args) }?;
            pooled.push((scale, n));
        }
        let header = lane.download_vec::<u32>(frame, HEADER_WORDS)?;
        let mut per_scale = [0.0f64; NUM_SCALES];
        for (scale, n) in pooled {
            let st = &header[scale * STATE_WORDS..(scale + 1) * STATE_WORDS];
            let top = top_count(n, job.topk);
            // T found (the histograms held k values: they always do, unless a
            // pass went wrong), and the exact sum is libvmaf's.
            let exact = (st[FOUND] == 1)
                .then(|| exact_pool(top, st[T_BITS], st[ABOVE_T], sum_of(&header, scale), st[LOW_BIT], st[INEXACT] != 0))
                .flatten();
            per_scale[scale] = match exact {
                Some(v) => v,
                // libvmaf's sum may round here: its order, on the host.
                None => {
                    POOLED_ON_HOST.fetch_add(1, Ordering::Relaxed);
                    spatial_pooling(&mut lane.download_vec::<f32>(cv + 4 * offsets[scale] as u64, n)?, job.topk)
                }
            };
        }
        Ok((header[FIRST_BAD], per_scale))
    })?;

    if first_bad != u32::MAX {
        let (x, y) = (first_bad as usize % pic_w, first_bad as usize / pic_w);
        let v = lane.download_vec::<u16>(job.plane.ptr + (y * job.plane.pitch + 2 * x) as u64, 1)?[0];
        return Err(Error::invalid(format!(
            "cambi: luma sample ({x},{y}) = {v} exceeds the maximum {} of a {}-bit picture",
            (1u32 << job.bits) - 1,
            job.bits
        )));
    }
    Ok(per_scale)
}

/// Scale `scale`'s exact sum from the header (two native-order words).
fn sum_of(header: &[u32], scale: usize) -> u64 {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&header[SUMS + 2 * scale].to_ne_bytes());
    b[4..].copy_from_slice(&header[SUMS + 2 * scale + 1].to_ne_bytes());
    u64::from_ne_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The device's pooling state of `values` (T, the count above it,
    /// their sum in units, its lowest bit, the inexact flag), by sorting.
    fn state_of(values: &[f32], k: usize) -> (u32, u32, u64, u32, bool) {
        let mut sorted: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let t = sorted[k - 1];
        let above: Vec<u32> = sorted.iter().copied().filter(|&b| b > t).collect();
        let units: Vec<Option<u64>> = above.iter().map(|&b| units_of(f32::from_bits(b))).collect();
        let inexact = units.iter().any(Option::is_none);
        let units: Vec<u64> = units.into_iter().flatten().collect();
        let low = units.iter().map(|u| u.trailing_zeros()).min().unwrap_or(64);
        (t, above.len() as u32, units.iter().sum(), low, inexact)
    }

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *seed >> 33
    }

    /// Where `exact_pool` answers, its value is libvmaf's pooled value as
    /// bits (quick_select's order); c-values as the kernel forms them (a
    /// weight times two counts, times the reciprocal table), most of them
    /// 0, with ties, at several top-k shares.
    #[test]
    fn exact_pool_equals_the_ordered_double_sum() {
        let lut = reciprocal_lut();
        let mut seed = 0x5eed;
        let mut answered = 0;
        for case in 0..200 {
            let n = 1 + (lcg(&mut seed) % 5000) as usize;
            let zero_share = lcg(&mut seed) % 100;
            let max_count = 1 + lcg(&mut seed) % 2000;
            let values: Vec<f32> = (0..n)
                .map(|_| {
                    if lcg(&mut seed) % 100 < zero_share {
                        return 0.0;
                    }
                    let (p0, p1) = (1 + lcg(&mut seed) % max_count, lcg(&mut seed) % max_count);
                    let weight = 1 + lcg(&mut seed) % 9;
                    (weight * p0 * p1) as f32 * lut[(p0 + p1) as usize]
                })
                .collect();
            for topk in [0.0001, 0.2, 0.6, 1.0] {
                let k = top_count(n, topk);
                let (t, above, sum, low, inexact) = state_of(&values, k);
                let want = spatial_pooling(&mut values.clone(), topk);
                if let Some(got) = exact_pool(k, t, above, sum, low, inexact) {
                    assert_eq!(got.to_bits(), want.to_bits(), "case {case}, n {n}, topk {topk}: {got} vs {want}");
                    answered += 1;
                }
            }
        }
        assert!(answered > 700, "exact_pool answered only {answered} of 800 cases");
    }

    /// Where the double sum can round, `exact_pool` declines: values whose
    /// total needs more than 53 bits above their lowest bit, a value not a
    /// whole number of units, one of 2^14 or more.
    #[test]
    fn exact_pool_declines_where_the_sum_may_round() {
        let fine = f32::from_bits(0.5f32.to_bits() + 1); // 0.5 + 2^-24
        let mut values = vec![8000.0f32; 1 << 17];
        values.push(fine);
        let k = values.len();
        let (t, above, sum, low, inexact) = state_of(&values, k);
        assert!(!inexact);
        assert_eq!(exact_pool(k, t, above, sum, low, inexact), None, "2^17 values of 8000 with a 2^-24 bit");
        assert_eq!(units_of(f32::from_bits(0.25f32.to_bits() + 1)), None, "0.25 + 2^-25: below the unit");
        assert_eq!(units_of(16384.0), None, "2^14");
        assert_eq!(units_of(0.5), Some(1 << 23));
        assert_eq!(units_of(9507.25), Some((9507.25 * (1u64 << 24) as f64) as u64));
    }
}
