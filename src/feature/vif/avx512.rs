//! AVX-512 twins of the VIF kernels (libvmaf `integer_vif.c`:
//! `vif_statistic_8/16` and `vif_subsample_rd_8/16`), bit for bit with
//! `scalar.rs`, built on `avx2.rs` (same pair blocks, offsets and log2
//! block table; read that module's doc first).
//!
//! Statistic: both filter passes on 16 columns per register (`vpmaddwd` on
//! zmm): the pair blocks are built 32 columns a step and laid out joined
//! (each quantity's 16 column pairs side by side), so the vertical pass
//! reads each with one 512-bit load; the horizontal pass reads 32 i16 row
//! values (16 pairs) at once. The ring of blocks starts on a cache line,
//! and the vertical pass sweeps two output rows at once, loading each block
//! chunk once for both (the ring is L2-sized; those loads bounded it).
//! Where the CPU has VNNI (`KERNELS_VNNI`, level avx512vnni) each filter
//! tap is one `vpdpwssd` instead of `vpmaddwd` + `vpaddd`, one instruction
//! fewer per tap on the two ports that run 512-bit vector work: 12 % faster
//! on an Intel Xeon (2026-12-04); no faster on an AMD EPYC (2026-12-03),
//! which runs one zmm multiply-add a cycle either way. The per-pixel
//! statistic runs on 16 lanes with mask
//! registers (same operations as the AVX2 one, no FMA; its sums are
//! integer, so lane order does not matter); with an irregular log2 table it
//! falls back to the AVX2 statistic on each 8-lane half. Subsampling runs
//! on 32 columns (vertical) and 16 outputs (horizontal). The slice
//! statistic reuses the AVX2 kernel.

use std::arch::x86_64::*;

use super::avx2::{
    self, coef, log2_lut, mirror, statistic, terms, Avx2, Avx2Sample, StatAcc, MAX_TERMS, ROW_QUANTITIES,
};
use super::scalar;
use super::{on_cache_line, reflect, Kernels, Plane, Scratch, StatParams, SubsampleParams, VifSums, FILTERS, MAX_HALF};

/// Proof that the CPU has AVX-512 F/BW/DQ/VL and AVX2, for the
/// `#[inline(always)]` helpers below (as `avx2::Avx2` is for that module's):
/// only [`Avx512::here`], a `#[target_feature]` fn, makes one.
#[derive(Clone, Copy)]
struct Avx512(Avx2);

impl Avx512 {
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
    #[inline]
    fn here() -> Self {
        Avx512(Avx2::here())
    }
}

/// Proof that the CPU also has AVX-512 VNNI: only [`Avx512Vnni::here`], a
/// `#[target_feature]` fn, makes one.
#[derive(Clone, Copy)]
struct Avx512Vnni(Avx512);

impl Avx512Vnni {
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
    #[inline]
    fn here() -> Self {
        Avx512Vnni(Avx512::here())
    }
}

/// How a filter tap joins its accumulator, the one thing the VNNI kernels
/// change: `vpmaddwd` then `vpaddd`, or VNNI's `vpdpwssd`, which does both
/// in one instruction. The same i32 sum either way: both wrap mod 2^32,
/// and no sum here leaves the i32 range anyway (the operands are offset
/// to |x| <= 2^15 and the coefficients are positive, summing to 2^16).
/// On an Intel Xeon VIF runs 12 % faster with the fused form.
trait Taps: Copy {
    fn avx512(self) -> Avx512;
    /// acc + v[2i] * c[2i] + v[2i + 1] * c[2i + 1] per i32 lane.
    fn tap(self, acc: __m512i, v: __m512i, c: __m512i) -> __m512i;
}

impl Taps for Avx512 {
    #[inline(always)]
    fn avx512(self) -> Avx512 {
        self
    }
    #[inline(always)]
    fn tap(self, acc: __m512i, v: __m512i, c: __m512i) -> __m512i {
        // SAFETY: `self` proves AVX-512 BW; the intrinsics read and write no memory.
        unsafe { _mm512_add_epi32(acc, _mm512_madd_epi16(v, c)) }
    }
}

impl Taps for Avx512Vnni {
    #[inline(always)]
    fn avx512(self) -> Avx512 {
        self.0
    }
    #[inline(always)]
    fn tap(self, acc: __m512i, v: __m512i, c: __m512i) -> __m512i {
        // SAFETY: `self` proves AVX-512 VNNI; the intrinsic reads and writes no memory.
        unsafe { _mm512_dpwssd_epi32(acc, v, c) }
    }
}

/// The kernels, the log2 lookups as scalar loads.
pub(super) const KERNELS: Kernels = table::<false, false>();
/// The kernels, the log2 lookups as one `vpgatherdd` (`simd::fast_gathers`).
pub(super) const KERNELS_GATHER: Kernels = table::<false, true>();
/// The kernels with VNNI's fused multiply-add in the filter passes.
pub(super) const KERNELS_VNNI: Kernels = table::<true, false>();
/// The VNNI kernels with gathered lookups.
pub(super) const KERNELS_VNNI_GATHER: Kernels = table::<true, true>();

const fn table<const VNNI: bool, const GATHER: bool>() -> Kernels {
    Kernels {
        stat_u8: stat_u8::<VNNI, GATHER>,
        stat_u16: stat_u16::<VNNI, GATHER>,
        subsample_u8: subsample_planes::<u8, VNNI>,
        subsample_u16: subsample_planes::<u16, VNNI>,
        statistic: if GATHER { avx2::KERNELS_GATHER.statistic } else { avx2::KERNELS.statistic },
    }
}

