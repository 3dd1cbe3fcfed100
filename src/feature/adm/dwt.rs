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
    /// Without the low band (kept elsewhere).
    pub fn hvd(len: usize) -> Self {
        Bands { a: Vec::new(), h: vec![T::default(); len], v: vec![T::default(); len], d: vec![T::default(); len] }
    }
}

/// Where one DWT reads and writes: the input size, the input rows of each
/// output row, the output stride.
#[derive(Clone, Copy)]
pub struct DwtGeometry<'a> {
    /// Input size.
    pub w: usize,
    pub h: usize,
    pub rows: &'a [[usize; 4]],
    /// Output stride (elements) and width.
    pub stride: usize,
    pub out_w: usize,
}

/// Fills the mirrored ends of an extended row: `ext[1..=w]` holds the w
/// samples; afterwards `ext[k]` is sample k - 1 mirrored the DWT's way
/// (-1 reads 1, w reads w - 1, w + 1 reads w - 2), so output j reads
/// `ext[2j..2j + 4]`.
#[inline]
pub fn mirror_ends<T: Copy>(ext: &mut [T], w: usize) {
    ext[0] = ext[2];
    ext[w + 1] = ext[w];
    ext[w + 2] = ext[w - 1];
}

/// Scale-0 vertical pass of 8-bit rows into `lo`/`hi` (w samples each).
pub type VerticalU8 = fn(rows: [&[u8]; 4], lo: &mut [i16], hi: &mut [i16]);
/// The same for 9- to 16-bit rows.
pub type VerticalU16 = fn(rows: [&[u16]; 4], bits: u32, lo: &mut [i16], hi: &mut [i16]);
/// Scale-0 horizontal pass: a, v from the extended `lo` row, h, d from
/// the extended `hi` row; writes a.len() outputs. The low band goes out
/// widened to i32, as the next scale reads it (libvmaf's `i16_to_i32`).
pub type HorizontalS0 = fn(lo: &[i16], hi: &[i16], a: &mut [i32], v: &mut [i16], h: &mut [i16], d: &mut [i16]);

/// The vertical pass of scale 0 on one output row: `lo`/`hi` get the
/// low- and high-pass of input rows `r`, rescaled by `shift` (8 for 8-bit
/// input, the bit depth above) and centred on zero. i32 arithmetic wraps
/// as libvmaf's does at 16 bits (the result fits again once centred).
#[inline(always)]
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

pub fn vertical_u8(rows: [&[u8]; 4], lo: &mut [i16], hi: &mut [i16]) {
    vertical_s0(rows, 8, lo, hi)
}

pub fn vertical_u16(rows: [&[u16]; 4], bits: u32, lo: &mut [i16], hi: &mut [i16]) {
    vertical_s0(rows, bits, lo, hi)
}

#[inline(always)]
fn filt16(f: &[i32; 4], s: &[i16]) -> i16 {
    let acc = f[0] * s[0] as i32 + f[1] * s[1] as i32 + f[2] * s[2] as i32 + f[3] * s[3] as i32;
    ((acc + 32768) >> 16) as i16
}

pub fn horizontal_s0(lo: &[i16], hi: &[i16], a: &mut [i32], v: &mut [i16], h: &mut [i16], d: &mut [i16]) {
    let n = a.len();
    let (v, h, d) = (&mut v[..n], &mut h[..n], &mut d[..n]);
    let (lo, hi) = (&lo[..2 * n + 2], &hi[..2 * n + 2]);
    for j in 0..n {
        let (sl, sh) = (&lo[2 * j..2 * j + 4], &hi[2 * j..2 * j + 4]);
        a[j] = filt16(&LO, sl) as i32;
        v[j] = filt16(&HI, sl);
        h[j] = filt16(&LO, sh);
        d[j] = filt16(&HI, sh);
    }
}

/// The scale-0 kernels of one CPU level.
#[derive(Clone, Copy)]
pub struct DwtS0Kernels {
    pub vertical_u8: VerticalU8,
    pub vertical_u16: VerticalU16,
    pub horizontal: HorizontalS0,
}

pub const SCALAR_S0: DwtS0Kernels =
    DwtS0Kernels { vertical_u8, vertical_u16, horizontal: horizontal_s0 };

/// Scale-0 DWT of a picture plane (`adm_dwt2_8` / `adm_dwt2_16`, or only
/// the low band with `lo_only`: `adm_dwt2_8_lo` / `adm_dwt2_16_lo`): the
/// low band into `a` (as i32), the others into `out` (whose `a` is unused).
/// `tmp` holds 2 * (w + 3) samples.
#[allow(clippy::too_many_arguments)]
pub fn dwt_s0(
    k: &DwtS0Kernels,
    src: &PlaneView,
    bits: u32,
    g: DwtGeometry,
    a: &mut [i32],
    out: &mut Bands<i16>,
    tmp: &mut [i16],
    lo_only: bool,
) {
    let w = g.w;
    let (tlo, thi) = tmp[..2 * (w + 3)].split_at_mut(w + 3);
    let n = g.out_w;
    for (i, r) in g.rows.iter().enumerate() {
        if bits == 8 {
            (k.vertical_u8)(r.map(|y| src.row_u8(y)), &mut tlo[1..w + 1], &mut thi[1..w + 1]);
        } else {
            (k.vertical_u16)(r.map(|y| src.row_u16(y)), bits, &mut tlo[1..w + 1], &mut thi[1..w + 1]);
        }
        mirror_ends(tlo, w);
        mirror_ends(thi, w);
        let o = i * g.stride;
        if lo_only {
            for (j, a) in a[o..o + n].iter_mut().enumerate() {
                *a = filt16(&LO, &tlo[2 * j..2 * j + 4]) as i32;
            }
        } else {
            (k.horizontal)(
                tlo,
                thi,
                &mut a[o..o + n],
                &mut out.v[o..o + n],
                &mut out.h[o..o + n],
                &mut out.d[o..o + n],
            );
        }
    }
}

