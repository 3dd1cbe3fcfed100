//! AVX-512 twins of every integer ADM row kernel (libvmaf 3.2.0
//! `feature/x86/adm_avx512.c` is the speed bar), built on `avx2.rs`: read
//! that module's doc first. The same integer operations lane by lane on
//! twice the columns (32 where the lanes are 16-bit, 16 where they are 32-bit),
//! with mask registers where the AVX2 code blends; bit-identical to the
//! scalar kernels (`tests/checkasm/adm.rs`). Sums take the row end as
//! masked loads (a masked-off lane reads 0, whose masked cube is 0), the
//! per-element kernels as one more block overlapping the last. The scales
//! 1-3 decouple works in i64 lanes in pixel order (native 64-bit shifts,
//! min/max, saturating narrowing, and `vcvtqq2ps` for C's int64 -> float).
//! Rows too short for one block, and weights the signed lanes cannot
//! take, go to the AVX2 kernels (which pass them on to the scalar ones).
//!
//! Each public kernel checks nothing about the CPU: `super::kernels` hands
//! them out only after runtime detection of AVX-512 F/BW/DQ/VL (and so
//! AVX2).

use std::arch::x86_64::*;

use super::avx2;
use super::cm::{CmShiftsS0, CmShiftsS123};
use super::decouple::{self, COS_1DEG_SQ};
use super::dwt::{self, HI, LO, LO_SUM};
use super::Kernels;

pub(crate) const KERNELS: Kernels = Kernels {
    dwt: dwt::DwtS0Kernels { vertical_u8, vertical_u16, horizontal: horizontal_s0 },
    decouple_s0: decouple_s0_row,
    csf_s0: csf_s0_row,
    thresholds: thresholds_row,
    cm_s0: cm_s0_row,
    cube_sum_s0,
    dwt_s123: dwt::DwtS123Kernels { vertical: vertical_s123, horizontal: horizontal_s123 },
    decouple_s123: decouple_s123_row,
    csf_s123: csf_s123_row,
    cm_s123: cm_s123_row,
};

/// Two i16 coefficients side by side, for `_mm512_madd_epi16`.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn pair(c0: i32, c1: i32) -> __m512i {
    _mm512_set1_epi32(((c1 as u32) << 16 | (c0 as u16 as u32)) as i32)
}

/// Sign-extends the low 16 bits of each i32 lane (C's `(int16_t)` cast).
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn as_i16(x: __m512i) -> __m512i {
    _mm512_srai_epi32::<16>(_mm512_slli_epi32::<16>(x))
}

// The loads and stores at `j` below leave the bound to their callers, as
// in avx2.rs.

/// 16 i16 at s[j..j + 16], sign-extended to i32. Safety: j + 16 <= s.len().
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn load16_i16(s: &[i16], j: usize) -> __m512i {
    debug_assert!(j + 16 <= s.len());
    // SAFETY: the caller's bound.
    _mm512_cvtepi16_epi32(unsafe { _mm256_loadu_si256(s.as_ptr().add(j) as *const __m256i) })
}

/// The i16 at s[j..j + 16] that `m` keeps (0 elsewhere, nothing read there).
/// Safety: j <= s.len() and every lane `m` keeps lies before s.len().
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn load16_i16_masked(s: &[i16], j: usize, m: __mmask16) -> __m512i {
    debug_assert!(j <= s.len() && (m as u32) >> (s.len() - j).min(16) == 0);
    // SAFETY: the caller's bound.
    _mm512_cvtepi16_epi32(unsafe { _mm256_maskz_loadu_epi16(m, s.as_ptr().add(j)) })
}

/// Stores 16 i32 truncated to i16 at out[j..j + 16]. Safety: j + 16 <=
/// out.len().
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn store16_i16(out: &mut [i16], j: usize, x: __m512i) {
    debug_assert!(j + 16 <= out.len());
    let v = _mm512_cvtepi32_epi16(x);
    // SAFETY: the caller's bound.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(j) as *mut __m256i, v) }
}

/// Writes out[j..j + 16]. Safety: j + 16 <= out.len().
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn store16_i32(out: &mut [i32], j: usize, x: __m512i) {
    debug_assert!(j + 16 <= out.len());
    // SAFETY: the caller's bound.
    unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(j) as *mut _, x) }
}

/// s[j..j + 16]. Safety: j + 16 <= s.len().
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn load16_i32(s: &[i32], j: usize) -> __m512i {
    debug_assert!(j + 16 <= s.len());
    // SAFETY: the caller's bound.
    unsafe { _mm512_loadu_si512(s.as_ptr().add(j) as *const _) }
}

/// The i32 at s[j..j + 16] that `m` keeps (0 elsewhere, nothing read there).
/// Safety: j <= s.len() and every lane `m` keeps lies before s.len().
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn load16_i32_masked(s: &[i32], j: usize, m: __mmask16) -> __m512i {
    debug_assert!(j <= s.len() && (m as u32) >> (s.len() - j).min(16) == 0);
    // SAFETY: the caller's bound.
    unsafe { _mm512_maskz_loadu_epi32(m, s.as_ptr().add(j)) }
}

/// s[j..j + 16] widened to i32. Safety: j + 16 <= s.len().
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn load16_u16(s: &[u16], j: usize) -> __m512i {
    debug_assert!(j + 16 <= s.len());
    // SAFETY: the caller's bound.
    _mm512_cvtepu16_epi32(unsafe { _mm256_loadu_si256(s.as_ptr().add(j) as *const __m256i) })
}

/// The lanes of a 16-lane block at j that lie before n (j < n).
#[inline]
fn row_mask(j: usize, n: usize) -> __mmask16 {
    if n - j >= 16 { 0xFFFF } else { (1 << (n - j)) - 1 }
}

// ---------------------------------------------------------------- DWT

pub(crate) fn vertical_u8(rows: [&[u8]; 4], lo: &mut [i16], hi: &mut [i16]) {
    // SAFETY: only reached after AVX-512 was detected (see module doc).
    unsafe { vertical_u8_avx512(rows, lo, hi) }
}

