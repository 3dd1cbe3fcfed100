//! AVX2 twins of the integer ADM's row kernels (libvmaf 3.2.0
//! `feature/x86/adm_avx2.c` is the speed bar): DWT vertical and horizontal
//! passes, decouple, CSF, masking thresholds and masked cube sums, at
//! scale 0 (16-bit bands) and scales 1-3 (32-bit bands, 64-bit products).
//! Bit-identical to the scalar kernels (`tests/checkasm/adm.rs`): the same
//! integer operations lane by lane, i32 -> i16 narrowing by truncation, the
//! angle test in the same float/double steps (int64 -> float rounded
//! exactly). Row ends are handled by one more block overlapping the last
//! (masked where a kernel sums), so no scalar tail runs on long rows.
//! At 1080p 8-bit this runs ADM in about 16 ms of CPU per frame against
//! libvmaf's 22 ms with its AVX2 code (13 ms with its AVX-512).
//!
//! Each public kernel checks nothing about the CPU: `super::kernels` hands
//! them out only after runtime detection of AVX2.

use std::arch::x86_64::*;

use super::cm::{self, CmShiftsS0, CmShiftsS123};
use super::decouple::{self, COS_1DEG_SQ};
use super::den;
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

/// Two i16 coefficients side by side, for `_mm256_madd_epi16`.
#[target_feature(enable = "avx2")]
#[inline]
fn pair(c0: i32, c1: i32) -> __m256i {
    _mm256_set1_epi32(((c1 as u32) << 16 | (c0 as u16 as u32)) as i32)
}

/// Narrows 16 i32 (a: 0..8, b: 8..16) to i16 by truncation, in order.
#[target_feature(enable = "avx2")]
#[inline]
fn narrow_trunc(a: __m256i, b: __m256i) -> __m256i {
    let m = _mm256_set1_epi32(0xFFFF);
    let p = _mm256_packus_epi32(_mm256_and_si256(a, m), _mm256_and_si256(b, m));
    _mm256_permute4x64_epi64::<0b11_01_10_00>(p)
}

/// Sign-extends the low 16 bits of each i32 lane (C's `(int16_t)` cast).
#[target_feature(enable = "avx2")]
#[inline]
fn as_i16(x: __m256i) -> __m256i {
    _mm256_srai_epi32::<16>(_mm256_slli_epi32::<16>(x))
}

// The loads and stores of 8 or 16 elements at `j` below leave the bound
// to their callers (a checked slice would cost a compare in every loop).

/// s[j..j + 8] widened to i32. Safety: j + 8 <= s.len().
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn load8_i16(s: &[i16], j: usize) -> __m256i {
    debug_assert!(j + 8 <= s.len());
    // SAFETY: the caller's bound.
    _mm256_cvtepi16_epi32(unsafe { _mm_loadu_si128(s.as_ptr().add(j) as *const __m128i) })
}

/// s[j..j + 8]. Safety: j + 8 <= s.len().
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn load8_i32(s: &[i32], j: usize) -> __m256i {
    debug_assert!(j + 8 <= s.len());
    // SAFETY: the caller's bound.
    unsafe { _mm256_loadu_si256(s.as_ptr().add(j) as *const __m256i) }
}

/// Writes s[j..j + 8]. Safety: j + 8 <= s.len().
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn store8_i32(s: &mut [i32], j: usize, v: __m256i) {
    debug_assert!(j + 8 <= s.len());
    // SAFETY: the caller's bound.
    unsafe { _mm256_storeu_si256(s.as_mut_ptr().add(j) as *mut __m256i, v) }
}

/// s[j..j + 16] widened to i16. Safety: j + 16 <= s.len().
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn load16_u8(s: &[u8], j: usize) -> __m256i {
    debug_assert!(j + 16 <= s.len());
    // SAFETY: the caller's bound.
    _mm256_cvtepu8_epi16(unsafe { _mm_loadu_si128(s.as_ptr().add(j) as *const __m128i) })
}

/// s[j..j + 8] widened to i32. Safety: j + 8 <= s.len().
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn load8_u16(s: &[u16], j: usize) -> __m256i {
    debug_assert!(j + 8 <= s.len());
    // SAFETY: the caller's bound.
    _mm256_cvtepu16_epi32(unsafe { _mm_loadu_si128(s.as_ptr().add(j) as *const __m128i) })
}

// ---------------------------------------------------------------- DWT

pub(crate) fn vertical_u8(rows: [&[u8]; 4], lo: &mut [i16], hi: &mut [i16]) {
    // SAFETY: only reached after AVX2 was detected (see module doc).
    unsafe { vertical_u8_avx2(rows, lo, hi) }
}

#[target_feature(enable = "avx2")]
fn vertical_u8_avx2(rows: [&[u8]; 4], lo: &mut [i16], hi: &mut [i16]) {
    let w = lo.len();
    let hi = &mut hi[..w];
    let r = rows.map(|x| &x[..w]);
    let (lo01, lo23) = (pair(LO[0], LO[1]), pair(LO[2], LO[3]));
    let (hi01, hi23) = (pair(HI[0], HI[1]), pair(HI[2], HI[3]));
    let lo_bias = _mm256_set1_epi32(128 - LO_SUM * 128);
    let hi_bias = _mm256_set1_epi32(128);
    if w < 16 {
        return dwt::vertical_u8(r, lo, hi);
    }
    let mut j0 = 0;
    while j0 < w {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(w - 16);
        // SAFETY: j + 16 <= w, the length of every row.
        let s = unsafe { [load16_u8(r[0], j), load16_u8(r[1], j), load16_u8(r[2], j), load16_u8(r[3], j)] };
        let (a_lo, a_hi) = (_mm256_unpacklo_epi16(s[0], s[1]), _mm256_unpackhi_epi16(s[0], s[1]));
        let (b_lo, b_hi) = (_mm256_unpacklo_epi16(s[2], s[3]), _mm256_unpackhi_epi16(s[2], s[3]));
        // unpacklo/hi then packs undo each other's lane order.
        let l = _mm256_packs_epi32(vfilt8(lo01, lo23, lo_bias, a_lo, b_lo), vfilt8(lo01, lo23, lo_bias, a_hi, b_hi));
        let h = _mm256_packs_epi32(vfilt8(hi01, hi23, hi_bias, a_lo, b_lo), vfilt8(hi01, hi23, hi_bias, a_hi, b_hi));
        // SAFETY: j + 16 <= w, the length of both outputs.
        unsafe {
            _mm256_storeu_si256(lo.as_mut_ptr().add(j) as *mut __m256i, l);
            _mm256_storeu_si256(hi.as_mut_ptr().add(j) as *mut __m256i, h);
        }
        j0 += 16;
    }
}

/// 4-tap filter of interleaved row pairs, Q8 output.
#[target_feature(enable = "avx2")]
#[inline]
fn vfilt8(c01: __m256i, c23: __m256i, bias: __m256i, x: __m256i, y: __m256i) -> __m256i {
    let acc = _mm256_add_epi32(_mm256_madd_epi16(x, c01), _mm256_madd_epi16(y, c23));
    _mm256_srai_epi32::<8>(_mm256_add_epi32(acc, bias))
}

pub(crate) fn vertical_u16(rows: [&[u16]; 4], bits: u32, lo: &mut [i16], hi: &mut [i16]) {
    // SAFETY: only reached after AVX2 was detected.
    unsafe { vertical_u16_avx2(rows, bits, lo, hi) }
}

