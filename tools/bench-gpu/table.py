#!/usr/bin/env python3
"""table.py RESULTS.jsonl GPU.csv: the markdown tables of scripts/bench-gpu run.

A configuration is WxH:bits:distinct:frames[:model]; the first table has the
vmaf_v0.6.1 ones (no model field), the second the others (v1.0.16), where
libvmaf's CUDA extractors refuse the model and its CPU extractors run instead.

Each line of RESULTS is {"config", "tag", "result"} (result: a RESULT line of
vmafx-bench-gpu or bench_libvmaf_cuda). Percentages are of the highest read
bandwidth measured on the GPU (vmafx's read-only kernel; the copy figures
count read + write)."""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
gpu = open(sys.argv[2]).read().strip().splitlines() if len(sys.argv) > 2 else []


def first(tag, config="-"):
    for r in rows:
        if r["tag"] == tag and r["config"] == config:
            return r["result"]
    return None


def num(v, fmt):
    return "n/a" if v is None else format(v, fmt)


bw_vmafx = first("bandwidth-vmafx") or {}
bw_memcpy = first("bandwidth-memcpy") or {}
read_bw = bw_vmafx.get("read_gbs")
print("### GPU benchmark: vmafx CUDA vs libvmaf 3.2.0 CUDA, device-resident frames")
print()
if len(gpu) > 1:
    print(f"- GPU: {gpu[1]} ({gpu[0]})")
print(f"- device memory bandwidth measured here: read kernel {num(read_bw, '.0f')} GB/s, "
      f"copy kernel {num(bw_vmafx.get('copy_gbs'), '.0f')} GB/s (read + write), "
      f"cuMemcpyDtoD {num(bw_memcpy.get('memcpy_dtod_gbs'), '.0f')} GB/s (read + write); "
      f"% BW = achieved / read-kernel bandwidth")
print("- bytes per frame = the minimum each frame must read: 3 luma planes "
      "(reference, distorted, previous reference) x width x height x bytes per sample")
import os
print(f"- vmafx: a scoring context on the GPU with {os.environ.get('BENCH_GPU_THREADS', '0')} worker threads "
      "(0: one lane on the caller's thread; each worker is a lane with its own stream, so frames overlap)")
print("- fps: steady rate, (N - N/5) / (median time of N frames - median time of N/5 frames), each run "
      "on a fresh context (every frame pushed / read, flush, pooled score); frames in device memory before timing")
print()
print("| size | bits | frames | vmafx CUDA fps | ms/frame | GB/s | % BW | libvmaf CUDA fps | ms/frame | GB/s | % BW "
      "| vmafx / libvmaf | vmafx CPU fps (threads) | VMAF vmafx | VMAF libvmaf CUDA | vmafx CUDA = CPU | libvmaf CPU = vmafx |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|")
notes = []
extra = []
for tag in ("bandwidth-vmafx", "bandwidth-memcpy"):
    if "error" in (first(tag) or {"error": "missing"}):
        notes.append(f"{tag}: {(first(tag) or {}).get('error', 'missing')}")
all_configs = []
for r in rows:
    if r["config"] != "-" and r["config"] not in all_configs:
        all_configs.append(r["config"])
