// Integer ADM, libvmaf 3.2.0 (feature/integer_adm.c), the device twin of
// src/feature/adm/ (AdmCpu::sums): per scale, two kernels.
//
//   adm_dwt_s0_8 / _16 / adm_dwt_s123: one block per 256 outputs of one
//     output row. The vertical pass of the 514 (mirrored) input columns
//     the block's outputs read goes to shared memory, once per column; each
//     thread then does the horizontal pass of its output (a, v from the low
//     row, h, d from the high row), writes the bands, and, fused, where the
//     output lies in the taps region: decouple (restored r, additive a)
//     and the CSF threshold terms of a (for num) and of r (for aim), as
//     fsum (sum over bands of |csf| / 30) and csum (of |csf| / 15).
//   adm_cm_s0 / adm_cm_s123: one block per row of the score region. Per
//     pixel: the 3x3 masking thresholds from fsum/csum (libvmaf's mirror),
//     decouple again (cheaper than storing r and a), the masked cubes of
//     r (num) and a (aim), the cubes of the reference bands (den). The
//     row's nine sums are reduced in the block (u64 adds: order-free, so
//     the row sum is the CPU's), shifted per row exactly as the CPU does,
//     and added to the frame's accumulators with atomicAdd (u64 adds
//     again: order-free across rows). The host downloads 36 u64 once.
//
// Every step is integer but the angle test and the gain limit, which are
// libvmaf's float/double expressions written the same way (compiled
// without FMA contraction). Signed wrap-around of the CPU's wrapping_* is
// done in unsigned arithmetic; `(T)` narrowing keeps the low bits, as Rust's
// `as` does.
#include "vmafx_compat.h"

typedef short vx_i16;

// Vertical results per block: input columns 2*j0 - 1 .. 2*(j0 + 255) + 2.
#define ADM_EXT (2 * VMAFX_BLOCK + 2)

// dwt2_src_indices_filt's mirror: -k reads k, n + k reads n - 1 - k.
__device__ inline int adm_mirror(int k, int n) {
    if (k < 0) k = -k;
    return k >= n ? 2 * n - k - 1 : k;
}

// The Daubechies-2 filters: LO = {15826, 27411, 7345, -4240},
// HI = {-4240, -7345, 27411, -15826}.
__device__ inline vx_i32 adm_lo32(vx_i32 a, vx_i32 b, vx_i32 c, vx_i32 d) {
    return 15826 * a + 27411 * b + 7345 * c - 4240 * d;
}
__device__ inline vx_i32 adm_hi32(vx_i32 a, vx_i32 b, vx_i32 c, vx_i32 d) {
    return -4240 * a - 7345 * b + 27411 * c - 15826 * d;
}
__device__ inline vx_i64 adm_lo64(vx_i64 a, vx_i64 b, vx_i64 c, vx_i64 d) {
    return 15826 * a + 27411 * b + 7345 * c - 4240 * d;
}
__device__ inline vx_i64 adm_hi64(vx_i64 a, vx_i64 b, vx_i64 c, vx_i64 d) {
    return -4240 * a - 7345 * b + 27411 * c - 15826 * d;
}

// Scale-0 horizontal filter of 16-bit values (the sum fits an int).
__device__ inline vx_i32 adm_filt16(bool hi, const vx_i32 *s) {
    vx_i32 acc = hi ? adm_hi32(s[0], s[1], s[2], s[3]) : adm_lo32(s[0], s[1], s[2], s[3]);
    return (vx_i16)((acc + 32768) >> 16);
}

__device__ inline vx_i32 adm_filt64(bool hi, const vx_i32 *s, vx_i64 add, int shift) {
    vx_i64 acc = hi ? adm_hi64(s[0], s[1], s[2], s[3]) : adm_lo64(s[0], s[1], s[2], s[3]);
    return (vx_i32)((acc + add) >> shift);
}

// ---- decouple (adm_decouple / adm_decouple_s123) ----

