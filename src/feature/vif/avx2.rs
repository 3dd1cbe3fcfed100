//! AVX2 twins of the VIF kernels in `scalar.rs`, bit for bit.
//!
//! Both filter passes run on pairs of 16-bit values with `vpmaddwd`: two
//! taps per instruction, eight columns per register. Values that do not fit
//! a signed 16-bit lane are offset by -32768 (every filter sums to 65536, so
//! the offset comes back as exactly -2^31, undone with a wrapping add) or
//! split into 16-bit halves (the squares and products). A coefficient above
//! 32767 (scale 3's 43728) is split over two terms.
//!
//! Vertical pass: for each virtual row v (mirrored at the picture's edges)
//! a pair block holds, per column, (q[row v], q[row v + 1]) for every
//! quantity q; output row i sums `madd(block[i + off], (c0, c1))` over the
//! filter's terms. Blocks live in a ring and are built once per picture;
//! output rows go even first, then odd, so a pass needs only the blocks of
//! one parity (scale 3's split filter needs both and keeps a full ring).
//!
//! Horizontal pass: each vertical result of the row is stored as i16 with
//! its mirrored edges. Seen as i32, that array at element e is the pair
//! (x[e], x[e + 1]), so the even output columns read plain unaligned
//! vectors, and the odd ones too — no shuffles.
//!
//! The per-pixel statistic runs eight lanes at a time, its double parts
//! four at a time, like the scalar one (same operations, no FMA): logs take
//! k from a float exponent and the table index from the top bits, and the
//! table is read through an 8 KiB block code of it that stays in L1. The
//! blocks are fetched by one `vpgatherdd` (`KERNELS_GATHER`) or by eight
//! scalar loads (`KERNELS`), whichever the core does faster
//! (`simd::fast_gathers`: 6-9 % of VIF for the gather on an Intel Xeon
//! held to AVX2, 2026-12-04; slow gathers on AMD before Zen 3 and on Intel
//! cores with the Downfall microcode).
//!
//! Speed at 1920x1080 (thread CPU time per frame, a shared 2-core AMD EPYC
//! with AVX-512): 8-bit ~33 ms, 10-bit ~42 ms; libvmaf 3.2.0's own AVX2
//! ~54 / ~69 ms, its AVX-512 ~35 / ~49 ms (`checkasm` `vif::vif_timing`).

use std::arch::x86_64::*;

use super::scalar;
use super::{
    log2_table, on_cache_line, reflect, Kernels, Plane, Sample, Scratch, StatParams, SubsampleParams, VifSums, FILTERS,
    MAX_HALF, SIGMA_NSQ,
};

/// Proof that the CPU has AVX2, for the `#[inline(always)]` helpers below:
/// they must inline into the kernels (a call would pass vectors through
/// memory) and so cannot carry `#[target_feature]`; they take this token
/// instead and call their intrinsics on its word. Only [`Avx2::here`], a
/// `#[target_feature]` fn, makes one: a token exists only where AVX2 code
/// already runs.
#[derive(Clone, Copy)]
pub(super) struct Avx2(());

impl Avx2 {
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn here() -> Self {
        Avx2(())
    }
}

/// The kernels, the log2 lookups as scalar loads.
pub(super) const KERNELS: Kernels = table::<false>();
/// The kernels, the log2 lookups as one `vpgatherdd` (`simd::fast_gathers`).
pub(super) const KERNELS_GATHER: Kernels = table::<true>();

const fn table<const GATHER: bool>() -> Kernels {
    Kernels {
        stat_u8: stat_u8::<GATHER>,
        stat_u16: stat_u16::<GATHER>,
        subsample_u8,
        subsample_u16,
        statistic: statistic_slices::<GATHER>,
    }
}

fn available() -> bool {
    is_x86_feature_detected!("avx2")
}

fn stat_u8<const GATHER: bool>(r: &Plane<u8>, d: &Plane<u8>, p: &StatParams, s: &mut Scratch) -> VifSums {
    // The 8-bit kernel is vif_statistic_8's: means >> 8, squares unshifted.
    if !available() || p.mu.shift != 8 || p.sq.shift != 0 {
        return scalar::stat(r, d, p, s);
    }
    // SAFETY: AVX2 is present (checked above), the kernel's only precondition.
    unsafe { stat::<u8, 5, GATHER>(r, d, p, s) }
}

fn stat_u16<const GATHER: bool>(r: &Plane<u16>, d: &Plane<u16>, p: &StatParams, s: &mut Scratch) -> VifSums {
    if !available() || p.sq.shift > 16 {
        return scalar::stat(r, d, p, s);
    }
    // SAFETY: AVX2 is present (checked above), the kernel's only precondition.
    unsafe { stat::<u16, 8, GATHER>(r, d, p, s) }
}

fn subsample_u8(
    r: &Plane<u8>,
    d: &Plane<u8>,
    p: &SubsampleParams,
    s: &mut Scratch,
    out_r: &mut [u16],
    out_d: &mut [u16],
) {
    if !available() {
        return scalar::subsample(r, d, p, s, out_r, out_d);
    }
    // SAFETY: AVX2 is present (checked above), the kernel's only precondition.
    unsafe { subsample(r, d, p, s, out_r, out_d) }
}

fn subsample_u16(
    r: &Plane<u16>,
    d: &Plane<u16>,
    p: &SubsampleParams,
    s: &mut Scratch,
    out_r: &mut [u16],
    out_d: &mut [u16],
) {
    if !available() {
        return scalar::subsample(r, d, p, s, out_r, out_d);
    }
    // SAFETY: AVX2 is present (checked above), the kernel's only precondition.
    unsafe { subsample(r, d, p, s, out_r, out_d) }
}