#[target_feature(enable = "avx2")]
fn vertical_u16_avx2(rows: [&[u16]; 4], bits: u32, lo: &mut [i16], hi: &mut [i16]) {
    let w = lo.len();
    let hi = &mut hi[..w];
    let r = rows.map(|x| &x[..w]);
    let add = 1i32 << (bits - 1);
    let lo_bias = _mm256_set1_epi32(add.wrapping_sub(LO_SUM.wrapping_mul(add)));
    let hi_bias = _mm256_set1_epi32(add);
    let cnt = _mm_cvtsi32_si128(bits as i32);
    let lc = [_mm256_set1_epi32(LO[0]), _mm256_set1_epi32(LO[1]), _mm256_set1_epi32(LO[2]), _mm256_set1_epi32(LO[3])];
    let hc = [_mm256_set1_epi32(HI[0]), _mm256_set1_epi32(HI[1]), _mm256_set1_epi32(HI[2]), _mm256_set1_epi32(HI[3])];
    if w < 16 {
        return dwt::vertical_u16(r, bits, lo, hi);
    }
    let mut j0 = 0;
    while j0 < w {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(w - 16);
        let mut out_l = [_mm256_setzero_si256(); 2];
        let mut out_h = [_mm256_setzero_si256(); 2];
        for half in 0..2 {
            let jj = j + 8 * half;
            // SAFETY: jj + 8 = j + 8 * half + 8 <= w, every row's length.
            let s = unsafe { [load8_u16(r[0], jj), load8_u16(r[1], jj), load8_u16(r[2], jj), load8_u16(r[3], jj)] };
            let mut al = _mm256_mullo_epi32(lc[0], s[0]);
            let mut ah = _mm256_mullo_epi32(hc[0], s[0]);
            for k in 1..4 {
                al = _mm256_add_epi32(al, _mm256_mullo_epi32(lc[k], s[k]));
                ah = _mm256_add_epi32(ah, _mm256_mullo_epi32(hc[k], s[k]));
            }
            out_l[half] = _mm256_sra_epi32(_mm256_add_epi32(al, lo_bias), cnt);
            out_h[half] = _mm256_sra_epi32(_mm256_add_epi32(ah, hi_bias), cnt);
        }
        let (l, h) = (narrow_trunc(out_l[0], out_l[1]), narrow_trunc(out_h[0], out_h[1]));
        // SAFETY: j + 16 <= w, the length of both outputs.
        unsafe {
            _mm256_storeu_si256(lo.as_mut_ptr().add(j) as *mut __m256i, l);
            _mm256_storeu_si256(hi.as_mut_ptr().add(j) as *mut __m256i, h);
        }
        j0 += 16;
    }
}

pub(crate) fn horizontal_s0(lo: &[i16], hi: &[i16], a: &mut [i32], v: &mut [i16], h: &mut [i16], d: &mut [i16]) {
    // SAFETY: only reached after AVX2 was detected.
    unsafe { horizontal_s0_avx2(lo, hi, a, v, h, d) }
}

#[target_feature(enable = "avx2")]
fn horizontal_s0_avx2(lo: &[i16], hi: &[i16], a: &mut [i32], v: &mut [i16], h: &mut [i16], d: &mut [i16]) {
    let n = a.len();
    let (v, h, d) = (&mut v[..n], &mut h[..n], &mut d[..n]);
    let (lo, hi) = (&lo[..2 * n + 2], &hi[..2 * n + 2]);
    let (lo01, lo23) = (pair(LO[0], LO[1]), pair(LO[2], LO[3]));
    let (hi01, hi23) = (pair(HI[0], HI[1]), pair(HI[2], HI[3]));
    if n < 16 {
        return dwt::horizontal_s0(lo, hi, a, v, h, d);
    }
    let mut j0 = 0;
    while j0 < n {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(n - 16);
        // The low band stays i32 (its values fit i16, so no narrowing).
        // SAFETY: j + 16 <= n, the length of every output; the reads are
        // e[2j .. 2j + 34], inside e[..2n + 2].
        unsafe {
            store8_i32(a, j, hfilt8(lo, j, lo01, lo23));
            store8_i32(a, j + 8, hfilt8(lo, j + 8, lo01, lo23));
            store16(v, j, hfilt8(lo, j, hi01, hi23), hfilt8(lo, j + 8, hi01, hi23));
            store16(h, j, hfilt8(hi, j, lo01, lo23), hfilt8(hi, j + 8, lo01, lo23));
            store16(d, j, hfilt8(hi, j, hi01, hi23), hfilt8(hi, j + 8, hi01, hi23));
        }
        j0 += 16;
    }
}

/// Output j..j + 8 of the horizontal pass: f0 * e[2j] + f1 * e[2j+1] +
/// f2 * e[2j+2] + f3 * e[2j+3], as madds of the pairs at 2j and 2j + 2.
/// Reads e[2j..2j + 18]. Safety: 2j + 18 <= e.len().
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn hfilt8(e: &[i16], j: usize, c01: __m256i, c23: __m256i) -> __m256i {
    debug_assert!(2 * j + 18 <= e.len());
    // SAFETY: the caller's bound: both 16-element reads end by 2j + 18.
    let (x0, x1) = unsafe {
        let p = e.as_ptr().add(2 * j);
        (_mm256_loadu_si256(p as *const __m256i), _mm256_loadu_si256(p.add(2) as *const __m256i))
    };
    let acc = _mm256_add_epi32(_mm256_madd_epi16(x0, c01), _mm256_madd_epi16(x1, c23));
    _mm256_srai_epi32::<16>(_mm256_add_epi32(acc, _mm256_set1_epi32(32768)))
}

/// Stores 16 i32 (x0: first 8) as i16 at out[j..j + 16]. Safety:
/// j + 16 <= out.len().
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn store16(out: &mut [i16], j: usize, x0: __m256i, x1: __m256i) {
    debug_assert!(j + 16 <= out.len());
    let v = narrow_trunc(x0, x1);
    // SAFETY: the caller's bound.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(j) as *mut __m256i, v) }
}

// ---------------------------------------------------------------- decouple

pub(crate) fn decouple_s0_row(o: [&[i16]; 3], t: [&[i16]; 3], r: [&mut [i16]; 3], a: [&mut [i16]; 3], egl: f64) {
    // The lanes multiply by the gain limit in integers: exact only for an
    // integral limit (libvmaf's models use 1 and 100).
    if egl.fract() != 0.0 || !(1.0..=100.0).contains(&egl) {
        return decouple::decouple_s0_row(o, t, r, a, egl);
    }
    // SAFETY: only reached after AVX2 was detected.
    unsafe { decouple_s0_avx2(o, t, r, a, egl as i32) }
}

/// i32 lanes to f32 as C converts the int64 sums: 2^31 (the one sum that
/// wraps in i32) becomes +2^31.
#[target_feature(enable = "avx2")]
#[inline]
fn sum_to_f32(x: __m256i) -> __m256 {
    let wrapped = _mm256_castsi256_ps(_mm256_cmpeq_epi32(x, _mm256_set1_epi32(i32::MIN)));
    _mm256_blendv_ps(_mm256_cvtepi32_ps(x), _mm256_set1_ps(2147483648.0), wrapped)
}

/// `angle_flag` of 4 lanes in double.
#[target_feature(enable = "avx2")]
#[inline]
fn angle_mask_pd(dp: __m128, om: __m128, tm: __m128) -> i32 {
    // x / 4096 as x * 2^-12: the same double, these being integers' floats.
    let k = _mm256_set1_pd(1.0 / 4096.0);
    let dp = _mm256_mul_pd(_mm256_cvtps_pd(dp), k);
    let rhs = _mm256_mul_pd(
        _mm256_mul_pd(_mm256_set1_pd(COS_1DEG_SQ as f64), _mm256_mul_pd(_mm256_cvtps_pd(om), k)),
        _mm256_mul_pd(_mm256_cvtps_pd(tm), k),
    );
    let ge0 = _mm256_cmp_pd::<_CMP_GE_OQ>(dp, _mm256_setzero_pd());
    let ge = _mm256_cmp_pd::<_CMP_GE_OQ>(_mm256_mul_pd(dp, dp), rhs);
    _mm256_movemask_pd(_mm256_and_pd(ge0, ge))
}

