// Motion SAD, libvmaf 3.2.0's fused pipeline (feature/integer_motion.c,
// motion_score_pipeline_8 / _16), the device twin of
// src/feature/motion/scalar.rs::sad. Integer only, so exact:
//   vertical:   y[i][j] = round(sum_k F[k] * (prev - cur)[mirror(i-2+k)][j] >> shift)
//   horizontal: row_sad[i] = sum_j |round(sum_k F[k] * y[i][mirror(j-2+k)] >> 16)|
// as u32 wrapping per row; the host adds rows in u64. The CPU skips rows
// whose y is all zero; such rows sum to 0 here too. Both passes run in one
// kernel, per tile (motion_sad_*).
#include "vmafx_compat.h"

__constant__ vx_i32 VX_MOTION_FILTER[5] = {3571, 16004, 26386, 16004, 3571};

template <bool B, typename A, typename C> struct vx_pick {
    typedef A type;
};
template <typename A, typename C> struct vx_pick<false, A, C> {
    typedef C type;
};

__device__ inline int vx_mirror(int idx, int size) {
    if (idx < 0) return -idx;
    if (idx >= size) return 2 * size - idx - 2;
    return idx;
}

// One block per tile of VX_MOTION_TH rows by VX_MOTION_TW columns: grid
// (ceil(w / VX_MOTION_TW), ceil(h / VX_MOTION_TH)). Both passes run in shared
// memory (the vertical blur's i32 plane never goes to device memory), and
// each tile adds its rows' parts to row_sad with u32 atomics: a row's sum
// wraps mod 2^32 as the CPU's does, and wrapping addition is order-free, so
// the split across tiles cannot change it. row_sad starts at zero
// (motion_zero). Pitches in bytes (the planes may come from different
// producers).
#define VX_MOTION_TH 16
#define VX_MOTION_TW 256
// Staged columns and rows: the tile with the filters' 2-sample halo, staged
// from column j0 - 4 so that groups of 4 samples are aligned loads.
#define VX_MOTION_SW (VX_MOTION_TW + 8)
#define VX_MOTION_SH (VX_MOTION_TH + 4)
#define VX_MOTION_GROUPS (VX_MOTION_SW / 4)

template <typename T> struct alignas(4 * sizeof(T)) vx_motion_vec4 {
    T v[4];
};
struct alignas(16) vx_motion_i32x4 {
    vx_i32 v[4];
};