fn statistic_slices<const GATHER: bool>(s1: &[i32], s2: &[i32], s12: &[i32], egl: f64) -> VifSums {
    let n = s1.len().min(s2.len()).min(s12.len());
    if !available() {
        return scalar::statistic(&s1[..n], &s2[..n], &s12[..n], egl);
    }
    // SAFETY: AVX2 is present (checked above), the kernel's only precondition.
    unsafe { statistic_avx2::<GATHER>(&s1[..n], &s2[..n], &s12[..n], egl) }
}

#[target_feature(enable = "avx2")]
fn statistic_avx2<const GATHER: bool>(s1: &[i32], s2: &[i32], s12: &[i32], egl: f64) -> VifSums {
    let cpu = Avx2::here();
    let lut = log2_lut();
    let egl = _mm256_set1_pd(egl);
    let mut acc = StatAcc::new(cpu);
    let n = s1.len();
    let mut j = 0;
    while j < n {
        let left = (n - j).min(8);
        let (mut a, mut b, mut c) = ([0i32; 8], [0i32; 8], [0i32; 8]);
        a[..left].copy_from_slice(&s1[j..j + left]);
        b[..left].copy_from_slice(&s2[j..j + left]);
        c[..left].copy_from_slice(&s12[j..j + left]);
        // SAFETY: `x` is 32 bytes.
        let load = |x: &[i32; 8]| unsafe { _mm256_loadu_si256(x.as_ptr() as *const __m256i) };
        let valid =
            _mm256_cmpgt_epi32(_mm256_set1_epi32(left as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        statistic::<GATHER>(cpu, &mut acc, load(&a), load(&b), load(&c), valid, egl, lut);
        j += 8;
    }
    acc.sums(cpu)
}

/// Samples as the kernels load them: 16 at a time, widened to u16 lanes,
/// 16-bit ones offset by -32768 (so they fit i16).
pub(super) trait Avx2Sample: Sample {
    const WIDE: bool;
    /// `row[j..j + 16]` (zeros past the end of `row`).
    fn load16(cpu: Avx2, row: &[Self], j: usize) -> __m256i;
}

impl Avx2Sample for u8 {
    const WIDE: bool = false;
    #[inline(always)]
    fn load16(_cpu: Avx2, row: &[u8], j: usize) -> __m256i {
        if j + 16 <= row.len() {
            // SAFETY: `_cpu` proves AVX2; bytes j..j + 16 are in `row`.
            unsafe { _mm256_cvtepu8_epi16(_mm_loadu_si128(row.as_ptr().add(j) as *const __m128i)) }
        } else {
            let mut tail = [0u8; 16];
            let n = row.len().saturating_sub(j);
            tail[..n].copy_from_slice(&row[j..j + n]);
            // SAFETY: `_cpu` proves AVX2; `tail` is 16 bytes.
            unsafe { _mm256_cvtepu8_epi16(_mm_loadu_si128(tail.as_ptr() as *const __m128i)) }
        }
    }
}

impl Avx2Sample for u16 {
    const WIDE: bool = true;
    #[inline(always)]
    fn load16(_cpu: Avx2, row: &[u16], j: usize) -> __m256i {
        let v = if j + 16 <= row.len() {
            // SAFETY: `_cpu` proves AVX2; samples j..j + 16 are in `row`.
            unsafe { _mm256_loadu_si256(row.as_ptr().add(j) as *const __m256i) }
        } else {
            let mut tail = [0u16; 16];
            let n = row.len().saturating_sub(j);
            tail[..n].copy_from_slice(&row[j..j + n]);
            // SAFETY: `_cpu` proves AVX2; `tail` is 32 bytes.
            unsafe { _mm256_loadu_si256(tail.as_ptr() as *const __m256i) }
        };
        // SAFETY: `_cpu` proves AVX2.
        unsafe { _mm256_xor_si256(v, _mm256_set1_epi16(i16::MIN)) }
    }
}

/// One `vpmaddwd` term of a filter: taps `off` and `off + 1` (relative to
/// the output), weighted `c0` and `c1`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Term {
    pub(super) off: isize,
    c0: u16,
    c1: u16,
}

pub(super) const MAX_TERMS: usize = 12;

/// The filter as pair terms: (f[0], f[1]), (f[2], f[3]), ..., (f[n-1], 0),
/// with coefficients above i16::MAX split in two terms.
pub(super) fn terms(filt: &[u16]) -> ([Term; MAX_TERMS], usize) {
    let half = (filt.len() / 2) as isize;
    let mut out = [Term::default(); MAX_TERMS];
    let mut n = 0;
    let split = |c: u16| if c > i16::MAX as u16 { (c / 2, c - c / 2) } else { (c, 0) };
    for k in (0..filt.len()).step_by(2) {
        let off = k as isize - half;
        let (c0, c0_rest) = split(filt[k]);
        let (c1, c1_rest) = split(if k + 1 < filt.len() { filt[k + 1] } else { 0 });
        out[n] = Term { off, c0, c1 };
        n += 1;
        if c0_rest != 0 {
            out[n] = Term { off, c0: c0_rest, c1: 0 };
            n += 1;
        }
        if c1_rest != 0 {
            out[n] = Term { off: off + 1, c0: c1_rest, c1: 0 };
            n += 1;
        }
    }
    (out, n)
}

#[inline(always)]
pub(super) fn coef(_cpu: Avx2, t: &Term) -> __m256i {
    // SAFETY: `_cpu` proves AVX2.
    unsafe { _mm256_set1_epi32(((t.c1 as u32) << 16 | t.c0 as u32) as i32) }
}

/// 64-bit chunks (0, 2, 1, 3): after it, unpacklo/hi of two vectors give
/// columns 0..7 and 8..15 in order.
#[inline(always)]
fn in_order(_cpu: Avx2, x: __m256i) -> __m256i {
    // SAFETY: `_cpu` proves AVX2.
    unsafe { _mm256_permute4x64_epi64::<0xD8>(x) }
}

/// Stores eight u32 lanes (each < 65536) as eight u16. Safety: `dst` is
/// valid for writing 8 u16.
#[inline(always)]
unsafe fn store8_u16(_cpu: Avx2, dst: *mut u16, v: __m256i) {
    // SAFETY: `_cpu` proves AVX2; the caller's bound on `dst`.
    unsafe {
        let packed = _mm256_permute4x64_epi64::<0x08>(_mm256_packus_epi32(v, v));
        _mm_storeu_si128(dst as *mut __m128i, _mm256_castsi256_si128(packed));
    }
}

/// libvmaf's `PADDING_SQ_DATA` (reflect form, as `scalar::pad_row`) on an
/// i16 row whose column 0 is at `MAX_HALF`.
#[inline(always)]
pub(super) fn mirror(row: &mut [i16], w: usize, half: usize) {
    let o = MAX_HALF;
    for f in 1..=half {
        row[o - f] = row[o + reflect(-(f as isize), w)];
        row[o + w - 1 + f] = row[o + reflect((w - 1 + f) as isize, w)];
    }
}

// ---- statistic ------------------------------------------------------------

/// Vector sums of the statistic (i64 lanes).
pub(super) struct StatAcc {
    pub(super) num_log: __m256i,
    pub(super) den_log: __m256i,
    pub(super) num_non_log: __m256i,
    pub(super) den_non_log: i64,
}

impl StatAcc {
    #[inline(always)]
    pub(super) fn new(_cpu: Avx2) -> Self {
        // SAFETY: `_cpu` proves AVX2.
        let zero = unsafe { _mm256_setzero_si256() };
        StatAcc { num_log: zero, den_log: zero, num_non_log: zero, den_non_log: 0 }
    }

    #[inline(always)]
    pub(super) fn sums(&self, _cpu: Avx2) -> VifSums {
        let lanes = |v: __m256i| {
            let mut a = [0i64; 4];
            // SAFETY: `_cpu` proves AVX2; `a` is 32 bytes.
            unsafe { _mm256_storeu_si256(a.as_mut_ptr() as *mut __m256i, v) };
            a.iter().fold(0i64, |s, &x| s.wrapping_add(x))
        };
        VifSums {
            num_log: lanes(self.num_log),
            den_log: lanes(self.den_log),
            num_non_log: lanes(self.num_non_log),
            den_non_log: self.den_non_log,
        }
    }
}

/// The log2 table as the AVX2 statistic reads it. libvmaf's table is 64 KiB
/// (m in 32768..65536), more than L1 holds, and gathers from it miss. Its
/// values step up by at most one every ~11 entries, so 16 entries fit in
/// 32 bits: the first value and the (at most two) positions where the value
/// steps up. 8 KiB, checked against the table when built; if some libm made
/// the table irregular, the full table is read instead.
pub(super) struct Log2Lut {
    /// Entry b: base | p1 << 16 | p2 << 24 for m = 32768 + 16 b + i:
    /// value = base + (i >= p1) + (i >= p2), p = 16 for "no step".
    pub(super) blocks: Option<Box<[u32; 2048]>>,
    table: &'static [u16; 65537],
}

pub(super) fn log2_lut() -> &'static Log2Lut {
    static LUT: std::sync::OnceLock<Log2Lut> = std::sync::OnceLock::new();
    LUT.get_or_init(|| {
        let table = log2_table();
        let mut blocks = Box::new([0u32; 2048]);
        let mut regular = true;
        for (b, entry) in blocks.iter_mut().enumerate() {
            let m0 = 32768 + 16 * b;
            let mut steps = [16u32; 2];
            let mut n = 0;
            for i in 1..16 {
                match table[m0 + i].wrapping_sub(table[m0 + i - 1]) {
                    0 => {}
                    1 if n < 2 => {
                        steps[n] = i as u32;
                        n += 1;
                    }
                    _ => regular = false,
                }
            }
            *entry = table[m0] as u32 | steps[0] << 16 | steps[1] << 24;
        }
        Log2Lut { blocks: regular.then_some(blocks), table }
    })
}

