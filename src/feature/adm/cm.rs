//! CSF weighting and contrast masking of libvmaf 3.2.0's integer ADM
//! (`feature/integer_adm.c`: `adm_csf`, `i4_adm_csf`, `adm_cm`,
//! `i4_adm_cm` and their `ADM_CM_THRESH_*` / `ADM_CM_ACCUM_ROUND` macros),
//! scalar.
//!
//! libvmaf's CSF pass writes, per band, the weighted coefficients and a
//! filtered copy (|c| / 30); the masking threshold of a pixel is then the
//! sum over the three bands of the 3x3 neighbourhood of the filtered copy,
//! whose centre is replaced by |c| / 15. Integer sums are exact, so we keep
//! per pixel only what the threshold needs: `fsum`, the sum over bands of
//! the filtered values, and `csum`, the sum of the centre terms; then
//! thr = box3x3(fsum) - fsum + csum (wrapping i32, as libvmaf's sums).
//! The 3x3 box mirrors as libvmaf's macros do: row/column -1 reads 1,
//! row/column n reads n - 1.

use super::Region;

/// `adm_csf`'s rounding for h, v, d: Q21 weights for h/v shifted by 15,
/// Q23 for d shifted by 17 (with 65535, not 65536, as libvmaf adds).
const S0_CSF_ADD: [i32; 3] = [16384, 16384, 65535];
const S0_CSF_SHIFT: [u32; 3] = [15, 15, 17];
/// (1/30) * 2^17 and (1/15) * 2^17.
const S0_ONE_BY_30: i32 = 4369;
const S0_ONE_BY_15: i32 = 8738;
/// (1/30) * 2^32 and (1/15) * 2^32.
const S123_ONE_BY_30: i64 = 143165577;
const S123_ONE_BY_15: i64 = 286331153;
/// libvmaf stores its "+ 2^31" rounding term in an int32_t: it is -2^31.
const S123_FLT_ADD: i64 = i32::MIN as i64;

/// The filtered value and the threshold centre of one scale-0 CSF output.
#[inline(always)]
fn s0_flt_centre(dst: i16) -> (i32, i32) {
    let m = (dst as i32).abs();
    (((S0_ONE_BY_30 * m + 2048) >> 12) as i16 as i32, ((S0_ONE_BY_15 * m + 2048) >> 12) as i16 as i32)
}

/// One row of `adm_csf`: weights the h, v, d values of `src` and stores
/// their threshold sums in `fsum`, `csum` (all of one length).
pub type CsfS0Row = fn(src: [&[i16]; 3], i_rfactor: [u16; 3], fsum: &mut [i32], csum: &mut [i32]);

pub fn csf_s0_row(src: [&[i16]; 3], i_rfactor: [u16; 3], fsum: &mut [i32], csum: &mut [i32]) {
    let n = fsum.len();
    let [h, v, d] = src.map(|x| &x[..n]);
    let c = &mut csum[..n];
    for j in 0..n {
        let mut fs = 0i32;
        let mut cs = 0i32;
        for (t, x) in [h[j], v[j], d[j]].into_iter().enumerate() {
            let dst = ((i_rfactor[t] as i32 * x as i32).wrapping_add(S0_CSF_ADD[t]) >> S0_CSF_SHIFT[t]) as i16;
            let (fl, ce) = s0_flt_centre(dst);
            fs += fl;
            cs += ce;
        }
        fsum[j] = fs;
        c[j] = cs;
    }
}

/// `adm_csf` over `reg`.
pub fn csf_s0(
    row: CsfS0Row,
    src: [&[i16]; 3],
    i_rfactor: [u16; 3],
    fsum: &mut [i32],
    csum: &mut [i32],
    stride: usize,
    reg: Region,
) {
    for i in reg.top..reg.bottom {
        let s = i * stride + reg.left..i * stride + reg.right;
        row(src.map(|b| &b[s.clone()]), i_rfactor, &mut fsum[s.clone()], &mut csum[s]);
    }
}

/// One row of `i4_adm_csf` (scales 1-3, Q32 weights).
pub type CsfS123Row = fn(src: [&[i32]; 3], i_rfactor: [u32; 3], fsum: &mut [i32], csum: &mut [i32]);

