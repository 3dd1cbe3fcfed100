// Check kernels for tests/device/fns.rs: each runs one device function of
// kernels/adm.cu or kernels/vif.cu on arrays of inputs (a grid-stride loop,
// one input per iteration), so the test can compare it with the CPU's
// scalar function on inputs a real frame rarely reaches (every rounding
// tie, the ends of each range). Compiled after the kernel sources: in the
// emulator by tests/device_emu/kernel_emu.cpp, on a GPU appended to them.
#include "vmafx_compat.h"

#define VX_CHECK_LOOP(n) \
    for (long long i = (long long)blockIdx.x * VMAFX_BLOCK + threadIdx.x; i < (n); i += (long long)gridDim.x * VMAFX_BLOCK)

// div_lookup: 2^30 / o (o != 0).
VMAFX_KERNEL void check_adm_div(const vx_i32 *o, int n, vx_i32 *out) {
    VX_CHECK_LOOP(n) out[i] = adm_div(o[i]);
}

// Scale-0 horizontal filter, 4 inputs (16-bit values) per output: lo, hi.
VMAFX_KERNEL void check_adm_filt16(const vx_i32 *s, int n, vx_i32 *out) {
    VX_CHECK_LOOP(n) {
        out[2 * i] = adm_filt16(false, s + 4 * i);
        out[2 * i + 1] = adm_filt16(true, s + 4 * i);
    }
}

// Scales 1-3 filter (vertical and horizontal), 4 inputs per output: lo, hi.
VMAFX_KERNEL void check_adm_filt64(const vx_i32 *s, int n, vx_i64 add, int shift, vx_i32 *out) {
    VX_CHECK_LOOP(n) {
        out[2 * i] = adm_filt64(false, s + 4 * i, add, shift);
        out[2 * i + 1] = adm_filt64(true, s + 4 * i, add, shift);
    }
}

// Scale-0 vertical pass of a 4-row plane of 8- or 16-bit samples, column i.
template <typename T>
__device__ inline void check_adm_vert_s0(const vx_u8 *p, int pitch, int n, int shift, vx_i32 *lo, vx_i32 *hi) {
    const int rows[4] = {0, 1, 2, 3};
    VX_CHECK_LOOP(n) adm_vert_s0<T>(p, pitch, rows, (int)i, shift, &lo[i], &hi[i]);
}
VMAFX_KERNEL void check_adm_vert_s0_8(const vx_u8 *p, int pitch, int n, int shift, vx_i32 *lo, vx_i32 *hi) {
    check_adm_vert_s0<vx_u8>(p, pitch, n, shift, lo, hi);
}
VMAFX_KERNEL void check_adm_vert_s0_16(const vx_u8 *p, int pitch, int n, int shift, vx_i32 *lo, vx_i32 *hi) {
    check_adm_vert_s0<vx_u16>(p, pitch, n, shift, lo, hi);
}

// Decouple of one pixel's three bands; o, t, r, a band-planar (b * n + i).
template <bool S0>
__device__ inline void check_adm_decouple(const vx_i32 *o, const vx_i32 *t, int n, double egl, vx_i32 *r, vx_i32 *a) {
    VX_CHECK_LOOP(n) {
        vx_i32 ob[3] = {o[i], o[n + i], o[2 * n + i]}, tb[3] = {t[i], t[n + i], t[2 * n + i]}, rb[3], ab[3];
        adm_decouple<S0>(ob, tb, egl, rb, ab);
        for (int b = 0; b < 3; b++) {
            r[b * n + i] = rb[b];
            a[b * n + i] = ab[b];
        }
    }
}
VMAFX_KERNEL void check_adm_decouple_s0(const vx_i32 *o, const vx_i32 *t, int n, double egl, vx_i32 *r, vx_i32 *a) {
    check_adm_decouple<true>(o, t, n, egl, r, a);
}
VMAFX_KERNEL void check_adm_decouple_s123(const vx_i32 *o, const vx_i32 *t, int n, double egl, vx_i32 *r,
                                          vx_i32 *a) {
    check_adm_decouple<false>(o, t, n, egl, r, a);
}

// The CSF threshold terms of one pixel (x band-planar) into fsum, csum.
template <bool S0>
__device__ inline void check_adm_csf(const vx_i32 *x, int n, vx_u32 rf0, vx_u32 rf1, vx_u32 rf2, vx_i32 *fsum,
                                     vx_i32 *csum) {
    const vx_u32 rf[3] = {rf0, rf1, rf2};
    VX_CHECK_LOOP(n) {
        vx_i32 xb[3] = {x[i], x[n + i], x[2 * n + i]};
        adm_csf<S0>(xb, rf, &fsum[i], &csum[i]);
    }
}
VMAFX_KERNEL void check_adm_csf_s0(const vx_i32 *x, int n, vx_u32 rf0, vx_u32 rf1, vx_u32 rf2, vx_i32 *fsum,
                                   vx_i32 *csum) {
    check_adm_csf<true>(x, n, rf0, rf1, rf2, fsum, csum);
}
VMAFX_KERNEL void check_adm_csf_s123(const vx_i32 *x, int n, vx_u32 rf0, vx_u32 rf1, vx_u32 rf2, vx_i32 *fsum,
                                     vx_i32 *csum) {
    check_adm_csf<false>(x, n, rf0, rf1, rf2, fsum, csum);
}

// The masked cube of one value (contrast masking).
VMAFX_KERNEL void check_adm_accum(const vx_i32 *x, const vx_i32 *thr, int n, int sub, vx_i64 sq_add, int sq_shift,
                                  vx_i64 cub_add, int cub_shift, vx_i64 *out) {
    VX_CHECK_LOOP(n) out[i] = adm_accum(x[i], thr[i], sub, sq_add, sq_shift, cub_add, cub_shift);
}

