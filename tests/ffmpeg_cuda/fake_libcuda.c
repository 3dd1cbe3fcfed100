/*
 * A fake libcuda.so.1 for tests/ffmpeg/cuda_glue.rs: enough of the CUDA
 * driver API for FFmpeg's hwcontext_cuda (device, frames pool, uploads) and
 * vmafx's driver loader, on a machine without a GPU. "Device" memory is
 * host memory (cuMemAlloc is aligned_alloc, copies are memcpy), contexts are
 * recognisable fake handles (0x5eed0001, 0x5eed0002, ... from cuCtxCreate;
 * 0x5eed1000 the primary context). Nothing runs kernels: cuModuleLoadData
 * and cuLaunchKernel fail, so a real scoring attempt ends in a device
 * error rather than in made-up numbers.
 *
 * Streams and events are distinct fake handles (0x57e40001.., 0xe7e40001..)
 * and allocations are remembered (cuMemGetAddressRange answers for them),
 * so vmafx's GPU importer gets as far as it can without kernels. With
 * VMAFX_FAKE_CUDA_TRACE=<file>, stream and event calls are appended there
 * ("record <event> <stream>", "wait <stream> <event>", ...) for the tests
 * to check the order of work between FFmpeg's stream and vmafx's.
 *
 * Every other symbol the loaders require returns CUDA_SUCCESS without
 * doing anything (called through pointers of their real types; x86-64's
 * calling convention makes the extra arguments harmless).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

typedef int CUresult;
typedef void *CUcontext;
typedef uint64_t CUdeviceptr;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_SUPPORTED 801

/* CUDA_MEMCPY2D (cuda.h), stable since CUDA 3.2. */
typedef struct {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

#define CU_MEMORYTYPE_HOST 1

static __thread CUcontext stack[16];
static __thread int depth;
static int next_ctx = 1;

CUresult cuInit(unsigned flags) { (void)flags; return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) { *v = 12000; return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return CUDA_SUCCESS; }
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return CUDA_SUCCESS; }
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) { (void)attr; (void)dev; *v = 256; return CUDA_SUCCESS; }
CUresult cuDeviceGetName(char *name, int len, int dev)
{
    (void)dev;
    strncpy(name, "vmafx fake CUDA device", len);
    if (len > 0)
        name[len - 1] = 0;
    return CUDA_SUCCESS;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev) { (void)dev; *bytes = (size_t)1 << 30; return CUDA_SUCCESS; }
CUresult cuCtxCreate_v2(CUcontext *ctx, unsigned flags, int dev)
{
    (void)flags; (void)dev;
    *ctx = (CUcontext)(uintptr_t)(0x5eed0000 + __atomic_fetch_add(&next_ctx, 1, __ATOMIC_SEQ_CST));
    if (depth < 16)
        stack[depth++] = *ctx;
    return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, int dev) { (void)dev; *ctx = (CUcontext)(uintptr_t)0x5eed1000; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxGetState(int dev, unsigned *flags, int *active) { (void)dev; *flags = 0; *active = 0; return CUDA_SUCCESS; }
CUresult cuCtxGetCurrent(CUcontext *ctx) { *ctx = depth ? stack[depth - 1] : NULL; return CUDA_SUCCESS; }
CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    if (depth < 16)
        stack[depth++] = ctx;
    return CUDA_SUCCESS;
}
CUresult cuCtxPopCurrent_v2(CUcontext *ctx)
{
    CUcontext top = depth ? stack[--depth] : NULL;
    if (ctx)
        *ctx = top;
    return CUDA_SUCCESS;
}
CUresult cuCtxGetDevice(int *dev) { *dev = 0; return CUDA_SUCCESS; }
/* Live allocations, for cuMemGetAddressRange. */
#define MAX_ALLOCS 4096
static struct { CUdeviceptr base; size_t size; } allocs[MAX_ALLOCS];
static pthread_mutex_t allocs_lock = PTHREAD_MUTEX_INITIALIZER;

static void trace(const char *fmt, unsigned long a, unsigned long b)
{
    const char *path = getenv("VMAFX_FAKE_CUDA_TRACE");
    if (!path)
        return;
    FILE *f = fopen(path, "a");
    if (!f)
        return;
    fprintf(f, fmt, a, b);
    fputc('\n', f);
    fclose(f);
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    size_t size = (n + 255) & ~(size_t)255;
    void *m = aligned_alloc(256, size ? size : 256);
    if (!m)
        return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    *p = (CUdeviceptr)(uintptr_t)m;
    pthread_mutex_lock(&allocs_lock);
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (!allocs[i].base) {
            allocs[i].base = *p;
            allocs[i].size = n;
            break;
        }
    pthread_mutex_unlock(&allocs_lock);
    return CUDA_SUCCESS;
}
CUresult cuMemFree_v2(CUdeviceptr p)
{
    pthread_mutex_lock(&allocs_lock);
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].base == p)
            allocs[i].base = 0;
    pthread_mutex_unlock(&allocs_lock);
    free((void *)(uintptr_t)p);
    return CUDA_SUCCESS;
}
CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    CUresult r = 1; /* CUDA_ERROR_INVALID_VALUE */
    pthread_mutex_lock(&allocs_lock);
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].base && p >= allocs[i].base && p < allocs[i].base + allocs[i].size) {
            if (base)
                *base = allocs[i].base;
            if (size)
                *size = allocs[i].size;
            r = CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&allocs_lock);
    return r;
}