impl Log2Lut {
    /// table[m] for eight lanes of m in 32768..65536 (other lanes: some
    /// value, read inside the tables); the blocks fetched by one gather
    /// with GATHER, else by eight scalar loads (see `simd::fast_gathers`).
    #[inline(always)]
    fn lookup<const GATHER: bool>(&self, _cpu: Avx2, m: __m256i) -> __m256i {
        // SAFETY: `_cpu` proves AVX2; each read of a table is bounded where it is made.
        unsafe {
            match &self.blocks {
                Some(blocks) => {
                    let index = _mm256_and_si256(
                        _mm256_sub_epi32(_mm256_srli_epi32::<4>(m), _mm256_set1_epi32(2048)),
                        _mm256_set1_epi32(2047),
                    );
                    let e = if GATHER {
                        // SAFETY: every index < 2048 = blocks.len().
                        _mm256_i32gather_epi32::<4>(blocks.as_ptr() as *const i32, index)
                    } else {
                        let mut at = [0u32; 8];
                        _mm256_storeu_si256(at.as_mut_ptr() as *mut __m256i, index);
                        // SAFETY: every index < 2048 = blocks.len().
                        let b = |l: usize| *blocks.get_unchecked(at[l] as usize) as i32;
                        _mm256_setr_epi32(b(0), b(1), b(2), b(3), b(4), b(5), b(6), b(7))
                    };
                    let i1 = _mm256_add_epi32(_mm256_and_si256(m, _mm256_set1_epi32(15)), _mm256_set1_epi32(1));
                    let base = _mm256_and_si256(e, _mm256_set1_epi32(0xffff));
                    let p1 = _mm256_and_si256(_mm256_srli_epi32::<16>(e), _mm256_set1_epi32(0xff));
                    let p2 = _mm256_srli_epi32::<24>(e);
                    // cmpgt(i + 1, p) is -1 where i >= p.
                    let steps = _mm256_add_epi32(_mm256_cmpgt_epi32(i1, p1), _mm256_cmpgt_epi32(i1, p2));
                    _mm256_sub_epi32(base, steps)
                }
                None => {
                    let index = _mm256_and_si256(m, _mm256_set1_epi32(0xffff));
                    // SAFETY: index <= 65535; 4 bytes at 2 * index lie inside the
                    // 65537-entry table.
                    let t = _mm256_i32gather_epi32::<2>(self.table.as_ptr() as *const i32, index);
                    _mm256_and_si256(t, _mm256_set1_epi32(0xffff))
                }
            }
        }
    }
}

