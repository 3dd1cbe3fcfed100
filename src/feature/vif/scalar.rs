//! Scalar VIF kernels: libvmaf's C loops (`vif_statistic_8/16`,
//! `subsample_rd_8/16` in `integer_vif.c`), the reference every SIMD twin
//! is checked against.
//!
//! Edges: libvmaf copies the picture into a buffer and mirrors rows above
//! and below (`pad_top_and_bottom`) and, per row, the filtered values left
//! and right (`PADDING_SQ_DATA`); [`reflect`] gives the same index.

use super::{
    accumulate, log2_table, reflect, Kernels, Plane, Sample, Scratch, StatParams, SubsampleParams, VifSums,
    FILTERS, MAX_HALF,
};

pub(crate) const KERNELS: Kernels = Kernels {
    stat_u8: stat::<u8>,
    stat_u16: stat::<u16>,
    subsample_u8: subsample::<u8>,
    subsample_u16: subsample::<u16>,
    statistic,
};

/// The per-pixel statistic over triples (`accumulate` in a loop).
pub(crate) fn statistic(s1: &[i32], s2: &[i32], s12: &[i32], enhn_gain_limit: f64) -> VifSums {
    let table = log2_table();
    let mut sums = VifSums::default();
    for ((&a, &b), &c) in s1.iter().zip(s2).zip(s12) {
        accumulate(&mut sums, a, b, c, enhn_gain_limit, table);
    }
    sums
}

/// libvmaf's `PADDING_SQ_DATA` on one row buffer whose sample 0 sits at
/// index `MAX_HALF`: mirrors `half` values on each side. For w >= 2 this is
/// libvmaf's loop; a 1-wide row (where libvmaf reads stale values) repeats
/// its one value, so every kernel agrees at every width.
#[inline]
pub(crate) fn pad_row<T: Copy>(row: &mut [T], w: usize, half: usize) {
    let o = MAX_HALF;
    for f in 1..=half {
        row[o - f] = row[o + reflect(-(f as isize), w)];
        row[o + w - 1 + f] = row[o + reflect((w - 1 + f) as isize, w)];
    }
}

/// Rows the vertical taps of output row `i` read, mirrored.
#[inline]
pub(crate) fn tap_rows(i: usize, half: usize, h: usize) -> [usize; 17] {
    let mut rows = [0usize; 17];
    for (k, r) in rows.iter_mut().enumerate().take(2 * half + 1) {
        *r = reflect(i as isize + k as isize - half as isize, h);
    }
    rows
}

/// `vif_statistic_8` (T = u8 at scale 0) and `vif_statistic_16`.
pub(crate) fn stat<T: Sample>(r: &Plane<T>, d: &Plane<T>, p: &StatParams, scratch: &mut Scratch) -> VifSums {
    let filt = FILTERS[p.scale];
    let half = filt.len() / 2;
    let (w, h) = (r.width, r.height);
    let mut sums = VifSums::default();
    if w == 0 || h == 0 {
        return sums;
    }
    let table = log2_table();
    let len = w + 2 * MAX_HALF;
    scratch.u32s.resize(2 * len, 0);
    scratch.u64s.resize(3 * len, 0);
    let (mu1, mu2) = scratch.u32s.split_at_mut(len);
    let (rr, rest) = scratch.u64s.split_at_mut(len);
    let (dd, rd) = rest.split_at_mut(len);

    for i in 0..h {
        let rows = tap_rows(i, half, h);
        for j in 0..w {
            let (mut a_mu1, mut a_mu2) = (0u32, 0u32);
            let (mut a_rr, mut a_dd, mut a_rd) = (0u64, 0u64, 0u64);
            for (k, &f) in filt.iter().enumerate() {
                let f = f as u32;
                let x = r.data[rows[k] * r.stride + j].widen();
                let y = d.data[rows[k] * d.stride + j].widen();
                let fx = f * x;
                let fy = f * y;
                a_mu1 = a_mu1.wrapping_add(fx);
                a_mu2 = a_mu2.wrapping_add(fy);
                a_rr += fx as u64 * x as u64;
                a_dd += fy as u64 * y as u64;
                a_rd += fx as u64 * y as u64;
            }
            let o = MAX_HALF + j;
            mu1[o] = (a_mu1.wrapping_add(p.mu.round) >> p.mu.shift) as u16 as u32;
            mu2[o] = (a_mu2.wrapping_add(p.mu.round) >> p.mu.shift) as u16 as u32;
            rr[o] = ((a_rr + p.sq.round as u64) >> p.sq.shift) as u32 as u64;
            dd[o] = ((a_dd + p.sq.round as u64) >> p.sq.shift) as u32 as u64;
            rd[o] = ((a_rd + p.sq.round as u64) >> p.sq.shift) as u32 as u64;
        }
        pad_row(mu1, w, half);
        pad_row(mu2, w, half);
        pad_row(rr, w, half);
        pad_row(dd, w, half);
        pad_row(rd, w, half);

        for j in 0..w {
            let (mut a_mu1, mut a_mu2) = (0u32, 0u32);
            let (mut a_rr, mut a_dd, mut a_rd) = (0u64, 0u64, 0u64);
            for (k, &f) in filt.iter().enumerate() {
                let t = MAX_HALF + j + k - half;
                a_mu1 = a_mu1.wrapping_add(f as u32 * mu1[t]);
                a_mu2 = a_mu2.wrapping_add(f as u32 * mu2[t]);
                a_rr += f as u64 * rr[t];
                a_dd += f as u64 * dd[t];
                a_rd += f as u64 * rd[t];
            }
            let (s1, s2, s12) = sigmas(a_mu1, a_mu2, a_rr, a_dd, a_rd);
            accumulate(&mut sums, s1, s2, s12, p.enhn_gain_limit, table);
        }
    }
    sums
}

