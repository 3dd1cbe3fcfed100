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

/**
 * @file
 * VMAF through vmafx, a drop-in for the libvmaf filter: registration glue
 * only. Options, pads, formats and framesync live here; option parsing,
 * scoring, per-frame metadata and logs live in libvmafx (Rust).
 */

#include <inttypes.h>
#include <string.h>

#include <vmafx.h>
#if VMAFX_FILTER_API_VERSION < 6
#error "libvmafx too old: the vmafx filter needs vmafx.h API version 6 (vmafx_filter_reference_ended)"
#endif

#include "config.h"
#include "libavutil/dict.h"
#include "libavutil/frame.h"
#include "libavutil/hwcontext.h"
#include "libavutil/opt.h"
#include "libavutil/pixdesc.h"
#if CONFIG_CUDA
/* For AVCUDADeviceContext only: its two pointers go to vmafx as they are;
 * no CUDA call is made here. */
#include <ffnvcodec/dynlink_cuda.h>
#include "libavutil/hwcontext_cuda.h"
#endif
/* The HIP hwcontext comes with the 7.1 and 9.0 series (--enable-hip);
 * other lines have no CONFIG_HIP at all. AVHIPDeviceContext only: its
 * device ordinal and stream go to vmafx as they are. */
#if defined(CONFIG_HIP) && CONFIG_HIP
#define VMAFX_HIP 1
#include "libavutil/hwcontext_hip.h"
#else
#define VMAFX_HIP 0
#endif
#include "avfilter.h"
#include "filters.h"
#include "formats.h"
#include "framesync.h"
#include "video.h"

typedef struct VMAFXContext {
    const AVClass *class;
    FFFrameSync fs;
    char *log_path;
    char *log_fmt;
    char *pool;
    int n_threads;
    int n_subsample;
    int64_t fence_timeout;
    char *device;
    char *model_cfg;
    char *feature_cfg;
    VmafxFilter *vx;
    /* The CUDA or HIP inputs' devices, held until vmafx is freed: its
     * scoring context runs on their context (device) and stream. */
    AVBufferRef *hw_device[2];
    int events;
    int finished;
} VMAFXContext;

#define OFFSET(x) offsetof(VMAFXContext, x)
#define FLAGS AV_OPT_FLAG_FILTERING_PARAM|AV_OPT_FLAG_VIDEO_PARAM

static const AVOption vmafx_options[] = {
    {"log_path",  "Set the file path to be used to write log.",                         OFFSET(log_path), AV_OPT_TYPE_STRING, {.str=NULL}, 0, 1, FLAGS},
    {"log_fmt",  "Set the format of the log (csv, json, xml, or sub).",                 OFFSET(log_fmt), AV_OPT_TYPE_STRING, {.str="xml"}, 0, 1, FLAGS},
    {"pool",  "Set the pool method to be used for computing vmaf.",                     OFFSET(pool), AV_OPT_TYPE_STRING, {.str=NULL}, 0, 1, FLAGS},
    {"n_threads", "Set number of threads to be used when computing vmaf.",              OFFSET(n_threads), AV_OPT_TYPE_INT, {.i64=0}, 0, UINT_MAX, FLAGS},
    {"n_subsample", "Set interval for frame subsampling used when computing vmaf.",     OFFSET(n_subsample), AV_OPT_TYPE_INT, {.i64=1}, 1, UINT_MAX, FLAGS},
    {"fence_timeout", "Set how long to wait for a DRM_PRIME frame's fences.",              OFFSET(fence_timeout), AV_OPT_TYPE_DURATION, {.i64=1000000}, 1, INT64_MAX, FLAGS},
    {"device", "Set where DRM_PRIME and software frames are scored (cpu, hip, hip:N).",  OFFSET(device), AV_OPT_TYPE_STRING, {.str=NULL}, 0, 1, FLAGS},
    {"model",  "Set the model to be used for computing vmaf.",                          OFFSET(model_cfg), AV_OPT_TYPE_STRING, {.str="version=vmaf_v0.6.1"}, 0, 1, FLAGS},
    {"feature",  "Set the feature to be used for computing vmaf.",                      OFFSET(feature_cfg), AV_OPT_TYPE_STRING, {.str=NULL}, 0, 1, FLAGS},
    { NULL }
};

