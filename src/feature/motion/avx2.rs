//! AVX2 twin of the motion SAD (libvmaf's `motion_score_pipeline_{8,16}`).
//!
//! Bit-identical to `scalar::sad`: the vertical pass is exact in 32-bit
//! lanes up to 12 bits per sample (|acc| <= 65536 * 4095 < 2^31); the
//! horizontal pass is exact in 32-bit lanes while every |y_row| value of the
//! row is below 2^15 (65536 * 32767 < 2^31), which holds for all but
//! extreme rows; other rows use 64-bit arithmetic, as libvmaf's C does.
//! 13- to 16-bit input goes to the scalar code.
//!
//! The vertical pass works on 16 columns of 16-bit differences (|d| <=
//! 4095): rows 0 and 4 and rows 1 and 3 are added first (the filter is
//! symmetric), then two `vpmaddwd`s per 8 outputs, the rounding riding on
//! the second. Each row is kept as i32 and, saturated, as i16; when every
//! |y| is below 2^15 the i16 row is exact and the horizontal pass runs on it,
//! three `vpmaddwd`s per 8 outputs (even and odd outputs apart, as
//! neighbours pair up). 1.55 to 1.03 ms per 1080p 8-bit frame on an Intel
//! Xeon held to AVX2 (`checkasm`'s `motion_timing`).

use std::arch::x86_64::*;

use super::scalar::{self, mirror};
use super::FILTER;
use crate::picture::PlaneView;

/// Same contract as [`scalar::sad`]; falls back to it where AVX2 is absent.
pub(super) fn sad(prev: &PlaneView, cur: &PlaneView, bits: u32, y_row: &mut Vec<i32>) -> u64 {
    let (w, h) = (cur.width(), cur.height());
    if bits > 12 || w < 16 || h < 3 || !is_x86_feature_detected!("avx2") {
        return scalar::sad(prev, cur, bits, y_row);
    }
    // y_row holds the blurred-difference row with two mirrored samples on
    // each side, so the horizontal taps never leave the buffer: as i32,
    // then as i16 (with room for the last 32-byte reads) in the i32s after.
    let len16 = w + 4 + 40;
    y_row.resize(w + 4 + len16.div_ceil(2), 0);
    let (padded, rest) = y_row.split_at_mut(w + 4);
    // SAFETY: any i32 storage is valid i16 storage, and i16's alignment
    // divides i32's: the middle part is the whole slice.
    let (_, padded16, _) = unsafe { rest.align_to_mut::<i16>() };
    // SAFETY: AVX2 was detected above (the kernel's only precondition).
    unsafe { sad_avx2(prev, cur, bits, padded, &mut padded16[..len16]) }
}

#[target_feature(enable = "avx2")]
fn sad_avx2(prev: &PlaneView, cur: &PlaneView, bits: u32, padded: &mut [i32], padded16: &mut [i16]) -> u64 {
    let (w, h) = (cur.width(), cur.height());
    let mut total: u64 = 0;
    for i in 0..h {
        let rows: [usize; 5] = std::array::from_fn(|k| mirror(i as i32 - 2 + k as i32, h as i32));
        let max_abs = if bits == 8 {
            let p: [&[u8]; 5] = rows.map(|r| prev.row_u8(r));
            let c: [&[u8]; 5] = rows.map(|r| cur.row_u8(r));
            vertical_8(&p, &c, &mut padded[2..2 + w], &mut padded16[2..2 + w])
        } else {
            let p: [&[u16]; 5] = rows.map(|r| prev.row_u16(r));
            let c: [&[u16]; 5] = rows.map(|r| cur.row_u16(r));
            vertical_16(&p, &c, bits, &mut padded[2..2 + w], &mut padded16[2..2 + w])
        };
        if max_abs == 0 {
            continue;
        }
        // Mirror: y[-1] = y[1], y[-2] = y[2], y[w] = y[w-2], y[w+1] = y[w-3].
        padded[0] = padded[4];
        padded[1] = padded[3];
        padded[w + 2] = padded[w];
        padded[w + 3] = padded[w - 1];
        let row_sad = if max_abs < (1 << 15) {
            // Every value fits i16 (the i16 row is exact, not saturated).
            padded16[0] = padded16[4];
            padded16[1] = padded16[3];
            padded16[w + 2] = padded16[w];
            padded16[w + 3] = padded16[w - 1];
            horizontal_i16(padded16, padded, w)
        } else {
            horizontal_i64(padded, w)
        };
        total += row_sad as u64;
    }
    total
}

