//! AVX2 c-values of CAMBI: eight pixels of a row per register, the
//! histogram counts gathered per lane.
//!
//! Bit-identical to `scalar::c_value_row`: each lane does the scalar
//! pixel's operations in its order and types (the product of integer
//! counts in 32-bit lanes, one conversion to float, one multiply by the
//! reciprocal table entry, the largest of the steps kept), and a lane
//! whose pixel is masked, outside the band or whose step is invisible
//! keeps 0 as the scalar code does by not computing it. The histogram
//! updates are the scalar ones compiled for AVX2, their range additions
//! sixteen counts a register (integer counts: exact in any order).

use std::arch::x86_64::*;

use super::scalar::{self, reciprocal_lut, CValueScratch, ContrastTables, MaskScratch, Plane16};
use super::PicturePasses;

pub(crate) fn available() -> bool {
    is_x86_feature_detected!("avx2")
}

/// Same contract as [`scalar::c_values`]; the scalar code where AVX2 is
/// absent.
#[allow(clippy::too_many_arguments)]
pub(crate) fn c_values(
    image: &Plane16,
    mask: &Plane16,
    c_values: &mut [f32],
    scratch: &mut CValueScratch,
    window: usize,
    t: &ContrastTables<'_>,
    width: usize,
    height: usize,
) {
    if !available() {
        return scalar::c_values(image, mask, c_values, scratch, window, t, width, height);
    }
    // SAFETY: AVX2 was detected above.
    unsafe { c_values_avx2(image, mask, c_values, scratch, window, t, width, height) }
}

#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2")]
fn c_values_avx2(
    image: &Plane16,
    mask: &Plane16,
    c_values: &mut [f32],
    scratch: &mut CValueScratch,
    window: usize,
    t: &ContrastTables<'_>,
    width: usize,
    height: usize,
) {
    scalar::c_values_with(image, mask, c_values, scratch, window, t, width, height, |hist, img, msk, out, t, w| {
        c_value_row_avx2(hist, img, msk, out, t, w)
    }, |range, delta| {
        add_range_avx2(range, delta)
    });
}

/// [`scalar::add_range`] sixteen counts at a time, the rest one by one.
#[target_feature(enable = "avx2")]
fn add_range_avx2(range: &mut [u16], delta: u16) {
    let d = _mm256_set1_epi16(delta as i16);
    let n = range.len();
    let ptr = range.as_mut_ptr();
    let mut j = 0;
    while j + 16 <= n {
        // SAFETY: j + 16 <= n, inside `range`.
        unsafe {
            let p = ptr.add(j) as *mut __m256i;
            _mm256_storeu_si256(p, _mm256_add_epi16(_mm256_loadu_si256(p), d));
        }
        j += 16;
    }
    scalar::add_range(&mut range[j..], delta);
}

/// The row kernel alone (same contract as [`scalar::c_value_row`]), for
/// checkasm; the scalar row where AVX2 is absent.
pub(crate) fn c_value_row(hist: &[u16], img: &[u16], msk: &[u16], out: &mut [f32], t: &ContrastTables<'_>, width: usize) {
    if !available() {
        return scalar::c_value_row(hist, img, msk, out, t, width);
    }
    // SAFETY: AVX2 was detected above.
    unsafe { c_value_row_avx2(hist, img, msk, out, t, width) }
}