FRAMESYNC_DEFINE_CLASS(vmafx, VMAFXContext, fs);

/* Keep in sync with vmafx_filter_pix_fmts() (the Rust side checks names). */
static const enum AVPixelFormat pix_fmts[] = {
    AV_PIX_FMT_YUV444P, AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUV420P,
    AV_PIX_FMT_YUV444P10LE, AV_PIX_FMT_YUV422P10LE, AV_PIX_FMT_YUV420P10LE,
    AV_PIX_FMT_YUV444P12LE, AV_PIX_FMT_YUV422P12LE, AV_PIX_FMT_YUV420P12LE,
    AV_PIX_FMT_YUV444P16LE, AV_PIX_FMT_YUV422P16LE, AV_PIX_FMT_YUV420P16LE,
    AV_PIX_FMT_GRAY8, AV_PIX_FMT_GRAY10LE, AV_PIX_FMT_GRAY12LE, AV_PIX_FMT_GRAY16LE,
    AV_PIX_FMT_NV12, AV_PIX_FMT_P010LE, AV_PIX_FMT_P016LE,
    /* dma-bufs, read in place on the CPU; the layout is the input link's
     * hw_frames_ctx sw_format (one of the above). */
    AV_PIX_FMT_DRM_PRIME,
    /* CUDA frames (NVDEC, CUDA filters), read in place on the GPU; the
     * layout is the link's hw_frames_ctx sw_format. */
    AV_PIX_FMT_CUDA,
#if VMAFX_HIP
    /* HIP frames (hwupload to HIP), read in place on that HIP device. */
    AV_PIX_FMT_HIP,
#endif
    AV_PIX_FMT_NONE
};

/* Each input negotiates its own format (the output follows main), so
 * mismatched inputs reach config_input_ref and fail there with a clear
 * message instead of one being converted behind the user's back. */
static int query_formats(const AVFilterContext *ctx,
                         AVFilterFormatsConfig **cfg_in,
                         AVFilterFormatsConfig **cfg_out)
{
    AVFilterFormats *main_fmts = ff_make_format_list(pix_fmts);
    int ret;

    if ((ret = ff_formats_ref(main_fmts, &cfg_in[0]->formats)) < 0 ||
        (ret = ff_formats_ref(main_fmts, &cfg_out[0]->formats)) < 0)
        return ret;
    return ff_formats_ref(ff_make_format_list(pix_fmts), &cfg_in[1]->formats);
}

static void host_frame_free(void *frame)
{
    AVFrame *f = frame;
    av_frame_free(&f);
}

static int host_frame_set_metadata(void *frame, const char *key, const char *value)
{
    return av_dict_set(&((AVFrame *)frame)->metadata, key, value, 0);
}

static int vmafx_error(AVFilterContext *ctx, int err)
{
    VMAFXContext *s = ctx->priv;
    av_log(ctx, AV_LOG_ERROR, "%s\n", vmafx_filter_last_error(s->vx));
    return err == VMAFX_ENOTSUP   ? AVERROR(ENOSYS) :
           err == VMAFX_EINTERNAL ? AVERROR_EXTERNAL : AVERROR(EINVAL);
}

static void log_warnings(AVFilterContext *ctx)
{
    VMAFXContext *s = ctx->priv;
    const char *w = vmafx_filter_take_warnings(s->vx);
    if (w)
        av_log(ctx, AV_LOG_WARNING, "%s", w);
}

static int is_hw_format(int format)
{
    return format == AV_PIX_FMT_DRM_PRIME || format == AV_PIX_FMT_CUDA
#if VMAFX_HIP
        || format == AV_PIX_FMT_HIP
#endif
        ;
}

/* The format vmafx reads from a link: its own, or for DRM_PRIME, CUDA and HIP
 * the sw_format of its hw_frames_ctx (NULL when it has none). */