/// Four u32 lanes as exact doubles.
#[inline(always)]
fn u32x4_to_f64(_cpu: Avx2, x: __m128i) -> __m256d {
    // SAFETY: `_cpu` proves AVX2; the intrinsics here read and write no memory.
    unsafe {
        let magic = _mm256_set1_epi64x(0x4330_0000_0000_0000);
        let v = _mm256_or_si256(_mm256_cvtepu32_epi64(x), magic);
        _mm256_sub_pd(_mm256_castsi256_pd(v), _mm256_set1_pd(4_503_599_627_370_496.0))
    }
}

/// `log2_32` on eight u32 lanes (>= 2^17): k from the exponent of
/// float(x >> 8) (exact: < 2^24), then table[x >> k] + 2048 k.
#[inline(always)]
fn log2_u32<const GATHER: bool>(_cpu: Avx2, x: __m256i, lut: &Log2Lut) -> __m256i {
    // SAFETY: `_cpu` proves AVX2; the intrinsics here read and write no memory.
    unsafe {
        let f = _mm256_castps_si256(_mm256_cvtepi32_ps(_mm256_srli_epi32::<8>(x)));
        // floor(log2 x) = biased exponent - 127 + 8; k = that - 15.
        let k = _mm256_sub_epi32(_mm256_srli_epi32::<23>(f), _mm256_set1_epi32(134));
        let m = _mm256_srlv_epi32(x, k);
        _mm256_add_epi32(lut.lookup::<GATHER>(_cpu, m), _mm256_slli_epi32::<11>(k))
    }
}

/// For four exact integer doubles (>= 2^17, < 2^53): table index m (top 16
/// bits of the integer) | k << 16 (k = floor(log2) - 15), in the low 32
/// bits of each 64-bit lane.
#[inline(always)]
fn log2_parts_f64(_cpu: Avx2, y: __m256d) -> __m256i {
    // SAFETY: `_cpu` proves AVX2; the intrinsics here read and write no memory.
    unsafe {
        let bits = _mm256_castpd_si256(y);
        let m = _mm256_or_si256(
            _mm256_and_si256(_mm256_srli_epi64::<37>(bits), _mm256_set1_epi64x(0x7fff)),
            _mm256_set1_epi64x(0x8000),
        );
        let k = _mm256_sub_epi64(_mm256_srli_epi64::<52>(bits), _mm256_set1_epi64x(1038));
        _mm256_or_si256(m, _mm256_slli_epi64::<16>(k))
    }
}

/// The low 32 bits of the 64-bit lanes of `a` (lanes 0..3) and `b`
/// (lanes 4..7), in order.
#[inline(always)]
fn pack_low32(_cpu: Avx2, a: __m256i, b: __m256i) -> __m256i {
    // SAFETY: `_cpu` proves AVX2; the intrinsics here read and write no memory.
    unsafe {
        let pick = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        _mm256_permute2x128_si256::<0x20>(
            _mm256_permutevar8x32_epi32(a, pick),
            _mm256_permutevar8x32_epi32(b, pick),
        )
    }
}

/// Adds the eight i32 lanes of `v` where `mask` is set to four i64 sums.
#[inline(always)]
fn add_masked_i64(_cpu: Avx2, sum: __m256i, v: __m256i, mask: __m256i) -> __m256i {
    // SAFETY: `_cpu` proves AVX2; the intrinsics here read and write no memory.
    unsafe {
        let v = _mm256_and_si256(v, mask);
        let wide = _mm256_add_epi64(
            _mm256_cvtepi32_epi64(_mm256_castsi256_si128(v)),
            _mm256_cvtepi32_epi64(_mm256_extracti128_si256::<1>(v)),
        );
        _mm256_add_epi64(sum, wide)
    }
}