/// k, restored and additive values of one band, 8 lanes.
#[target_feature(enable = "avx2")]
#[inline]
fn decouple_band(o: __m256i, t: __m256i, angle: __m256i, egl: __m256i, div: &[i32; 65537]) -> (__m256i, __m256i) {
    let zero = _mm256_setzero_si256();
    let c32768 = _mm256_set1_epi32(32768);
    // SAFETY: o holds i16 values, so o + 32768 lies in 0..65536, inside
    // div's 65537 entries.
    let q = unsafe { _mm256_i32gather_epi32::<4>(div.as_ptr(), _mm256_add_epi32(o, c32768)) };
    let round = _mm256_set1_epi64x(16384);
    // (q * t + 16384) >> 15 in 64 bits; the low 32 bits of the logical
    // shift are those of the arithmetic one.
    let even = _mm256_srli_epi64::<15>(_mm256_add_epi64(_mm256_mul_epi32(q, t), round));
    let odd = _mm256_srli_epi64::<15>(_mm256_add_epi64(
        _mm256_mul_epi32(_mm256_srli_epi64::<32>(q), _mm256_srli_epi64::<32>(t)),
        round,
    ));
    let tmp = _mm256_blend_epi32::<0b1010_1010>(even, _mm256_slli_epi64::<32>(odd));
    let o_zero = _mm256_cmpeq_epi32(o, zero);
    let k = _mm256_min_epi32(_mm256_max_epi32(tmp, zero), c32768);
    let k = _mm256_blendv_epi8(k, c32768, o_zero);
    let rst = _mm256_srai_epi32::<15>(_mm256_add_epi32(_mm256_mullo_epi32(k, o), _mm256_set1_epi32(16384)));
    // Gain: where the angles agree and k * o != 0, rst * egl limited by t.
    let gained = _mm256_mullo_epi32(rst, egl);
    let positive = _mm256_cmpgt_epi32(o, zero);
    let limited = _mm256_blendv_epi8(_mm256_max_epi32(gained, t), _mm256_min_epi32(gained, t), positive);
    let apply = _mm256_andnot_si256(_mm256_or_si256(o_zero, _mm256_cmpeq_epi32(k, zero)), angle);
    let rst = _mm256_blendv_epi8(rst, limited, apply);
    (rst, _mm256_sub_epi32(t, rst))
}

#[target_feature(enable = "avx2")]
fn decouple_s0_avx2(o: [&[i16]; 3], t: [&[i16]; 3], r: [&mut [i16]; 3], a: [&mut [i16]; 3], egl: i32) {
    let div = decouple::div_lookup();
    let n = o[0].len();
    let o = o.map(|x| &x[..n]);
    let t = t.map(|x| &x[..n]);
    let [rh, rv, rd] = r;
    let [ah, av, ad] = a;
    let (rh, rv, rd, ah, av, ad) = (&mut rh[..n], &mut rv[..n], &mut rd[..n], &mut ah[..n], &mut av[..n], &mut ad[..n]);
    let eglv = _mm256_set1_epi32(egl);
    let bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    if n < 16 {
        return decouple::decouple_s0_row(o, t, [rh, rv, rd], [ah, av, ad], egl as f64);
    }
    let mut j0 = 0;
    while j0 < n {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(n - 16);
        let mut rs = [[_mm256_setzero_si256(); 2]; 3];
        let mut as_ = [[_mm256_setzero_si256(); 2]; 3];
        for half in 0..2 {
            let jj = j + 8 * half;
            // SAFETY: jj + 8 <= n for every slice.
            let (ov, tv) = unsafe {
                (
                    [load8_i16(o[0], jj), load8_i16(o[1], jj), load8_i16(o[2], jj)],
                    [load8_i16(t[0], jj), load8_i16(t[1], jj), load8_i16(t[2], jj)],
                )
            };
            let ot_dp = _mm256_add_epi32(_mm256_mullo_epi32(ov[0], tv[0]), _mm256_mullo_epi32(ov[1], tv[1]));
            let o_mag = _mm256_add_epi32(_mm256_mullo_epi32(ov[0], ov[0]), _mm256_mullo_epi32(ov[1], ov[1]));
            let t_mag = _mm256_add_epi32(_mm256_mullo_epi32(tv[0], tv[0]), _mm256_mullo_epi32(tv[1], tv[1]));
            let (fd, fo, ft) = (sum_to_f32(ot_dp), sum_to_f32(o_mag), sum_to_f32(t_mag));
            let lo4 = angle_mask_pd(_mm256_castps256_ps128(fd), _mm256_castps256_ps128(fo), _mm256_castps256_ps128(ft));
            let hi4 = angle_mask_pd(
                _mm256_extractf128_ps::<1>(fd),
                _mm256_extractf128_ps::<1>(fo),
                _mm256_extractf128_ps::<1>(ft),
            );
            let bits = _mm256_set1_epi32(lo4 | (hi4 << 4));
            let angle = _mm256_cmpeq_epi32(_mm256_and_si256(bits, bit), bit);
            for b in 0..3 {
                let (rr, aa) = decouple_band(ov[b], tv[b], angle, eglv, div);
                rs[b][half] = rr;
                as_[b][half] = aa;
            }
        }
        // SAFETY: j + 16 <= n, every output's length.
        unsafe {
            store16(rh, j, rs[0][0], rs[0][1]);
            store16(rv, j, rs[1][0], rs[1][1]);
            store16(rd, j, rs[2][0], rs[2][1]);
            store16(ah, j, as_[0][0], as_[0][1]);
            store16(av, j, as_[1][0], as_[1][1]);
            store16(ad, j, as_[2][0], as_[2][1]);
        }
        j0 += 16;
    }
}

// ---------------------------------------------------------------- CSF

pub(crate) fn csf_s0_row(src: [&[i16]; 3], i_rfactor: [u16; 3], fsum: &mut [i32], csum: &mut [i32]) {
    // SAFETY: only reached after AVX2 was detected.
    unsafe { csf_s0_avx2(src, i_rfactor, fsum, csum) }
}

/// Filtered value and threshold centre of 8 CSF outputs (C's int16 casts).
#[target_feature(enable = "avx2")]
#[inline]
fn flt_centre(dst: __m256i) -> (__m256i, __m256i) {
    let m = _mm256_abs_epi32(dst);
    let r = _mm256_set1_epi32(2048);
    let f = _mm256_srai_epi32::<12>(_mm256_add_epi32(_mm256_mullo_epi32(m, _mm256_set1_epi32(4369)), r));
    let c = _mm256_srai_epi32::<12>(_mm256_add_epi32(_mm256_mullo_epi32(m, _mm256_set1_epi32(8738)), r));
    (as_i16(f), as_i16(c))
}

#[target_feature(enable = "avx2")]
fn csf_s0_avx2(src: [&[i16]; 3], i_rfactor: [u16; 3], fsum: &mut [i32], csum: &mut [i32]) {
    let n = fsum.len();
    let s = src.map(|x| &x[..n]);
    let c = &mut csum[..n];
    let rf = [_mm256_set1_epi32(i_rfactor[0] as i32), _mm256_set1_epi32(i_rfactor[1] as i32), _mm256_set1_epi32(i_rfactor[2] as i32)];
    let (add_hv, add_d) = (_mm256_set1_epi32(16384), _mm256_set1_epi32(65535));
    if n < 8 {
        return cm::csf_s0_row(s, i_rfactor, fsum, c);
    }
    let mut j0 = 0;
    while j0 < n {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(n - 8);
        // SAFETY: j + 8 <= n for every slice.
        let x = unsafe { [load8_i16(s[0], j), load8_i16(s[1], j), load8_i16(s[2], j)] };
        let dh = as_i16(_mm256_srai_epi32::<15>(_mm256_add_epi32(_mm256_mullo_epi32(rf[0], x[0]), add_hv)));
        let dv = as_i16(_mm256_srai_epi32::<15>(_mm256_add_epi32(_mm256_mullo_epi32(rf[1], x[1]), add_hv)));
        let dd = as_i16(_mm256_srai_epi32::<17>(_mm256_add_epi32(_mm256_mullo_epi32(rf[2], x[2]), add_d)));
        let (fh, ch) = flt_centre(dh);
        let (fv, cv) = flt_centre(dv);
        let (fd, cd) = flt_centre(dd);
        let (f, cs) = (_mm256_add_epi32(_mm256_add_epi32(fh, fv), fd), _mm256_add_epi32(_mm256_add_epi32(ch, cv), cd));
        // SAFETY: j + 8 <= n = fsum.len() = c.len().
        unsafe {
            store8_i32(fsum, j, f);
            store8_i32(c, j, cs);
        }
        j0 += 8;
    }
}