fn available() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512dq")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx2")
}

// The entry points check the CPU (AVX-512 F/BW/DQ/VL and AVX2, else the
// scalar code; a VNNI table's kernels run without VNNI where it is
// missing) and the parameters the SIMD code supports, then call the
// `#[target_feature]` kernels, whose only precondition is those features.

fn stat_u8<const VNNI: bool, const GATHER: bool>(
    r: &Plane<u8>,
    d: &Plane<u8>,
    p: &StatParams,
    s: &mut Scratch,
) -> VifSums {
    // The 8-bit kernel is vif_statistic_8's: means >> 8, squares unshifted.
    if !available() || p.mu.shift != 8 || p.sq.shift != 0 {
        return scalar::stat(r, d, p, s);
    }
    // SAFETY: the features are present (checked above and here).
    unsafe {
        if VNNI && is_x86_feature_detected!("avx512vnni") {
            stat_vnni::<u8, 5, GATHER>(r, d, p, s)
        } else {
            stat::<u8, 5, GATHER>(r, d, p, s)
        }
    }
}

fn stat_u16<const VNNI: bool, const GATHER: bool>(
    r: &Plane<u16>,
    d: &Plane<u16>,
    p: &StatParams,
    s: &mut Scratch,
) -> VifSums {
    if !available() || p.sq.shift > 16 {
        return scalar::stat(r, d, p, s);
    }
    // SAFETY: the features are present (checked above and here).
    unsafe {
        if VNNI && is_x86_feature_detected!("avx512vnni") {
            stat_vnni::<u16, 8, GATHER>(r, d, p, s)
        } else {
            stat::<u16, 8, GATHER>(r, d, p, s)
        }
    }
}

fn subsample_planes<T: Avx2Sample, const VNNI: bool>(
    r: &Plane<T>,
    d: &Plane<T>,
    p: &SubsampleParams,
    s: &mut Scratch,
    out_r: &mut [u16],
    out_d: &mut [u16],
) {
    if !available() {
        return scalar::subsample(r, d, p, s, out_r, out_d);
    }
    // SAFETY: the features are present (checked above and here).
    unsafe {
        if VNNI && is_x86_feature_detected!("avx512vnni") {
            subsample_vnni(r, d, p, s, out_r, out_d)
        } else {
            subsample(r, d, p, s, out_r, out_d)
        }
    }
}

/// Samples 32 at a time as u16 lanes (16-bit ones offset by -32768), the
/// 64-bit chunks ordered (0, 4, 1, 5, 2, 6, 3, 7) so that unpacklo/hi of
/// two give columns 0..15 and 16..31 in order.
#[inline(always)]
fn load32<T: Avx2Sample>(_cpu: Avx512, row: &[T], j: usize) -> __m512i {
    // SAFETY: `_cpu` proves AVX-512 F/BW/DQ/VL; load16 bounds its reads.
    unsafe {
        // Past the row's end: zero samples, as load16 gives them.
        let hi = if j + 16 < row.len() {
            T::load16(_cpu.0, row, j + 16)
        } else {
            _mm256_set1_epi16(if T::WIDE { i16::MIN } else { 0 })
        };
        let v = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(T::load16(_cpu.0, row, j)), hi);
        _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7), v)
    }
}

/// (a * b + 2^31) >> 32 per u32 lane (libvmaf's Q32 → Q16 square).
#[inline(always)]
fn mul_q32(_cpu: Avx512, a: __m512i, b: __m512i) -> __m512i {
    // SAFETY: `_cpu` proves AVX-512 F/BW/DQ/VL; the intrinsics here read and write no memory.
    unsafe {
        let round = _mm512_set1_epi64(1 << 31);
        let even = _mm512_mul_epu32(a, b);
        let odd = _mm512_mul_epu32(_mm512_srli_epi64::<32>(a), _mm512_srli_epi64::<32>(b));
        let even = _mm512_srli_epi64::<32>(_mm512_add_epi64(even, round));
        let odd = _mm512_add_epi64(odd, round);
        _mm512_mask_blend_epi32(0xAAAA, even, odd)
    }
}

/// Eight i32 lanes of `v` where `mask` is set, widened, added to the four
/// i64 lanes of `sum` pairwise (the sum of all lanes is what counts).
#[inline(always)]
fn add_masked_i64(_cpu: Avx512, sum: __m256i, v: __m512i, mask: __mmask16) -> __m256i {
    // SAFETY: `_cpu` proves AVX-512 F/BW/DQ/VL; the intrinsics here read and write no memory.
    unsafe {
        let wide = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(_mm512_maskz_mov_epi32(mask, v)));
        let wide = _mm512_add_epi64(
            wide,
            _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64::<1>(_mm512_maskz_mov_epi32(mask, v))),
        );
        _mm256_add_epi64(
            sum,
            _mm256_add_epi64(_mm512_castsi512_si256(wide), _mm512_extracti64x4_epi64::<1>(wide)),
        )
    }
}