#[target_feature(enable = "avx512f,avx512bw")]
fn vertical_u8_avx512(rows: [&[u8]; 4], lo: &mut [i16], hi: &mut [i16]) {
    let w = lo.len();
    let hi = &mut hi[..w];
    let r = rows.map(|x| &x[..w]);
    if w < 32 {
        return avx2::vertical_u8(r, lo, hi);
    }
    let (lo01, lo23) = (pair(LO[0], LO[1]), pair(LO[2], LO[3]));
    let (hi01, hi23) = (pair(HI[0], HI[1]), pair(HI[2], HI[3]));
    let lo_bias = _mm512_set1_epi32(128 - LO_SUM * 128);
    let hi_bias = _mm512_set1_epi32(128);
    let mut j0 = 0;
    while j0 < w {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(w - 32);
        // SAFETY: j + 32 <= w, the length of every row.
        let s = unsafe {
            let load = |row: &[u8]| _mm256_loadu_si256(row.as_ptr().add(j) as *const __m256i);
            [load(r[0]), load(r[1]), load(r[2]), load(r[3])]
        };
        let s = s.map(|x| _mm512_cvtepu8_epi16(x));
        let (a_lo, a_hi) = (_mm512_unpacklo_epi16(s[0], s[1]), _mm512_unpackhi_epi16(s[0], s[1]));
        let (b_lo, b_hi) = (_mm512_unpacklo_epi16(s[2], s[3]), _mm512_unpackhi_epi16(s[2], s[3]));
        // unpacklo/hi then packs undo each other's order in each 128-bit lane.
        let l = _mm512_packs_epi32(vfilt16(lo01, lo23, lo_bias, a_lo, b_lo), vfilt16(lo01, lo23, lo_bias, a_hi, b_hi));
        let h = _mm512_packs_epi32(vfilt16(hi01, hi23, hi_bias, a_lo, b_lo), vfilt16(hi01, hi23, hi_bias, a_hi, b_hi));
        // SAFETY: j + 32 <= w, the length of both outputs.
        unsafe {
            _mm512_storeu_si512(lo.as_mut_ptr().add(j) as *mut _, l);
            _mm512_storeu_si512(hi.as_mut_ptr().add(j) as *mut _, h);
        }
        j0 += 32;
    }
}

/// 4-tap filter of interleaved row pairs, Q8 output.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn vfilt16(c01: __m512i, c23: __m512i, bias: __m512i, x: __m512i, y: __m512i) -> __m512i {
    let acc = _mm512_add_epi32(_mm512_madd_epi16(x, c01), _mm512_madd_epi16(y, c23));
    _mm512_srai_epi32::<8>(_mm512_add_epi32(acc, bias))
}

pub(crate) fn vertical_u16(rows: [&[u16]; 4], bits: u32, lo: &mut [i16], hi: &mut [i16]) {
    // SAFETY: only reached after AVX-512 was detected.
    unsafe { vertical_u16_avx512(rows, bits, lo, hi) }
}

/// 9- to 16-bit samples: products in i32 lanes (`avx2::vertical_u16`), 16
/// columns a block.
#[target_feature(enable = "avx512f,avx512bw")]
fn vertical_u16_avx512(rows: [&[u16]; 4], bits: u32, lo: &mut [i16], hi: &mut [i16]) {
    let w = lo.len();
    let hi = &mut hi[..w];
    let r = rows.map(|x| &x[..w]);
    if w < 16 {
        return avx2::vertical_u16(r, bits, lo, hi);
    }
    let add = 1i32 << (bits - 1);
    let lo_bias = _mm512_set1_epi32(add.wrapping_sub(LO_SUM.wrapping_mul(add)));
    let hi_bias = _mm512_set1_epi32(add);
    let cnt = _mm_cvtsi32_si128(bits as i32);
    let lc = LO.map(|c| _mm512_set1_epi32(c));
    let hc = HI.map(|c| _mm512_set1_epi32(c));
    let mut j0 = 0;
    while j0 < w {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(w - 16);
        // SAFETY: j + 16 <= w, the length of every row.
        let s = unsafe { [load16_u16(r[0], j), load16_u16(r[1], j), load16_u16(r[2], j), load16_u16(r[3], j)] };
        let mut al = _mm512_mullo_epi32(lc[0], s[0]);
        let mut ah = _mm512_mullo_epi32(hc[0], s[0]);
        for k in 1..4 {
            al = _mm512_add_epi32(al, _mm512_mullo_epi32(lc[k], s[k]));
            ah = _mm512_add_epi32(ah, _mm512_mullo_epi32(hc[k], s[k]));
        }
        // SAFETY: j + 16 <= w, the length of both outputs.
        unsafe {
            store16_i16(lo, j, _mm512_sra_epi32(_mm512_add_epi32(al, lo_bias), cnt));
            store16_i16(hi, j, _mm512_sra_epi32(_mm512_add_epi32(ah, hi_bias), cnt));
        }
        j0 += 16;
    }
}

pub(crate) fn horizontal_s0(lo: &[i16], hi: &[i16], a: &mut [i32], v: &mut [i16], h: &mut [i16], d: &mut [i16]) {
    // SAFETY: only reached after AVX-512 was detected.
    unsafe { horizontal_s0_avx512(lo, hi, a, v, h, d) }
}

#[target_feature(enable = "avx512f,avx512bw")]
fn horizontal_s0_avx512(lo: &[i16], hi: &[i16], a: &mut [i32], v: &mut [i16], h: &mut [i16], d: &mut [i16]) {
    let n = a.len();
    let (v, h, d) = (&mut v[..n], &mut h[..n], &mut d[..n]);
    let (lo, hi) = (&lo[..2 * n + 2], &hi[..2 * n + 2]);
    if n < 16 {
        return avx2::horizontal_s0(lo, hi, a, v, h, d);
    }
    let (lo01, lo23) = (pair(LO[0], LO[1]), pair(LO[2], LO[3]));
    let (hi01, hi23) = (pair(HI[0], HI[1]), pair(HI[2], HI[3]));
    let mut j0 = 0;
    while j0 < n {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(n - 16);
        // The low band stays i32 (its values fit i16, so no narrowing).
        // SAFETY: j + 16 <= n, every output's length; the reads are
        // e[2j .. 2j + 34], inside e[..2n + 2].
        unsafe {
            store16_i32(a, j, hfilt16(lo, j, lo01, lo23));
            store16_i16(v, j, hfilt16(lo, j, hi01, hi23));
            store16_i16(h, j, hfilt16(hi, j, lo01, lo23));
            store16_i16(d, j, hfilt16(hi, j, hi01, hi23));
        }
        j0 += 16;
    }
}

/// Outputs j..j + 16 of the horizontal pass, as madds of the pairs at 2j
/// and 2j + 2 (see `avx2::hfilt8`). Reads e[2j..2j + 34]. Safety:
/// 2j + 34 <= e.len().
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn hfilt16(e: &[i16], j: usize, c01: __m512i, c23: __m512i) -> __m512i {
    debug_assert!(2 * j + 34 <= e.len());
    // SAFETY: the caller's bound: both 32-element reads end by 2j + 34.
    let (x0, x1) = unsafe {
        let p = e.as_ptr().add(2 * j);
        let x0 = _mm512_loadu_si512(p as *const _);
        let x1 = _mm512_loadu_si512(p.add(2) as *const _);
        (x0, x1)
    };
    let acc = _mm512_add_epi32(_mm512_madd_epi16(x0, c01), _mm512_madd_epi16(x1, c23));
    _mm512_srai_epi32::<16>(_mm512_add_epi32(acc, _mm512_set1_epi32(32768)))
}

