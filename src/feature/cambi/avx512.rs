//! AVX-512 c-values of CAMBI: the AVX2 kernel (`avx2.rs`, read its doc
//! first) on sixteen pixels per register, with mask registers: gathers
//! read only the lanes that need them and the row end is a masked load
//! and store (no scalar tail); the histograms' range additions are
//! thirty-two counts a register, masked at the end.

use std::arch::x86_64::*;

use super::scalar::{self, reciprocal_lut, CValueScratch, ContrastTables, MaskScratch, Plane16};
use super::PicturePasses;

pub(crate) fn available() -> bool {
    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512vl")
}

/// Same contract as [`scalar::c_values`]; the AVX2 kernel where AVX-512
/// is absent.
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
        return super::avx2::c_values(image, mask, c_values, scratch, window, t, width, height);
    }
    // SAFETY: AVX-512 F/BW/VL were detected above.
    unsafe { c_values_avx512(image, mask, c_values, scratch, window, t, width, height) }
}

#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
fn c_values_avx512(
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
        c_value_row_avx512(hist, img, msk, out, t, w)
    }, |range, delta| {
        add_range_avx512(range, delta)
    });
}

/// [`super::scalar::add_range`] thirty-two counts a register, the end of
/// the range a masked load and store.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
fn add_range_avx512(range: &mut [u16], delta: u16) {
    let d = _mm512_set1_epi16(delta as i16);
    let n = range.len();
    let ptr = range.as_mut_ptr() as *mut i16;
    let mut j = 0;
    while j < n {
        let k = (n - j).min(32);
        let m: __mmask32 = if k == 32 { u32::MAX } else { (1u32 << k) - 1 };
        // SAFETY: only the first k lanes, inside `range`, are read and written.
        unsafe {
            let v = _mm512_maskz_loadu_epi16(m, ptr.add(j));
            _mm512_mask_storeu_epi16(ptr.add(j), m, _mm512_add_epi16(v, d));
        }
        j += k;
    }
}