static const char *link_format_name(AVFilterLink *link)
{
    FilterLink *l = ff_filter_link(link);
    if (!is_hw_format(link->format))
        return av_get_pix_fmt_name(link->format);
    if (!l->hw_frames_ctx)
        return NULL;
    return av_get_pix_fmt_name(((AVHWFramesContext *)l->hw_frames_ctx->data)->sw_format);
}

/* The CUcontext of a CUDA frames context's device (NULL if none). */
static void *cuda_context_of(AVBufferRef *hw_frames_ctx, void **stream)
{
#if CONFIG_CUDA
    AVHWFramesContext *fc = hw_frames_ctx ? (AVHWFramesContext *)hw_frames_ctx->data : NULL;
    if (fc && fc->device_ctx->type == AV_HWDEVICE_TYPE_CUDA) {
        AVCUDADeviceContext *hw = fc->device_ctx->hwctx;
        if (stream)
            *stream = hw->stream;
        return hw->cuda_ctx;
    }
#endif
    return NULL;
}

/* The device ordinal of a HIP frames context's device, and its stream
 * (-1 if none). */
static int hip_device_of(AVBufferRef *hw_frames_ctx, void **stream)
{
#if VMAFX_HIP
    AVHWFramesContext *fc = hw_frames_ctx ? (AVHWFramesContext *)hw_frames_ctx->data : NULL;
    if (fc && fc->device_ctx->type == AV_HWDEVICE_TYPE_HIP) {
        AVHIPDeviceContext *hw = fc->device_ctx->hwctx;
        *stream = hw->stream;
        return hw->device;
    }
#endif
    return -1;
}

/* DRM_PRIME frames: data[0] is the AVDRMFrameDescriptor; CUDA and HIP frames:
 * data[] are device pointers. Both take the sw format from the frame's own
 * hw_frames_ctx; CUDA frames also name their CUcontext. */
static void fill_frame(VmafxFrame *dst, AVFrame *src)
{
    for (int i = 0; i < 4; i++) {
        dst->data[i]     = src->data[i];
        dst->linesize[i] = src->linesize[i];
    }
    dst->width   = src->width;
    dst->height  = src->height;
    dst->pix_fmt = av_get_pix_fmt_name(src->format);
    dst->handle  = src;
    dst->sw_format  = NULL;
    dst->hw_context = NULL;
    if (is_hw_format(src->format) && src->hw_frames_ctx)
        dst->sw_format = av_get_pix_fmt_name(
            ((AVHWFramesContext *)src->hw_frames_ctx->data)->sw_format);
    if (src->format == AV_PIX_FMT_CUDA)
        dst->hw_context = cuda_context_of(src->hw_frames_ctx, NULL);
}

