/*
 * DRM_PRIME frames mapped to HIP frames (the series' hwcontext_hip.c,
 * map_to from AV_PIX_FMT_DRM_PRIME) through libavutil's public API, in the
 * dma-buf VM (scripts/dmabuf-vm): real vgem dma-bufs under real,
 * unsignalled write fences, on the fake libamdhip64 of tests/hip_fake,
 * whose hipImportExternalMemory mmaps the dma-buf and whose device memory
 * is host memory, so the mapped planes can be read here directly.
 *
 *   drm_map_check          every check below; prints "ok ..." per check and
 *                          "FAIL ..." for each failure; exit status 1 on any
 *
 * Checks, at an odd size (175x99) with pitches that are not the width:
 * - nv12 in one object (both planes at non-zero offsets) and yuv420p in
 *   two objects (luma alone, both chroma planes in the second): the
 *   producer writes the pixels 300 ms after the map starts and only then
 *   signals its fence; the mapped planes read the producer's bytes as soon
 *   as av_hwframe_map returns (the fence was waited for), every row at the
 *   DRM pitch, and a download (av_hwframe_transfer_data) gives them back;
 * - the mapping lives as long as the mapped frame: nothing freed or
 *   destroyed before av_frame_free, every import destroyed after it, no
 *   VIOLATION in the fake's log;
 * - an I915_FORMAT_MOD_X_TILED object refused by name, a plane outside
 *   its object refused;
 * - where libavutil has the DRM hwcontext (9.0): a HIP device derived
 *   from /dev/dri/card0 (vgem: no PCI device) refused by name; from
 *   DRM_MAP_CHECK_PCI_CARD (a PCI display) derived when the fake is at its
 *   bus id, refused naming the bus id when not.
 * Run once per runtime the fake acts as (VMAFX_FAKE_HIP_VERSION: ROCm 7
 * honours mapping offsets, ROCm 5.2 answers the object's base).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <libavutil/buffer.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/hwcontext.h>
#include <libavutil/hwcontext_drm.h>
#include <libavutil/hwcontext_hip.h>
#include <libavutil/imgutils.h>
#include <libavutil/mem.h>
#include <libavutil/pixdesc.h>

#define W 175
#define H 99

static int failures;
static char last_error[1024];

#define CHECK(cond, ...) do {                                   \
        if (cond) { printf("ok   "); printf(__VA_ARGS__); }     \
        else { printf("FAIL "); printf(__VA_ARGS__); failures++; } \
        printf("\n"); fflush(stdout);                           \
    } while (0)

static void log_callback(void *avcl, int level, const char *fmt, va_list vl)
{
    if (level <= AV_LOG_ERROR)
        vsnprintf(last_error, sizeof(last_error), fmt, vl);
}

/* The vgem and dma-buf uAPI (drm.h, drm_mode.h, vgem_drm.h). */
struct create_dumb { uint32_t height, width, bpp, flags, handle, pitch; uint64_t size; };
struct prime_handle { uint32_t handle, flags; int32_t fd; };
struct vgem_fence_attach { uint32_t handle, flags, out_fence, pad; };
struct vgem_fence_signal { uint32_t fence, flags; };
#define DRM_IOCTL_MODE_CREATE_DUMB    0xc02064b2UL
#define DRM_IOCTL_PRIME_HANDLE_TO_FD  0xc00c642dUL
#define DRM_IOCTL_VGEM_FENCE_ATTACH   0xc0106441UL
#define DRM_IOCTL_VGEM_FENCE_SIGNAL   0x40086442UL
#define VGEM_FENCE_WRITE 1
#define I915_FORMAT_MOD_X_TILED ((1ULL << 56) | 1)

static int vgem = -1;

/* One vgem dma-buf of at least `size` bytes, mapped for the producer. */
typedef struct Object {
    uint32_t handle;
    int fd;
    size_t size;
    uint8_t *cpu;
} Object;

