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

#ifndef AVUTIL_HWCONTEXT_HIP_H
#define AVUTIL_HWCONTEXT_HIP_H

/**
 * @file
 * An API-specific header for AV_HWDEVICE_TYPE_HIP.
 *
 * HIP is the GPU runtime of AMD's ROCm. libavutil loads the runtime
 * (libamdhip64) at run time, so neither building nor linking FFmpeg
 * needs ROCm, and this header needs no HIP header.
 *
 * Frames of AV_PIX_FMT_HIP hold their planes in device memory:
 * data[i] is the device pointer of plane i (in the layout of
 * AVHWFramesContext.sw_format), linesize[i] its pitch in bytes.
 *
 * This API supports dynamic frame pools. AVHWFramesContext.pool must
 * return AVBufferRefs whose data pointer is device memory of the
 * context's device (hipMalloc) holding every plane of one frame.
 */

struct ihipStream_t;

typedef struct AVHIPDeviceContextInternal AVHIPDeviceContextInternal;

/**
 * This struct is allocated as AVHWDeviceContext.hwctx
 */
typedef struct AVHIPDeviceContext {
    /**
     * The HIP device ordinal (as hipSetDevice() takes it) whose memory
     * the frames live in. Set by av_hwdevice_ctx_create(); a caller that
     * allocates the context itself sets it before av_hwdevice_ctx_init().
     */
    int device;

    /**
     * The stream on which transfers are queued (a hipStream_t of the
     * device above). NULL, the default, is the device's null stream.
     * A caller may set its own stream before av_hwdevice_ctx_init();
     * it must outlive the device context. Readers of a frame order their
     * work after this stream (hipEventRecord() on it, then
     * hipStreamWaitEvent()).
     */
    struct ihipStream_t *stream;

    AVHIPDeviceContextInternal *internal;
} AVHIPDeviceContext;

/**
 * AVHWFramesContext.hwctx is currently not used
 */

#endif /* AVUTIL_HWCONTEXT_HIP_H */
