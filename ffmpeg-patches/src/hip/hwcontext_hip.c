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

#include "config.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
/* DRM_PRIME frames map to HIP frames, and a HIP device derives from a DRM
 * device, on Linux: dma-bufs and sysfs. */
#define HIP_DRM_INTEROP 1
#include "hwcontext_drm.h"
#endif

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

/* The external-memory calls only the DRM_PRIME mapping makes, loaded
 * beside HIPFunctions but optional: a runtime without them still holds
 * frames, and a DRM_PRIME mapping says what is missing. */
typedef struct ihipExtMemory_t *hipExternalMemory_t;

/* hipExternalMemoryHandleDesc: ROCm 6 added the reserved tail, which must
 * be zero; ROCm 5 reads the fields before it only. */
typedef struct HIPExternalMemoryHandleDesc {
    int type;
    union {
        int fd;
        struct {
            void *handle;
            const void *name;
        } win32;
        const void *nvSciBufObject;
    } handle;
    unsigned long long size;
    unsigned int flags;
    unsigned int reserved[16];
} HIPExternalMemoryHandleDesc;

/* hipExternalMemoryBufferDesc, with the same ROCm 6 tail. */
typedef struct HIPExternalMemoryBufferDesc {
    unsigned long long offset;
    unsigned long long size;
    unsigned int flags;
    unsigned int reserved[16];
} HIPExternalMemoryBufferDesc;

#define HIP_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD 1

typedef struct HIPInteropFunctions {
    hipError_t (*hipImportExternalMemory)(hipExternalMemory_t *ext,
                                          const HIPExternalMemoryHandleDesc *desc);
    hipError_t (*hipExternalMemoryGetMappedBuffer)(void **ptr, hipExternalMemory_t ext,
                                                   const HIPExternalMemoryBufferDesc *desc);
    hipError_t (*hipDestroyExternalMemory)(hipExternalMemory_t ext);
} HIPInteropFunctions;