// ---------------------------------------------------------------- decouple

pub(crate) fn decouple_s0_row(o: [&[i16]; 3], t: [&[i16]; 3], r: [&mut [i16]; 3], a: [&mut [i16]; 3], egl: f64) {
    // The lanes multiply by the gain limit in integers: exact only for an
    // integral limit (libvmaf's models use 1 and 100).
    if egl.fract() != 0.0 || !(1.0..=100.0).contains(&egl) {
        return decouple::decouple_s0_row(o, t, r, a, egl);
    }
    // SAFETY: only reached after AVX-512 was detected.
    unsafe { decouple_s0_avx512(o, t, r, a, egl as i32) }
}

/// i32 lanes to f32 as C converts the int64 sums: 2^31 (the one sum that
/// wraps in i32) becomes +2^31.
#[target_feature(enable = "avx512f")]
#[inline]
fn sum_to_f32(x: __m512i) -> __m512 {
    let wrapped = _mm512_cmpeq_epi32_mask(x, _mm512_set1_epi32(i32::MIN));
    _mm512_mask_blend_ps(wrapped, _mm512_cvtepi32_ps(x), _mm512_set1_ps(2147483648.0))
}

/// `angle_flag` of 8 lanes in double.
#[target_feature(enable = "avx512f")]
#[inline]
fn angle_mask_pd(dp: __m256, om: __m256, tm: __m256) -> __mmask8 {
    // x / 4096 as x * 2^-12: the same double, these being integers' floats.
    let k = _mm512_set1_pd(1.0 / 4096.0);
    let dp = _mm512_mul_pd(_mm512_cvtps_pd(dp), k);
    let rhs = _mm512_mul_pd(
        _mm512_mul_pd(_mm512_set1_pd(COS_1DEG_SQ as f64), _mm512_mul_pd(_mm512_cvtps_pd(om), k)),
        _mm512_mul_pd(_mm512_cvtps_pd(tm), k),
    );
    let ge0 = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(dp, _mm512_setzero_pd());
    let ge = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(_mm512_mul_pd(dp, dp), rhs);
    ge0 & ge
}

/// The low and high 8 f32 lanes of x.
#[target_feature(enable = "avx512f,avx512dq")]
#[inline]
fn halves(x: __m512) -> (__m256, __m256) {
    (_mm512_castps512_ps256(x), _mm512_extractf32x8_ps::<1>(x))
}

/// Restored and additive values of one band, 16 lanes.
#[target_feature(enable = "avx512f")]
#[inline]
fn decouple_band(o: __m512i, t: __m512i, angle: __mmask16, egl: __m512i, div: &[i32; 65537]) -> (__m512i, __m512i) {
    let zero = _mm512_setzero_si512();
    let c32768 = _mm512_set1_epi32(32768);
    // SAFETY: o holds i16 values: o + 32768 lies in 0..=65535, inside div.
    let q = unsafe { _mm512_i32gather_epi32::<4>(_mm512_add_epi32(o, c32768), div.as_ptr() as *const _) };
    let round = _mm512_set1_epi64(16384);
    // (q * t + 16384) >> 15 in 64 bits; the low 32 bits of the logical
    // shift are those of the arithmetic one.
    let even = _mm512_srli_epi64::<15>(_mm512_add_epi64(_mm512_mul_epi32(q, t), round));
    let odd = _mm512_srli_epi64::<15>(_mm512_add_epi64(
        _mm512_mul_epi32(_mm512_srli_epi64::<32>(q), _mm512_srli_epi64::<32>(t)),
        round,
    ));
    let tmp = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64::<32>(odd));
    let o_zero = _mm512_cmpeq_epi32_mask(o, zero);
    let k = _mm512_min_epi32(_mm512_max_epi32(tmp, zero), c32768);
    let k = _mm512_mask_blend_epi32(o_zero, k, c32768);
    let rst = _mm512_srai_epi32::<15>(_mm512_add_epi32(_mm512_mullo_epi32(k, o), _mm512_set1_epi32(16384)));
    // Gain: where the angles agree and k * o != 0, rst * egl limited by t.
    let gained = _mm512_mullo_epi32(rst, egl);
    let positive = _mm512_cmpgt_epi32_mask(o, zero);
    let limited = _mm512_mask_blend_epi32(positive, _mm512_max_epi32(gained, t), _mm512_min_epi32(gained, t));
    let apply = angle & !o_zero & !_mm512_cmpeq_epi32_mask(k, zero);
    let rst = _mm512_mask_blend_epi32(apply, rst, limited);
    (rst, _mm512_sub_epi32(t, rst))
}

#[target_feature(enable = "avx512f,avx512bw,avx512dq")]
fn decouple_s0_avx512(o: [&[i16]; 3], t: [&[i16]; 3], r: [&mut [i16]; 3], a: [&mut [i16]; 3], egl: i32) {
    let n = o[0].len();
    let o = o.map(|x| &x[..n]);
    let t = t.map(|x| &x[..n]);
    let [rh, rv, rd] = r;
    let [ah, av, ad] = a;
    let (rh, rv, rd, ah, av, ad) = (&mut rh[..n], &mut rv[..n], &mut rd[..n], &mut ah[..n], &mut av[..n], &mut ad[..n]);
    if n < 16 {
        return avx2::decouple_s0_row(o, t, [rh, rv, rd], [ah, av, ad], egl as f64);
    }
    let div = decouple::div_lookup();
    let eglv = _mm512_set1_epi32(egl);
    let mut j0 = 0;
    while j0 < n {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(n - 16);
        // SAFETY: j + 16 <= n for every slice.
        let (ov, tv) = unsafe {
            (
                [load16_i16(o[0], j), load16_i16(o[1], j), load16_i16(o[2], j)],
                [load16_i16(t[0], j), load16_i16(t[1], j), load16_i16(t[2], j)],
            )
        };
        let ot_dp = _mm512_add_epi32(_mm512_mullo_epi32(ov[0], tv[0]), _mm512_mullo_epi32(ov[1], tv[1]));
        let o_mag = _mm512_add_epi32(_mm512_mullo_epi32(ov[0], ov[0]), _mm512_mullo_epi32(ov[1], ov[1]));
        let t_mag = _mm512_add_epi32(_mm512_mullo_epi32(tv[0], tv[0]), _mm512_mullo_epi32(tv[1], tv[1]));
        let (fd, fo, ft) = (halves(sum_to_f32(ot_dp)), halves(sum_to_f32(o_mag)), halves(sum_to_f32(t_mag)));
        let lo8 = angle_mask_pd(fd.0, fo.0, ft.0);
        let hi8 = angle_mask_pd(fd.1, fo.1, ft.1);
        let angle = lo8 as __mmask16 | (hi8 as __mmask16) << 8;
        let outs_r: [&mut [i16]; 3] = [&mut *rh, &mut *rv, &mut *rd];
        let outs_a: [&mut [i16]; 3] = [&mut *ah, &mut *av, &mut *ad];
        for (b, (rr, aa)) in outs_r.into_iter().zip(outs_a).enumerate() {
            let (x, y) = decouple_band(ov[b], tv[b], angle, eglv, div);
            // SAFETY: j + 16 <= n, every output's length.
            unsafe {
                store16_i16(rr, j, x);
                store16_i16(aa, j, y);
            }
        }
        j0 += 16;
    }
}

