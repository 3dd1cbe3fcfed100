//! The integer Daubechies-2 DWT of libvmaf 3.2.0's ADM
//! (`feature/integer_adm.c`: `dwt2_src_indices_filt`, `adm_dwt2_8`,
//! `adm_dwt2_16`, `adm_dwt2_8_lo`, `adm_dwt2_16_lo`,
//! `adm_dwt2_s123_combined`), scalar.
//!
//! Each output row `i` reads input rows 2i-1..2i+2 and each output column
//! `j` reads columns 2j-1..2j+2, mirrored at the edges: index -1 reads 1,
//! index n + k reads n - 1 - k. Scale 0 works in 16 bits (the vertical pass
//! rescales the samples to Q8 around zero), scales 1 to 3 in 32 bits with
//! 64-bit accumulators.

use crate::picture::PlaneView;

pub const LO: [i32; 4] = [15826, 27411, 7345, -4240];
pub const HI: [i32; 4] = [-4240, -7345, 27411, -15826];
/// Sum of LO: the vertical pass subtracts it times the mid-level so the
/// low band is centred on zero.
pub const LO_SUM: i32 = 46342;

/// `dwt2_src_indices_filt` for one dimension of length `n`: the four input
/// indices of every output index 0..(n + 1) / 2. Needs n >= 5 (libvmaf
/// reads outside the picture below that).
pub fn src_indices(n: usize) -> Vec<[usize; 4]> {
    let n = n as i64;
    let mirror = |k: i64| -> usize {
        let k = if k < 0 { -k } else { k };
        (if k >= n { 2 * n - k - 1 } else { k }) as usize
    };
    (0..(n + 1) / 2).map(|i| std::array::from_fn(|t| mirror(2 * i - 1 + t as i64))).collect()
}

/// The four output bands of one picture at one scale, `stride` apart.
pub struct Bands<T> {
    pub a: Vec<T>,
    pub h: Vec<T>,
    pub v: Vec<T>,
    pub d: Vec<T>,
}

impl<T: Copy + Default> Bands<T> {
    pub fn new(len: usize) -> Self {
        Bands { a: vec![T::default(); len], h: vec![T::default(); len], v: vec![T::default(); len], d: vec![T::default(); len] }
    }
}

/// Where one DWT writes: the rows of its output, the input and output
/// geometry.
#[derive(Clone, Copy)]
pub struct DwtGeometry<'a> {
    /// Input size.
    pub w: usize,
    pub h: usize,
    pub rows: &'a [[usize; 4]],
    pub cols: &'a [[usize; 4]],
    /// Output stride (elements).
    pub stride: usize,
}

/// The vertical pass of scale 0 on one output row: `lo`/`hi` get the
/// low- and high-pass of input rows `r`, rescaled by `shift` (8 for 8-bit
/// input, the bit depth above) and centred on zero. i32 arithmetic wraps
/// as libvmaf's does at 16 bits (the result fits again once centred).
#[inline]
fn vertical_s0<T: Copy + Into<i32>>(r: [&[T]; 4], shift: u32, lo: &mut [i16], hi: &mut [i16]) {
    let add = 1i32 << (shift - 1);
    let centre = LO_SUM.wrapping_mul(add);
    let w = lo.len();
    let (r0, r1, r2, r3) = (&r[0][..w], &r[1][..w], &r[2][..w], &r[3][..w]);
    let hi = &mut hi[..w];
    for j in 0..w {
        let (s0, s1, s2, s3) = (r0[j].into(), r1[j].into(), r2[j].into(), r3[j].into());
        let acc = (LO[0] * s0).wrapping_add(LO[1] * s1).wrapping_add(LO[2] * s2).wrapping_add(LO[3] * s3);
        lo[j] = (acc.wrapping_sub(centre).wrapping_add(add) >> shift) as i16;
        let acc = (HI[0] * s0).wrapping_add(HI[1] * s1).wrapping_add(HI[2] * s2).wrapping_add(HI[3] * s3);
        hi[j] = (acc.wrapping_add(add) >> shift) as i16;
    }
}

#[inline(always)]
fn filt16(f: &[i32; 4], s: [i16; 4]) -> i16 {
    let acc = f[0] * s[0] as i32 + f[1] * s[1] as i32 + f[2] * s[2] as i32 + f[3] * s[3] as i32;
    ((acc + 32768) >> 16) as i16
}