#[target_feature(enable = "avx2")]
fn c_value_row_avx2(
    hist: &[u16],
    img: &[u16],
    msk: &[u16],
    out: &mut [f32],
    t: &ContrastTables<'_>,
    width: usize,
) {
    let lut = reciprocal_lut();
    let band_size = t.band_size as usize;
    assert!(img.len() >= width && msk.len() >= width && out.len() >= width);
    assert!(hist.len() >= width * band_size + scalar::HISTOGRAM_PAD && hist.len() <= i32::MAX as usize);
    if band_size == 0 {
        return scalar::c_value_row(hist, img, msk, out, t, width);
    }
    let num_diffs = t.num_diffs as i32;
    let zero = _mm256_setzero_si256();
    let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let low16 = _mm256_set1_epi32(0xffff);
    let width_v = _mm256_set1_epi32(width as i32);
    let num_diffs_v = _mm256_set1_epi32(num_diffs);
    // The scalar code adds num_diffs to a 16-bit code, wrapping.
    let band_offset_v = _mm256_set1_epi32(t.band_base.wrapping_add(t.num_diffs as u16) as i32);
    let band_size_v = _mm256_set1_epi32(band_size as i32);
    let band_max_v = _mm256_set1_epi32(band_size as i32 - 1);
    let lut_max_v = _mm256_set1_epi32(lut.len() as i32 - 1);
    let vlt_v = _mm256_set1_epi32(t.vlt_luma as i32);
    let hist_ptr = hist.as_ptr() as *const i32;

    let mut col = 0;
    while col + 8 <= width {
        // SAFETY: col + 8 <= width <= msk.len(), img.len() (asserted).
        let (m, code) = unsafe {
            (
                _mm_loadu_si128(msk.as_ptr().add(col) as *const __m128i),
                _mm_loadu_si128(img.as_ptr().add(col) as *const __m128i),
            )
        };
        let m = _mm256_cvtepu16_epi32(m);
        let active = _mm256_cmpgt_epi32(m, zero);
        let code = _mm256_cvtepu16_epi32(code);
        let value = _mm256_and_si256(_mm256_add_epi32(code, num_diffs_v), low16);
        let compact = _mm256_sub_epi32(value, band_offset_v);
        let in_band = _mm256_and_si256(
            _mm256_cmpgt_epi32(compact, _mm256_set1_epi32(-1)),
            _mm256_cmpgt_epi32(band_size_v, compact),
        );
        let live = _mm256_and_si256(active, in_band);
        // SAFETY: col + 8 <= width <= out.len() (asserted): the 8 floats at
        // `dst` lie in `out`.
        let dst = unsafe { out.as_mut_ptr().add(col) };
        if _mm256_testz_si256(live, live) != 0 {
            // Masked lanes keep what they hold (the scalar row skips them);
            // unmasked ones outside the band are 0.
            // SAFETY: `dst` holds 8 floats of `out` (above).
            let kept = unsafe { _mm256_loadu_ps(dst) };
            let kept = _mm256_and_ps(kept, _mm256_castsi256_ps(_mm256_cmpeq_epi32(active, zero)));
            // SAFETY: as the load.
            unsafe { _mm256_storeu_ps(dst, kept) };
            col += 8;
            continue;
        }
        // Clamped into the band so every gather stays in the histograms;
        // lanes clamped here are not live and their results are dropped.
        let row = _mm256_min_epi32(_mm256_max_epi32(compact, zero), band_max_v);
        let col_v = _mm256_add_epi32(_mm256_set1_epi32(col as i32), lanes);
        // Each gather below: row < band_size and col_v < width, so each
        // index is below width * band_size; the 32-bit read of the last one
        // ends in HISTOGRAM_PAD (hist's length, asserted).
        // SAFETY: that bound.
        let p0 = unsafe { _mm256_i32gather_epi32::<2>(hist_ptr, _mm256_add_epi32(_mm256_mullo_epi32(row, width_v), col_v)) };
        let p0 = _mm256_and_si256(p0, low16);
        let mut c_value = _mm256_setzero_ps();
        for d in 0..t.num_diffs {
            let step = d as i32 + 1;
            let step_v = _mm256_set1_epi32(step);
            // value <= tvi_for_diff[d] && value + step > vlt_luma.
            let visible = _mm256_andnot_si256(
                _mm256_cmpgt_epi32(value, _mm256_set1_epi32(t.tvi_for_diff[d] as i32)),
                _mm256_cmpgt_epi32(_mm256_add_epi32(value, step_v), vlt_v),
            );
            let pred = _mm256_and_si256(visible, live);
            if _mm256_testz_si256(pred, pred) != 0 {
                continue;
            }
            let above = _mm256_min_epi32(_mm256_add_epi32(row, step_v), band_max_v);
            let below_raw = _mm256_sub_epi32(row, step_v);
            let below_in = _mm256_cmpgt_epi32(below_raw, _mm256_set1_epi32(-1));
            let below = _mm256_max_epi32(below_raw, zero);
            // SAFETY: above and below are clamped into the band, as `row`.
            let (p1, p2) = unsafe {
                (
                    _mm256_i32gather_epi32::<2>(hist_ptr, _mm256_add_epi32(_mm256_mullo_epi32(above, width_v), col_v)),
                    _mm256_i32gather_epi32::<2>(hist_ptr, _mm256_add_epi32(_mm256_mullo_epi32(below, width_v), col_v)),
                )
            };
            let p1 = _mm256_and_si256(p1, low16);
            let p2 = _mm256_and_si256(
                p2,
                _mm256_and_si256(low16, below_in),
            );
            // The scalar `p1 > p2 ? p1 : p2`; counts are non-negative.
            let p = _mm256_max_epi32(p1, p2);
            let num = _mm256_mullo_epi32(_mm256_set1_epi32(t.diff_weights[d]), _mm256_mullo_epi32(p0, p));
            // SAFETY: p + p0 >= 0 (counts) and clamped below lut.len(); only
            // lanes not live can need the clamp.
            let recip = unsafe { _mm256_i32gather_ps::<4>(lut.as_ptr(), _mm256_min_epi32(_mm256_add_epi32(p, p0), lut_max_v)) };
            let val = _mm256_and_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(num), recip), _mm256_castsi256_ps(pred));
            // `val > c_value ? val : c_value`: equal values are the same bits
            // (no NaN, no negative zero: both are products of non-negatives).
            c_value = _mm256_max_ps(val, c_value);
        }
        // SAFETY: `dst` holds 8 floats of `out` (above).
        let kept = unsafe { _mm256_loadu_ps(dst) };
        let masked_off = _mm256_castsi256_ps(_mm256_cmpeq_epi32(active, zero));
        let merged = _mm256_or_ps(_mm256_and_ps(kept, masked_off), c_value);
        // SAFETY: as the load.
        unsafe { _mm256_storeu_ps(dst, merged) };
        col += 8;
    }
    for x in col..width {
        if msk[x] != 0 {
            out[x] = scalar::c_value_pixel(hist, img[x].wrapping_add(t.num_diffs as u16), t, lut, x, width);
        }
    }
}