static int object_create(Object *o, size_t size)
{
    struct create_dumb c = { .height = (size + 4095) / 4096, .width = 4096, .bpp = 8 };
    struct prime_handle p = { 0 };

    if (ioctl(vgem, DRM_IOCTL_MODE_CREATE_DUMB, &c) < 0)
        return -1;
    p.handle = c.handle;
    p.flags = O_CLOEXEC | O_RDWR;
    if (ioctl(vgem, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p) < 0)
        return -1;
    o->handle = c.handle;
    o->fd = p.fd;
    o->size = c.size;
    o->cpu = mmap(NULL, o->size, PROT_READ | PROT_WRITE, MAP_SHARED, o->fd, 0);
    return o->cpu == MAP_FAILED ? -1 : 0;
}

static void object_destroy(Object *o)
{
    munmap(o->cpu, o->size);
    close(o->fd);
}

/* Where each plane lies: object, offset, pitch, rows, bytes per row. */
typedef struct Plane {
    int object;
    size_t offset;
    int pitch, rows, bytes;
} Plane;

static uint8_t pixel(int p, int y, int x)
{
    return (uint8_t)(p * 71 + y * 29 + x * 7 + (x * y >> 3) + 1);
}

/* The producer: writes every plane, then signals the fences. */
typedef struct Producer {
    Object *objects;
    const Plane *planes;
    int nb_planes;
    uint32_t fences[4];
    int nb_fences;
} Producer;

static void *produce(void *arg)
{
    Producer *pr = arg;

    usleep(300 * 1000);
    for (int p = 0; p < pr->nb_planes; p++) {
        const Plane *pl = &pr->planes[p];
        for (int y = 0; y < pl->rows; y++)
            for (int x = 0; x < pl->bytes; x++)
                pr->objects[pl->object].cpu[pl->offset + (size_t)y * pl->pitch + x] = pixel(p, y, x);
    }
    for (int i = 0; i < pr->nb_fences; i++) {
        struct vgem_fence_signal s = { .fence = pr->fences[i] };
        ioctl(vgem, DRM_IOCTL_VGEM_FENCE_SIGNAL, &s);
    }
    return NULL;
}

/* The fake's log (its own copy), from the runtime libavutil loaded. */
static const char *fake_log(void)
{
    void *lib = dlopen("libamdhip64.so.7", RTLD_NOW | RTLD_NOLOAD);
    const char *(*get)(void) = lib ? (const char *(*)(void))dlsym(lib, "vx_fake_hip_log") : NULL;
    return get ? get() : "";
}

static int count(const char *log, const char *word, size_t from)
{
    int n = 0;
    for (const char *p = log + from; (p = strstr(p, word)); p++)
        n++;
    return n;
}

/* A DRM_PRIME frame of `planes` (layer by layer, as `layers` says) over
 * `objects`, owned by its buf[0]. */
static AVFrame *drm_frame(Object *objects, int nb_objects, const Plane *planes,
                          const int *layer_planes, int nb_layers, uint64_t modifier)
{
    AVFrame *f = av_frame_alloc();
    AVDRMFrameDescriptor *d = av_mallocz(sizeof(*d));
    int plane = 0;

    d->nb_objects = nb_objects;
    for (int i = 0; i < nb_objects; i++) {
        d->objects[i].fd = objects[i].fd;
        d->objects[i].size = objects[i].size;
        d->objects[i].format_modifier = modifier;
    }
    d->nb_layers = nb_layers;
    for (int l = 0; l < nb_layers; l++) {
        d->layers[l].nb_planes = layer_planes[l];
        for (int j = 0; j < layer_planes[l]; j++, plane++) {
            d->layers[l].planes[j].object_index = planes[plane].object;
            d->layers[l].planes[j].offset = planes[plane].offset;
            d->layers[l].planes[j].pitch = planes[plane].pitch;
        }
    }
    f->format = AV_PIX_FMT_DRM_PRIME;
    f->width = W;
    f->height = H;
    f->data[0] = (uint8_t *)d;
    f->buf[0] = av_buffer_create((uint8_t *)d, sizeof(*d), av_buffer_default_free, NULL, 0);
    return f;
}

