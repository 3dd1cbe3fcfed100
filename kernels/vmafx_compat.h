// vmafx_compat.h: the few names that differ between NVRTC (CUDA) and
// hiprtc (HIP) for vmafx's kernels. Both compilers accept CUDA-style
// source (__global__, __shared__, blockIdx, threadIdx, __syncthreads,
// atomicAdd); hiprtc predefines __HIPCC_RTC__ and declares those itself.
// Neither ships <stdint.h> at run time, so the fixed-width types are here.
#pragma once

#if defined(__HIPCC_RTC__) || defined(__HIP__)
#define VMAFX_HIP 1
#else
#define VMAFX_CUDA 1
#endif

typedef unsigned char vx_u8;
typedef unsigned short vx_u16;
typedef int vx_i32;
typedef unsigned int vx_u32;
typedef long long vx_i64;
typedef unsigned long long vx_u64;

// Every kernel is an unmangled entry point, looked up by name once at init.
#define VMAFX_KERNEL extern "C" __global__

// Block size every vmafx kernel is launched with (the host uses the same).
#define VMAFX_BLOCK 256

// At least n blocks of VMAFX_BLOCK resident per SM, for kernels whose
// registers, not their work, cap occupancy (ncu, docs/h200/2026-12-04.md):
// adm_cm_* 80 registers gave 3 blocks, 64 give 4 without spills; vif_stat_0_*
// 71-72 gave 3, 64 spill 16 bytes and still ran 5 % faster. NVRTC only:
// HIP's second argument counts waves per execution unit, and the host
// emulator has no such attribute.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define VMAFX_MIN_BLOCKS(n) __launch_bounds__(VMAFX_BLOCK, n)
#else
#define VMAFX_MIN_BLOCKS(n)
#endif

// Sum of one u32 per thread over the block, wrapping mod 2^32 exactly as
// the CPU's u32 wrapping_add does (unsigned addition is associative and
// commutative mod 2^32, so the order of the tree cannot change the result).
__device__ inline vx_u32 vx_block_sum_u32(vx_u32 v, vx_u32 *scratch) {
    scratch[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = VMAFX_BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
        __syncthreads();
    }
    return scratch[0];
}

__device__ inline vx_u64 vx_block_sum_u64(vx_u64 v, vx_u64 *scratch) {
    scratch[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = VMAFX_BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
        __syncthreads();
    }
    return scratch[0];
}
