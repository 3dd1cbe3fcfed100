// CAMBI's c-values (libvmaf 3.2.0 feature/cambi.c calculate_c_values):
// the device twin of src/feature/cambi/scalar.rs c_values, one thread per
// pixel of a scale. libvmaf slides per-column histograms of the band's
// codes down the picture; a histogram holds counts only, so each thread
// counts its own window instead: rows rows[2 y] ..= rows[2 y + 1] (the
// rows libvmaf's histogram holds when it computes row y, settled on the
// host from its loop order), columns x - pad ..= x + pad clipped to the
// picture, masked pixels whose code is in the band. Integer counts equal
// the histogram's; the one float step (a weight times two counts,
// converted to float, times the reciprocal table's entry) is a single
// multiplication, compared as libvmaf compares. The image and mask
// (decimation, anti-dithering, the spatial mask, the mode filter) and the
// pooling are the host's, with the CPU's code.
#include "vmafx_compat.h"

// Contrast steps at most (1 << max_log_contrast, max_log_contrast <= 5).
#define VX_CAMBI_MAX_DIFFS 32

// The c-value of a masked pixel of code img from counts[k], the window's
// pixels of code img - nd + k (0 <= k <= 2 nd), each in the band
// [band_base, band_base + band_size): c_value_pixel of scalar.rs.
__device__ inline float vx_cambi_c_value(const vx_i32 *counts, int img, int nd, const vx_i32 *tvi, int vlt,
                                         const vx_i32 *weights, int band_base, int band_size, const float *lut) {
    int value = img + nd;
    int compact = img - band_base;
    if ((unsigned)compact >= (unsigned)band_size) return 0.0f;
    int p0 = counts[nd];
    float c = 0.0f;
    for (int d = 0; d < nd; d++) {
        int step = d + 1;
        if (value <= tvi[d] && value + step > vlt) {
            int p1 = counts[nd + step];
            int p2 = compact - step >= 0 ? counts[nd - step] : 0;
            float val;
            if (p1 > p2) val = (float)(weights[d] * p0 * p1) * lut[p1 + p0];
            else val = (float)(weights[d] * p0 * p2) * lut[p2 + p0];
            if (val > c) c = val;
        }
    }
    return c;
}

// Grid (ceil(w / 256), h); image and mask are w x h at `stride` samples a
// row; out[y * w + x] is the pixel's c-value (0 where the mask is 0).
VMAFX_KERNEL void cambi_c_values(const vx_u16 *image, const vx_u16 *mask, int stride, int w, int h,
                                 const vx_i32 *rows, int pad, int nd, const vx_i32 *tvi, int vlt,
                                 const vx_i32 *weights, int band_base, int band_size, const float *lut,
                                 float *out) {
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    int y = blockIdx.y;
    if (x >= w) return;
    float c = 0.0f;
    if (mask[(long long)y * stride + x]) {
        int img = image[(long long)y * stride + x];
        vx_i32 counts[2 * VX_CAMBI_MAX_DIFFS + 1];
        for (int k = 0; k <= 2 * nd; k++) counts[k] = 0;
        int x0 = x - pad < 0 ? 0 : x - pad;
        int x1 = x + pad > w - 1 ? w - 1 : x + pad;
        for (int r = rows[2 * y]; r <= rows[2 * y + 1]; r++) {
            const vx_u16 *ir = image + (long long)r * stride;
            const vx_u16 *mr = mask + (long long)r * stride;
            for (int cx = x0; cx <= x1; cx++) {
                int code = ir[cx];
                int k = code - img + nd;
                if (mr[cx] && k >= 0 && k <= 2 * nd && code >= band_base && code - band_base < band_size) counts[k]++;
            }
        }
        c = vx_cambi_c_value(counts, img, nd, tvi, vlt, weights, band_base, band_size, lut);
    }
    out[(long long)y * w + x] = c;
}
