/*
 * bench_libvmaf_cuda: the libvmaf 3.2.0 side of `cargo xtask bench-gpu` (xtask/src/bench_gpu.rs).
 *
 * Scores raw planar 4:2:0 frames (as vmafx-bench-gpu gen writes them) with
 * a model JSON (vmaf_v0.6.1, vmaf_v1.0.16_3d0h, ...) through libvmaf's public
 * API and its CUDA backend, the way
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
 *       [--threads T] [--gpumask | --download | --cpu [--zero-chroma]]
 *       [--no-warmup]
 *   bench_libvmaf_cuda --bandwidth [--mib 1024] [--iters 20]
 *
 * --cpu scores the same frames on libvmaf's CPU path (host pictures, T
 * threads): the check that both programs read the same frames (libvmaf's CPU
 * scores equal vmafx's as bits), and it builds without CUDA
 * (-DBENCH_CPU_ONLY); --zero-chroma leaves the chroma planes at zero, as
 * libvmaf's own download of a CUDA picture does (below).
 *
 * Models with features no CUDA extractor provides (the v1.0.16 family:
 * cambi, speed_chroma, adm3 with csf mode 2, motion3) cannot be scored on
 * libvmaf 3.2.0's CUDA extractors: on a context with a CUDA state,
 * vmaf_use_features_from_model looks each feature up among the CUDA
 * extractors only (feature_extractor.c, flags VMAF_FEATURE_EXTRACTOR_CUDA)
 * and refuses the model ("could not initialize feature extractor"); there is
 * no per-feature fallback. What a libvmaf user with CUDA frames can do:
 *   --gpumask   the same CUDA context and device pictures with gpumask set,
 *               so the model's features resolve to the CPU extractors;
 *               vmaf_read_pictures then downloads each device picture to a
 *               host picture (translate_picture_device) and runs every
 *               extractor on the CPU (T threads). libvmaf downloads luma
 *               only (vmaf_cuda_picture_download_async, bitmask 0x1): the
 *               host chroma stays zero, so chroma features (speed_chroma)
 *               see no chroma. All three planes are copied into the device
 *               pictures here, as a decoder would have them.
 *   --download  the application downloads each frame (all three planes,
 *               cuMemcpy2D to host pictures) and scores it on a CPU context
 *               (T threads): what FFmpeg's hwdownload + libvmaf filter do,
 *               and the way to libvmaf's correct values.
 * Device memory (CUDA lanes): cuMemGetInfo (the whole device's free memory,
 * read through dlopen: ffnvcodec's table lacks it) before vmaf_init, after
 * the context is set up (state, preallocated pictures, the model's
 * extractors) and at the end of each run, before vmaf_close:
 * device_bytes_context, device_bytes_end (a run of N frames) and
 * device_bytes_end_short (N/5), each the increase over before.
 * --bandwidth times cuMemcpyDtoDAsync of a large buffer.
 * Prints one line "RESULT {json}", with every frame's score (vmaf_frames).
 *
 * Build (`cargo xtask bench-gpu run` does it): gcc -O2 -I libvmaf/include
 *   -I nv-codec-headers/include bench_libvmaf_cuda.c libvmaf.a -lstdc++ -lm
 *   -lpthread -ldl
 */
#include <dlfcn.h>
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

/* libvmaf logs errors only: SpEED's "covariance matrix is singular" warnings
 * (per block, on flat regions) would fill the logs. */
#define LOG_LEVEL VMAF_LOG_LEVEL_ERROR

typedef struct {
    const char *ref, *dis, *model;
    unsigned w, h, bits, distinct, frames, repeat, threads;
    int cpu, bandwidth, no_warmup, gpumask, download, zero_chroma;
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
    double *frames; /* every frame's score (n of them), NULL unless asked */
    long long mem_setup, mem_end; /* device bytes over before vmaf_init; -1: not measured */
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
    if (!r->frames) return;
    for (unsigned i = 0; i < n; i++) {
        r->frames[i] = -1;
        vmaf_score_at_index(vmaf, model, &r->frames[i], i);
    }
}

/* Copies one raw frame (planar, packed rows) into a host picture; chroma
 * left as vmaf_picture_alloc made it (zero) when luma_only. */
static void fill_host_picture(const Opts *o, VmafPicture *pic, const uint8_t *s, int luma_only)
{
    for (int c = 0; c < (luma_only ? 1 : 3); c++) {
        size_t row = (size_t)pic->w[c] * bps(o);
        for (unsigned y = 0; y < pic->h[c]; y++, s += row)
            memcpy((uint8_t *)pic->data[c] + y * pic->stride[c], s, row);
    }
}

