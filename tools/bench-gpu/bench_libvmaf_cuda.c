/*
 * bench_libvmaf_cuda: the libvmaf 3.2.0 side of scripts/bench-gpu.
 *
 * Scores raw planar 4:2:0 frames (as vmafx-bench-gpu gen writes them) with
 * vmaf_v0.6.1 through libvmaf's public API and its CUDA backend, the way
 * FFmpeg's libvmaf_cuda filter feeds device frames: every distinct frame is
 * uploaded to device memory once, before timing; then, per frame, two
 * pictures are fetched from libvmaf's preallocated device pool
 * (VMAF_CUDA_PICTURE_PREALLOCATION_METHOD_DEVICE), the luma planes are copied
 * device to device into them (as vf_libvmaf.c's copy_picture_data_cuda does:
 * libvmaf reads only its own pictures), and vmaf_read_pictures is called.
 * Timed: every frame's fetch + copy + vmaf_read_pictures, the flush, and
 * vmaf_score_pooled, on a fresh context per run. One untimed warm-up run
 * (8 frames), then --repeat times a run of N frames and one of N/5:
 * fps = (N - N/5) / (median(N) - median(N/5)), the steady rate without the
 * fixed cost every run pays (fixed_s: first-frame set-up, drain at flush).
 *
 *   bench_libvmaf_cuda --ref F --dis F --width W --height H --bits B \
 *       --distinct K --frames N --model vmaf_v0.6.1.json [--repeat 3]
 *       [--cpu [--threads T] [--no-warmup]]
 *   bench_libvmaf_cuda --bandwidth [--mib 1024] [--iters 20]
 *
 * --cpu scores the same frames on libvmaf's CPU path (host pictures, T
 * threads): the check that both programs read the same frames (libvmaf's CPU
 * scores equal vmafx's as bits), and it builds without CUDA
 * (-DBENCH_CPU_ONLY). --bandwidth times cuMemcpyDtoDAsync of a large buffer.
 * Prints one line "RESULT {json}".
 *
 * Build (scripts/bench-gpu does it): gcc -O2 -I libvmaf/include
 *   -I nv-codec-headers/include bench_libvmaf_cuda.c libvmaf.a -lstdc++ -lm
 *   -lpthread -ldl
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libvmaf/libvmaf.h>
#include <libvmaf/model.h>
#include <libvmaf/picture.h>

#ifndef BENCH_CPU_ONLY
#include <ffnvcodec/dynlink_loader.h>
#include <libvmaf/libvmaf_cuda.h>
#endif

typedef struct {
    const char *ref, *dis, *model;
    unsigned w, h, bits, distinct, frames, repeat, threads;
    int cpu, bandwidth, no_warmup;
    size_t mib;
    unsigned iters;
} Opts;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void fail(const char *what, int code)
{
    printf("RESULT {\"error\": \"%s (%d)\"}\n", what, code);
    fprintf(stderr, "bench_libvmaf_cuda: %s (%d)\n", what, code);
    exit(1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Bytes per sample, plane sizes and offsets of one raw frame. */
static unsigned bps(const Opts *o) { return o->bits > 8 ? 2 : 1; }
static size_t luma_bytes(const Opts *o) { return (size_t)o->w * o->h * bps(o); }
static size_t chroma_bytes(const Opts *o) { return (size_t)(o->w / 2) * (o->h / 2) * bps(o); }
static size_t frame_bytes(const Opts *o) { return luma_bytes(o) + 2 * chroma_bytes(o); }

static uint8_t *read_file(const char *path, size_t need)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail(path, errno);
    uint8_t *buf = malloc(need);
    if (!buf) fail("out of memory", ENOMEM);
    if (fread(buf, 1, need, f) != need) fail("short file", (int)need);
    fclose(f);
    return buf;
}

typedef struct {
    double seconds, init, pooled, first[3];
} Run;

static VmafModel *load_model(const Opts *o)
{
    VmafModel *model = NULL;
    VmafModelConfig cfg = { .name = "vmaf", .flags = VMAF_MODEL_FLAGS_DEFAULT };
    int err = vmaf_model_load_from_path(&model, &cfg, o->model);
    if (err) fail("vmaf_model_load_from_path", err);
    return model;
}

static void finish(VmafContext *vmaf, VmafModel *model, unsigned n, Run *r)
{
    int err = vmaf_read_pictures(vmaf, NULL, NULL, 0);
    if (err) fail("vmaf_read_pictures (flush)", err);
    err = vmaf_score_pooled(vmaf, model, VMAF_POOL_METHOD_MEAN, &r->pooled, 0, n - 1);
    if (err) fail("vmaf_score_pooled", err);
}