/// `accumulate` on eight pixels; lanes outside `valid` add nothing.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn statistic<const GATHER: bool>(
    _cpu: Avx2,
    acc: &mut StatAcc,
    s1: __m256i,
    s2: __m256i,
    s12: __m256i,
    valid: __m256i,
    egl: __m256d,
    lut: &Log2Lut,
) {
    // SAFETY: `_cpu` proves AVX2; the intrinsics here read and write no memory.
    unsafe {
        let zero = _mm256_setzero_si256();
        let s2 = _mm256_max_epi32(s2, zero);
        let log = _mm256_and_si256(_mm256_cmpgt_epi32(s1, _mm256_set1_epi32(SIGMA_NSQ - 1)), valid);
        let non = _mm256_andnot_si256(log, valid);
        let non_bits = _mm256_movemask_ps(_mm256_castsi256_ps(non));
        if non_bits != 0 {
            acc.den_non_log += non_bits.count_ones() as i64;
            acc.num_non_log = add_masked_i64(_cpu, acc.num_non_log, s2, non);
        }
        if _mm256_movemask_ps(_mm256_castsi256_ps(log)) == 0 {
            return;
        }
        let nsq = _mm256_set1_epi32(SIGMA_NSQ);
        // den += log2_32(sigma_nsq + sigma1_sq) - 2048 * 17
        let log_s1 = log2_u32::<GATHER>(_cpu, _mm256_add_epi32(s1, nsq), lut);
        let den = _mm256_sub_epi32(log_s1, _mm256_set1_epi32(2048 * 17));
        acc.den_log = add_masked_i64(_cpu, acc.den_log, den, log);

        let num =
            _mm256_and_si256(log, _mm256_and_si256(_mm256_cmpgt_epi32(s12, zero), _mm256_cmpgt_epi32(s2, zero)));
        if _mm256_movemask_ps(_mm256_castsi256_ps(num)) == 0 {
            return;
        }
        const EPS: f64 = 65536.0 * 1.0e-10;
        let mut sv = [_mm_setzero_si128(); 2];
        let mut parts = [_mm256_setzero_si256(); 2];
        for (h, (sv, parts)) in sv.iter_mut().zip(parts.iter_mut()).enumerate() {
            let half_lanes = |v: __m256i| {
                if h == 1 {
                    _mm256_extracti128_si256::<1>(v)
                } else {
                    _mm256_castsi256_si128(v)
                }
            };
            let s1d = _mm256_cvtepi32_pd(half_lanes(s1));
            let s12d = _mm256_cvtepi32_pd(half_lanes(s12));
            let s2d = _mm256_cvtepi32_pd(half_lanes(s2));
            let g = _mm256_div_pd(s12d, _mm256_add_pd(s1d, _mm256_set1_pd(EPS)));
            // (int32_t)(sigma2_sq - g * sigma12), clamped at 0; out of range it
            // is INT_MIN here and saturated in Rust: both clamp to 0.
            *sv = _mm_max_epi32(
                _mm256_cvttpd_epi32(_mm256_sub_pd(s2d, _mm256_mul_pd(g, s12d))),
                _mm_setzero_si128(),
            );
            let g = _mm256_min_pd(g, egl);
            let numer1 = u32x4_to_f64(_cpu, _mm_add_epi32(*sv, _mm_set1_epi32(SIGMA_NSQ)));
            // (int64_t)(g * g * sigma1_sq) + numer1: exact in f64 (< 2^53).
            let gg = _mm256_round_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(_mm256_mul_pd(
                _mm256_mul_pd(g, g),
                s1d,
            ));
            *parts = log2_parts_f64(_cpu, _mm256_add_pd(gg, numer1));
        }
        let numer1 = _mm256_add_epi32(_mm256_set_m128i(sv[1], sv[0]), nsq);
        let parts = pack_low32(_cpu, parts[0], parts[1]);
        let m = _mm256_and_si256(parts, _mm256_set1_epi32(0xffff));
        let k = _mm256_srai_epi32::<16>(parts);
        let log_tmp = _mm256_add_epi32(lut.lookup::<GATHER>(_cpu, m), _mm256_slli_epi32::<11>(k));
        let v = _mm256_sub_epi32(log_tmp, log2_u32::<GATHER>(_cpu, numer1, lut));
        acc.num_log = add_masked_i64(_cpu, acc.num_log, v, num);
    }
}

/// (a * b + 2^31) >> 32 per u32 lane (libvmaf's Q32 → Q16 square).
#[inline(always)]
fn mul_q32(_cpu: Avx2, a: __m256i, b: __m256i) -> __m256i {
    // SAFETY: `_cpu` proves AVX2; the intrinsics here read and write no memory.
    unsafe {
        let round = _mm256_set1_epi64x(1 << 31);
        let even = _mm256_mul_epu32(a, b);
        let odd = _mm256_mul_epu32(_mm256_srli_epi64::<32>(a), _mm256_srli_epi64::<32>(b));
        let even = _mm256_srli_epi64::<32>(_mm256_add_epi64(even, round));
        let odd = _mm256_add_epi64(odd, round);
        _mm256_blend_epi32::<0b1010_1010>(even, odd)
    }
}

// ---- vif_statistic --------------------------------------------------------

/// Quantity order in pair blocks and row arrays. 8-bit blocks: r, d, rr, dd,
/// rd (squares offset); 16-bit blocks: r, d (offset), then each square as
/// high and low halves (offset). Row arrays (horizontal input), always:
/// mu1, mu2, rr_hi, rr_lo, dd_hi, dd_lo, rd_hi, rd_lo.
pub(super) const ROW_QUANTITIES: usize = 8;

/// One group of eight columns' sigmas as the statistic's loop reads them:
/// sigma1_sq, sigma2_sq, sigma12 and the lanes' validity, eight i32 each.
const SIG_GROUP: usize = 32;