typedef struct HIPDeviceContext {
    AVHIPDeviceContext p;
    AVHIPDeviceContextInternal internal;
    HIPInteropFunctions interop;
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
/* The same for the optional calls of HIPDeviceContext.interop. */
#define CHECK_HIP_INTEROP(log_ctx, hwctx, call, args) \
    hip_check(log_ctx, &(hwctx)->internal.hip, (hwctx)->interop.call args, #call)

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

#ifdef HIP_DRM_INTEROP
/* The uAPI of linux/dma-buf.h (Linux 6.0), declared here so that older
 * kernel headers build: a sync_file of the dma-buf's implicit fences. */
typedef struct HIPDmaBufExportSyncFile {
    uint32_t flags;
    int32_t  fd;
} HIPDmaBufExportSyncFile;
#define HIP_DMA_BUF_SYNC_READ                 (1 << 0)
#define HIP_DMA_BUF_IOCTL_EXPORT_SYNC_FILE    _IOWR('b', 2, HIPDmaBufExportSyncFile)

/* How long a mapping waits for the producer's fences before it gives up
 * with an error instead of hanging the graph. */
#define HIP_DRM_FENCE_TIMEOUT_MS 5000

#define HIP_DRM_FORMAT_MOD_LINEAR  0ULL
#define HIP_DRM_FORMAT_MOD_INVALID ((1ULL << 56) - 1)

/* One DRM_PRIME frame mapped to HIP: each object imported once, and every
 * distinct buffer the runtime mapped, each freed once. */
typedef struct HIPDRMMapping {
    hipExternalMemory_t ext[AV_DRM_MAX_PLANES];
    int nb_ext;
    void *buffers[2 * AV_DRM_MAX_PLANES];
    int nb_buffers;
} HIPDRMMapping;

/* The name of a DRM format modifier, for refusals. */
static void hip_drm_modifier_name(char *buf, size_t size, uint64_t modifier)
{
    static const char *const vendors[] = {
        "NONE", "INTEL", "AMD", "NVIDIA", "SAMSUNG", "QCOM", "VIVANTE",
        "BROADCOM", "ARM", "ALLWINNER", "AMLOGIC",
    };
    unsigned vendor = modifier >> 56;

    if (modifier == HIP_DRM_FORMAT_MOD_INVALID)
        snprintf(buf, size, "DRM_FORMAT_MOD_INVALID (a layout only its driver knows)");
    else if (modifier == (1ULL << 56 | 1))
        snprintf(buf, size, "I915_FORMAT_MOD_X_TILED (0x%016"PRIx64")", modifier);
    else if (modifier == (1ULL << 56 | 2))
        snprintf(buf, size, "I915_FORMAT_MOD_Y_TILED (0x%016"PRIx64")", modifier);
    else if (vendor < FF_ARRAY_ELEMS(vendors))
        snprintf(buf, size, "a DRM_FORMAT_MOD_VENDOR_%s modifier (0x%016"PRIx64")",
                 vendors[vendor], modifier);
    else
        snprintf(buf, size, "modifier 0x%016"PRIx64, modifier);
}

/* Waits until the writers of the dma-buf (a decoder still writing the
 * surface) are done: its implicit fences, exported as a sync_file. */
static int hip_drm_wait_fence(AVHWFramesContext *hwfc, int object, int fd)
{
    HIPDmaBufExportSyncFile sync = { .flags = HIP_DMA_BUF_SYNC_READ, .fd = -1 };
    struct pollfd pfd = { .events = POLLIN };
    int ret;

    if (ioctl(fd, HIP_DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &sync) == 0) {
        pfd.fd = sync.fd;
    } else if (errno == ENOTTY) {
        /* A kernel before 6.0: polling the dma-buf itself waits for the
         * same fences. */
        pfd.fd = fd;
    } else {
        av_log(hwfc, AV_LOG_ERROR, "DRM object %d: exporting the fences of "
               "fd %d failed: %s (not a dma-buf?)\n", object, fd, strerror(errno));
        return AVERROR(EINVAL);
    }
    do {
        ret = poll(&pfd, 1, HIP_DRM_FENCE_TIMEOUT_MS);
    } while (ret < 0 && errno == EINTR);
    if (pfd.fd == sync.fd)
        close(sync.fd);
    if (ret < 0) {
        av_log(hwfc, AV_LOG_ERROR, "DRM object %d: waiting for its fences "
               "failed: %s\n", object, strerror(errno));
        return AVERROR(errno);
    }
    if (ret == 0) {
        av_log(hwfc, AV_LOG_ERROR, "DRM object %d: its writer did not signal "
               "its fences within %d ms\n", object, HIP_DRM_FENCE_TIMEOUT_MS);
        return AVERROR(ETIMEDOUT);
    }
    return 0;
}

/* Keeps a buffer the runtime mapped, unless that address is kept already
 * (ROCm 5.2 answers one address for every offset: freed once). */
static void hip_drm_keep_buffer(HIPDRMMapping *map, void *ptr)
{
    for (int i = 0; i < map->nb_buffers; i++) {
        if (map->buffers[i] == ptr)
            return;
    }
    map->buffers[map->nb_buffers++] = ptr;
}

/* Frees the mapped buffers, then destroys the imports; once every reader
 * of the device's stream is done with them. */
static void hip_drm_mapping_release(AVHWDeviceContext *device_ctx, HIPDRMMapping *map)
{
    HIPDeviceContext *hwctx = device_ctx->hwctx;
    const HIPFunctions *hip = &hwctx->internal.hip;
    int prev, i;

    if (hip_enter(device_ctx, &prev) < 0)
        return;
    CHECK_HIP(device_ctx, hip, hipStreamSynchronize, (hwctx->p.stream));
    for (i = 0; i < map->nb_buffers; i++)
        CHECK_HIP(device_ctx, hip, hipFree, (map->buffers[i]));
    map->nb_buffers = 0;
    for (i = 0; i < map->nb_ext; i++)
        CHECK_HIP_INTEROP(device_ctx, hwctx, hipDestroyExternalMemory, (map->ext[i]));
    map->nb_ext = 0;
    hip_leave(device_ctx, prev);
}

static void hip_unmap_from_drm(AVHWFramesContext *hwfc, HWMapDescriptor *hwmap)
{
    hip_drm_mapping_release(hwfc->device_ctx, hwmap->priv);
    av_free(hwmap->priv);
}

/* Maps the planes of a linear DRM_PRIME frame, in the layout of the HIP
 * frames context's sw_format, into the HIP device's address space: each
 * dma-buf imported as external memory (the runtime takes a duplicate of
 * its fd), each plane mapped at its offset. Nothing is copied. */
static int hip_map_from_drm(AVHWFramesContext *hwfc, AVFrame *dst,
                            const AVFrame *src, int flags)
{
    AVHWDeviceContext *device_ctx  = hwfc->device_ctx;
    HIPDeviceContext *hwctx        = device_ctx->hwctx;
    const HIPInteropFunctions *ext = &hwctx->interop;
    const AVDRMFrameDescriptor *desc = (const AVDRMFrameDescriptor *)src->data[0];
    const AVPixFmtDescriptor *pix  = av_pix_fmt_desc_get(hwfc->sw_format);
    int nb_planes = av_pix_fmt_count_planes(hwfc->sw_format);
    uint8_t *base[AV_DRM_MAX_PLANES] = { NULL };
    size_t object_size[AV_DRM_MAX_PLANES];
    int bytes[4], plane, prev, ret, i, j;
    HIPDRMMapping *map;
    char name[96];

    if (!ext->hipImportExternalMemory || !ext->hipExternalMemoryGetMappedBuffer ||
        !ext->hipDestroyExternalMemory) {
        av_log(hwfc, AV_LOG_ERROR, "The HIP runtime has no hipImportExternalMemory, "
               "hipExternalMemoryGetMappedBuffer or hipDestroyExternalMemory: "
               "DRM_PRIME frames cannot be mapped\n");
        return AVERROR(ENOSYS);
    }
    if (!desc || desc->nb_objects < 1 || desc->nb_objects > AV_DRM_MAX_PLANES ||
        desc->nb_layers < 1 || desc->nb_layers > AV_DRM_MAX_PLANES) {
        av_log(hwfc, AV_LOG_ERROR, "Invalid DRM_PRIME frame descriptor\n");
        return AVERROR(EINVAL);
    }
    for (i = 0; i < desc->nb_objects; i++) {
        if (desc->objects[i].format_modifier != HIP_DRM_FORMAT_MOD_LINEAR) {
            hip_drm_modifier_name(name, sizeof(name), desc->objects[i].format_modifier);
            av_log(hwfc, AV_LOG_ERROR, "DRM object %d has %s: HIP maps linear "
                   "(DRM_FORMAT_MOD_LINEAR) dma-bufs only\n", i, name);
            return AVERROR(ENOSYS);
        }
    }
    for (i = plane = 0; i < desc->nb_layers; i++)
        plane += desc->layers[i].nb_planes;
    if (plane != nb_planes) {
        av_log(hwfc, AV_LOG_ERROR, "The DRM_PRIME frame has %d planes, HIP "
               "frames of %s have %d\n", plane, av_get_pix_fmt_name(hwfc->sw_format),
               nb_planes);
        return AVERROR(EINVAL);
    }
    ret = av_image_fill_linesizes(bytes, hwfc->sw_format, src->width);
    if (ret < 0)
        return ret;

    map = av_mallocz(sizeof(*map));
    if (!map)
        return AVERROR(ENOMEM);

    ret = hip_enter(device_ctx, &prev);
    if (ret < 0) {
        av_free(map);
        return ret;
    }

    for (i = 0; i < desc->nb_objects; i++) {
        const AVDRMObjectDescriptor *obj = &desc->objects[i];
        HIPExternalMemoryHandleDesc handle = {
            .type = HIP_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD,
        };
        HIPExternalMemoryBufferDesc whole = { 0 };
        void *ptr;
        off_t end;

        ret = hip_drm_wait_fence(hwfc, i, obj->fd);
        if (ret < 0)
            goto fail;
        object_size[i] = obj->size;
        end = lseek(obj->fd, 0, SEEK_END);
        if (!object_size[i] && end > 0)
            object_size[i] = end;
        if (!object_size[i] || (end > 0 && object_size[i] > end)) {
            av_log(hwfc, AV_LOG_ERROR, "DRM object %d: size %zu, but its "
                   "dma-buf holds %lld bytes\n", i, obj->size, (long long)end);
            ret = AVERROR(EINVAL);
            goto fail;
        }
        /* The runtime owns the fd it imports: hand it a duplicate. */
        handle.handle.fd = dup(obj->fd);
        handle.size      = object_size[i];
        if (handle.handle.fd < 0) {
            ret = AVERROR(errno);
            goto fail;
        }
        ret = CHECK_HIP_INTEROP(hwfc, hwctx, hipImportExternalMemory, (&map->ext[i], &handle));
        if (ret < 0) {
            close(handle.handle.fd);
            goto fail;
        }
        map->nb_ext++;
        /* The whole object at offset 0: the base every plane is found
         * from where the runtime ignores mapping offsets. */
        whole.size = object_size[i];
        ret = CHECK_HIP_INTEROP(hwfc, hwctx, hipExternalMemoryGetMappedBuffer,
                        (&ptr, map->ext[i], &whole));
        if (ret < 0)
            goto fail;
        hip_drm_keep_buffer(map, ptr);
        base[i] = ptr;
    }

    for (i = plane = 0; i < desc->nb_layers; i++) {
        for (j = 0; j < desc->layers[i].nb_planes; j++, plane++) {
            const AVDRMPlaneDescriptor *p = &desc->layers[i].planes[j];
            int rows = plane == 1 || plane == 2 ?
                       AV_CEIL_RSHIFT(src->height, pix->log2_chroma_h) : src->height;
            HIPExternalMemoryBufferDesc at = { .offset = p->offset };
            void *ptr;

            if (p->object_index < 0 || p->object_index >= desc->nb_objects ||
                p->pitch < bytes[plane] || p->pitch > INT_MAX || p->offset < 0 ||
                (size_t)p->offset > object_size[p->object_index] ||
                (size_t)p->pitch * rows > object_size[p->object_index] - p->offset) {
                av_log(hwfc, AV_LOG_ERROR, "DRM plane %d (object %d, offset %td, "
                       "pitch %td) does not hold %d rows of %d bytes inside its "
                       "object\n", plane, p->object_index, p->offset, p->pitch,
                       rows, bytes[plane]);
                ret = AVERROR(EINVAL);
                goto fail;
            }
            ptr = base[p->object_index];
            if (p->offset) {
                at.size = (size_t)p->pitch * rows;
                ret = CHECK_HIP_INTEROP(hwfc, hwctx, hipExternalMemoryGetMappedBuffer,
                                (&ptr, map->ext[p->object_index], &at));
                if (ret < 0)
                    goto fail;
                hip_drm_keep_buffer(map, ptr);
                /* ROCm 5.2 answers the object's base whatever the offset. */
                if (ptr == base[p->object_index])
                    ptr = base[p->object_index] + p->offset;
            }
            dst->data[plane]     = ptr;
            dst->linesize[plane] = p->pitch;
        }
    }
    hip_leave(device_ctx, prev);

    ret = ff_hwframe_map_create(dst->hw_frames_ctx, dst, src, &hip_unmap_from_drm, map);
    if (ret < 0) {
        hip_drm_mapping_release(device_ctx, map);
        av_free(map);
        return ret;
    }
    dst->width  = src->width;
    dst->height = src->height;
    return 0;

fail:
    hip_leave(device_ctx, prev);
    hip_drm_mapping_release(device_ctx, map);
    av_free(map);
    return ret;
}

/* A frame of another hwcontext that maps to DRM_PRIME (VAAPI, Vulkan)
 * reaches HIP through it; the mapped frame then refers to the source. */
static int hip_map_through_drm(AVHWFramesContext *hwfc, AVFrame *dst,
                               const AVFrame *src, int flags)
{
    AVFrame *drm = av_frame_alloc();
    int ret;

    if (!drm)
        return AVERROR(ENOMEM);
    drm->format = AV_PIX_FMT_DRM_PRIME;
    ret = av_hwframe_map(drm, src, AV_HWFRAME_MAP_READ);
    if (ret >= 0)
        ret = hip_map_from_drm(hwfc, dst, drm, flags);
    if (ret >= 0)
        ret = ff_hwframe_map_replace(dst, src);
    av_frame_free(&drm);
    return ret;
}
#endif /* HIP_DRM_INTEROP */

static int hip_map_to(AVHWFramesContext *hwfc, AVFrame *dst,
                      const AVFrame *src, int flags)
{
    if (dst->format != AV_PIX_FMT_HIP)
        return AVERROR(ENOSYS);
#ifdef HIP_DRM_INTEROP
    if (src->format == AV_PIX_FMT_DRM_PRIME)
        return hip_map_from_drm(hwfc, dst, src, flags);
    if (src->hw_frames_ctx)
        return hip_map_through_drm(hwfc, dst, src, flags);
#endif
    return AVERROR(ENOSYS);
}

static void hip_device_uninit(AVHWDeviceContext *ctx)
{
    HIPDeviceContext *hwctx = ctx->hwctx;

    if (hwctx->internal.hip.lib)
        dlclose(hwctx->internal.hip.lib);
    memset(&hwctx->internal, 0, sizeof(hwctx->internal));
    memset(&hwctx->interop, 0, sizeof(hwctx->interop));
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
    /* Optional: NULL where the runtime lacks them. */
    *(void **)&hwctx->interop.hipImportExternalMemory =
        dlsym(hwctx->internal.hip.lib, "hipImportExternalMemory");
    *(void **)&hwctx->interop.hipExternalMemoryGetMappedBuffer =
        dlsym(hwctx->internal.hip.lib, "hipExternalMemoryGetMappedBuffer");
    *(void **)&hwctx->interop.hipDestroyExternalMemory =
        dlsym(hwctx->internal.hip.lib, "hipDestroyExternalMemory");
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

#ifdef HIP_DRM_INTEROP
/* The PCI bus id (domain:bus:device.function) of the GPU behind a DRM
 * device's fd, from sysfs; an error naming the device when it is not a
 * PCI device (vgem, a display controller on another bus). */
static int hip_drm_pci_bus_id(AVHWDeviceContext *ctx, int fd, char *bus_id, size_t size)
{
    char path[64], dev[PATH_MAX] = "", link[PATH_MAX], *name;
    struct stat st;
    ssize_t len;

    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    len = readlink(path, dev, sizeof(dev) - 1);
    dev[len > 0 ? len : 0] = 0;
    if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode)) {
        av_log(ctx, AV_LOG_ERROR, "The DRM device (fd %d, %s) is not a "
               "character device\n", fd, dev);
        return AVERROR(EINVAL);
    }
    snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/device/subsystem",
             major(st.st_rdev), minor(st.st_rdev));
    len = readlink(path, link, sizeof(link) - 1);
    link[len > 0 ? len : 0] = 0;
    name = strrchr(link, '/');
    if (len <= 0 || !name || strcmp(name + 1, "pci")) {
        av_log(ctx, AV_LOG_ERROR, "The DRM device %s is not a PCI device "
               "(bus %s): it is no GPU a HIP device can be derived from\n",
               dev, name ? name + 1 : "unknown");
        return AVERROR(ENODEV);
    }
    snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/device",
             major(st.st_rdev), minor(st.st_rdev));
    if (!realpath(path, link) || !(name = strrchr(link, '/')) ||
        strlen(name + 1) >= size) {
        av_log(ctx, AV_LOG_ERROR, "No PCI bus id for the DRM device %s "
               "(%s)\n", dev, path);
        return AVERROR(ENODEV);
    }
    memcpy(bus_id, name + 1, strlen(name + 1) + 1);
    return 0;
}
#endif