// ---------------------------------------------------------------- masking

pub(crate) fn thresholds_row(up: &[i32], mid: &[i32], down: &[i32], csum: &[i32], left: usize, vsum: &mut [i32], thr: &mut [i32]) {
    // SAFETY: only reached after AVX2 was detected.
    unsafe { thresholds_avx2(up, mid, down, csum, left, vsum, thr) }
}

#[target_feature(enable = "avx2")]
fn thresholds_avx2(up: &[i32], mid: &[i32], down: &[i32], csum: &[i32], left: usize, vsum: &mut [i32], thr: &mut [i32]) {
    let w = mid.len();
    let (up, down, csum, vsum) = (&up[..w], &down[..w], &csum[..w], &mut vsum[..w]);
    let right = left + thr.len();
    let x0 = if left == 0 { 0 } else { left - 1 };
    let x1 = right.min(w - 1) + 1;
    if x1 >= x0 + 8 {
        let mut x0_ = x0;
        while x0_ < x1 {
            let x = x0_.min(x1 - 8);
            // SAFETY: x + 8 <= x1 <= w, the length of up, mid, down and vsum.
            unsafe {
                let s = _mm256_add_epi32(_mm256_add_epi32(load8_i32(up, x), load8_i32(mid, x)), load8_i32(down, x));
                store8_i32(vsum, x, s);
            }
            x0_ += 8;
        }
    } else {
        for x in x0..x1 {
            vsum[x] = up[x].wrapping_add(mid[x]).wrapping_add(down[x]);
        }
    }
    // Interior columns 1..w-1 read vsum[j - 1..j + 2] directly; the two
    // mirrored edge columns go through the scalar formula.
    let edge = |j: usize| {
        let jl = if j == 0 { 1 } else { j - 1 };
        let jr = if j == w - 1 { w - 1 } else { j + 1 };
        vsum[jl].wrapping_add(vsum[j]).wrapping_add(vsum[jr]).wrapping_sub(mid[j]).wrapping_add(csum[j])
    };
    let mut j = left;
    if j == 0 {
        thr[0] = edge(0);
        j = 1;
    }
    let inner_end = right.min(w - 1);
    let start = j;
    if inner_end >= start + 8 {
        let mut j0 = start;
        while j0 < inner_end {
            // The last block overlaps the one before: outputs are per element.
            let j = j0.min(inner_end - 8);
            // SAFETY: j >= 1 and j + 8 <= w - 1, so j - 1 .. j + 9 lies in
            // vsum (and j .. j + 8 in mid, csum: length w); j - left + 8 <=
            // right - left = thr.len().
            unsafe {
                let s = _mm256_add_epi32(
                    _mm256_add_epi32(load8_i32(vsum, j - 1), load8_i32(vsum, j)),
                    load8_i32(vsum, j + 1),
                );
                let t = _mm256_add_epi32(_mm256_sub_epi32(s, load8_i32(mid, j)), load8_i32(csum, j));
                store8_i32(thr, j - left, t);
            }
            j0 += 8;
        }
        j = inner_end;
    }
    for j in j..right {
        thr[j - left] = edge(j);
    }
}

pub(crate) fn cm_s0_row(src: [&[i16]; 3], thr: &[i32], i_rfactor: [u16; 3], sh: CmShiftsS0) -> [i64; 3] {
    // SAFETY: only reached after AVX2 was detected.
    unsafe { cm_s0_avx2(src, thr, i_rfactor, sh) }
}

/// Arithmetic right shift of i64 lanes by `cnt` (< 64).
#[target_feature(enable = "avx2")]
#[inline]
fn sra_epi64(v: __m256i, cnt: __m128i) -> __m256i {
    let m = _mm256_srl_epi64(_mm256_set1_epi64x(i64::MIN), cnt);
    _mm256_sub_epi64(_mm256_xor_si256(_mm256_srl_epi64(v, cnt), m), m)
}

/// `ADM_CM_ACCUM_ROUND` of 8 lanes, summed into 4 i64 lanes.
#[target_feature(enable = "avx2")]
#[inline]
fn accum8<const SUB: i32>(
    x: __m256i,
    thr: __m256i,
    sq_add: __m256i,
    sq_cnt: __m128i,
    cub_add: __m256i,
    cub_cnt: __m128i,
) -> __m256i {
    let x = _mm256_max_epi32(_mm256_sub_epi32(_mm256_abs_epi32(x), _mm256_slli_epi32::<SUB>(thr)), _mm256_setzero_si256());
    let even = cube4(x, sq_add, sq_cnt, cub_add, cub_cnt);
    let odd = cube4(_mm256_srli_epi64::<32>(x), sq_add, sq_cnt, cub_add, cub_cnt);
    _mm256_add_epi64(even, odd)
}

/// Lanes `skip..8` set: the part of an overlapping last block not yet
/// summed.
#[target_feature(enable = "avx2")]
#[inline]
fn tail_mask(skip: usize) -> __m256i {
    _mm256_cmpgt_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(skip as i32 - 1))
}

/// [`accum8`] with the lanes outside `keep` contributing 0 (a zero x
/// after the threshold gives a zero cube: the rounding term is below the
/// shift).
#[target_feature(enable = "avx2")]
#[inline]
fn accum8_masked<const SUB: i32>(
    x: __m256i,
    thr: __m256i,
    keep: __m256i,
    sq_add: __m256i,
    sq_cnt: __m128i,
    cub_add: __m256i,
    cub_cnt: __m128i,
) -> __m256i {
    let x = _mm256_max_epi32(_mm256_sub_epi32(_mm256_abs_epi32(x), _mm256_slli_epi32::<SUB>(thr)), _mm256_setzero_si256());
    let x = _mm256_and_si256(x, keep);
    let even = cube4(x, sq_add, sq_cnt, cub_add, cub_cnt);
    let odd = cube4(_mm256_srli_epi64::<32>(x), sq_add, sq_cnt, cub_add, cub_cnt);
    _mm256_add_epi64(even, odd)
}

/// The rounded cube of the even i32 lanes of x (>= 0), as i64 lanes.
#[target_feature(enable = "avx2")]
#[inline]
fn cube4(x: __m256i, sq_add: __m256i, sq_cnt: __m128i, cub_add: __m256i, cub_cnt: __m128i) -> __m256i {
    // x >= 0: its square is non-negative, a logical shift will do.
    let sq = _mm256_srl_epi64(_mm256_add_epi64(_mm256_mul_epi32(x, x), sq_add), sq_cnt);
    sra_epi64(_mm256_add_epi64(_mm256_mul_epi32(sq, x), cub_add), cub_cnt)
}

#[target_feature(enable = "avx2")]
#[inline]
fn hsum_epi64(v: __m256i) -> i64 {
    let mut l = [0i64; 4];
    // SAFETY: `l` is 32 bytes.
    unsafe { _mm256_storeu_si256(l.as_mut_ptr() as *mut __m256i, v) };
    l[0].wrapping_add(l[1]).wrapping_add(l[2]).wrapping_add(l[3])
}

