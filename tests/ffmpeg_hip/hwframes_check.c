/*
 * FFmpeg's HIP hwcontext (the series' libavutil/hwcontext_hip.c) through
 * libavutil's public API, on the fake libamdhip64 of tests/hip_fake, whose
 * device memory is host memory: so this program may read a HIP frame's
 * planes directly and check where the hwcontext put every byte.
 *
 *   hwframes_check         every check below; prints "ok ..." per check and
 *                          "FAIL ..." for each failure; exit status 1 on any
 *
 * For each sw_format, at an odd size (175x99: chroma rounded up, pitches
 * that are not the width): the pool's frames have every plane at a pitch
 * that is a multiple of 256, inside one allocation, not overlapping; an
 * upload puts each row of each plane where the frame's pitch says,
 * visible as soon as av_hwframe_transfer_data returns (the stream was
 * synchronised); a download gives back the bytes uploaded. Refusals:
 * an unsupported sw_format, a transfer from a frame of another format, a
 * device index that does not exist, an unknown PCI bus id; a PCI bus id
 * of the fake's device opens device 0.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/hwcontext.h>
#include <libavutil/hwcontext_hip.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>

static int failures;
static char last_error[1024];

#define CHECK(cond, ...) do {                                   \
        if (cond) { printf("ok   "); printf(__VA_ARGS__); }     \
        else { printf("FAIL "); printf(__VA_ARGS__); failures++; } \
        printf("\n");                                           \
    } while (0)

/* Keeps the last error libavutil logged, to check the refusals' words. */
static void log_callback(void *avcl, int level, const char *fmt, va_list vl)
{
    if (level <= AV_LOG_ERROR)
        vsnprintf(last_error, sizeof(last_error), fmt, vl);
}

/* Bytes that differ per plane, row and column, so a row or plane in the
 * wrong place shows. */
static void fill(AVFrame *f, const int bytes[4], const int rows[4], int planes, unsigned seed)
{
    for (int p = 0; p < planes; p++)
        for (int y = 0; y < rows[p]; y++)
            for (int x = 0; x < bytes[p]; x++)
                f->data[p][y * f->linesize[p] + x] = (uint8_t)(seed * 131 + p * 71 + y * 29 + x * 7 + (x * y >> 3));
}

static int same_rows(const AVFrame *a, const AVFrame *b, const int bytes[4], const int rows[4], int planes,
                     int *bad_plane, int *bad_row)
{
    for (int p = 0; p < planes; p++)
        for (int y = 0; y < rows[p]; y++)
            if (memcmp(a->data[p] + y * a->linesize[p], b->data[p] + y * b->linesize[p], bytes[p])) {
                *bad_plane = p;
                *bad_row = y;
                return 0;
            }
    return 1;
}

static void check_format(AVBufferRef *device, enum AVPixelFormat fmt, int width, int height)
{
    const char *name = av_get_pix_fmt_name(fmt);
    const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get(fmt);
    AVBufferRef *frames = av_hwframe_ctx_alloc(device);
    AVHWFramesContext *fc = (AVHWFramesContext *)frames->data;
    AVFrame *hw = av_frame_alloc(), *sw = av_frame_alloc(), *back = av_frame_alloc();
    int bytes[4] = { 0 }, rows[4] = { 0 }, planes = av_pix_fmt_count_planes(fmt), ret, p, q, bp = -1, br = -1;

    fc->format = AV_PIX_FMT_HIP;
    fc->sw_format = fmt;
    fc->width = width;
    fc->height = height;
    ret = av_hwframe_ctx_init(frames);
    CHECK(ret >= 0, "%s: frames context initialised (%d)", name, ret);
    if (ret < 0)
        goto end;

    ret = av_hwframe_get_buffer(frames, hw, 0);
    CHECK(ret >= 0 && hw->format == AV_PIX_FMT_HIP, "%s: a pool frame (%d)", name, ret);
    if (ret < 0)
        goto end;
    av_image_fill_linesizes(bytes, fmt, width);
    for (p = 0; p < planes; p++)
        rows[p] = p == 1 || p == 2 ? AV_CEIL_RSHIFT(height, desc->log2_chroma_h) : height;
    for (p = 0; p < planes; p++) {
        uint8_t *start = hw->data[p], *end = start + (size_t)hw->linesize[p] * rows[p];
        CHECK(hw->linesize[p] % 256 == 0 && hw->linesize[p] >= bytes[p],
              "%s: plane %d pitch %d (a multiple of 256, at least %d)", name, p, hw->linesize[p], bytes[p]);
        CHECK(start >= hw->buf[0]->data && end <= hw->buf[0]->data + hw->buf[0]->size,
              "%s: plane %d inside the frame's allocation", name, p);
        for (q = 0; q < p; q++) {
            uint8_t *qs = hw->data[q], *qe = qs + (size_t)hw->linesize[q] * rows[q];
            CHECK(end <= qs || start >= qe, "%s: planes %d and %d do not overlap", name, q, p);
        }
    }

    sw->format = fmt;
    sw->width = width;
    sw->height = height;
    if (av_frame_get_buffer(sw, 0) < 0)
        goto end;
    fill(sw, bytes, rows, planes, fmt);

    ret = av_hwframe_transfer_data(hw, sw, 0);
    CHECK(ret >= 0, "%s: upload (%d)", name, ret);
    /* Device memory is host memory on the fake: the rows must be there now. */
    CHECK(ret >= 0 && same_rows(hw, sw, bytes, rows, planes, &bp, &br),
          "%s: every uploaded row at its pitch in device memory (first wrong: plane %d row %d)", name, bp, br);

    ret = av_hwframe_transfer_data(back, hw, 0);
    CHECK(ret >= 0 && back->format == fmt, "%s: download (%d) as %s", name, ret, av_get_pix_fmt_name(back->format));
    CHECK(ret >= 0 && same_rows(back, sw, bytes, rows, planes, &bp, &br),
          "%s: the download equals what was uploaded (first wrong: plane %d row %d)", name, bp, br);

    if (fmt == AV_PIX_FMT_YUV420P) {
        /* A software frame of another format is refused, by name. */
        AVFrame *other = av_frame_alloc();
        other->format = AV_PIX_FMT_YUV444P;
        other->width = width;
        other->height = height;
        av_frame_get_buffer(other, 0);
        last_error[0] = 0;
        ret = av_hwframe_transfer_data(hw, other, 0);
        CHECK(ret < 0 && strstr(last_error, "yuv444p"),
              "yuv420p: an upload from a yuv444p frame refused (%d: %s)", ret, last_error);
        av_frame_free(&other);
    }

end:
    av_frame_free(&hw);
    av_frame_free(&sw);
    av_frame_free(&back);
    av_buffer_unref(&frames);
}

