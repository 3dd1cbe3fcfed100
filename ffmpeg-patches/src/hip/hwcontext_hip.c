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

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "buffer.h"
#include "common.h"
#include "hwcontext.h"
#include "hwcontext_internal.h"
#include "hwcontext_hip_internal.h"
#include "imgutils.h"
#include "mem.h"
#include "pixdesc.h"
#include "pixfmt.h"

/* Every plane's pitch is a multiple of this: what hipMallocPitch() and
 * texture reads want on every AMD GPU. */
#define HIP_PITCH_ALIGNMENT 256

typedef struct HIPDeviceContext {
    AVHIPDeviceContext p;
    AVHIPDeviceContextInternal internal;
} HIPDeviceContext;

/* The layout of one frame in its pool buffer: each plane at its offset,
 * with its pitch. */
typedef struct HIPFramesContext {
    int nb_planes;
    int pitch[4];
    size_t offset[4];
} HIPFramesContext;

static const enum AVPixelFormat supported_formats[] = {
    AV_PIX_FMT_YUV420P,
    AV_PIX_FMT_YUV422P,
    AV_PIX_FMT_YUV444P,
    AV_PIX_FMT_YUV420P10,
    AV_PIX_FMT_YUV422P10,
    AV_PIX_FMT_YUV444P10,
    AV_PIX_FMT_YUV420P12,
    AV_PIX_FMT_YUV422P12,
    AV_PIX_FMT_YUV444P12,
    AV_PIX_FMT_YUV420P14,
    AV_PIX_FMT_YUV422P14,
    AV_PIX_FMT_YUV444P14,
    AV_PIX_FMT_YUV420P16,
    AV_PIX_FMT_YUV422P16,
    AV_PIX_FMT_YUV444P16,
    AV_PIX_FMT_GRAY8,
    AV_PIX_FMT_GRAY10,
    AV_PIX_FMT_GRAY12,
    AV_PIX_FMT_GRAY16,
    AV_PIX_FMT_NV12,
    AV_PIX_FMT_P010,
    AV_PIX_FMT_P016,
};

/* The runtime's sonames, newest first (ROCm 7, 6, 5), then the
 * development link. */
static const char *const hip_library_names[] = {
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
    "libamdhip64.so",
};

static int hip_check(void *log_ctx, const HIPFunctions *hip, hipError_t err,
                     const char *call)
{
    const char *name, *desc;

    if (err == 0)
        return 0;
    name = hip->hipGetErrorName   ? hip->hipGetErrorName(err)   : NULL;
    desc = hip->hipGetErrorString ? hip->hipGetErrorString(err) : NULL;
    av_log(log_ctx, AV_LOG_ERROR, "%s failed: %s (%d): %s\n", call,
           name ? name : "unknown error", err, desc ? desc : "");
    return AVERROR_EXTERNAL;
}