/// table[m] for sixteen lanes of m in 32768..65536, through the block code
/// of `avx2::Log2Lut` (see there). With GATHER one `vpgatherdd` fetches the
/// blocks: sixteen scalar loads compile to `vpextrd`/`vpinsrd` chains, two
/// uops each on the vector ports the filter passes need. The gather made
/// VIF 8 % faster on an Intel Xeon and was no slower on an AMD EPYC (Zen
/// 4); `simd::fast_gathers` says where it is slow.
#[inline(always)]
fn lookup16<const GATHER: bool>(_cpu: Avx512, blocks: &[u32; 2048], m: __m512i) -> __m512i {
    // SAFETY: `_cpu` proves AVX-512 F/BW/DQ/VL; the gather or the loads read
    // blocks[index] with every index masked below 2048 = blocks.len().
    unsafe {
        let index = _mm512_and_si512(
            _mm512_sub_epi32(_mm512_srli_epi32::<4>(m), _mm512_set1_epi32(2048)),
            _mm512_set1_epi32(2047),
        );
        let e = if GATHER {
            _mm512_i32gather_epi32::<4>(index, blocks.as_ptr() as *const _)
        } else {
            let mut at = [0u32; 16];
            _mm512_storeu_si512(at.as_mut_ptr() as *mut _, index);
            let b = |l: usize| *blocks.get_unchecked(at[l] as usize) as i32;
            _mm512_setr_epi32(
                b(0), b(1), b(2), b(3), b(4), b(5), b(6), b(7), b(8), b(9), b(10), b(11), b(12), b(13), b(14), b(15),
            )
        };
        let i = _mm512_and_si512(m, _mm512_set1_epi32(15));
        let base = _mm512_and_si512(e, _mm512_set1_epi32(0xffff));
        let p1 = _mm512_and_si512(_mm512_srli_epi32::<16>(e), _mm512_set1_epi32(0xff));
        let p2 = _mm512_srli_epi32::<24>(e);
        // value = base + (i >= p1) + (i >= p2)
        let one = _mm512_set1_epi32(1);
        let v = _mm512_mask_add_epi32(base, _mm512_cmpge_epi32_mask(i, p1), base, one);
        _mm512_mask_add_epi32(v, _mm512_cmpge_epi32_mask(i, p2), v, one)
    }
}

/// `log2_32` on sixteen u32 lanes (>= 2^17), as `avx2::log2_u32`.
#[inline(always)]
fn log2_u32<const GATHER: bool>(_cpu: Avx512, x: __m512i, blocks: &[u32; 2048]) -> __m512i {
    // SAFETY: `_cpu` proves AVX-512 F/BW/DQ/VL; the intrinsics here read and write no memory.
    unsafe {
        let f = _mm512_castps_si512(_mm512_cvtepi32_ps(_mm512_srli_epi32::<8>(x)));
        let k = _mm512_sub_epi32(_mm512_srli_epi32::<23>(f), _mm512_set1_epi32(134));
        let m = _mm512_srlv_epi32(x, k);
        _mm512_add_epi32(lookup16::<GATHER>(_cpu, blocks, m), _mm512_slli_epi32::<11>(k))
    }
}

/// For eight exact integer doubles (>= 2^17, < 2^53): m | k << 16 as i32
/// lanes (see `avx2::log2_parts_f64`).
#[inline(always)]
fn log2_parts_f64(_cpu: Avx512, y: __m512d) -> __m256i {
    // SAFETY: `_cpu` proves AVX-512 F/BW/DQ/VL; the intrinsics here read and write no memory.
    unsafe {
        let bits = _mm512_castpd_si512(y);
        let m = _mm512_or_si512(
            _mm512_and_si512(_mm512_srli_epi64::<37>(bits), _mm512_set1_epi64(0x7fff)),
            _mm512_set1_epi64(0x8000),
        );
        let k = _mm512_sub_epi64(_mm512_srli_epi64::<52>(bits), _mm512_set1_epi64(1038));
        _mm512_cvtepi64_epi32(_mm512_or_si512(m, _mm512_slli_epi64::<16>(k)))
    }
}

