// Runs the kernels in kernels/ on the host, as plain C++: a block's 256
// threads are fibers (each its own stack) on the launching thread, switched
// at __syncthreads; __shared__ arrays are statics (blocks run one at a
// time). Launches take the same (grid, void **args) as cuLaunchKernel, so
// tests/device/emu.rs drives the real engine (src/device/gpu/backend.rs)
// through it and checks the kernels' arithmetic and the engine's argument
// marshalling against the CPU on machines without a GPU. Built by the test
// with the host's c++.
//
// Why fibers, not threads: with 256 OS threads meeting at std::barrier, a
// block cost two futex storms on 2 cores, and the emulated tests spent
// more time in the kernel than in the kernels (tests/device emu_context::
// 67 s, 84 s of it system time). A fiber switch is a few instructions.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <vector>
#include <sys/mman.h>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

struct vx_dim3 { unsigned x, y, z; };
// Set by the scheduler before it switches to a thread's fiber (all fibers
// run on the one launching OS thread, under the launch lock).
static vx_dim3 threadIdx;
static vx_dim3 blockIdx;
static vx_dim3 gridDim;  // set before a launch's blocks start
static void vx_emu_syncthreads();
#define __global__
#define __device__
#define __constant__
#define __shared__ static
#define __syncthreads() vx_emu_syncthreads()
// CUDA's count-leading-zeros intrinsics (32 and 64 for zero).
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
// Only thread 0 of a block adds, but keep it atomic all the same.
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

// CAMBI's histograms and pooling (kernels/cambi.cu): u32 counters that
// many threads of a block bump at once.
static inline unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline unsigned atomicMin(unsigned *p, unsigned v) {
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return old;
}
static inline unsigned atomicMax(unsigned *p, unsigned v) {
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return old;
}
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, sizeof u); return u; }

#include "motion.cu"
#include "psnr.cu"
#include "convert.cu"
#include "vif.cu"
#include "adm.cu"
#include "ssim.cu"
#include "speed.cu"
#include "cambi.cu"
// tests/device/fns.rs: each device function alone, over arrays of inputs.
#include "../device_fns/checks.cu"

// The fibers of one block: VMAFX_BLOCK stacks, mapped once for the process
// (untouched pages cost nothing), each with a guard page below it so that
// an overflow faults instead of writing into the next thread's stack.
//
// Scheduling: a block runs in passes; in each pass every thread still
// running is resumed once and runs to its next __syncthreads (or its end).
// A pass's order alternates between ascending and descending thread index
// (and starts the other way on odd blocks), so a kernel missing a barrier
// between a write to shared memory and another thread's read of it reads
// stale data on one side or the other, every run, rather than by the luck
// of an OS scheduler. A block whose threads disagree on the barrier (some
// returned while others wait: a hang on a GPU) aborts with a message.
static const size_t vx_emu_stack_bytes = 128 << 10, vx_emu_guard_bytes = 4096;
static unsigned char *vx_emu_stacks;
static std::function<void()> vx_emu_body;
static unsigned vx_emu_current;            // the thread whose fiber runs now
static bool vx_emu_finished[VMAFX_BLOCK];  // its body returned this block

// The lowest usable byte of thread t's stack (its guard page lies below).
static unsigned char *vx_emu_stack_base(unsigned t) {
    return vx_emu_stacks + (size_t)t * (vx_emu_guard_bytes + vx_emu_stack_bytes) + vx_emu_guard_bytes;
}

