#!/usr/bin/env python3
"""The timed half of scripts/gpu-ffmpeg-libvmaf run (GPU host): FFmpeg 7.1's
own libvmaf_cuda filter against vmafx, both on NVDEC frames of the clips of
scripts/gpu-ffmpeg (build/gpu-ffmpeg/clips).

Per pair (distorted, reference), each run timed as a whole process (start-up
included, as scripts/gpu-ffmpeg-run.py times), best of RUNS:
  decode        both inputs -hwaccel cuda -hwaccel_output_format cuda, -f null
                (the libvmaf_cuda build)
  libvmaf_cuda  the same, scale_cuda=format=F:interp_algo=nearest on both
                (NVDEC gives nv12 / p010; FFmpeg 7.1's libvmaf_cuda takes only
                yuv420p or yuv444p16 CUDA frames), then libvmaf_cuda with
                model=path=vmaf_v0.6.1.json (the libvmaf build has no built-in
                models), log_fmt=json. F = yuv420p for 8-bit clips, yuv444p16
                for 10-bit ones (scale_cuda widens p010's samples to 16 bits,
                v << 6 | v >> 4: libvmaf scores 16-bit pictures, so its VMAF
                is not the 10-bit one); 10-bit clips also with F = yuv420p (8 bits kept)
  vmafx         the same NVDEC frames through vmafx on the GPU
                (build/gpu-ffmpeg/bin/ffmpeg; nv12 / p010 read in place)
The pooled VMAF (mean) of each JSON log is shown. libvmaf's CUDA VMAF differs
from its CPU (and so from vmafx) by design: its CUDA motion is the pre-3.2.0
integer_motion (docs/benchmarks.md, GPU section).

Usage: gpu-ffmpeg-libvmaf-run.py --ffmpeg FF --model JSON --clips DIR
       --vmafx FF --work DIR --status TSV --deadline S
Env: RUNS (2), PAIRS (comma-separated pair names), VMAFX (0: no vmafx column),
     VMAFX_NVRTC_LIB, VMAFX_KERNEL_CACHE (default next to vmafx's ffmpeg).
Exit status: 1 when a libvmaf_cuda run failed or was skipped, or the build failed.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_env import find_nvrtc  # noqa: E402

HW = ["-hwaccel", "cuda", "-hwaccel_output_format", "cuda"]
START = time.monotonic()


def first_error(log_path):
    try:
        with open(log_path, errors="replace") as f:
            lines = [l.strip() for l in f.read().splitlines() if l.strip() and not l.startswith("# ")]
    except OSError:
        return "(no log)"
    pat = re.compile(r"rror|Cannot|not supported|Unsupported|invalid|failed|No such|not found|Killed|timed out", re.I)
    picked = [l for l in lines if pat.search(l)][:3]
    return (" / ".join(picked) if picked else (lines[-1] if lines else "(no output)"))[:300]


def run(cmd, log_path, limit):
    """Runs cmd (stderr to log_path) within limit seconds: (seconds, rc)."""
    t = time.monotonic()
    with open(log_path, "w") as log:
        log.write("# " + " ".join(cmd) + "\n")
        log.flush()
        try:
            rc = subprocess.call(cmd, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL,
                                 timeout=limit)
        except subprocess.TimeoutExpired:
            log.write(f"\ntimed out after {limit} s\n")
            rc = 124
        except OSError as e:
            log.write(f"\n{e}\n")
            rc = 127
    return time.monotonic() - t, rc


def pooled_vmaf(path):
    """(frames, pooled mean VMAF) of a libvmaf-style JSON log, or (None, None)."""
    try:
        with open(path) as f:
            j = json.load(f)
    except (OSError, ValueError):
        return None, None
    frames = len(j.get("frames", []))
    pooled = j.get("pooled_metrics", {})
    key = "vmaf" if "vmaf" in pooled else next((k for k in pooled if k.startswith("vmaf")), None)
    return frames, (pooled[key]["mean"] if key else None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ffmpeg", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--clips", required=True)
    ap.add_argument("--vmafx", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--status", required=True)
    ap.add_argument("--deadline", type=float, default=480)
    a = ap.parse_args()
    runs = int(os.environ.get("RUNS", "2"))
    logs = os.path.join(a.work, "runs")
    os.makedirs(logs, exist_ok=True)

    # Build steps (from the shell part): step, ok|FAILED, seconds, why.
    steps = []
    if os.path.exists(a.status):
        with open(a.status) as f:
            steps = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    built = any(s[0] == "ffmpeg" and s[1] == "ok" for s in steps) and os.access(a.ffmpeg, os.X_OK)
    with_vmafx = os.environ.get("VMAFX", "1") != "0" and os.access(a.vmafx, os.X_OK)
    if with_vmafx:
        find_nvrtc()
        os.environ.setdefault("VMAFX_KERNEL_CACHE",
                              os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.vmafx))), "kernel-cache"))

    pairs = []
    for ref in sorted(glob.glob(os.path.join(a.clips, "*-ref.*"))):
        name = os.path.basename(ref).rsplit("-ref.", 1)[0]
        dist = ref.replace("-ref.", "-dist.")
        if os.path.exists(dist):
            pairs.append((name, dist, ref))
    if os.environ.get("PAIRS"):
        pairs = [p for p in pairs if p[0] in os.environ["PAIRS"].split(",")]

    def timed(tag, cmd, n=runs):
        """best of n: (seconds, rc, log); skipped past the deadline."""
        log = os.path.join(logs, tag + ".log")
        left = a.deadline - (time.monotonic() - START)
        if left < 15:
            with open(log, "w") as f:
                f.write(f"skipped: deadline ({a.deadline:.0f} s) reached\n")
            return None, "skip", log
        best, rc = None, 0
        for _ in range(n):
            left = a.deadline - (time.monotonic() - START)
            s, rc = run(cmd, log, max(10, min(90, int(left))))
            if rc != 0:
                return s, rc, log
            best = s if best is None else min(best, s)
        return best, rc, log

    rows, details, failed = [], [], not built
    for name, dist, ref in pairs:
        ten_bit = "10" in name.split("-")[0]
        inputs = [*HW, "-i", dist, *HW, "-i", ref]
        base = [a.ffmpeg, "-hide_banner", "-nostdin", *inputs]
        res = {}
        if built:
            res["decode"] = timed(f"{name}-decode", [*base, "-map", "0:v", "-map", "1:v", "-f", "null", "-"])
            fmts = ["yuv444p16", "yuv420p"] if ten_bit else ["yuv420p"]
            for fmt in fmts:
                jl = os.path.join(logs, f"{name}-libvmaf-{fmt}.json")
                sc = f"scale_cuda=format={fmt}:interp_algo=nearest"
                graph = (f"[0:v]{sc}[d];[1:v]{sc}[r];"
                         f"[d][r]libvmaf_cuda=model=path={a.model}:log_fmt=json:log_path={jl}")
                res[f"libvmaf-{fmt}"] = timed(f"{name}-libvmaf-{fmt}", [*base, "-lavfi", graph, "-f", "null", "-"]) + (jl,)
        if with_vmafx:
            jl = os.path.join(logs, f"{name}-vmafx.json")
            graph = f"[0:v]null[d];[1:v]null[r];[d][r]vmafx=log_fmt=json:log_path={jl}"
            res["vmafx"] = timed(f"{name}-vmafx", [a.vmafx, "-hide_banner", "-nostdin", "-v", "verbose", *inputs,
                                                   "-lavfi", graph, "-f", "null", "-"]) + (jl,)

        frames = None
        for k in ("libvmaf-yuv420p", "libvmaf-yuv444p16", "vmafx"):
            if k in res and res[k][1] == 0:
                frames = frames or pooled_vmaf(res[k][3])[0]
        status = []

        def cell(key):
            if key not in res:
                return "-"
            s, rc, log = res[key][:3]
            if rc == "skip":
                status.append(f"{key}: skipped (deadline)")
                return "skipped"
            if rc != 0:
                status.append(f"{key} failed")
                details.append(f"{name} {key} (rc {rc}): {first_error(log)}")
                return "fail"
            fps = f" ({frames / s:.0f} fps)" if frames and s else ""
            return f"{s:.2f}s{fps}"

        def score(key):
            if key not in res or res[key][1] != 0:
                return "-"
            n, v = pooled_vmaf(res[key][3])
            if v is None:
                status.append(f"{key}: no pooled VMAF in its JSON log")
                return "?"
            return f"{v:.6f}"

        main_fmt = "libvmaf-yuv444p16" if ten_bit else "libvmaf-yuv420p"
        row = [name, str(frames or "?"), cell("decode"),
               cell(main_fmt) + (" yuv444p16" if ten_bit else " yuv420p") if main_fmt in res else "-",
               score(main_fmt),
               cell("libvmaf-yuv420p") if ten_bit else "-", score("libvmaf-yuv420p") if ten_bit else "-",
               cell("vmafx"), score("vmafx")]
        if not built:
            status.append("libvmaf_cuda not built")
        failed |= any(k.startswith("libvmaf") and res[k][1] != 0 for k in res)
        row.append("ok" if not status else "; ".join(status))
        rows.append(row)

    try:
        gpu = open(os.path.join(a.work, "gpu.txt")).read().strip()
    except OSError:
        gpu = "?"
    print(f"GPU: {gpu}")
    print("build steps:")
    for s in steps:
        print("  " + " | ".join(s))
    head = ["pair", "frames", "decode (NVDEC)", "NVDEC+scale_cuda+libvmaf_cuda", "VMAF libvmaf_cuda",
            "10-bit as yuv420p: libvmaf_cuda", "VMAF (yuv420p)", "NVDEC+vmafx (cuda)", "VMAF vmafx", "status"]
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"\ntimes: whole ffmpeg process, best of {runs}; both inputs NVDEC (-hwaccel cuda "
          f"-hwaccel_output_format cuda); libvmaf_cuda: scale_cuda=format=F:interp_algo=nearest on both, "
          f"model=path=vmaf_v0.6.1.json; vmafx: {'build/gpu-ffmpeg/bin/ffmpeg, defaults' if with_vmafx else 'not run'}")
    if not pairs:
        print(f"no clip pairs under {a.clips} (scripts/gpu-ffmpeg build, carry build/gpu-ffmpeg)")
        failed = True
    if details:
        print("\ndetails:")
        for d in details:
            print("  " + d)
    print(f"logs and JSON logs in {logs}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
