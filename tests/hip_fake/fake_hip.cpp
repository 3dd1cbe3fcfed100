// A fake libamdhip64 for tests without an AMD GPU: the HIP runtime calls
// the GPU lane loads (src/device/gpu/hip.rs), hiprtc's and comgr's, over
// the kernel emulator (tests/device_emu/kernel_emu.cpp: the .cu kernels run
// as host C++). Device memory is host memory; hipImportExternalMemory
// mmaps the dma-buf, as ROCm maps it into the GPU's address space. Streams
// are queues run in order at once, except behind a stream wait on an event
// whose record has not run (vx_fake_hip_blocked_event: a reader still
// reading), as on a GPU.
//
// It also checks what a real runtime would not report: every call that
// matters for the import is logged ("import", "map", "free", "destroy",
// "ran copy"), and misuse becomes a line starting with VIOLATION: memory
// destroyed while queued work still reads it or while buffers mapped on it
// are live, a struct with a reserved tail that is not zero (the ROCm 5
// layout handed to a ROCm 6 runtime), a copy outside every allocation.
//
// Faults on demand (tests/cli/faults.rs): VMAFX_FAKE_HIP_MALLOCS=N lets N
// hipMalloc calls succeed and answers hipErrorOutOfMemory after them;
// VMAFX_FAKE_HIP_LAUNCHES=N does the same for kernel launches with
// hipErrorLaunchFailure. Unset: no fault.
//
// VMAFX_FAKE_HIP_LAZY=1 makes queued copies wait until something ordered
// after them needs them, instead of running at once, as a GPU's copy
// engine would: a stream runs its queue when it is synchronised, when an
// event recorded on it is queried or waited for on the host, and when a
// kernel launched on it or a stream waiting for its event needs what came
// before (a wait runs the recording stream up to that record, and no
// further). So a caller that reads a download, or reuses an upload's
// source, before synchronising sees the difference (tests/ffmpeg/hip.rs:
// FFmpeg's HIP hwcontext), and a kernel on stream B reading what a copy
// on stream A wrote, with no event wait ordering B after A, reads what was
// there before (hipMalloc's 0xa5 poison): tests/device/hip_frames.rs.
//
// One device, index 0, at PCI bus id 0000:03:00.0 (hipDeviceGetByPCIBusId;
// VMAFX_FAKE_HIP_PCI_BUS_ID names another).
// hipMemcpy2DAsync checks only the device side(s) of a copy by its kind:
// host memory is not an allocation.
//
// VMAFX_FAKE_HIP_VERSION (HIP_VERSION, default 70000000) picks the ROCm it
// acts as: below 60000000 the ROCm 5 structs (no reserved tails) and ROCm
// 5.2's mapping that ignores the offset. Built by tests/import/dmabuf_hip.rs (and tests/support/hip_fake.rs for tests/cli/faults.rs) as
// libamdhip64.so.7, with libhiprtc.so.7 and libamd_comgr.so.{2,3} links to
// it, and found by the real loader through LD_LIBRARY_PATH.
#include "kernel_emu.cpp"

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <string>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

enum : int { OK = 0, INVALID_VALUE = 1, NOT_FOUND = 500, NOT_READY = 600, NOT_SUPPORTED = 801, UNKNOWN = 999 };

struct Ext {
    int fd;
    char *base;
    uint64_t size;
    bool destroyed;
    int live_buffers;
};

struct Op {
    enum Kind { Copy, Read, Set, Record, Wait } kind;
    uintptr_t dst, src;
    size_t dpitch, spitch, row, rows;
    int value;
    uintptr_t event;
    uint64_t generation;
    int copy_kind = 3;  // hipMemcpyKind of a Copy: 1 host to device, 2 device to host, 3 device to device
};

struct Event {
    uint64_t queued = 0, done = 0;
    bool destroyed = false;
};

struct State {
    std::mutex lock;
    std::map<uintptr_t, size_t> allocs;
    std::map<uintptr_t, Ext> exts;           // by handle
    std::map<uintptr_t, uintptr_t> mapped;   // buffer pointer -> ext handle (refcounted below)
    std::map<uintptr_t, int> mapped_count;
    std::map<uintptr_t, Event> events;
    std::map<uintptr_t, std::deque<Op>> streams;  // 0: the null stream
    uintptr_t next = 0x100;
    long mallocs_left = -2, launches_left = -2;  // -2: not read yet
    std::string log, log_copy;
    State() { streams[0]; }
};