#if defined(__x86_64__)
// Saves the callee-saved registers of the System V ABI and the stack
// pointer into *from, then loads `to`'s (as saved by an earlier switch, or
// laid out by vx_emu_fiber_new) and returns on that stack. The kernels
// change neither MXCSR nor the x87 control word, so those are not saved.
extern "C" void vx_emu_switch(void **from, void *to);
asm(R"(
    .text
    .p2align 4
    .type vx_emu_switch, @function
vx_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size vx_emu_switch, .-vx_emu_switch
)");
static void *vx_emu_scheduler_sp;
static void *vx_emu_fiber_sp[VMAFX_BLOCK];
[[noreturn]] static void vx_emu_fiber_main();
// A fresh fiber for thread t: its stack top holds six zeroed registers for
// vx_emu_switch to pop, then vx_emu_fiber_main as the address it returns
// to, then a slot standing for a return address, so that the function
// starts with the stack aligned as after a call.
static void vx_emu_fiber_new(unsigned t) {
    void **sp = (void **)(vx_emu_stack_base(t) + vx_emu_stack_bytes);
    *--sp = nullptr;
    *--sp = (void *)&vx_emu_fiber_main;
    for (int r = 0; r < 6; r++) *--sp = nullptr;
    vx_emu_fiber_sp[t] = sp;
}
static void vx_emu_resume(unsigned t) { vx_emu_switch(&vx_emu_scheduler_sp, vx_emu_fiber_sp[t]); }
static void vx_emu_yield() { vx_emu_switch(&vx_emu_fiber_sp[vx_emu_current], vx_emu_scheduler_sp); }
#else
// Elsewhere, the C library's contexts (slower: each switch also sets the
// signal mask, a system call).
static ucontext_t vx_emu_scheduler_ctx, vx_emu_fiber_ctx[VMAFX_BLOCK];
static void vx_emu_fiber_main();
static void vx_emu_fiber_new(unsigned t) {
    getcontext(&vx_emu_fiber_ctx[t]);
    vx_emu_fiber_ctx[t].uc_stack.ss_sp = vx_emu_stack_base(t);
    vx_emu_fiber_ctx[t].uc_stack.ss_size = vx_emu_stack_bytes;
    vx_emu_fiber_ctx[t].uc_link = nullptr;
    makecontext(&vx_emu_fiber_ctx[t], vx_emu_fiber_main, 0);
}
static void vx_emu_resume(unsigned t) { swapcontext(&vx_emu_scheduler_ctx, &vx_emu_fiber_ctx[t]); }
static void vx_emu_yield() { swapcontext(&vx_emu_fiber_ctx[vx_emu_current], &vx_emu_scheduler_ctx); }
#endif

// Every fiber's first and only frame: runs the block's body for its thread,
// then hands control back for good (the scheduler never resumes a finished
// fiber; the next block lays out a fresh one).
static void vx_emu_fiber_main() {
    vx_emu_body();
    vx_emu_finished[vx_emu_current] = true;
    for (;;) vx_emu_yield();
}

static void vx_emu_syncthreads() { vx_emu_yield(); }

static void vx_emu_map_stacks() {
    size_t each = vx_emu_guard_bytes + vx_emu_stack_bytes;
    void *m = mmap(nullptr, each * VMAFX_BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) { std::perror("kernel emulator: mmap of the fibers' stacks"); std::abort(); }
    vx_emu_stacks = (unsigned char *)m;
    for (unsigned t = 0; t < VMAFX_BLOCK; t++) mprotect(vx_emu_stack_base(t) - vx_emu_guard_bytes, vx_emu_guard_bytes, PROT_NONE);
}

template <class F> static void vx_emu_run(unsigned gx, unsigned gy, F body) {
    if (!vx_emu_stacks) vx_emu_map_stacks();
    vx_emu_body = body;
    gridDim = {gx, gy, 1};
    for (unsigned by = 0; by < gy; by++)
        for (unsigned bx = 0; bx < gx; bx++) {
            blockIdx = {bx, by, 0};
            for (unsigned t = 0; t < VMAFX_BLOCK; t++) {
                vx_emu_fiber_new(t);
                vx_emu_finished[t] = false;
            }
            bool descending = (bx + by) & 1;
            for (unsigned running = VMAFX_BLOCK; running > 0; descending = !descending) {
                unsigned waiting = 0, returned = 0;
                for (unsigned i = 0; i < VMAFX_BLOCK; i++) {
                    unsigned t = descending ? VMAFX_BLOCK - 1 - i : i;
                    if (vx_emu_finished[t]) continue;
                    vx_emu_current = t;
                    threadIdx = {t, 0, 0};
                    vx_emu_resume(t);
                    if (vx_emu_finished[t]) returned++; else waiting++;
                }
                running -= returned;
                if (waiting != 0 && returned != 0) {
                    std::fprintf(stderr, "kernel emulator: block (%u, %u): %u threads wait at __syncthreads while %u returned (a hang on a GPU)\n",
                                 bx, by, waiting, returned);
                    std::abort();
                }
            }
        }
}