/* libvmaf's CPU path: host pictures filled from the raw frames. */
static Run run_cpu(const Opts *o, uint8_t *ref, uint8_t *dis, unsigned n, double *frames)
{
    Run r = { .frames = frames, .mem_setup = -1 };
    double t0 = now();
    VmafConfiguration cfg = { .log_level = LOG_LEVEL, .n_threads = o->threads,
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
            fill_host_picture(o, &pics[p], src[p], o->zero_chroma);
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

/* Device memory in use on the whole device now (total - free), in bytes,
 * with ctx current. */
static long long device_used(CUcontext ctx)
{
    typedef CUresult (*MemGetInfo)(size_t *, size_t *);
    static MemGetInfo get_info;
    if (!get_info) {
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
        if (lib) get_info = (MemGetInfo)dlsym(lib, "cuMemGetInfo_v2");
        if (!get_info) fail("cuMemGetInfo_v2 not in libcuda.so.1", 0);
    }
    size_t free_bytes = 0, total = 0;
    CU(cuCtxPushCurrent(ctx));
    check_cu(get_info(&free_bytes, &total), "cuMemGetInfo");
    CU(cuCtxPopCurrent(NULL));
    return (long long)(total - free_bytes);
}

/* Device-to-device or device-to-host copy of one plane of a raw frame in
 * device memory (planes packed, rows unpadded) into a picture's plane. */
static void copy_plane(const Opts *o, CUdeviceptr frame, const VmafPicture *pic, int c, int to_host)
{
    size_t offset = c == 0 ? 0 : luma_bytes(o) + (size_t)(c - 1) * chroma_bytes(o);
    CUDA_MEMCPY2D m = {
        .srcMemoryType = CU_MEMORYTYPE_DEVICE,
        .srcDevice = frame + offset,
        .srcPitch = (size_t)pic->w[c] * bps(o),
        .dstMemoryType = to_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE,
        .dstPitch = (size_t)pic->stride[c],
        .WidthInBytes = (size_t)pic->w[c] * bps(o),
        .Height = pic->h[c],
    };
    if (to_host)
        m.dstHost = pic->data[c];
    else
        m.dstDevice = (CUdeviceptr)pic->data[c];
    CU(cuMemcpy2DAsync(&m, NULL));
}

/* libvmaf's CUDA path on device-resident frames (--gpumask: the same with
 * the CPU extractors, see the header). */
static Run run_cuda(const Opts *o, CUcontext ctx, CUdeviceptr *dref, CUdeviceptr *ddis, unsigned n,
                    double *frames)
{
    Run r = { .frames = frames };
    long long mem_before = device_used(ctx);
    double t0 = now();
    VmafConfiguration cfg = { .log_level = LOG_LEVEL,
                              .n_threads = o->gpumask ? o->threads : 0,
                              .n_subsample = 1, .cpumask = 0, .gpumask = o->gpumask ? 1 : 0 };
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
    r.mem_setup = device_used(ctx) - mem_before;

    CU(cuCtxPushCurrent(ctx));
    double start = now();
    for (unsigned i = 0; i < n; i++) {
        VmafPicture pics[2];
        CUdeviceptr src[2] = { dref[i % o->distinct], ddis[i % o->distinct] };
        for (int p = 0; p < 2; p++) {
            err = vmaf_cuda_fetch_preallocated_picture(vmaf, &pics[p]);
            if (err) fail("vmaf_cuda_fetch_preallocated_picture", err);
            /* On the legacy default stream (the pictures' streams are
             * blocking streams, so libvmaf's work on them follows the copy).
             * Luma only for libvmaf's CUDA extractors, which read nothing
             * else; every plane for --gpumask's CPU extractors. */
            for (int c = 0; c < (o->gpumask ? 3 : 1); c++)
                copy_plane(o, src[p], &pics[p], c, 0);
        }
        err = vmaf_read_pictures(vmaf, &pics[0], &pics[1], i);
        if (err) fail("vmaf_read_pictures", err);
    }
    finish(vmaf, model, n, &r);
    r.seconds = now() - start;
    CU(cuCtxPopCurrent(NULL));
    r.mem_end = device_used(ctx) - mem_before;
    first_scores(vmaf, model, n, &r);
    vmaf_model_destroy(model);
    vmaf_close(vmaf);
    free(cu_state); /* vmaf_close released the stream it held */
    return r;
}

/* --download: each frame copied from device memory to host pictures by the
 * application (every plane, waited for), scored on a CPU context. */
static Run run_download(const Opts *o, CUcontext ctx, CUdeviceptr *dref, CUdeviceptr *ddis, unsigned n,
                        double *frames)
{
    Run r = { .frames = frames, .mem_setup = -1 };
    double t0 = now();
    VmafConfiguration cfg = { .log_level = LOG_LEVEL, .n_threads = o->threads,
                              .n_subsample = 1, .cpumask = 0, .gpumask = 0 };
    VmafContext *vmaf = NULL;
    int err = vmaf_init(&vmaf, cfg);
    if (err) fail("vmaf_init", err);
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
            err = vmaf_picture_alloc(&pics[p], VMAF_PIX_FMT_YUV420P, o->bits, o->w, o->h);
            if (err) fail("vmaf_picture_alloc", err);
            for (int c = 0; c < 3; c++)
                copy_plane(o, src[p], &pics[p], c, 1);
        }
        CU(cuStreamSynchronize(NULL));
        err = vmaf_read_pictures(vmaf, &pics[0], &pics[1], i);
        if (err) fail("vmaf_read_pictures", err);
    }
    finish(vmaf, model, n, &r);
    r.seconds = now() - start;
    CU(cuCtxPopCurrent(NULL));
    first_scores(vmaf, model, n, &r);
    vmaf_model_destroy(model);
    vmaf_close(vmaf);
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
                      Run *last, Run *last_short, double warmup)
{
    const char *model = strrchr(o->model, '/') ? strrchr(o->model, '/') + 1 : o->model;
    unsigned ns = short_frames(o);
    printf("RESULT {\"lane\": \"%s\", \"model_file\": \"%s\", \"width\": %u, \"height\": %u, \"bits\": %u, \"frames\": %u, "
           "\"distinct\": %u, \"runs_s\": [", lane, model, o->w, o->h, o->bits, o->frames, o->distinct);
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
           "\"vmaf_first\": [%.17g, %.17g, %.17g], \"vmaf_frames\": [",
           t, fps, o->frames / t, fixed, 1e3 / fps, bpf, (double)bpf * fps / 1e9,
           last->init, warmup, last->pooled, last->first[0], last->first[1], last->first[2]);
    for (unsigned i = 0; last->frames && i < o->frames; i++) printf("%s%.17g", i ? ", " : "", last->frames[i]);
    printf("]");
    if (last->mem_setup >= 0)
        printf(", \"device_bytes_context\": %lld, \"device_bytes_end\": %lld, \"device_bytes_end_short\": %lld",
               last->mem_setup, last->mem_end, ns ? last_short->mem_end : -1);
    printf("}\n");
}

