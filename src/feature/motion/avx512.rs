//! AVX-512 twin of the motion SAD, the AVX2 one (`avx2.rs`, read its doc
//! first) on 16 columns per register.
//!
//! Bit-identical to `scalar::sad` by the same bounds as the AVX2 code: the
//! vertical pass is exact in 32-bit lanes up to 12 bits per sample; the
//! horizontal pass uses 32-bit lanes while every |y_row| value is below
//! 2^15 and 64-bit lanes (native arithmetic shift and abs here) otherwise.
//! Row ends are masked loads and stores (a masked-off lane reads zeros and
//! so adds zero), so no scalar tail runs. 13- to 16-bit input goes to the
//! scalar code.

use std::arch::x86_64::*;

use super::scalar::{self, mirror};
use super::FILTER;
use crate::picture::PlaneView;

fn available() -> bool {
    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512vl")
}

/// Same contract as [`scalar::sad`]; falls back to the AVX2 kernel where
/// AVX-512 is absent.
pub(super) fn sad(prev: &PlaneView, cur: &PlaneView, bits: u32, y_row: &mut Vec<i32>) -> u64 {
    if !available() {
        return super::avx2::sad(prev, cur, bits, y_row);
    }
    let (w, h) = (cur.width(), cur.height());
    if bits > 12 || w < 3 || h < 3 {
        return scalar::sad(prev, cur, bits, y_row);
    }
    // Two mirrored samples on each side, so the horizontal taps stay inside.
    y_row.resize(w + 4, 0);
    // SAFETY: AVX-512 F/BW/VL were detected above (the kernel's only
    // precondition).
    unsafe { sad_avx512(prev, cur, bits, y_row) }
}

/// The lanes of a block of `lanes` starting at `j` that lie before `w`.
#[inline]
fn tail(j: usize, w: usize, lanes: usize) -> u32 {
    let n = (w - j).min(lanes);
    if n == 32 {
        u32::MAX
    } else {
        (1u32 << n) - 1
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn sad_avx512(prev: &PlaneView, cur: &PlaneView, bits: u32, padded: &mut [i32]) -> u64 {
    let (w, h) = (cur.width(), cur.height());
    let mut total: u64 = 0;
    for i in 0..h {
        let rows: [usize; 5] = std::array::from_fn(|k| mirror(i as i32 - 2 + k as i32, h as i32));
        let max_abs = if bits == 8 {
            let p: [&[u8]; 5] = rows.map(|r| &prev.row_u8(r)[..w]);
            let c: [&[u8]; 5] = rows.map(|r| &cur.row_u8(r)[..w]);
            vertical_8(&p, &c, &mut padded[2..2 + w])
        } else {
            let p: [&[u16]; 5] = rows.map(|r| &prev.row_u16(r)[..w]);
            let c: [&[u16]; 5] = rows.map(|r| &cur.row_u16(r)[..w]);
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
        let row_sad = if max_abs < (1 << 15) { horizontal_i32(padded, w) } else { horizontal_i64(padded, w) };
        total += row_sad as u64;
    }
    total
}

/// Vertical 5-tap blur of prev - cur for one row of 8-bit samples, written
/// to `out`; returns the largest |value|.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn vertical_8(p: &[&[u8]; 5], c: &[&[u8]; 5], out: &mut [i32]) -> i32 {
    let w = out.len();
    let round = _mm512_set1_epi32(1 << 7);
    let f: [__m512i; 5] = std::array::from_fn(|k| _mm512_set1_epi32(FILTER[k]));
    let mut vmax = _mm512_setzero_si512();
    let mut j = 0;
    while j < w {
        let m = tail(j, w, 16) as __mmask16;
        let mut acc = _mm512_setzero_si512();
        for k in 0..5 {
            // SAFETY: the mask keeps the loads inside the rows (length w).
            let (pv, cv) = unsafe {
                (
                    _mm_maskz_loadu_epi8(m, p[k].as_ptr().add(j) as *const i8),
                    _mm_maskz_loadu_epi8(m, c[k].as_ptr().add(j) as *const i8),
                )
            };
            let (pv, cv) = (_mm512_cvtepu8_epi32(pv), _mm512_cvtepu8_epi32(cv));
            acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(f[k], _mm512_sub_epi32(pv, cv)));
        }
        let y = _mm512_srai_epi32::<8>(_mm512_add_epi32(acc, round));
        // SAFETY: the mask keeps the store inside `out`.
        unsafe { _mm512_mask_storeu_epi32(out.as_mut_ptr().add(j), m, y) };
        vmax = _mm512_max_epi32(vmax, _mm512_abs_epi32(y));
        j += 16;
    }
    _mm512_reduce_max_epi32(vmax)
}

/// As [`vertical_8`] for 9- to 12-bit samples.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn vertical_16(p: &[&[u16]; 5], c: &[&[u16]; 5], bits: u32, out: &mut [i32]) -> i32 {
    let w = out.len();
    let round = _mm512_set1_epi32(1 << (bits - 1));
    let shift = _mm_cvtsi32_si128(bits as i32);
    let f: [__m512i; 5] = std::array::from_fn(|k| _mm512_set1_epi32(FILTER[k]));
    let mut vmax = _mm512_setzero_si512();
    let mut j = 0;
    while j < w {
        let m = tail(j, w, 16) as __mmask16;
        let mut acc = _mm512_setzero_si512();
        for k in 0..5 {
            // SAFETY: the mask keeps the loads inside the rows (length w).
            let (pv, cv) = unsafe {
                (
                    _mm256_maskz_loadu_epi16(m, p[k].as_ptr().add(j) as *const i16),
                    _mm256_maskz_loadu_epi16(m, c[k].as_ptr().add(j) as *const i16),
                )
            };
            let (pv, cv) = (_mm512_cvtepu16_epi32(pv), _mm512_cvtepu16_epi32(cv));
            acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(f[k], _mm512_sub_epi32(pv, cv)));
        }
        // A masked-off lane: (0 + round) >> bits = 0.
        let y = _mm512_sra_epi32(_mm512_add_epi32(acc, round), shift);
        // SAFETY: the mask keeps the store inside `out`.
        unsafe { _mm512_mask_storeu_epi32(out.as_mut_ptr().add(j), m, y) };
        vmax = _mm512_max_epi32(vmax, _mm512_abs_epi32(y));
        j += 16;
    }
    _mm512_reduce_max_epi32(vmax)
}