/// `accumulate` on sixteen pixels (lanes in `valid`), the same operations
/// as `avx2::statistic` (no FMA; sums are integer, so lane order is free).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn statistic16<const GATHER: bool>(
    _cpu: Avx512,
    acc: &mut StatAcc,
    s1: __m512i,
    s2: __m512i,
    s12: __m512i,
    valid: __mmask16,
    egl: f64,
    blocks: &[u32; 2048],
) {
    // SAFETY: `_cpu` proves AVX-512 F/BW/DQ/VL; the intrinsics here read and write no memory.
    unsafe {
        use super::SIGMA_NSQ;
        let zero = _mm512_setzero_si512();
        let s2 = _mm512_max_epi32(s2, zero);
        let log = _mm512_cmpgt_epi32_mask(s1, _mm512_set1_epi32(SIGMA_NSQ - 1)) & valid;
        let non = valid & !log;
        if non != 0 {
            acc.den_non_log += non.count_ones() as i64;
            acc.num_non_log = add_masked_i64(_cpu, acc.num_non_log, s2, non);
        }
        if log == 0 {
            return;
        }
        let nsq = _mm512_set1_epi32(SIGMA_NSQ);
        let log_s1 = log2_u32::<GATHER>(_cpu, _mm512_add_epi32(s1, nsq), blocks);
        let den = _mm512_sub_epi32(log_s1, _mm512_set1_epi32(2048 * 17));
        acc.den_log = add_masked_i64(_cpu, acc.den_log, den, log);
        let num = log & _mm512_cmpgt_epi32_mask(s12, zero) & _mm512_cmpgt_epi32_mask(s2, zero);
        if num == 0 {
            return;
        }
        const EPS: f64 = 65536.0 * 1.0e-10;
        let egl = _mm512_set1_pd(egl);
        let mut sv = [_mm256_setzero_si256(); 2];
        let mut parts = [_mm256_setzero_si256(); 2];
        for (h, (sv, parts)) in sv.iter_mut().zip(parts.iter_mut()).enumerate() {
            let half_lanes = |v: __m512i| {
                if h == 1 {
                    _mm512_extracti64x4_epi64::<1>(v)
                } else {
                    _mm512_castsi512_si256(v)
                }
            };
            let s1d = _mm512_cvtepi32_pd(half_lanes(s1));
            let s12d = _mm512_cvtepi32_pd(half_lanes(s12));
            let s2d = _mm512_cvtepi32_pd(half_lanes(s2));
            let g = _mm512_div_pd(s12d, _mm512_add_pd(s1d, _mm512_set1_pd(EPS)));
            // (int32_t)(sigma2_sq - g * sigma12) clamped at 0; out of range the
            // conversion gives INT_MIN, which clamps to 0 as in Rust.
            *sv = _mm256_max_epi32(
                _mm512_cvttpd_epi32(_mm512_sub_pd(s2d, _mm512_mul_pd(g, s12d))),
                _mm256_setzero_si256(),
            );
            let g = _mm512_min_pd(g, egl);
            let numer1 = _mm512_cvtepu32_pd(_mm256_add_epi32(*sv, _mm256_set1_epi32(SIGMA_NSQ)));
            let gg = _mm512_roundscale_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(_mm512_mul_pd(
                _mm512_mul_pd(g, g),
                s1d,
            ));
            *parts = log2_parts_f64(_cpu, _mm512_add_pd(gg, numer1));
        }
        let join = |lo: __m256i, hi: __m256i| _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi);
        let numer1 = _mm512_add_epi32(join(sv[0], sv[1]), nsq);
        let parts = join(parts[0], parts[1]);
        let m = _mm512_and_si512(parts, _mm512_set1_epi32(0xffff));
        let k = _mm512_srai_epi32::<16>(parts);
        let log_tmp = _mm512_add_epi32(lookup16::<GATHER>(_cpu, blocks, m), _mm512_slli_epi32::<11>(k));
        let v = _mm512_sub_epi32(log_tmp, log2_u32::<GATHER>(_cpu, numer1, blocks));
        acc.num_log = add_masked_i64(_cpu, acc.num_log, v, num);
    }
}

/// The pair block of virtual row `v` (rows reflect(v), reflect(v + 1)),
/// as `avx2::build_block` computes it but 32 columns a step and joined:
/// chunk c (columns 16c..16c + 16) holds quantity k's 16 pairs, in column
/// order, at `c * NQ * 16 + k * 16`, so the vertical pass reads each with
/// one 512-bit load (the AVX2 layout keeps the two 8-column halves apart).
#[inline(always)]
fn build_block<T: Avx2Sample, const NQ: usize>(
    _cpu: Avx512,
    r: &Plane<T>,
    d: &Plane<T>,
    v: isize,
    chunks32: usize,
    block: &mut [i32],
) {
    // SAFETY: `_cpu` proves AVX-512 F/BW/DQ/VL; the stores stay in `block` (below).
    unsafe {
        let h = r.height;
        let (a, b) = (reflect(v, h), reflect(v + 1, h));
        let (ra_row, rb_row, da_row, db_row) = (r.row(a), r.row(b), d.row(a), d.row(b));
        let off = _mm512_set1_epi16(i16::MIN);
        assert!(block.len() >= chunks32 * 2 * NQ * 16 && NQ <= ROW_QUANTITIES);
        let out = block.as_mut_ptr();
        for c in 0..chunks32 {
            let j = 32 * c;
            // load32's chunk order: unpacklo/hi give columns 0..15 and 16..31.
            let (ra, rb) = (load32(_cpu, ra_row, j), load32(_cpu, rb_row, j));
            let (da, db) = (load32(_cpu, da_row, j), load32(_cpu, db_row, j));
            let mut q = [(ra, rb); ROW_QUANTITIES];
            q[1] = (da, db);
            if !T::WIDE {
                // 8 bits: r^2, d^2, r*d fit u16; offset for vpmaddwd.
                let sq = |x: __m512i, y: __m512i| _mm512_xor_si512(_mm512_mullo_epi16(x, y), off);
                q[2] = (sq(ra, ra), sq(rb, rb));
                q[3] = (sq(da, da), sq(db, db));
                q[4] = (sq(ra, da), sq(rb, db));
            } else {
                // Samples back to u16 for the 32-bit products, split in halves.
                let (ua, ub) = (_mm512_xor_si512(ra, off), _mm512_xor_si512(rb, off));
                let (va, vb) = (_mm512_xor_si512(da, off), _mm512_xor_si512(db, off));
                let hi = |x: __m512i, y: __m512i| _mm512_xor_si512(_mm512_mulhi_epu16(x, y), off);
                let lo = |x: __m512i, y: __m512i| _mm512_xor_si512(_mm512_mullo_epi16(x, y), off);
                q[2] = (hi(ua, ua), hi(ub, ub));
                q[3] = (lo(ua, ua), lo(ub, ub));
                q[4] = (hi(va, va), hi(vb, vb));
                q[5] = (lo(va, va), lo(vb, vb));
                q[6] = (hi(ua, va), hi(ub, vb));
                q[7] = (lo(ua, va), lo(ub, vb));
            }
            // SAFETY: chunks 2c and 2c + 1 cover elements c * 2 * NQ * 16 ..
            // (c + 1) * 2 * NQ * 16 of `block` (asserted above).
            let base = out.add(c * 2 * NQ * 16);
            for (k, &(x, y)) in q.iter().enumerate().take(NQ) {
                _mm512_storeu_si512(base.add(k * 16) as *mut _, _mm512_unpacklo_epi16(x, y));
                _mm512_storeu_si512(base.add((NQ + k) * 16) as *mut _, _mm512_unpackhi_epi16(x, y));
            }
        }
    }
}