// cos(1 degree)^2 as the float libvmaf computes it (bits 0x3f7fec0a).
#define ADM_COS_1DEG_SQ 0.99969542026519775390625f

__device__ inline bool adm_angle(vx_i64 ot_dp, vx_i64 o_mag_sq, vx_i64 t_mag_sq) {
    double dp = (double)(float)ot_dp / 4096.0;
    return dp >= 0.0 &&
           dp * dp >= (double)ADM_COS_1DEG_SQ * ((double)(float)o_mag_sq / 4096.0) * ((double)(float)t_mag_sq / 4096.0);
}

// C's MIN / MAX on doubles, then the conversion to int (in range here:
// between 0 and t).
__device__ inline vx_i32 adm_gain_limited(double rst, double t, bool positive) {
    double m = positive ? (rst < t ? rst : t) : (rst > t ? rst : t);
    return (vx_i32)m;
}

// div_lookup[o + 32768]: 2^30 / o, truncated towards zero.
__device__ inline vx_i32 adm_div(vx_i32 o) {
    vx_u32 a = o < 0 ? 0u - (vx_u32)o : (vx_u32)o;
    vx_i32 q = (vx_i32)(1073741824u / a);
    return o < 0 ? -q : q;
}

__device__ inline void adm_decouple_s0(vx_i32 o, vx_i32 t, bool angle, double egl, vx_i32 *r, vx_i32 *a) {
    vx_i32 k = 32768;
    if (o != 0) {
        vx_i32 tmp = (vx_i32)(((vx_i64)adm_div(o) * t + 16384) >> 15);
        k = tmp < 0 ? 0 : (tmp > 32768 ? 32768 : tmp);
    }
    vx_i32 rst = (vx_i16)((k * o + 16384) >> 15);
    if (angle && k > 0 && o != 0) rst = (vx_i16)adm_gain_limited((double)rst * egl, (double)t, o > 0);
    *r = rst;
    *a = (vx_i16)(t - rst);
}

__device__ inline void adm_decouple_s123(vx_i32 o, vx_i32 t, bool angle, double egl, vx_i32 *r, vx_i32 *a) {
    vx_i64 k = 32768;
    if (o != 0) {
        vx_u32 abs_o = o < 0 ? 0u - (vx_u32)o : (vx_u32)o;
        vx_i64 sign = o < 0 ? -1 : 1;
        vx_u32 msb = abs_o, shift = 0;
        if (abs_o >= 32768) {
            // get_best15_from32: the 15 leading bits, rounded.
            shift = 17 - (vx_u32)__clz((int)abs_o);
            msb = (abs_o + (1u << (shift - 1))) >> shift;
        }
        vx_i64 round = (vx_i64)(vx_i32)(1u << (14 + shift));
        vx_i64 tmp = (((vx_i64)adm_div((vx_i32)msb) * t) * sign + round) >> (15 + shift);
        k = tmp < 0 ? 0 : (tmp > 32768 ? 32768 : tmp);
    }
    vx_i32 rst = (vx_i32)((k * o + 16384) >> 15);
    if (angle && k > 0 && o != 0) rst = adm_gain_limited((double)rst * egl, (double)t, o > 0);
    *r = rst;
    *a = (vx_i32)((vx_u32)t - (vx_u32)rst);
}

// Restored and additive parts of the three bands of one pixel.
template <bool S0>
__device__ inline void adm_decouple(const vx_i32 *o, const vx_i32 *t, double egl, vx_i32 *r, vx_i32 *a) {
    vx_i64 ot_dp, o_mag_sq, t_mag_sq;
    // (Scales 1-3 add 64-bit products wrapping, as the CPU.)
    ot_dp = (vx_i64)((vx_u64)((vx_i64)o[0] * t[0]) + (vx_u64)((vx_i64)o[1] * t[1]));
    o_mag_sq = (vx_i64)((vx_u64)((vx_i64)o[0] * o[0]) + (vx_u64)((vx_i64)o[1] * o[1]));
    t_mag_sq = (vx_i64)((vx_u64)((vx_i64)t[0] * t[0]) + (vx_u64)((vx_i64)t[1] * t[1]));
    bool angle = adm_angle(ot_dp, o_mag_sq, t_mag_sq);
    for (int b = 0; b < 3; b++) {
        if (S0)
            adm_decouple_s0(o[b], t[b], angle, egl, &r[b], &a[b]);
        else
            adm_decouple_s123(o[b], t[b], angle, egl, &r[b], &a[b]);
    }
}

