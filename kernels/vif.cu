// Integer VIF, libvmaf 3.2.0 (feature/integer_vif.c: vif_statistic_8/16,
// subsample_rd_8/16), the device twin of src/feature/vif/scalar.rs.
//
//   vif_stat_<scale>[_8|_16]: one block per output tile (8 rows, 112 to 124
//     columns; 128 with the halo): the input tile with its mirrored halo
//     goes to shared memory, the vertical pass (means, squares, product;
//     rounded shifts, truncations as the CPU) into shared memory, the
//     horizontal pass and the per-pixel statistic (`accumulate` in
//     src/feature/vif/mod.rs) in registers, 4 columns per thread; the
//     block's four sums (u64, wrapping = the CPU's i64 wrapping_add) are
//     added to the scale's four in sums[4 * scale ..] (atomicAdd). Scales
//     0-2 also subsample their tile for the next scale (below), from the
//     input tile already in shared memory.
//   vif_subsample_0[_8|_16]: filter with the next scale's filter and keep
//     even rows and columns, into a packed u16 plane: scale 1's input when
//     scale 0's statistic is skipped (`vif_skip_scale0`).
//   vif_zero: zeroes sums[16] before a frame's first statistic.
//
// Exactness: every integer step is the CPU's (same widths, same
// truncations, unsigned wrap-around where the CPU wraps; sums mod 2^64 are
// order-free). The few double steps are written in the CPU's order, and the
// kernels are compiled without FMA contraction, so each rounds as on the
// CPU. log2 comes from the CPU's own table, uploaded once.
#include "vmafx_compat.h"

#define VX_VIF_SIGMA_NSQ (65536 << 1)

// Unrolled filter loops on the GPU; the host emulator (plain C++) has no
// `#pragma unroll`.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__) || defined(__HIPCC_RTC__) || defined(__HIP__)
#define VX_VIF_UNROLL _Pragma("unroll")
#else
#define VX_VIF_UNROLL
#endif

__constant__ vx_u32 VX_VIF_FILTER[4][17] = {
    {489, 935, 1640, 2640, 3896, 5274, 6547, 7455, 7784, 7455, 6547, 5274, 3896, 2640, 1640, 935, 489},
    {1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244},
    {3571, 16004, 26386, 16004, 3571},
    {10904, 43728, 10904},
};

// Half filter width of scale S (17, 9, 5, 3 taps).
template <int S> struct vx_vif_half {
    static const int v = S == 0 ? 8 : S == 1 ? 4 : S == 2 ? 2 : 1;
};

// src/feature/vif/mod.rs::reflect: libvmaf's mirror (-1 -> 1, n -> n - 2),
// repeated for lines shorter than the filter.
__device__ inline int vx_vif_reflect(int i, int n) {
    if (i >= 0 && i < n) return i;
    if (n < 2) return 0;
    int period = 2 * (n - 1);
    int m = i % period;
    if (m < 0) m += period;
    return m >= n ? period - m : m;
}

// Rust's `as i32` / `as i64` from f64: NaN -> 0, saturating at the ends.
__device__ inline vx_i32 vx_vif_f64_to_i32(double v) {
    if (!(v == v)) return 0;
    if (v >= 2147483647.0) return 2147483647;
    if (v <= -2147483648.0) return -2147483647 - 1;
    return (vx_i32)v;
}

__device__ inline vx_i64 vx_vif_f64_to_i64(double v) {
    if (!(v == v)) return 0;
    if (v >= 9223372036854775807.0) return 9223372036854775807LL;
    if (v <= -9223372036854775808.0) return -9223372036854775807LL - 1;
    return (vx_i64)v;
}

// log2_32 / log2_64 of src/feature/vif/mod.rs (shifts wrap as wrapping_shr).
__device__ inline vx_i32 vx_vif_log2_32(const vx_u16 *table, vx_u32 temp) {
    int k = 16 - __clz((int)temp);
    vx_u32 m = temp >> ((unsigned)k & 31u);
    return (vx_i32)table[m & 0xffffu] + 2048 * k;
}

__device__ inline vx_i32 vx_vif_log2_64(const vx_u16 *table, vx_u64 temp) {
    int k = 48 - __clzll((long long)temp);
    vx_u64 m = temp >> ((unsigned)k & 63u);
    return (vx_i32)table[m & 0xffffu] + 2048 * k;
}

