/*
 * This file is part of FFmpeg.
 *
 * FFmpeg is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 *
 * FFmpeg is distributed in the hope that it will be useful,
 * but WITHOUT ANY WARRANTY; without even the implied warranty of
 * MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.  See the GNU
 * Lesser General Public License for more details.
 *
 * You should have received a copy of the GNU Lesser General Public
 * License along with FFmpeg; if not, write to the Free Software
 * Foundation, Inc., 51 Franklin Street, Fifth Floor, Boston, MA 02110-1301 USA
 */

#ifndef AVUTIL_HWCONTEXT_HIP_INTERNAL_H
#define AVUTIL_HWCONTEXT_HIP_INTERNAL_H

#include <stddef.h>

#include "hwcontext_hip.h"

/**
 * @file
 * The HIP runtime calls libavutil makes, loaded from libamdhip64 at run
 * time. Only the types of those calls are declared here (the C ABI of
 * hip_runtime_api.h, unchanged from ROCm 5 to 7), so no HIP header is
 * needed to build.
 */

typedef int hipError_t;                 /* hipSuccess is 0 */
typedef struct ihipStream_t *hipStream_t;

enum {
    HIP_MEMCPY_HOST_TO_DEVICE   = 1,    /* hipMemcpyHostToDevice */
    HIP_MEMCPY_DEVICE_TO_HOST   = 2,    /* hipMemcpyDeviceToHost */
    HIP_MEMCPY_DEVICE_TO_DEVICE = 3,    /* hipMemcpyDeviceToDevice */
};

typedef struct HIPFunctions {
    void *lib;  /* the dlopen() handle */
    hipError_t (*hipInit)(unsigned int flags);
    hipError_t (*hipGetDeviceCount)(int *count);
    hipError_t (*hipDeviceGetByPCIBusId)(int *device, const char *pci_bus_id);
    hipError_t (*hipDeviceGetName)(char *name, int len, int device);
    hipError_t (*hipGetDevice)(int *device);
    hipError_t (*hipSetDevice)(int device);
    hipError_t (*hipMalloc)(void **ptr, size_t size);
    hipError_t (*hipFree)(void *ptr);
    hipError_t (*hipMemcpy2DAsync)(void *dst, size_t dpitch, const void *src, size_t spitch,
                                   size_t width, size_t height, int kind, hipStream_t stream);
    hipError_t (*hipStreamSynchronize)(hipStream_t stream);
    const char *(*hipGetErrorName)(hipError_t error);
    const char *(*hipGetErrorString)(hipError_t error);
} HIPFunctions;

struct AVHIPDeviceContextInternal {
    HIPFunctions hip;
};

#endif /* AVUTIL_HWCONTEXT_HIP_INTERNAL_H */