/// Vertical 5-tap blur of prev - cur for one row of 8-bit samples, written
/// to `out` and, saturated to i16, to `out16`; returns the largest |value|.
/// 16 columns a step in 16-bit lanes until the multiply-adds (see
/// [`blur_16`]); the last w % 16 columns in scalar code.
#[target_feature(enable = "avx2")]
fn vertical_8(p: &[&[u8]; 5], c: &[&[u8]; 5], out: &mut [i32], out16: &mut [i16]) -> i32 {
    let w = out.len();
    let taps = Taps::new(1 << 7);
    let shift = _mm_cvtsi32_si128(8);
    let mut vmax = _mm256_setzero_si256();
    let mut j = 0;
    while j + 16 <= w {
        // The five rows' differences, 16 columns of i16 (|d| <= 255).
        let d: [__m256i; 5] = std::array::from_fn(|k| {
            // SAFETY: j + 16 <= w <= each row's length (the rows are the
            // picture's, w its width); loads 16 bytes of each.
            let (pv, cv) = unsafe {
                (
                    _mm_loadu_si128(p[k].as_ptr().add(j) as *const __m128i),
                    _mm_loadu_si128(c[k].as_ptr().add(j) as *const __m128i),
                )
            };
            _mm256_sub_epi16(_mm256_cvtepu8_epi16(pv), _mm256_cvtepu8_epi16(cv))
        });
        let y = blur_16(&taps, &d, shift);
        // SAFETY: j + 16 <= w = out.len() = out16.len().
        unsafe { store_16(out, out16, j, y) };
        vmax = _mm256_max_epi32(vmax, _mm256_max_epi32(_mm256_abs_epi32(y[0]), _mm256_abs_epi32(y[1])));
        j += 16;
    }
    let mut max_abs = hmax(vmax);
    for jj in j..w {
        let mut acc = 0i32;
        for k in 0..5 {
            acc += FILTER[k] * (p[k][jj] as i32 - c[k][jj] as i32);
        }
        out[jj] = (acc + (1 << 7)) >> 8;
        out16[jj] = out[jj].clamp(i16::MIN as i32, i16::MAX as i32) as i16;
        max_abs = max_abs.max(out[jj].abs());
    }
    max_abs
}

/// As [`vertical_8`] for 9- to 12-bit samples (|d| <= 4095).
#[target_feature(enable = "avx2")]
fn vertical_16(p: &[&[u16]; 5], c: &[&[u16]; 5], bits: u32, out: &mut [i32], out16: &mut [i16]) -> i32 {
    let w = out.len();
    let taps = Taps::new(1 << (bits - 1));
    let shift = _mm_cvtsi32_si128(bits as i32);
    let mut vmax = _mm256_setzero_si256();
    let mut j = 0;
    while j + 16 <= w {
        let d: [__m256i; 5] = std::array::from_fn(|k| {
            // SAFETY: j + 16 <= w <= each row's length; loads 16 u16 of each.
            let (pv, cv) = unsafe {
                (
                    _mm256_loadu_si256(p[k].as_ptr().add(j) as *const __m256i),
                    _mm256_loadu_si256(c[k].as_ptr().add(j) as *const __m256i),
                )
            };
            _mm256_sub_epi16(pv, cv)
        });
        let y = blur_16(&taps, &d, shift);
        // SAFETY: j + 16 <= w = out.len() = out16.len().
        unsafe { store_16(out, out16, j, y) };
        vmax = _mm256_max_epi32(vmax, _mm256_max_epi32(_mm256_abs_epi32(y[0]), _mm256_abs_epi32(y[1])));
        j += 16;
    }
    let mut max_abs = hmax(vmax);
    for jj in j..w {
        let mut acc = 0i64;
        for k in 0..5 {
            acc += FILTER[k] as i64 * (p[k][jj] as i64 - c[k][jj] as i64);
        }
        out[jj] = ((acc + (1i64 << (bits - 1))) >> bits) as i32;
        out16[jj] = out[jj].clamp(i16::MIN as i32, i16::MAX as i32) as i16;
        max_abs = max_abs.max(out[jj].abs());
    }
    max_abs
}