// ---------------------------------------------------------------- CSF

pub(crate) fn csf_s0_row(src: [&[i16]; 3], i_rfactor: [u16; 3], fsum: &mut [i32], csum: &mut [i32]) {
    // SAFETY: only reached after AVX-512 was detected.
    unsafe { csf_s0_avx512(src, i_rfactor, fsum, csum) }
}

/// Filtered value and threshold centre of 16 CSF outputs (C's int16 casts).
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn flt_centre(dst: __m512i) -> (__m512i, __m512i) {
    let m = _mm512_abs_epi32(dst);
    let r = _mm512_set1_epi32(2048);
    let f = _mm512_srai_epi32::<12>(_mm512_add_epi32(_mm512_mullo_epi32(m, _mm512_set1_epi32(4369)), r));
    let c = _mm512_srai_epi32::<12>(_mm512_add_epi32(_mm512_mullo_epi32(m, _mm512_set1_epi32(8738)), r));
    (as_i16(f), as_i16(c))
}

#[target_feature(enable = "avx512f,avx512bw")]
fn csf_s0_avx512(src: [&[i16]; 3], i_rfactor: [u16; 3], fsum: &mut [i32], csum: &mut [i32]) {
    let n = fsum.len();
    let s = src.map(|x| &x[..n]);
    let c = &mut csum[..n];
    if n < 16 {
        return avx2::csf_s0_row(s, i_rfactor, fsum, c);
    }
    let rf = i_rfactor.map(|r| _mm512_set1_epi32(r as i32));
    let (add_hv, add_d) = (_mm512_set1_epi32(16384), _mm512_set1_epi32(65535));
    let mut j0 = 0;
    while j0 < n {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(n - 16);
        // SAFETY: j + 16 <= n for every slice.
        let x = unsafe { [load16_i16(s[0], j), load16_i16(s[1], j), load16_i16(s[2], j)] };
        let dh = as_i16(_mm512_srai_epi32::<15>(_mm512_add_epi32(_mm512_mullo_epi32(rf[0], x[0]), add_hv)));
        let dv = as_i16(_mm512_srai_epi32::<15>(_mm512_add_epi32(_mm512_mullo_epi32(rf[1], x[1]), add_hv)));
        let dd = as_i16(_mm512_srai_epi32::<17>(_mm512_add_epi32(_mm512_mullo_epi32(rf[2], x[2]), add_d)));
        let (fh, ch) = flt_centre(dh);
        let (fv, cv) = flt_centre(dv);
        let (fd, cd) = flt_centre(dd);
        let (f, cs) = (_mm512_add_epi32(_mm512_add_epi32(fh, fv), fd), _mm512_add_epi32(_mm512_add_epi32(ch, cv), cd));
        // SAFETY: j + 16 <= n = fsum.len() = c.len().
        unsafe {
            store16_i32(fsum, j, f);
            store16_i32(c, j, cs);
        }
        j0 += 16;
    }
}

// ---------------------------------------------------------------- masking

pub(crate) fn cm_s0_row(src: [&[i16]; 3], thr: &[i32], i_rfactor: [u16; 3], sh: CmShiftsS0) -> [i64; 3] {
    // SAFETY: only reached after AVX-512 was detected.
    unsafe { cm_s0_avx512(src, thr, i_rfactor, sh) }
}

/// `ADM_CM_ACCUM_ROUND` of 16 lanes, summed into 8 i64 lanes.
#[target_feature(enable = "avx512f")]
#[inline]
fn accum16<const SUB: u32>(x: __m512i, thr: __m512i, sq: (__m512i, __m128i), cub: (__m512i, __m128i)) -> __m512i {
    let x = _mm512_max_epi32(_mm512_sub_epi32(_mm512_abs_epi32(x), _mm512_slli_epi32::<SUB>(thr)), _mm512_setzero_si512());
    _mm512_add_epi64(cube8(x, sq, cub), cube8(_mm512_srli_epi64::<32>(x), sq, cub))
}

/// The rounded cube of the even i32 lanes of x (>= 0), as i64 lanes; the
/// square truncated to i32 as C's `(int32_t)` (mul_epi32 reads its low half).
#[target_feature(enable = "avx512f")]
#[inline]
fn cube8(x: __m512i, sq: (__m512i, __m128i), cub: (__m512i, __m128i)) -> __m512i {
    // x >= 0: its square is non-negative, a logical shift will do.
    let x_sq = _mm512_srl_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, x), sq.0), sq.1);
    _mm512_sra_epi64(_mm512_add_epi64(_mm512_mul_epi32(x_sq, x), cub.0), cub.1)
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn cm_s0_avx512(src: [&[i16]; 3], thr: &[i32], i_rfactor: [u16; 3], sh: CmShiftsS0) -> [i64; 3] {
    let n = thr.len();
    let s = src.map(|x| &x[..n]);
    let rf = i_rfactor.map(|r| _mm512_set1_epi32(r as i32));
    let sq_hv = (_mm512_set1_epi64(1 << 28), _mm_cvtsi32_si128(29));
    let sq_d = (_mm512_set1_epi64(1 << 29), _mm_cvtsi32_si128(30));
    let cub_hv = (_mm512_set1_epi64(sh.cub_hv.1 as i64), _mm_cvtsi32_si128((sh.cub_hv.0 & 63) as i32));
    let cub_d = (_mm512_set1_epi64(sh.cub_d.1 as i64), _mm_cvtsi32_si128((sh.cub_d.0 & 63) as i32));
    let mut acc = [_mm512_setzero_si512(); 3];
    let mut j = 0;
    while j < n {
        // The row end: lanes past n read 0 and add 0 (see the module doc).
        let m = row_mask(j, n);
        // SAFETY: the mask keeps every load inside its slice (length n).
        let (t, x) = unsafe {
            (
                _mm512_maskz_loadu_epi32(m, thr.as_ptr().add(j)),
                [load16_i16_masked(s[0], j, m), load16_i16_masked(s[1], j, m), load16_i16_masked(s[2], j, m)],
            )
        };
        let x = [
            _mm512_mullo_epi32(x[0], rf[0]),
            _mm512_mullo_epi32(x[1], rf[1]),
            _mm512_mullo_epi32(x[2], rf[2]),
        ];
        acc[0] = _mm512_add_epi64(acc[0], accum16::<10>(x[0], t, sq_hv, cub_hv));
        acc[1] = _mm512_add_epi64(acc[1], accum16::<10>(x[1], t, sq_hv, cub_hv));
        acc[2] = _mm512_add_epi64(acc[2], accum16::<12>(x[2], t, sq_d, cub_d));
        j += 16;
    }
    acc.map(|a| _mm512_reduce_add_epi64(a))
}