// ---- CSF (adm_csf / i4_adm_csf): the threshold terms of one pixel ----

__device__ inline vx_i32 adm_wrapping_abs(vx_i32 x) {
    return (vx_i32)(x < 0 ? 0u - (vx_u32)x : (vx_u32)x);
}

// Q32 weight times a scale 1-3 value, rounded to Q0 (i4_adm_csf, i4_adm_cm).
__device__ inline vx_i32 adm_scale_s123(vx_i32 x, vx_u32 rf) {
    return (vx_i32)((vx_i64)((vx_u64)((vx_i64)rf * x) + (1ULL << 27)) >> 28);
}

template <bool S0>
__device__ inline void adm_csf(const vx_i32 *x, const vx_u32 *rf, vx_i32 *fsum, vx_i32 *csum) {
    vx_u32 fs = 0, cs = 0;
    for (int b = 0; b < 3; b++) {
        if (S0) {
            // Q21 weights for h/v shifted by 15, Q23 for d by 17 (+65535).
            vx_u32 add = b == 2 ? 65535u : 16384u;
            int shift = b == 2 ? 17 : 15;
            vx_i32 dst = (vx_i16)((vx_i32)((vx_u32)((vx_i32)rf[b] * x[b]) + add) >> shift);
            vx_i32 m = dst < 0 ? -dst : dst;
            fs += (vx_u32)(vx_i32)(vx_i16)((4369 * m + 2048) >> 12);
            cs += (vx_u32)(vx_i32)(vx_i16)((8738 * m + 2048) >> 12);
        } else {
            vx_i64 m = adm_wrapping_abs(adm_scale_s123(x[b], rf[b]));
            // libvmaf's "+ 2^31" sits in an int32_t: it is -2^31.
            fs += (vx_u32)(vx_i32)((143165577LL * m - 2147483648LL) >> 32);
            cs += (vx_u32)(vx_i32)((286331153LL * m - 2147483648LL) >> 32);
        }
    }
    *fsum = (vx_i32)fs;
    *csum = (vx_i32)cs;
}

// ---- DWT, with decouple and CSF fused ----

// What the fused decouple + CSF needs: the taps region and the weights;
// sums holds four band-sized i32 planes: fsum and csum of a (num's
// thresholds), fsum and csum of r (aim's).
#define ADM_FUSE_PARAMS                                                                                  \
    int fuse, int taps_top, int taps_bottom, int taps_left, int taps_right, double egl, vx_u32 rf0,     \
        vx_u32 rf1, vx_u32 rf2, int do_aim, vx_i32 *sums

template <bool S0>
__device__ inline void adm_fused_tail(int i, int j, int band_n, int out_w, const vx_i32 *o, const vx_i32 *t,
                                      ADM_FUSE_PARAMS) {
    if (!fuse || i < taps_top || i >= taps_bottom || j < taps_left || j >= taps_right) return;
    vx_i32 r[3], a[3];
    adm_decouple<S0>(o, t, egl, r, a);
    vx_u32 rf[3] = {rf0, rf1, rf2};
    long long at = (long long)i * out_w + j;
    adm_csf<S0>(a, rf, &sums[at], &sums[band_n + at]);
    if (do_aim) adm_csf<S0>(r, rf, &sums[2 * band_n + at], &sums[3 * band_n + at]);
}