State &st() {
    static State *s = new State;  // never destroyed: the library outlives static teardown order
    return *s;
}

// How many more calls of a kind succeed (VMAFX_FAKE_HIP_MALLOCS, ...); -1
// without the variable: all of them. Called under the state lock.
bool allowed(const char *var, long &left) {
    if (left == -2) {
        const char *v = getenv(var);
        left = v && *v ? atol(v) : -1;
    }
    if (left < 0) return true;
    if (left == 0) return false;
    left--;
    return true;
}

int version() {
    const char *v = getenv("VMAFX_FAKE_HIP_VERSION");
    return v && *v ? atoi(v) : 70000000;
}
bool rocm6() { return version() >= 60000000; }

void say(State &s, const std::string &line) { s.log += line + "\n"; }

std::string hex(uintptr_t v) {
    char b[32];
    snprintf(b, sizeof b, "%#lx", (unsigned long)v);
    return b;
}

// The external memory whose mapping holds addr..addr+n, or 0.
uintptr_t ext_of(State &s, uintptr_t addr, size_t n) {
    for (auto &[h, e] : s.exts)
        if (!e.destroyed && addr >= (uintptr_t)e.base && addr + n <= (uintptr_t)e.base + e.size) return h;
    return 0;
}

bool valid(State &s, uintptr_t addr, size_t n) {
    auto it = s.allocs.upper_bound(addr);
    if (it != s.allocs.begin()) {
        --it;
        if (addr + n <= it->first + it->second) return true;
    }
    return ext_of(s, addr, n) != 0;
}

bool reads_ext(State &s, const Op &op, const Ext &e) {
    if (op.kind != Op::Copy && op.kind != Op::Read) return false;
    size_t span = op.kind == Op::Copy ? (op.rows ? (op.rows - 1) * op.spitch + op.row : 0) : op.row;
    return op.src < (uintptr_t)e.base + e.size && op.src + span > (uintptr_t)e.base;
}

void run(State &s, uintptr_t stream, const Op &op) {
    switch (op.kind) {
    case Op::Copy:
        for (size_t y = 0; y < op.rows; y++) {
            uintptr_t d = op.dst + y * op.dpitch, f = op.src + y * op.spitch;
            bool dst_ok = op.copy_kind == 2 || valid(s, d, op.row);  // 2: the destination is host memory
            bool src_ok = op.copy_kind == 1 || valid(s, f, op.row);  // 1: the source is host memory
            if (!dst_ok || !src_ok) {
                say(s, "VIOLATION copy of " + std::to_string(op.row) + " bytes " + hex(f) + " -> " + hex(d) + " outside every allocation");
                return;
            }
            memmove((void *)d, (const void *)f, op.row);
        }
        if (uintptr_t h = ext_of(s, op.src, 1)) say(s, "ran copy stream=" + hex(stream) + " reads ext=" + hex(h));
        break;
    case Op::Read:
        if (!valid(s, op.src, op.row)) {
            say(s, "VIOLATION read of " + std::to_string(op.row) + " bytes at " + hex(op.src) + " outside every allocation");
            return;
        }
        memcpy((void *)op.dst, (const void *)op.src, op.row);
        break;
    case Op::Set:
        if (!valid(s, op.dst, op.row)) {
            say(s, "VIOLATION memset outside every allocation");
            return;
        }
        memset((void *)op.dst, op.value, op.row);
        break;
    case Op::Record: {
        auto &e = s.events[op.event];
        if (op.generation > e.done) e.done = op.generation;
        break;
    }
    case Op::Wait:
        break;
    }
}

// Runs queued work until every stream is empty or waits on an event whose
// record has not run.
void pump(State &s) {
    for (bool progress = true; progress;) {
        progress = false;
        for (auto &[id, q] : s.streams) {
            while (!q.empty()) {
                Op &op = q.front();
                if (op.kind == Op::Wait) {
                    auto it = s.events.find(op.event);
                    if (it != s.events.end() && it->second.done < op.generation) break;
                }
                Op taken = op;
                q.pop_front();
                run(s, id, taken);
                progress = true;
            }
        }
    }
}

bool lazy() {
    static const bool on = [] { const char *v = getenv("VMAFX_FAKE_HIP_LAZY"); return v && *v == '1'; }();
    return on;
}