/// The horizontal pass of scale 0 on one row: a, v from `lo`; h, d from
/// `hi` (when given).
#[inline]
fn horizontal_s0(
    lo: &[i16],
    hi: Option<&[i16]>,
    cols: &[[usize; 4]],
    a: &mut [i16],
    v: Option<&mut [i16]>,
    h: Option<&mut [i16]>,
    d: Option<&mut [i16]>,
) {
    let n = cols.len();
    let a = &mut a[..n];
    match (hi, v, h, d) {
        (Some(hi), Some(v), Some(h), Some(d)) => {
            let (v, h, d) = (&mut v[..n], &mut h[..n], &mut d[..n]);
            for (j, c) in cols.iter().enumerate() {
                let sl = [lo[c[0]], lo[c[1]], lo[c[2]], lo[c[3]]];
                let sh = [hi[c[0]], hi[c[1]], hi[c[2]], hi[c[3]]];
                a[j] = filt16(&LO, sl);
                v[j] = filt16(&HI, sl);
                h[j] = filt16(&LO, sh);
                d[j] = filt16(&HI, sh);
            }
        }
        _ => {
            for (j, c) in cols.iter().enumerate() {
                a[j] = filt16(&LO, [lo[c[0]], lo[c[1]], lo[c[2]], lo[c[3]]]);
            }
        }
    }
}

/// Scale-0 DWT of a picture plane (`adm_dwt2_8` / `adm_dwt2_16`, or only
/// the low band with `lo_only`: `adm_dwt2_8_lo` / `adm_dwt2_16_lo`).
/// `tmp` holds 2 * w samples.
pub fn dwt_s0(src: &PlaneView, bits: u32, g: DwtGeometry, out: &mut Bands<i16>, tmp: &mut [i16], lo_only: bool) {
    let (tlo, thi) = tmp[..2 * g.w].split_at_mut(g.w);
    for (i, r) in g.rows.iter().enumerate() {
        if bits == 8 {
            let rows = r.map(|k| src.row_u8(k));
            vertical_s0(rows, 8, tlo, thi);
        } else {
            let rows = r.map(|k| src.row_u16(k));
            vertical_s0(rows, bits, tlo, thi);
        }
        let o = i * g.stride;
        let n = g.cols.len();
        if lo_only {
            horizontal_s0(tlo, None, g.cols, &mut out.a[o..o + n], None, None, None);
        } else {
            horizontal_s0(
                tlo,
                Some(thi),
                g.cols,
                &mut out.a[o..o + n],
                Some(&mut out.v[o..o + n]),
                Some(&mut out.h[o..o + n]),
                Some(&mut out.d[o..o + n]),
            );
        }
    }
}

/// Rounding and shifts of `adm_dwt2_s123_combined` for scales 1, 2, 3:
/// (vertical add, vertical shift, horizontal add, horizontal shift).
pub const S123_ROUNDING: [(i64, u32, i64, u32); 3] = [(0, 0, 16384, 15), (32768, 16, 32768, 16), (32768, 16, 16384, 15)];

#[inline(always)]
fn filt64(f: &[i32; 4], s: [i32; 4], add: i64, shift: u32) -> i32 {
    let acc = f[0] as i64 * s[0] as i64 + f[1] as i64 * s[1] as i64 + f[2] as i64 * s[2] as i64 + f[3] as i64 * s[3] as i64;
    ((acc + add) >> shift) as i32
}

/// One picture's scale 1..3 DWT (libvmaf runs reference and distorted in
/// one call, `adm_dwt2_s123_combined`; the passes are independent). `src`
/// is the previous scale's low band (g.w x g.h, packed); `tmp` holds 2 * w.
pub fn dwt_s123(src: &[i32], g: DwtGeometry, scale: usize, out: &mut Bands<i32>, tmp: &mut [i32]) {
    let (vadd, vshift, hadd, hshift) = S123_ROUNDING[scale - 1];
    let (tlo, thi) = tmp[..2 * g.w].split_at_mut(g.w);
    let n = g.cols.len();
    for (i, r) in g.rows.iter().enumerate() {
        let rows = r.map(|k| &src[k * g.w..k * g.w + g.w]);
        for j in 0..g.w {
            let s = [rows[0][j], rows[1][j], rows[2][j], rows[3][j]];
            tlo[j] = filt64(&LO, s, vadd, vshift);
            thi[j] = filt64(&HI, s, vadd, vshift);
        }
        let o = i * g.stride;
        let (a, v) = (&mut out.a[o..o + n], &mut out.v[o..o + n]);
        let (h, d) = (&mut out.h[o..o + n], &mut out.d[o..o + n]);
        for (j, c) in g.cols.iter().enumerate() {
            let sl = [tlo[c[0]], tlo[c[1]], tlo[c[2]], tlo[c[3]]];
            let sh = [thi[c[0]], thi[c[1]], thi[c[2]], thi[c[3]]];
            a[j] = filt64(&LO, sl, hadd, hshift);
            v[j] = filt64(&HI, sl, hadd, hshift);
            h[j] = filt64(&LO, sh, hadd, hshift);
            d[j] = filt64(&HI, sh, hadd, hshift);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_mirror_like_libvmaf() {
        assert_eq!(src_indices(5), vec![[1, 0, 1, 2], [1, 2, 3, 4], [3, 4, 4, 3]]);
        assert_eq!(src_indices(6), vec![[1, 0, 1, 2], [1, 2, 3, 4], [3, 4, 5, 5]]);
    }
}