// Scale 0: vertical pass of one column of 8- or 16-bit samples, rescaled
// by `shift` and centred on zero (i32 wrapping, as libvmaf at 16 bits).
template <typename T>
__device__ inline void adm_vert_s0(const vx_u8 *p, int pitch, const int *rows, int c, int shift, vx_i32 *lo,
                                   vx_i32 *hi) {
    vx_u32 s[4];
    for (int k = 0; k < 4; k++) s[k] = ((const T *)(p + (long long)rows[k] * pitch))[c];
    vx_u32 add = 1u << (shift - 1);
    vx_u32 centre = 46342u * add;
    vx_u32 acc = 15826u * s[0] + 27411u * s[1] + 7345u * s[2] - 4240u * s[3];
    *lo = (vx_i16)((vx_i32)(acc - centre + add) >> shift);
    acc = 0u - 4240u * s[0] - 7345u * s[1] + 27411u * s[2] - 15826u * s[3];
    *hi = (vx_i16)((vx_i32)(acc + add) >> shift);
}

template <typename T>
__device__ inline void adm_dwt_s0(const vx_u8 *ref, const vx_u8 *dis, int ref_pitch, int dis_pitch, int in_w,
                                  int in_h, int shift, int out_w, int band_n, vx_i32 *ref_a, vx_i32 *dis_a,
                                  vx_i16 *ref_hvd, vx_i16 *dis_hvd, ADM_FUSE_PARAMS, vx_i32 (*lo)[ADM_EXT],
                                  vx_i32 (*hi)[ADM_EXT]) {
    int i = blockIdx.y;
    int j0 = blockIdx.x * VMAFX_BLOCK;
    int rows[4];
    for (int k = 0; k < 4; k++) rows[k] = adm_mirror(2 * i - 1 + k, in_h);
    int c_last = 2 * (out_w - 1) + 2;
    for (int e = threadIdx.x; e < ADM_EXT; e += VMAFX_BLOCK) {
        int c = 2 * j0 - 1 + e;
        if (c > c_last) break;
        int cm = adm_mirror(c, in_w);
        adm_vert_s0<T>(ref, ref_pitch, rows, cm, shift, &lo[0][e], &hi[0][e]);
        adm_vert_s0<T>(dis, dis_pitch, rows, cm, shift, &lo[1][e], &hi[1][e]);
    }
    __syncthreads();
    int j = j0 + threadIdx.x;
    if (j >= out_w) return;
    int e = 2 * threadIdx.x;
    vx_i32 bands[2][3];
    for (int p = 0; p < 2; p++) {
        vx_i32 a = adm_filt16(false, &lo[p][e]);
        bands[p][1] = adm_filt16(true, &lo[p][e]);
        bands[p][0] = adm_filt16(false, &hi[p][e]);
        bands[p][2] = adm_filt16(true, &hi[p][e]);
        long long at = (long long)i * out_w + j;
        (p ? dis_a : ref_a)[at] = a;
        vx_i16 *hvd = p ? dis_hvd : ref_hvd;
        for (int b = 0; b < 3; b++) hvd[b * band_n + at] = (vx_i16)bands[p][b];
    }
    adm_fused_tail<true>(i, j, band_n, out_w, bands[0], bands[1], fuse, taps_top, taps_bottom, taps_left,
                         taps_right, egl, rf0, rf1, rf2, do_aim, sums);
}

#define ADM_DWT_S0_ARGS                                                                                  \
    const vx_u8 *ref, const vx_u8 *dis, int ref_pitch, int dis_pitch, int in_w, int in_h, int shift,    \
        int out_w, int band_n, vx_i32 *ref_a, vx_i32 *dis_a, vx_i16 *ref_hvd, vx_i16 *dis_hvd,          \
        ADM_FUSE_PARAMS
#define ADM_DWT_S0_CALL                                                                                  \
    ref, dis, ref_pitch, dis_pitch, in_w, in_h, shift, out_w, band_n, ref_a, dis_a, ref_hvd, dis_hvd,   \
        fuse, taps_top, taps_bottom, taps_left, taps_right, egl, rf0, rf1, rf2, do_aim, sums, lo, hi

