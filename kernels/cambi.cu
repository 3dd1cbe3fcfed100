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

// ---------------------------------------------------------------------
// The rest of a frame on the device (src/feature/cambi/gpu.rs
// `score_dev`): the picture passes of scalar.rs, each out of place (the
// CPU's in-place loops read every sample before they change it, so each
// is a pure function of its input), and the top-k pooling's inputs.

// Rows each block of the picture passes covers (grid (ceil(w / 256),
// ceil(h / VX_CAMBI_ROWS))): cheap passes, fewer blocks.
#define VX_CAMBI_ROWS 8
// Values each thread of the pooling passes covers (grid (ceil(n / (256 *
// VX_CAMBI_PER_THREAD)))): one block-wide reduction per 4096 values.
#define VX_CAMBI_PER_THREAD 16

// Luma sample (x, y) of a `bits`-deep plane (1 or 2 bytes a sample) to
// 10 bits: scalar.rs sample_to_10bit.
__device__ inline vx_u16 vx_cambi_10bit(const vx_u8 *plane, long long pitch, int two_bytes, int bits, int x, int y) {
    const vx_u8 *row = plane + (long long)y * pitch;
    vx_u32 v = two_bytes ? (vx_u32)((const vx_u16 *)row)[x] : (vx_u32)row[x];
    if (bits >= 10) {
        int shift = bits - 10;
        vx_u32 round = shift == 0 ? 0u : 1u << (shift - 1);
        return (vx_u16)((v + round) >> shift);
    }
    return (vx_u16)(v << (10 - bits));
}

// Picture-pass grid: out (w x h at `stride`) from the plane's
// columns xs[x] and rows ys[y] (scalar.rs to_10bit; the identity when
// the size does not change).
VMAFX_KERNEL void cambi_load(const vx_u8 *plane, long long pitch, int two_bytes, int bits, const vx_i32 *xs,
                             const vx_i32 *ys, int w, int h, vx_u16 *out, int stride) {
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    if (x >= w) return;
    for (int y = blockIdx.y * VX_CAMBI_ROWS; y < h && y < (int)(blockIdx.y + 1) * VX_CAMBI_ROWS; y++) {
        out[(long long)y * stride + x] = vx_cambi_10bit(plane, pitch, two_bytes, bits, xs[x], ys[y]);
    }
}

// Picture-pass grid: the first sample above `max` in row-major
// order, as y * w + x, lowered into *first (scalar.rs first_out_of_range).
VMAFX_KERNEL void cambi_range_check(const vx_u8 *plane, long long pitch, int w, int h, vx_u32 max, vx_u32 *first) {
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    if (x >= w) return;
    for (int y = blockIdx.y * VX_CAMBI_ROWS; y < h && y < (int)(blockIdx.y + 1) * VX_CAMBI_ROWS; y++) {
        vx_u32 v = ((const vx_u16 *)(plane + (long long)y * pitch))[x];
        if (v > max) atomicMin(first, (vx_u32)y * (vx_u32)w + (vx_u32)x);
    }
}

// Picture-pass grid: scalar.rs anti_dither, in to out.
VMAFX_KERNEL void cambi_anti_dither(const vx_u16 *in, vx_u16 *out, int stride, int w, int h) {
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    if (x >= w) return;
    for (int y = blockIdx.y * VX_CAMBI_ROWS; y < h && y < (int)(blockIdx.y + 1) * VX_CAMBI_ROWS; y++) {
        long long a = (long long)y * stride + x;
        vx_u32 v = in[a];
        if (y < h - 1 && x < w - 1) v = (v + in[a + 1] + in[a + stride] + in[a + stride + 1]) >> 2;
        else if (y < h - 1) v = (v + in[a + stride]) >> 1;
        else if (x < w - 1) v = (v + in[a + 1]) >> 1;
        out[a] = (vx_u16)v;
    }
}

// Whether (x, y) equals its right and lower neighbours (a missing one
// counts as equal): scalar.rs spatial_mask's flat pixels.
__device__ inline int vx_cambi_flat(const vx_u16 *img, int stride, int w, int h, int x, int y) {
    long long a = (long long)y * stride + x;
    int flat = 1;
    if (x < w - 1) flat &= img[a] == img[a + 1];
    if (y < h - 1) flat &= img[a] == img[a + stride];
    return flat;
}

// Picture-pass grid: scalar.rs spatial_mask: 1 where more than
// `threshold` pixels of the 7x7 square (clipped to the picture) are flat.
VMAFX_KERNEL void cambi_spatial_mask(const vx_u16 *img, vx_u16 *mask, int stride, int w, int h, int threshold) {
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    if (x >= w) return;
    for (int y = blockIdx.y * VX_CAMBI_ROWS; y < h && y < (int)(blockIdx.y + 1) * VX_CAMBI_ROWS; y++) {
        int y0 = y - 3 < 0 ? 0 : y - 3, y1 = y + 3 > h - 1 ? h - 1 : y + 3;
        int x0 = x - 3 < 0 ? 0 : x - 3, x1 = x + 3 > w - 1 ? w - 1 : x + 3;
        int count = 0;
        for (int r = y0; r <= y1; r++)
            for (int c = x0; c <= x1; c++) count += vx_cambi_flat(img, stride, w, h, c, r);
        mask[(long long)y * stride + x] = count > threshold;
    }
}