int main(int argc, char **argv)
{
    Opts o = { .repeat = 3, .bits = 8, .mib = 1024, .iters = 20 };
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "--cpu")) { o.cpu = 1; continue; }
        if (!strcmp(k, "--bandwidth")) { o.bandwidth = 1; continue; }
        if (!strcmp(k, "--no-warmup")) { o.no_warmup = 1; continue; }
        if (!strcmp(k, "--gpumask")) { o.gpumask = 1; continue; }
        if (!strcmp(k, "--download")) { o.download = 1; continue; }
        if (!strcmp(k, "--zero-chroma")) { o.zero_chroma = 1; continue; }
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
    if (o.cpu + o.gpumask + o.download > 1) fail("--cpu, --gpumask and --download exclude each other", 0);
    if (o.zero_chroma && !o.cpu) fail("--zero-chroma is for --cpu", 0);
    if (!o.repeat) o.repeat = 1;
    uint8_t *ref = read_file(o.ref, frame_bytes(&o) * o.distinct);
    uint8_t *dis = read_file(o.dis, frame_bytes(&o) * o.distinct);
    double *times = calloc(o.repeat, sizeof(*times));
    double *short_times = calloc(o.repeat, sizeof(*short_times));
    unsigned ns = short_frames(&o);
    Run last = { .mem_setup = -1 }, last_short = { .mem_setup = -1 };
    unsigned warm_n = o.frames < 8 ? o.frames : 8;
    double *frames = calloc(o.frames, sizeof(*frames)); /* the last full run's scores */

    if (o.cpu) {
        double w0 = now();
        if (!o.no_warmup) run_cpu(&o, ref, dis, warm_n, NULL);
        double warmup = now() - w0;
        for (unsigned i = 0; i < o.repeat; i++) {
            last = run_cpu(&o, ref, dis, o.frames, frames);
            times[i] = last.seconds;
            if (ns) short_times[i] = run_cpu(&o, ref, dis, ns, NULL).seconds;
        }
        char lane[48];
        snprintf(lane, sizeof(lane), "libvmaf-cpu%s-t%u", o.zero_chroma ? "-zero-chroma" : "", o.threads);
        print_run(&o, lane, times, short_times, &last, &last_short, warmup);
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
    Run (*run)(const Opts *, CUcontext, CUdeviceptr *, CUdeviceptr *, unsigned, double *) =
        o.download ? run_download : run_cuda;
    double w0 = now();
    if (!o.no_warmup) run(&o, ctx, dref, ddis, warm_n, NULL);
    double warmup = now() - w0;
    for (unsigned i = 0; i < o.repeat; i++) {
        last = run(&o, ctx, dref, ddis, o.frames, frames);
        times[i] = last.seconds;
        if (ns) {
            last_short = run(&o, ctx, dref, ddis, ns, NULL);
            short_times[i] = last_short.seconds;
        }
    }
    char lane[48];
    if (o.gpumask)
        snprintf(lane, sizeof(lane), "libvmaf-cuda-gpumask-t%u", o.threads);
    else if (o.download)
        snprintf(lane, sizeof(lane), "libvmaf-cpu-download-t%u", o.threads);
    else
        snprintf(lane, sizeof(lane), "libvmaf-cuda");
    print_run(&o, lane, times, short_times, &last, &last_short, warmup);
    return 0;
#else
    fail("built without CUDA: use --cpu", 0);
#endif
}
