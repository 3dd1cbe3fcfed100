//! The ADM denominator: the CSF-weighted cube sum of the reference bands
//! (libvmaf 3.2.0 `feature/integer_adm.c`: `adm_csf_den_scale` for scale 0,
//! `adm_csf_den_s123` for scales 1-3), scalar.

use super::cm::noise_floor;
use super::Region;

/// Shifts of the denominator sums that depend on the band size.
#[derive(Clone, Copy, Debug)]
pub struct DenShifts {
    /// Per-pixel cube shift and rounding (scales 1-3 only).
    pub cub: (u32, u32),
    /// Per-row accumulator shift and rounding.
    pub accum: (u32, u32),
    /// The power of two the integer sums are divided by.
    pub to_float: f64,
}

/// Sum of |x|^3 over one row of one scale-0 band (16-bit values).
pub(crate) type CubeSumS0Row = fn(src: &[i16]) -> u64;

pub(crate) fn cube_sum_s0_row(src: &[i16]) -> u64 {
    let mut inner = 0u64;
    for &x in src {
        let m = (x as i32).unsigned_abs() as u16 as u64;
        inner += m * m * m;
    }
    inner
}

/// Sums of |x|^3 over rows of the score region, for h, v, d at once.
/// Scale 0: plain cubes of 16-bit values.
pub(crate) fn den_sums_s0(row: CubeSumS0Row, src: [&[i16]; 3], stride: usize, reg: Region, sh: DenShifts) -> [u64; 3] {
    let mut accum = [0u64; 3];
    for i in reg.top..reg.bottom {
        let s = i * stride + reg.left..i * stride + reg.right;
        for b in 0..3 {
            let inner = row(&src[b][s.clone()]);
            accum[b] += (inner + sh.accum.1 as u64) >> sh.accum.0;
        }
    }
    accum
}

/// Scales 1-3: squares and cubes rounded down by `sq_shift` and the cube
/// shift.
pub(crate) fn den_sums_s123(src: [&[i32]; 3], stride: usize, reg: Region, sq_shift: u32, sh: DenShifts) -> [u64; 3] {
    let sq_add = 1u64 << sq_shift;
    let mut accum = [0u64; 3];
    for i in reg.top..reg.bottom {
        let s = i * stride + reg.left..i * stride + reg.right;
        for b in 0..3 {
            let mut inner = 0u64;
            for &x in &src[b][s.clone()] {
                let m = x.unsigned_abs() as u64;
                inner = inner.wrapping_add(
                    (((m * m).wrapping_add(sq_add) >> sq_shift).wrapping_mul(m).wrapping_add(sh.cub.1 as u64))
                        >> (sh.cub.0 & 63),
                );
            }
            accum[b] = accum[b].wrapping_add(inner.wrapping_add(sh.accum.1 as u64) >> (sh.accum.0 & 63));
        }
    }
    accum
}

/// The float den term from the integer sums and the band weights.
pub(crate) fn den_value(accum: [u64; 3], rfactor: [f32; 3], to_float: f64, reg: Region, noise_weight: f64) -> f32 {
    let csf = |b: usize| (accum[b] as f64 / to_float) * (rfactor[b] as f64).powf(3.0);
    let floor = noise_floor(reg, noise_weight);
    let third = 1.0f32 / 3.0f32;
    let den_h = (csf(0) as f32).powf(third) + floor;
    let den_v = (csf(1) as f32).powf(third) + floor;
    let den_d = (csf(2) as f32).powf(third) + floor;
    den_h + den_v + den_d
}