/// The vertical filter's coefficients as `vpmaddwd` pairs.
struct Taps {
    /// (f0, f1), for the pairs (d0 + d4, d1 + d3).
    outer: __m256i,
    /// (f2, round), for the pairs (d2, 1): the rounding rides along.
    middle: __m256i,
    ones: __m256i,
}

impl Taps {
    #[target_feature(enable = "avx2")]
    fn new(round: i32) -> Taps {
        let pair = |lo: i32, hi: i32| _mm256_set1_epi32((hi << 16) | lo);
        Taps { outer: pair(FILTER[0], FILTER[1]), middle: pair(FILTER[2], round), ones: _mm256_set1_epi16(1) }
    }
}

/// (sum_k f_k d_k + round) >> shift for 16 columns of i16 differences
/// (|d| <= 4095), as two vectors of 8 i32 lanes in column order. The
/// filter is symmetric, so rows 0 and 4, and 1 and 3, are added first in
/// 16 bits (|sum| <= 8190), leaving two `vpmaddwd`s per 8 columns; the sum
/// is the scalar code's to the bit (|acc| < 2^29, no wrap anywhere).
#[target_feature(enable = "avx2")]
fn blur_16(t: &Taps, d: &[__m256i; 5], shift: __m128i) -> [__m256i; 2] {
    // 64-bit chunks (0, 2, 1, 3): unpacklo/hi of two vectors so ordered
    // give columns 0..7 and 8..15 in order.
    const ORDER: i32 = 0b11_01_10_00;
    let outer_04 = _mm256_permute4x64_epi64::<ORDER>(_mm256_add_epi16(d[0], d[4]));
    let outer_13 = _mm256_permute4x64_epi64::<ORDER>(_mm256_add_epi16(d[1], d[3]));
    let middle = _mm256_permute4x64_epi64::<ORDER>(d[2]);
    let half = |outer: __m256i, middle: __m256i| {
        let acc = _mm256_add_epi32(_mm256_madd_epi16(outer, t.outer), _mm256_madd_epi16(middle, t.middle));
        _mm256_sra_epi32(acc, shift)
    };
    [
        half(_mm256_unpacklo_epi16(outer_04, outer_13), _mm256_unpacklo_epi16(middle, t.ones)),
        half(_mm256_unpackhi_epi16(outer_04, outer_13), _mm256_unpackhi_epi16(middle, t.ones)),
    ]
}

/// Stores `y` (columns j..j + 16) into `out`, and saturated to i16 into
/// `out16`.
///
/// Safety: j + 16 <= out.len() and j + 16 <= out16.len().
#[target_feature(enable = "avx2")]
unsafe fn store_16(out: &mut [i32], out16: &mut [i16], j: usize, y: [__m256i; 2]) {
    debug_assert!(j + 16 <= out.len() && j + 16 <= out16.len());
    // packs works within 128-bit lanes: (y0 lo, y1 lo, y0 hi, y1 hi) in
    // 64-bit chunks, put back in column order.
    let y16 = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(y[0], y[1]));
    // SAFETY: by the contract, the 16 lanes stored are inside both.
    unsafe {
        _mm256_storeu_si256(out.as_mut_ptr().add(j) as *mut __m256i, y[0]);
        _mm256_storeu_si256(out.as_mut_ptr().add(j + 8) as *mut __m256i, y[1]);
        _mm256_storeu_si256(out16.as_mut_ptr().add(j) as *mut __m256i, y16);
    }
}