pub fn csf_s123_row(src: [&[i32]; 3], i_rfactor: [u32; 3], fsum: &mut [i32], csum: &mut [i32]) {
    let n = fsum.len();
    let [h, v, d] = src.map(|x| &x[..n]);
    let c = &mut csum[..n];
    for j in 0..n {
        let mut fs = 0i32;
        let mut cs = 0i32;
        for (t, x) in [h[j], v[j], d[j]].into_iter().enumerate() {
            let dst = ((i_rfactor[t] as i64 * x as i64 + (1 << 27)) >> 28) as i32;
            let m = dst.wrapping_abs() as i64;
            fs = fs.wrapping_add(((S123_ONE_BY_30 * m + S123_FLT_ADD) >> 32) as i32);
            cs = cs.wrapping_add(((S123_ONE_BY_15 * m + S123_FLT_ADD) >> 32) as i32);
        }
        fsum[j] = fs;
        c[j] = cs;
    }
}

/// `i4_adm_csf` over `reg`.
pub fn csf_s123(
    row: CsfS123Row,
    src: [&[i32]; 3],
    i_rfactor: [u32; 3],
    fsum: &mut [i32],
    csum: &mut [i32],
    stride: usize,
    reg: Region,
) {
    for i in reg.top..reg.bottom {
        let s = i * stride + reg.left..i * stride + reg.right;
        row(src.map(|b| &b[s.clone()]), i_rfactor, &mut fsum[s.clone()], &mut csum[s]);
    }
}

/// Masking thresholds of one row from the `fsum` rows above (`up`), at
/// (`mid`) and below (`down`) it, and the row's `csum`, all w long, for
/// columns left..left + thr.len(). `vsum`: w entries of scratch.
pub type ThresholdRow = fn(up: &[i32], mid: &[i32], down: &[i32], csum: &[i32], left: usize, vsum: &mut [i32], thr: &mut [i32]);

pub fn thresholds_row(up: &[i32], mid: &[i32], down: &[i32], csum: &[i32], left: usize, vsum: &mut [i32], thr: &mut [i32]) {
    let w = mid.len();
    let right = left + thr.len();
    // Columns the 3x3 boxes reach: left - 1 (or 1, mirrored) to right (or w - 1).
    let x0 = if left == 0 { 0 } else { left - 1 };
    let x1 = right.min(w - 1);
    for x in x0..=x1 {
        vsum[x] = up[x].wrapping_add(mid[x]).wrapping_add(down[x]);
    }
    for (k, j) in (left..right).enumerate() {
        let jl = if j == 0 { 1 } else { j - 1 };
        let jr = if j == w - 1 { w - 1 } else { j + 1 };
        thr[k] = vsum[jl].wrapping_add(vsum[j]).wrapping_add(vsum[jr]).wrapping_sub(mid[j]).wrapping_add(csum[j]);
    }
}

/// The `fsum` rows above, at and below row `i` (mirrored), and its `csum`.
fn neighbour_rows<'a>(fsum: &'a [i32], csum: &'a [i32], stride: usize, w: usize, h: usize, i: usize) -> [&'a [i32]; 4] {
    let up = if i == 0 { 1 } else { i - 1 };
    let down = if i == h - 1 { h - 1 } else { i + 1 };
    let row = |b: &'a [i32], y: usize| &b[y * stride..y * stride + w];
    [row(fsum, up), row(fsum, i), row(fsum, down), row(csum, i)]
}

/// Shifts of `adm_cm` that depend on the band size.
#[derive(Clone, Copy, Debug)]
pub struct CmShiftsS0 {
    /// Cube shift and rounding of h/v and of d.
    pub cub_hv: (u32, u32),
    pub cub_d: (u32, u32),
    /// Per-row accumulator shift and rounding.
    pub inner: (u32, u32),
}

/// Shifts of `i4_adm_cm`.
#[derive(Clone, Copy, Debug)]
pub struct CmShiftsS123 {
    pub cub: (u32, u32),
    pub inner: (u32, u32),
    /// 2^(45|39|36 - cub - inner) as a float.
    pub final_shift: f32,
}