struct vx_vif_sums {
    vx_u64 num_log, den_log, num_non_log, den_non_log;
};

// src/feature/vif/mod.rs::accumulate, operation for operation. i64 sums
// are kept as u64 (two's complement, wrapping like wrapping_add).
__device__ inline void vx_vif_accumulate(vx_vif_sums &s, vx_i32 sigma1_sq, vx_i32 sigma2_sq, vx_i32 sigma12,
                                         double egl, const vx_u16 *table) {
    if (sigma2_sq < 0) sigma2_sq = 0;
    if (sigma1_sq >= VX_VIF_SIGMA_NSQ) {
        vx_i32 den = vx_vif_log2_32(table, (vx_u32)VX_VIF_SIGMA_NSQ + (vx_u32)sigma1_sq) - 2048 * 17;
        s.den_log += (vx_u64)(vx_i64)den;
        if (sigma12 > 0 && sigma2_sq > 0) {
            const double eps = 65536.0 * 1.0e-10;
            double g = (double)sigma12 / ((double)sigma1_sq + eps);
            vx_i32 sv_sq = vx_vif_f64_to_i32((double)sigma2_sq - g * (double)sigma12);
            if (sv_sq < 0) sv_sq = 0;
            g = g < egl ? g : egl;
            vx_u32 numer1 = (vx_u32)sv_sq + (vx_u32)VX_VIF_SIGMA_NSQ;
            vx_u64 numer1_tmp = (vx_u64)vx_vif_f64_to_i64(g * g * (double)sigma1_sq) + (vx_u64)numer1;
            vx_i32 num = vx_vif_log2_64(table, numer1_tmp) - vx_vif_log2_64(table, (vx_u64)numer1);
            s.num_log += (vx_u64)(vx_i64)num;
        }
    } else {
        s.num_non_log += (vx_u64)(vx_i64)sigma2_sq;
        s.den_non_log += 1;
    }
}

// The four sums over the block added to sums[0 .. 4], `red` holding
// 4 * VMAFX_BLOCK u64 (free shared memory). Order-free: sums mod 2^64.
__device__ inline void vx_vif_block_sums(vx_vif_sums s, vx_u64 *red, vx_u64 *sums) {
    const unsigned t = threadIdx.x;
    red[t] = s.num_log;
    red[VMAFX_BLOCK + t] = s.den_log;
    red[2 * VMAFX_BLOCK + t] = s.num_non_log;
    red[3 * VMAFX_BLOCK + t] = s.den_non_log;
    __syncthreads();
    for (unsigned half = VMAFX_BLOCK / 2; half > 0; half >>= 1) {
        if (t < half)
            for (int q = 0; q < 4; q++) red[q * VMAFX_BLOCK + t] += red[q * VMAFX_BLOCK + t + half];
        __syncthreads();
    }
    if (t < 4) atomicAdd(&sums[t], red[t * VMAFX_BLOCK]);
}

// Statistic tiles: 8 output rows by VX_VIF_TW(S) columns, where the tile
// with its halo is 128 columns (32 groups of 4): one thread per 4-column
// group and row in both passes, so shared memory is read 4 values at a
// time and each value loaded once per thread serves 4 outputs.
#define VX_VIF_TH 8
#define VX_VIF_CW 128
#define VX_VIF_TW(S) ((VX_VIF_CW - 2 * vx_vif_half<S>::v) & ~3)

template <typename T> struct alignas(4 * sizeof(T)) vx_vif_vec4 {
    T v[4];
};
struct alignas(16) vx_vif_u32x4 {
    vx_u32 v[4];
};

// The window of 4 + 2H values of one quantity (vector groups at .. at +
// NV - 1 of `plane`) that makes 4 horizontal outputs.
template <int S> struct vx_vif_window {
    static const int NV = (2 * vx_vif_half<S>::v + 4 + 3) / 4;
    vx_u32 v[4 * NV];
    __device__ inline vx_vif_window(const vx_vif_u32x4 *plane, int at) {
        VX_VIF_UNROLL
        for (int i = 0; i < NV; i++) {
            vx_vif_u32x4 q = plane[at + i];
            VX_VIF_UNROLL
            for (int e = 0; e < 4; e++) v[4 * i + e] = q.v[e];
        }
    }
};