static AVBufferRef *hip_frames(AVBufferRef *device, enum AVPixelFormat sw_format)
{
    AVBufferRef *ref = av_hwframe_ctx_alloc(device);
    AVHWFramesContext *fc = (AVHWFramesContext *)ref->data;

    fc->format = AV_PIX_FMT_HIP;
    fc->sw_format = sw_format;
    fc->width = W;
    fc->height = H;
    if (av_hwframe_ctx_init(ref) < 0)
        av_buffer_unref(&ref);
    return ref;
}

/* Maps a fenced frame of `planes` and checks what the mapping reads. */
static void check_map(AVBufferRef *device, const char *name, enum AVPixelFormat fmt,
                      const Plane *planes, int nb_planes, int nb_objects,
                      const int *layer_planes, int nb_layers)
{
    Object objects[4] = { 0 };
    Producer pr = { .objects = objects, .planes = planes, .nb_planes = nb_planes };
    AVBufferRef *frames = hip_frames(device, fmt);
    AVFrame *src, *hip = av_frame_alloc(), *back = av_frame_alloc();
    size_t log_from = strlen(fake_log());
    pthread_t producer;
    int ret, bad_plane = -1, bad_row = -1;

    CHECK(frames != NULL, "%s: HIP frames context", name);
    for (int i = 0; i < nb_objects; i++) {
        size_t need = 0;
        for (int p = 0; p < nb_planes; p++)
            if (planes[p].object == i && planes[p].offset + (size_t)planes[p].pitch * planes[p].rows > need)
                need = planes[p].offset + (size_t)planes[p].pitch * planes[p].rows;
        if (object_create(&objects[i], need) < 0) {
            CHECK(0, "%s: vgem object %d of %zu bytes", name, i, need);
            return;
        }
    }
    /* Unsignalled write fences: the producer has not written yet. */
    for (int i = 0; i < nb_objects; i++) {
        struct vgem_fence_attach a = { .handle = objects[i].handle, .flags = VGEM_FENCE_WRITE };
        CHECK(ioctl(vgem, DRM_IOCTL_VGEM_FENCE_ATTACH, &a) == 0, "%s: write fence on object %d", name, i);
        pr.fences[pr.nb_fences++] = a.out_fence;
    }
    src = drm_frame(objects, nb_objects, planes, layer_planes, nb_layers, 0);
    pthread_create(&producer, NULL, produce, &pr);

    hip->format = AV_PIX_FMT_HIP;
    hip->hw_frames_ctx = av_buffer_ref(frames);
    last_error[0] = 0;
    ret = av_hwframe_map(hip, src, AV_HWFRAME_MAP_READ);
    CHECK(ret >= 0 && hip->format == AV_PIX_FMT_HIP && hip->width == W && hip->height == H,
          "%s: mapped to HIP (%d: %s)", name, ret, last_error);
    if (ret < 0) {
        pthread_join(producer, NULL);
        goto end;
    }
    /* The fake's device memory is the dma-buf's mmap: the producer's bytes
     * must be there the moment the map returns. */
    for (int p = 0; p < nb_planes && bad_plane < 0; p++) {
        CHECK(hip->linesize[p] == planes[p].pitch, "%s: plane %d at the DRM pitch %d (%d)",
              name, p, planes[p].pitch, hip->linesize[p]);
        for (int y = 0; y < planes[p].rows && bad_plane < 0; y++)
            for (int x = 0; x < planes[p].bytes; x++)
                if (hip->data[p][(size_t)y * hip->linesize[p] + x] != pixel(p, y, x)) {
                    bad_plane = p;
                    bad_row = y;
                    break;
                }
    }
    CHECK(bad_plane < 0, "%s: every mapped row holds the producer's bytes once the map returns "
          "(first wrong: plane %d row %d)", name, bad_plane, bad_row);
    pthread_join(producer, NULL);

    ret = av_hwframe_transfer_data(back, hip, 0);
    CHECK(ret >= 0 && back->format == fmt, "%s: download (%d)", name, ret);
    bad_plane = -1;
    for (int p = 0; ret >= 0 && p < nb_planes && bad_plane < 0; p++)
        for (int y = 0; y < planes[p].rows && bad_plane < 0; y++)
            for (int x = 0; x < planes[p].bytes; x++)
                if (back->data[p][(size_t)y * back->linesize[p] + x] != pixel(p, y, x)) {
                    bad_plane = p;
                    bad_row = y;
                    break;
                }
    CHECK(ret >= 0 && bad_plane < 0, "%s: the download equals the producer's frame (first wrong: plane %d row %d)",
          name, bad_plane, bad_row);

    {
        const char *log = fake_log();
        int imports = count(log, "import ext=", log_from);
        CHECK(imports == nb_objects, "%s: %d imports for %d objects", name, imports, nb_objects);
        CHECK(count(log, "destroy ext=", log_from) == 0 && count(log, "free ext=", log_from) == 0,
              "%s: nothing freed or destroyed while the mapped frame lives", name);
    }
    av_frame_free(&src);   /* the mapped frame keeps its source */
    av_frame_free(&hip);
    {
        const char *log = fake_log();
        CHECK(count(log, "destroy ext=", log_from) == nb_objects,
              "%s: every import destroyed with the mapped frame (%d)", name, count(log, "destroy ext=", log_from));
        CHECK(count(log, "VIOLATION", log_from) == 0, "%s: no VIOLATION in the fake's log:\n%s", name, log + log_from);
    }
end:
    av_frame_free(&src);
    av_frame_free(&hip);
    av_frame_free(&back);
    av_buffer_unref(&frames);
    for (int i = 0; i < nb_objects; i++)
        object_destroy(&objects[i]);
}