// Picture-pass grid, w x h the smaller scale: scalar.rs decimate,
// (x, y) <- (2 x, 2 y).
VMAFX_KERNEL void cambi_decimate(const vx_u16 *in, vx_u16 *out, int stride, int w, int h) {
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    if (x >= w) return;
    for (int y = blockIdx.y * VX_CAMBI_ROWS; y < h && y < (int)(blockIdx.y + 1) * VX_CAMBI_ROWS; y++) {
        out[(long long)y * stride + x] = in[(long long)(2 * y) * stride + 2 * x];
    }
}

// scalar.rs mode3 (symmetric in its three arguments).
__device__ inline vx_u16 vx_cambi_mode3(vx_u16 a, vx_u16 b, vx_u16 c) {
    if (a == b || a == c) return a;
    if (b == c) return b;
    if (a <= b && a <= c) return a;
    return b <= c ? b : c;
}

// Row r's horizontal mode at column x (first and last columns kept).
__device__ inline vx_u16 vx_cambi_mode_h(const vx_u16 *in, int stride, int w, int x, int r) {
    const vx_u16 *row = in + (long long)r * stride;
    if (x == 0 || x == w - 1) return row[x];
    return vx_cambi_mode3(row[x - 1], row[x], row[x + 1]);
}

// Picture-pass grid: scalar.rs filter_mode, in to out: the
// vertical mode of three rows' horizontal modes, the first and last rows
// as they were.
VMAFX_KERNEL void cambi_filter_mode(const vx_u16 *in, vx_u16 *out, int stride, int w, int h) {
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    if (x >= w) return;
    for (int y = blockIdx.y * VX_CAMBI_ROWS; y < h && y < (int)(blockIdx.y + 1) * VX_CAMBI_ROWS; y++) {
        long long a = (long long)y * stride + x;
        if (y == 0 || y == h - 1) {
            out[a] = in[a];
            continue;
        }
        out[a] = vx_cambi_mode3(vx_cambi_mode_h(in, stride, w, x, y - 1), vx_cambi_mode_h(in, stride, w, x, y),
                                vx_cambi_mode_h(in, stride, w, x, y + 1));
    }
}

// ---- Pooling: the k largest c-values of a scale without sorting them.
// c-values are floats >= 0, whose bit patterns order as the values do.
// Two histogram passes (the high 16 bits, then the low 16 bits inside the
// bin that holds the k-th largest) give T, the k-th largest value, and
// how many values exceed it; a last pass adds the values above T exactly,
// as integers in units of 2^-24. The host adds T's ties and uses the
// exact sum only where libvmaf's double sum, in any order, cannot round
// (src/feature/cambi/gpu.rs `exact_pool`); otherwise it reads the
// c-values back and pools them with the CPU's code.

// Per scale, words of the pooling state (the host zeroes them).
#define VX_CAMBI_HI_BIN 0     // the high bin holding the k-th largest
#define VX_CAMBI_ABOVE_HI 1   // values in higher high bins
#define VX_CAMBI_T_BITS 2     // the k-th largest value's bits
#define VX_CAMBI_ABOVE_T 3    // values above it
#define VX_CAMBI_LOW_BIT 4    // lowest set bit of any value above T (in 2^-24 units; 64 none)
#define VX_CAMBI_INEXACT 5    // a value above T not a multiple of 2^-24 or not below 2^14
#define VX_CAMBI_FOUND 6      // 1 once the low level found T (the host pools on the device's word only then)
#define VX_CAMBI_STATE_WORDS 8
#define VX_CAMBI_BINS 65536

// Any grid: n words of 0 (once a frame: cambi_select leaves the bins at 0).
VMAFX_KERNEL void cambi_zero(vx_u32 *p, int n) {
    for (int i = blockIdx.x * VMAFX_BLOCK + threadIdx.x; i < n; i += gridDim.x * VMAFX_BLOCK) p[i] = 0;
}

// Pooling grid: level 0 counts c[i]'s high 16 bits, level 1 the low 16
// bits of those in state's high bin. Zeros, most of a picture, are
// counted per block (one atomic a block, not one a pixel).
VMAFX_KERNEL void cambi_histogram(const float *c, int n, const vx_u32 *state, int level, vx_u32 *bins) {
    __shared__ vx_u32 scratch[VMAFX_BLOCK];
    vx_u32 zeros = 0;
    for (int j = 0; j < VX_CAMBI_PER_THREAD; j++) {
        int i = (blockIdx.x * VX_CAMBI_PER_THREAD + j) * VMAFX_BLOCK + threadIdx.x;
        if (i >= n) break;
        vx_u32 bits = __float_as_uint(c[i]);
        if (level == 1 && (bits >> 16) != state[VX_CAMBI_HI_BIN]) continue;
        if (bits == 0) zeros++;
        else atomicAdd(&bins[level == 0 ? bits >> 16 : bits & 0xffff], 1u);
    }
    zeros = vx_block_sum_u32(zeros, scratch);
    if (threadIdx.x == 0 && zeros) atomicAdd(&bins[0], zeros);
}