// The stream whose queue holds `event`'s record of `generation` (0, the
// null stream, is one), or false when no queue holds it.
bool recorder(State &s, uintptr_t event, uint64_t generation, uintptr_t &stream) {
    for (auto &[id, q] : s.streams)
        for (auto &op : q)
            if (op.kind == Op::Record && op.event == event && op.generation == generation) {
                stream = id;
                return true;
            }
    return false;
}

// Lazy mode: runs `stream`'s queue in order (with `event`, only up to its
// record of `generation`); behind a wait, first the stream that records
// the awaited event, up to that record. Work nothing is ordered behind
// stays queued. Stops behind an event no queue records (a blocked one).
void drain(State &s, uintptr_t stream, uintptr_t event = 0, uint64_t generation = 0, int depth = 0) {
    auto it = s.streams.find(stream);
    if (it == s.streams.end() || depth > 64) return;
    auto &q = it->second;  // map nodes stay put while other streams drain
    while (!q.empty()) {
        if (event && s.events[event].done >= generation) return;
        const Op &op = q.front();
        if (op.kind == Op::Wait && s.events[op.event].done < op.generation) {
            uintptr_t producer;
            if (recorder(s, op.event, op.generation, producer) && producer != stream)
                drain(s, producer, op.event, op.generation, depth + 1);
            if (s.events[op.event].done < op.generation) return;
        }
        Op taken = q.front();
        q.pop_front();
        run(s, stream, taken);
    }
}

// What `stream` needs run before the host or a launch uses it: all queued
// work when eager, the stream's own queue and what it waits for when lazy.
void settle(State &s, uintptr_t stream) {
    if (lazy()) drain(s, stream);
    else pump(s);
}

// Lazy mode: the work before `event`'s latest record (a host query or wait).
void settle_event(State &s, uintptr_t event) {
    if (!lazy()) return pump(s);
    uint64_t g = s.events[event].queued;
    uintptr_t producer;
    if (recorder(s, event, g, producer)) drain(s, producer, event, g);
}

int queue(State &s, void *stream, Op op) {
    auto it = s.streams.find((uintptr_t)stream);
    if (it == s.streams.end()) return INVALID_VALUE;
    it->second.push_back(op);
    if (!lazy()) pump(s);
    return OK;
}

thread_local int current_device = 0;

}  // namespace

#define API extern "C" __attribute__((visibility("default")))

// ------------------------------------------------------------ test controls

API const char *vx_fake_hip_log() {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    s.log_copy = s.log;
    return s.log_copy.c_str();
}

// An event with a record pending that only vx_fake_hip_signal completes.
API void *vx_fake_hip_blocked_event() {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    uintptr_t e = s.next++;
    s.events[e].queued = 1;
    return (void *)e;
}

API void vx_fake_hip_signal(void *event) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    auto &e = s.events[(uintptr_t)event];
    e.done = e.queued;
    say(s, "signal " + hex((uintptr_t)event));
    pump(s);
}

// ------------------------------------------------------------ the runtime

API int hipInit(unsigned) { return OK; }
API int hipDriverGetVersion(int *v) { *v = version(); return OK; }
API int hipRuntimeGetVersion(int *v) { *v = version(); return OK; }
API const char *hipGetErrorName(int code) {
    switch (code) {
    case OK: return "hipSuccess";
    case INVALID_VALUE: return "hipErrorInvalidValue";
    case NOT_FOUND: return "hipErrorNotFound";
    case NOT_READY: return "hipErrorNotReady";
    case NOT_SUPPORTED: return "hipErrorNotSupported";
    case 2: return "hipErrorOutOfMemory";
    case 101: return "hipErrorInvalidDevice";
    case 719: return "hipErrorLaunchFailure";
    default: return "hipErrorUnknown";
    }
}
API const char *hipGetErrorString(int code) {
    return code == UNKNOWN ? "fake HIP: the call would wait forever (a stream is stuck behind an event nobody signals)" : "fake HIP";
}
API int hipGetDeviceCount(int *n) { *n = 1; return OK; }
API int hipSetDevice(int d) {
    if (d != 0) return 101;  // hipErrorInvalidDevice
    current_device = d;
    return OK;
}
API int hipGetDevice(int *d) { *d = current_device; return OK; }
API int hipDeviceGetByPCIBusId(int *d, const char *bus_id) {
    // VMAFX_FAKE_HIP_PCI_BUS_ID: the device's bus id instead (a DRM device's in the VM).
    const char *own = getenv("VMAFX_FAKE_HIP_PCI_BUS_ID");
    if (own && *own) {
        if (strcasecmp(bus_id, own) != 0) return 101;
        *d = 0;
        return OK;
    }
    if (strcasecmp(bus_id, "0000:03:00.0") != 0 && strcasecmp(bus_id, "03:00.0") != 0) return 101;
    *d = 0;
    return OK;
}
API int hipDeviceGetName(char *name, int len, int) {
    snprintf(name, len, "vmafx fake HIP device (kernel emulator)");
    return OK;
}
API int hipDeviceTotalMem(size_t *bytes, int) { *bytes = size_t(1) << 30; return OK; }
API int hipGetDeviceProperties(void *props, int) {
    // gcn_arch takes the first "gfx" string in the block.
    memset(props, 0, 1024);
    snprintf((char *)props, 256, "vmafx fake HIP device");
    snprintf((char *)props + 512, 64, "gfx90a:sramecc+:xnack-");
    return OK;
}