/* The HIP device of the same GPU as a DRM device: their PCI bus ids match.
 * Other device types (VAAPI) answer ENOSYS, so that a HIP device derives
 * from the DRM device they were derived from. */
static int hip_device_derive(AVHWDeviceContext *ctx, AVHWDeviceContext *src_ctx,
                             AVDictionary *opts, int flags)
{
#ifdef HIP_DRM_INTEROP
    HIPDeviceContext *hwctx = ctx->hwctx;
    const AVDRMDeviceContext *drm = src_ctx->hwctx;
    char bus_id[64];
    int ret;

    if (src_ctx->type != AV_HWDEVICE_TYPE_DRM)
        return AVERROR(ENOSYS);
    ret = hip_drm_pci_bus_id(ctx, drm->fd, bus_id, sizeof(bus_id));
    if (ret < 0)
        return ret;
    ret = hip_device_open(ctx);
    if (ret < 0)
        goto fail;
    if (hwctx->internal.hip.hipDeviceGetByPCIBusId(&hwctx->p.device, bus_id) != 0) {
        av_log(ctx, AV_LOG_ERROR, "No HIP device at PCI bus id %s, the DRM "
               "device's (another vendor's GPU, or hidden by "
               "HIP_VISIBLE_DEVICES)\n", bus_id);
        ret = AVERROR(ENODEV);
        goto fail;
    }
    av_log(ctx, AV_LOG_VERBOSE, "HIP device %d is the DRM device's GPU, PCI "
           "bus id %s\n", hwctx->p.device, bus_id);
    return 0;

fail:
    hip_device_uninit(ctx);
    return ret;
#else
    return AVERROR(ENOSYS);
#endif
}

const HWContextType ff_hwcontext_type_hip = {
    .type                 = AV_HWDEVICE_TYPE_HIP,
    .name                 = "HIP",

    .device_hwctx_size    = sizeof(HIPDeviceContext),
    .frames_hwctx_size    = sizeof(HIPFramesContext),

    .device_create        = hip_device_create,
    .device_derive        = hip_device_derive,
    .device_init          = hip_device_init,
    .device_uninit        = hip_device_uninit,
    .frames_get_constraints = hip_frames_get_constraints,
    .frames_init          = hip_frames_init,
    .frames_get_buffer    = hip_get_buffer,
    .transfer_get_formats = hip_transfer_get_formats,
    .transfer_data_to     = hip_transfer_data,
    .transfer_data_from   = hip_transfer_data,
    .map_to               = hip_map_to,

    .pix_fmts             = (const enum AVPixelFormat[]){ AV_PIX_FMT_HIP, AV_PIX_FMT_NONE },
};