/// The scalar picture passes compiled for AVX2 (integer code, exact
/// however the compiler vectorises it); the scalar ones where AVX2 is
/// absent.
pub(crate) fn picture_passes() -> PicturePasses {
    if !available() {
        return PicturePasses::SCALAR;
    }
    PicturePasses { anti_dither, spatial_mask, decimate, filter_mode }
}

fn anti_dither(image: &mut Plane16, width: usize, height: usize) {
    // SAFETY: only chosen where AVX2 was detected (`picture_passes`).
    unsafe { anti_dither_avx2(image, width, height) }
}

#[target_feature(enable = "avx2")]
fn anti_dither_avx2(image: &mut Plane16, width: usize, height: usize) {
    scalar::anti_dither(image, width, height)
}

fn spatial_mask(image: &Plane16, mask: &mut Plane16, width: usize, height: usize, scratch: &mut MaskScratch) {
    // SAFETY: only chosen where AVX2 was detected (`picture_passes`).
    unsafe { spatial_mask_avx2(image, mask, width, height, scratch) }
}

#[target_feature(enable = "avx2")]
fn spatial_mask_avx2(image: &Plane16, mask: &mut Plane16, width: usize, height: usize, scratch: &mut MaskScratch) {
    scalar::spatial_mask(image, mask, width, height, scratch)
}

fn decimate(image: &mut Plane16, width: usize, height: usize) {
    // SAFETY: only chosen where AVX2 was detected (`picture_passes`).
    unsafe { decimate_avx2(image, width, height) }
}

#[target_feature(enable = "avx2")]
fn decimate_avx2(image: &mut Plane16, width: usize, height: usize) {
    scalar::decimate(image, width, height)
}

fn filter_mode(image: &mut Plane16, width: usize, height: usize, lines: &mut Vec<u16>) {
    // SAFETY: only chosen where AVX2 was detected (`picture_passes`).
    unsafe { filter_mode_avx2(image, width, height, lines) }
}

#[target_feature(enable = "avx2")]
fn filter_mode_avx2(image: &mut Plane16, width: usize, height: usize, lines: &mut Vec<u16>) {
    scalar::filter_mode(image, width, height, lines)
}