#[target_feature(enable = "avx2")]
fn cm_s0_avx2(src: [&[i16]; 3], thr: &[i32], i_rfactor: [u16; 3], sh: CmShiftsS0) -> [i64; 3] {
    let n = thr.len();
    let s = src.map(|x| &x[..n]);
    let rf = [_mm256_set1_epi32(i_rfactor[0] as i32), _mm256_set1_epi32(i_rfactor[1] as i32), _mm256_set1_epi32(i_rfactor[2] as i32)];
    let sq_hv = (_mm256_set1_epi64x(1 << 28), _mm_cvtsi32_si128(29));
    let sq_d = (_mm256_set1_epi64x(1 << 29), _mm_cvtsi32_si128(30));
    let cub_hv = (_mm256_set1_epi64x(sh.cub_hv.1 as i64), _mm_cvtsi32_si128((sh.cub_hv.0 & 63) as i32));
    let cub_d = (_mm256_set1_epi64x(sh.cub_d.1 as i64), _mm_cvtsi32_si128((sh.cub_d.0 & 63) as i32));
    let mut acc = [_mm256_setzero_si256(); 3];
    let mut j = 0;
    while j + 8 <= n {
        // SAFETY: j + 8 <= n for every slice.
        let (t, x) = unsafe { (load8_i32(thr, j), [load8_i16(s[0], j), load8_i16(s[1], j), load8_i16(s[2], j)]) };
        let x = [
            _mm256_mullo_epi32(x[0], rf[0]),
            _mm256_mullo_epi32(x[1], rf[1]),
            _mm256_mullo_epi32(x[2], rf[2]),
        ];
        acc[0] = _mm256_add_epi64(acc[0], accum8::<10>(x[0], t, sq_hv.0, sq_hv.1, cub_hv.0, cub_hv.1));
        acc[1] = _mm256_add_epi64(acc[1], accum8::<10>(x[1], t, sq_hv.0, sq_hv.1, cub_hv.0, cub_hv.1));
        acc[2] = _mm256_add_epi64(acc[2], accum8::<12>(x[2], t, sq_d.0, sq_d.1, cub_d.0, cub_d.1));
        j += 8;
    }
    if j < n && n >= 8 {
        // The rest as the last 8, with the lanes already summed masked off.
        let last = n - 8;
        let keep = tail_mask(j - last);
        // SAFETY: last + 8 = n for every slice.
        let (t, x) = unsafe {
            (load8_i32(thr, last), [load8_i16(s[0], last), load8_i16(s[1], last), load8_i16(s[2], last)])
        };
        let x = [
            _mm256_mullo_epi32(x[0], rf[0]),
            _mm256_mullo_epi32(x[1], rf[1]),
            _mm256_mullo_epi32(x[2], rf[2]),
        ];
        acc[0] = _mm256_add_epi64(acc[0], accum8_masked::<10>(x[0], t, keep, sq_hv.0, sq_hv.1, cub_hv.0, cub_hv.1));
        acc[1] = _mm256_add_epi64(acc[1], accum8_masked::<10>(x[1], t, keep, sq_hv.0, sq_hv.1, cub_hv.0, cub_hv.1));
        acc[2] = _mm256_add_epi64(acc[2], accum8_masked::<12>(x[2], t, keep, sq_d.0, sq_d.1, cub_d.0, cub_d.1));
        j = n;
    }
    let mut inner = [hsum_epi64(acc[0]), hsum_epi64(acc[1]), hsum_epi64(acc[2])];
    if j < n {
        let tail = cm::cm_s0_row(s.map(|x| &x[j..]), &thr[j..], i_rfactor, sh);
        for b in 0..3 {
            inner[b] = inner[b].wrapping_add(tail[b]);
        }
    }
    inner
}

// ---------------------------------------------------------------- scales 1-3

/// Low 32 bits of (v + add) >> cnt for i64 lanes: equal to those of the
/// arithmetic shift when cnt <= 32.
#[target_feature(enable = "avx2")]
#[inline]
fn round_shift_lo32(v: __m256i, add: __m256i, cnt: __m128i) -> __m256i {
    _mm256_srl_epi64(_mm256_add_epi64(v, add), cnt)
}

/// Puts the low 32 bits of the even (`e`) and odd (`o`) i64 lane results
/// back into 8 i32 lanes in order.
#[target_feature(enable = "avx2")]
#[inline]
fn merge_even_odd(e: __m256i, o: __m256i) -> __m256i {
    _mm256_blend_epi32::<0b1010_1010>(e, _mm256_slli_epi64::<32>(o))
}

pub(crate) fn vertical_s123(rows: [&[i32]; 4], add: i64, shift: u32, lo: &mut [i32], hi: &mut [i32]) {
    // SAFETY: only reached after AVX2 was detected.
    unsafe { vertical_s123_avx2(rows, add, shift, lo, hi) }
}