static int do_vmafx(FFFrameSync *fs)
{
    AVFilterContext *ctx = fs->parent;
    VMAFXContext *s = ctx->priv;
    AVFrame *dist, *ref, *dist_ref = NULL, *ref_ref = NULL;
    VmafxFrame main_frame, ref_frame;
    int err;

    int ret = ff_framesync_dualinput_get(fs, &dist, &ref);
    if (ret < 0)
        return ret;
    s->events++;
    /* Each event takes a new main frame, except when framesync extends
     * main past its end (the reference goes on): main has signalled EOF
     * and no main frame is left unused among those consumed. A truncated
     * main file ends so. */
    if (ff_outlink_get_status(ctx->inputs[0]) &&
        ff_filter_link(ctx->inputs[0])->frame_count_out < s->events) {
        av_frame_free(&dist);
        return vmafx_error(ctx, vmafx_filter_main_ended(s->vx, s->events - 1));
    }
    if (ctx->is_disabled || !ref) {
        err = vmafx_filter_push_unscored(s->vx, dist);
        return err < 0 ? vmafx_error(ctx, err) : 0;
    }
    /* The same the other way round: with eof_action=repeat framesync pairs
     * main frames past the reference's end with its last frame again. The
     * reference has signalled EOF and no frame of it is left unused among
     * those consumed: refuse that pair, so the log keeps the common ones
     * (and the last one's look-ahead is not taken against a repeat). */
    if (s->fs.opt_eof_action == EOF_ACTION_REPEAT &&
        ff_outlink_get_status(ctx->inputs[1]) &&
        ff_filter_link(ctx->inputs[1])->frame_count_out < s->events) {
        av_frame_free(&dist);
        return vmafx_error(ctx, vmafx_filter_reference_ended(s->vx,
                                    ff_filter_link(ctx->inputs[1])->frame_count_out));
    }

    if (dist->color_range != ref->color_range) {
        av_log(ctx, AV_LOG_WARNING, "distorted and reference "
               "frames use different color ranges (%s != %s)\n",
               av_color_range_name(dist->color_range),
               av_color_range_name(ref->color_range));
    }

    /* The frames stay referenced until scored; `dist` itself goes
     * downstream once its scores are final. */
    dist_ref = av_frame_clone(dist);
    ref_ref  = av_frame_clone(ref);
    if (!dist_ref || !ref_ref) {
        av_frame_free(&dist_ref);
        av_frame_free(&ref_ref);
        av_frame_free(&dist);
        av_log(ctx, AV_LOG_ERROR, "out of memory referencing a frame pair\n");
        return AVERROR(ENOMEM);
    }
    fill_frame(&main_frame, dist_ref);
    fill_frame(&ref_frame, ref_ref);
    err = vmafx_filter_push(s->vx, &main_frame, &ref_frame, dist);
    return err < 0 ? vmafx_error(ctx, err) : 0;
}

static int send_ready_frames(AVFilterContext *ctx)
{
    VMAFXContext *s = ctx->priv;
    for (;;) {
        void *out = NULL;
        int ret = vmafx_filter_pop(s->vx, &out);
        if (ret < 0)
            return vmafx_error(ctx, ret);
        if (!ret)
            break;
        ret = ff_filter_frame(ctx->outputs[0], out);
        if (ret < 0)
            return ret;
    }
    log_warnings(ctx);
    return 0;
}

static int finish(AVFilterContext *ctx)
{
    VMAFXContext *s = ctx->priv;
    FilterLink *ref_link = ff_filter_link(ctx->inputs[1]);
    int64_t ref_frames = ref_link->frame_count_out +
                         ff_inlink_queued_frames(ctx->inputs[1]);
    /* shortest=1 and repeatlast=0 end up as eof_action endall/pass. */
    int allow_unequal = s->fs.opt_eof_action != EOF_ACTION_REPEAT;
    int err;

    s->finished = 1;
    err = vmafx_filter_finish(s->vx, ref_frames, allow_unequal);
    log_warnings(ctx);
    return err < 0 ? vmafx_error(ctx, err) : 0;
}

static av_cold int init(AVFilterContext *ctx)
{
    VMAFXContext *s = ctx->priv;
    char err[1024] = { 0 };
    const VmafxFilterOptions opts = {
        .model       = s->model_cfg,
        .feature     = s->feature_cfg,
        .log_path    = s->log_path,
        .log_fmt     = s->log_fmt,
        .pool        = s->pool,
        .n_threads   = s->n_threads,
        .n_subsample = s->n_subsample,
        .fence_timeout_us = s->fence_timeout,
        .device      = s->device,
    };
    const VmafxHost host = {
        .frame_free         = host_frame_free,
        .frame_set_metadata = host_frame_set_metadata,
    };

    s->vx = vmafx_filter_new(&opts, &host, err, sizeof(err));
    if (!s->vx) {
        av_log(ctx, AV_LOG_ERROR, "%s\n", err);
        return AVERROR(EINVAL);
    }
    s->fs.on_event = do_vmafx;
    return 0;
}

