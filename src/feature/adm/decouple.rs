//! Decoupling of the distorted bands into restored (detail kept from the
//! reference) and additive-impairment parts, libvmaf 3.2.0
//! `feature/integer_adm.c`: `adm_decouple` (scale 0, 16-bit bands) and
//! `adm_decouple_s123` (32-bit bands), scalar.
//!
//! Per pixel: k = clamp(t / o, 0, 1) in Q15 through a reciprocal table,
//! r = k * o; where the (h, v) orientations of reference and distorted lie
//! within 1 degree, r is pushed towards t by the enhancement gain limit;
//! a = t - r.

use std::sync::OnceLock;

use super::Region;

/// cos(1 degree)^2 as the float libvmaf computes it (GCC folds
/// `cos(1.0 * M_PI / 180.0) * cos(1.0 * M_PI / 180.0)` into this; its bits
/// are 0x3f7fec0a).
#[allow(clippy::excessive_precision)]
pub const COS_1DEG_SQ: f32 = 0.99969542026519775390625;

/// `div_lookup`: 2^30 / i for i in -32768..=32768 (index i + 32768); 0 at 0.
pub fn div_lookup() -> &'static [i32; 65537] {
    static TABLE: OnceLock<Box<[i32; 65537]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Box::new([0i32; 65537]);
        for i in 1..=32768i32 {
            let recip = 1_073_741_824 / i;
            t[(32768 + i) as usize] = recip;
            t[(32768 - i) as usize] = -recip;
        }
        t
    })
}

/// Whether (oh, ov) and (th, tv) point within 1 degree of each other,
/// evaluated in libvmaf's float/double mix.
#[inline(always)]
pub fn angle_flag(ot_dp: i64, o_mag_sq: i64, t_mag_sq: i64) -> bool {
    let dp = ot_dp as f32 as f64 / 4096.0;
    dp >= 0.0
        && dp * dp
            >= COS_1DEG_SQ as f64 * (o_mag_sq as f32 as f64 / 4096.0) * (t_mag_sq as f32 as f64 / 4096.0)
}

/// C's `MIN(x, y)` / `MAX(x, y)` on doubles, then the implicit conversion
/// to an integer (truncation).
#[inline(always)]
fn gain_limited(rst: f64, t: f64, positive: bool) -> i32 {
    let m = if positive {
        if rst < t {
            rst
        } else {
            t
        }
    } else if rst > t {
        rst
    } else {
        t
    };
    m as i32
}

/// One band of one pixel at scale 0: returns (restored, additive).
#[inline(always)]
fn decouple_px_s0(o: i16, t: i16, angle: bool, egl: f64, div: &[i32; 65537]) -> (i16, i16) {
    let k = if o == 0 {
        32768
    } else {
        let tmp = ((div[(o as i32 + 32768) as usize] as i64 * t as i64 + 16384) >> 15) as i32;
        tmp.clamp(0, 32768)
    };
    let mut rst = ((k * o as i32 + 16384) >> 15) as i16;
    // libvmaf tests the sign of (k / 32768) * (o / 64) in float: positive
    // iff k > 0 and o > 0.
    if angle && k > 0 && o != 0 {
        rst = gain_limited(rst as f64 * egl, t as f64, o > 0) as i16;
    }
    (rst, (t as i32 - rst as i32) as i16)
}

/// The bands one decouple reads and writes, `stride` apart.
pub struct Hvd<'a, T> {
    pub h: &'a [T],
    pub v: &'a [T],
    pub d: &'a [T],
}
pub struct HvdMut<'a, T> {
    pub h: &'a mut [T],
    pub v: &'a mut [T],
    pub d: &'a mut [T],
}

/// One row of `adm_decouple`: reference bands `o`, distorted `t` (h, v,
/// d, equal lengths) into restored `r` and additive `a`.
pub type DecoupleS0Row = fn(o: [&[i16]; 3], t: [&[i16]; 3], r: [&mut [i16]; 3], a: [&mut [i16]; 3], egl: f64);

pub fn decouple_s0_row(o: [&[i16]; 3], t: [&[i16]; 3], r: [&mut [i16]; 3], a: [&mut [i16]; 3], egl: f64) {
    let div = div_lookup();
    let n = o[0].len();
    let [oh, ov, od] = o.map(|x| &x[..n]);
    let [th, tv, td] = t.map(|x| &x[..n]);
    let [rh, rv, rd] = r.map(|x| &mut x[..n]);
    let [ah, av, ad] = a.map(|x| &mut x[..n]);
    for j in 0..n {
        let (ohj, ovj, odj) = (oh[j], ov[j], od[j]);
        let (thj, tvj, tdj) = (th[j], tv[j], td[j]);
        let ot_dp = ohj as i64 * thj as i64 + ovj as i64 * tvj as i64;
        let o_mag_sq = ohj as i64 * ohj as i64 + ovj as i64 * ovj as i64;
        let t_mag_sq = thj as i64 * thj as i64 + tvj as i64 * tvj as i64;
        let angle = angle_flag(ot_dp, o_mag_sq, t_mag_sq);
        (rh[j], ah[j]) = decouple_px_s0(ohj, thj, angle, egl, div);
        (rv[j], av[j]) = decouple_px_s0(ovj, tvj, angle, egl, div);
        (rd[j], ad[j]) = decouple_px_s0(odj, tdj, angle, egl, div);
    }
}