/// Builds the pair block of virtual row `v`: rows reflect(v), reflect(v+1).
#[inline(always)]
pub(super) fn build_block<T: Avx2Sample, const NQ: usize>(
    _cpu: Avx2,
    r: &Plane<T>,
    d: &Plane<T>,
    v: isize,
    chunks16: usize,
    block: &mut [i32],
) {
    // SAFETY: `_cpu` proves AVX2; the stores stay in `block` (below).
    unsafe {
        let h = r.height;
        let (a, b) = (reflect(v, h), reflect(v + 1, h));
        let (ra_row, rb_row, da_row, db_row) = (r.row(a), r.row(b), d.row(a), d.row(b));
        let off = _mm256_set1_epi16(i16::MIN);
        assert!(block.len() >= chunks16 * 2 * NQ * 8 && NQ <= ROW_QUANTITIES);
        let out = block.as_mut_ptr();
        for c in 0..chunks16 {
            let j = 16 * c;
            let ra = in_order(_cpu, T::load16(_cpu, ra_row, j));
            let rb = in_order(_cpu, T::load16(_cpu, rb_row, j));
            let da = in_order(_cpu, T::load16(_cpu, da_row, j));
            let db = in_order(_cpu, T::load16(_cpu, db_row, j));
            let mut q = [(ra, rb); ROW_QUANTITIES];
            q[1] = (da, db);
            if !T::WIDE {
                // 8 bits: r^2, d^2, r*d fit u16; offset for vpmaddwd.
                let sq = |x: __m256i, y: __m256i| _mm256_xor_si256(_mm256_mullo_epi16(x, y), off);
                q[2] = (sq(ra, ra), sq(rb, rb));
                q[3] = (sq(da, da), sq(db, db));
                q[4] = (sq(ra, da), sq(rb, db));
            } else {
                // Samples back to u16 for the 32-bit products, split in halves.
                let (ua, ub) = (_mm256_xor_si256(ra, off), _mm256_xor_si256(rb, off));
                let (va, vb) = (_mm256_xor_si256(da, off), _mm256_xor_si256(db, off));
                let hi = |x: __m256i, y: __m256i| _mm256_xor_si256(_mm256_mulhi_epu16(x, y), off);
                let lo = |x: __m256i, y: __m256i| _mm256_xor_si256(_mm256_mullo_epi16(x, y), off);
                q[2] = (hi(ua, ua), hi(ub, ub));
                q[3] = (lo(ua, ua), lo(ub, ub));
                q[4] = (hi(va, va), hi(vb, vb));
                q[5] = (lo(va, va), lo(vb, vb));
                q[6] = (hi(ua, va), hi(ub, vb));
                q[7] = (lo(ua, va), lo(ub, vb));
            }
            // SAFETY: chunk c covers elements c * 2 * NQ * 8 .. (c + 1) * 2 * NQ * 8
            // of `block` (asserted above).
            let base = out.add(c * 2 * NQ * 8);
            for (k, &(x, y)) in q.iter().enumerate().take(NQ) {
                _mm256_storeu_si256(base.add(k * 8) as *mut __m256i, _mm256_unpacklo_epi16(x, y));
                _mm256_storeu_si256(base.add((NQ + k) * 8) as *mut __m256i, _mm256_unpackhi_epi16(x, y));
            }
        }
    }
}