/// What turns the vertical sums into the 16-bit row values the horizontal
/// pass reads (libvmaf's shifts, and offsets for `vpmaddwd`).
struct PostVertical {
    bias31: __m512i,
    off16: __m512i,
    low16: __m512i,
    mu_round: __m512i,
    mu_shift: __m128i,
    sq_round: __m512i,
    sq_shift: __m128i,
    sq_up: __m128i,
}

/// One sweep of the vertical pass over the ring of pair blocks.
struct VerticalPass<'a> {
    /// The ring: slots of `block_len` i32s.
    blocks: &'a [i32],
    block_len: usize,
    /// Ring slot of each block read, in term order (see `stat`).
    slots: &'a [usize],
    coefs: &'a [__m512i],
    chunks16: usize,
    /// Row set 0 (ROW_QUANTITIES rows of `xlen`), then row set 1.
    xs: &'a mut [i16],
    xlen: usize,
}

impl VerticalPass<'_> {
    /// ROWS output rows (1, or 2 when `slots` has one read more than
    /// `coefs`): row r takes read u with term u - r. Each block chunk is
    /// loaded once for both rows.
    #[inline(always)]
    fn run<T: Avx2Sample, const NQ: usize, const ROWS: usize>(&mut self, taps: impl Taps, post: &PostVertical) {
        let _cpu = taps.avx512();
        let n_terms = self.coefs.len();
        assert!(self.slots.len() == n_terms + ROWS - 1 && (1..=2).contains(&ROWS));
        assert!(self.slots.iter().all(|&slot| (slot + 1) * self.block_len <= self.blocks.len()));
        assert!(self.chunks16 * NQ * 16 <= self.block_len);
        assert!(MAX_HALF + 16 * self.chunks16 <= self.xlen && ROWS * ROW_QUANTITIES * self.xlen <= self.xs.len());
        let (bp, xp) = (self.blocks.as_ptr(), self.xs.as_mut_ptr());
        // SAFETY: `_cpu` proves AVX-512 F/BW/DQ/VL. By the asserts above:
        // reads of chunk c2 < chunks16 of a slot, quantity k < NQ (16
        // i32s at slot * block_len + (c2 * NQ + k) * 16) stay inside the
        // slot, inside `blocks`; writes of 16 i16s at MAX_HALF + 16 * c2
        // stay inside row k of row set row < ROWS, inside `xs`.
        unsafe {
            let PostVertical { bias31, off16, low16, mu_round, mu_shift, sq_round, sq_shift, sq_up } = *post;
            for c2 in 0..self.chunks16 {
                let c = 2 * c2;
                let mut acc = [[_mm512_setzero_si512(); NQ]; ROWS];
                for (u, &slot) in self.slots.iter().enumerate() {
                    let src = bp.add(slot * self.block_len + c2 * NQ * 16);
                    for k in 0..NQ {
                        let v = _mm512_loadu_si512(src.add(k * 16) as *const _);
                        for (row, a) in acc.iter_mut().enumerate() {
                            // Term u - row of this row, if it has one.
                            if u >= row && u - row < n_terms {
                                a[k] = taps.tap(a[k], v, self.coefs[u - row]);
                            }
                        }
                    }
                }
                for (row, a) in acc.iter().enumerate() {
                    let mut x = [_mm512_setzero_si512(); ROW_QUANTITIES];
                    if !T::WIDE {
                        for k in 0..2 {
                            let mu = _mm512_srli_epi32::<8>(_mm512_add_epi32(a[k], _mm512_set1_epi32(128)));
                            x[k] = _mm512_xor_si512(mu, off16);
                        }
                        for s in 0..3 {
                            let t = _mm512_xor_si512(a[2 + s], bias31);
                            x[2 + 2 * s] = _mm512_xor_si512(_mm512_srli_epi32::<16>(t), off16);
                            x[3 + 2 * s] = _mm512_xor_si512(_mm512_and_si512(t, low16), off16);
                        }
                    } else {
                        for k in 0..2 {
                            let sum = _mm512_add_epi32(a[k], bias31);
                            let mu = _mm512_srl_epi32(_mm512_add_epi32(sum, mu_round), mu_shift);
                            x[k] = _mm512_xor_si512(_mm512_and_si512(mu, low16), off16);
                        }
                        for s in 0..3 {
                            let hi = _mm512_add_epi32(a[2 + 2 * s], bias31);
                            let lo = _mm512_add_epi32(a[3 + 2 * s], bias31);
                            let t = _mm512_add_epi32(
                                _mm512_sll_epi32(hi, sq_up),
                                _mm512_srl_epi32(_mm512_add_epi32(lo, sq_round), sq_shift),
                            );
                            x[2 + 2 * s] = _mm512_xor_si512(_mm512_srli_epi32::<16>(t), off16);
                            x[3 + 2 * s] = _mm512_xor_si512(_mm512_and_si512(t, low16), off16);
                        }
                    }
                    let set = xp.add(row * ROW_QUANTITIES * self.xlen);
                    for (k, &v) in x.iter().enumerate() {
                        // Every lane is < 65536: the truncating pack is exact.
                        let v = _mm512_cvtepi32_epi16(v);
                        _mm256_storeu_si256(set.add(k * self.xlen + MAX_HALF + 8 * c) as *mut __m256i, v);
                    }
                }
            }
        }
    }
}