/// `ADM_CM_ACCUM_ROUND` for one band of one pixel at scale 0.
#[inline(always)]
pub fn accum_s0(x: i32, thr: i32, sub: u32, sq: (i64, u32), cub: (u32, u32)) -> i64 {
    let x = x.wrapping_abs().wrapping_sub(thr.wrapping_shl(sub)).max(0);
    let x_sq = ((x as i64 * x as i64 + sq.0) >> sq.1) as i32;
    (x_sq as i64 * x as i64 + cub.1 as i64) >> (cub.0 & 63)
}

/// `I4_ADM_CM_ACCUM_ROUND` for one band of one pixel at scales 1-3.
#[inline(always)]
pub fn accum_s123(x: i32, thr: i32, cub: (u32, u32)) -> i64 {
    let x = x.wrapping_abs().wrapping_sub(thr).max(0);
    let x_sq = ((x as i64 * x as i64 + (1 << 29)) >> 30) as i32;
    (x_sq as i64 * x as i64 + cub.1 as i64) >> (cub.0 & 63)
}

/// The noise floor term powf(area * weight, 1/3) of libvmaf's num/den.
#[inline]
pub fn noise_floor(reg: Region, noise_weight: f64) -> f32 {
    let area = ((reg.bottom - reg.top) * (reg.right - reg.left)) as i32;
    ((area as f64 * noise_weight) as f32).powf(1.0f32 / 3.0f32)
}

/// Per-row sums of `adm_cm`: the masked cubes of one row of `src` (h, v,
/// d) against its thresholds `thr` (same length).
pub type CmS0Row = fn(src: [&[i16]; 3], thr: &[i32], i_rfactor: [u16; 3], sh: CmShiftsS0) -> [i64; 3];

pub fn cm_s0_row(src: [&[i16]; 3], thr: &[i32], i_rfactor: [u16; 3], sh: CmShiftsS0) -> [i64; 3] {
    let n = thr.len();
    let [xh, xv, xd] = src.map(|x| &x[..n]);
    let rf = i_rfactor.map(|r| r as i32);
    let mut inner = [0i64; 3];
    for j in 0..n {
        let t = thr[j];
        inner[0] = inner[0].wrapping_add(accum_s0(xh[j] as i32 * rf[0], t, 10, (1 << 28, 29), sh.cub_hv));
        inner[1] = inner[1].wrapping_add(accum_s0(xv[j] as i32 * rf[1], t, 10, (1 << 28, 29), sh.cub_hv));
        inner[2] = inner[2].wrapping_add(accum_s0(xd[j] as i32 * rf[2], t, 12, (1 << 29, 30), sh.cub_d));
    }
    inner
}

/// `adm_cm`, integer part: the masked, CSF-weighted cube sums of `src` (h,
/// v, d) over the score region, each row's sum shifted down before it is
/// added (wrapping). `thr`, `vsum`: w-entry scratch. [`cm_s0_value`]
/// turns them into the float num term.
#[allow(clippy::too_many_arguments)]
pub fn cm_s0(
    k: (ThresholdRow, CmS0Row),
    src: [&[i16]; 3],
    fsum: &[i32],
    csum: &[i32],
    i_rfactor: [u16; 3],
    stride: usize,
    w: usize,
    h: usize,
    reg: Region,
    sh: CmShiftsS0,
    vsum: &mut [i32],
    thr: &mut [i32],
) -> [i64; 3] {
    let n = reg.right - reg.left;
    let thr = &mut thr[..n];
    let mut accum = [0i64; 3];
    for i in reg.top..reg.bottom {
        let [up, mid, down, c] = neighbour_rows(fsum, csum, stride, w, h, i);
        (k.0)(up, mid, down, c, reg.left, vsum, thr);
        let s = i * stride + reg.left..i * stride + reg.right;
        let inner = (k.1)(src.map(|b| &b[s.clone()]), thr, i_rfactor, sh);
        for b in 0..3 {
            accum[b] = accum[b].wrapping_add(inner[b].wrapping_add(sh.inner.1 as i64) >> (sh.inner.0 & 63));
        }
    }
    accum
}