static int config_input_ref(AVFilterLink *inlink)
{
    AVFilterContext *ctx = inlink->dst;
    VMAFXContext *s = ctx->priv;
    AVFilterLink *m = ctx->inputs[0], *r = ctx->inputs[1];
    const char *mf = link_format_name(m), *rf = link_format_name(r);
    int err;

    if (!mf || !rf) {
        av_log(ctx, AV_LOG_ERROR, "a drm_prime, cuda or hip input has no hw_frames_ctx (no sw_format to read it as)\n");
        return AVERROR(EINVAL);
    }
    for (int i = 0; i < 2; i++) {
        AVFilterLink *link = ctx->inputs[i];
        void *cuda_ctx, *stream = NULL;
        if (!strcmp(av_get_pix_fmt_name(link->format), "hip")) {
            int device = hip_device_of(ff_filter_link(link)->hw_frames_ctx, &stream);
            if (device < 0) {
                av_log(ctx, AV_LOG_ERROR, "the %s input is hip but its frames context has no HIP device\n",
                       i ? "reference" : "main");
                return AVERROR(EINVAL);
            }
            av_buffer_unref(&s->hw_device[i]);
            s->hw_device[i] = av_buffer_ref(
                ((AVHWFramesContext *)ff_filter_link(link)->hw_frames_ctx->data)->device_ref);
            if (!s->hw_device[i])
                return AVERROR(ENOMEM);
            err = vmafx_filter_set_hip_device(s->vx, i, device, stream);
            if (err < 0)
                return vmafx_error(ctx, err);
            continue;
        }
        if (link->format != AV_PIX_FMT_CUDA)
            continue;
        cuda_ctx = cuda_context_of(ff_filter_link(link)->hw_frames_ctx, &stream);
        if (!cuda_ctx) {
            av_log(ctx, AV_LOG_ERROR, "the %s input is cuda but its frames context has no CUDA device%s\n",
                   i ? "reference" : "main", CONFIG_CUDA ? "" : " (this FFmpeg was built without CUDA)");
            return AVERROR(EINVAL);
        }
        av_buffer_unref(&s->hw_device[i]);
        s->hw_device[i] = av_buffer_ref(
            ((AVHWFramesContext *)ff_filter_link(link)->hw_frames_ctx->data)->device_ref);
        if (!s->hw_device[i])
            return AVERROR(ENOMEM);
        err = vmafx_filter_set_cuda_device(s->vx, i, cuda_ctx, stream);
        if (err < 0)
            return vmafx_error(ctx, err);
    }
    if (is_hw_format(m->format) || is_hw_format(r->format))
        av_log(ctx, AV_LOG_VERBOSE, "main %s%s%s, reference %s%s%s: %s\n",
               is_hw_format(m->format) ? av_get_pix_fmt_name(m->format) : "",
               is_hw_format(m->format) ? "/" : "", mf,
               is_hw_format(r->format) ? av_get_pix_fmt_name(r->format) : "",
               is_hw_format(r->format) ? "/" : "", rf,
               m->format == AV_PIX_FMT_CUDA || r->format == AV_PIX_FMT_CUDA ?
                   "CUDA frames read in place on the GPU" :
               !strcmp(av_get_pix_fmt_name(m->format), "hip") || !strcmp(av_get_pix_fmt_name(r->format), "hip") ?
                   "HIP frames read on their HIP device" :
               s->device && !strncmp(s->device, "hip", 3) ?
                   "dma-bufs imported on the HIP device" : "dma-bufs read in place on the CPU");
    err = vmafx_filter_configure(s->vx, m->w, m->h, mf, r->w, r->h, rf);
    return err < 0 ? vmafx_error(ctx, err) : 0;
}