/// Spare entries after each extended row of scales 1-3.
pub const EXT_PAD: usize = 8;

/// Rounding and shifts of `adm_dwt2_s123_combined` for scales 1, 2, 3:
/// (vertical add, vertical shift, horizontal add, horizontal shift).
pub const S123_ROUNDING: [(i64, u32, i64, u32); 3] = [(0, 0, 16384, 15), (32768, 16, 32768, 16), (32768, 16, 16384, 15)];

#[inline(always)]
fn filt64(f: &[i32; 4], s: &[i32], add: i64, shift: u32) -> i32 {
    let acc = f[0] as i64 * s[0] as i64 + f[1] as i64 * s[1] as i64 + f[2] as i64 * s[2] as i64 + f[3] as i64 * s[3] as i64;
    ((acc + add) >> shift) as i32
}

/// Scales 1-3 vertical pass of one row: `lo`/`hi` (w each) from 4 rows.
pub type VerticalS123 = fn(rows: [&[i32]; 4], add: i64, shift: u32, lo: &mut [i32], hi: &mut [i32]);
/// Scales 1-3 horizontal pass: as [`HorizontalS0`] on extended i32 rows.
pub type HorizontalS123 =
    fn(lo: &[i32], hi: &[i32], add: i64, shift: u32, a: &mut [i32], v: &mut [i32], h: &mut [i32], d: &mut [i32]);

pub fn vertical_s123(rows: [&[i32]; 4], add: i64, shift: u32, lo: &mut [i32], hi: &mut [i32]) {
    let w = lo.len();
    let hi = &mut hi[..w];
    let r = rows.map(|x| &x[..w]);
    for j in 0..w {
        let s = [r[0][j], r[1][j], r[2][j], r[3][j]];
        lo[j] = filt64(&LO, &s, add, shift);
        hi[j] = filt64(&HI, &s, add, shift);
    }
}

#[allow(clippy::too_many_arguments)]
pub fn horizontal_s123(lo: &[i32], hi: &[i32], add: i64, shift: u32, a: &mut [i32], v: &mut [i32], h: &mut [i32], d: &mut [i32]) {
    let n = a.len();
    let (v, h, d) = (&mut v[..n], &mut h[..n], &mut d[..n]);
    let (lo, hi) = (&lo[..2 * n + 2], &hi[..2 * n + 2]);
    for j in 0..n {
        let (sl, sh) = (&lo[2 * j..2 * j + 4], &hi[2 * j..2 * j + 4]);
        a[j] = filt64(&LO, sl, add, shift);
        v[j] = filt64(&HI, sl, add, shift);
        h[j] = filt64(&LO, sh, add, shift);
        d[j] = filt64(&HI, sh, add, shift);
    }
}

/// The scale 1-3 DWT kernels of one CPU level.
#[derive(Clone, Copy)]
pub struct DwtS123Kernels {
    pub vertical: VerticalS123,
    pub horizontal: HorizontalS123,
}

pub const SCALAR_S123: DwtS123Kernels = DwtS123Kernels { vertical: vertical_s123, horizontal: horizontal_s123 };

/// One picture's scale 1..3 DWT (libvmaf runs reference and distorted in
/// one call, `adm_dwt2_s123_combined`; the passes are independent). `src`
/// is the previous scale's low band (g.w x g.h, packed); `tmp` holds
/// 2 * (w + 3 + EXT_PAD).
pub fn dwt_s123(k: &DwtS123Kernels, src: &[i32], g: DwtGeometry, scale: usize, out: &mut Bands<i32>, tmp: &mut [i32]) {
    let (vadd, vshift, hadd, hshift) = S123_ROUNDING[scale - 1];
    let w = g.w;
    // Extended rows plus EXT_PAD spare entries SIMD loads may touch.
    let (tlo, thi) = tmp[..2 * (w + 3 + EXT_PAD)].split_at_mut(w + 3 + EXT_PAD);
    let n = g.out_w;
    for (i, r) in g.rows.iter().enumerate() {
        let rows = r.map(|k| &src[k * w..k * w + w]);
        (k.vertical)(rows, vadd, vshift, &mut tlo[1..w + 1], &mut thi[1..w + 1]);
        mirror_ends(tlo, w);
        mirror_ends(thi, w);
        let o = i * g.stride;
        (k.horizontal)(
            tlo,
            thi,
            hadd,
            hshift,
            &mut out.a[o..o + n],
            &mut out.v[o..o + n],
            &mut out.h[o..o + n],
            &mut out.d[o..o + n],
        );
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
