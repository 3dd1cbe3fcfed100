//! AVX-512 twin of the motion SAD (libvmaf's `motion_score_pipeline_{8,16}`),
//! bit for bit with `scalar::sad` (read `avx2.rs`'s doc for the bounds).
//!
//! The vertical pass runs 32 columns a step in 16-bit lanes: the five rows'
//! differences (|d| <= 4095 up to 12 bits), rows 0 and 4 and rows 1 and 3
//! added first (the filter is symmetric), then two `vpmaddwd`s per 16
//! outputs, the rounding riding on the second. Each output row is written
//! as i32 and, saturated, as i16. When every |y| of the row is below 2^15
//! (all but extreme rows) the i16 row is exact and the horizontal pass
//! runs on it, three `vpmaddwd`s per 16 outputs (even and odd outputs
//! apart, as neighbours pair up); otherwise it runs on the i32 row in
//! 64-bit lanes. Row ends are masked loads and stores (a masked-off lane
//! reads zeros and adds zero), so no scalar tail runs. 13- to 16-bit input
//! goes to the scalar code. The 16-bit scheme took 1.47 to 1.00 ms per
//! 1080p 8-bit frame on an Intel Xeon (`checkasm`'s `motion_timing`).

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
    // The blurred row twice, with two mirrored samples on each side so the
    // horizontal taps stay inside: as i32, then as i16 (with room for the
    // last 64-byte reads) in the i32s after it.
    let len16 = w + 4 + 40;
    y_row.resize(w + 4 + len16.div_ceil(2), 0);
    let (padded, rest) = y_row.split_at_mut(w + 4);
    // SAFETY: any i32 storage is valid i16 storage, and i16's alignment
    // divides i32's: the middle part is the whole slice.
    let (_, padded16, _) = unsafe { rest.align_to_mut::<i16>() };
    // SAFETY: AVX-512 F/BW/VL were detected above (the kernel's only
    // precondition).
    unsafe { sad_avx512(prev, cur, bits, padded, &mut padded16[..len16]) }
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
fn sad_avx512(prev: &PlaneView, cur: &PlaneView, bits: u32, padded: &mut [i32], padded16: &mut [i16]) -> u64 {
    let (w, h) = (cur.width(), cur.height());
    let mut total: u64 = 0;
    for i in 0..h {
        let rows: [usize; 5] = std::array::from_fn(|k| mirror(i as i32 - 2 + k as i32, h as i32));
        let max_abs = if bits == 8 {
            let p: [&[u8]; 5] = rows.map(|r| &prev.row_u8(r)[..w]);
            let c: [&[u8]; 5] = rows.map(|r| &cur.row_u8(r)[..w]);
            vertical_8(&p, &c, &mut padded[2..2 + w], &mut padded16[2..2 + w])
        } else {
            let p: [&[u16]; 5] = rows.map(|r| &prev.row_u16(r)[..w]);
            let c: [&[u16]; 5] = rows.map(|r| &cur.row_u16(r)[..w]);
            vertical_16(&p, &c, bits, &mut padded[2..2 + w], &mut padded16[2..2 + w])
        };
        if max_abs == 0 {
            continue;
        }
        // Mirror: y[-1] = y[1], y[-2] = y[2], y[w] = y[w-2], y[w+1] = y[w-3].
        let row_sad = if max_abs < (1 << 15) {
            // Every value fits i16 (the i16 row is exact, not saturated).
            padded16[0] = padded16[4];
            padded16[1] = padded16[3];
            padded16[w + 2] = padded16[w];
            padded16[w + 3] = padded16[w - 1];
            horizontal_i16(padded16, w)
        } else {
            padded[0] = padded[4];
            padded[1] = padded[3];
            padded[w + 2] = padded[w];
            padded[w + 3] = padded[w - 1];
            horizontal_i64(padded, w)
        };
        total += row_sad as u64;
    }
    total
}