configs = [c for c in all_configs if len(c.split(":")) == 4]
model_configs = [c for c in all_configs if len(c.split(":")) > 4]
for c in configs:
    size, bits, _distinct, frames = c.split(":")
    if first("skipped", c) is not None:
        print(f"| {size} | {bits} | {frames} | skipped (deadline) |" + " |" * 16)
        continue
    a = first("vmafx-cuda", c) or {}
    stream = first("vmafx-cuda-stream", c)
    if stream is not None:
        notes.append(f"{size} {bits}-bit, vmafx CUDA (DeviceChoice::Gpu): {a.get('error')}; "
                     f"retried on DeviceChoice::CudaStream" + ("" if "error" in stream else " (its numbers are in the row)"))
        if "error" not in stream:
            a = stream
    b = first("libvmaf-cuda", c) or {}
    cpu = first("vmafx-cpu", c) or {}
    lcpu = first("libvmaf-cpu", c) or {}
    for tag, res in (("vmafx CUDA" + (" (CudaStream)" if stream is not None else ""), a), ("libvmaf CUDA", b), ("vmafx CPU", cpu), ("libvmaf CPU", lcpu),
                     ("gen", first("gen", c) or {})):
        if "error" in res:
            notes.append(f"{size} {bits}-bit, {tag}: {res['error']}")

    def side(res):
        if "fps" not in res:
            return ["n/a"] * 4
        pct = 100 * res["gbs"] / read_bw if read_bw else None
        return [num(res["fps"], ".1f"), num(res["ms_per_frame"], ".3f"), num(res["gbs"], ".1f"), num(pct, ".1f")]

    extra.append((c, a, b))
    ratio = num(a["fps"] / b["fps"], ".2f") if "fps" in a and "fps" in b else "n/a"
    if a.get("check_cpu_s"):
        cpu_fps = f"{int(frames) / a['check_cpu_s']:.1f} ({a.get('check_cpu_threads', '?')})"
        vmafx_cpu_pooled = a.get("check_cpu_pooled")
    elif "fps" in cpu:
        cpu_fps = f"{cpu['fps']:.1f} ({cpu['lane'].split('-t')[-1]})"
        vmafx_cpu_pooled = cpu.get("vmaf_pooled")
    else:
        cpu_fps, vmafx_cpu_pooled = "n/a", None
    vmafx_vmaf = a.get("vmaf_pooled", vmafx_cpu_pooled)
    check = a.get("check")
    check = "n/a" if not check else ("yes, 0 diff" if check.startswith("equal") else "**NO**")
    if a.get("check") and not a["check"].startswith("equal"):
        notes.append(f"{size} {bits}-bit: {a['check']}")
    vmafx_first = a.get("vmaf_first") or cpu.get("vmaf_first")
    if "vmaf_first" in lcpu and vmafx_first:
        same = lcpu["vmaf_first"] == vmafx_first
        lcheck = "yes (frames 0-2, as bits)" if same else f"**NO** ({lcpu['vmaf_first']!r} vs {vmafx_first!r})"
    else:
        lcheck = "n/a"
    print(f"| {size} | {bits} | {frames} | " + " | ".join(side(a)) + " | " + " | ".join(side(b))
          + f" | {ratio} | {cpu_fps} | {num(vmafx_vmaf, '.6f')} | {num(b.get('vmaf_pooled'), '.6f')} | {check} | {lcheck} |")
print()
print("Per run, apart from the steady rate above: the rate over the whole run (fresh context, all frames), "
      "the fixed time each run pays (first-frame set-up, drain at flush; from the N and N/5 runs), "
      "and the context set-up before the first frame (not timed above).")