template <class T> static T arg(void **args, int i) { T v; std::memcpy(&v, args[i], sizeof v); return v; }
template <class T> static T *ptr(void **args, int i) { return (T *)(uintptr_t)arg<uint64_t>(args, i); }

// Every entry the engine may launch, by its name in kernels/: a new kernel
// adds its #include above and a row here.
using vx_emu_fn = void (*)(unsigned, unsigned, void **);
struct vx_emu_entry {
    const char *name;
    vx_emu_fn run;
};
#define VX_EMU(entry, ...) \
    {#entry, [](unsigned gx, unsigned gy, void **a) { vx_emu_run(gx, gy, [&] { entry(__VA_ARGS__); }); }}

static const vx_emu_entry vx_emu_entries[] = {
    VX_EMU(motion_sad_8, ptr<vx_u8>(a, 0), ptr<vx_u8>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), arg<int>(a, 5), ptr<vx_u32>(a, 6)),
    VX_EMU(motion_sad_16, ptr<vx_u8>(a, 0), ptr<vx_u8>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), arg<int>(a, 5), arg<int>(a, 6), ptr<vx_u32>(a, 7)),
    VX_EMU(motion_zero, ptr<vx_u32>(a, 0), arg<int>(a, 1)),
    VX_EMU(psnr_sse_row_8, ptr<vx_u8>(a, 0), ptr<vx_u8>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), ptr<vx_u64>(a, 5)),
    VX_EMU(psnr_sse_row_16, ptr<vx_u8>(a, 0), ptr<vx_u8>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), ptr<vx_u64>(a, 5)),
    VX_EMU(convert_uv_8, ptr<vx_u8>(a, 0), arg<int>(a, 1), arg<int>(a, 2), arg<int>(a, 3), ptr<vx_u8>(a, 4), arg<int>(a, 5), ptr<vx_u8>(a, 6), arg<int>(a, 7)),
    VX_EMU(convert_uv_16, ptr<vx_u8>(a, 0), arg<int>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), ptr<vx_u8>(a, 5), arg<int>(a, 6), ptr<vx_u8>(a, 7), arg<int>(a, 8)),
    VX_EMU(convert_shift_16, ptr<vx_u8>(a, 0), arg<int>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), ptr<vx_u8>(a, 5), arg<int>(a, 6)),
    VX_EMU(vif_stat_0_8, ptr<vx_u8>(a, 0), ptr<vx_u8>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), arg<int>(a, 5), arg<int>(a, 6), arg<int>(a, 7), arg<double>(a, 8), ptr<vx_u16>(a, 9), ptr<vx_u64>(a, 10), ptr<vx_u16>(a, 11), ptr<vx_u16>(a, 12), arg<int>(a, 13)),
    VX_EMU(vif_stat_0_16, ptr<vx_u8>(a, 0), ptr<vx_u8>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), arg<int>(a, 5), arg<int>(a, 6), arg<int>(a, 7), arg<double>(a, 8), ptr<vx_u16>(a, 9), ptr<vx_u64>(a, 10), ptr<vx_u16>(a, 11), ptr<vx_u16>(a, 12), arg<int>(a, 13)),
    VX_EMU(vif_stat_1, ptr<vx_u8>(a, 0), ptr<vx_u8>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), arg<int>(a, 5), arg<int>(a, 6), arg<int>(a, 7), arg<double>(a, 8), ptr<vx_u16>(a, 9), ptr<vx_u64>(a, 10), ptr<vx_u16>(a, 11), ptr<vx_u16>(a, 12), arg<int>(a, 13)),
    VX_EMU(vif_stat_2, ptr<vx_u8>(a, 0), ptr<vx_u8>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), arg<int>(a, 5), arg<int>(a, 6), arg<int>(a, 7), arg<double>(a, 8), ptr<vx_u16>(a, 9), ptr<vx_u64>(a, 10), ptr<vx_u16>(a, 11), ptr<vx_u16>(a, 12), arg<int>(a, 13)),
    VX_EMU(vif_stat_3, ptr<vx_u8>(a, 0), ptr<vx_u8>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), arg<int>(a, 5), arg<int>(a, 6), arg<int>(a, 7), arg<double>(a, 8), ptr<vx_u16>(a, 9), ptr<vx_u64>(a, 10), ptr<vx_u16>(a, 11), ptr<vx_u16>(a, 12), arg<int>(a, 13)),
    VX_EMU(vif_subsample_0_8, ptr<vx_u8>(a, 0), ptr<vx_u8>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), arg<int>(a, 5), arg<int>(a, 6), ptr<vx_u16>(a, 7), ptr<vx_u16>(a, 8), arg<int>(a, 9)),
    VX_EMU(vif_subsample_0_16, ptr<vx_u8>(a, 0), ptr<vx_u8>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), arg<int>(a, 5), arg<int>(a, 6), ptr<vx_u16>(a, 7), ptr<vx_u16>(a, 8), arg<int>(a, 9)),
    VX_EMU(vif_zero, ptr<vx_u64>(a, 0)),
    VX_EMU(adm_dwt_s0_8, ptr<vx_u8>(a, 0), ptr<vx_u8>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), arg<int>(a, 5), arg<int>(a, 6), arg<int>(a, 7), arg<int>(a, 8), ptr<vx_i32>(a, 9), ptr<vx_i32>(a, 10), ptr<vx_i16>(a, 11), ptr<vx_i16>(a, 12), arg<int>(a, 13), arg<int>(a, 14), arg<int>(a, 15), arg<int>(a, 16), arg<int>(a, 17), arg<double>(a, 18), arg<vx_u32>(a, 19), arg<vx_u32>(a, 20), arg<vx_u32>(a, 21), arg<int>(a, 22), ptr<vx_i32>(a, 23)),
    VX_EMU(adm_dwt_s0_16, ptr<vx_u8>(a, 0), ptr<vx_u8>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), arg<int>(a, 5), arg<int>(a, 6), arg<int>(a, 7), arg<int>(a, 8), ptr<vx_i32>(a, 9), ptr<vx_i32>(a, 10), ptr<vx_i16>(a, 11), ptr<vx_i16>(a, 12), arg<int>(a, 13), arg<int>(a, 14), arg<int>(a, 15), arg<int>(a, 16), arg<int>(a, 17), arg<double>(a, 18), arg<vx_u32>(a, 19), arg<vx_u32>(a, 20), arg<vx_u32>(a, 21), arg<int>(a, 22), ptr<vx_i32>(a, 23)),
    VX_EMU(adm_dwt_s123, ptr<vx_i32>(a, 0), ptr<vx_i32>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<vx_i64>(a, 4), arg<int>(a, 5), arg<vx_i64>(a, 6), arg<int>(a, 7), arg<int>(a, 8), arg<int>(a, 9), ptr<vx_i32>(a, 10), ptr<vx_i32>(a, 11), ptr<vx_i32>(a, 12), ptr<vx_i32>(a, 13), arg<int>(a, 14), arg<int>(a, 15), arg<int>(a, 16), arg<int>(a, 17), arg<int>(a, 18), arg<double>(a, 19), arg<vx_u32>(a, 20), arg<vx_u32>(a, 21), arg<vx_u32>(a, 22), arg<int>(a, 23), ptr<vx_i32>(a, 24)),
    VX_EMU(adm_cm_s0, ptr<vx_i16>(a, 0), ptr<vx_i16>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), arg<int>(a, 5), arg<int>(a, 6), arg<int>(a, 7), arg<double>(a, 8), arg<vx_u32>(a, 9), arg<vx_u32>(a, 10), arg<vx_u32>(a, 11), arg<int>(a, 12), ptr<vx_i32>(a, 13), arg<int>(a, 14), arg<vx_i64>(a, 15), arg<int>(a, 16), arg<vx_i64>(a, 17), arg<int>(a, 18), arg<vx_i64>(a, 19), arg<int>(a, 20), arg<int>(a, 21), arg<vx_i64>(a, 22), arg<int>(a, 23), arg<vx_i64>(a, 24), ptr<vx_u64>(a, 25)),
    VX_EMU(adm_cm_s123, ptr<vx_i32>(a, 0), ptr<vx_i32>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), arg<int>(a, 5), arg<int>(a, 6), arg<int>(a, 7), arg<double>(a, 8), arg<vx_u32>(a, 9), arg<vx_u32>(a, 10), arg<vx_u32>(a, 11), arg<int>(a, 12), ptr<vx_i32>(a, 13), arg<int>(a, 14), arg<vx_i64>(a, 15), arg<int>(a, 16), arg<vx_i64>(a, 17), arg<int>(a, 18), arg<vx_i64>(a, 19), arg<int>(a, 20), arg<int>(a, 21), arg<vx_i64>(a, 22), arg<int>(a, 23), arg<vx_i64>(a, 24), ptr<vx_u64>(a, 25)),
    VX_EMU(adm_zero, ptr<vx_u64>(a, 0), arg<int>(a, 1)),
    VX_EMU(ssim_to_float_8, ptr<vx_u8>(a, 0), arg<int>(a, 1), arg<int>(a, 2), arg<int>(a, 3), ptr<float>(a, 4)),
    VX_EMU(ssim_to_float_16, ptr<vx_u8>(a, 0), arg<int>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<float>(a, 4), ptr<float>(a, 5)),
    VX_EMU(ssim_decimate, ptr<float>(a, 0), arg<int>(a, 1), arg<int>(a, 2), ptr<float>(a, 3), arg<int>(a, 4), arg<float>(a, 5), arg<int>(a, 6), ptr<float>(a, 7), arg<int>(a, 8), arg<int>(a, 9)),
    VX_EMU(ssim_conv_h, ptr<float>(a, 0), ptr<float>(a, 1), arg<int>(a, 2), arg<int>(a, 3), ptr<float>(a, 4), ptr<float>(a, 5)),
    VX_EMU(ssim_terms, ptr<float>(a, 0), arg<int>(a, 1), arg<int>(a, 2), ptr<float>(a, 3), arg<float>(a, 4), arg<float>(a, 5), arg<float>(a, 6), ptr<double>(a, 7), ptr<double>(a, 8), ptr<double>(a, 9)),
    VX_EMU(speed_blur_dec16, ptr<vx_u8>(a, 0), arg<int>(a, 1), ptr<vx_u8>(a, 2), arg<int>(a, 3), arg<int>(a, 4), arg<float>(a, 5), arg<int>(a, 6), arg<int>(a, 7), ptr<float>(a, 8), arg<int>(a, 9), ptr<float>(a, 10), arg<int>(a, 11)),
    VX_EMU(cambi_c_values, ptr<vx_u16>(a, 0), ptr<vx_u16>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), ptr<vx_i32>(a, 5), arg<int>(a, 6), arg<int>(a, 7), ptr<vx_i32>(a, 8), arg<int>(a, 9), ptr<vx_i32>(a, 10), arg<int>(a, 11), arg<int>(a, 12), ptr<float>(a, 13), ptr<float>(a, 14)),
    VX_EMU(cambi_load, ptr<vx_u8>(a, 0), arg<long long>(a, 1), arg<int>(a, 2), arg<int>(a, 3), ptr<vx_i32>(a, 4), ptr<vx_i32>(a, 5), arg<int>(a, 6), arg<int>(a, 7), ptr<vx_u16>(a, 8), arg<int>(a, 9)),
    VX_EMU(cambi_range_check, ptr<vx_u8>(a, 0), arg<long long>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<vx_u32>(a, 4), ptr<vx_u32>(a, 5)),
    VX_EMU(cambi_anti_dither, ptr<vx_u16>(a, 0), ptr<vx_u16>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4)),
    VX_EMU(cambi_spatial_mask, ptr<vx_u16>(a, 0), ptr<vx_u16>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4), arg<int>(a, 5)),
    VX_EMU(cambi_decimate, ptr<vx_u16>(a, 0), ptr<vx_u16>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4)),
    VX_EMU(cambi_filter_mode, ptr<vx_u16>(a, 0), ptr<vx_u16>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<int>(a, 4)),
    VX_EMU(cambi_zero, ptr<vx_u32>(a, 0), arg<int>(a, 1)),
    VX_EMU(cambi_histogram, ptr<float>(a, 0), arg<int>(a, 1), ptr<vx_u32>(a, 2), arg<int>(a, 3), ptr<vx_u32>(a, 4)),
    VX_EMU(cambi_select, ptr<vx_u32>(a, 0), arg<int>(a, 1), arg<int>(a, 2), ptr<vx_u32>(a, 3)),
    VX_EMU(cambi_top_sum, ptr<float>(a, 0), arg<int>(a, 1), ptr<vx_u32>(a, 2), ptr<vx_u64>(a, 3)),
    VX_EMU(check_adm_div, ptr<vx_i32>(a, 0), arg<int>(a, 1), ptr<vx_i32>(a, 2)),
    VX_EMU(check_adm_filt16, ptr<vx_i32>(a, 0), arg<int>(a, 1), ptr<vx_i32>(a, 2)),
    VX_EMU(check_adm_filt64, ptr<vx_i32>(a, 0), arg<int>(a, 1), arg<vx_i64>(a, 2), arg<int>(a, 3), ptr<vx_i32>(a, 4)),
    VX_EMU(check_adm_vert_s0_8, ptr<vx_u8>(a, 0), arg<int>(a, 1), arg<int>(a, 2), arg<int>(a, 3), ptr<vx_i32>(a, 4), ptr<vx_i32>(a, 5)),
    VX_EMU(check_adm_vert_s0_16, ptr<vx_u8>(a, 0), arg<int>(a, 1), arg<int>(a, 2), arg<int>(a, 3), ptr<vx_i32>(a, 4), ptr<vx_i32>(a, 5)),
    VX_EMU(check_adm_decouple_s0, ptr<vx_i32>(a, 0), ptr<vx_i32>(a, 1), arg<int>(a, 2), arg<double>(a, 3), ptr<vx_i32>(a, 4), ptr<vx_i32>(a, 5)),
    VX_EMU(check_adm_decouple_s123, ptr<vx_i32>(a, 0), ptr<vx_i32>(a, 1), arg<int>(a, 2), arg<double>(a, 3), ptr<vx_i32>(a, 4), ptr<vx_i32>(a, 5)),
    VX_EMU(check_adm_csf_s0, ptr<vx_i32>(a, 0), arg<int>(a, 1), arg<vx_u32>(a, 2), arg<vx_u32>(a, 3), arg<vx_u32>(a, 4), ptr<vx_i32>(a, 5), ptr<vx_i32>(a, 6)),
    VX_EMU(check_adm_csf_s123, ptr<vx_i32>(a, 0), arg<int>(a, 1), arg<vx_u32>(a, 2), arg<vx_u32>(a, 3), arg<vx_u32>(a, 4), ptr<vx_i32>(a, 5), ptr<vx_i32>(a, 6)),
    VX_EMU(check_adm_accum, ptr<vx_i32>(a, 0), ptr<vx_i32>(a, 1), arg<int>(a, 2), arg<int>(a, 3), arg<vx_i64>(a, 4), arg<int>(a, 5), arg<vx_i64>(a, 6), arg<int>(a, 7), ptr<vx_i64>(a, 8)),
    VX_EMU(check_adm_mirror, arg<int>(a, 0), arg<int>(a, 1), ptr<vx_i32>(a, 2)),
    VX_EMU(check_vif_reflect, arg<int>(a, 0), arg<int>(a, 1), arg<int>(a, 2), ptr<vx_i32>(a, 3)),
    VX_EMU(check_vif_log2, ptr<vx_u64>(a, 0), arg<int>(a, 1), ptr<vx_u16>(a, 2), ptr<vx_i32>(a, 3), ptr<vx_i32>(a, 4)),
    VX_EMU(check_ssim_symmetric, arg<int>(a, 0), arg<int>(a, 1), arg<int>(a, 2), ptr<vx_i32>(a, 3)),
    VX_EMU(check_ssim_pixel, ptr<float>(a, 0), arg<int>(a, 1), arg<float>(a, 2), arg<float>(a, 3), arg<float>(a, 4), ptr<double>(a, 5)),
    VX_EMU(check_speed_mirror, arg<int>(a, 0), arg<int>(a, 1), arg<int>(a, 2), ptr<vx_i32>(a, 3)),
    VX_EMU(check_cambi_c_value, ptr<vx_i32>(a, 0), ptr<vx_i32>(a, 1), arg<int>(a, 2), arg<int>(a, 3), ptr<vx_i32>(a, 4), arg<int>(a, 5), ptr<vx_i32>(a, 6), arg<int>(a, 7), arg<int>(a, 8), ptr<float>(a, 9), ptr<float>(a, 10)),
    VX_EMU(check_speed_input, ptr<vx_u8>(a, 0), ptr<vx_u8>(a, 1), arg<int>(a, 2), arg<float>(a, 3), arg<int>(a, 4), ptr<float>(a, 5)),
    VX_EMU(check_speed_sample, ptr<vx_u8>(a, 0), arg<int>(a, 1), arg<float>(a, 2), arg<int>(a, 3), ptr<float>(a, 4)),
    VX_EMU(check_vif_accumulate, ptr<vx_i32>(a, 0), ptr<vx_i32>(a, 1), ptr<vx_i32>(a, 2), arg<int>(a, 3), arg<double>(a, 4), ptr<vx_u16>(a, 5), ptr<vx_u64>(a, 6)),
    VX_EMU(check_vif_hfilter, ptr<vx_u32>(a, 0), arg<int>(a, 1), arg<int>(a, 2), ptr<vx_u64>(a, 3), ptr<vx_u32>(a, 4)),
};

// The id of entry `name`, or -1 when it has no row above.
extern "C" int vx_emu_find(const char *name) {
    for (unsigned i = 0; i < sizeof vx_emu_entries / sizeof vx_emu_entries[0]; i++)
        if (std::strcmp(vx_emu_entries[i].name, name) == 0) return (int)i;
    return -1;
}

// One launch at a time: the fibers, their stacks and the __shared__ statics
// are process-wide, and tests run on several threads.
static std::mutex vx_emu_launch_lock;

extern "C" int vx_emu_launch(int id, unsigned gx, unsigned gy, void **a) {
    if (id < 0 || id >= (int)(sizeof vx_emu_entries / sizeof vx_emu_entries[0])) return -1;
    std::lock_guard<std::mutex> hold(vx_emu_launch_lock);
    vx_emu_entries[id].run(gx, gy, a);
    return 0;
}
