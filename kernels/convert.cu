// Planarising imported device frames (src/import/gpu.rs): the device twin
// of the host conversions of src/import/cpu.rs (`CpuDevice::finish`) and
// src/avfilter/frame.rs (`copy_plane`): semi-planar chroma (NV12's UV plane,
// P010/P016's, VAAPI's GR88 / GR1616 layers) split into U and V planes, and
// MSB-aligned 16-bit samples (P010, R16 at 10 or 12 bits) shifted down to
// the low bits the scoring core reads. One thread per output sample, grid
// (ceil(w / VMAFX_BLOCK), h); integer moves only, so exact. 16-bit samples
// are little-endian (DRM formats), as the device is.
#include "vmafx_compat.h"

// U and V of `w` x `h` from 2 * w interleaved bytes per row.
VMAFX_KERNEL void convert_uv_8(const vx_u8 *src, int src_pitch, int w, int h, vx_u8 *u, int u_pitch,
                               vx_u8 *v, int v_pitch) {
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    int y = blockIdx.y;
    if (x >= w || y >= h) return;
    const vx_u8 *row = src + (long long)y * src_pitch;
    u[(long long)y * u_pitch + x] = row[2 * x];
    v[(long long)y * v_pitch + x] = row[2 * x + 1];
}

// U and V of `w` x `h` 16-bit samples from 2 * w interleaved ones per row,
// each shifted right by `shift` (16 - bits for MSB-aligned samples).
VMAFX_KERNEL void convert_uv_16(const vx_u8 *src, int src_pitch, int w, int h, int shift, vx_u8 *u,
                                int u_pitch, vx_u8 *v, int v_pitch) {
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    int y = blockIdx.y;
    if (x >= w || y >= h) return;
    const vx_u16 *row = (const vx_u16 *)(src + (long long)y * src_pitch);
    ((vx_u16 *)(u + (long long)y * u_pitch))[x] = (vx_u16)(row[2 * x] >> shift);
    ((vx_u16 *)(v + (long long)y * v_pitch))[x] = (vx_u16)(row[2 * x + 1] >> shift);
}

// One plane of `w` x `h` 16-bit samples shifted right by `shift`.
VMAFX_KERNEL void convert_shift_16(const vx_u8 *src, int src_pitch, int w, int h, int shift,
                                   vx_u8 *dst, int dst_pitch) {
    int x = blockIdx.x * VMAFX_BLOCK + threadIdx.x;
    int y = blockIdx.y;
    if (x >= w || y >= h) return;
    const vx_u16 *row = (const vx_u16 *)(src + (long long)y * src_pitch);
    ((vx_u16 *)(dst + (long long)y * dst_pitch))[x] = (vx_u16)(row[x] >> shift);
}