/// Defines `$name`, the statistic (one plane pair at one scale), with the
/// target features `$features` and the taps `$taps` (`Avx512` or
/// `Avx512Vnni`, made here, where the features are on): one body, two
/// instruction sets. A macro, not a generic fn: `#[target_feature]` must
/// sit on the fn whose intrinsics it allows.
macro_rules! stat_kernel {
    ($name:ident, $features:literal, $taps:expr) => {
        #[target_feature(enable = $features)]
        fn $name<T: Avx2Sample, const NQ: usize, const GATHER: bool>(
            r: &Plane<T>,
            d: &Plane<T>,
            p: &StatParams,
            scratch: &mut Scratch,
        ) -> VifSums {
            let taps = $taps;
            let filt = FILTERS[p.scale];
            let half = filt.len() / 2;
            let (w, h) = (r.width, r.height);
            if w == 0 || h == 0 {
                return VifSums::default();
            }
            let cpu = taps.avx512();
            let (terms, n_terms) = terms(filt);
            let terms = &terms[..n_terms];
            let coefs: [__m512i; MAX_TERMS] = std::array::from_fn(|t| {
                _mm512_broadcast_i32x4(_mm256_castsi256_si128(coef(cpu.0, &terms[t.min(n_terms - 1)])))
            });
            let chunks16 = w.div_ceil(16);
            // Blocks are built 32 columns at a time: room for an even chunk count.
            let chunks32 = w.div_ceil(32);
            let block_len = 2 * chunks32 * NQ * 16;
            // Even rows then odd ones when every term's offset has one parity (as
            // in avx2.rs): a pass reads blocks of one parity, the ring is half size.
            let one_parity = terms.iter().all(|t| (t.off - terms[0].off) % 2 == 0);
            let (passes, step, ring) = if one_parity { (2, 2, half + 1) } else { (1, 1, 2 * half + 1) };
            // The vertical pass sweeps two output rows, i and i + step, when the
            // terms' rows are `step` apart (every scale's filter): row i + step
            // reads row i's blocks shifted by one term, so a sweep loads n_terms + 1
            // blocks instead of 2 * n_terms. The ring (hundreds of KiB at 1080p)
            // lives in L2, and those loads bounded the pass. One more ring slot
            // holds the extra block.
            let paired = terms.iter().enumerate().all(|(t, x)| x.off == terms[0].off + (t * step) as isize);
            let ring = ring + paired as usize;
            let slot_of = |v: isize| v.div_euclid(step as isize).rem_euclid(ring as isize) as usize;
            // Room for 32-element reads past the last column.
            let xlen = MAX_HALF + 16 * chunks16 + 96;
            scratch.i16s.resize(2 * ROW_QUANTITIES * xlen, 0);
            let blocks = on_cache_line(&mut scratch.i32s, ring * block_len);
            let xs = &mut scratch.i16s;
            let lut = log2_lut();
            let egl = _mm256_set1_pd(p.enhn_gain_limit);
            let mut acc = StatAcc::new(cpu.0);

            let bias31 = _mm512_set1_epi32(i32::MIN);
            let off16 = _mm512_set1_epi32(0x8000);
            let low16 = _mm512_set1_epi32(0xffff);
            let mu_round = _mm512_set1_epi32(p.mu.round as i32);
            let mu_shift = _mm_cvtsi32_si128(p.mu.shift as i32);
            let sq_round = _mm512_set1_epi32(p.sq.round as i32);
            let sq_shift = _mm_cvtsi32_si128(p.sq.shift as i32);
            let sq_up = _mm_cvtsi32_si128(16 - p.sq.shift as i32);
            let post = PostVertical { bias31, off16, low16, mu_round, mu_shift, sq_round, sq_shift, sq_up };
            let lane8 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

            for pass in 0..passes {
                let mut built = pass as isize - half as isize - step as isize;
                let mut i = pass;
                while i < h {
                    // Rows i and, where paired and inside the plane, i + step.
                    let rows = if paired && i + step < h { 2 } else { 1 };
                    let top = (i + (rows - 1) * step + half) as isize;
                    while built < top {
                        built += step as isize;
                        let slot = slot_of(built);
                        build_block::<T, NQ>(
                            cpu,
                            r,
                            d,
                            built,
                            chunks32,
                            &mut blocks[slot * block_len..(slot + 1) * block_len],
                        );
                    }
                    // Vertical pass, 16 columns (one joined block chunk) a step.
                    // Read u (u < n_terms + rows - 1) is the block of row i's term u
                    // and, when paired, of row i + step's term u - 1.
                    let reads = n_terms + rows - 1;
                    let slots: [usize; MAX_TERMS + 1] = std::array::from_fn(|u| {
                        let t = u.min(reads - 1);
                        let off = if t < n_terms { terms[t].off } else { terms[n_terms - 1].off + step as isize };
                        slot_of(i as isize + off)
                    });
                    let mut vp = VerticalPass {
                        blocks,
                        block_len,
                        slots: &slots[..reads],
                        coefs: &coefs[..n_terms],
                        chunks16,
                        xs,
                        xlen,
                    };
                    if rows == 2 {
                        vp.run::<T, NQ, 2>(taps, &post);
                    } else {
                        vp.run::<T, NQ, 1>(taps, &post);
                    }
                    for k in 0..rows * ROW_QUANTITIES {
                        mirror(&mut xs[k * xlen..(k + 1) * xlen], w, half);
                    }
                    for r in 0..rows {
                        // Horizontal pass and statistic: even columns, then odd ones,
                        // 16 a step.
                        // SAFETY: row set r of xs: r < 2, and xs holds two.
                        let xp = unsafe { xs.as_ptr().add(r * ROW_QUANTITIES * xlen) };
                        for parity in 0..2 {
                            let count = (w + 1 - parity) / 2;
                            let mut x0 = 0;
                            while x0 < count {
                                let j0 = 2 * x0 + parity;
                                let mut a = [_mm512_setzero_si512(); ROW_QUANTITIES];
                                for t in 0..n_terms {
                                    let e = (MAX_HALF + j0) as isize + terms[t].off;
                                    for (k, a) in a.iter_mut().enumerate() {
                                        // SAFETY: e >= 0 (off >= -MAX_HALF) and the 32
                                        // elements read end below MAX_HALF + w + 48 <= xlen.
                                        let v = unsafe {
                                            _mm512_loadu_si512(xp.offset(k as isize * xlen as isize + e) as *const _)
                                        };
                                        *a = taps.tap(*a, v, coefs[t]);
                                    }
                                }
                                let mu1 = _mm512_add_epi32(a[0], bias31);
                                let mu2 = _mm512_add_epi32(a[1], bias31);
                                // (sum f * (hi << 16 | lo) + 2^15) >> 16, mod 2^32.
                                let q16 = |hi: __m512i, lo: __m512i| {
                                    let lo = _mm512_add_epi32(_mm512_add_epi32(lo, bias31), _mm512_set1_epi32(32768));
                                    _mm512_add_epi32(_mm512_add_epi32(hi, bias31), _mm512_srli_epi32::<16>(lo))
                                };
                                let xx = q16(a[2], a[3]);
                                let yy = q16(a[4], a[5]);
                                let xy = q16(a[6], a[7]);
                                let s1 = _mm512_sub_epi32(xx, mul_q32(cpu, mu1, mu1));
                                let s2 = _mm512_sub_epi32(yy, mul_q32(cpu, mu2, mu2));
                                let s12 = _mm512_sub_epi32(xy, mul_q32(cpu, mu1, mu2));
                                let left = (count - x0).min(16) as i32;
                                if let Some(blocks) = &lut.blocks {
                                    let valid = (((1u32 << left) - 1) & 0xffff) as __mmask16;
                                    statistic16::<GATHER>(cpu, &mut acc, s1, s2, s12, valid, p.enhn_gain_limit, blocks);
                                    x0 += 16;
                                    continue;
                                }
                                let valid_lo = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), lane8);
                                statistic::<GATHER>(
                                    cpu.0,
                                    &mut acc,
                                    _mm512_castsi512_si256(s1),
                                    _mm512_castsi512_si256(s2),
                                    _mm512_castsi512_si256(s12),
                                    valid_lo,
                                    egl,
                                    lut,
                                );
                                if left > 8 {
                                    let valid_hi = _mm256_cmpgt_epi32(_mm256_set1_epi32(left - 8), lane8);
                                    statistic::<GATHER>(
                                        cpu.0,
                                        &mut acc,
                                        _mm512_extracti64x4_epi64::<1>(s1),
                                        _mm512_extracti64x4_epi64::<1>(s2),
                                        _mm512_extracti64x4_epi64::<1>(s12),
                                        valid_hi,
                                        egl,
                                        lut,
                                    );
                                }
                                x0 += 16;
                            }
                        }
                    }
                    i += rows * step;
                }
            }
            acc.sums(cpu.0)
        }
    };
}