pub(crate) fn thresholds_row(up: &[i32], mid: &[i32], down: &[i32], csum: &[i32], left: usize, vsum: &mut [i32], thr: &mut [i32]) {
    // SAFETY: only reached after AVX-512 was detected.
    unsafe { thresholds_avx512(up, mid, down, csum, left, vsum, thr) }
}

/// `avx2::thresholds_row` on 16 columns a block: the vertical sums of
/// columns left - 1 ..= right, then the interior outputs from them, the
/// mirrored edge columns the scalar way. Rows too narrow for a block in
/// either pass go to the AVX2 kernel whole.
#[target_feature(enable = "avx512f")]
fn thresholds_avx512(up: &[i32], mid: &[i32], down: &[i32], csum: &[i32], left: usize, vsum: &mut [i32], thr: &mut [i32]) {
    let w = mid.len();
    let right = left + thr.len();
    let x0 = left.saturating_sub(1);
    let x1 = right.min(w - 1) + 1;
    let inner_end = right.min(w - 1);
    let inner_start = left.max(1);
    if x1 < x0 + 16 || inner_end < inner_start + 16 {
        return avx2::thresholds_row(up, mid, down, csum, left, vsum, thr);
    }
    let (up, down, csum, vsum) = (&up[..w], &down[..w], &csum[..w], &mut vsum[..w]);
    let mut x0_ = x0;
    while x0_ < x1 {
        let x = x0_.min(x1 - 16);
        // SAFETY: x + 16 <= x1 <= w, the length of up, mid, down and vsum.
        unsafe {
            let s = _mm512_add_epi32(_mm512_add_epi32(load16_i32(up, x), load16_i32(mid, x)), load16_i32(down, x));
            store16_i32(vsum, x, s);
        }
        x0_ += 16;
    }
    let edge = |j: usize| {
        let jl = if j == 0 { 1 } else { j - 1 };
        let jr = if j == w - 1 { w - 1 } else { j + 1 };
        vsum[jl].wrapping_add(vsum[j]).wrapping_add(vsum[jr]).wrapping_sub(mid[j]).wrapping_add(csum[j])
    };
    if left == 0 {
        thr[0] = edge(0);
    }
    let mut j0 = inner_start;
    while j0 < inner_end {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(inner_end - 16);
        // SAFETY: j >= 1 and j + 16 <= w - 1, so j - 1 .. j + 17 lies in
        // vsum (and j .. j + 16 in mid, csum: length w); j >= left and
        // j - left + 16 <= right - left = thr.len().
        unsafe {
            let s = _mm512_add_epi32(_mm512_add_epi32(load16_i32(vsum, j - 1), load16_i32(vsum, j)), load16_i32(vsum, j + 1));
            let t = _mm512_add_epi32(_mm512_sub_epi32(s, load16_i32(mid, j)), load16_i32(csum, j));
            store16_i32(thr, j - left, t);
        }
        j0 += 16;
    }
    for j in inner_end..right {
        thr[j - left] = edge(j);
    }
}

pub(crate) fn cube_sum_s0(src: &[i16]) -> u64 {
    // SAFETY: only reached after AVX-512 was detected.
    unsafe { cube_sum_s0_avx512(src) }
}

/// The sum of |x|^3 (`avx2::cube_sum_s0`), the row end as a masked load.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn cube_sum_s0_avx512(src: &[i16]) -> u64 {
    let n = src.len();
    let mut acc = _mm512_setzero_si512();
    let mut j = 0;
    while j < n {
        // SAFETY: the mask keeps every lane before n.
        let x = unsafe { load16_i16_masked(src, j, row_mask(j, n)) };
        // |x| <= 2^15: the square fits 32 bits, the cube takes the
        // unsigned 32 x 32 -> 64 multiply.
        let m = _mm512_abs_epi32(x);
        let sq = _mm512_mullo_epi32(m, m);
        let e = _mm512_mul_epu32(sq, m);
        let o = _mm512_mul_epu32(_mm512_srli_epi64::<32>(sq), _mm512_srli_epi64::<32>(m));
        acc = _mm512_add_epi64(acc, _mm512_add_epi64(e, o));
        j += 16;
    }
    _mm512_reduce_add_epi64(acc) as u64
}

// ---------------------------------------------------------------- decouple, scales 1-3

pub(crate) fn decouple_s123_row(o: [&[i32]; 3], t: [&[i32]; 3], r: [&mut [i32]; 3], a: [&mut [i32]; 3], egl: f64) {
    if egl.fract() != 0.0 || !(1.0..=100.0).contains(&egl) {
        return decouple::decouple_s123_row(o, t, r, a, egl);
    }
    // SAFETY: only reached after AVX-512 was detected.
    unsafe { decouple_s123_avx512(o, t, r, a, egl as i32) }
}

/// The low and high 8 i32 lanes of x, sign-extended to i64 (in order).
#[target_feature(enable = "avx512f")]
#[inline]
fn widen(x: __m512i) -> (__m512i, __m512i) {
    (_mm512_cvtepi32_epi64(_mm512_castsi512_si256(x)), _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64::<1>(x)))
}

/// 16 i32 lanes from the low 32 bits of two sets of 8 i64 lanes, in order.
#[target_feature(enable = "avx512f")]
#[inline]
fn narrow(lo: __m512i, hi: __m512i) -> __m512i {
    _mm512_inserti64x4::<1>(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(lo)), _mm512_cvtepi64_epi32(hi))
}

/// `angle_flag` of 8 pixels from their i64 h and v values; C's `(float)` of
/// the int64 sums is `vcvtqq2ps` (round to nearest even, as C converts).
#[target_feature(enable = "avx512f,avx512dq")]
#[inline]
fn angle_mask_s123(oh: __m512i, ov: __m512i, th: __m512i, tv: __m512i) -> __mmask8 {
    // Wrapping like libvmaf's int64 sum (only all-MIN inputs wrap).
    let dot = |a: __m512i, b: __m512i, c: __m512i, d: __m512i| {
        _mm512_add_epi64(_mm512_mul_epi32(a, b), _mm512_mul_epi32(c, d))
    };
    let fd = _mm512_cvtepi64_ps(dot(oh, th, ov, tv));
    let fo = _mm512_cvtepi64_ps(dot(oh, oh, ov, ov));
    let ft = _mm512_cvtepi64_ps(dot(th, th, tv, tv));
    angle_mask_pd(fd, fo, ft)
}

