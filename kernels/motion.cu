// Motion SAD, libvmaf 3.2.0's fused pipeline (feature/integer_motion.c,
// motion_score_pipeline_8 / _16), the device twin of
// src/feature/motion/scalar.rs::sad. Integer only, so exact:
//   pass 1 (motion_blur_y_*): y[i][j] = round(sum_k F[k] * (prev - cur)[mirror(i-2+k)][j] >> shift)
//   pass 2 (motion_row_sad):  row_sad[i] = sum_j |round(sum_k F[k] * y[i][mirror(j-2+k)] >> 16)|
// as u32 wrapping per row; the host adds rows in u64. The CPU skips rows
// whose y is all zero; such rows sum to 0 here too.
#include "vmafx_compat.h"

__constant__ vx_i32 VX_MOTION_FILTER[5] = {3571, 16004, 26386, 16004, 3571};

__device__ inline int vx_mirror(int idx, int size) {
    if (idx < 0) return -idx;
    if (idx >= size) return 2 * size - idx - 2;
    return idx;
}

// One thread per pixel: grid (ceil(w/256), h). Pitches in bytes (the two
// planes may come from different producers); y_stride in elements.
VMAFX_KERNEL void motion_blur_y_8(const vx_u8 *prev, const vx_u8 *cur, int prev_pitch, int cur_pitch,
                                  int w, int h, vx_i32 *y, int y_stride) {
    int j = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    int i = blockIdx.y;
    if (j >= w) return;
    vx_i32 acc = 0;
    for (int k = 0; k < 5; k++) {
        long long r = vx_mirror(i - 2 + k, h);
        acc += VX_MOTION_FILTER[k] * ((vx_i32)prev[r * prev_pitch + j] - (vx_i32)cur[r * cur_pitch + j]);
    }
    y[(long long)i * y_stride + j] = (acc + (1 << 7)) >> 8;
}

VMAFX_KERNEL void motion_blur_y_16(const vx_u8 *prev, const vx_u8 *cur, int prev_pitch, int cur_pitch,
                                   int w, int h, int bits, vx_i32 *y, int y_stride) {
    int j = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    int i = blockIdx.y;
    if (j >= w) return;
    vx_i64 acc = 0;
    for (int k = 0; k < 5; k++) {
        long long r = vx_mirror(i - 2 + k, h);
        const vx_u16 *p = (const vx_u16 *)(prev + r * prev_pitch);
        const vx_u16 *c = (const vx_u16 *)(cur + r * cur_pitch);
        acc += (vx_i64)VX_MOTION_FILTER[k] * (vx_i64)((vx_i32)p[j] - (vx_i32)c[j]);
    }
    y[(long long)i * y_stride + j] = (vx_i32)((acc + (1LL << (bits - 1))) >> bits);
}

// One block per row: grid (1, h).
VMAFX_KERNEL void motion_row_sad(const vx_i32 *y, int y_stride, int w, vx_u32 *row_sad) {
    __shared__ vx_u32 scratch[VMAFX_BLOCK];
    int i = blockIdx.y;
    const vx_i32 *row = y + (long long)i * y_stride;
    vx_u32 sum = 0;
    for (int j = threadIdx.x; j < w; j += VMAFX_BLOCK) {
        vx_i64 acc = 0;
        for (int k = 0; k < 5; k++) acc += (vx_i64)VX_MOTION_FILTER[k] * row[vx_mirror(j - 2 + k, w)];
        vx_i32 v = (vx_i32)((acc + (1 << 15)) >> 16);
        sum += (vx_u32)(v < 0 ? -(vx_i64)v : (vx_i64)v);
    }
    vx_u32 total = vx_block_sum_u32(sum, scratch);
    if (threadIdx.x == 0) row_sad[i] = total;
}