stat_kernel!(stat, "avx2,avx512f,avx512bw,avx512dq,avx512vl", Avx512::here());
stat_kernel!(stat_vnni, "avx2,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni", Avx512Vnni::here());

/// `avx2.rs`'s subsample (filter, then keep even rows and columns) on 32
/// columns per vertical step and 16 outputs per horizontal one.
/// (`$name` with the features `$features` and taps `$taps`, as `stat_kernel!`).
macro_rules! subsample_kernel {
    ($name:ident, $features:literal, $taps:expr) => {
        #[target_feature(enable = $features)]
        fn $name<T: Avx2Sample>(
            r: &Plane<T>,
            d: &Plane<T>,
            p: &SubsampleParams,
            scratch: &mut Scratch,
            out_r: &mut [u16],
            out_d: &mut [u16],
        ) {
            let taps = $taps;
            let filt = FILTERS[p.scale + 1];
            let half = filt.len() / 2;
            let (w, h) = (r.width, r.height);
            let (ow, oh) = (w / 2, h / 2);
            if ow == 0 || oh == 0 {
                return;
            }
            assert!(out_r.len() >= ow * oh && out_d.len() >= ow * oh, "vif subsample: output too small");
            let cpu = taps.avx512();
            let (terms, n_terms) = terms(filt);
            let terms = &terms[..n_terms];
            let coefs: [__m512i; MAX_TERMS] = std::array::from_fn(|t| {
                _mm512_broadcast_i32x4(_mm256_castsi256_si128(coef(cpu.0, &terms[t.min(n_terms - 1)])))
            });
            let chunks32 = w.div_ceil(32);
            let xlen = MAX_HALF + 32 * chunks32 + 96;
            scratch.i16s.resize(2 * xlen, 0);
            let (xr, xd) = scratch.i16s.split_at_mut(xlen);
            let bias31 = _mm512_set1_epi32(i32::MIN);
            let round = _mm512_set1_epi32(p.mu.round as i32);
            let shift = _mm_cvtsi32_si128(p.mu.shift as i32);
            let low16 = _mm512_set1_epi32(0xffff);
            let off16 = _mm512_set1_epi32(0x8000);
            let post = |acc: __m512i| {
                let sum = if T::WIDE { _mm512_add_epi32(acc, bias31) } else { acc };
                let v = _mm512_and_si512(_mm512_srl_epi32(_mm512_add_epi32(sum, round), shift), low16);
                // < 65536: the truncating pack below is exact.
                _mm512_cvtepi32_epi16(_mm512_xor_si512(v, off16))
            };
            for y in 0..oh {
                let i = (2 * y) as isize;
                let rows: [(usize, usize); MAX_TERMS] = std::array::from_fn(|t| {
                    let off = terms[t.min(n_terms - 1)].off;
                    (reflect(i + off, h), reflect(i + off + 1, h))
                });
                for c in 0..chunks32 {
                    let j = 32 * c;
                    let mut acc = [_mm512_setzero_si512(); 4];
                    for t in 0..n_terms {
                        let (a, b) = rows[t];
                        let ra = load32(cpu, r.row(a), j);
                        let rb = load32(cpu, r.row(b), j);
                        let da = load32(cpu, d.row(a), j);
                        let db = load32(cpu, d.row(b), j);
                        let f = coefs[t];
                        acc[0] = taps.tap(acc[0], _mm512_unpacklo_epi16(ra, rb), f);
                        acc[1] = taps.tap(acc[1], _mm512_unpackhi_epi16(ra, rb), f);
                        acc[2] = taps.tap(acc[2], _mm512_unpacklo_epi16(da, db), f);
                        acc[3] = taps.tap(acc[3], _mm512_unpackhi_epi16(da, db), f);
                    }
                    let packed = [post(acc[0]), post(acc[1]), post(acc[2]), post(acc[3])];
                    // SAFETY: MAX_HALF + j + 32 <= xlen, the length of xr and xd.
                    unsafe {
                        let (pr, pd) = (xr.as_mut_ptr().add(MAX_HALF + j), xd.as_mut_ptr().add(MAX_HALF + j));
                        _mm256_storeu_si256(pr as *mut __m256i, packed[0]);
                        _mm256_storeu_si256(pr.add(16) as *mut __m256i, packed[1]);
                        _mm256_storeu_si256(pd as *mut __m256i, packed[2]);
                        _mm256_storeu_si256(pd.add(16) as *mut __m256i, packed[3]);
                    }
                }
                mirror(xr, w, half);
                mirror(xd, w, half);
                // Horizontal pass on even columns only: those decimation keeps.
                let mut x0 = 0;
                while x0 < ow {
                    let mut acc = [_mm512_setzero_si512(); 2];
                    for t in 0..n_terms {
                        let e = (MAX_HALF + 2 * x0) as isize + terms[t].off;
                        // SAFETY: e >= 0; the 32 elements read end below
                        // MAX_HALF + w + 48 <= xlen.
                        let (vr, vd) = unsafe {
                            (
                                _mm512_loadu_si512(xr.as_ptr().offset(e) as *const _),
                                _mm512_loadu_si512(xd.as_ptr().offset(e) as *const _),
                            )
                        };
                        acc[0] = taps.tap(acc[0], vr, coefs[t]);
                        acc[1] = taps.tap(acc[1], vd, coefs[t]);
                    }
                    let fin = |a: __m512i| {
                        let sum = _mm512_add_epi32(_mm512_add_epi32(a, bias31), _mm512_set1_epi32(32768));
                        _mm512_cvtepi32_epi16(_mm512_srli_epi32::<16>(sum))
                    };
                    let n = (ow - x0).min(16);
                    let dst = y * ow + x0;
                    if n == 16 {
                        let (fr, fd) = (fin(acc[0]), fin(acc[1]));
                        // SAFETY: dst + 16 <= ow * oh <= out lengths (asserted).
                        unsafe {
                            _mm256_storeu_si256(out_r.as_mut_ptr().add(dst) as *mut __m256i, fr);
                            _mm256_storeu_si256(out_d.as_mut_ptr().add(dst) as *mut __m256i, fd);
                        }
                    } else {
                        let mut tmp = [0u16; 16];
                        // SAFETY: `tmp` is 32 bytes.
                        unsafe { _mm256_storeu_si256(tmp.as_mut_ptr() as *mut __m256i, fin(acc[0])) };
                        out_r[dst..dst + n].copy_from_slice(&tmp[..n]);
                        // SAFETY: as above.
                        unsafe { _mm256_storeu_si256(tmp.as_mut_ptr() as *mut __m256i, fin(acc[1])) };
                        out_d[dst..dst + n].copy_from_slice(&tmp[..n]);
                    }
                    x0 += 16;
                }
            }
        }
    };
}

subsample_kernel!(subsample, "avx2,avx512f,avx512bw,avx512dq,avx512vl", Avx512::here());
subsample_kernel!(subsample_vnni, "avx2,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni", Avx512Vnni::here());
