/* A stand-in for one ROCm release, built by tests/device/loaders.rs into a
 * directory of its own under the names that release installs:
 *
 *   -DRUNTIME  libamdhip64.so.N: hipRuntimeGetVersion answers ROCM_VERSION;
 *              one device whose gcnArchName is $STUB_GCN_ARCH (default
 *              gfx90a:sramecc+:xnack-) and whose memory is 8 GiB.
 *   -DHIPRTC   hiprtc (libhiprtc.so.N, or inside libamdhip64.so.5): like
 *              comgr, it aborts the process when asked to compile for a
 *              processor COMGR_LIST lacks, so a caller that does not check
 *              first dies; otherwise its "code object" is the 4 bytes STUB.
 *   -DCOMGR    libamd_comgr.so.N: lists COMGR_LIST.
 *
 * Every call the lane makes exists; none runs anything. Built with
 * -std=c11: the `int f()` stubs take whatever arguments they are given.
 */
#include <stdlib.h>
#include <string.h>

#ifndef COMGR_LIST
#define COMGR_LIST "gfx900", "gfx90a", "gfx1030"
#endif
static const char *const processors[] = {COMGR_LIST};
#define PROCESSORS (sizeof processors / sizeof processors[0])

#ifdef RUNTIME
int hipRuntimeGetVersion(int *v) { *v = ROCM_VERSION; return 0; }
int hipDriverGetVersion(int *v) { *v = ROCM_VERSION; return 0; }
const char *hipGetErrorName(int code) { (void)code; return "hipErrorStub"; }
const char *hipGetErrorString(int code) { (void)code; return "a stub runtime"; }
int hipGetDeviceCount(int *n) { *n = 1; return 0; }
int hipDeviceGetName(char *name, int len, int dev) { (void)dev; strncpy(name, "stub device", (size_t)len); return 0; }
int hipDeviceTotalMem(size_t *bytes, int dev) { (void)dev; *bytes = (size_t)8 << 30; return 0; }
int hipGetDeviceProperties(void *props, int dev)
{
    (void)dev;
    const char *arch = getenv("STUB_GCN_ARCH");
    memset(props, 0, 1024);
    strcpy((char *)props + 512, arch ? arch : "gfx90a:sramecc+:xnack-");
    return 0;
}
static int handles = 0x100;
static int handle(void **out) { *out = (void *)(size_t)(handles += 0x10); return 0; }
int hipStreamCreateWithFlags(void **s, unsigned flags) { (void)flags; return handle(s); }
int hipStreamCreate(void **s) { return handle(s); }
int hipEventCreateWithFlags(void **e, unsigned flags) { (void)flags; return handle(e); }
int hipModuleLoadData(void **m, const void *image) { (void)image; return handle(m); }
int hipModuleGetFunction(void **f, void *m, const char *name) { (void)m; (void)name; return handle(f); }
int hipMalloc(void **p, size_t bytes) { *p = malloc(bytes ? bytes : 1); return 0; }
int hipFree(void *p) { free(p); return 0; }
int hipInit() { return 0; }
int hipSetDevice() { return 0; }
int hipModuleUnload() { return 0; }
int hipMemcpyHtoDAsync() { return 0; }
int hipMemcpyDtoHAsync() { return 0; }
int hipMemsetAsync() { return 0; }
int hipStreamDestroy() { return 0; }
int hipStreamSynchronize() { return 0; }
int hipModuleLaunchKernel() { return 0; }
int hipEventRecord() { return 0; }
int hipEventQuery() { return 0; }
int hipEventSynchronize() { return 0; }
int hipEventDestroy() { return 0; }
int hipStreamWaitEvent() { return 0; }
int hipMemcpy2DAsync() { return 0; }
#endif

#ifdef HIPRTC
static int known(const char *arch)
{
    size_t len = strcspn(arch, ":");
    for (size_t i = 0; i < PROCESSORS; i++)
        if (strlen(processors[i]) == len && strncmp(processors[i], arch, len) == 0)
            return 1;
    return 0;
}
const char *hiprtcGetErrorString(int code) { (void)code; return "HIPRTC_ERROR_STUB"; }
int hiprtcCreateProgram(void **p) { *p = (void *)0x5eed; return 0; }
int hiprtcDestroyProgram(void **p) { *p = 0; return 0; }
int hiprtcCompileProgram(void *p, int n, const char *const *options)
{
    (void)p;
    for (int i = 0; i < n; i++)
        if (strncmp(options[i], "--offload-arch=", 15) == 0 && !known(options[i] + 15))
            abort(); /* what comgr does */
    return 0;
}
int hiprtcGetCodeSize(void *p, size_t *size) { (void)p; *size = 4; return 0; }
int hiprtcGetCode(void *p, char *code) { (void)p; memcpy(code, "STUB", 4); return 0; }
int hiprtcGetProgramLogSize(void *p, size_t *size) { (void)p; *size = 0; return 0; }
int hiprtcGetProgramLog() { return 0; }
#endif

#ifdef COMGR
int amd_comgr_get_isa_count(size_t *n) { *n = PROCESSORS; return 0; }
int amd_comgr_get_isa_name(size_t i, const char **name)
{
    static char names[PROCESSORS][64];
    if (i >= PROCESSORS)
        return 1;
    strcpy(names[i], "amdgcn-amd-amdhsa--");
    strcat(names[i], processors[i]);
    *name = names[i];
    return 0;
}
#endif
