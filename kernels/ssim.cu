// float SSIM and MS-SSIM, libvmaf 3.2.0 feature/iqa/ (convolve.c with
// IQA_CONVOLVE_1D, decimate.c, ssim_tools.c _iqa_ssim): the device twin of
// src/feature/ssim/iqa.rs. Every value is the CPU's, bit for bit:
// - each output sample is one thread's loop over its taps in the CPU's
//   order (float products, double sums, rounded to float once), so no sum
//   is split or reordered;
// - no FMA contraction (NVRTC --fmad=false, hiprtc -ffp-contract=off, the
//   emulator -ffp-contract=off): each product rounds before the add;
// - division and sqrt are IEEE round-to-nearest (NVRTC's defaults
//   --prec-div=true, --prec-sqrt=true; CUDA's double sqrt is exact-rounded);
// - the frame's sums (double, in row-major order) are NOT done here: the
//   per-pixel l, c, s go back to the host, which adds them in the CPU's
//   order (iqa::TermSums), since no other order gives the same double.
// Kernels have no __syncthreads: a block is VMAFX_BLOCK columns by
// VX_SSIM_ROWS rows, one thread per column.
#include "vmafx_compat.h"

#define VX_SSIM_LEN 11
#define VX_SSIM_ROWS 8

// KBND_SYMMETRIC: mirror about the edge, the edge sample repeated. The
// host checks that one reflection lands inside (iqa::check_decimate).
__device__ inline int vx_ssim_symmetric(int i, int n) {
    if (i < 0) return -1 - i;
    if (i >= n) return (n - (i - n)) - 1;
    return i;
}

// picture_copy of 8-bit luma: samples as floats.
VMAFX_KERNEL void ssim_to_float_8(const vx_u8 *src, int pitch, int w, int h, float *out) {
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    if (x >= w) return;
    for (int r = 0; r < VX_SSIM_ROWS; r++) {
        int y = blockIdx.y * VX_SSIM_ROWS + r;
        if (y >= h) return;
        out[(long long)y * w + x] = (float)src[(long long)y * pitch + x];
    }
}

// picture_copy above 8 bits: each sample divided by `scaler` (4, 16, 256)
// in float, so the 8-bit constants apply.
VMAFX_KERNEL void ssim_to_float_16(const vx_u8 *src, int pitch, int w, int h, float scaler, float *out) {
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    if (x >= w) return;
    for (int r = 0; r < VX_SSIM_ROWS; r++) {
        int y = blockIdx.y * VX_SSIM_ROWS + r;
        if (y >= h) return;
        const vx_u16 *row = (const vx_u16 *)(src + (long long)y * pitch);
        out[(long long)y * w + x] = (float)row[x] / scaler;
    }
}

// _iqa_filter_pixel with KBND_SYMMETRIC, kscale 1: the k x k kernel
// (`taps`, row-major; NULL: every tap `box_tap`) centred on (x, y). The
// CPU's inside path sums the same taps in the same order.
__device__ inline float vx_ssim_filter_pixel(const float *img, int w, int h, int x, int y, const float *taps, int k,
                                             float box_tap) {
    int c = k / 2, even = (k % 2 == 0);
    double sum = 0.0;
    int ko = 0;
    for (int v = -c; v <= c - even; v++) {
        const float *row = img + (long long)vx_ssim_symmetric(y + v, h) * w;
        for (int u = -c; u <= c - even; u++) {
            float t = taps ? taps[ko] : box_tap;
            sum += (double)(row[vx_ssim_symmetric(x + u, w)] * t);
            ko++;
        }
    }
    return (float)sum;
}

// _iqa_decimate: every `factor`-th sample of the filtered image, into a
// new sw x sh image (the CPU's in-place decimation reads no sample it has
// already overwritten; iqa.rs's unit test holds that).
VMAFX_KERNEL void ssim_decimate(const float *src, int w, int h, const float *taps, int k, float box_tap, int factor,
                                float *out, int sw, int sh) {
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    if (x >= sw) return;
    for (int r = 0; r < VX_SSIM_ROWS; r++) {
        int y = blockIdx.y * VX_SSIM_ROWS + r;
        if (y >= sh) return;
        out[(long long)y * sw + x] = vx_ssim_filter_pixel(src, w, h, x * factor, y * factor, taps, k, box_tap);
    }
}