/// k of `adm_decouple_s123` for 8 pixels as i64 lanes: the reciprocal `q`,
/// t, o's sign and the rounding term and shift of its 15 leading bits.
#[target_feature(enable = "avx512f")]
#[inline]
fn k_s123(q: __m512i, t: __m512i, negative: __mmask8, round: __m512i, shift: __m512i) -> __m512i {
    let zero = _mm512_setzero_si512();
    let prod = _mm512_mul_epi32(q, t);
    let prod = _mm512_mask_sub_epi64(prod, negative, zero, prod);
    let tmp = _mm512_srav_epi64(_mm512_add_epi64(prod, round), _mm512_add_epi64(shift, _mm512_set1_epi64(15)));
    _mm512_min_epi64(_mm512_max_epi64(tmp, zero), _mm512_set1_epi64(32768))
}

/// Restored and additive values of one band at scales 1-3, 16 lanes.
#[target_feature(enable = "avx512f,avx512dq")]
#[inline]
fn decouple_band_s123(o: __m512i, t: __m512i, angle: __mmask16, egl: __m512i, div: &[i32; 65537]) -> (__m512i, __m512i) {
    let zero = _mm512_setzero_si512();
    let one = _mm512_set1_epi32(1);
    // |o| as unsigned (|i32::MIN| = 2^31). libvmaf keeps the 15 leading
    // bits of |o| >= 2^15, rounded: the shift is the number of powers
    // 2^15..2^31 that |o| reaches.
    let abs = _mm512_abs_epi32(o);
    let mut shift = zero;
    for m in 15..32 {
        let reaches = _mm512_cmpge_epu32_mask(abs, _mm512_set1_epi32((1u32 << m) as i32));
        shift = _mm512_mask_add_epi32(shift, reaches, shift, one);
    }
    let half = _mm512_srli_epi32::<1>(_mm512_sllv_epi32(one, shift));
    let msb = _mm512_srlv_epi32(_mm512_add_epi32(abs, half), shift);
    // SAFETY: 0 <= msb <= 2^15, so msb + 32768 lies inside div.
    let q = unsafe { _mm512_i32gather_epi32::<4>(_mm512_add_epi32(msb, _mm512_set1_epi32(32768)), div.as_ptr() as *const _) };
    // C's (1 << (14 + shift)) is an int: 2^31 wraps to -2^31.
    let round = _mm512_sllv_epi32(one, _mm512_add_epi32(shift, _mm512_set1_epi32(14)));
    let negative = _mm512_cmplt_epi32_mask(o, zero);
    let (q, t64, round, shift64, o64) = (widen(q), widen(t), widen(round), widen(shift), widen(o));
    let k_lo = k_s123(q.0, t64.0, negative as __mmask8, round.0, shift64.0);
    let k_hi = k_s123(q.1, t64.1, (negative >> 8) as __mmask8, round.1, shift64.1);
    let o_zero = _mm512_cmpeq_epi32_mask(o, zero);
    let c32768 = _mm512_set1_epi64(32768);
    let k_lo = _mm512_mask_mov_epi64(k_lo, o_zero as __mmask8, c32768);
    let k_hi = _mm512_mask_mov_epi64(k_hi, (o_zero >> 8) as __mmask8, c32768);
    // rst = (k * o + 16384) >> 15 in 64 bits (fits i32 again).
    let r16 = _mm512_set1_epi64(16384);
    let rst_lo = _mm512_srai_epi64::<15>(_mm512_add_epi64(_mm512_mul_epi32(k_lo, o64.0), r16));
    let rst_hi = _mm512_srai_epi64::<15>(_mm512_add_epi64(_mm512_mul_epi32(k_hi, o64.1), r16));
    // rst * egl saturated to i32, then compared with t as libvmaf compares
    // the exact double product.
    let gained = _mm512_inserti64x4::<1>(
        _mm512_castsi256_si512(_mm512_cvtsepi64_epi32(_mm512_mul_epi32(rst_lo, egl))),
        _mm512_cvtsepi64_epi32(_mm512_mul_epi32(rst_hi, egl)),
    );
    let rst = narrow(rst_lo, rst_hi);
    let k_zero = _mm512_cmpeq_epi64_mask(k_lo, _mm512_setzero_si512()) as __mmask16
        | (_mm512_cmpeq_epi64_mask(k_hi, _mm512_setzero_si512()) as __mmask16) << 8;
    let positive = _mm512_cmpgt_epi32_mask(o, zero);
    let limited = _mm512_mask_blend_epi32(positive, _mm512_max_epi32(gained, t), _mm512_min_epi32(gained, t));
    let apply = angle & !o_zero & !k_zero;
    let rst = _mm512_mask_blend_epi32(apply, rst, limited);
    (rst, _mm512_sub_epi32(t, rst))
}

#[target_feature(enable = "avx512f,avx512bw,avx512dq")]
fn decouple_s123_avx512(o: [&[i32]; 3], t: [&[i32]; 3], r: [&mut [i32]; 3], a: [&mut [i32]; 3], egl: i32) {
    let n = o[0].len();
    let o = [&o[0][..n], &o[1][..n], &o[2][..n]];
    let t = [&t[0][..n], &t[1][..n], &t[2][..n]];
    let [rh, rv, rd] = r;
    let [ah, av, ad] = a;
    let (rh, rv, rd, ah, av, ad) = (&mut rh[..n], &mut rv[..n], &mut rd[..n], &mut ah[..n], &mut av[..n], &mut ad[..n]);
    if n < 16 {
        return avx2::decouple_s123_row(o, t, [rh, rv, rd], [ah, av, ad], egl as f64);
    }
    let div = decouple::div_lookup();
    let eglv = _mm512_set1_epi64(egl as i64);
    let mut j0 = 0;
    while j0 < n {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(n - 16);
        // SAFETY: j + 16 <= n for every slice.
        let (ov, tv) = unsafe {
            let load = |s: &[i32]| _mm512_loadu_si512(s.as_ptr().add(j) as *const _);
            ([load(o[0]), load(o[1]), load(o[2])], [load(t[0]), load(t[1]), load(t[2])])
        };
        let (oh, ovv, th, tvv) = (widen(ov[0]), widen(ov[1]), widen(tv[0]), widen(tv[1]));
        let lo8 = angle_mask_s123(oh.0, ovv.0, th.0, tvv.0);
        let hi8 = angle_mask_s123(oh.1, ovv.1, th.1, tvv.1);
        let angle = lo8 as __mmask16 | (hi8 as __mmask16) << 8;
        let outs_r: [&mut [i32]; 3] = [&mut *rh, &mut *rv, &mut *rd];
        let outs_a: [&mut [i32]; 3] = [&mut *ah, &mut *av, &mut *ad];
        for (b, (rr, aa)) in outs_r.into_iter().zip(outs_a).enumerate() {
            let (x, y) = decouple_band_s123(ov[b], tv[b], angle, eglv, div);
            // SAFETY: j + 16 <= n, every output's length.
            unsafe {
                store16_i32(rr, j, x);
                store16_i32(aa, j, y);
            }
        }
        j0 += 16;
    }
}