// Grid (ceil(out_w / 256), out_h). `shift`: 8 for 8-bit, else the bit depth.
VMAFX_KERNEL void adm_dwt_s0_8(ADM_DWT_S0_ARGS) {
    __shared__ vx_i32 lo[2][ADM_EXT], hi[2][ADM_EXT];
    adm_dwt_s0<vx_u8>(ADM_DWT_S0_CALL);
}

VMAFX_KERNEL void adm_dwt_s0_16(ADM_DWT_S0_ARGS) {
    __shared__ vx_i32 lo[2][ADM_EXT], hi[2][ADM_EXT];
    adm_dwt_s0<vx_u16>(ADM_DWT_S0_CALL);
}

// Scales 1-3: the previous low bands (in_w x in_h, packed) in, a, h, v, d
// out (out_w x out_h, packed; hvd: three planes band_n apart). Grid as
// scale 0's.
VMAFX_KERNEL void adm_dwt_s123(const vx_i32 *ref_lo, const vx_i32 *dis_lo, int in_w, int in_h, vx_i64 vadd,
                               int vshift, vx_i64 hadd, int hshift, int out_w, int band_n, vx_i32 *ref_a,
                               vx_i32 *dis_a, vx_i32 *ref_hvd, vx_i32 *dis_hvd, ADM_FUSE_PARAMS) {
    __shared__ vx_i32 lo[2][ADM_EXT], hi[2][ADM_EXT];
    int i = blockIdx.y;
    int j0 = blockIdx.x * VMAFX_BLOCK;
    long long rows[4];
    for (int k = 0; k < 4; k++) rows[k] = (long long)adm_mirror(2 * i - 1 + k, in_h) * in_w;
    int c_last = 2 * (out_w - 1) + 2;
    for (int e = threadIdx.x; e < ADM_EXT; e += VMAFX_BLOCK) {
        int c = 2 * j0 - 1 + e;
        if (c > c_last) break;
        int cm = adm_mirror(c, in_w);
        for (int p = 0; p < 2; p++) {
            const vx_i32 *src = p ? dis_lo : ref_lo;
            vx_i32 s[4];
            for (int k = 0; k < 4; k++) s[k] = src[rows[k] + cm];
            lo[p][e] = adm_filt64(false, s, vadd, vshift);
            hi[p][e] = adm_filt64(true, s, vadd, vshift);
        }
    }
    __syncthreads();
    int j = j0 + threadIdx.x;
    if (j >= out_w) return;
    int e = 2 * threadIdx.x;
    vx_i32 bands[2][3];
    for (int p = 0; p < 2; p++) {
        vx_i32 a = adm_filt64(false, &lo[p][e], hadd, hshift);
        bands[p][1] = adm_filt64(true, &lo[p][e], hadd, hshift);
        bands[p][0] = adm_filt64(false, &hi[p][e], hadd, hshift);
        bands[p][2] = adm_filt64(true, &hi[p][e], hadd, hshift);
        long long at = (long long)i * out_w + j;
        (p ? dis_a : ref_a)[at] = a;
        vx_i32 *hvd = p ? dis_hvd : ref_hvd;
        for (int b = 0; b < 3; b++) hvd[b * band_n + at] = bands[p][b];
    }
    adm_fused_tail<false>(i, j, band_n, out_w, bands[0], bands[1], fuse, taps_top, taps_bottom, taps_left,
                          taps_right, egl, rf0, rf1, rf2, do_aim, sums);
}

// ---- contrast masking and den sums (adm_cm / i4_adm_cm, adm_csf_den_*) ----

// ADM_CM_ACCUM_ROUND / I4_ADM_CM_ACCUM_ROUND: the masked cube of one value.
__device__ inline vx_i64 adm_accum(vx_i32 x, vx_i32 thr, int sub, vx_i64 sq_add, int sq_shift, vx_i64 cub_add,
                                   int cub_shift) {
    vx_i32 v = (vx_i32)((vx_u32)adm_wrapping_abs(x) - ((vx_u32)thr << sub));
    if (v < 0) v = 0;
    vx_i32 x_sq = (vx_i32)(((vx_i64)v * v + sq_add) >> sq_shift);
    return ((vx_i64)x_sq * v + cub_add) >> cub_shift;
}

