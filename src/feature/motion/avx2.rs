//! AVX2 twin of the motion SAD (libvmaf's `motion_score_pipeline_{8,16}`).
//!
//! Bit-identical to `scalar::sad`: the vertical pass is exact in 32-bit
//! lanes up to 12 bits per sample (|acc| <= 65536 * 4095 < 2^31); the
//! horizontal pass is exact in 32-bit lanes while every |y_row| value of the
//! row is below 2^15 (65536 * 32767 < 2^31), which holds for all but
//! extreme rows; other rows use 64-bit arithmetic, as libvmaf's C does.
//! 13- to 16-bit input goes to the scalar code.

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
    // each side, so the horizontal taps never leave the buffer.
    y_row.resize(w + 4, 0);
    // SAFETY: AVX2 was detected above (the kernel's only precondition).
    unsafe { sad_avx2(prev, cur, bits, y_row) }
}

#[target_feature(enable = "avx2")]
fn sad_avx2(prev: &PlaneView, cur: &PlaneView, bits: u32, padded: &mut [i32]) -> u64 {
    let (w, h) = (cur.width(), cur.height());
    let mut total: u64 = 0;
    for i in 0..h {
        let rows: [usize; 5] = std::array::from_fn(|k| mirror(i as i32 - 2 + k as i32, h as i32));
        let max_abs = if bits == 8 {
            let p: [&[u8]; 5] = rows.map(|r| prev.row_u8(r));
            let c: [&[u8]; 5] = rows.map(|r| cur.row_u8(r));
            vertical_8(&p, &c, &mut padded[2..2 + w])
        } else {
            let p: [&[u16]; 5] = rows.map(|r| prev.row_u16(r));
            let c: [&[u16]; 5] = rows.map(|r| cur.row_u16(r));
            vertical_16(&p, &c, bits, &mut padded[2..2 + w])
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
            horizontal_i32(padded, w)
        } else {
            horizontal_i64(padded, w)
        };
        total += row_sad as u64;
    }
    total
}

/// Vertical 5-tap blur of prev - cur for one row of 8-bit samples, written
/// to `out`; returns the largest |value|.
#[target_feature(enable = "avx2")]
fn vertical_8(p: &[&[u8]; 5], c: &[&[u8]; 5], out: &mut [i32]) -> i32 {
    let w = out.len();
    let round = _mm256_set1_epi32(1 << 7);
    let f: [__m256i; 5] = std::array::from_fn(|k| _mm256_set1_epi32(FILTER[k]));
    let mut vmax = _mm256_setzero_si256();
    let mut j = 0;
    while j + 8 <= w {
        let mut acc = _mm256_setzero_si256();
        for k in 0..5 {
            // SAFETY: j + 8 <= w <= each row's length (the rows are the
            // picture's, w its width); loads 8 bytes of each.
            let (pv, cv) = unsafe {
                (
                    _mm_loadl_epi64(p[k].as_ptr().add(j) as *const __m128i),
                    _mm_loadl_epi64(c[k].as_ptr().add(j) as *const __m128i),
                )
            };
            let (pv, cv) = (_mm256_cvtepu8_epi32(pv), _mm256_cvtepu8_epi32(cv));
            acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(f[k], _mm256_sub_epi32(pv, cv)));
        }
        let y = _mm256_srai_epi32::<8>(_mm256_add_epi32(acc, round));
        // SAFETY: j + 8 <= w = out.len().
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(j) as *mut __m256i, y) };
        vmax = _mm256_max_epi32(vmax, _mm256_abs_epi32(y));
        j += 8;
    }
    let mut max_abs = hmax(vmax);
    for jj in j..w {
        let mut acc = 0i32;
        for k in 0..5 {
            acc += FILTER[k] * (p[k][jj] as i32 - c[k][jj] as i32);
        }
        out[jj] = (acc + (1 << 7)) >> 8;
        max_abs = max_abs.max(out[jj].abs());
    }
    max_abs
}

/// As [`vertical_8`] for 9- to 12-bit samples.
#[target_feature(enable = "avx2")]
fn vertical_16(p: &[&[u16]; 5], c: &[&[u16]; 5], bits: u32, out: &mut [i32]) -> i32 {
    let w = out.len();
    let round = _mm256_set1_epi32(1 << (bits - 1));
    let shift = _mm_cvtsi32_si128(bits as i32);
    let f: [__m256i; 5] = std::array::from_fn(|k| _mm256_set1_epi32(FILTER[k]));
    let mut vmax = _mm256_setzero_si256();
    let mut j = 0;
    while j + 8 <= w {
        let mut acc = _mm256_setzero_si256();
        for k in 0..5 {
            // SAFETY: j + 8 <= w <= each row's length; loads 8 u16 of each.
            let (pv, cv) = unsafe {
                (
                    _mm_loadu_si128(p[k].as_ptr().add(j) as *const __m128i),
                    _mm_loadu_si128(c[k].as_ptr().add(j) as *const __m128i),
                )
            };
            let (pv, cv) = (_mm256_cvtepu16_epi32(pv), _mm256_cvtepu16_epi32(cv));
            acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(f[k], _mm256_sub_epi32(pv, cv)));
        }
        let y = _mm256_sra_epi32(_mm256_add_epi32(acc, round), shift);
        // SAFETY: j + 8 <= w = out.len().
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(j) as *mut __m256i, y) };
        vmax = _mm256_max_epi32(vmax, _mm256_abs_epi32(y));
        j += 8;
    }
    let mut max_abs = hmax(vmax);
    for jj in j..w {
        let mut acc = 0i64;
        for k in 0..5 {
            acc += FILTER[k] as i64 * (p[k][jj] as i64 - c[k][jj] as i64);
        }
        out[jj] = ((acc + (1i64 << (bits - 1))) >> bits) as i32;
        max_abs = max_abs.max(out[jj].abs());
    }
    max_abs
}

/// Horizontal blur, |.|, summed over the row (u32 wrapping, as libvmaf's
/// `row_sad`). Exact in 32 bits when every |y| < 2^15.
#[target_feature(enable = "avx2")]
fn horizontal_i32(padded: &[i32], w: usize) -> u32 {
    let round = _mm256_set1_epi32(1 << 15);
    let f: [__m256i; 5] = std::array::from_fn(|k| _mm256_set1_epi32(FILTER[k]));
    let mut sum = _mm256_setzero_si256();
    let mut j = 0;
    while j + 8 <= w {
        let mut acc = round;
        for k in 0..5 {
            // SAFETY: output j uses padded[j + k], j + k + 8 <= w + 4 = len.
            let y = unsafe { _mm256_loadu_si256(padded.as_ptr().add(j + k) as *const __m256i) };
            acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(f[k], y));
        }
        sum = _mm256_add_epi32(sum, _mm256_abs_epi32(_mm256_srai_epi32::<16>(acc)));
        j += 8;
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