API int hipModuleLoadData(void **module, const void *image) {
    // The fake hiprtc's marker, or a real AMD code object (an ELF): the
    // build's embedded gfx90a code (src/device/gpu/embedded.rs), served when
    // the fake plays a ROCm of the build hiprtc's major release. Either way
    // the emulator runs the kernels by name from their source.
    const char *code = (const char *)image;
    bool fake = strncmp(code, "VMAFX-FAKE-CODE-OBJECT:", 23) == 0;
    bool elf = memcmp(code, "\x7f" "ELF", 4) == 0;
    if (!fake && !elf) return INVALID_VALUE;
    *module = (void *)0xc0de;
    return OK;
}
API int hipModuleUnload(void *) { return OK; }
API int hipModuleGetFunction(void **f, void *, const char *name) {
    int id = vx_emu_find(name);
    if (id < 0) return NOT_FOUND;
    *f = (void *)(uintptr_t)(id + 1);
    return OK;
}

API int hipMalloc(uintptr_t *ptr, size_t bytes) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    if (!allowed("VMAFX_FAKE_HIP_MALLOCS", s.mallocs_left)) return 2;  // hipErrorOutOfMemory
    void *p = aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!p) return 2;
    memset(p, 0xa5, bytes);
    s.allocs[(uintptr_t)p] = bytes;
    *ptr = (uintptr_t)p;
    return OK;
}

API int hipFree(uintptr_t ptr) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    if (auto m = s.mapped.find(ptr); m != s.mapped.end()) {
        Ext &e = s.exts[m->second];
        if (e.destroyed) say(s, "VIOLATION free of buffer " + hex(ptr) + " after its ext=" + hex(m->second) + " was destroyed");
        e.live_buffers--;
        say(s, "free ext=" + hex(m->second) + " buffer " + hex(ptr));
        s.mapped_count.erase(ptr);
        s.mapped.erase(m);
        return OK;
    }
    auto a = s.allocs.find(ptr);
    if (a == s.allocs.end()) return INVALID_VALUE;
    for (auto &[id, q] : s.streams)
        for (auto &op : q)
            if ((op.dst >= ptr && op.dst < ptr + a->second) || (op.src >= ptr && op.src < ptr + a->second))
                say(s, "VIOLATION hipFree of " + hex(ptr) + " while stream " + hex(id) + " still has queued work on it");
    s.allocs.erase(a);
    free((void *)ptr);
    return OK;
}

API int hipMemGetAddressRange(uintptr_t *base, size_t *size, uintptr_t ptr) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    auto it = s.allocs.upper_bound(ptr);
    if (it == s.allocs.begin()) return NOT_FOUND;
    --it;
    if (ptr >= it->first + it->second) return NOT_FOUND;
    *base = it->first;
    *size = it->second;
    return OK;
}

API int hipStreamCreateWithFlags(void **stream, unsigned) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    uintptr_t id = s.next++;
    s.streams[id];
    *stream = (void *)id;
    return OK;
}
API int hipStreamCreate(void **stream) { return hipStreamCreateWithFlags(stream, 0); }
API int hipStreamDestroy(void *stream) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    s.streams.erase((uintptr_t)stream);
    return OK;
}
API int hipStreamSynchronize(void *stream) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    settle(s, (uintptr_t)stream);
    return s.streams[(uintptr_t)stream].empty() ? OK : UNKNOWN;
}