static int config_output(AVFilterLink *outlink)
{
    AVFilterContext *ctx = outlink->src;
    VMAFXContext *s = ctx->priv;
    AVFilterLink *mainlink = ctx->inputs[0];
    FilterLink *il = ff_filter_link(mainlink);
    FilterLink *ol = ff_filter_link(outlink);
    int ret;

    ret = ff_framesync_init_dualinput(&s->fs, ctx);
    if (ret < 0)
        return ret;
    outlink->w = mainlink->w;
    outlink->h = mainlink->h;
    outlink->time_base = mainlink->time_base;
    outlink->sample_aspect_ratio = mainlink->sample_aspect_ratio;
    ol->frame_rate = il->frame_rate;
    /* DRM_PRIME, CUDA or HIP output (main passes through): libavfilter gives the output
     * main's hw_frames_ctx itself, after this, for a filter that is not
     * FF_FILTER_FLAG_HWFRAME_AWARE, and asserts that the filter set none
     * (setting it here aborted every graph with a real DRM frames context:
     * tests/lavfi/dmabuf_graph.rs). */
    return ff_framesync_configure(&s->fs);
}

static int activate(AVFilterContext *ctx)
{
    VMAFXContext *s = ctx->priv;
    int events = s->events, ret;

    ret = ff_framesync_activate(&s->fs);
    if (ret < 0)
        return ret;
    ret = send_ready_frames(ctx);
    if (ret < 0)
        return ret;
    if (s->fs.eof && !s->finished) {
        /* framesync has set EOF on the output; the frames still held back
         * for look-ahead features go out ahead of it. */
        int err = finish(ctx);
        ret = send_ready_frames(ctx);
        /* Pool and write the log now, so a failure fails the run (uninit
         * cannot); uninit logs the score line. */
        if (err >= 0 && ret >= 0 && vmafx_filter_frames_scored(s->vx) &&
            !vmafx_filter_summary(s->vx))
            err = vmafx_error(ctx, VMAFX_EINVAL);
        return err < 0 ? err : ret;
    }
    /* A pair was taken but its frame may be held back: run again so the
     * next queued pair (or a new request) is handled. */
    if (s->events != events && !s->fs.eof)
        ff_filter_set_ready(ctx, 100);
    return 0;
}

static av_cold void uninit(AVFilterContext *ctx)
{
    VMAFXContext *s = ctx->priv;

    ff_framesync_uninit(&s->fs);
    if (s->vx && vmafx_filter_frames_scored(s->vx)) {
        const char *summary;
        if (!s->finished) {
            /* Torn down before EOF (a failed push, or the caller stopped):
             * score what was pushed, without the frame-count check, whose
             * counts mean nothing here (a refused pair was taken from both
             * inputs but never pushed). */
            s->finished = 1;
            if (vmafx_filter_finish(s->vx, -1, 1) < 0)
                av_log(ctx, AV_LOG_ERROR, "%s\n", vmafx_filter_last_error(s->vx));
        }
        /* After a failure this writes the log of the frames scored before
         * it, marked incomplete, and returns NULL with a message that says
         * so: every failure is logged at AV_LOG_ERROR. */
        summary = vmafx_filter_summary(s->vx);
        log_warnings(ctx);
        av_log(ctx, AV_LOG_VERBOSE, "%"PRIu64" frame pairs scored, %"PRIu64" host copies, %"PRIu64" GPU frames in place\n",
               vmafx_filter_frames_scored(s->vx), vmafx_filter_host_copies(s->vx),
               vmafx_filter_device_frames(s->vx));
        if (!summary)
            av_log(ctx, AV_LOG_ERROR, "%s\n", vmafx_filter_last_error(s->vx));
        else if (*summary)
            av_log(ctx, AV_LOG_INFO, "%s", summary);
    }
    vmafx_filter_free(s->vx);
    s->vx = NULL;
    av_buffer_unref(&s->hw_device[0]);
    av_buffer_unref(&s->hw_device[1]);
}

static const AVFilterPad vmafx_inputs[] = {
    {
        .name         = "main",
        .type         = AVMEDIA_TYPE_VIDEO,
    },
    {
        .name         = "reference",
        .type         = AVMEDIA_TYPE_VIDEO,
        .config_props = config_input_ref,
    },
};

static const AVFilterPad vmafx_outputs[] = {
    {
        .name          = "default",
        .type          = AVMEDIA_TYPE_VIDEO,
        .config_props  = config_output,
    },
};

/* @FILTER_DEFINITION@ */
