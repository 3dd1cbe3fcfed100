// PSNR's sum of squared errors, libvmaf 3.2.0 feature/integer_psnr.c
// (8-bit: int16 difference, u32 per row wrapping, u64 total; above 8 bits:
// u32 square, u64 total): the device twin of
// src/feature/psnr/scalar.rs::sse_u8 / sse_u16. One block per row, grid
// (1, h); the host adds the per-row u64s. Integer only, so exact.
#include "vmafx_compat.h"

VMAFX_KERNEL void psnr_sse_row_8(const vx_u8 *ref, const vx_u8 *dis, int stride_ref, int stride_dis,
                                 int w, vx_u64 *row_sse) {
    __shared__ vx_u32 scratch[VMAFX_BLOCK];
    int i = blockIdx.y;
    const vx_u8 *a = ref + (long long)i * stride_ref;
    const vx_u8 *b = dis + (long long)i * stride_dis;
    vx_u32 sum = 0;
    for (int j = threadIdx.x; j < w; j += VMAFX_BLOCK) {
        vx_i32 e = (vx_i32)a[j] - (vx_i32)b[j];
        sum += (vx_u32)(e * e);
    }
    vx_u32 total = vx_block_sum_u32(sum, scratch);
    if (threadIdx.x == 0) row_sse[i] = total;
}

VMAFX_KERNEL void psnr_sse_row_16(const vx_u8 *ref, const vx_u8 *dis, int stride_ref, int stride_dis,
                                  int w, vx_u64 *row_sse) {
    __shared__ vx_u64 scratch[VMAFX_BLOCK];
    int i = blockIdx.y;
    const vx_u16 *a = (const vx_u16 *)(ref + (long long)i * stride_ref);
    const vx_u16 *b = (const vx_u16 *)(dis + (long long)i * stride_dis);
    vx_u64 sum = 0;
    for (int j = threadIdx.x; j < w; j += VMAFX_BLOCK) {
        vx_i32 d = (vx_i32)a[j] - (vx_i32)b[j];
        vx_u32 e = (vx_u32)(d < 0 ? -d : d);
        sum += (vx_u64)(e * e);
    }
    vx_u64 total = vx_block_sum_u64(sum, scratch);
    if (threadIdx.x == 0) row_sse[i] = total;
}