print()
print("| size | bits | vmafx CUDA fps whole run | vmafx fixed s | vmafx set-up s | libvmaf CUDA fps whole run "
      "| libvmaf fixed s | libvmaf set-up s |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for c, a, b in extra:
    size, bits = c.split(":")[:2]
    cell = lambda r, k, f: num(r.get(k), f)
    print(f"| {size} | {bits} | {cell(a, 'fps_whole', '.1f')} | {cell(a, 'fixed_s', '.3f')} | {cell(a, 'init_s', '.3f')} "
          f"| {cell(b, 'fps_whole', '.1f')} | {cell(b, 'fixed_s', '.3f')} | {cell(b, 'init_s', '.3f')} |")
print()
print("VMAF values: vmafx's CUDA lane must equal its CPU lane (every feature and score of every frame "
      "compared as bits) and libvmaf's CPU path (frames 0-2); libvmaf's own CUDA backend differs by design "
      "(its CUDA motion is the pre-3.2.0 integer_motion, so VMAF differs slightly per frame).")
for n in notes:
    print(f"- {n}")

# Other vmafx lanes timed beside the CUDA one (BENCH_GPU_DEVICES), e.g. the
# HIP lane through scripts/hip-standin on an NVIDIA GPU.
others = sorted({r["tag"] for r in rows if r["tag"].startswith("vmafx-") and r["tag"] not in ("vmafx-cuda", "vmafx-cuda-stream", "vmafx-cpu")})
if others:
    print()
    print("| size | bits | lane | fps | ms/frame | GB/s | % BW | / vmafx CUDA | = CPU |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---|")
    for c in configs:
        size, bits = c.split(":")[:2]
        a = first("vmafx-cuda", c) or {}
        for tag in others:
            res = first(tag, c)
            if res is None:
                continue
            if "fps" not in res:
                print(f"| {size} | {bits} | {tag} | {res.get('error', 'n/a')} |" + " |" * 5)
                continue
            pct = 100 * res["gbs"] / read_bw if read_bw else None
            rel = num(res["fps"] / a["fps"], ".2f") if "fps" in a else "n/a"
            same = res.get("check")
            same = "n/a" if not same else ("yes, 0 diff" if same.startswith("equal") else "**NO**")
            print(f"| {size} | {bits} | {tag} | {num(res['fps'], '.1f')} | {num(res['ms_per_frame'], '.3f')} "
                  f"| {num(res['gbs'], '.1f')} | {num(pct, '.1f')} | {rel} | {same} |")


def same_frames(a, b, upto=None):
    """Every frame's score of two RESULT lines equal as doubles (the first
    `upto` frames when given); None when either has none."""
    fa, fb = a.get("vmaf_frames"), b.get("vmaf_frames")
    if not fa or not fb:
        return None
    n = upto if upto is not None else max(len(fa), len(fb))
    if n <= 0 or len(fa) < n or len(fb) < n:
        return None
    diff = [i for i in range(n) if fa[i] != fb[i]]
    return (n, diff)


def verdict(check):
    if check is None:
        return "n/a"
    n, diff = check
    if not diff:
        return f"yes, {n} frames"
    return f"**NO**: {len(diff)} of {n} frames differ (first: frame {diff[0]})"


if model_configs:
    print()
    print("### Models libvmaf's CUDA extractors cannot score (v1.0.16): vmafx CUDA vs libvmaf on its CPU extractors")
    print()
    print(f"- libvmaf's threads: {os.environ.get('BENCH_GPU_LIBVMAF_THREADS') or 'every core'}; vmafx CUDA: "
          f"{os.environ.get('BENCH_GPU_THREADS', '0')} worker threads (lanes); vmafx CPU: every core")
    print("- libvmaf CUDA: the model on a context with a CUDA state, as FFmpeg's libvmaf_cuda filter and the vmaf "
          "tool load it (vmaf_use_features_from_model)")
    print("- libvmaf gpumask: the same CUDA context and device pictures with gpumask set; libvmaf downloads luma only "
          "and runs every extractor on the CPU (its chroma is zero: values checked against libvmaf's CPU path "
          "with zero chroma, frames 0 to n-3 of a 16-frame run)")
    print("- libvmaf download: the application copies each frame (every plane) to host pictures, libvmaf's CPU "
          "context scores them (FFmpeg: hwdownload + libvmaf); its every frame compared with vmafx's as bits")
    print()
    print("| size | bits | model | frames | vmafx CUDA fps | ms/frame | vmafx CPU fps (threads) | libvmaf CUDA "
          "| libvmaf gpumask fps | ms/frame | libvmaf download fps | ms/frame | vmafx CUDA / gpumask "
          "| vmafx CUDA / download | vmafx CUDA = CPU | download = vmafx | gpumask = vmafx | gpumask = CPU, zero chroma |")
    print("|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---|---|---|")
    mnotes = []
    for c in model_configs:
        size, bits, _distinct, frames, model = c.split(":")[:5]
        if first("skipped", c) is not None:
            print(f"| {size} | {bits} | {model} | {frames} | skipped (deadline) |" + " |" * 13)
            continue
        a = first("vmafx-cuda", c) or {}
        lc = first("libvmaf-cuda", c) or {}
        gm = first("libvmaf-cuda-gpumask", c) or {}
        dl = first("libvmaf-cpu-download", c) or {}
        zc = first("libvmaf-cpu-zero-chroma", c) or {}
        for tag, res in (("vmafx CUDA", a), ("libvmaf gpumask", gm), ("libvmaf download", dl), ("libvmaf CPU zero chroma", zc)):
            if "error" in res:
                mnotes.append(f"{size} {bits}-bit {model}, {tag}: {res['error']}")
        if "error" in lc:
            lcuda = f"error: {lc['error']}"
        elif "fps" in lc:
            lcuda = f"scored: {lc['fps']:.1f} fps"
        else:
            lcuda = "n/a"
        cpu = first("vmafx-cpu", c) or {}
        if a.get("check_cpu_s"):
            cpu_fps = f"{int(frames) / a['check_cpu_s']:.1f} ({a.get('check_cpu_threads', '?')})"
        elif "fps" in cpu:
            cpu_fps = f"{cpu['fps']:.1f} ({cpu['lane'].split('-t')[-1]})"
        else:
            cpu_fps = "n/a"
        ratio = lambda x: num(a["fps"] / x["fps"], ".2f") if "fps" in a and "fps" in x else "n/a"
        check = a.get("check")
        check = "n/a" if not check else ("yes, 0 diff" if check.startswith("equal") else "**NO**")
        if a.get("check") and not a["check"].startswith("equal"):
            mnotes.append(f"{size} {bits}-bit {model}: {a['check']}")
        zn = len(zc.get("vmaf_frames") or []) - 2
        ours = a if a.get("vmaf_frames") else cpu  # the CPU lane's when the CUDA lane failed
        print(f"| {size} | {bits} | {model} | {frames} | {num(a.get('fps'), '.1f')} | {num(a.get('ms_per_frame'), '.2f')} "
              f"| {cpu_fps} | {lcuda} | {num(gm.get('fps'), '.1f')} | {num(gm.get('ms_per_frame'), '.2f')} "
              f"| {num(dl.get('fps'), '.1f')} | {num(dl.get('ms_per_frame'), '.2f')} | {ratio(gm)} | {ratio(dl)} | {check} "
              f"| {verdict(same_frames(ours, dl))} | {verdict(same_frames(ours, gm))} | {verdict(same_frames(gm, zc, zn))} |")
    for n in mnotes:
        print(f"- {n}")