// Horizontal filter of the means (u16 values): the filter is symmetric
// (f[k] == f[2H - k]), so mirrored values are added first (< 2^17) and
// each output takes H + 1 multiplies; the sum is the CPU's u32 sum.
template <int S> __device__ inline void vx_vif_hfilter_mu(const vx_vif_u32x4 *plane, int at, vx_u32 out[4]) {
    const int H = vx_vif_half<S>::v;
    vx_vif_window<S> win(plane, at);
    VX_VIF_UNROLL
    for (int o = 0; o < 4; o++) {
        vx_u32 a = VX_VIF_FILTER[S][H] * win.v[o + H];
        VX_VIF_UNROLL
        for (int k = 0; k < H; k++) a += VX_VIF_FILTER[S][k] * (win.v[o + k] + win.v[o + 2 * H - k]);
        out[o] = a;
    }
}

// Horizontal filter of the squares (u32 values) into the CPU's u64 sums.
// Scales 1-3: no 64-bit multiplies; each value split into 16-bit halves,
// two u32 sums (sum f * hi, sum f * lo; each below 65536 * 65536 as sum f
// == 65536), mirrored halves pre-added (symmetric filter), joined once per
// output: (hi << 16) + lo == the CPU's sum. This keeps them at 64
// registers (4 blocks per SM); at scale 0 (17 taps) it takes more
// registers and instructions than one IMAD.WIDE.U32 per tap, kept there.
template <int S> __device__ inline void vx_vif_hfilter_sq(const vx_vif_u32x4 *plane, int at, vx_u64 out[4]) {
    const int H = vx_vif_half<S>::v;
    vx_vif_window<S> win(plane, at);
    if (S == 0) {
        VX_VIF_UNROLL
        for (int o = 0; o < 4; o++) {
            vx_u64 a = 0;
            VX_VIF_UNROLL
            for (int k = 0; k < 2 * H + 1; k++) a += (vx_u64)VX_VIF_FILTER[S][k] * win.v[o + k];
            out[o] = a;
        }
        return;
    }
    vx_u32 hi[4 + 2 * H], lo[4 + 2 * H];
    VX_VIF_UNROLL
    for (int i = 0; i < 4 + 2 * H; i++) {
        hi[i] = win.v[i] >> 16;
        lo[i] = win.v[i] & 0xffffu;
    }
    VX_VIF_UNROLL
    for (int o = 0; o < 4; o++) {
        vx_u32 a_hi = VX_VIF_FILTER[S][H] * hi[o + H], a_lo = VX_VIF_FILTER[S][H] * lo[o + H];
        VX_VIF_UNROLL
        for (int k = 0; k < H; k++) {
            a_hi += VX_VIF_FILTER[S][k] * (hi[o + k] + hi[o + 2 * H - k]);
            a_lo += VX_VIF_FILTER[S][k] * (lo[o + k] + lo[o + 2 * H - k]);
        }
        out[o] = ((vx_u64)a_hi << 16) + a_lo;
    }
}