#[target_feature(enable = "avx2")]
fn vertical_s123_avx2(rows: [&[i32]; 4], add: i64, shift: u32, lo: &mut [i32], hi: &mut [i32]) {
    let w = lo.len();
    let hi = &mut hi[..w];
    let r = [&rows[0][..w], &rows[1][..w], &rows[2][..w], &rows[3][..w]];
    let lc = [_mm256_set1_epi32(LO[0]), _mm256_set1_epi32(LO[1]), _mm256_set1_epi32(LO[2]), _mm256_set1_epi32(LO[3])];
    let hc = [_mm256_set1_epi32(HI[0]), _mm256_set1_epi32(HI[1]), _mm256_set1_epi32(HI[2]), _mm256_set1_epi32(HI[3])];
    let addv = _mm256_set1_epi64x(add);
    let cnt = _mm_cvtsi32_si128(shift as i32);
    if w < 8 {
        return dwt::vertical_s123(r, add, shift, lo, hi);
    }
    let mut j0 = 0;
    while j0 < w {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(w - 8);
        // SAFETY: j + 8 <= w for every row.
        let s = unsafe { [load8_i32(r[0], j), load8_i32(r[1], j), load8_i32(r[2], j), load8_i32(r[3], j)] };
        let so = [
            _mm256_srli_epi64::<32>(s[0]),
            _mm256_srli_epi64::<32>(s[1]),
            _mm256_srli_epi64::<32>(s[2]),
            _mm256_srli_epi64::<32>(s[3]),
        ];
        let mut le = _mm256_mul_epi32(lc[0], s[0]);
        let mut lo_ = _mm256_mul_epi32(lc[0], so[0]);
        let mut he = _mm256_mul_epi32(hc[0], s[0]);
        let mut ho = _mm256_mul_epi32(hc[0], so[0]);
        for k in 1..4 {
            le = _mm256_add_epi64(le, _mm256_mul_epi32(lc[k], s[k]));
            lo_ = _mm256_add_epi64(lo_, _mm256_mul_epi32(lc[k], so[k]));
            he = _mm256_add_epi64(he, _mm256_mul_epi32(hc[k], s[k]));
            ho = _mm256_add_epi64(ho, _mm256_mul_epi32(hc[k], so[k]));
        }
        let l = merge_even_odd(round_shift_lo32(le, addv, cnt), round_shift_lo32(lo_, addv, cnt));
        let h = merge_even_odd(round_shift_lo32(he, addv, cnt), round_shift_lo32(ho, addv, cnt));
        // SAFETY: j + 8 <= w for both outputs.
        unsafe {
            store8_i32(lo, j, l);
            store8_i32(hi, j, h);
        }
        j0 += 8;
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn horizontal_s123(lo: &[i32], hi: &[i32], add: i64, shift: u32, a: &mut [i32], v: &mut [i32], h: &mut [i32], d: &mut [i32]) {
    // SAFETY: only reached after AVX2 was detected.
    unsafe { horizontal_s123_avx2(lo, hi, add, shift, a, v, h, d) }
}

/// Outputs j..j + 8 of a scales 1-3 horizontal filter as 8 i32.
/// mul_epi32 reads the even i32 lanes, which for a load at 2j + k are tap
/// k of outputs j..j + 4; a second set of loads 8 further gives j + 4..j + 8.
/// Reads e[2j..2j + 19]. Safety: 2j + 19 <= e.len().
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn hfilt8_s123(e: &[i32], j: usize, c: &[__m256i; 4], add: __m256i, cnt: __m128i) -> __m256i {
    debug_assert!(2 * j + 19 <= e.len());
    let p = e.as_ptr();
    // SAFETY: k <= 11: the read of 8 ends by 2j + 19, the caller's bound.
    let ld = |k: usize| unsafe { _mm256_loadu_si256(p.add(2 * j + k) as *const __m256i) };
    let a0 = _mm256_add_epi64(_mm256_mul_epi32(ld(0), c[0]), _mm256_mul_epi32(ld(1), c[1]));
    let a1 = _mm256_add_epi64(_mm256_mul_epi32(ld(2), c[2]), _mm256_mul_epi32(ld(3), c[3]));
    let b0 = _mm256_add_epi64(_mm256_mul_epi32(ld(8), c[0]), _mm256_mul_epi32(ld(9), c[1]));
    let b1 = _mm256_add_epi64(_mm256_mul_epi32(ld(10), c[2]), _mm256_mul_epi32(ld(11), c[3]));
    let r0 = round_shift_lo32(_mm256_add_epi64(a0, a1), add, cnt);
    let r1 = round_shift_lo32(_mm256_add_epi64(b0, b1), add, cnt);
    // Gather the low halves: r0's into lanes 0..4, r1's into 4..8.
    let pick = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    let r0 = _mm256_permutevar8x32_epi32(r0, pick);
    let r1 = _mm256_permutevar8x32_epi32(r1, pick);
    _mm256_permute2x128_si256::<0x20>(r0, r1)
}

#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
fn horizontal_s123_avx2(lo: &[i32], hi: &[i32], add: i64, shift: u32, a: &mut [i32], v: &mut [i32], h: &mut [i32], d: &mut [i32]) {
    let n = a.len();
    let (v, h, d) = (&mut v[..n], &mut h[..n], &mut d[..n]);
    let len = lo.len().min(hi.len());
    assert!(len >= 2 * n + 2);
    let lc = [_mm256_set1_epi32(LO[0]), _mm256_set1_epi32(LO[1]), _mm256_set1_epi32(LO[2]), _mm256_set1_epi32(LO[3])];
    let hc = [_mm256_set1_epi32(HI[0]), _mm256_set1_epi32(HI[1]), _mm256_set1_epi32(HI[2]), _mm256_set1_epi32(HI[3])];
    let addv = _mm256_set1_epi64x(add);
    let cnt = _mm_cvtsi32_si128(shift as i32);
    let mut j = 0;
    let block = |j: usize| j + 8 <= n && 2 * j + 19 <= len;
    while block(j) {
        // SAFETY: block(j): outputs j..j + 8 lie in every output (length n)
        // and read e[2j..2j + 19], inside e[..len].
        unsafe {
            store8_i32(a, j, hfilt8_s123(lo, j, &lc, addv, cnt));
            store8_i32(v, j, hfilt8_s123(lo, j, &hc, addv, cnt));
            store8_i32(h, j, hfilt8_s123(hi, j, &lc, addv, cnt));
            store8_i32(d, j, hfilt8_s123(hi, j, &hc, addv, cnt));
        }
        j += 8;
    }
    // The rest as one block overlapping the last, where the row's padding
    // allows its read.
    if j < n && n >= 8 && block(n - 8) {
        let j = n - 8;
        // SAFETY: block(j), as in the loop.
        unsafe {
            store8_i32(a, j, hfilt8_s123(lo, j, &lc, addv, cnt));
            store8_i32(v, j, hfilt8_s123(lo, j, &hc, addv, cnt));
            store8_i32(h, j, hfilt8_s123(hi, j, &lc, addv, cnt));
            store8_i32(d, j, hfilt8_s123(hi, j, &hc, addv, cnt));
        }
        return;
    }
    if j < n {
        dwt::horizontal_s123(&lo[2 * j..], &hi[2 * j..], add, shift, &mut a[j..], &mut v[j..], &mut h[j..], &mut d[j..]);
    }
}

pub(crate) fn csf_s123_row(src: [&[i32]; 3], i_rfactor: [u32; 3], fsum: &mut [i32], csum: &mut [i32]) {
    // The lanes multiply signed: weights from 2^31 up (Barten mode) go the
    // scalar way.
    if i_rfactor.iter().any(|&r| r >= 1 << 31) {
        return cm::csf_s123_row(src, i_rfactor, fsum, csum);
    }
    // SAFETY: only reached after AVX2 was detected.
    unsafe { csf_s123_avx2(src, i_rfactor, fsum, csum) }
}

/// ((x * rf + 2^27) >> 28) as i32 of 8 lanes (rf < 2^31).
#[target_feature(enable = "avx2")]
#[inline]
fn weigh_s123(x: __m256i, rf: __m256i) -> __m256i {
    let add = _mm256_set1_epi64x(1 << 27);
    let e = _mm256_srli_epi64::<28>(_mm256_add_epi64(_mm256_mul_epi32(x, rf), add));
    let o = _mm256_srli_epi64::<28>(_mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64::<32>(x), rf), add));
    merge_even_odd(e, o)
}

/// ((m * k - 2^31) >> 32) as i32 of 8 lanes, m = |dst| as C's abs gives it.
#[target_feature(enable = "avx2")]
#[inline]
fn scaled_hi32(m: __m256i, k: __m256i) -> __m256i {
    let add = _mm256_set1_epi64x(i32::MIN as i64);
    let e = _mm256_add_epi64(_mm256_mul_epi32(m, k), add);
    let o = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64::<32>(m), k), add);
    // The high halves are the shifted results.
    _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64::<32>(e), o)
}

#[target_feature(enable = "avx2")]
fn csf_s123_avx2(src: [&[i32]; 3], i_rfactor: [u32; 3], fsum: &mut [i32], csum: &mut [i32]) {
    let n = fsum.len();
    let s = [&src[0][..n], &src[1][..n], &src[2][..n]];
    let c = &mut csum[..n];
    let rf = [_mm256_set1_epi32(i_rfactor[0] as i32), _mm256_set1_epi32(i_rfactor[1] as i32), _mm256_set1_epi32(i_rfactor[2] as i32)];
    let (k30, k15) = (_mm256_set1_epi32(143165577), _mm256_set1_epi32(286331153));
    if n < 8 {
        return cm::csf_s123_row(s, i_rfactor, fsum, c);
    }
    let mut j0 = 0;
    while j0 < n {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(n - 8);
        let mut fs = _mm256_setzero_si256();
        let mut cs = _mm256_setzero_si256();
        for b in 0..3 {
            // SAFETY: j + 8 <= n, the length of s[b].
            let x = unsafe { load8_i32(s[b], j) };
            let m = _mm256_abs_epi32(weigh_s123(x, rf[b]));
            fs = _mm256_add_epi32(fs, scaled_hi32(m, k30));
            cs = _mm256_add_epi32(cs, scaled_hi32(m, k15));
        }
        // SAFETY: j + 8 <= n = fsum.len() = c.len().
        unsafe {
            store8_i32(fsum, j, fs);
            store8_i32(c, j, cs);
        }
        j0 += 8;
    }
}

pub(crate) fn cm_s123_row(src: [&[i32]; 3], thr: &[i32], i_rfactor: [u32; 3], sh: CmShiftsS123) -> [i64; 3] {
    if i_rfactor.iter().any(|&r| r >= 1 << 31) {
        return cm::cm_s123_row(src, thr, i_rfactor, sh);
    }
    // SAFETY: only reached after AVX2 was detected.
    unsafe { cm_s123_avx2(src, thr, i_rfactor, sh) }
}