/// Horizontal blur, |.|, summed over the row (u32 wrapping, as libvmaf's
/// `row_sad`). Exact in 32 bits when every |y| < 2^15.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn horizontal_i32(padded: &[i32], w: usize) -> u32 {
    let round = _mm512_set1_epi32(1 << 15);
    let f: [__m512i; 5] = std::array::from_fn(|k| _mm512_set1_epi32(FILTER[k]));
    let mut sum = _mm512_setzero_si512();
    let mut j = 0;
    while j < w {
        let m = tail(j, w, 16) as __mmask16;
        let mut acc = round;
        for k in 0..5 {
            // SAFETY: output j uses padded[j + k], masked to j + k < w + 4 = len.
            let y = unsafe { _mm512_maskz_loadu_epi32(m, padded.as_ptr().add(j + k)) };
            acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(f[k], y));
        }
        // A masked-off lane: 2^15 >> 16 = 0.
        sum = _mm512_add_epi32(sum, _mm512_abs_epi32(_mm512_srai_epi32::<16>(acc)));
        j += 16;
    }
    _mm512_reduce_add_epi32(sum) as u32
}

/// Horizontal pass in 64-bit lanes, for rows with large values.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn horizontal_i64(padded: &[i32], w: usize) -> u32 {
    let round = _mm512_set1_epi64(1 << 15);
    let f: [__m512i; 5] = std::array::from_fn(|k| _mm512_set1_epi64(FILTER[k] as i64));
    let mut sum = _mm512_setzero_si512();
    let mut j = 0;
    while j < w {
        let m = tail(j, w, 8) as __mmask8;
        let mut acc = round;
        for k in 0..5 {
            // SAFETY: reads padded[j + k ..], masked to j + k < w + 4 = len.
            let y = unsafe { _mm256_maskz_loadu_epi32(m, padded.as_ptr().add(j + k)) };
            let y = _mm512_cvtepi32_epi64(y);
            acc = _mm512_add_epi64(acc, _mm512_mul_epi32(f[k], y));
        }
        sum = _mm512_add_epi64(sum, _mm512_abs_epi64(_mm512_srai_epi64::<16>(acc)));
        j += 8;
    }
    // The row sum wraps in u32, as libvmaf's: the low 32 bits of the total.
    _mm512_reduce_add_epi64(sum) as u32
}