/* A frame the map must refuse, naming `words`. */
static void check_refused(AVBufferRef *device, const char *name, uint64_t modifier,
                          size_t plane_offset, const char *words)
{
    Object o = { 0 };
    Plane planes[2] = {
        { 0, plane_offset, 192, H, W },
        { 0, plane_offset + 192 * H, 192, (H + 1) / 2, W + 1 },
    };
    int layer_planes[1] = { 2 };
    AVBufferRef *frames = hip_frames(device, AV_PIX_FMT_NV12);
    AVFrame *src, *hip = av_frame_alloc();
    int ret;

    if (object_create(&o, 192 * H * 2) < 0) {
        CHECK(0, "%s: vgem object", name);
        return;
    }
    src = drm_frame(&o, 1, planes, layer_planes, 1, modifier);
    hip->format = AV_PIX_FMT_HIP;
    hip->hw_frames_ctx = av_buffer_ref(frames);
    last_error[0] = 0;
    ret = av_hwframe_map(hip, src, AV_HWFRAME_MAP_READ);
    CHECK(ret < 0 && strstr(last_error, words), "%s refused (%d: %s)", name, ret, last_error);
    av_frame_free(&src);
    av_frame_free(&hip);
    av_buffer_unref(&frames);
    object_destroy(&o);
}

/* DRM_MAP_CHECK_PCI_CARD (the VM's bochs-display card) is a DRM device on
 * PCI bus DRM_MAP_CHECK_PCI_BUS_ID: a HIP device derives from it when the
 * fake sits at that bus id (VMAFX_FAKE_HIP_PCI_BUS_ID), and is refused,
 * naming the bus id, when it does not. */
