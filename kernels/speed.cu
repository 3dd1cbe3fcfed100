// SpEED's downscale (libvmaf 3.2.0 feature/speed.c filter_and_downscale
// without a prescale: picture_copy (for speed_temporal, of two frames and
// subtract_image), vif_filter1d_s with the anti-alias taps, vif_dec16_s):
// the device twin of src/feature/speed/scalar.rs SpeedState::downscale. Only the samples decimation keeps are computed,
// one thread each: for each horizontal tap the vertical pass of that column
// (float, taps in order from 0.0f), then the horizontal sum (float, taps in
// order from 0.0f), as the CPU's row buffer and output are summed. No FMA
// contraction (--fmad=false, -ffp-contract=off). The rest of SpEED (the
// local mean, the 5x5 block statistics, eigenvalues, the score) runs on the
// host on the decimated picture: it is small (1/256 of the samples) and its
// sums and linear algebra are the CPU's code.
#include "vmafx_compat.h"

// vif_filter1d_s's mirror (no edge repeat).
__device__ inline int vx_speed_mirror(int i, int n) {
    if (i < 0) return -i;
    if (i >= n) return 2 * n - i - 2;
    return i;
}

// picture_copy: the sample scaled to 8 bits (scaler 1 at 8 bits), minus 128.
__device__ inline float vx_speed_sample(const vx_u8 *p, int pitch, int bytes, float scaler, int x, int y) {
    const vx_u8 *row = p + (long long)y * pitch;
    if (bytes == 1) return (float)row[x] + -128.0f;
    return (float)((const vx_u16 *)row)[x] / scaler + -128.0f;
}

// The blur's input sample at (x, y): picture_copy of src, minus
// picture_copy of sub where sub is given (speed_temporal's subtract_image
// of the previous and the current frame, a float difference).
__device__ inline float vx_speed_input(const vx_u8 *src, int pitch, const vx_u8 *sub, int sub_pitch, int bytes,
                                       float scaler, int x, int y) {
    float v = vx_speed_sample(src, pitch, bytes, scaler, x, y);
    if (sub) v -= vx_speed_sample(sub, sub_pitch, bytes, scaler, x, y);
    return v;
}

// Grid (ceil(ow / 256), oh); out[y * ow + x] is the blurred sample at
// (16 x, 16 y) of the w x h plane src (minus sub when not null: of the
// same size and depth); ow = w / 16, oh = h / 16.
VMAFX_KERNEL void speed_blur_dec16(const vx_u8 *src, int pitch, const vx_u8 *sub, int sub_pitch, int bytes,
                                   float scaler, int w, int h, const float *taps, int len, float *out, int ow) {
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    int y = blockIdx.y;
    if (x >= ow) return;
    int half = len / 2;
    float o = 0.0f;
    for (int fj = 0; fj < len; fj++) {
        int jj = vx_speed_mirror(16 * x - half + fj, w);
        float acc = 0.0f;
        for (int fi = 0; fi < len; fi++) {
            int ii = vx_speed_mirror(16 * y - half + fi, h);
            acc += taps[fi] * vx_speed_input(src, pitch, sub, sub_pitch, bytes, scaler, jj, ii);
        }
        o += taps[fj] * acc;
    }
    out[(long long)y * ow + x] = o;
}