int main(void)
{
    static const enum AVPixelFormat formats[] = {
        AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUV444P,
        AV_PIX_FMT_YUV420P10, AV_PIX_FMT_YUV422P12, AV_PIX_FMT_YUV444P16,
        AV_PIX_FMT_GRAY8, AV_PIX_FMT_NV12, AV_PIX_FMT_P010, AV_PIX_FMT_P016,
    };
    AVBufferRef *device = NULL, *other = NULL;
    AVHWFramesContext *fc;
    int ret;

    av_log_set_callback(log_callback);

    CHECK(av_hwdevice_find_type_by_name("hip") == AV_HWDEVICE_TYPE_HIP, "the device type is called hip");
    ret = av_hwdevice_ctx_create(&device, AV_HWDEVICE_TYPE_HIP, "0", NULL, 0);
    CHECK(ret >= 0, "device 0 created (%d: %s)", ret, last_error);
    if (ret < 0)
        return 1;
    {
        AVHIPDeviceContext *hip = ((AVHWDeviceContext *)device->data)->hwctx;
        CHECK(hip->device == 0 && hip->stream == NULL, "AVHIPDeviceContext: device 0, the null stream");
    }

    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
        check_format(device, formats[i], 175, 99);

    /* An sw_format the hwcontext does not hold is refused, by name. */
    other = av_hwframe_ctx_alloc(device);
    fc = (AVHWFramesContext *)other->data;
    fc->format = AV_PIX_FMT_HIP;
    fc->sw_format = AV_PIX_FMT_RGB24;
    fc->width = 64;
    fc->height = 48;
    last_error[0] = 0;
    ret = av_hwframe_ctx_init(other);
    CHECK(ret == AVERROR(ENOSYS) && strstr(last_error, "'rgb24' is not supported"),
          "an rgb24 frames context refused (%d: %s)", ret, last_error);
    av_buffer_unref(&other);
    av_buffer_unref(&device);

    last_error[0] = 0;
    ret = av_hwdevice_ctx_create(&device, AV_HWDEVICE_TYPE_HIP, "5", NULL, 0);
    CHECK(ret < 0 && strstr(last_error, "HIP device 5 does not exist (1 devices)"),
          "device 5 refused (%d: %s)", ret, last_error);
    ret = av_hwdevice_ctx_create(&device, AV_HWDEVICE_TYPE_HIP, "0000:03:00.0", NULL, 0);
    CHECK(ret >= 0 && ((AVHIPDeviceContext *)((AVHWDeviceContext *)device->data)->hwctx)->device == 0,
          "PCI bus id 0000:03:00.0 is device 0 (%d)", ret);
    av_buffer_unref(&device);
    last_error[0] = 0;
    ret = av_hwdevice_ctx_create(&device, AV_HWDEVICE_TYPE_HIP, "0000:99:00.0", NULL, 0);
    CHECK(ret < 0 && strstr(last_error, "0000:99:00.0"), "PCI bus id 0000:99:00.0 refused (%d: %s)", ret, last_error);

    printf("%d failures\n", failures);
    return failures != 0;
}