/// Horizontal blur, |.|, summed over the row (u32 wrapping, as libvmaf's
/// `row_sad`), on the i16 row `padded16`: exact in 32 bits when every
/// |y| < 2^15. `vpmaddwd` pairs neighbours, so a step takes 16 columns as
/// 8 even and 8 odd outputs: output o sums (y[o-2], y[o-1]) * (f0, f1) +
/// (y[o], y[o+1]) * (f2, f1) + (y[o+2], y[o+3]) * (f0, 0). The last w % 16
/// outputs come from the i32 row `padded` in scalar code.
#[target_feature(enable = "avx2")]
fn horizontal_i16(padded16: &[i16], padded: &[i32], w: usize) -> u32 {
    assert!(padded16.len() >= w + 5 && padded.len() >= w + 4);
    let pair = |lo: i32, hi: i32| _mm256_set1_epi32((hi << 16) | lo);
    let (c01, c21, c0) = (pair(FILTER[0], FILTER[1]), pair(FILTER[2], FILTER[1]), pair(FILTER[0], 0));
    let round = _mm256_set1_epi32(1 << 15);
    let mut sum = _mm256_setzero_si256();
    let mut j = 0;
    while j + 16 <= w {
        for o in [j, j + 1] {
            // SAFETY: reads padded16[o..o + 20], inside it (asserted: o + 20 <= w + 5).
            let load = |k: usize| unsafe { _mm256_loadu_si256(padded16.as_ptr().add(o + k) as *const __m256i) };
            let acc = _mm256_add_epi32(
                _mm256_add_epi32(_mm256_madd_epi16(load(0), c01), _mm256_madd_epi16(load(2), c21)),
                _mm256_add_epi32(_mm256_madd_epi16(load(4), c0), round),
            );
            sum = _mm256_add_epi32(sum, _mm256_abs_epi32(_mm256_srai_epi32::<16>(acc)));
        }
        j += 16;
    }
    let mut lanes = [0u32; 8];
    // SAFETY: `lanes` is 32 bytes.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, sum) };
    let mut row = lanes.iter().fold(0u32, |a, &b| a.wrapping_add(b));
    for jj in j..w {
        row = row.wrapping_add(horizontal_one(padded, jj));
    }
    row
}

/// Horizontal pass in 64-bit lanes, for rows with large values.
#[target_feature(enable = "avx2")]
fn horizontal_i64(padded: &[i32], w: usize) -> u32 {
    // (acc + 2^15 + 2^40) >>> 16 == ((acc + 2^15) >> 16) + 2^24 for
    // |acc| < 2^40, which lets a logical shift stand in for the missing
    // 64-bit arithmetic one.
    let bias = _mm256_set1_epi64x((1 << 15) + (1i64 << 40));
    let unbias = _mm256_set1_epi64x(1 << 24);
    let f: [__m256i; 5] = std::array::from_fn(|k| _mm256_set1_epi64x(FILTER[k] as i64));
    let mut sum = _mm256_setzero_si256();
    let mut j = 0;
    while j + 4 <= w {
        let mut acc = bias;
        for k in 0..5 {
            // SAFETY: reads padded[j + k .. j + k + 4], within w + 4.
            let y = unsafe { _mm_loadu_si128(padded.as_ptr().add(j + k) as *const __m128i) };
            let y = _mm256_cvtepi32_epi64(y);
            acc = _mm256_add_epi64(acc, _mm256_mul_epi32(f[k], y));
        }
        let v = _mm256_sub_epi64(_mm256_srli_epi64::<16>(acc), unbias);
        // |v| fits in 32 bits; abs in 64-bit lanes via the sign mask.
        let sign = _mm256_cmpgt_epi64(_mm256_setzero_si256(), v);
        let abs = _mm256_sub_epi64(_mm256_xor_si256(v, sign), sign);
        sum = _mm256_add_epi64(sum, abs);
        j += 4;
    }
    let mut lanes = [0u64; 4];
    // SAFETY: `lanes` is 32 bytes.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, sum) };
    let mut row = lanes.iter().fold(0u32, |a, &b| a.wrapping_add(b as u32));
    for jj in j..w {
        row = row.wrapping_add(horizontal_one(padded, jj));
    }
    row
}

#[inline]
fn horizontal_one(padded: &[i32], j: usize) -> u32 {
    let mut acc = 0i64;
    for k in 0..5 {
        acc += FILTER[k] as i64 * padded[j + k] as i64;
    }
    (((acc + (1 << 15)) >> 16) as i32).unsigned_abs()
}

#[target_feature(enable = "avx2")]
fn hmax(v: __m256i) -> i32 {
    let mut lanes = [0i32; 8];
    // SAFETY: `lanes` is 32 bytes.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, v) };
    lanes.into_iter().max().unwrap()
}