// One output tile of the statistic at scale S, samples of type T. WIDE:
// the vertical squares need u64 (the CPU's u64 accumulators); for 8-bit
// scale 0 they stay below 65536 * 255^2 < 2^32, so u32 gives the same.
//
// With SUB (scales 0-2) the block also makes the next scale's subsampled
// pixels of its tile, vif_subsample's arithmetic on the same input tile:
// rows ty0/2 .. ty0/2 + 3 and columns tx0/2 .. (tx0 + TW)/2 - 1 of out_r and
// out_d ((w/2) x (h/2) u16, out_stride samples a row). The tile holds every
// sample they read, mirrored as vif_subsample mirrors them: the next
// filter's half HS is below H, and TW - 2 + H + HS < 128.
template <typename T, int S, bool WIDE, bool SUB>
__device__ inline void vx_vif_stat(const vx_u8 *ref, const vx_u8 *dis, int ref_pitch, int dis_pitch, int w,
                                   int h, int mu_shift, int sq_shift, double egl, const vx_u16 *table,
                                   vx_u64 *sums, vx_u16 *out_r, vx_u16 *out_d, int out_stride) {
    const int H = vx_vif_half<S>::v;
    const int TAPS = 2 * H + 1;
    const int G = VX_VIF_CW / 4;          // 4-column groups per tile row
    const int CH = VX_VIF_TH + 2 * H;     // tile rows with the halo
    const int TW = VX_VIF_TW(S);          // output columns
    const int IN = CH * G;                // one input tile, in groups
    const int V = VX_VIF_TH * G;          // one vertical plane, in groups
    __shared__ vx_vif_vec4<T> in_r[IN], in_d[IN];
    // mu1, mu2, rr, dd, rd; the reduction reuses them after the horizontal pass.
    __shared__ vx_vif_u32x4 vplanes[5 * V];
    vx_vif_u32x4 *v_mu1 = vplanes, *v_mu2 = vplanes + V, *v_rr = vplanes + 2 * V, *v_dd = vplanes + 3 * V,
                 *v_rd = vplanes + 4 * V;
    // SUB: the next scale's filter (SN), its half, its 4 output rows
    // filtered vertically at every tile column (reference, then distorted).
    const int SN = SUB ? S + 1 : S;
    const int HS = vx_vif_half<SN>::v;
    const int SR = VX_VIF_TH / 2;
    __shared__ vx_u16 sub_v[SUB ? 2 * SR * VX_VIF_CW : 1];

    const int tx0 = blockIdx.x * TW, ty0 = blockIdx.y * VX_VIF_TH;
    // Tiles whose columns all lie inside the plane need no column mirror.
    const bool inside = tx0 - H >= 0 && tx0 - H + VX_VIF_CW <= w;
    for (int idx = threadIdx.x; idx < IN; idx += VMAFX_BLOCK) {
        int r = idx / G, g = idx - r * G;
        long long y = vx_vif_reflect(ty0 - H + r, h);
        const T *row_r = (const T *)(ref + y * ref_pitch), *row_d = (const T *)(dis + y * dis_pitch);
        const int x0 = tx0 - H + 4 * g;
        vx_vif_vec4<T> a, b;
        // One load per group where it needs no mirror and both rows are
        // aligned to it (x0 is a multiple of 4; each row is checked, as the
        // planes' pitches and producers may differ).
        if (inside && (((vx_u64)(row_r + x0) | (vx_u64)(row_d + x0)) & (sizeof(a) - 1)) == 0) {
            a = *(const vx_vif_vec4<T> *)(row_r + x0);
            b = *(const vx_vif_vec4<T> *)(row_d + x0);
        } else {
            for (int e = 0; e < 4; e++) {
                int x = x0 + e;
                if (!inside) x = vx_vif_reflect(x, w);
                a.v[e] = row_r[x];
                b.v[e] = row_d[x];
            }
        }
        in_r[idx] = a;
        in_d[idx] = b;
    }
    __syncthreads();

    // Vertical: thread (r, g) filters 4 columns of output row r.
    const vx_u32 mu_round = mu_shift == 0 ? 0u : 1u << (mu_shift - 1);
    const vx_u64 sq_round = sq_shift == 0 ? 0u : 1ull << (sq_shift - 1);
    for (int idx = threadIdx.x; idx < V; idx += VMAFX_BLOCK) {
        int r = idx / G, g = idx - r * G;
        vx_u32 a_mu1[4] = {0, 0, 0, 0}, a_mu2[4] = {0, 0, 0, 0};
        vx_vif_u32x4 o_rr, o_dd, o_rd, o_mu1, o_mu2;
        if (WIDE) {
            vx_u64 a_rr[4] = {0, 0, 0, 0}, a_dd[4] = {0, 0, 0, 0}, a_rd[4] = {0, 0, 0, 0};
            VX_VIF_UNROLL
            for (int k = 0; k < TAPS; k++) {
                vx_u32 f = VX_VIF_FILTER[S][k];
                vx_vif_vec4<T> xr = in_r[(r + k) * G + g], xd = in_d[(r + k) * G + g];
                VX_VIF_UNROLL
                for (int e = 0; e < 4; e++) {
                    vx_u32 x = xr.v[e], y = xd.v[e];
                    vx_u32 fx = f * x, fy = f * y;
                    a_mu1[e] += fx;
                    a_mu2[e] += fy;
                    a_rr[e] += (vx_u64)fx * x;
                    a_dd[e] += (vx_u64)fy * y;
                    a_rd[e] += (vx_u64)fx * y;
                }
            }
            for (int e = 0; e < 4; e++) {
                o_rr.v[e] = (vx_u32)((a_rr[e] + sq_round) >> sq_shift);
                o_dd.v[e] = (vx_u32)((a_dd[e] + sq_round) >> sq_shift);
                o_rd.v[e] = (vx_u32)((a_rd[e] + sq_round) >> sq_shift);
            }
        } else {
            // sq_shift is 0 here (8-bit scale 0): the u32 sums are the values.
            vx_u32 a_rr[4] = {0, 0, 0, 0}, a_dd[4] = {0, 0, 0, 0}, a_rd[4] = {0, 0, 0, 0};
            VX_VIF_UNROLL
            for (int k = 0; k < TAPS; k++) {
                vx_u32 f = VX_VIF_FILTER[S][k];
                vx_vif_vec4<T> xr = in_r[(r + k) * G + g], xd = in_d[(r + k) * G + g];
                VX_VIF_UNROLL
                for (int e = 0; e < 4; e++) {
                    vx_u32 x = xr.v[e], y = xd.v[e];
                    vx_u32 fx = f * x, fy = f * y;
                    a_mu1[e] += fx;
                    a_mu2[e] += fy;
                    a_rr[e] += fx * x;
                    a_dd[e] += fy * y;
                    a_rd[e] += fx * y;
                }
            }
            for (int e = 0; e < 4; e++) {
                o_rr.v[e] = a_rr[e];
                o_dd.v[e] = a_dd[e];
                o_rd.v[e] = a_rd[e];
            }
        }
        for (int e = 0; e < 4; e++) {
            o_mu1.v[e] = (vx_u16)((a_mu1[e] + mu_round) >> mu_shift);
            o_mu2.v[e] = (vx_u16)((a_mu2[e] + mu_round) >> mu_shift);
        }
        v_mu1[idx] = o_mu1;
        v_mu2[idx] = o_mu2;
        v_rr[idx] = o_rr;
        v_dd[idx] = o_dd;
        v_rd[idx] = o_rd;
    }
    if (SUB) {
        // Subsampled row ty0/2 + r reads rows ty0 + 2r - HS + k: tile rows
        // 2r + H - HS + k.
        const T *tr = (const T *)in_r, *td = (const T *)in_d;
        for (int idx = threadIdx.x; idx < SR * VX_VIF_CW; idx += VMAFX_BLOCK) {
            int r = idx / VX_VIF_CW, c = idx - r * VX_VIF_CW;
            const int at = (2 * r + H - HS) * VX_VIF_CW + c;
            vx_u32 a_r = 0, a_d = 0;
            VX_VIF_UNROLL
            for (int k = 0; k < 2 * HS + 1; k++) {
                vx_u32 f = VX_VIF_FILTER[SN][k];
                a_r += f * (vx_u32)tr[at + k * VX_VIF_CW];
                a_d += f * (vx_u32)td[at + k * VX_VIF_CW];
            }
            sub_v[idx] = (vx_u16)((a_r + mu_round) >> mu_shift);
            sub_v[SR * VX_VIF_CW + idx] = (vx_u16)((a_d + mu_round) >> mu_shift);
        }
    }
    __syncthreads();

    // Horizontal and the statistic: thread (r, g) makes output columns
    // 4g .. 4g + 3 of row r from vertical columns 4g .. 4g + 3 + 2H.
    vx_vif_sums s = {0, 0, 0, 0};
    for (int idx = threadIdx.x; idx < V; idx += VMAFX_BLOCK) {
        int r = idx / G, g = idx - r * G;
        if (4 * g >= TW || ty0 + r >= h || tx0 + 4 * g >= w) continue;
        vx_u32 a_mu1[4], a_mu2[4];
        vx_u64 a_rr[4], a_dd[4], a_rd[4];
        vx_vif_hfilter_mu<S>(v_mu1, idx, a_mu1);
        vx_vif_hfilter_mu<S>(v_mu2, idx, a_mu2);
        vx_vif_hfilter_sq<S>(v_rr, idx, a_rr);
        vx_vif_hfilter_sq<S>(v_dd, idx, a_dd);
        vx_vif_hfilter_sq<S>(v_rd, idx, a_rd);
        for (int e = 0; e < 4; e++) {
            if (tx0 + 4 * g + e >= w) break;
            // scalar.rs::sigmas: Q16 squares minus Q32 -> Q16 means, as i32.
            vx_u32 mu1_sq = (vx_u32)(((vx_u64)a_mu1[e] * a_mu1[e] + 2147483648ull) >> 32);
            vx_u32 mu2_sq = (vx_u32)(((vx_u64)a_mu2[e] * a_mu2[e] + 2147483648ull) >> 32);
            vx_u32 mu1_mu2 = (vx_u32)(((vx_u64)a_mu1[e] * a_mu2[e] + 2147483648ull) >> 32);
            vx_i32 sigma1_sq = (vx_i32)((vx_u32)((a_rr[e] + 32768u) >> 16) - mu1_sq);
            vx_i32 sigma2_sq = (vx_i32)((vx_u32)((a_dd[e] + 32768u) >> 16) - mu2_sq);
            vx_i32 sigma12 = (vx_i32)((vx_u32)((a_rd[e] + 32768u) >> 16) - mu1_mu2);
            vx_vif_accumulate(s, sigma1_sq, sigma2_sq, sigma12, egl, table);
        }
    }
    if (SUB) {
        // Subsampled column tx0/2 + x reads columns tx0 + 2x - HS + k: tile
        // columns 2x + H - HS + k.
        const int OW = TW / 2, ow = w / 2, oh = h / 2;
        for (int idx = threadIdx.x; idx < SR * OW; idx += VMAFX_BLOCK) {
            int r = idx / OW, x = idx - r * OW;
            int gy = ty0 / 2 + r, gx = tx0 / 2 + x;
            if (gy >= oh || gx >= ow) continue;
            const int at = r * VX_VIF_CW + 2 * x + H - HS;
            vx_u32 a_r = 0, a_d = 0;
            VX_VIF_UNROLL
            for (int k = 0; k < 2 * HS + 1; k++) {
                vx_u32 f = VX_VIF_FILTER[SN][k];
                a_r += f * (vx_u32)sub_v[at + k];
                a_d += f * (vx_u32)sub_v[SR * VX_VIF_CW + at + k];
            }
            long long o = (long long)gy * out_stride + gx;
            out_r[o] = (vx_u16)((a_r + 32768u) >> 16);
            out_d[o] = (vx_u16)((a_d + 32768u) >> 16);
        }
    }
    __syncthreads();
    vx_vif_block_sums(s, (vx_u64 *)vplanes, sums);
}