/// Vertical 5-tap blur of prev - cur for one row of 8-bit samples, written
/// to `out` and, saturated to i16, to `out16`; returns the largest |value|.
/// 32 columns a step, in 16-bit lanes until the multiply-adds (see
/// [`blur_32`]).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn vertical_8(p: &[&[u8]; 5], c: &[&[u8]; 5], out: &mut [i32], out16: &mut [i16]) -> i32 {
    let w = out.len();
    let taps = Taps::new(1 << 7);
    let shift = _mm_cvtsi32_si128(8);
    let mut vmax = _mm512_setzero_si512();
    let mut j = 0;
    while j < w {
        let m = tail(j, w, 32);
        // The five rows' differences, 32 columns of i16 (|d| <= 255).
        let d: [__m512i; 5] = std::array::from_fn(|k| {
            // SAFETY: the mask keeps the loads inside the rows (length w).
            let (pv, cv) = unsafe {
                (
                    _mm256_maskz_loadu_epi8(m, p[k].as_ptr().add(j) as *const i8),
                    _mm256_maskz_loadu_epi8(m, c[k].as_ptr().add(j) as *const i8),
                )
            };
            _mm512_sub_epi16(_mm512_cvtepu8_epi16(pv), _mm512_cvtepu8_epi16(cv))
        });
        let y = blur_32(&taps, &d, shift);
        // SAFETY: out[j..] and out16[j..] hold the mask's lanes (`tail`).
        unsafe { store_32(out, out16, j, m, y) };
        vmax = _mm512_max_epi32(vmax, _mm512_max_epi32(_mm512_abs_epi32(y[0]), _mm512_abs_epi32(y[1])));
        j += 32;
    }
    _mm512_reduce_max_epi32(vmax)
}

/// As [`vertical_8`] for 9- to 12-bit samples (|d| <= 4095).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn vertical_16(p: &[&[u16]; 5], c: &[&[u16]; 5], bits: u32, out: &mut [i32], out16: &mut [i16]) -> i32 {
    let w = out.len();
    let taps = Taps::new(1 << (bits - 1));
    let shift = _mm_cvtsi32_si128(bits as i32);
    let mut vmax = _mm512_setzero_si512();
    let mut j = 0;
    while j < w {
        let m = tail(j, w, 32);
        let d: [__m512i; 5] = std::array::from_fn(|k| {
            // SAFETY: the mask keeps the loads inside the rows (length w).
            let (pv, cv) = unsafe {
                (
                    _mm512_maskz_loadu_epi16(m, p[k].as_ptr().add(j) as *const i16),
                    _mm512_maskz_loadu_epi16(m, c[k].as_ptr().add(j) as *const i16),
                )
            };
            _mm512_sub_epi16(pv, cv)
        });
        let y = blur_32(&taps, &d, shift);
        // SAFETY: out[j..] and out16[j..] hold the mask's lanes (`tail`).
        unsafe { store_32(out, out16, j, m, y) };
        vmax = _mm512_max_epi32(vmax, _mm512_max_epi32(_mm512_abs_epi32(y[0]), _mm512_abs_epi32(y[1])));
        j += 32;
    }
    _mm512_reduce_max_epi32(vmax)
}

/// The vertical filter's coefficients as `vpmaddwd` pairs.
struct Taps {
    /// (f0, f1), for the pairs (d0 + d4, d1 + d3).
    outer: __m512i,
    /// (f2, round), for the pairs (d2, 1): the rounding rides along.
    middle: __m512i,
    ones: __m512i,
    /// 64-bit chunk order (0, 4, 1, 5, 2, 6, 3, 7): unpacklo/hi of two
    /// vectors so ordered give columns 0..15 and 16..31 in order.
    order: __m512i,
}

impl Taps {
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    fn new(round: i32) -> Taps {
        let pair = |lo: i32, hi: i32| _mm512_set1_epi32((hi << 16) | lo);
        Taps {
            outer: pair(FILTER[0], FILTER[1]),
            middle: pair(FILTER[2], round),
            ones: _mm512_set1_epi16(1),
            order: _mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7),
        }
    }
}