static void first_scores(VmafContext *vmaf, VmafModel *model, unsigned n, Run *r)
{
    for (unsigned i = 0; i < 3; i++) {
        r->first[i] = -1;
        if (i < n) vmaf_score_at_index(vmaf, model, &r->first[i], i);
    }
}

/* libvmaf's CPU path: host pictures filled from the raw frames. */
static Run run_cpu(const Opts *o, uint8_t *ref, uint8_t *dis, unsigned n)
{
    Run r = { 0 };
    double t0 = now();
    VmafConfiguration cfg = { .log_level = VMAF_LOG_LEVEL_WARNING, .n_threads = o->threads,
                              .n_subsample = 1, .cpumask = 0, .gpumask = 0 };
    VmafContext *vmaf = NULL;
    int err = vmaf_init(&vmaf, cfg);
    if (err) fail("vmaf_init", err);
    VmafModel *model = load_model(o);
    err = vmaf_use_features_from_model(vmaf, model);
    if (err) fail("vmaf_use_features_from_model", err);
    r.init = now() - t0;

    double start = now();
    for (unsigned i = 0; i < n; i++) {
        VmafPicture pics[2];
        const uint8_t *src[2] = { ref + (i % o->distinct) * frame_bytes(o),
                                  dis + (i % o->distinct) * frame_bytes(o) };
        for (int p = 0; p < 2; p++) {
            err = vmaf_picture_alloc(&pics[p], VMAF_PIX_FMT_YUV420P, o->bits, o->w, o->h);
            if (err) fail("vmaf_picture_alloc", err);
            const uint8_t *s = src[p];
            for (int c = 0; c < 3; c++) {
                size_t row = (size_t)pics[p].w[c] * bps(o);
                for (unsigned y = 0; y < pics[p].h[c]; y++, s += row)
                    memcpy((uint8_t *)pics[p].data[c] + y * pics[p].stride[c], s, row);
            }
        }
        err = vmaf_read_pictures(vmaf, &pics[0], &pics[1], i);
        if (err) fail("vmaf_read_pictures", err);
    }
    finish(vmaf, model, n, &r);
    r.seconds = now() - start;
    first_scores(vmaf, model, n, &r);
    vmaf_model_destroy(model);
    vmaf_close(vmaf);
    return r;
}

#ifndef BENCH_CPU_ONLY
static CudaFunctions *cu;

static void check_cu(CUresult rc, const char *call)
{
    if (rc != CUDA_SUCCESS) {
        const char *name = "?";
        if (cu && cu->cuGetErrorName) cu->cuGetErrorName(rc, &name);
        char msg[256];
        snprintf(msg, sizeof(msg), "%s failed: %s", call, name);
        fail(msg, (int)rc);
    }
}
#define CU(call) check_cu(cu->call, #call)

static CUcontext open_cuda(char *name, size_t name_len)
{
    if (cuda_load_functions(&cu, NULL) < 0) fail("loading libcuda.so.1 (ffnvcodec)", -1);
    CU(cuInit(0));
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    CU(cuDeviceGetName(name, (int)name_len, dev));
    CUcontext ctx;
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    return ctx;
}

/* libvmaf's CUDA path on device-resident frames. */
static Run run_cuda(const Opts *o, CUcontext ctx, CUdeviceptr *dref, CUdeviceptr *ddis, unsigned n)
{
    Run r = { 0 };
    double t0 = now();
    VmafConfiguration cfg = { .log_level = VMAF_LOG_LEVEL_WARNING, .n_threads = 0,
                              .n_subsample = 1, .cpumask = 0, .gpumask = 0 };
    VmafContext *vmaf = NULL;
    int err = vmaf_init(&vmaf, cfg);
    if (err) fail("vmaf_init", err);
    VmafCudaState *cu_state = NULL;
    err = vmaf_cuda_state_init(&cu_state, (VmafCudaConfiguration){ .cu_ctx = ctx });
    if (err) fail("vmaf_cuda_state_init", err);
    err = vmaf_cuda_import_state(vmaf, cu_state);
    if (err) fail("vmaf_cuda_import_state", err);
    VmafCudaPictureConfiguration pic_cfg = {
        .pic_params = { .w = o->w, .h = o->h, .bpc = o->bits, .pix_fmt = VMAF_PIX_FMT_YUV420P },
        .pic_prealloc_method = VMAF_CUDA_PICTURE_PREALLOCATION_METHOD_DEVICE,
    };
    err = vmaf_cuda_preallocate_pictures(vmaf, pic_cfg);
    if (err) fail("vmaf_cuda_preallocate_pictures", err);
    VmafModel *model = load_model(o);
    err = vmaf_use_features_from_model(vmaf, model);
    if (err) fail("vmaf_use_features_from_model", err);
    r.init = now() - t0;

    CU(cuCtxPushCurrent(ctx));
    double start = now();
    for (unsigned i = 0; i < n; i++) {
        VmafPicture pics[2];
        CUdeviceptr src[2] = { dref[i % o->distinct], ddis[i % o->distinct] };
        for (int p = 0; p < 2; p++) {
            err = vmaf_cuda_fetch_preallocated_picture(vmaf, &pics[p]);
            if (err) fail("vmaf_cuda_fetch_preallocated_picture", err);
            /* Luma only, on the legacy default stream, as FFmpeg's
             * copy_picture_data_cuda (cuMemcpy2D): the pictures' streams are
             * blocking streams, so libvmaf's work on them follows the copy. */
            CUDA_MEMCPY2D m = {
                .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                .srcDevice = src[p],
                .srcPitch = (size_t)o->w * bps(o),
                .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                .dstDevice = (CUdeviceptr)pics[p].data[0],
                .dstPitch = (size_t)pics[p].stride[0],
                .WidthInBytes = (size_t)pics[p].w[0] * bps(o),
                .Height = pics[p].h[0],
            };
            CU(cuMemcpy2DAsync(&m, NULL));
        }
        err = vmaf_read_pictures(vmaf, &pics[0], &pics[1], i);
        if (err) fail("vmaf_read_pictures", err);
    }
    finish(vmaf, model, n, &r);
    r.seconds = now() - start;
    CU(cuCtxPopCurrent(NULL));
    first_scores(vmaf, model, n, &r);
    vmaf_model_destroy(model);
    vmaf_close(vmaf);
    free(cu_state); /* vmaf_close released the stream it held */
    return r;
}