#define VX_VIF_STAT_ARGS                                                                              \
    const vx_u8 *ref, const vx_u8 *dis, int ref_pitch, int dis_pitch, int w, int h, int mu_shift,     \
        int sq_shift, double egl, const vx_u16 *table, vx_u64 *sums, vx_u16 *out_r, vx_u16 *out_d,    \
        int out_stride
#define VX_VIF_STAT_PASS                                                                              \
    ref, dis, ref_pitch, dis_pitch, w, h, mu_shift, sq_shift, egl, table, sums, out_r, out_d, out_stride

// Grid (ceil(w / VX_VIF_TW(S)), ceil(h / 8)); sums: the scale's 4 u64 (zeroed
// by vif_zero); out_r, out_d: the next scale's planes (unused by vif_stat_3).
VMAFX_KERNEL VMAFX_MIN_BLOCKS(4) void vif_stat_0_8(VX_VIF_STAT_ARGS) { vx_vif_stat<vx_u8, 0, false, true>(VX_VIF_STAT_PASS); }
VMAFX_KERNEL VMAFX_MIN_BLOCKS(4) void vif_stat_0_16(VX_VIF_STAT_ARGS) { vx_vif_stat<vx_u16, 0, true, true>(VX_VIF_STAT_PASS); }
VMAFX_KERNEL VMAFX_MIN_BLOCKS(4) void vif_stat_1(VX_VIF_STAT_ARGS) { vx_vif_stat<vx_u16, 1, true, true>(VX_VIF_STAT_PASS); }
VMAFX_KERNEL VMAFX_MIN_BLOCKS(4) void vif_stat_2(VX_VIF_STAT_ARGS) { vx_vif_stat<vx_u16, 2, true, true>(VX_VIF_STAT_PASS); }
VMAFX_KERNEL VMAFX_MIN_BLOCKS(4) void vif_stat_3(VX_VIF_STAT_ARGS) { vx_vif_stat<vx_u16, 3, true, false>(VX_VIF_STAT_PASS); }