#[target_feature(enable = "avx2")]
fn cm_s123_avx2(src: [&[i32]; 3], thr: &[i32], i_rfactor: [u32; 3], sh: CmShiftsS123) -> [i64; 3] {
    let n = thr.len();
    let s = [&src[0][..n], &src[1][..n], &src[2][..n]];
    let rf = [_mm256_set1_epi32(i_rfactor[0] as i32), _mm256_set1_epi32(i_rfactor[1] as i32), _mm256_set1_epi32(i_rfactor[2] as i32)];
    let sq = (_mm256_set1_epi64x(1 << 29), _mm_cvtsi32_si128(30));
    let cub = (_mm256_set1_epi64x(sh.cub.1 as i64), _mm_cvtsi32_si128((sh.cub.0 & 63) as i32));
    let mut acc = [_mm256_setzero_si256(); 3];
    let mut j = 0;
    while j + 8 <= n {
        // SAFETY: j + 8 <= n for every slice.
        let (t, x) = unsafe { (load8_i32(thr, j), [load8_i32(s[0], j), load8_i32(s[1], j), load8_i32(s[2], j)]) };
        for b in 0..3 {
            let x = weigh_s123(x[b], rf[b]);
            acc[b] = _mm256_add_epi64(acc[b], accum8::<0>(x, t, sq.0, sq.1, cub.0, cub.1));
        }
        j += 8;
    }
    if j < n && n >= 8 {
        // The rest as the last 8, with the lanes already summed masked off.
        let last = n - 8;
        let keep = tail_mask(j - last);
        // SAFETY: last + 8 = n for every slice.
        let (t, x) = unsafe {
            (load8_i32(thr, last), [load8_i32(s[0], last), load8_i32(s[1], last), load8_i32(s[2], last)])
        };
        for b in 0..3 {
            let x = weigh_s123(x[b], rf[b]);
            acc[b] = _mm256_add_epi64(acc[b], accum8_masked::<0>(x, t, keep, sq.0, sq.1, cub.0, cub.1));
        }
        j = n;
    }
    let mut inner = [hsum_epi64(acc[0]), hsum_epi64(acc[1]), hsum_epi64(acc[2])];
    if j < n {
        let tail = cm::cm_s123_row(s.map(|x| &x[j..]), &thr[j..], i_rfactor, sh);
        for b in 0..3 {
            inner[b] = inner[b].wrapping_add(tail[b]);
        }
    }
    inner
}

pub(crate) fn decouple_s123_row(o: [&[i32]; 3], t: [&[i32]; 3], r: [&mut [i32]; 3], a: [&mut [i32]; 3], egl: f64) {
    if egl.fract() != 0.0 || !(1.0..=100.0).contains(&egl) {
        return decouple::decouple_s123_row(o, t, r, a, egl);
    }
    // SAFETY: only reached after AVX2 was detected.
    unsafe { decouple_s123_avx2(o, t, r, a, egl as i32) }
}

/// C's `(float)` of 4 int64 lanes, correctly rounded (AVX2 has no such
/// conversion): |x| below 2^53 converts to double exactly; above, it is
/// first cut to 2^-10 of itself with the dropped bits kept as a sticky
/// bit (round to odd), which a single rounding to float then honours.
#[target_feature(enable = "avx2")]
#[inline]
fn i64_to_f32(x: __m256i) -> __m128 {
    let zero = _mm256_setzero_si256();
    let neg = _mm256_cmpgt_epi64(zero, x);
    let a = _mm256_blendv_epi8(x, _mm256_sub_epi64(zero, x), neg);
    let big = _mm256_xor_si256(_mm256_cmpeq_epi64(_mm256_srli_epi64::<53>(a), zero), _mm256_set1_epi64x(-1));
    let sticky = _mm256_andnot_si256(
        _mm256_cmpeq_epi64(_mm256_and_si256(a, _mm256_set1_epi64x(1023)), zero),
        _mm256_set1_epi64x(1),
    );
    let m = _mm256_blendv_epi8(a, _mm256_or_si256(_mm256_srli_epi64::<10>(a), sticky), big);
    let magic = _mm256_set1_epi64x(0x4330_0000_0000_0000);
    let two52 = _mm256_set1_pd(4503599627370496.0);
    let lo_d = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(m, _mm256_set1_epi64x(0xFFFF_FFFF)), magic)), two52);
    let hi_d = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64::<32>(m), magic)), two52);
    let d = _mm256_add_pd(_mm256_mul_pd(hi_d, _mm256_set1_pd(4294967296.0)), lo_d);
    let d = _mm256_mul_pd(d, _mm256_blendv_pd(_mm256_set1_pd(1.0), _mm256_set1_pd(1024.0), _mm256_castsi256_pd(big)));
    let d = _mm256_xor_pd(d, _mm256_and_pd(_mm256_castsi256_pd(neg), _mm256_set1_pd(-0.0)));
    _mm256_cvtpd_ps(d)
}

/// `angle_flag` of the 4 pixels in the even (or, shifted down, odd) i32
/// lanes of the h and v bands: a 4-bit mask.
#[target_feature(enable = "avx2")]
#[inline]
fn angle_bits_s123(oh: __m256i, ov: __m256i, th: __m256i, tv: __m256i) -> i32 {
    let dot = |a: __m256i, b: __m256i, c: __m256i, d: __m256i| {
        // Wrapping like libvmaf's int64 sum (only all-MIN inputs wrap).
        _mm256_add_epi64(_mm256_mul_epi32(a, b), _mm256_mul_epi32(c, d))
    };
    let fd = i64_to_f32(dot(oh, th, ov, tv));
    let fo = i64_to_f32(dot(oh, oh, ov, ov));
    let ft = i64_to_f32(dot(th, th, tv, tv));
    angle_mask_pd(fd, fo, ft)
}

/// Variable arithmetic right shift of i64 lanes (counts < 64).
#[target_feature(enable = "avx2")]
#[inline]
fn srav_epi64(v: __m256i, cnt: __m256i) -> __m256i {
    let m = _mm256_srlv_epi64(_mm256_set1_epi64x(i64::MIN), cnt);
    _mm256_sub_epi64(_mm256_xor_si256(_mm256_srlv_epi64(v, cnt), m), m)
}

/// Sign-extends the low i32 of each i64 lane.
#[target_feature(enable = "avx2")]
#[inline]
fn sext_lo32(x: __m256i) -> __m256i {
    let hi = _mm256_srai_epi32::<31>(x);
    _mm256_blend_epi32::<0b1010_1010>(x, _mm256_shuffle_epi32::<0b10_10_00_00>(hi))
}

/// k of `adm_decouple_s123` in the even i64 lanes: from the reciprocal
/// `div_q`, t, the sign of o and the shift (low i32 of each lane).
#[target_feature(enable = "avx2")]
#[inline]
fn k_s123_lanes(div_q: __m256i, t: __m256i, negative: __m256i, shift: __m256i) -> __m256i {
    let prod = _mm256_mul_epi32(div_q, t);
    // * sign: negate where o < 0.
    let m = sext_lo32(negative);
    let prod = _mm256_sub_epi64(_mm256_xor_si256(prod, m), m);
    let shift = _mm256_and_si256(shift, _mm256_set1_epi64x(0xFFFF_FFFF));
    // C's (1 << (14 + shift)) is an int: 2^31 wraps to -2^31.
    let round = sext_lo32(_mm256_sllv_epi32(_mm256_set1_epi64x(1), _mm256_add_epi64(shift, _mm256_set1_epi64x(14))));
    let tmp = srav_epi64(_mm256_add_epi64(prod, round), _mm256_add_epi64(shift, _mm256_set1_epi64x(15)));
    let zero = _mm256_setzero_si256();
    let c32768 = _mm256_set1_epi64x(32768);
    let tmp = _mm256_andnot_si256(_mm256_cmpgt_epi64(zero, tmp), tmp);
    _mm256_blendv_epi8(tmp, c32768, _mm256_cmpgt_epi64(tmp, c32768))
}

/// rst * egl of the even lanes, saturated to i32 (then compared with t as
/// libvmaf compares the exact double product).
#[target_feature(enable = "avx2")]
#[inline]
fn mul_sat_i32(rst: __m256i, egl: __m256i) -> __m256i {
    let p = _mm256_mul_epi32(rst, egl);
    let hi = _mm256_set1_epi64x(i32::MAX as i64);
    let lo = _mm256_set1_epi64x(i32::MIN as i64);
    let p = _mm256_blendv_epi8(p, hi, _mm256_cmpgt_epi64(p, hi));
    _mm256_blendv_epi8(p, lo, _mm256_cmpgt_epi64(lo, p))
}