#define CHECK_HIP(log_ctx, hip, call, args) \
    hip_check(log_ctx, hip, (hip)->call args, #call)

static int hip_load_functions(AVHWDeviceContext *ctx, HIPFunctions *hip)
{
    const char *tried = NULL;
    int i;

    for (i = 0; i < FF_ARRAY_ELEMS(hip_library_names) && !hip->lib; i++) {
        hip->lib = dlopen(hip_library_names[i], RTLD_NOW | RTLD_LOCAL);
        tried    = hip_library_names[i];
    }
    if (!hip->lib) {
        av_log(ctx, AV_LOG_ERROR, "Could not load the HIP runtime: none of "
               "libamdhip64.so.7, .so.6, .so.5 or libamdhip64.so was found "
               "(%s: %s)\n", tried, dlerror());
        return AVERROR(ENOSYS);
    }

#define LOAD_SYMBOL(name)                                                   \
    do {                                                                    \
        *(void **)&hip->name = dlsym(hip->lib, #name);                      \
        if (!hip->name) {                                                   \
            av_log(ctx, AV_LOG_ERROR, "The HIP runtime has no %s\n", #name); \
            goto fail;                                                      \
        }                                                                   \
    } while (0)

    LOAD_SYMBOL(hipGetErrorName);
    LOAD_SYMBOL(hipGetErrorString);
    LOAD_SYMBOL(hipInit);
    LOAD_SYMBOL(hipGetDeviceCount);
    LOAD_SYMBOL(hipDeviceGetByPCIBusId);
    LOAD_SYMBOL(hipDeviceGetName);
    LOAD_SYMBOL(hipGetDevice);
    LOAD_SYMBOL(hipSetDevice);
    LOAD_SYMBOL(hipMalloc);
    LOAD_SYMBOL(hipFree);
    LOAD_SYMBOL(hipMemcpy2DAsync);
    LOAD_SYMBOL(hipStreamSynchronize);
#undef LOAD_SYMBOL

    return 0;

fail:
    dlclose(hip->lib);
    memset(hip, 0, sizeof(*hip));
    return AVERROR(ENOSYS);
}

/* HIP keeps the current device per thread: every call on the context's
 * memory runs with its device current, and the caller's is restored. */
static int hip_enter(AVHWDeviceContext *ctx, int *prev)
{
    AVHIPDeviceContext *hwctx = ctx->hwctx;
    const HIPFunctions *hip   = &hwctx->internal->hip;
    int ret;

    ret = CHECK_HIP(ctx, hip, hipGetDevice, (prev));
    if (ret < 0)
        return ret;
    if (*prev == hwctx->device)
        return 0;
    return CHECK_HIP(ctx, hip, hipSetDevice, (hwctx->device));
}

static void hip_leave(AVHWDeviceContext *ctx, int prev)
{
    AVHIPDeviceContext *hwctx = ctx->hwctx;
    const HIPFunctions *hip   = &hwctx->internal->hip;

    if (prev != hwctx->device)
        CHECK_HIP(ctx, hip, hipSetDevice, (prev));
}

static int hip_frames_get_constraints(AVHWDeviceContext *ctx,
                                      const void *hwconfig,
                                      AVHWFramesConstraints *constraints)
{
    int i;

    constraints->valid_sw_formats = av_malloc_array(FF_ARRAY_ELEMS(supported_formats) + 1,
                                                    sizeof(*constraints->valid_sw_formats));
    if (!constraints->valid_sw_formats)
        return AVERROR(ENOMEM);
    for (i = 0; i < FF_ARRAY_ELEMS(supported_formats); i++)
        constraints->valid_sw_formats[i] = supported_formats[i];
    constraints->valid_sw_formats[i] = AV_PIX_FMT_NONE;

    constraints->valid_hw_formats = av_malloc_array(2, sizeof(*constraints->valid_hw_formats));
    if (!constraints->valid_hw_formats)
        return AVERROR(ENOMEM);
    constraints->valid_hw_formats[0] = AV_PIX_FMT_HIP;
    constraints->valid_hw_formats[1] = AV_PIX_FMT_NONE;

    return 0;
}

static void hip_buffer_free(void *opaque, uint8_t *data)
{
    AVHWDeviceContext *device_ctx = opaque;
    AVHIPDeviceContext *hwctx     = device_ctx->hwctx;
    int prev;

    if (hip_enter(device_ctx, &prev) < 0)
        return;
    CHECK_HIP(device_ctx, &hwctx->internal->hip, hipFree, (data));
    hip_leave(device_ctx, prev);
}

static AVBufferRef *hip_pool_alloc(void *opaque, size_t size)
{
    AVHWFramesContext *ctx        = opaque;
    AVHWDeviceContext *device_ctx = ctx->device_ctx;
    AVHIPDeviceContext *hwctx     = device_ctx->hwctx;
    const HIPFunctions *hip       = &hwctx->internal->hip;
    AVBufferRef *ret = NULL;
    void *data;
    int prev;

    if (hip_enter(device_ctx, &prev) < 0)
        return NULL;
    if (CHECK_HIP(ctx, hip, hipMalloc, (&data, size)) >= 0) {
        ret = av_buffer_create(data, size, hip_buffer_free, device_ctx, 0);
        if (!ret)
            CHECK_HIP(ctx, hip, hipFree, (data));
    }
    hip_leave(device_ctx, prev);
    return ret;
}

static int hip_frames_init(AVHWFramesContext *ctx)
{
    HIPFramesContext *priv = ctx->hwctx;
    ptrdiff_t pitches[4] = { 0 };
    size_t sizes[4] = { 0 }, size = 0;
    int linesizes[4], i, ret;

    for (i = 0; i < FF_ARRAY_ELEMS(supported_formats); i++) {
        if (ctx->sw_format == supported_formats[i])
            break;
    }
    if (i == FF_ARRAY_ELEMS(supported_formats)) {
        av_log(ctx, AV_LOG_ERROR, "Pixel format '%s' is not supported by "
               "HIP frames\n", av_get_pix_fmt_name(ctx->sw_format));
        return AVERROR(ENOSYS);
    }

    ret = av_image_fill_linesizes(linesizes, ctx->sw_format, ctx->width);
    if (ret < 0)
        return ret;
    priv->nb_planes = av_pix_fmt_count_planes(ctx->sw_format);
    for (i = 0; i < priv->nb_planes; i++) {
        if (linesizes[i] > INT_MAX - HIP_PITCH_ALIGNMENT)
            return AVERROR(EINVAL);
        priv->pitch[i] = FFALIGN(linesizes[i], HIP_PITCH_ALIGNMENT);
        pitches[i]     = priv->pitch[i];
    }
    ret = av_image_fill_plane_sizes(sizes, ctx->sw_format, ctx->height, pitches);
    if (ret < 0)
        return ret;
    /* Each plane starts where the one before ends: the pitches keep every
     * start aligned, as one hipMalloc() is aligned. */
    for (i = 0; i < priv->nb_planes; i++) {
        priv->offset[i] = size;
        size += sizes[i];
    }
    if (size > INT_MAX)
        return AVERROR(EINVAL);

    if (!ctx->pool) {
        ffhwframesctx(ctx)->pool_internal =
            av_buffer_pool_init2(size, ctx, hip_pool_alloc, NULL);
        if (!ffhwframesctx(ctx)->pool_internal)
            return AVERROR(ENOMEM);
    }

    return 0;
}

static int hip_get_buffer(AVHWFramesContext *ctx, AVFrame *frame)
{
    HIPFramesContext *priv = ctx->hwctx;
    int i;

    frame->buf[0] = av_buffer_pool_get(ctx->pool);
    if (!frame->buf[0])
        return AVERROR(ENOMEM);

    for (i = 0; i < priv->nb_planes; i++) {
        frame->data[i]     = frame->buf[0]->data + priv->offset[i];
        frame->linesize[i] = priv->pitch[i];
    }

    frame->format = AV_PIX_FMT_HIP;
    frame->width  = ctx->width;
    frame->height = ctx->height;

    return 0;
}

static int hip_transfer_get_formats(AVHWFramesContext *ctx,
                                    enum AVHWFrameTransferDirection dir,
                                    enum AVPixelFormat **formats)
{
    enum AVPixelFormat *fmts;

    fmts = av_malloc_array(2, sizeof(*fmts));
    if (!fmts)
        return AVERROR(ENOMEM);

    fmts[0] = ctx->sw_format;
    fmts[1] = AV_PIX_FMT_NONE;

    *formats = fmts;

    return 0;
}

static int is_hip_frame(const AVFrame *frame)
{
    return frame->hw_frames_ctx &&
           ((AVHWFramesContext *)frame->hw_frames_ctx->data)->format == AV_PIX_FMT_HIP;
}

static int hip_transfer_data(AVHWFramesContext *ctx, AVFrame *dst,
                             const AVFrame *src)
{
    AVHWDeviceContext *device_ctx = ctx->device_ctx;
    AVHIPDeviceContext *hwctx     = device_ctx->hwctx;
    const HIPFunctions *hip       = &hwctx->internal->hip;
    const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get(ctx->sw_format);
    int src_hw = is_hip_frame(src), dst_hw = is_hip_frame(dst);
    int width  = FFMIN(src->width,  dst->width);
    int height = FFMIN(src->height, dst->height);
    int bytes[4], nb_planes, kind, prev, i, ret;

    if ((src->hw_frames_ctx && !src_hw) || (dst->hw_frames_ctx && !dst_hw))
        return AVERROR(ENOSYS);
    if ((!src_hw && src->format != ctx->sw_format) ||
        (!dst_hw && dst->format != ctx->sw_format)) {
        av_log(ctx, AV_LOG_ERROR, "Cannot transfer %s frames %s HIP frames "
               "of %s: only %s\n",
               av_get_pix_fmt_name(src_hw ? dst->format : src->format),
               src_hw ? "from" : "to", av_get_pix_fmt_name(ctx->sw_format),
               av_get_pix_fmt_name(ctx->sw_format));
        return AVERROR(EINVAL);
    }

    ret = av_image_fill_linesizes(bytes, ctx->sw_format, width);
    if (ret < 0)
        return ret;
    nb_planes = av_pix_fmt_count_planes(ctx->sw_format);
    for (i = 0; i < nb_planes; i++) {
        if (src->linesize[i] < bytes[i] || dst->linesize[i] < bytes[i]) {
            av_log(ctx, AV_LOG_ERROR, "Cannot transfer plane %d: line sizes "
                   "%d -> %d are shorter than its %d bytes (bottom-up frames "
                   "are not supported)\n", i, src->linesize[i],
                   dst->linesize[i], bytes[i]);
            return AVERROR(EINVAL);
        }
    }

    kind = src_hw && dst_hw ? HIP_MEMCPY_DEVICE_TO_DEVICE :
           src_hw           ? HIP_MEMCPY_DEVICE_TO_HOST   :
                              HIP_MEMCPY_HOST_TO_DEVICE;

    ret = hip_enter(device_ctx, &prev);
    if (ret < 0)
        return ret;

    for (i = 0; i < nb_planes; i++) {
        int rows = i == 1 || i == 2 ? AV_CEIL_RSHIFT(height, desc->log2_chroma_h) : height;

        ret = CHECK_HIP(ctx, hip, hipMemcpy2DAsync,
                        (dst->data[i], dst->linesize[i], src->data[i], src->linesize[i],
                         bytes[i], rows, kind, hwctx->stream));
        if (ret < 0)
            goto exit;
    }

    /* Both ways: a download must be complete before the caller reads it,
     * an upload must have read the caller's memory before it is reused. */
    ret = CHECK_HIP(ctx, hip, hipStreamSynchronize, (hwctx->stream));

exit:
    hip_leave(device_ctx, prev);
    return ret;
}

static void hip_device_uninit(AVHWDeviceContext *ctx)
{
    HIPDeviceContext *hwctx = ctx->hwctx;

    if (hwctx->internal.hip.lib)
        dlclose(hwctx->internal.hip.lib);
    memset(&hwctx->internal, 0, sizeof(hwctx->internal));
    hwctx->p.internal = NULL;
}

static int hip_device_open(AVHWDeviceContext *ctx)
{
    HIPDeviceContext *hwctx = ctx->hwctx;
    int ret;

    hwctx->p.internal = &hwctx->internal;
    if (hwctx->internal.hip.lib)
        return 0;
    ret = hip_load_functions(ctx, &hwctx->internal.hip);
    if (ret < 0)
        return ret;
    return CHECK_HIP(ctx, &hwctx->internal.hip, hipInit, (0));
}

static int hip_device_init(AVHWDeviceContext *ctx)
{
    HIPDeviceContext *hwctx = ctx->hwctx;
    const HIPFunctions *hip;
    char name[256] = "";
    int count = 0, ret;

    ret = hip_device_open(ctx);
    if (ret < 0)
        goto fail;
    hip = &hwctx->internal.hip;

    ret = CHECK_HIP(ctx, hip, hipGetDeviceCount, (&count));
    if (ret < 0)
        goto fail;
    if (hwctx->p.device < 0 || hwctx->p.device >= count) {
        av_log(ctx, AV_LOG_ERROR, "HIP device %d does not exist (%d devices)\n",
               hwctx->p.device, count);
        ret = AVERROR(ENODEV);
        goto fail;
    }
    if (hip->hipDeviceGetName(name, sizeof(name), hwctx->p.device) == 0)
        av_log(ctx, AV_LOG_VERBOSE, "HIP device %d: %s\n", hwctx->p.device, name);

    return 0;

fail:
    hip_device_uninit(ctx);
    return ret;
}

static int hip_device_create(AVHWDeviceContext *ctx, const char *device,
                             AVDictionary *opts, int flags)
{
    HIPDeviceContext *hwctx = ctx->hwctx;
    int ret;

    ret = hip_device_open(ctx);
    if (ret < 0)
        goto fail;

    if (!device || !*device) {
        hwctx->p.device = 0;
    } else if (strspn(device, "0123456789") == strlen(device)) {
        hwctx->p.device = strtol(device, NULL, 10);
    } else {
        /* A PCI bus id, [domain:]bus:device.function, as lspci and DRM
         * name the GPU. */
        ret = CHECK_HIP(ctx, &hwctx->internal.hip, hipDeviceGetByPCIBusId,
                        (&hwctx->p.device, device));
        if (ret < 0) {
            av_log(ctx, AV_LOG_ERROR, "No HIP device at PCI bus id %s (a "
                   "device is an index or a PCI bus id)\n", device);
            ret = AVERROR(ENODEV);
            goto fail;
        }
    }

    return 0;

fail:
    hip_device_uninit(ctx);
    return ret;
}

const HWContextType ff_hwcontext_type_hip = {
    .type                 = AV_HWDEVICE_TYPE_HIP,
    .name                 = "HIP",

    .device_hwctx_size    = sizeof(HIPDeviceContext),
    .frames_hwctx_size    = sizeof(HIPFramesContext),

    .device_create        = hip_device_create,
    .device_init          = hip_device_init,
    .device_uninit        = hip_device_uninit,
    .frames_get_constraints = hip_frames_get_constraints,
    .frames_init          = hip_frames_init,
    .frames_get_buffer    = hip_get_buffer,
    .transfer_get_formats = hip_transfer_get_formats,
    .transfer_data_to     = hip_transfer_data,
    .transfer_data_from   = hip_transfer_data,

    .pix_fmts             = (const enum AVPixelFormat[]){ AV_PIX_FMT_HIP, AV_PIX_FMT_NONE },
};