#define VX_VIF_OW 64
#define VX_VIF_OH 8

// scalar.rs::subsample from scale S to S + 1 (filter S + 1): one block
// per 64x8 output tile; only the even rows are filtered vertically and
// only the even columns horizontally, as only they are kept.
template <typename T, int S>
__device__ inline void vx_vif_subsample(const vx_u8 *ref, const vx_u8 *dis, int ref_pitch, int dis_pitch, int w,
                                        int h, int mu_shift, vx_u16 *out_r, vx_u16 *out_d, int out_stride) {
    const int H = vx_vif_half<S + 1>::v;
    const int TAPS = 2 * H + 1;
    const int CW = 2 * VX_VIF_OW - 1 + 2 * H;
    const int CH = 2 * VX_VIF_OH - 1 + 2 * H;
    const int V = VX_VIF_OH * CW;
    __shared__ T in_r[CH * CW], in_d[CH * CW];
    __shared__ vx_u16 v_r[V], v_d[V];
    const int ow = w / 2, oh = h / 2;
    const int ox0 = blockIdx.x * VX_VIF_OW, oy0 = blockIdx.y * VX_VIF_OH;
    const bool inside = 2 * ox0 - H >= 0 && 2 * ox0 - H + CW <= w;  // no column mirror
    for (int idx = threadIdx.x; idx < CH * CW; idx += VMAFX_BLOCK) {
        int r = idx / CW, c = idx - r * CW;
        long long y = vx_vif_reflect(2 * oy0 - H + r, h);
        int x = 2 * ox0 - H + c;
        if (!inside) x = vx_vif_reflect(x, w);
        in_r[idx] = ((const T *)(ref + y * ref_pitch))[x];
        in_d[idx] = ((const T *)(dis + y * dis_pitch))[x];
    }
    __syncthreads();
    const vx_u32 mu_round = mu_shift == 0 ? 0u : 1u << (mu_shift - 1);
    for (int idx = threadIdx.x; idx < V; idx += VMAFX_BLOCK) {
        int r = idx / CW, c = idx - r * CW;
        vx_u32 a_r = 0, a_d = 0;
VX_VIF_UNROLL
        for (int k = 0; k < TAPS; k++) {
            vx_u32 f = VX_VIF_FILTER[S + 1][k];
            a_r += f * (vx_u32)in_r[(2 * r + k) * CW + c];
            a_d += f * (vx_u32)in_d[(2 * r + k) * CW + c];
        }
        v_r[idx] = (vx_u16)((a_r + mu_round) >> mu_shift);
        v_d[idx] = (vx_u16)((a_d + mu_round) >> mu_shift);
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < VX_VIF_OH * VX_VIF_OW; idx += VMAFX_BLOCK) {
        int r = idx / VX_VIF_OW, x = idx - r * VX_VIF_OW;
        if (oy0 + r >= oh || ox0 + x >= ow) continue;
        const int base = r * CW + 2 * x;
        vx_u32 a_r = 0, a_d = 0;
VX_VIF_UNROLL
        for (int k = 0; k < TAPS; k++) {
            vx_u32 f = VX_VIF_FILTER[S + 1][k];
            a_r += f * (vx_u32)v_r[base + k];
            a_d += f * (vx_u32)v_d[base + k];
        }
        long long at = (long long)(oy0 + r) * out_stride + ox0 + x;
        out_r[at] = (vx_u16)((a_r + 32768u) >> 16);
        out_d[at] = (vx_u16)((a_d + 32768u) >> 16);
    }
}

#define VX_VIF_SUB_ARGS                                                                               \
    const vx_u8 *ref, const vx_u8 *dis, int ref_pitch, int dis_pitch, int w, int h, int mu_shift,     \
        vx_u16 *out_r, vx_u16 *out_d, int out_stride
#define VX_VIF_SUB_PASS ref, dis, ref_pitch, dis_pitch, w, h, mu_shift, out_r, out_d, out_stride

// Grid (ceil((w / 2) / 64), ceil((h / 2) / 8)); out_stride in samples.
VMAFX_KERNEL void vif_subsample_0_8(VX_VIF_SUB_ARGS) { vx_vif_subsample<vx_u8, 0>(VX_VIF_SUB_PASS); }
VMAFX_KERNEL void vif_subsample_0_16(VX_VIF_SUB_ARGS) { vx_vif_subsample<vx_u16, 0>(VX_VIF_SUB_PASS); }

// Grid (1, 1): the frame's 16 sums (4 scales x 4) to zero.
VMAFX_KERNEL void vif_zero(vx_u64 *sums) {
    if (threadIdx.x < 16) sums[threadIdx.x] = 0;
}