API int hipMemcpyHtoDAsync(uintptr_t dst, const void *src, size_t n, void *stream) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    settle(s, (uintptr_t)stream);
    if (!s.streams[(uintptr_t)stream].empty()) return NOT_SUPPORTED;  // pageable source: copy now or never
    if (!valid(s, dst, n)) return INVALID_VALUE;
    memcpy((void *)dst, src, n);
    return OK;
}
API int hipMemcpyDtoHAsync(void *dst, uintptr_t src, size_t n, void *stream) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    return queue(s, stream, Op{Op::Read, (uintptr_t)dst, src, 0, 0, n, 1, 0, 0, 0});
}
API int hipMemsetAsync(uintptr_t dst, int value, size_t n, void *stream) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    return queue(s, stream, Op{Op::Set, dst, 0, 0, 0, n, 1, value, 0, 0});
}
API int hipMemcpy2DAsync(uintptr_t dst, size_t dpitch, uintptr_t src, size_t spitch, size_t width, size_t height, unsigned kind, void *stream) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    if (kind < 1 || kind > 4 || width > dpitch || width > spitch) return INVALID_VALUE;
    return queue(s, stream, Op{Op::Copy, dst, src, dpitch, spitch, width, height, 0, 0, 0, kind == 4 ? 3 : (int)kind});
}

API int hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned, unsigned, unsigned, unsigned, unsigned, void *stream, void **args, void **) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    settle(s, (uintptr_t)stream);
    auto q = s.streams.find((uintptr_t)stream);
    if (q == s.streams.end()) return INVALID_VALUE;
    if (!allowed("VMAFX_FAKE_HIP_LAUNCHES", s.launches_left)) return 719;  // hipErrorLaunchFailure
    // The arguments are only valid during this call: a launch queued behind
    // a pending wait cannot be kept (no test needs one).
    if (!q->second.empty()) {
        say(s, "VIOLATION a launch queued behind an unsignalled event (the fake runs launches at once)");
        return NOT_SUPPORTED;
    }
    return vx_emu_launch((int)(uintptr_t)f - 1, gx, gy, args) == 0 ? OK : INVALID_VALUE;
}

API int hipEventCreateWithFlags(void **event, unsigned) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    uintptr_t e = s.next++;
    s.events[e];
    *event = (void *)e;
    return OK;
}
API int hipEventRecord(void *event, void *stream) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    auto &e = s.events[(uintptr_t)event];
    if (e.destroyed) return INVALID_VALUE;
    e.queued++;
    return queue(s, stream, Op{Op::Record, 0, 0, 0, 0, 0, 0, 0, (uintptr_t)event, e.queued});
}
API int hipStreamWaitEvent(void *stream, void *event, unsigned) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    auto it = s.events.find((uintptr_t)event);
    if (it == s.events.end()) return INVALID_VALUE;
    return queue(s, stream, Op{Op::Wait, 0, 0, 0, 0, 0, 0, 0, (uintptr_t)event, it->second.queued});
}
API int hipEventQuery(void *event) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    settle_event(s, (uintptr_t)event);
    auto &e = s.events[(uintptr_t)event];
    return e.done >= e.queued ? OK : NOT_READY;
}
API int hipEventSynchronize(void *event) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    settle_event(s, (uintptr_t)event);
    auto &e = s.events[(uintptr_t)event];
    return e.done >= e.queued ? OK : UNKNOWN;
}
API int hipEventDestroy(void *event) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    s.events[(uintptr_t)event].destroyed = true;
    return OK;
}

// ------------------------------------------------------------ external memory

API int hipImportExternalMemory(void **out, const void *desc) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    const char *d = (const char *)desc;
    unsigned type;
    int fd;
    uint64_t size;
    memcpy(&type, d, 4);
    memcpy(&fd, d + 8, 4);
    memcpy(&size, d + 24, 8);
    if (rocm6())
        for (int i = 0; i < 64; i++)
            if (d[36 + i]) say(s, "VIOLATION hipExternalMemoryHandleDesc.reserved is not zero (a ROCm 5 struct given to ROCm 6?)");
    if (type != 1) {
        say(s, "refused import: handle type " + std::to_string(type) + " (the fake takes OpaqueFd, 1)");
        return INVALID_VALUE;
    }
    off_t real = lseek(fd, 0, SEEK_END);
    lseek(fd, 0, SEEK_SET);
    if (real < 0 || size == 0 || size > (uint64_t)real) {
        say(s, "refused import: fd " + std::to_string(fd) + " size " + std::to_string(size));
        return INVALID_VALUE;
    }
    void *base = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) return INVALID_VALUE;
    uintptr_t h = s.next++;
    s.exts[h] = Ext{fd, (char *)base, size, false, 0};
    say(s, "import ext=" + hex(h) + " size=" + std::to_string(size));
    *out = (void *)h;
    return OK;
}