template <bool WIDE>
__device__ inline void vx_motion_sad_tile(const vx_u8 *prev, const vx_u8 *cur, int prev_pitch, int cur_pitch, int w,
                                          int h, int bits, vx_u32 *row_sad) {
    typedef typename vx_pick<WIDE, vx_u16, vx_u8>::type T;
    // prev - cur, then the vertical blur; staged column c is picture
    // column mirror(j0 - 4 + c), so both passes read mirrored samples
    // exactly where the two-kernel form read them.
    __shared__ vx_motion_i32x4 diff4[VX_MOTION_SH * VX_MOTION_GROUPS];
    __shared__ vx_i32 blur[VX_MOTION_TH][VX_MOTION_SW];
    __shared__ vx_u32 part[VX_MOTION_TH][32];
    vx_i32(*diff)[VX_MOTION_SW] = (vx_i32(*)[VX_MOTION_SW])diff4;
    const int i0 = blockIdx.y * VX_MOTION_TH, j0 = blockIdx.x * VX_MOTION_TW;
    const int t = threadIdx.x;
    // Tiles whose staged columns all lie inside the picture need no column
    // mirror: one aligned load of 4 samples per group where the rows allow.
    const bool inside = j0 - 4 >= 0 && j0 - 4 + VX_MOTION_SW <= w;
    // Only samples some output reads are staged (rows up to h + 1, columns
    // -2 to w + 1, as the filters mirror them); the rest stay unread.
    for (int idx = t; idx < VX_MOTION_SH * VX_MOTION_GROUPS; idx += VMAFX_BLOCK) {
        int r = idx / VX_MOTION_GROUPS, g = idx - r * VX_MOTION_GROUPS;
        int y = i0 - 2 + r, x0 = j0 - 4 + 4 * g;
        if (y > h + 1) continue;
        long long yr = vx_mirror(y, h);
        const T *rp = (const T *)(prev + yr * prev_pitch), *rc = (const T *)(cur + yr * cur_pitch);
        vx_motion_i32x4 d;
        if (inside && (((vx_u64)(rp + x0) | (vx_u64)(rc + x0)) & (4 * sizeof(T) - 1)) == 0) {
            vx_motion_vec4<T> a = *(const vx_motion_vec4<T> *)(rp + x0), b = *(const vx_motion_vec4<T> *)(rc + x0);
            for (int e = 0; e < 4; e++) d.v[e] = (vx_i32)a.v[e] - (vx_i32)b.v[e];
        } else {
            for (int e = 0; e < 4; e++) {
                int x = x0 + e;
                if (x < -2 || x > w + 1) {
                    d.v[e] = 0;
                    continue;
                }
                int xc = vx_mirror(x, w);
                d.v[e] = (vx_i32)rp[xc] - (vx_i32)rc[xc];
            }
        }
        diff4[idx] = d;
    }
    __syncthreads();
    // Vertical blur, the symmetric filter's mirrored taps added first.
    for (int idx = t; idx < VX_MOTION_TH * VX_MOTION_SW; idx += VMAFX_BLOCK) {
        int r = idx / VX_MOTION_SW, c = idx - r * VX_MOTION_SW;
        int x = j0 - 4 + c;
        if (i0 + r >= h || x < -2 || x > w + 1) continue;
        vx_i32 d04 = diff[r][c] + diff[r + 4][c], d13 = diff[r + 1][c] + diff[r + 3][c], d2 = diff[r + 2][c];
        if (WIDE) {
            vx_i64 acc = (vx_i64)VX_MOTION_FILTER[0] * d04 + (vx_i64)VX_MOTION_FILTER[1] * d13 +
                         (vx_i64)VX_MOTION_FILTER[2] * d2;
            blur[r][c] = (vx_i32)((acc + (1LL << (bits - 1))) >> bits);
        } else {
            vx_i32 acc = VX_MOTION_FILTER[0] * d04 + VX_MOTION_FILTER[1] * d13 + VX_MOTION_FILTER[2] * d2;
            blur[r][c] = (acc + (1 << 7)) >> 8;
        }
    }
    __syncthreads();
    // Horizontal blur and |.|: a warp's 32 threads per row, two rows each;
    // output column c reads staged columns c + 2 .. c + 6.
    const int lane = t & 31, warp = t >> 5;
    for (int r = warp; r < VX_MOTION_TH; r += VMAFX_BLOCK / 32) {
        vx_u32 sum = 0;
        if (i0 + r < h)
            for (int c = lane; c < VX_MOTION_TW && j0 + c < w; c += 32) {
                const vx_i32 *b = &blur[r][c + 2];
                vx_i64 acc = (vx_i64)VX_MOTION_FILTER[0] * (b[0] + b[4]) +
                             (vx_i64)VX_MOTION_FILTER[1] * (b[1] + b[3]) + (vx_i64)VX_MOTION_FILTER[2] * b[2];
                vx_i32 v = (vx_i32)((acc + (1 << 15)) >> 16);
                sum += (vx_u32)(v < 0 ? -(vx_i64)v : (vx_i64)v);
            }
        part[r][lane] = sum;
    }
    __syncthreads();
    if (t < VX_MOTION_TH && i0 + t < h) {
        vx_u32 row = 0;
        for (int l = 0; l < 32; l++) row += part[t][l];
        atomicAdd(&row_sad[i0 + t], row);
    }
}

VMAFX_KERNEL void motion_sad_8(const vx_u8 *prev, const vx_u8 *cur, int prev_pitch, int cur_pitch, int w, int h,
                               vx_u32 *row_sad) {
    vx_motion_sad_tile<false>(prev, cur, prev_pitch, cur_pitch, w, h, 8, row_sad);
}

VMAFX_KERNEL void motion_sad_16(const vx_u8 *prev, const vx_u8 *cur, int prev_pitch, int cur_pitch, int w, int h,
                                int bits, vx_u32 *row_sad) {
    vx_motion_sad_tile<true>(prev, cur, prev_pitch, cur_pitch, w, h, bits, row_sad);
}

// Zeroes n u32: grid (ceil(n / 256), 1).
VMAFX_KERNEL void motion_zero(vx_u32 *p, int n) {
    int k = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    if (k < n) p[k] = 0;
}