// ---------------------------------------------------------------- DWT, scales 1-3

pub(crate) fn vertical_s123(rows: [&[i32]; 4], add: i64, shift: u32, lo: &mut [i32], hi: &mut [i32]) {
    // SAFETY: only reached after AVX-512 was detected.
    unsafe { vertical_s123_avx512(rows, add, shift, lo, hi) }
}

/// Puts the low 32 bits of the even (`e`) and odd (`o`) i64 lane results
/// back into 16 i32 lanes in order.
#[target_feature(enable = "avx512f")]
#[inline]
fn merge_even_odd(e: __m512i, o: __m512i) -> __m512i {
    _mm512_mask_blend_epi32(0xAAAA, e, _mm512_slli_epi64::<32>(o))
}

#[target_feature(enable = "avx512f")]
fn vertical_s123_avx512(rows: [&[i32]; 4], add: i64, shift: u32, lo: &mut [i32], hi: &mut [i32]) {
    let w = lo.len();
    let hi = &mut hi[..w];
    let r = [&rows[0][..w], &rows[1][..w], &rows[2][..w], &rows[3][..w]];
    if w < 16 {
        return avx2::vertical_s123(r, add, shift, lo, hi);
    }
    let lc = LO.map(|c| _mm512_set1_epi32(c));
    let hc = HI.map(|c| _mm512_set1_epi32(c));
    let addv = _mm512_set1_epi64(add);
    let cnt = _mm_cvtsi32_si128(shift as i32);
    // The low 32 bits of (v + add) >> shift: a logical shift gives those
    // of the arithmetic one (shift <= 16).
    let round_shift = |v: __m512i| _mm512_srl_epi64(_mm512_add_epi64(v, addv), cnt);
    let mut j0 = 0;
    while j0 < w {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(w - 16);
        // SAFETY: j + 16 <= w for every row.
        let s = unsafe {
            let load = |s: &[i32]| _mm512_loadu_si512(s.as_ptr().add(j) as *const _);
            [load(r[0]), load(r[1]), load(r[2]), load(r[3])]
        };
        let so = s.map(|x| _mm512_srli_epi64::<32>(x));
        let mut le = _mm512_mul_epi32(lc[0], s[0]);
        let mut lo_ = _mm512_mul_epi32(lc[0], so[0]);
        let mut he = _mm512_mul_epi32(hc[0], s[0]);
        let mut ho = _mm512_mul_epi32(hc[0], so[0]);
        for k in 1..4 {
            le = _mm512_add_epi64(le, _mm512_mul_epi32(lc[k], s[k]));
            lo_ = _mm512_add_epi64(lo_, _mm512_mul_epi32(lc[k], so[k]));
            he = _mm512_add_epi64(he, _mm512_mul_epi32(hc[k], s[k]));
            ho = _mm512_add_epi64(ho, _mm512_mul_epi32(hc[k], so[k]));
        }
        let l = merge_even_odd(round_shift(le), round_shift(lo_));
        let h = merge_even_odd(round_shift(he), round_shift(ho));
        // SAFETY: j + 16 <= w for both outputs.
        unsafe {
            store16_i32(lo, j, l);
            store16_i32(hi, j, h);
        }
        j0 += 16;
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn horizontal_s123(lo: &[i32], hi: &[i32], add: i64, shift: u32, a: &mut [i32], v: &mut [i32], h: &mut [i32], d: &mut [i32]) {
    // SAFETY: only reached after AVX-512 was detected.
    unsafe { horizontal_s123_avx512(lo, hi, add, shift, a, v, h, d) }
}

/// Outputs j..j + 16 of a scales 1-3 horizontal filter (`avx2::hfilt8_s123`
/// on 16 lanes): mul_epi32 reads the even i32 lanes, which for a load at
/// 2j + k are tap k of outputs j..j + 8; loads 16 further give j + 8..j + 16.
/// Reads e[2j..2j + 35]. Safety: 2j + 35 <= e.len().
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn hfilt16_s123(e: &[i32], j: usize, c: &[__m512i; 4], add: __m512i, cnt: __m128i) -> __m512i {
    debug_assert!(2 * j + 35 <= e.len());
    let p = e.as_ptr();
    // SAFETY: k <= 19: the read of 16 ends by 2j + 35, the caller's bound.
    let ld = |k: usize| unsafe { _mm512_loadu_si512(p.add(2 * j + k) as *const _) };
    let a0 = _mm512_add_epi64(_mm512_mul_epi32(ld(0), c[0]), _mm512_mul_epi32(ld(1), c[1]));
    let a1 = _mm512_add_epi64(_mm512_mul_epi32(ld(2), c[2]), _mm512_mul_epi32(ld(3), c[3]));
    let b0 = _mm512_add_epi64(_mm512_mul_epi32(ld(16), c[0]), _mm512_mul_epi32(ld(17), c[1]));
    let b1 = _mm512_add_epi64(_mm512_mul_epi32(ld(18), c[2]), _mm512_mul_epi32(ld(19), c[3]));
    // The low 32 bits of (v + add) >> shift: a logical shift gives those
    // of the arithmetic one (shift <= 32).
    let r0 = _mm512_srl_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), add), cnt);
    let r1 = _mm512_srl_epi64(_mm512_add_epi64(_mm512_add_epi64(b0, b1), add), cnt);
    // The low halves in order: r0's into lanes 0..8, r1's into 8..16.
    let pick = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    _mm512_permutex2var_epi32(r0, pick, r1)
}