#[target_feature(enable = "avx2")]
fn stat<T: Avx2Sample, const NQ: usize, const GATHER: bool>(
    r: &Plane<T>,
    d: &Plane<T>,
    p: &StatParams,
    scratch: &mut Scratch,
) -> VifSums {
    let filt = FILTERS[p.scale];
    let half = filt.len() / 2;
    let (w, h) = (r.width, r.height);
    if w == 0 || h == 0 {
        return VifSums::default();
    }
    let cpu = Avx2::here();
    let (terms, n_terms) = terms(filt);
    let terms = &terms[..n_terms];
    let coefs: [__m256i; MAX_TERMS] = std::array::from_fn(|t| coef(cpu, &terms[t.min(n_terms - 1)]));
    let chunks16 = w.div_ceil(16);
    let chunks8 = 2 * chunks16;
    let block_len = chunks8 * NQ * 8;
    // Output rows go in two passes, even then odd, when every term's offset
    // has one parity (all but the split scale-3 filter): a pass then reads
    // blocks of one parity only, and the ring is half as big.
    let one_parity = terms.iter().all(|t| (t.off - terms[0].off) % 2 == 0);
    let (passes, step, ring) = if one_parity { (2, 2, half + 1) } else { (1, 1, 2 * half + 1) };
    let slot_of = |v: isize| v.div_euclid(step as isize).rem_euclid(ring as isize) as usize;
    let xlen = MAX_HALF + 16 * chunks16 + 64;
    scratch.i16s.resize(ROW_QUANTITIES * xlen, 0);
    let blocks = on_cache_line(&mut scratch.i32s, ring * block_len);
    let xs = &mut scratch.i16s;
    scratch.sigmas.resize(SIG_GROUP * (2 * chunks8 + 2), 0);
    let sig = &mut scratch.sigmas;
    let lut = log2_lut();
    let egl = _mm256_set1_pd(p.enhn_gain_limit);
    let mut acc = StatAcc::new(cpu);

    let bias31 = _mm256_set1_epi32(i32::MIN);
    let off16 = _mm256_set1_epi32(0x8000);
    let low16 = _mm256_set1_epi32(0xffff);
    let mu_round = _mm256_set1_epi32(p.mu.round as i32);
    let mu_shift = _mm_cvtsi32_si128(p.mu.shift as i32);
    let sq_round = _mm256_set1_epi32(p.sq.round as i32);
    let sq_shift = _mm_cvtsi32_si128(p.sq.shift as i32);
    let sq_up = _mm_cvtsi32_si128(16 - p.sq.shift as i32);

    for pass in 0..passes {
        let mut built = pass as isize - half as isize - step as isize;
        for i in (pass..h).step_by(step) {
            let top = (i + half) as isize;
            while built < top {
                built += step as isize;
                let slot = slot_of(built);
                build_block::<T, NQ>(
                    cpu,
                    r,
                    d,
                    built,
                    chunks16,
                    &mut blocks[slot * block_len..(slot + 1) * block_len],
                );
            }
            // Vertical pass: row arrays for columns 0..8 * chunks8.
            let slots: [usize; MAX_TERMS] =
                std::array::from_fn(|t| slot_of(i as isize + terms[t.min(n_terms - 1)].off));
            let bp = blocks.as_ptr();
            let xp = xs.as_mut_ptr();
            for c in 0..chunks8 {
                let mut a = [_mm256_setzero_si256(); NQ];
                for t in 0..n_terms {
                    // SAFETY: slot < ring and c < chunks8: inside the ring.
                    let src = unsafe { bp.add(slots[t] * block_len + c * NQ * 8) };
                    for (k, a) in a.iter_mut().enumerate() {
                        // SAFETY: k < NQ: the 8 elements read lie in chunk c.
                        let v = unsafe { _mm256_loadu_si256(src.add(k * 8) as *const __m256i) };
                        *a = _mm256_add_epi32(*a, _mm256_madd_epi16(v, coefs[t]));
                    }
                }
                // Vertical results as 16-bit row values, offset for the
                // horizontal vpmaddwd: mu1, mu2, then hi/lo of each square.
                let mut x = [_mm256_setzero_si256(); ROW_QUANTITIES];
                if !T::WIDE {
                    for k in 0..2 {
                        let mu = _mm256_srli_epi32::<8>(_mm256_add_epi32(a[k], _mm256_set1_epi32(128)));
                        x[k] = _mm256_xor_si256(mu, off16);
                    }
                    for s in 0..3 {
                        let t = _mm256_xor_si256(a[2 + s], bias31);
                        x[2 + 2 * s] = _mm256_xor_si256(_mm256_srli_epi32::<16>(t), off16);
                        x[3 + 2 * s] = _mm256_xor_si256(_mm256_and_si256(t, low16), off16);
                    }
                } else {
                    for k in 0..2 {
                        let sum = _mm256_add_epi32(a[k], bias31);
                        let mu = _mm256_srl_epi32(_mm256_add_epi32(sum, mu_round), mu_shift);
                        x[k] = _mm256_xor_si256(_mm256_and_si256(mu, low16), off16);
                    }
                    for s in 0..3 {
                        let hi = _mm256_add_epi32(a[2 + 2 * s], bias31);
                        let lo = _mm256_add_epi32(a[3 + 2 * s], bias31);
                        let t = _mm256_add_epi32(
                            _mm256_sll_epi32(hi, sq_up),
                            _mm256_srl_epi32(_mm256_add_epi32(lo, sq_round), sq_shift),
                        );
                        x[2 + 2 * s] = _mm256_xor_si256(_mm256_srli_epi32::<16>(t), off16);
                        x[3 + 2 * s] = _mm256_xor_si256(_mm256_and_si256(t, low16), off16);
                    }
                }
                for (k, &v) in x.iter().enumerate() {
                    // SAFETY: MAX_HALF + 8 * c + 8 <= xlen: inside row k of xs.
                    unsafe { store8_u16(cpu, xp.add(k * xlen + MAX_HALF + 8 * c) as *mut u16, v) };
                }
            }
            for k in 0..ROW_QUANTITIES {
                mirror(&mut xs[k * xlen..(k + 1) * xlen], w, half);
            }

            // Horizontal pass: the sigmas of even columns, then of odd ones,
            // eight a group, into `sig`; then the statistic over them in a
            // loop of its own. Fused, one iteration was ~300 instructions
            // and filled the reorder buffer, so the statistic's long chains
            // (a division, three table lookups) could not overlap the next
            // group's filter (VIF 3-9 % faster split, AMD Zen 3, 2026-12-07).
            let xp = xs.as_ptr();
            let sp = sig.as_mut_ptr();
            let mut groups = 0;
            for parity in 0..2 {
                let count = (w + 1 - parity) / 2;
                for x0 in (0..count).step_by(8) {
                    let j0 = 2 * x0 + parity;
                    let mut a = [_mm256_setzero_si256(); ROW_QUANTITIES];
                    for t in 0..n_terms {
                        let e = (MAX_HALF + j0) as isize + terms[t].off;
                        for (k, a) in a.iter_mut().enumerate() {
                            // SAFETY: e >= 0 (off >= -MAX_HALF) and the 16
                            // elements read end below MAX_HALF + w + 32 <= xlen.
                            let v = unsafe {
                                _mm256_loadu_si256(xp.offset(k as isize * xlen as isize + e) as *const __m256i)
                            };
                            *a = _mm256_add_epi32(*a, _mm256_madd_epi16(v, coefs[t]));
                        }
                    }
                    let mu1 = _mm256_add_epi32(a[0], bias31);
                    let mu2 = _mm256_add_epi32(a[1], bias31);
                    // (sum f * (hi << 16 | lo) + 2^15) >> 16, mod 2^32.
                    let q16 = |hi: __m256i, lo: __m256i| {
                        let lo = _mm256_add_epi32(_mm256_add_epi32(lo, bias31), _mm256_set1_epi32(32768));
                        _mm256_add_epi32(_mm256_add_epi32(hi, bias31), _mm256_srli_epi32::<16>(lo))
                    };
                    let s1 = _mm256_sub_epi32(q16(a[2], a[3]), mul_q32(cpu, mu1, mu1));
                    let s2 = _mm256_sub_epi32(q16(a[4], a[5]), mul_q32(cpu, mu2, mu2));
                    let s12 = _mm256_sub_epi32(q16(a[6], a[7]), mul_q32(cpu, mu1, mu2));
                    let left = (count - x0).min(8) as i32;
                    let valid = _mm256_cmpgt_epi32(
                        _mm256_set1_epi32(left),
                        _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                    );
                    // SAFETY: groups < 2 * chunks8 + 2 (each parity has at
                    // most chunks8 + 1 groups), and `sig` holds
                    // SIG_GROUP * (2 * chunks8 + 2) i32s.
                    unsafe {
                        let g = sp.add(SIG_GROUP * groups);
                        for (k, v) in [s1, s2, s12, valid].into_iter().enumerate() {
                            _mm256_storeu_si256(g.add(8 * k) as *mut __m256i, v);
                        }
                    }
                    groups += 1;
                }
            }
            for g in sig[..SIG_GROUP * groups].chunks_exact(SIG_GROUP) {
                // SAFETY: each load reads 8 of the group's 32 i32s.
                let lane = |k: usize| unsafe { _mm256_loadu_si256(g.as_ptr().add(8 * k) as *const __m256i) };
                statistic::<GATHER>(cpu, &mut acc, lane(0), lane(1), lane(2), lane(3), egl, lut);
            }
        }
    }
    acc.sums(cpu)
}