static void derive_from_pci_card(void)
{
    const char *card = getenv("DRM_MAP_CHECK_PCI_CARD"), *bus_id = getenv("DRM_MAP_CHECK_PCI_BUS_ID");
    const char *fake_at = getenv("VMAFX_FAKE_HIP_PCI_BUS_ID");
    int match = fake_at && bus_id && !strcmp(fake_at, bus_id);
    AVBufferRef *drm = NULL, *derived = NULL;
    char words[128];
    int ret;

    if (!card || !bus_id) {
        printf("note: no PCI DRM device named: derivation by bus id not checked\n");
        return;
    }
    ret = av_hwdevice_ctx_create(&drm, AV_HWDEVICE_TYPE_DRM, card, NULL, 0);
    CHECK(ret >= 0, "derive: DRM device %s (%d: %s)", card, ret, last_error);
    if (ret < 0)
        return;
    last_error[0] = 0;
    ret = av_hwdevice_ctx_create_derived(&derived, AV_HWDEVICE_TYPE_HIP, drm, 0);
    if (match) {
        CHECK(ret >= 0 && ((AVHIPDeviceContext *)((AVHWDeviceContext *)derived->data)->hwctx)->device == 0,
              "derive: HIP device 0 from %s at PCI bus id %s, the fake's (%d: %s)", card, bus_id, ret, last_error);
    } else {
        snprintf(words, sizeof(words), "No HIP device at PCI bus id %s", bus_id);
        CHECK(ret < 0 && strstr(last_error, words),
              "derive: no HIP device from %s at PCI bus id %s, the fake being elsewhere (%d: %s)",
              card, bus_id, ret, last_error);
    }
    av_buffer_unref(&derived);
    av_buffer_unref(&drm);
}

int main(void)
{
    AVBufferRef *device = NULL, *drm = NULL, *derived = NULL;
    int ret;

    av_log_set_callback(log_callback);
    vgem = open("/dev/dri/card0", O_RDWR | O_CLOEXEC);
    CHECK(vgem >= 0, "/dev/dri/card0 (vgem) opened");
    if (vgem < 0)
        return 1;
    ret = av_hwdevice_ctx_create(&device, AV_HWDEVICE_TYPE_HIP, "0", NULL, 0);
    CHECK(ret >= 0, "HIP device 0 (%d: %s)", ret, last_error);
    if (ret < 0)
        return 1;

    {
        /* nv12, one object: luma at 4096, chroma after a gap; pitches 192
         * and 256 for a width of 175. */
        const Plane planes[2] = {
            { 0, 4096, 192, H, W },
            { 0, 4096 + 192 * H + 512, 256, (H + 1) / 2, W + 1 },
        };
        const int layers[1] = { 2 };
        check_map(device, "nv12 in one object", AV_PIX_FMT_NV12, planes, 2, 1, layers, 1);
    }
    {
        /* yuv420p, three layers over two objects: luma alone at offset 0,
         * both chroma planes in the second object. */
        const Plane planes[3] = {
            { 0, 0, 320, H, W },
            { 1, 128, 96, (H + 1) / 2, (W + 1) / 2 },
            { 1, 128 + 96 * ((H + 1) / 2) + 64, 112, (H + 1) / 2, (W + 1) / 2 },
        };
        const int layers[3] = { 1, 1, 1 };
        check_map(device, "yuv420p in two objects", AV_PIX_FMT_YUV420P, planes, 3, 2, layers, 3);
    }
    check_refused(device, "an I915_FORMAT_MOD_X_TILED frame", I915_FORMAT_MOD_X_TILED, 0,
                  "I915_FORMAT_MOD_X_TILED");
    check_refused(device, "a plane past its object's end", 0, 4096 * 16, "does not hold");

    /* Derivation from a DRM device, where libavutil has the DRM hwcontext. */
    ret = av_hwdevice_ctx_create(&drm, AV_HWDEVICE_TYPE_DRM, "/dev/dri/card0", NULL, 0);
    if (ret >= 0) {
        last_error[0] = 0;
        ret = av_hwdevice_ctx_create_derived(&derived, AV_HWDEVICE_TYPE_HIP, drm, 0);
        CHECK(ret < 0 && strstr(last_error, "/dev/dri/card0 is not a PCI device"),
              "derive: a HIP device from vgem (no PCI device) refused (%d: %s)", ret, last_error);
        av_buffer_unref(&derived);
        av_buffer_unref(&drm);
        derive_from_pci_card();
    } else {
        printf("note: no DRM hwcontext in this libavutil: derivation not checked\n");
    }

    av_buffer_unref(&device);
    close(vgem);
    printf("%d failures\n", failures);
    return failures != 0;
}