/// The row kernel alone (same contract as [`scalar::c_value_row`]), for
/// checkasm; the AVX2 row where AVX-512 is absent.
pub(crate) fn c_value_row(hist: &[u16], img: &[u16], msk: &[u16], out: &mut [f32], t: &ContrastTables<'_>, width: usize) {
    if !available() {
        return super::avx2::c_value_row(hist, img, msk, out, t, width);
    }
    // SAFETY: AVX-512 F/BW/VL were detected above.
    unsafe { c_value_row_avx512(hist, img, msk, out, t, width) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
fn c_value_row_avx512(
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
    let zero = _mm512_setzero_si512();
    let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let low16 = _mm512_set1_epi32(0xffff);
    let width_v = _mm512_set1_epi32(width as i32);
    let num_diffs_v = _mm512_set1_epi32(t.num_diffs as i32);
    // The scalar code adds num_diffs to a 16-bit code, wrapping.
    let band_offset_v = _mm512_set1_epi32(t.band_base.wrapping_add(t.num_diffs as u16) as i32);
    let band_size_v = _mm512_set1_epi32(band_size as i32);
    let band_max_v = _mm512_set1_epi32(band_size as i32 - 1);
    let lut_max_v = _mm512_set1_epi32(lut.len() as i32 - 1);
    let vlt_v = _mm512_set1_epi32(t.vlt_luma as i32);
    let hist_ptr = hist.as_ptr() as *const i32;

    let mut col = 0;
    while col < width {
        let n = (width - col).min(16);
        let in_row: __mmask16 = if n == 16 { 0xffff } else { (1u16 << n) - 1 };
        // SAFETY: only the first n lanes, inside each row (col + n <= width
        // <= msk.len(), img.len(), asserted), are read.
        let (m, code) = unsafe {
            (
                _mm256_maskz_loadu_epi16(in_row, msk.as_ptr().add(col) as *const i16),
                _mm256_maskz_loadu_epi16(in_row, img.as_ptr().add(col) as *const i16),
            )
        };
        let m = _mm512_cvtepu16_epi32(m);
        let active = _mm512_cmpgt_epi32_mask(m, zero);
        let code = _mm512_cvtepu16_epi32(code);
        let value = _mm512_and_si512(_mm512_add_epi32(code, num_diffs_v), low16);
        let row = _mm512_sub_epi32(value, band_offset_v);
        let live = active & _mm512_cmpge_epi32_mask(row, zero) & _mm512_cmplt_epi32_mask(row, band_size_v);
        let mut c_value = _mm512_setzero_ps();
        if live != 0 {
            let col_v = _mm512_add_epi32(_mm512_set1_epi32(col as i32), lanes);
            // The gathers below: only live lanes read, whose row is in the
            // band and column below width; the 32-bit read of the last count
            // ends in HISTOGRAM_PAD (hist's length, asserted).
            // SAFETY: that bound.
            let p0 = unsafe {
                _mm512_mask_i32gather_epi32::<2>(
                    zero,
                    live,
                    _mm512_add_epi32(_mm512_mullo_epi32(row, width_v), col_v),
                    hist_ptr as *const _,
                )
            };
            let p0 = _mm512_and_si512(p0, low16);
            for d in 0..t.num_diffs {
                let step_v = _mm512_set1_epi32(d as i32 + 1);
                // value <= tvi_for_diff[d] && value + step > vlt_luma.
                let pred = live
                    & _mm512_cmple_epi32_mask(value, _mm512_set1_epi32(t.tvi_for_diff[d] as i32))
                    & _mm512_cmpgt_epi32_mask(_mm512_add_epi32(value, step_v), vlt_v);
                if pred == 0 {
                    continue;
                }
                // A visible step of a code in the band stays in the band
                // (the thresholds grow with the step); clamped all the same
                // so that no table makes a gather read outside.
                let above = _mm512_min_epi32(_mm512_add_epi32(row, step_v), band_max_v);
                let below = _mm512_sub_epi32(row, step_v);
                let below_in = pred & _mm512_cmpge_epi32_mask(below, zero);
                // SAFETY: above is clamped into the band; below is read only
                // where it is >= 0 (below_in), and below row < band_size.
                let (p1, p2) = unsafe {
                    (
                        _mm512_mask_i32gather_epi32::<2>(
                            zero,
                            pred,
                            _mm512_add_epi32(_mm512_mullo_epi32(above, width_v), col_v),
                            hist_ptr as *const _,
                        ),
                        _mm512_mask_i32gather_epi32::<2>(
                            zero,
                            below_in,
                            _mm512_add_epi32(_mm512_mullo_epi32(below, width_v), col_v),
                            hist_ptr as *const _,
                        ),
                    )
                };
                let (p1, p2) = (_mm512_and_si512(p1, low16), _mm512_and_si512(p2, low16));
                let p = _mm512_max_epi32(p1, p2);
                let num = _mm512_mullo_epi32(_mm512_set1_epi32(t.diff_weights[d]), _mm512_mullo_epi32(p0, p));
                // SAFETY: clamped into the table (p + p0 counts pixels of
                // one window, fewer than its entries, and is >= 0).
                let recip = unsafe {
                    _mm512_mask_i32gather_ps::<4>(
                        _mm512_setzero_ps(),
                        pred,
                        _mm512_min_epi32(_mm512_add_epi32(p, p0), lut_max_v),
                        lut.as_ptr() as *const _,
                    )
                };
                let val = _mm512_maskz_mul_ps(pred, _mm512_cvtepi32_ps(num), recip);
                // `val > c_value ? val : c_value`, as maxps picks.
                c_value = _mm512_max_ps(val, c_value);
            }
        }
        // Masked pixels keep what they hold, as the scalar row leaves them.
        // SAFETY: only the first n lanes, col + n <= width <= out.len().
        unsafe {
            _mm512_mask_storeu_ps(out.as_mut_ptr().add(col), active & in_row, c_value);
        }
        col += n;
    }
}

/// The scalar picture passes compiled for AVX-512 (integer code, exact
/// however the compiler vectorises it); the AVX2 ones where AVX-512 is
/// absent.
pub(crate) fn picture_passes() -> PicturePasses {
    if !available() {
        return super::avx2::picture_passes();
    }
    PicturePasses { anti_dither, spatial_mask, decimate, filter_mode }
}

fn anti_dither(image: &mut Plane16, width: usize, height: usize) {
    // SAFETY: only chosen where AVX-512 was detected (`picture_passes`).
    unsafe { anti_dither_avx512(image, width, height) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
fn anti_dither_avx512(image: &mut Plane16, width: usize, height: usize) {
    scalar::anti_dither(image, width, height)
}

fn spatial_mask(image: &Plane16, mask: &mut Plane16, width: usize, height: usize, scratch: &mut MaskScratch) {
    // SAFETY: only chosen where AVX-512 was detected (`picture_passes`).
    unsafe { spatial_mask_avx512(image, mask, width, height, scratch) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
fn spatial_mask_avx512(image: &Plane16, mask: &mut Plane16, width: usize, height: usize, scratch: &mut MaskScratch) {
    scalar::spatial_mask(image, mask, width, height, scratch)
}

fn decimate(image: &mut Plane16, width: usize, height: usize) {
    // SAFETY: only chosen where AVX-512 was detected (`picture_passes`).
    unsafe { decimate_avx512(image, width, height) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
fn decimate_avx512(image: &mut Plane16, width: usize, height: usize) {
    scalar::decimate(image, width, height)
}

fn filter_mode(image: &mut Plane16, width: usize, height: usize, lines: &mut Vec<u16>) {
    // SAFETY: only chosen where AVX-512 was detected (`picture_passes`).
    unsafe { filter_mode_avx512(image, width, height, lines) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
fn filter_mode_avx512(image: &mut Plane16, width: usize, height: usize, lines: &mut Vec<u16>) {
    scalar::filter_mode(image, width, height, lines)
}