// ---- subsample ------------------------------------------------------------

#[target_feature(enable = "avx2")]
fn subsample<T: Avx2Sample>(
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
    assert!(out_r.len() >= ow * oh && out_d.len() >= ow * oh, "vif subsample: output too small");
    let cpu = Avx2::here();
    let (terms, n_terms) = terms(filt);
    let terms = &terms[..n_terms];
    let coefs: [__m256i; MAX_TERMS] = std::array::from_fn(|t| coef(cpu, &terms[t.min(n_terms - 1)]));
    let chunks16 = w.div_ceil(16);
    let xlen = MAX_HALF + 16 * chunks16 + 64;
    scratch.i16s.resize(2 * xlen, 0);
    let (xr, xd) = scratch.i16s.split_at_mut(xlen);
    let bias31 = _mm256_set1_epi32(i32::MIN);
    let round = _mm256_set1_epi32(p.mu.round as i32);
    let shift = _mm_cvtsi32_si128(p.mu.shift as i32);
    let low16 = _mm256_set1_epi32(0xffff);
    let off16 = _mm256_set1_epi32(0x8000);
    let post = |acc: __m256i| {
        let sum = if T::WIDE { _mm256_add_epi32(acc, bias31) } else { acc };
        let v = _mm256_and_si256(_mm256_srl_epi32(_mm256_add_epi32(sum, round), shift), low16);
        _mm256_xor_si256(v, off16)
    };
    for y in 0..oh {
        let i = (2 * y) as isize;
        let rows: [(usize, usize); MAX_TERMS] = std::array::from_fn(|t| {
            let off = terms[t.min(n_terms - 1)].off;
            (reflect(i + off, h), reflect(i + off + 1, h))
        });
        for c in 0..chunks16 {
            let j = 16 * c;
            let mut acc = [_mm256_setzero_si256(); 4];
            for t in 0..n_terms {
                let (a, b) = rows[t];
                let ra = in_order(cpu, T::load16(cpu, r.row(a), j));
                let rb = in_order(cpu, T::load16(cpu, r.row(b), j));
                let da = in_order(cpu, T::load16(cpu, d.row(a), j));
                let db = in_order(cpu, T::load16(cpu, d.row(b), j));
                let f = coefs[t];
                acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(_mm256_unpacklo_epi16(ra, rb), f));
                acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(_mm256_unpackhi_epi16(ra, rb), f));
                acc[2] = _mm256_add_epi32(acc[2], _mm256_madd_epi16(_mm256_unpacklo_epi16(da, db), f));
                acc[3] = _mm256_add_epi32(acc[3], _mm256_madd_epi16(_mm256_unpackhi_epi16(da, db), f));
            }
            let vr = in_order(cpu, _mm256_packus_epi32(post(acc[0]), post(acc[1])));
            let vd = in_order(cpu, _mm256_packus_epi32(post(acc[2]), post(acc[3])));
            // SAFETY: MAX_HALF + j + 16 <= xlen, the length of xr and xd.
            unsafe {
                _mm256_storeu_si256(xr.as_mut_ptr().add(MAX_HALF + j) as *mut __m256i, vr);
                _mm256_storeu_si256(xd.as_mut_ptr().add(MAX_HALF + j) as *mut __m256i, vd);
            }
        }
        mirror(xr, w, half);
        mirror(xd, w, half);
        // Horizontal pass on even columns only: those decimation keeps.
        let mut x0 = 0;
        while x0 < ow {
            let mut acc = [_mm256_setzero_si256(); 2];
            for t in 0..n_terms {
                let e = (MAX_HALF + 2 * x0) as isize + terms[t].off;
                // SAFETY: e >= 0; the 16 elements read end below
                // MAX_HALF + w + 32 <= xlen.
                let (vr, vd) = unsafe {
                    (
                        _mm256_loadu_si256(xr.as_ptr().offset(e) as *const __m256i),
                        _mm256_loadu_si256(xd.as_ptr().offset(e) as *const __m256i),
                    )
                };
                acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(vr, coefs[t]));
                acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(vd, coefs[t]));
            }
            let fin = |a: __m256i| {
                let sum = _mm256_add_epi32(_mm256_add_epi32(a, bias31), _mm256_set1_epi32(32768));
                _mm256_srli_epi32::<16>(sum)
            };
            let n = (ow - x0).min(8);
            let dst = y * ow + x0;
            if n == 8 {
                // SAFETY: dst + 8 <= ow * oh <= out lengths (asserted).
                unsafe {
                    store8_u16(cpu, out_r.as_mut_ptr().add(dst), fin(acc[0]));
                    store8_u16(cpu, out_d.as_mut_ptr().add(dst), fin(acc[1]));
                }
            } else {
                let mut tmp = [0u16; 8];
                // SAFETY: `tmp` holds 8 u16.
                unsafe { store8_u16(cpu, tmp.as_mut_ptr(), fin(acc[0])) };
                out_r[dst..dst + n].copy_from_slice(&tmp[..n]);
                // SAFETY: as above.
                unsafe { store8_u16(cpu, tmp.as_mut_ptr(), fin(acc[1])) };
                out_d[dst..dst + n].copy_from_slice(&tmp[..n]);
            }
            x0 += 8;
        }
    }
}