/// `adm_cm`, float part: the num term of the accumulators of [`cm_s0`].
pub fn cm_s0_value(accum: [i64; 3], sh: CmShiftsS0, reg: Region, noise_weight: f64) -> f32 {
    let exp_hv = 52u32.wrapping_sub(sh.cub_hv.0).wrapping_sub(sh.inner.0) as f64;
    let exp_d = 57u32.wrapping_sub(sh.cub_d.0).wrapping_sub(sh.inner.0) as f64;
    // (libvmaf's AVX2/AVX-512 twins round the h sum to float before the
    // division: the same value, as the divisor is a power of two.)
    let f_h = (accum[0] as f64 / 2f64.powf(exp_hv)) as f32;
    let f_v = (accum[1] as f64 / 2f64.powf(exp_hv)) as f32;
    let f_d = (accum[2] as f64 / 2f64.powf(exp_d)) as f32;
    let floor = noise_floor(reg, noise_weight);
    let third = 1.0f32 / 3.0f32;
    let num_h = f_h.powf(third) + floor;
    let num_v = f_v.powf(third) + floor;
    let num_d = f_d.powf(third) + floor;
    num_h + num_v + num_d
}

/// Per-row sums of `i4_adm_cm`.
pub type CmS123Row = fn(src: [&[i32]; 3], thr: &[i32], i_rfactor: [u32; 3], sh: CmShiftsS123) -> [i64; 3];

pub fn cm_s123_row(src: [&[i32]; 3], thr: &[i32], i_rfactor: [u32; 3], sh: CmShiftsS123) -> [i64; 3] {
    let n = thr.len();
    let [xh, xv, xd] = src.map(|x| &x[..n]);
    let rf = i_rfactor.map(|r| r as i64);
    let scaled = |x: i32, r: i64| ((x as i64 * r + (1 << 27)) >> 28) as i32;
    let mut inner = [0i64; 3];
    for j in 0..n {
        let t = thr[j];
        inner[0] = inner[0].wrapping_add(accum_s123(scaled(xh[j], rf[0]), t, sh.cub));
        inner[1] = inner[1].wrapping_add(accum_s123(scaled(xv[j], rf[1]), t, sh.cub));
        inner[2] = inner[2].wrapping_add(accum_s123(scaled(xd[j], rf[2]), t, sh.cub));
    }
    inner
}

/// `i4_adm_cm` (scales 1-3), integer part, as [`cm_s0`]; [`cm_s123_value`]
/// is the float part.
#[allow(clippy::too_many_arguments)]
pub fn cm_s123(
    k: (ThresholdRow, CmS123Row),
    src: [&[i32]; 3],
    fsum: &[i32],
    csum: &[i32],
    i_rfactor: [u32; 3],
    stride: usize,
    w: usize,
    h: usize,
    reg: Region,
    sh: CmShiftsS123,
    vsum: &mut [i32],
    thr: &mut [i32],
) -> [i64; 3] {
    let n = reg.right - reg.left;
    let thr = &mut thr[..n];
    let mut accum = [0i64; 3];
    for i in reg.top..reg.bottom {
        let [up, mid, down, c] = neighbour_rows(fsum, csum, stride, w, h, i);
        (k.0)(up, mid, down, c, reg.left, vsum, thr);
        let s = i * stride + reg.left..i * stride + reg.right;
        let inner = (k.1)(src.map(|b| &b[s.clone()]), thr, i_rfactor, sh);
        for b in 0..3 {
            accum[b] = accum[b].wrapping_add(inner[b].wrapping_add(sh.inner.1 as i64) >> (sh.inner.0 & 63));
        }
    }
    accum
}

/// `i4_adm_cm`, float part: the num term of the accumulators of [`cm_s123`].
pub fn cm_s123_value(accum: [i64; 3], sh: CmShiftsS123, reg: Region, noise_weight: f64) -> f32 {
    let fs = sh.final_shift as f64;
    let f = accum.map(|a| (a as f64 / fs) as f32);
    let floor = noise_floor(reg, noise_weight);
    let third = 1.0f32 / 3.0f32;
    let num_h = f[0].powf(third) + floor;
    let num_v = f[1].powf(third) + floor;
    let num_d = f[2].powf(third) + floor;
    num_h + num_v + num_d
}