/// Restored and additive values of one band at scales 1-3, 8 lanes.
#[target_feature(enable = "avx2")]
#[inline]
fn decouple_band_s123(o: __m256i, t: __m256i, angle: __m256i, egl: __m256i, div: &[i32; 65537]) -> (__m256i, __m256i) {
    let zero = _mm256_setzero_si256();
    let flip = _mm256_set1_epi32(i32::MIN);
    // |o| as unsigned (|i32::MIN| = 2^31), compared unsigned.
    let abs_u = _mm256_xor_si256(_mm256_abs_epi32(o), flip);
    // libvmaf keeps the 15 leading bits of |o| >= 2^15, rounded: the shift
    // is the number of powers 2^15..2^31 that |o| reaches.
    let mut shift = zero;
    for m in 15..32 {
        let below = _mm256_set1_epi32(((1u32 << m) - 1) as i32 ^ i32::MIN);
        shift = _mm256_sub_epi32(shift, _mm256_cmpgt_epi32(abs_u, below));
    }
    let abs = _mm256_abs_epi32(o);
    let half = _mm256_srli_epi32::<1>(_mm256_sllv_epi32(_mm256_set1_epi32(1), shift));
    let msb = _mm256_srlv_epi32(_mm256_add_epi32(abs, half), shift);
    // SAFETY: msb, |o| rounded to its 15 leading bits, is at most 32768
    // (and >= 0), so msb + 32768 <= 65536 indexes div's 65537 entries.
    let q = unsafe { _mm256_i32gather_epi32::<4>(div.as_ptr(), _mm256_add_epi32(msb, _mm256_set1_epi32(32768))) };
    let negative = _mm256_cmpgt_epi32(zero, o);
    let ke = k_s123_lanes(q, t, negative, shift);
    let ko = k_s123_lanes(
        _mm256_srli_epi64::<32>(q),
        _mm256_srli_epi64::<32>(t),
        _mm256_srli_epi64::<32>(negative),
        _mm256_srli_epi64::<32>(shift),
    );
    let k = merge_even_odd(ke, ko);
    let o_zero = _mm256_cmpeq_epi32(o, zero);
    let k = _mm256_blendv_epi8(k, _mm256_set1_epi32(32768), o_zero);
    // rst = (k * o + 16384) >> 15 in 64 bits (fits i32 again).
    let r16 = _mm256_set1_epi64x(16384);
    let re = _mm256_srli_epi64::<15>(_mm256_add_epi64(_mm256_mul_epi32(k, o), r16));
    let ro = _mm256_srli_epi64::<15>(_mm256_add_epi64(
        _mm256_mul_epi32(_mm256_srli_epi64::<32>(k), _mm256_srli_epi64::<32>(o)),
        r16,
    ));
    let rst = merge_even_odd(re, ro);
    let gained = merge_even_odd(mul_sat_i32(rst, egl), mul_sat_i32(_mm256_srli_epi64::<32>(rst), egl));
    let positive = _mm256_cmpgt_epi32(o, zero);
    let limited = _mm256_blendv_epi8(_mm256_max_epi32(gained, t), _mm256_min_epi32(gained, t), positive);
    let apply = _mm256_andnot_si256(_mm256_or_si256(o_zero, _mm256_cmpeq_epi32(k, zero)), angle);
    let rst = _mm256_blendv_epi8(rst, limited, apply);
    (rst, _mm256_sub_epi32(t, rst))
}

#[target_feature(enable = "avx2")]
fn decouple_s123_avx2(o: [&[i32]; 3], t: [&[i32]; 3], r: [&mut [i32]; 3], a: [&mut [i32]; 3], egl: i32) {
    let div = decouple::div_lookup();
    let n = o[0].len();
    let o = [&o[0][..n], &o[1][..n], &o[2][..n]];
    let t = [&t[0][..n], &t[1][..n], &t[2][..n]];
    let [rh, rv, rd] = r;
    let [ah, av, ad] = a;
    let (rh, rv, rd, ah, av, ad) = (&mut rh[..n], &mut rv[..n], &mut rd[..n], &mut ah[..n], &mut av[..n], &mut ad[..n]);
    if n < 8 {
        return decouple::decouple_s123_row(o, t, [rh, rv, rd], [ah, av, ad], egl as f64);
    }
    let eglv = _mm256_set1_epi32(egl);
    let bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    let mut j0 = 0;
    while j0 < n {
        // The last block overlaps the one before: outputs are per element.
        let j = j0.min(n - 8);
        // SAFETY: j + 8 <= n for every slice.
        let (ov, tv) = unsafe {
            (
                [load8_i32(o[0], j), load8_i32(o[1], j), load8_i32(o[2], j)],
                [load8_i32(t[0], j), load8_i32(t[1], j), load8_i32(t[2], j)],
            )
        };
        let even = angle_bits_s123(ov[0], ov[1], tv[0], tv[1]);
        let odd = angle_bits_s123(
            _mm256_srli_epi64::<32>(ov[0]),
            _mm256_srli_epi64::<32>(ov[1]),
            _mm256_srli_epi64::<32>(tv[0]),
            _mm256_srli_epi64::<32>(tv[1]),
        );
        // Pixel 2i is bit i of `even`, pixel 2i + 1 bit i of `odd`.
        let mut bits = 0;
        for i in 0..4 {
            bits |= ((even >> i) & 1) << (2 * i) | ((odd >> i) & 1) << (2 * i + 1);
        }
        let angle = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(bits), bit), bit);
        let outs_r: [&mut [i32]; 3] = [&mut *rh, &mut *rv, &mut *rd];
        let outs_a: [&mut [i32]; 3] = [&mut *ah, &mut *av, &mut *ad];
        for (b, (rr, aa)) in outs_r.into_iter().zip(outs_a).enumerate() {
            let (x, y) = decouple_band_s123(ov[b], tv[b], angle, eglv, div);
            // SAFETY: j + 8 <= n, the length of every output.
            unsafe {
                store8_i32(rr, j, x);
                store8_i32(aa, j, y);
            }
        }
        j0 += 8;
    }
}

pub(crate) fn cube_sum_s0(src: &[i16]) -> u64 {
    // SAFETY: only reached after AVX2 was detected.
    unsafe { cube_sum_s0_avx2(src) }
}

#[target_feature(enable = "avx2")]
fn cube_sum_s0_avx2(src: &[i16]) -> u64 {
    let n = src.len();
    let mut acc = _mm256_setzero_si256();
    let mut j = 0;
    while j + 8 <= n {
        // SAFETY: j + 8 <= n.
        let x = unsafe { load8_i16(src, j) };
        // |x| <= 2^15: its square fits 32 bits, the cube takes the unsigned
        // 32 x 32 -> 64 multiply.
        let m = _mm256_abs_epi32(x);
        let sq = _mm256_mullo_epi32(m, m);
        let e = _mm256_mul_epu32(sq, m);
        let o = _mm256_mul_epu32(_mm256_srli_epi64::<32>(sq), _mm256_srli_epi64::<32>(m));
        acc = _mm256_add_epi64(acc, _mm256_add_epi64(e, o));
        j += 8;
    }
    if j < n && n >= 8 {
        // The rest as the last 8, with the lanes already summed zeroed.
        let last = n - 8;
        // SAFETY: last + 8 = n.
        let x = unsafe { load8_i16(src, last) };
        let m = _mm256_and_si256(_mm256_abs_epi32(x), tail_mask(j - last));
        let sq = _mm256_mullo_epi32(m, m);
        let e = _mm256_mul_epu32(sq, m);
        let o = _mm256_mul_epu32(_mm256_srli_epi64::<32>(sq), _mm256_srli_epi64::<32>(m));
        acc = _mm256_add_epi64(acc, _mm256_add_epi64(e, o));
        j = n;
    }
    let mut l = [0u64; 4];
    // SAFETY: `l` is 32 bytes.
    unsafe { _mm256_storeu_si256(l.as_mut_ptr() as *mut __m256i, acc) };
    l[0] + l[1] + l[2] + l[3] + den::cube_sum_s0_row(&src[j..])
}