// One block: the bin b, from the top, where the count reaches k (level
// 0: k; level 1: k less the values above the high bin): bins above b
// hold fewer than k values, b and above at least k. The bins are left at
// 0 for the next histogram.
VMAFX_KERNEL void cambi_select(vx_u32 *bins, int k, int level, vx_u32 *state) {
    __shared__ vx_u32 sums[VMAFX_BLOCK];
    __shared__ vx_u32 above_part[VMAFX_BLOCK];
    const int per = VX_CAMBI_BINS / VMAFX_BLOCK;
    int t = threadIdx.x;
    vx_u32 want = level == 0 ? (vx_u32)k : (vx_u32)k - state[VX_CAMBI_ABOVE_HI];
    vx_u32 s = 0;
    for (int b = 0; b < per; b++) s += bins[t * per + b];
    sums[t] = s;
    __syncthreads();
    if (t == 0) {
        // Counts in the parts above each part, walked from the top.
        vx_u32 acc = 0;
        for (int p = VMAFX_BLOCK - 1; p >= 0; p--) {
            above_part[p] = acc;
            acc += sums[p];
        }
    }
    __syncthreads();
    vx_u32 above = above_part[t];
    if (above < want && above + sums[t] >= want) {
        for (int b = per - 1; b >= 0; b--) {
            vx_u32 here = bins[t * per + b];
            if (above + here >= want) {
                vx_u32 bin = (vx_u32)(t * per + b);
                if (level == 0) {
                    state[VX_CAMBI_HI_BIN] = bin;
                    state[VX_CAMBI_ABOVE_HI] = above;
                } else {
                    state[VX_CAMBI_T_BITS] = (state[VX_CAMBI_HI_BIN] << 16) | bin;
                    state[VX_CAMBI_ABOVE_T] = state[VX_CAMBI_ABOVE_HI] + above;
                    state[VX_CAMBI_FOUND] = 1;
                }
                break;
            }
            above += here;
        }
    }
    __syncthreads();
    for (int b = 0; b < per; b++) bins[t * per + b] = 0;
}

// The least of one u32 per thread over the block.
__device__ inline vx_u32 vx_cambi_block_min(vx_u32 v, vx_u32 *scratch) {
    scratch[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = VMAFX_BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s && scratch[threadIdx.x + s] < scratch[threadIdx.x]) scratch[threadIdx.x] = scratch[threadIdx.x + s];
        __syncthreads();
    }
    return scratch[0];
}

// Pooling grid: the values above T added as integers in units of 2^-24
// into *sum, their lowest set bit lowered into state, and any value that
// is no whole number of units or not below 2^14 flagged.
VMAFX_KERNEL void cambi_top_sum(const float *c, int n, vx_u32 *state, vx_u64 *sum) {
    __shared__ vx_u64 scratch[VMAFX_BLOCK];
    __shared__ vx_u32 low_scratch[VMAFX_BLOCK];
    vx_u32 t_bits = state[VX_CAMBI_T_BITS];
    vx_u64 units = 0;
    vx_u32 low_bit = 64;
    for (int j = 0; j < VX_CAMBI_PER_THREAD; j++) {
        int i = (blockIdx.x * VX_CAMBI_PER_THREAD + j) * VMAFX_BLOCK + threadIdx.x;
        if (i >= n) break;
        vx_u32 bits = __float_as_uint(c[i]);
        if (bits <= t_bits) continue;
        int exponent = (int)(bits >> 23);
        vx_u64 mantissa = (bits & 0x7fffffu) | 0x800000u;
        // value = mantissa * 2^(exponent - 150) = mantissa * 2^(exponent - 126) units.
        int shift = exponent - 126;
        if (exponent == 0 || exponent >= 141 || (shift < 0 && (mantissa & ((1ull << -shift) - 1)) != 0)) {
            atomicMax(&state[VX_CAMBI_INEXACT], 1u);
            continue;
        }
        vx_u64 v = shift >= 0 ? mantissa << shift : mantissa >> -shift;
        units += v;
        vx_u32 low = (vx_u32)(63 - __clzll((long long)(v & (~v + 1))));
        if (low < low_bit) low_bit = low;
    }
    vx_u64 total = vx_block_sum_u64(units, scratch);
    vx_u32 lowest = vx_cambi_block_min(low_bit, low_scratch);
    if (threadIdx.x == 0 && total) atomicAdd(sum, total);
    if (threadIdx.x == 0 && lowest < 64) atomicMin(&state[VX_CAMBI_LOW_BIT], lowest);
}