// dwt2_src_indices_filt's mirror of index k - 1 of an n-long line (k >= 0).
VMAFX_KERNEL void check_adm_mirror(int n, int count, vx_i32 *out) {
    VX_CHECK_LOOP(count) out[i] = adm_mirror((int)i - 1, n);
}

// VIF's mirror of index i - offset of an n-long line.
VMAFX_KERNEL void check_vif_reflect(int n, int offset, int count, vx_i32 *out) {
    VX_CHECK_LOOP(count) out[i] = vx_vif_reflect((int)i - offset, n);
}

VMAFX_KERNEL void check_vif_log2(const vx_u64 *v, int n, const vx_u16 *table, vx_i32 *out32, vx_i32 *out64) {
    VX_CHECK_LOOP(n) {
        out32[i] = vx_vif_log2_32(table, (vx_u32)v[i]);
        out64[i] = vx_vif_log2_64(table, v[i]);
    }
}

// The statistic's horizontal filters at scale `scale` on windows of 24 u32
// values (6 vector groups each; 4 + 2H of them read): per window 4 squares
// sums (vx_vif_hfilter_sq) and 4 means sums (vx_vif_hfilter_mu).
VMAFX_KERNEL void check_vif_hfilter(const vx_u32 *v, int n, int scale, vx_u64 *sq, vx_u32 *mu) {
    VX_CHECK_LOOP(n) {
        const vx_vif_u32x4 *plane = (const vx_vif_u32x4 *)v;
        int at = (int)i * 6;
        switch (scale) {
        case 0: vx_vif_hfilter_sq<0>(plane, at, sq + 4 * i); vx_vif_hfilter_mu<0>(plane, at, mu + 4 * i); break;
        case 1: vx_vif_hfilter_sq<1>(plane, at, sq + 4 * i); vx_vif_hfilter_mu<1>(plane, at, mu + 4 * i); break;
        case 2: vx_vif_hfilter_sq<2>(plane, at, sq + 4 * i); vx_vif_hfilter_mu<2>(plane, at, mu + 4 * i); break;
        default: vx_vif_hfilter_sq<3>(plane, at, sq + 4 * i); vx_vif_hfilter_mu<3>(plane, at, mu + 4 * i); break;
        }
    }
}

// The per-pixel statistic of one (sigma1², sigma2², sigma12) triple, alone:
// its four sums (num_log, den_log, num_non_log, den_non_log) per input.
VMAFX_KERNEL void check_vif_accumulate(const vx_i32 *s1, const vx_i32 *s2, const vx_i32 *s12, int n, double egl,
                                       const vx_u16 *table, vx_u64 *out) {
    VX_CHECK_LOOP(n) {
        vx_vif_sums s = {0, 0, 0, 0};
        vx_vif_accumulate(s, s1[i], s2[i], s12[i], egl, table);
        out[4 * i] = s.num_log;
        out[4 * i + 1] = s.den_log;
        out[4 * i + 2] = s.num_non_log;
        out[4 * i + 3] = s.den_non_log;
    }
}

// kernels/ssim.cu's mirror (KBND_SYMMETRIC) at indices i - offset.
VMAFX_KERNEL void check_ssim_symmetric(int n, int offset, int count, vx_i32 *out) {
    VX_CHECK_LOOP(count) out[i] = vx_ssim_symmetric((int)i - offset, n);
}

// One SSIM pixel from its five convolved values (5 floats per input):
// l, c, s as doubles (3 per input).
VMAFX_KERNEL void check_ssim_pixel(const float *v, int n, float c1, float c2, float c3, double *out) {
    VX_CHECK_LOOP(n) {
        const float *p = v + 5 * i;
        vx_ssim_pixel(p[0], p[1], p[2], p[3], p[4], c1, c2, c3, &out[3 * i], &out[3 * i + 1], &out[3 * i + 2]);
    }
}

// kernels/speed.cu's mirror (vif_filter1d_s's, no edge repeat) at i - offset.
VMAFX_KERNEL void check_speed_mirror(int n, int offset, int count, vx_i32 *out) {
    VX_CHECK_LOOP(count) out[i] = vx_speed_mirror((int)i - offset, n);
}

// picture_copy of one row of n samples (8- or 16-bit).
VMAFX_KERNEL void check_speed_sample(const vx_u8 *p, int bytes, float scaler, int n, float *out) {
    VX_CHECK_LOOP(n) out[i] = vx_speed_sample(p, 0, bytes, scaler, (int)i, 0);
}

// speed_temporal's input sample: picture_copy of a minus that of b (b
// null: a's alone), over one row of n samples of each.
VMAFX_KERNEL void check_speed_input(const vx_u8 *a, const vx_u8 *b, int bytes, float scaler, int n, float *out) {
    VX_CHECK_LOOP(n) out[i] = vx_speed_input(a, 0, b, 0, bytes, scaler, (int)i, 0);
}

// kernels/cambi.cu's c-value of pixel i (code imgs[i]) from its window's
// counts counts[i * (2 nd + 1) ..].
VMAFX_KERNEL void check_cambi_c_value(const vx_i32 *counts, const vx_i32 *imgs, int n, int nd, const vx_i32 *tvi, int vlt,
                                      const vx_i32 *weights, int band_base, int band_size, const float *lut, float *out) {
    VX_CHECK_LOOP(n) out[i] = vx_cambi_c_value(counts + i * (2 * nd + 1), imgs[i], nd, tvi, vlt, weights, band_base, band_size, lut);
}