API int hipExternalMemoryGetMappedBuffer(uintptr_t *ptr, void *ext, const void *desc) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    auto it = s.exts.find((uintptr_t)ext);
    if (it == s.exts.end() || it->second.destroyed) {
        say(s, "VIOLATION map of unknown or destroyed ext=" + hex((uintptr_t)ext));
        return INVALID_VALUE;
    }
    const char *d = (const char *)desc;
    uint64_t offset, size;
    memcpy(&offset, d, 8);
    memcpy(&size, d + 8, 8);
    if (rocm6())
        for (int i = 0; i < 64; i++)
            if (d[20 + i]) say(s, "VIOLATION hipExternalMemoryBufferDesc.reserved is not zero (a ROCm 5 struct given to ROCm 6?)");
    Ext &e = it->second;
    if (offset + size > e.size || size == 0) return INVALID_VALUE;
    // ROCm 5.2 answers the object's base whatever the offset.
    uintptr_t p = (uintptr_t)e.base + (version() < 50300000 ? 0 : offset);
    // One address answered twice is one buffer (ROCm 5.2 answers the base
    // for every offset): freed once.
    if (s.mapped_count[p]++ == 0) e.live_buffers++;
    s.mapped[p] = (uintptr_t)ext;
    say(s, "map ext=" + hex((uintptr_t)ext) + " offset=" + std::to_string(offset) + " size=" + std::to_string(size));
    *ptr = p;
    return OK;
}

API int hipDestroyExternalMemory(void *ext) {
    State &s = st();
    std::lock_guard<std::mutex> g(s.lock);
    pump(s);
    auto it = s.exts.find((uintptr_t)ext);
    if (it == s.exts.end() || it->second.destroyed) return INVALID_VALUE;
    Ext &e = it->second;
    bool busy = false;
    for (auto &[id, q] : s.streams)
        for (auto &op : q)
            if (reads_ext(s, op, e)) busy = true;
    if (busy) say(s, "VIOLATION destroy of ext=" + hex((uintptr_t)ext) + " while queued work still reads it");
    if (e.live_buffers > 0) say(s, "VIOLATION destroy of ext=" + hex((uintptr_t)ext) + " with " + std::to_string(e.live_buffers) + " mapped buffers not freed");
    say(s, "destroy ext=" + hex((uintptr_t)ext));
    e.destroyed = true;
    if (!busy) {  // kept mapped where queued work would read it: a log line, not a crash
        munmap(e.base, e.size);
        close(e.fd);
    }
    return OK;
}

// ------------------------------------------------------------ hiprtc

struct FakeProgram { std::string name; };

API const char *hiprtcGetErrorString(int) { return "fake hiprtc"; }
API int hiprtcVersion(int *major, int *minor) { *major = version() / 10000000; *minor = 0; return 0; }
API int hiprtcCreateProgram(void **prog, const char *, const char *name, int, const char *const *, const char *const *) {
    *prog = new FakeProgram{name ? name : ""};
    return 0;
}
API int hiprtcDestroyProgram(void **prog) { delete (FakeProgram *)*prog; *prog = nullptr; return 0; }
API int hiprtcCompileProgram(void *, int, const char *const *) { return 0; }
API int hiprtcGetCodeSize(void *prog, size_t *n) { *n = 23 + ((FakeProgram *)prog)->name.size() + 1; return 0; }
API int hiprtcGetCode(void *prog, char *code) {
    std::string c = "VMAFX-FAKE-CODE-OBJECT:" + ((FakeProgram *)prog)->name;
    memcpy(code, c.c_str(), c.size() + 1);
    return 0;
}
API int hiprtcGetProgramLogSize(void *, size_t *n) { *n = 1; return 0; }
API int hiprtcGetProgramLog(void *, char *log) { *log = 0; return 0; }

// ------------------------------------------------------------ comgr

API int amd_comgr_get_isa_count(size_t *n) { *n = 1; return 0; }
API int amd_comgr_get_isa_name(size_t, const char **name) { *name = "amdgcn-amd-amdhsa--gfx90a"; return 0; }