static void bandwidth(const Opts *o)
{
    char name[256] = { 0 };
    CUcontext ctx = open_cuda(name, sizeof(name));
    CU(cuCtxPushCurrent(ctx));
    size_t bytes = o->mib << 20;
    CUdeviceptr a, b;
    CU(cuMemAlloc(&a, bytes));
    CU(cuMemAlloc(&b, bytes));
    CU(cuMemsetD8Async(a, 1, bytes, NULL));
    CU(cuMemcpyDtoDAsync(b, a, bytes, NULL)); /* warm-up */
    CU(cuStreamSynchronize(NULL));
    double start = now();
    for (unsigned i = 0; i < o->iters; i++)
        CU(cuMemcpyDtoDAsync(b, a, bytes, NULL));
    CU(cuStreamSynchronize(NULL));
    double t = now() - start;
    CU(cuMemFree(a));
    CU(cuMemFree(b));
    CU(cuCtxPopCurrent(NULL));
    printf("RESULT {\"device\": \"%s\", \"buffer_mib\": %zu, \"iters\": %u, \"memcpy_dtod_gbs\": %.1f}\n",
           name, o->mib, o->iters, 2.0 * bytes * o->iters / t / 1e9);
}
#endif

/* Frames of the shorter run each repeat adds (0: none): the difference of
 * the medians gives the steady rate, without what every run pays once
 * (first-frame set-up, the drain at flush), reported as fixed_s. */
static unsigned short_frames(const Opts *o)
{
    return o->frames >= 16 ? (o->frames / 5 > 8 ? o->frames / 5 : 8) : 0;
}

static void print_run(const Opts *o, const char *lane, double *times, double *short_times,
                      Run *last, double warmup)
{
    unsigned ns = short_frames(o);
    printf("RESULT {\"lane\": \"%s\", \"width\": %u, \"height\": %u, \"bits\": %u, \"frames\": %u, "
           "\"distinct\": %u, \"runs_s\": [", lane, o->w, o->h, o->bits, o->frames, o->distinct);
    for (unsigned i = 0; i < o->repeat; i++) printf("%s%.6f", i ? ", " : "", times[i]);
    printf("], \"short_frames\": %u, \"runs_short_s\": [", ns);
    for (unsigned i = 0; ns && i < o->repeat; i++) printf("%s%.6f", i ? ", " : "", short_times[i]);
    double t = median(times, o->repeat);
    double fps = o->frames / t, fixed = 0;
    if (ns) {
        double per_frame = (t - median(short_times, o->repeat)) / (o->frames - ns);
        if (per_frame > 0) {
            fps = 1 / per_frame;
            fixed = t - o->frames * per_frame;
            if (fixed < 0) fixed = 0;
        }
    }
    size_t bpf = 3 * luma_bytes(o);
    printf("], \"median_s\": %.6f, \"fps\": %.2f, \"fps_whole\": %.2f, \"fixed_s\": %.4f, "
           "\"ms_per_frame\": %.4f, \"bytes_per_frame\": %zu, "
           "\"gbs\": %.2f, \"init_s\": %.4f, \"warmup_s\": %.3f, \"vmaf_pooled\": %.17g, "
           "\"vmaf_first\": [%.17g, %.17g, %.17g]}\n",
           t, fps, o->frames / t, fixed, 1e3 / fps, bpf, (double)bpf * fps / 1e9,
           last->init, warmup, last->pooled, last->first[0], last->first[1], last->first[2]);
}

