#!/usr/bin/env python3
"""patch_nvh.py INCLUDE_DIR/ffnvcodec

libvmaf 3.2.0's CUDA code calls 7 driver functions through ffnvcodec's
CudaFunctions table that nv-codec-headers 12.1.14.0 (the ffmpeg-src crate's
copy) lacks; this adds their typedefs, table fields and LOAD_SYMBOL lines.
Signatures follow CUDA's cuda.h; the symbols are the plain exported names.
Idempotent."""
import re
import sys

d = sys.argv[1]
ADDED = [
    ("cuCtxSynchronize", "void"),
    ("cuCtxGetStreamPriorityRange", "int *leastPriority, int *greatestPriority"),
    ("cuStreamCreateWithPriority", "CUstream *phStream, unsigned int flags, int priority"),
    ("cuMemHostAlloc", "void **pp, size_t bytesize, unsigned int Flags"),
    ("cuMemFreeHost", "void *p"),
    ("cuMemFreeAsync", "CUdeviceptr dptr, CUstream hStream"),
    ("cuLaunchHostFunc", "CUstream hStream, CUhostFn *fn, void *userData"),
]
cuda_h = open(f"{d}/dynlink_cuda.h").read()
loader_h = open(f"{d}/dynlink_loader.h").read()
if "tcuMemHostAlloc" in cuda_h:
    print("patch_nvh: already patched")
    sys.exit(0)
anchor = re.search(r"typedef CUresult CUDAAPI tcuLaunchKernel\(.*?\);\n", cuda_h).group(0)
cuda_h = cuda_h.replace(
    anchor,
    anchor + "\n/* added for libvmaf 3.2.0 (tools/bench-gpu/patch_nvh.py) */\n"
    "typedef void CUDAAPI CUhostFn(void *userData);\n"
    + "".join(f"typedef CUresult CUDAAPI t{n}({a});\n" for n, a in ADDED), 1)
field = "    tcuLaunchKernel *cuLaunchKernel;\n"
load = '    LOAD_SYMBOL(cuStreamCreate, tcuStreamCreate, "cuStreamCreate");\n'
assert loader_h.count(field) == 1 and loader_h.count(load) == 1, "unexpected dynlink_loader.h"
loader_h = loader_h.replace(field, field + "".join(f"    t{n} *{n};\n" for n, _ in ADDED), 1)
loader_h = loader_h.replace(load, load + "".join(f'    LOAD_SYMBOL({n}, t{n}, "{n}");\n' for n, _ in ADDED), 1)
open(f"{d}/dynlink_cuda.h", "w").write(cuda_h)
open(f"{d}/dynlink_loader.h", "w").write(loader_h)
print("patch_nvh: added", ", ".join(n for n, _ in ADDED))