// The 3x3 masking threshold at (i, j) from one fsum/csum pair: the box sum
// of fsum with its centre replaced by csum (wrapping), mirrored as
// libvmaf's macros (-1 reads 1, n reads n - 1).
__device__ inline vx_i32 adm_threshold(const vx_i32 *fsum, const vx_i32 *csum, int w, int h, int i, int j) {
    int up = i == 0 ? 1 : i - 1, down = i == h - 1 ? h - 1 : i + 1;
    int left = j == 0 ? 1 : j - 1, right = j == w - 1 ? w - 1 : j + 1;
    int rows[3] = {up, i, down};
    vx_u32 s = 0;
    for (int k = 0; k < 3; k++) {
        const vx_i32 *row = fsum + (long long)rows[k] * w;
        s += (vx_u32)row[left] + (vx_u32)row[j] + (vx_u32)row[right];
    }
    long long at = (long long)i * w + j;
    return (vx_i32)(s - (vx_u32)fsum[at] + (vx_u32)csum[at]);
}

#define ADM_SUMS 9

template <bool S0, typename B>
__device__ inline void adm_cm(const B *ref_hvd, const B *dis_hvd, int w, int h, int band_n, int top, int left,
                              int right, double egl, vx_u32 rf0, vx_u32 rf1, vx_u32 rf2, int do_aim,
                              const vx_i32 *sums, int cub_hv_shift, vx_i64 cub_hv_add, int cub_d_shift,
                              vx_i64 cub_d_add, int inner_shift, vx_i64 inner_add, int den_sq_shift,
                              int den_cub_shift, vx_i64 den_cub_add, int den_shift, vx_i64 den_add, vx_u64 *acc,
                              vx_u64 (*red)[VMAFX_BLOCK]) {
    int i = top + blockIdx.y;
    vx_u32 rf[3] = {rf0, rf1, rf2};
    // den h, v, d; num h, v, d; aim h, v, d (u64, wrapping: order-free).
    vx_u64 s[ADM_SUMS];
    for (int k = 0; k < ADM_SUMS; k++) s[k] = 0;
    for (int j = left + threadIdx.x; j < right; j += VMAFX_BLOCK) {
        long long at = (long long)i * w + j;
        vx_i32 o[3], t[3], r[3], a[3];
        for (int b = 0; b < 3; b++) {
            o[b] = ref_hvd[b * band_n + at];
            t[b] = dis_hvd[b * band_n + at];
        }
        adm_decouple<S0>(o, t, egl, r, a);
        vx_i32 thr_num = adm_threshold(sums, sums + band_n, w, h, i, j);
        vx_i32 thr_aim = do_aim ? adm_threshold(sums + 2 * band_n, sums + 3 * band_n, w, h, i, j) : 0;
        for (int b = 0; b < 3; b++) {
            if (S0) {
                vx_u64 m = (vx_u16)(o[b] < 0 ? -o[b] : o[b]);
                s[b] += m * m * m;
                // h, v: Q21 weights; d: Q23.
                int sub = b == 2 ? 12 : 10, sq_shift = b == 2 ? 30 : 29;
                vx_i64 sq_add = b == 2 ? (1LL << 29) : (1LL << 28);
                int cub_shift = b == 2 ? cub_d_shift : cub_hv_shift;
                vx_i64 cub_add = b == 2 ? cub_d_add : cub_hv_add;
                vx_i32 rfi = (vx_i32)rf[b];
                s[3 + b] += (vx_u64)adm_accum(r[b] * rfi, thr_num, sub, sq_add, sq_shift, cub_add, cub_shift);
                if (do_aim)
                    s[6 + b] += (vx_u64)adm_accum(a[b] * rfi, thr_aim, sub, sq_add, sq_shift, cub_add, cub_shift);
            } else {
                vx_u64 m = (vx_u64)(o[b] < 0 ? 0u - (vx_u32)o[b] : (vx_u32)o[b]);
                s[b] += ((((m * m) + (1ULL << den_sq_shift)) >> den_sq_shift) * m + (vx_u64)den_cub_add) >>
                        den_cub_shift;
                s[3 + b] += (vx_u64)adm_accum(adm_scale_s123(r[b], rf[b]), thr_num, 0, 1LL << 29, 30,
                                              cub_hv_add, cub_hv_shift);
                if (do_aim)
                    s[6 + b] += (vx_u64)adm_accum(adm_scale_s123(a[b], rf[b]), thr_aim, 0, 1LL << 29, 30,
                                                  cub_hv_add, cub_hv_shift);
            }
        }
    }
    // Block sums in two steps (three barriers: the emulator pays per
    // barrier): 32 threads add 8 entries each, then one thread per sum adds
    // those 32.
    for (int k = 0; k < ADM_SUMS; k++) red[k][threadIdx.x] = s[k];
    __syncthreads();
    if (threadIdx.x < 32)
        for (int k = 0; k < ADM_SUMS; k++) {
            vx_u64 v = 0;
            for (int m = 0; m < VMAFX_BLOCK / 32; m++) v += red[k][threadIdx.x + 32 * m];
            red[k][threadIdx.x] = v;
        }
    __syncthreads();
    int k = threadIdx.x;
    if (k < ADM_SUMS) {
        vx_u64 row = 0;
        for (int m = 0; m < 32; m++) row += red[k][m];
        // The CPU's per-row rounding: den as u64, num and aim as i64.
        if (k < 3)
            atomicAdd(&acc[k], (row + (vx_u64)den_add) >> den_shift);
        else
            atomicAdd(&acc[k], (vx_u64)((vx_i64)(row + (vx_u64)inner_add) >> inner_shift));
    }
}