int main(int argc, char **argv)
{
    Opts o = { .repeat = 3, .bits = 8, .mib = 1024, .iters = 20 };
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "--cpu")) { o.cpu = 1; continue; }
        if (!strcmp(k, "--bandwidth")) { o.bandwidth = 1; continue; }
        if (!strcmp(k, "--no-warmup")) { o.no_warmup = 1; continue; }
        if (i + 1 >= argc) fail("option needs a value", i);
        const char *v = argv[++i];
        if (!strcmp(k, "--ref")) o.ref = v;
        else if (!strcmp(k, "--dis")) o.dis = v;
        else if (!strcmp(k, "--model")) o.model = v;
        else if (!strcmp(k, "--width")) o.w = atoi(v);
        else if (!strcmp(k, "--height")) o.h = atoi(v);
        else if (!strcmp(k, "--bits")) o.bits = atoi(v);
        else if (!strcmp(k, "--distinct")) o.distinct = atoi(v);
        else if (!strcmp(k, "--frames")) o.frames = atoi(v);
        else if (!strcmp(k, "--repeat")) o.repeat = atoi(v);
        else if (!strcmp(k, "--threads")) o.threads = atoi(v);
        else if (!strcmp(k, "--mib")) o.mib = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--iters")) o.iters = atoi(v);
        else fail("unknown option", i);
    }
    if (o.bandwidth) {
#ifndef BENCH_CPU_ONLY
        bandwidth(&o);
        return 0;
#else
        fail("built without CUDA", 0);
#endif
    }
    if (!o.ref || !o.dis || !o.model || !o.w || !o.h || !o.distinct || (o.w | o.h) & 1)
        fail("need --ref --dis --model --width --height (even) --distinct", 0);
    if (!o.frames) o.frames = o.distinct;
    if (!o.repeat) o.repeat = 1;
    uint8_t *ref = read_file(o.ref, frame_bytes(&o) * o.distinct);
    uint8_t *dis = read_file(o.dis, frame_bytes(&o) * o.distinct);
    double *times = calloc(o.repeat, sizeof(*times));
    double *short_times = calloc(o.repeat, sizeof(*short_times));
    unsigned ns = short_frames(&o);
    Run last = { 0 };
    unsigned warm_n = o.frames < 8 ? o.frames : 8;

    if (o.cpu) {
        double w0 = now();
        if (!o.no_warmup) run_cpu(&o, ref, dis, warm_n);
        double warmup = now() - w0;
        for (unsigned i = 0; i < o.repeat; i++) {
            last = run_cpu(&o, ref, dis, o.frames);
            times[i] = last.seconds;
            if (ns) short_times[i] = run_cpu(&o, ref, dis, ns).seconds;
        }
        char lane[32];
        snprintf(lane, sizeof(lane), "libvmaf-cpu-t%u", o.threads);
        print_run(&o, lane, times, short_times, &last, warmup);
        return 0;
    }
#ifndef BENCH_CPU_ONLY
    char name[256] = { 0 };
    CUcontext ctx = open_cuda(name, sizeof(name));
    CU(cuCtxPushCurrent(ctx));
    CUdeviceptr *dref = calloc(o.distinct, sizeof(*dref)), *ddis = calloc(o.distinct, sizeof(*ddis));
    for (unsigned k = 0; k < o.distinct; k++) {
        CU(cuMemAlloc(&dref[k], frame_bytes(&o)));
        CU(cuMemAlloc(&ddis[k], frame_bytes(&o)));
        CU(cuMemcpyHtoD(dref[k], ref + k * frame_bytes(&o), frame_bytes(&o)));
        CU(cuMemcpyHtoD(ddis[k], dis + k * frame_bytes(&o), frame_bytes(&o)));
    }
    CU(cuCtxPopCurrent(NULL));
    double w0 = now();
    run_cuda(&o, ctx, dref, ddis, warm_n);
    double warmup = now() - w0;
    for (unsigned i = 0; i < o.repeat; i++) {
        last = run_cuda(&o, ctx, dref, ddis, o.frames);
        times[i] = last.seconds;
        if (ns) short_times[i] = run_cuda(&o, ctx, dref, ddis, ns).seconds;
    }
    print_run(&o, "libvmaf-cuda", times, short_times, &last, warmup);
    return 0;
#else
    fail("built without CUDA: use --cpu", 0);
#endif
}