// The horizontal Gaussian pass of the five images _iqa_ssim convolves
// (reference, distorted, their squares, their product; squares and product
// rounded to float first, as the CPU stores them): five planes of dw x h,
// dw = w - 10, sample x the CPU's cache[y * w + x + 5].
VMAFX_KERNEL void ssim_conv_h(const float *ref, const float *dis, int w, int h, const float *win, float *out) {
    int dw = w - VX_SSIM_LEN + 1;
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    if (x >= dw) return;
    long long plane = (long long)dw * h;
    for (int r = 0; r < VX_SSIM_ROWS; r++) {
        int y = blockIdx.y * VX_SSIM_ROWS + r;
        if (y >= h) return;
        const float *a = ref + (long long)y * w + x;
        const float *b = dis + (long long)y * w + x;
        double s[5] = {0.0, 0.0, 0.0, 0.0, 0.0};
        for (int u = 0; u < VX_SSIM_LEN; u++) {
            float ra = a[u], db = b[u], t = win[u];
            float sq_r = ra * ra, sq_d = db * db, both = ra * db;
            s[0] += (double)(ra * t);
            s[1] += (double)(db * t);
            s[2] += (double)(sq_r * t);
            s[3] += (double)(sq_d * t);
            s[4] += (double)(both * t);
        }
        long long at = (long long)y * dw + x;
        for (int p = 0; p < 5; p++) out[p * plane + at] = (float)s[p];
    }
}

// One pixel of _iqa_ssim from its five convolved values (the means, the
// raw second moments): l, c and s as the CPU's iqa::pixel_terms.
__device__ inline void vx_ssim_pixel(float mu1, float mu2, float ref_sq, float cmp_sq, float both, float c1, float c2,
                                     float c3, double *l, double *c, double *s) {
    float ref_sigma = ref_sq - mu1 * mu1;
    float cmp_sigma = cmp_sq - mu2 * mu2;
    // MAX(0.0, v): a double comparison, the float kept (NaN stays).
    if (0.0 > (double)ref_sigma) ref_sigma = 0.0f;
    if (0.0 > (double)cmp_sigma) cmp_sigma = 0.0f;
    float sigma_both = both - mu1 * mu2;
    float sigma_ref_sigma_cmp = (float)sqrt((double)(ref_sigma * cmp_sigma));
    *l = (2.0 * (double)mu1 * (double)mu2 + (double)c1) / (double)(mu1 * mu1 + mu2 * mu2 + c1);
    *c = (2.0 * (double)sigma_ref_sigma_cmp + (double)c2) / (double)(ref_sigma + cmp_sigma + c2);
    float clamped = (sigma_both < 0.0f && sigma_ref_sigma_cmp <= 0.0f) ? 0.0f : sigma_both;
    *s = (double)((clamped + c3) / (sigma_ref_sigma_cmp + c3));
}

// The vertical Gaussian pass of the five planes of ssim_conv_h (dw x h)
// and each pixel's l, c, s: three arrays of dw x (h - 10) doubles, row-major.
VMAFX_KERNEL void ssim_terms(const float *hp, int dw, int h, const float *win, float c1, float c2, float c3,
                             double *l_out, double *c_out, double *s_out) {
    int dh = h - VX_SSIM_LEN + 1;
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    if (x >= dw) return;
    long long plane = (long long)dw * h;
    for (int r = 0; r < VX_SSIM_ROWS; r++) {
        int y = blockIdx.y * VX_SSIM_ROWS + r;
        if (y >= dh) return;
        float m[5];
        for (int p = 0; p < 5; p++) {
            const float *col = hp + p * plane + (long long)y * dw + x;
            double sum = 0.0;
            for (int v = 0; v < VX_SSIM_LEN; v++) sum += (double)(col[(long long)v * dw] * win[v]);
            m[p] = (float)sum;
        }
        long long at = (long long)y * dw + x;
        vx_ssim_pixel(m[0], m[1], m[2], m[3], m[4], c1, c2, c3, &l_out[at], &c_out[at], &s_out[at]);
    }
}