#define ADM_CM_ARGS(B)                                                                                   \
    const B *ref_hvd, const B *dis_hvd, int w, int h, int band_n, int top, int left, int right, double egl, \
        vx_u32 rf0, vx_u32 rf1, vx_u32 rf2, int do_aim, const vx_i32 *sums, int cub_hv_shift,           \
        vx_i64 cub_hv_add, int cub_d_shift, vx_i64 cub_d_add, int inner_shift, vx_i64 inner_add,        \
        int den_sq_shift, int den_cub_shift, vx_i64 den_cub_add, int den_shift, vx_i64 den_add, vx_u64 *acc
#define ADM_CM_CALL                                                                                      \
    ref_hvd, dis_hvd, w, h, band_n, top, left, right, egl, rf0, rf1, rf2, do_aim, sums, cub_hv_shift,   \
        cub_hv_add, cub_d_shift, cub_d_add, inner_shift, inner_add, den_sq_shift, den_cub_shift,        \
        den_cub_add, den_shift, den_add, acc, red

// Grid (1, score rows); acc: this scale's nine sums (den, num, aim x h, v, d).
VMAFX_KERNEL VMAFX_MIN_BLOCKS(4) void adm_cm_s0(ADM_CM_ARGS(vx_i16)) {
    __shared__ vx_u64 red[ADM_SUMS][VMAFX_BLOCK];
    adm_cm<true, vx_i16>(ADM_CM_CALL);
}

VMAFX_KERNEL VMAFX_MIN_BLOCKS(4) void adm_cm_s123(ADM_CM_ARGS(vx_i32)) {
    __shared__ vx_u64 red[ADM_SUMS][VMAFX_BLOCK];
    adm_cm<false, vx_i32>(ADM_CM_CALL);
}

// Zeroes the frame's accumulators. Grid (1, 1).
VMAFX_KERNEL void adm_zero(vx_u64 *acc, int n) {
    for (int k = threadIdx.x; k < n; k += VMAFX_BLOCK) acc[k] = 0;
}