#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
fn horizontal_s123_avx512(lo: &[i32], hi: &[i32], add: i64, shift: u32, a: &mut [i32], v: &mut [i32], h: &mut [i32], d: &mut [i32]) {
    let n = a.len();
    let (v, h, d) = (&mut v[..n], &mut h[..n], &mut d[..n]);
    let len = lo.len().min(hi.len());
    assert!(len >= 2 * n + 2);
    let lc = LO.map(|c| _mm512_set1_epi32(c));
    let hc = HI.map(|c| _mm512_set1_epi32(c));
    let addv = _mm512_set1_epi64(add);
    let cnt = _mm_cvtsi32_si128(shift as i32);
    let block = |j: usize| j + 16 <= n && 2 * j + 35 <= len;
    let mut j = 0;
    while block(j) {
        // SAFETY: block(j): outputs j..j + 16 lie in every output (length
        // n) and the reads e[2j..2j + 35] inside e[..len].
        unsafe {
            store16_i32(a, j, hfilt16_s123(lo, j, &lc, addv, cnt));
            store16_i32(v, j, hfilt16_s123(lo, j, &hc, addv, cnt));
            store16_i32(h, j, hfilt16_s123(hi, j, &lc, addv, cnt));
            store16_i32(d, j, hfilt16_s123(hi, j, &hc, addv, cnt));
        }
        j += 16;
    }
    // The rest as one block overlapping the last, where the row's padding
    // allows its read; else the AVX2 kernel on what is left.
    if j < n && n >= 16 && block(n - 16) {
        let j = n - 16;
        // SAFETY: block(j), as in the loop.
        unsafe {
            store16_i32(a, j, hfilt16_s123(lo, j, &lc, addv, cnt));
            store16_i32(v, j, hfilt16_s123(lo, j, &hc, addv, cnt));
            store16_i32(h, j, hfilt16_s123(hi, j, &lc, addv, cnt));
            store16_i32(d, j, hfilt16_s123(hi, j, &hc, addv, cnt));
        }
        return;
    }
    if j < n {
        avx2::horizontal_s123(&lo[2 * j..], &hi[2 * j..], add, shift, &mut a[j..], &mut v[j..], &mut h[j..], &mut d[j..]);
    }
}

// ---------------------------------------------------------------- CSF and masking, scales 1-3

pub(crate) fn csf_s123_row(src: [&[i32]; 3], i_rfactor: [u32; 3], fsum: &mut [i32], csum: &mut [i32]) {
    // The lanes multiply signed: weights from 2^31 up (Barten mode) and
    // rows shorter than a block go to the AVX2 kernel, which sends the
    // weights on to the scalar one.
    if i_rfactor.iter().any(|&r| r >= 1 << 31) || fsum.len() < 16 {
        return avx2::csf_s123_row(src, i_rfactor, fsum, csum);
    }
    // SAFETY: only reached after AVX-512 was detected.
    unsafe { csf_s123_avx512(src, i_rfactor, fsum, csum) }
}

/// ((x * rf + 2^27) >> 28) as i32 of 16 lanes (rf < 2^31).
#[target_feature(enable = "avx512f")]
#[inline]
fn weigh_s123(x: __m512i, rf: __m512i) -> __m512i {
    let add = _mm512_set1_epi64(1 << 27);
    let e = _mm512_srli_epi64::<28>(_mm512_add_epi64(_mm512_mul_epi32(x, rf), add));
    let o = _mm512_srli_epi64::<28>(_mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64::<32>(x), rf), add));
    merge_even_odd(e, o)
}

/// ((m * k - 2^31) >> 32) as i32 of 16 lanes, m = |dst| as C's abs gives it.
#[target_feature(enable = "avx512f")]
#[inline]
fn scaled_hi32(m: __m512i, k: __m512i) -> __m512i {
    let add = _mm512_set1_epi64(i32::MIN as i64);
    let e = _mm512_add_epi64(_mm512_mul_epi32(m, k), add);
    let o = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64::<32>(m), k), add);
    // The high halves are the shifted results.
    _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64::<32>(e), o)
}

#[target_feature(enable = "avx512f")]
fn csf_s123_avx512(src: [&[i32]; 3], i_rfactor: [u32; 3], fsum: &mut [i32], csum: &mut [i32]) {
    let n = fsum.len();
    let s = src.map(|x| &x[..n]);
    let c = &mut csum[..n];
    let rf = i_rfactor.map(|r| _mm512_set1_epi32(r as i32));
    let (k30, k15) = (_mm512_set1_epi32(143165577), _mm512_set1_epi32(286331153));
    let mut j0 = 0;
    while j0 < n {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(n - 16);
        let mut fs = _mm512_setzero_si512();
        let mut cs = _mm512_setzero_si512();
        for b in 0..3 {
            // SAFETY: j + 16 <= n, the length of s[b].
            let x = unsafe { load16_i32(s[b], j) };
            let m = _mm512_abs_epi32(weigh_s123(x, rf[b]));
            fs = _mm512_add_epi32(fs, scaled_hi32(m, k30));
            cs = _mm512_add_epi32(cs, scaled_hi32(m, k15));
        }
        // SAFETY: j + 16 <= n = fsum.len() = c.len().
        unsafe {
            store16_i32(fsum, j, fs);
            store16_i32(c, j, cs);
        }
        j0 += 16;
    }
}

pub(crate) fn cm_s123_row(src: [&[i32]; 3], thr: &[i32], i_rfactor: [u32; 3], sh: CmShiftsS123) -> [i64; 3] {
    if i_rfactor.iter().any(|&r| r >= 1 << 31) {
        return avx2::cm_s123_row(src, thr, i_rfactor, sh);
    }
    // SAFETY: only reached after AVX-512 was detected.
    unsafe { cm_s123_avx512(src, thr, i_rfactor, sh) }
}

/// `I4_ADM_CM_ACCUM_ROUND` summed over a row, the row end as masked loads
/// (a masked-off lane weighs 0 against a threshold of 0: a zero cube).
#[target_feature(enable = "avx512f")]
fn cm_s123_avx512(src: [&[i32]; 3], thr: &[i32], i_rfactor: [u32; 3], sh: CmShiftsS123) -> [i64; 3] {
    let n = thr.len();
    let s = src.map(|x| &x[..n]);
    let rf = i_rfactor.map(|r| _mm512_set1_epi32(r as i32));
    let sq = (_mm512_set1_epi64(1 << 29), _mm_cvtsi32_si128(30));
    let cub = (_mm512_set1_epi64(sh.cub.1 as i64), _mm_cvtsi32_si128((sh.cub.0 & 63) as i32));
    let mut acc = [_mm512_setzero_si512(); 3];
    let mut j = 0;
    while j < n {
        let m = row_mask(j, n);
        // SAFETY: the mask keeps every load inside its slice (length n).
        let (t, x) = unsafe {
            (
                load16_i32_masked(thr, j, m),
                [load16_i32_masked(s[0], j, m), load16_i32_masked(s[1], j, m), load16_i32_masked(s[2], j, m)],
            )
        };
        for b in 0..3 {
            acc[b] = _mm512_add_epi64(acc[b], accum16::<0>(weigh_s123(x[b], rf[b]), t, sq, cub));
        }
        j += 16;
    }
    acc.map(|a| _mm512_reduce_add_epi64(a))
}