/// `adm_decouple`: scale 0 over `reg`, one row kernel call per row.
#[allow(clippy::too_many_arguments)]
pub fn decouple_s0(
    row: DecoupleS0Row,
    o: Hvd<i16>,
    t: Hvd<i16>,
    r: HvdMut<i16>,
    a: HvdMut<i16>,
    stride: usize,
    reg: Region,
    egl: f64,
) {
    for i in reg.top..reg.bottom {
        let s = i * stride + reg.left..i * stride + reg.right;
        row(
            [&o.h[s.clone()], &o.v[s.clone()], &o.d[s.clone()]],
            [&t.h[s.clone()], &t.v[s.clone()], &t.d[s.clone()]],
            [&mut r.h[s.clone()], &mut r.v[s.clone()], &mut r.d[s.clone()]],
            [&mut a.h[s.clone()], &mut a.v[s.clone()], &mut a.d[s]],
            egl,
        );
    }
}

/// `get_best15_from32`: the 15 leading bits of `x` (>= 2^15), rounded, and
/// the shift that drops the rest.
#[inline(always)]
fn best15_from32(x: u32) -> (u32, u32) {
    let k = 17 - x.leading_zeros();
    ((x + (1 << (k - 1))) >> k, k)
}

/// One band of one pixel at scales 1-3: returns (restored, additive).
#[inline(always)]
fn decouple_px_s123(o: i32, t: i32, angle: bool, egl: f64, div: &[i32; 65537]) -> (i32, i32) {
    let k: i64 = if o == 0 {
        32768
    } else {
        let abs_o = o.unsigned_abs();
        let sign: i64 = if o < 0 { -1 } else { 1 };
        let (msb, shift) = if abs_o < 32768 { (abs_o, 0) } else { best15_from32(abs_o) };
        // C: (1 << (14 + shift)) in int; shift <= 17 only reaches bit 31 for |o| >= 2^31.
        let round = 1i32.wrapping_shl(14 + shift) as i64;
        let tmp = ((div[(msb as u16 as usize) + 32768] as i64 * t as i64) * sign + round) >> (15 + shift);
        tmp.clamp(0, 32768)
    };
    let mut rst = ((k * o as i64 + 16384) >> 15) as i32;
    if angle && k > 0 && o != 0 {
        rst = gain_limited(rst as f64 * egl, t as f64, o > 0);
    }
    (rst, t.wrapping_sub(rst))
}

/// One row of `adm_decouple_s123`.
pub type DecoupleS123Row = fn(o: [&[i32]; 3], t: [&[i32]; 3], r: [&mut [i32]; 3], a: [&mut [i32]; 3], egl: f64);

pub fn decouple_s123_row(o: [&[i32]; 3], t: [&[i32]; 3], r: [&mut [i32]; 3], a: [&mut [i32]; 3], egl: f64) {
    let div = div_lookup();
    let n = o[0].len();
    let [oh, ov, od] = o.map(|x| &x[..n]);
    let [th, tv, td] = t.map(|x| &x[..n]);
    let [rh, rv, rd] = r.map(|x| &mut x[..n]);
    let [ah, av, ad] = a.map(|x| &mut x[..n]);
    for j in 0..n {
        let (ohj, ovj, odj) = (oh[j], ov[j], od[j]);
        let (thj, tvj, tdj) = (th[j], tv[j], td[j]);
        let ot_dp = (ohj as i64 * thj as i64).wrapping_add(ovj as i64 * tvj as i64);
        let o_mag_sq = (ohj as i64 * ohj as i64).wrapping_add(ovj as i64 * ovj as i64);
        let t_mag_sq = (thj as i64 * thj as i64).wrapping_add(tvj as i64 * tvj as i64);
        let angle = angle_flag(ot_dp, o_mag_sq, t_mag_sq);
        (rh[j], ah[j]) = decouple_px_s123(ohj, thj, angle, egl, div);
        (rv[j], av[j]) = decouple_px_s123(ovj, tvj, angle, egl, div);
        (rd[j], ad[j]) = decouple_px_s123(odj, tdj, angle, egl, div);
    }
}

/// `adm_decouple_s123`: scales 1-3 over `reg`, a row kernel call per row.
#[allow(clippy::too_many_arguments)]
pub fn decouple_s123(
    row: DecoupleS123Row,
    o: Hvd<i32>,
    t: Hvd<i32>,
    r: HvdMut<i32>,
    a: HvdMut<i32>,
    stride: usize,
    reg: Region,
    egl: f64,
) {
    for i in reg.top..reg.bottom {
        let s = i * stride + reg.left..i * stride + reg.right;
        row(
            [&o.h[s.clone()], &o.v[s.clone()], &o.d[s.clone()]],
            [&t.h[s.clone()], &t.v[s.clone()], &t.d[s.clone()]],
            [&mut r.h[s.clone()], &mut r.v[s.clone()], &mut r.d[s.clone()]],
            [&mut a.h[s.clone()], &mut a.v[s.clone()], &mut a.d[s]],
            egl,
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cos_1deg_sq_bits() {
        assert_eq!(super::COS_1DEG_SQ.to_bits(), 0x3f7f_ec0a);
        let c = (1.0f64 * std::f64::consts::PI / 180.0).cos();
        assert_eq!((c * c) as f32, super::COS_1DEG_SQ);
    }
}