/// The horizontal pass's last step: means squared (Q32 → Q16 with
/// rounding), filtered squares (Q16 rounding), differences as int32.
#[inline(always)]
pub(crate) fn sigmas(mu1: u32, mu2: u32, rr: u64, dd: u64, rd: u64) -> (i32, i32, i32) {
    let q32 = |a: u32, b: u32| ((a as u64 * b as u64).wrapping_add(1 << 31) >> 32) as u32;
    let q16 = |x: u64| (x.wrapping_add(32768) >> 16) as u32;
    let sigma1_sq = q16(rr).wrapping_sub(q32(mu1, mu1)) as i32;
    let sigma2_sq = q16(dd).wrapping_sub(q32(mu2, mu2)) as i32;
    let sigma12 = q16(rd).wrapping_sub(q32(mu1, mu2)) as i32;
    (sigma1_sq, sigma2_sq, sigma12)
}

/// `subsample_rd_8` (T = u8) and `subsample_rd_16`, with the decimation of
/// `decimate_and_pad`: only the even rows and columns are computed, as
/// only they are kept.
pub(crate) fn subsample<T: Sample>(
    r: &Plane<T>,
    d: &Plane<T>,
    p: &SubsampleParams,
    scratch: &mut Scratch,
    out_r: &mut [u16],
    out_d: &mut [u16],
) {
    let filt = FILTERS[p.scale + 1];
    let half = filt.len() / 2;
    let (w, h) = (r.width, r.height);
    let (ow, oh) = (w / 2, h / 2);
    if ow == 0 || oh == 0 {
        return;
    }
    let len = w + 2 * MAX_HALF;
    scratch.u32s.resize(2 * len, 0);
    let (cr, cd) = scratch.u32s.split_at_mut(len);
    for y in 0..oh {
        let i = 2 * y;
        let rows = tap_rows(i, half, h);
        for j in 0..w {
            let (mut a_r, mut a_d) = (0u32, 0u32);
            for (k, &f) in filt.iter().enumerate() {
                a_r = a_r.wrapping_add(f as u32 * r.data[rows[k] * r.stride + j].widen());
                a_d = a_d.wrapping_add(f as u32 * d.data[rows[k] * d.stride + j].widen());
            }
            cr[MAX_HALF + j] = (a_r.wrapping_add(p.mu.round) >> p.mu.shift) as u16 as u32;
            cd[MAX_HALF + j] = (a_d.wrapping_add(p.mu.round) >> p.mu.shift) as u16 as u32;
        }
        pad_row(cr, w, half);
        pad_row(cd, w, half);
        for x in 0..ow {
            let j = 2 * x;
            let (mut a_r, mut a_d) = (0u32, 0u32);
            for (k, &f) in filt.iter().enumerate() {
                let t = MAX_HALF + j + k - half;
                a_r = a_r.wrapping_add(f as u32 * cr[t]);
                a_d = a_d.wrapping_add(f as u32 * cd[t]);
            }
            out_r[y * ow + x] = (a_r.wrapping_add(32768) >> 16) as u16;
            out_d[y * ow + x] = (a_d.wrapping_add(32768) >> 16) as u16;
        }
    }
}