/// (sum_k f_k d_k + round) >> shift for 32 columns of i16 differences
/// (|d| <= 4095), as two vectors of 16 i32 lanes in column order. The
/// filter is symmetric, so rows 0 and 4, and 1 and 3, are added first in
/// 16 bits (|sum| <= 8190), leaving two `vpmaddwd`s per 16 columns; the
/// sum is the scalar code's to the bit (|acc| < 2^29, no wrap anywhere).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn blur_32(t: &Taps, d: &[__m512i; 5], shift: __m128i) -> [__m512i; 2] {
    let outer_04 = _mm512_permutexvar_epi64(t.order, _mm512_add_epi16(d[0], d[4]));
    let outer_13 = _mm512_permutexvar_epi64(t.order, _mm512_add_epi16(d[1], d[3]));
    let middle = _mm512_permutexvar_epi64(t.order, d[2]);
    let half = |outer: __m512i, middle: __m512i| {
        let acc = _mm512_add_epi32(_mm512_madd_epi16(outer, t.outer), _mm512_madd_epi16(middle, t.middle));
        _mm512_sra_epi32(acc, shift)
    };
    [
        half(_mm512_unpacklo_epi16(outer_04, outer_13), _mm512_unpacklo_epi16(middle, t.ones)),
        half(_mm512_unpackhi_epi16(outer_04, outer_13), _mm512_unpackhi_epi16(middle, t.ones)),
    ]
}

/// Stores `y` (columns j..j + 32) into `out`, and saturated to i16 into
/// `out16`, where `m` has lanes.
///
/// Safety: the lanes `m` sets, j + lane, are inside `out` and `out16`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn store_32(out: &mut [i32], out16: &mut [i16], j: usize, m: u32, y: [__m512i; 2]) {
    debug_assert!(m == 0 || j + (32 - m.leading_zeros() as usize) <= out.len().min(out16.len()));
    let y16 = _mm512_inserti64x4::<1>(
        _mm512_castsi256_si512(_mm512_cvtsepi32_epi16(y[0])),
        _mm512_cvtsepi32_epi16(y[1]),
    );
    // SAFETY: by the contract, the lanes stored are inside `out` and
    // `out16`; a second i32 half with no lanes is not stored (its address
    // may be past the end).
    unsafe {
        _mm512_mask_storeu_epi16(out16.as_mut_ptr().add(j), m, y16);
        _mm512_mask_storeu_epi32(out.as_mut_ptr().add(j), m as __mmask16, y[0]);
        if m >> 16 != 0 {
            _mm512_mask_storeu_epi32(out.as_mut_ptr().add(j + 16), (m >> 16) as __mmask16, y[1]);
        }
    }
}

/// Horizontal blur, |.|, summed over the row (u32 wrapping, as libvmaf's
/// `row_sad`), on the i16 row: exact in 32 bits when every |y| < 2^15.
/// `vpmaddwd` pairs neighbours, so a step takes 32 columns as 16 even and
/// 16 odd outputs: output o sums (y[o-2], y[o-1]) * (f0, f1) +
/// (y[o], y[o+1]) * (f2, f1) + (y[o+2], y[o+3]) * (f0, 0). `padded` holds
/// y[-2..w+2] and room for the reads past it (lanes past w are dropped).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn horizontal_i16(padded: &[i16], w: usize) -> u32 {
    assert!(padded.len() >= w + 4 + 36);
    let pair = |lo: i32, hi: i32| _mm512_set1_epi32((hi << 16) | lo);
    let (c01, c21, c0) = (pair(FILTER[0], FILTER[1]), pair(FILTER[2], FILTER[1]), pair(FILTER[0], 0));
    let round = _mm512_set1_epi32(1 << 15);
    let mut sum = _mm512_setzero_si512();
    let mut j = 0;
    while j < w {
        for parity in 0..2 {
            let o = j + parity;
            if o >= w {
                break;
            }
            // Output o + 2i for lanes i with o + 2i < w.
            let m = tail(0, (w - o).div_ceil(2), 16) as __mmask16;
            // SAFETY: reads padded[o..o + 36], inside `padded` (asserted: o < w).
            let load = |k: usize| unsafe { _mm512_loadu_si512(padded.as_ptr().add(o + k) as *const _) };
            let acc = _mm512_add_epi32(
                _mm512_add_epi32(_mm512_madd_epi16(load(0), c01), _mm512_madd_epi16(load(2), c21)),
                _mm512_add_epi32(_mm512_madd_epi16(load(4), c0), round),
            );
            sum = _mm512_mask_add_epi32(sum, m, sum, _mm512_abs_epi32(_mm512_srai_epi32::<16>(acc)));
        }
        j += 32;
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