static unsigned long next_stream = 1, next_event = 1;
CUresult cuStreamCreate(void **s, unsigned flags)
{
    *s = (void *)(uintptr_t)(0x57e40000 + __atomic_fetch_add(&next_stream, 1, __ATOMIC_SEQ_CST));
    trace("stream_create %#lx flags %lu", (unsigned long)(uintptr_t)*s, flags);
    return CUDA_SUCCESS;
}
CUresult cuEventCreate(void **e, unsigned flags)
{
    (void)flags;
    *e = (void *)(uintptr_t)(0xe7e40000 + __atomic_fetch_add(&next_event, 1, __ATOMIC_SEQ_CST));
    return CUDA_SUCCESS;
}
CUresult cuEventRecord(void *e, void *s) { trace("record %#lx %#lx", (uintptr_t)e, (uintptr_t)s); return CUDA_SUCCESS; }
CUresult cuStreamWaitEvent(void *s, void *e, unsigned flags) { (void)flags; trace("wait %#lx %#lx", (uintptr_t)s, (uintptr_t)e); return CUDA_SUCCESS; }
CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *c)
{
    const uint8_t *src = c->srcMemoryType == CU_MEMORYTYPE_HOST ? c->srcHost : (const void *)(uintptr_t)c->srcDevice;
    uint8_t *dst = c->dstMemoryType == CU_MEMORYTYPE_HOST ? c->dstHost : (void *)(uintptr_t)c->dstDevice;
    for (size_t y = 0; y < c->Height; y++)
        memcpy(dst + (c->dstY + y) * c->dstPitch + c->dstXInBytes,
               src + (c->srcY + y) * c->srcPitch + c->srcXInBytes, c->WidthInBytes);
    return CUDA_SUCCESS;
}
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, void *stream) { (void)stream; return cuMemcpy2D_v2(c); }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st) { (void)st; memcpy((void *)(uintptr_t)d, s, n); return CUDA_SUCCESS; }
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) { (void)st; memcpy(d, (void *)(uintptr_t)s, n); return CUDA_SUCCESS; }
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *st) { (void)st; memset((void *)(uintptr_t)d, v, n); return CUDA_SUCCESS; }
CUresult cuGetErrorName(CUresult e, const char **s) { *s = e ? "CUDA_ERROR_NOT_SUPPORTED" : "CUDA_SUCCESS"; return CUDA_SUCCESS; }
CUresult cuGetErrorString(CUresult e, const char **s) { *s = e ? "the fake driver runs no kernels" : "no error"; return CUDA_SUCCESS; }
CUresult cuModuleLoadData(void **m, const void *image) { (void)m; (void)image; return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuLaunchKernel(void) { return CUDA_ERROR_NOT_SUPPORTED; }

#define NOOP(name) CUresult name(void) { return CUDA_SUCCESS; }
NOOP(cuDeviceComputeCapability) NOOP(cuCtxSetLimit) NOOP(cuCtxDestroy_v2)
NOOP(cuMemAllocPitch_v2) NOOP(cuMemAllocManaged) NOOP(cuMemcpy) NOOP(cuMemcpyAsync)
NOOP(cuMemcpyHtoD_v2) NOOP(cuMemcpyDtoH_v2) NOOP(cuMemcpyDtoD_v2) NOOP(cuMemcpyDtoDAsync_v2)
NOOP(cuDevicePrimaryCtxRelease) NOOP(cuDevicePrimaryCtxRelease_v2) NOOP(cuDevicePrimaryCtxSetFlags)
NOOP(cuDevicePrimaryCtxReset) NOOP(cuStreamQuery) NOOP(cuStreamSynchronize)
NOOP(cuStreamDestroy_v2) NOOP(cuStreamAddCallback)
NOOP(cuEventDestroy_v2) NOOP(cuEventSynchronize) NOOP(cuEventQuery)
NOOP(cuLinkCreate) NOOP(cuLinkAddData) NOOP(cuLinkComplete) NOOP(cuLinkDestroy) NOOP(cuModuleUnload)
NOOP(cuModuleGetFunction) NOOP(cuModuleGetGlobal) NOOP(cuTexObjectCreate) NOOP(cuTexObjectDestroy)
NOOP(cuGLGetDevices_v2) NOOP(cuGraphicsGLRegisterImage) NOOP(cuGraphicsUnregisterResource)
NOOP(cuGraphicsMapResources) NOOP(cuGraphicsUnmapResources) NOOP(cuGraphicsSubResourceGetMappedArray)
NOOP(cuGraphicsResourceGetMappedPointer_v2) NOOP(cuArrayCreate_v2) NOOP(cuArray3DCreate_v2)
NOOP(cuArrayDestroy)
