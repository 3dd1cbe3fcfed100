#!/usr/bin/env python3
"""The GPU host's half of scripts/gpu-ffmpeg: vmafx on CUDA frames against
vmafx on the CPU, on the clips in build/gpu-ffmpeg/clips.

Per pair (distorted, reference):
  decode cuda   both inputs, -hwaccel cuda -hwaccel_output_format cuda, -f null
  cuda+vmafx    the same, through vmafx (CUDA frames, scored on the GPU;
                nv12 luma read in place, p010 shifted down on the device)
  cuda+psnr     the same with feature=name=psnr added (chroma read: nv12 /
                p010 chroma split on the device), against sw+psnr
  mixed+vmafx   CUDA main, software reference converted to NVDEC's layout
                (nv12 / p010le) and copied to the device by the context
  decode sw     both inputs in software, -f null
  dl+vmafx      NVDEC, hwdownload to nv12 / p010le, vmafx on the CPU (as
                sw+vmafx; works without GPU scoring)
  sw+vmafx      software decode, vmafx on the CPU (n_threads = cores)
  sw+psnr       the same with feature=name=psnr (one run; PSNR=0 skips both)
Every vmafx run writes the per-frame metadata (%.17g, exact doubles) and a
JSON log; every per-frame value of the GPU runs must equal the CPU run's as
doubles (same keys, same bits), the pooled "VMAF score" line too, and the
host-copy counter of the runs with CUDA main frames must be 0 (the mixed
run's software reference is copied to the device by the context, which is
not a host copy; a software p010le reference is shifted on the host first,
one host copy per frame, and only there). Prints a table; exits 1 on any difference or failure.

Usage: python3 scripts/gpu-ffmpeg-run.py build/gpu-ffmpeg
       python3 scripts/gpu-ffmpeg-run.py build/gpu-ffmpeg --soak [FRAMES]
       python3 scripts/gpu-ffmpeg-run.py build/gpu-ffmpeg --hip
The second form is the long run of docs/reliability.md (see soak()); the
third runs HIP frames (hwupload to HIP) on the HIP stand-in beside the
same graph on CUDA frames (see hip_main()).
Env: RUNS (timed repetitions, the best is shown; default 2), PSNR (0: no
     cuda+psnr / sw+psnr runs),
     CUDA_FILTER_OPTS / CPU_FILTER_OPTS (extra vmafx options, e.g.
     "n_threads=4"), PAIRS (comma-separated pair names to run), LOOP (n:
     each clip read n+1 times with -stream_loop, for steady-state rates),
     CUDA_VARIANTS (';'-separated vmafx option strings: one more timed
     and compared cuda+vmafx run each, e.g. "n_threads=2"), SKIP
     (comma-separated runs left out: mixed, dl),
     VMAFX_NVRTC_LIB (found under /usr/local/cuda or python's nvidia wheel
     when unset), VMAFX_KERNEL_CACHE (default build/gpu-ffmpeg/kernel-cache).
"""

import glob
import json
import os
import re
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_env import find_nvrtc  # noqa: E402

HW = ["-hwaccel", "cuda", "-hwaccel_output_format", "cuda"]


def run(cmd, log_path):
    """Runs cmd, stderr to log_path; returns (seconds, returncode)."""
    t = time.monotonic()
    with open(log_path, "w") as log:
        rc = subprocess.call(cmd, stdout=subprocess.DEVNULL, stderr=log)
    return time.monotonic() - t, rc


def best_of(n, cmd, log_path):
    best, rc = None, 0
    for _ in range(n):
        s, rc = run(cmd, log_path)
        if rc != 0:
            return s, rc
        best = s if best is None else min(best, s)
    return best, rc


def read_metadata(path):
    """frame index -> {key: float}, from metadata=mode=print:file=..."""
    frames, cur = [], None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("frame:"):
                cur = {}
                frames.append(cur)
            elif "=" in line and cur is not None:
                k, v = line.split("=", 1)
                cur[k] = float(v)
    return frames


def read_json(path):
    with open(path) as f:
        j = json.load(f)
    return [fr["metrics"] for fr in j["frames"]], j.get("pooled_metrics", {})


def bits(v):
    return struct.pack("<d", v)


def compare(a, b, what):
    """Per-frame dicts a (GPU) vs b (CPU): (values compared, problems)."""
    problems, n = [], 0
    if len(a) != len(b):
        problems.append(f"{what}: {len(a)} frames vs {len(b)}")
    for i, (fa, fb) in enumerate(zip(a, b)):
        if set(fa) != set(fb):
            problems.append(f"{what} frame {i}: keys differ: {sorted(set(fa) ^ set(fb))}")
        for k in sorted(set(fa) & set(fb)):
            n += 1
            if bits(fa[k]) != bits(fb[k]):
                problems.append(f"{what} frame {i} {k}: {fa[k]!r} vs {fb[k]!r}")
    return n, problems


def first_error(log_path):
    """The first few error lines of a run's log (vmafx's own first)."""
    with open(log_path, errors="replace") as f:
        lines = [l.strip() for l in f.read().splitlines()]
    pat = re.compile(r"rror|Cannot|not supported|device:|mismatch:|invalid argument:|internal:|failed")
    vmafx = [l for l in lines if "vmafx" in l and pat.search(l) and "Failed to configure" not in l]
    other = [l for l in lines if pat.search(l) and l not in vmafx]
    picked = (vmafx + other)[:3]
    return " / ".join(picked) if picked else (lines[-1] if lines else "(no output)")


def counters(log_path):
    with open(log_path, errors="replace") as f:
        text = f.read()
    m = re.findall(r"(\d+) frame pairs scored, (\d+) host copies(?:, (\d+) (?:CUDA|GPU) frames in place)?", text)
    score = re.findall(r"VMAF score: (\S+)", text)
    cuda_line = "CUDA frames read in place on the GPU" in text
    if not m:
        return (None, None, None), score, cuda_line
    return (int(m[-1][0]), int(m[-1][1]), int(m[-1][2] or 0)), score, cuda_line


def proc_status(pid):
    """(RSS KiB, open fds) of a live process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration):
        return None


def device_memory(pid):
    """MiB of GPU memory nvidia-smi charges to pid (None: not listed yet)."""
    try:
        text = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in text.splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) == 2 and parts[0] == str(pid):
            return int(parts[1])
    return None


def soak(out, frames):
    """FRAMES generated 320x180 frame pairs through ONE ffmpeg graph holding
    four vmafx instances on CUDA frames (hwupload, one GPU) and a fifth on
    the same frames in software; every second the process's GPU memory
    (nvidia-smi), RSS and open fds are sampled. After the warm-up (10% of
    the frames) GPU memory and fds must not change; every per-frame value
    of each CUDA instance must equal the software instance's as doubles,
    the pooled values too. Prints the samples' ranges; exits 1 otherwise."""
    ff = os.path.join(out, "bin/ffmpeg")
    work = os.path.join(out, "soak")
    os.makedirs(work, exist_ok=True)
    find_nvrtc()
    os.environ.setdefault("VMAFX_KERNEL_CACHE", os.path.join(out, "kernel-cache"))
    size, rate, lanes = os.environ.get("SOAK_SIZE", "320x180"), 25, 4
    src = f"testsrc2=s={size}:r={rate}:d={frames / rate}"
    split = lanes + 1
    graph = (f"[0:v]noise=alls=8:allf=t,format=yuv420p,split={split}" + "".join(f"[d{i}]" for i in range(split)) + ";"
             f"[1:v]format=yuv420p,split={split}" + "".join(f"[r{i}]" for i in range(split)) + ";")
    for i in range(lanes):
        graph += f"[d{i}]hwupload[dc{i}];[r{i}]hwupload[rc{i}];[dc{i}][rc{i}]vmafx=log_fmt=json:log_path={work}/cuda{i}.json[o{i}];"
    graph += f"[d{lanes}][r{lanes}]vmafx=n_threads=4:log_fmt=json:log_path={work}/cpu.json[o{lanes}]"
    maps = [a for i in range(split) for a in ("-map", f"[o{i}]", "-f", "null", "-")]
    progress = os.path.join(work, "progress")
    cmd = [ff, "-hide_banner", "-nostdin", "-v", "info", "-progress", progress, "-stats_period", "1",
           "-init_hw_device", "cuda=cu:0", "-filter_hw_device", "cu",
           "-f", "lavfi", "-i", src, "-f", "lavfi", "-i", src, "-filter_complex", graph, *maps]
    print(f"soak: {frames} frames of {size}, {lanes} vmafx on CUDA frames + 1 on the CPU, one graph")
    sys.stdout.flush()
    t0 = time.monotonic()
    with open(os.path.join(work, "ffmpeg.log"), "w") as log:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
        samples = []
        while p.poll() is None:
            time.sleep(1)
            st, mem = proc_status(p.pid), device_memory(p.pid)
            frame = 0
            try:
                with open(progress) as f:
                    done = re.findall(r"^frame=(\d+)", f.read(), re.M)
                    frame = int(done[-1]) if done else 0
            except OSError:
                pass
            if st is not None:
                samples.append((time.monotonic() - t0, frame, st[0], st[1], mem))
    wall = time.monotonic() - t0
    problems = []
    if p.returncode != 0:
        problems.append(f"ffmpeg exited {p.returncode}: {first_error(os.path.join(work, 'ffmpeg.log'))}")
    with open(os.path.join(work, "samples.tsv"), "w") as f:
        f.write("seconds\tframe\trss_kib\tfds\tgpu_mib\n")
        for s in samples:
            f.write("\t".join(str(x) for x in s) + "\n")
    steady = [s for s in samples if s[1] > frames // 10 and s[4] is not None]
    if len(steady) < 3:
        problems.append(f"only {len(steady)} samples after the warm-up")
    else:
        rng = lambda k: (min(s[k] for s in steady), max(s[k] for s in steady))
        (r0, r1), (f0, f1), (g0, g1) = rng(2), rng(3), rng(4)
        print(f"after frame {frames // 10} ({len(steady)} samples): GPU memory {g0}..{g1} MiB, "
              f"RSS {r0}..{r1} KiB (drift {r1 - r0} KiB), fds {f0}..{f1}")
        if g1 != g0:
            problems.append(f"GPU memory drifted {g1 - g0} MiB")
        if f1 != f0:
            problems.append(f"open fds changed {f0} -> {f1}")
    if p.returncode == 0:
        cpu, cpu_pooled = read_json(os.path.join(work, "cpu.json"))
        if len(cpu) != frames:
            problems.append(f"the CPU log has {len(cpu)} frames, not {frames}")
        for i in range(lanes):
            js, pooled = read_json(os.path.join(work, f"cuda{i}.json"))
            n, diffs = compare(js, cpu, f"cuda{i}")
            if pooled != cpu_pooled:
                diffs.append(f"cuda{i}: pooled values differ")
            print(f"cuda{i}: {n} values compared with the CPU instance, {len(diffs)} differ")
            problems.extend(diffs[:5])
    print(f"wall {wall:.0f} s ({frames * 1.0 / wall:.0f} frame pairs/s per instance); samples in {work}/samples.tsv")
    for x in problems:
        print("  " + x)
    print("soak: " + ("FAILED" if problems else "passed"))
    sys.exit(1 if problems else 0)


def vmafx_graph(ff, work, inputs, tag, opts, prep="[0:v]null[d];[1:v]null[r];"):
    """ffmpeg's command for INPUTS (distorted first) -> PREP -> vmafx
    (OPTS, JSON log WORK/TAG.json) -> per-frame metadata in WORK/TAG.meta."""
    graph = f"{prep}[d][r]vmafx=log_fmt=json:log_path={work}/{tag}.json"
    if opts:
        graph += ":" + opts
    graph += f",metadata=mode=print:file={work}/{tag}.meta"
    return [ff, "-hide_banner", "-nostdin", "-v", "verbose", *inputs, "-lavfi", graph, "-f", "null", "-"]


def clip_pairs(out):
    """The (name, distorted, reference) clips under OUT/clips, those named
    in PAIRS (comma-separated) when it is set; exits when there are none."""
    pairs = []
    for ref in sorted(glob.glob(os.path.join(out, "clips/*-ref.*"))):
        name = os.path.basename(ref).rsplit("-ref.", 1)[0]
        dist = ref.replace("-ref.", "-dist.")
        if os.path.exists(dist):
            pairs.append((name, dist, ref))
    only = os.environ.get("PAIRS")
    if only:
        pairs = [p for p in pairs if p[0] in only.split(",")]
    if not pairs:
        sys.exit(f"no clip pairs under {out}/clips (run scripts/gpu-ffmpeg build first)")
    return pairs


def hip_standin_env(out):
    """Points FFmpeg's HIP hwcontext (it dlopens libamdhip64.so.7 first) and
    vmafx's HIP lane at the stand-in carried in OUT/hip-standin, as
    `xtask env --lane hip` does."""
    d = os.path.abspath(os.path.join(out, "hip-standin"))
    if not os.path.exists(os.path.join(d, "libamdhip64.so")):
        sys.exit(f"no HIP stand-in in {d} (scripts/gpu-ffmpeg build puts it there)")
    os.environ["VMAFX_HIP_LIB"] = os.environ["VMAFX_HIPRTC_LIB"] = os.path.join(d, "libamdhip64.so")
    # The hwcontext tries libamdhip64.so.7 first and .so last: a host with
    # a distribution's HIP runtime (the H200's has Debian's .so.5, which
    # fails hipInit with hipErrorInvalidDevice on an NVIDIA GPU) would be
    # chosen over the stand-in. Its first name, beside it, wins.
    first = os.path.join(d, "libamdhip64.so.7")
    if not os.path.lexists(first):
        os.symlink("libamdhip64.so", first)
    # The host's NVRTC beside it: the stand-in needs libnvrtc.so.13 by its
    # SONAME, and NVRTC opens its builtins by name (find_nvrtc ran first).
    paths = [d, *filter(None, os.environ.get("LD_LIBRARY_PATH", "").split(":"))]
    if os.environ.get("VMAFX_NVRTC_LIB"):
        paths.append(os.path.dirname(os.environ["VMAFX_NVRTC_LIB"]))
    os.environ["LD_LIBRARY_PATH"] = ":".join(paths)
    os.environ.setdefault("VMAFX_HIP_ARCH", "gfx90a")


def hip_main(out):
    """HIP frames in FFmpeg on the NVIDIA-platform stand-in: per pair,
    software decode -> hwupload to HIP (-init_hw_device hip=h:0
    -filter_hw_device h) -> vmafx, against the same decode -> vmafx on the
    CPU (every per-frame value and the pooled ones compared as doubles),
    and timed beside the same graph with hwupload to CUDA. Host copies
    must be 0 and every frame of both inputs read on the device. Prints a
    table; exits 1 on any difference or failure."""
    ff = os.path.join(out, "bin/ffmpeg")
    work = os.path.join(out, "work-hip")
    os.makedirs(work, exist_ok=True)
    find_nvrtc()
    hip_standin_env(out)
    os.environ.setdefault("VMAFX_KERNEL_CACHE", os.path.join(out, "kernel-cache"))
    runs = int(os.environ.get("RUNS", "2"))
    cpu_opts = os.environ.get("CPU_FILTER_OPTS", f"n_threads={os.cpu_count() or 1}")
    print(f"VMAFX_NVRTC_LIB={os.environ.get('VMAFX_NVRTC_LIB', '(by SONAME)')} VMAFX_HIP_LIB={os.environ['VMAFX_HIP_LIB']}")
    sys.stdout.flush()
    listed = subprocess.run([ff, "-hide_banner", "-init_hw_device", "list"], capture_output=True, text=True).stdout.split()
    if "hip" not in listed or "cuda" not in listed:
        sys.exit(f"{ff}: -init_hw_device list gives {listed}: hip and cuda are needed")
    pairs = clip_pairs(out)

    def cmd(tag, device, opts):
        if not device:
            return vmafx_graph(ff, work, ["-i", dist, "-i", ref], tag, opts)
        hw = ["-init_hw_device", f"{device}=gpu:0", "-filter_hw_device", "gpu"]
        return vmafx_graph(ff, work, [*hw, "-i", dist, "-i", ref], tag, opts,
                           prep="[0:v]hwupload[d];[1:v]hwupload[r];")

    rows, details, failed = [], [], False
    for name, dist, ref in pairs:
        res = {k: best_of(runs, cmd(f"{name}-{k}", dev, opts), f"{work}/{name}-{k}.log")
               for k, dev, opts in (("cpu", None, cpu_opts), ("hip", "hip", ""), ("cuda", "cuda", ""))}
        status, cells = [], {}
        if res["cpu"][1] != 0:
            status.append("cpu run failed")
            details.append(f"{name} cpu: {first_error(f'{work}/{name}-cpu.log')}")
        else:
            cpu_meta = read_metadata(f"{work}/{name}-cpu.meta")
            cpu_json, cpu_pooled = read_json(f"{work}/{name}-cpu.json")
            cpu_score = counters(f"{work}/{name}-cpu.log")[1]
        nframes = (counters(f"{work}/{name}-cpu.log")[0][0] or 0) if res["cpu"][1] == 0 else 0
        for k in ("hip", "cuda"):
            log = f"{work}/{name}-{k}.log"
            if res[k][1] != 0:
                status.append(f"{k} failed")
                details.append(f"{name} {k}: {first_error(log)}")
                continue
            (scored, copies, on_device), score, _ = counters(log)
            if copies != 0 or on_device != 2 * (scored or 0) or not scored:
                status.append(f"{k}: {copies} host copies, {on_device} frames on the device for {scored} pairs")
            if res["cpu"][1] != 0:
                continue
            n1, p1 = compare(read_metadata(f"{work}/{name}-{k}.meta"), cpu_meta, f"{k} metadata")
            js, pooled = read_json(f"{work}/{name}-{k}.json")
            n2, p2 = compare(js, cpu_json, f"{k} json")
            if pooled != cpu_pooled:
                p2.append(f"{k} json pooled_metrics differ")
            if score != cpu_score:
                p2.append(f"{k} VMAF score line {score} vs {cpu_score}")
            cells[k] = f"{n1 + n2}: {len(p1) + len(p2)} diff, {copies} host copies"
            if p1 or p2:
                status.append(f"{k}: {len(p1) + len(p2)} differences")
                details.extend(f"{name} {x}" for x in (p1 + p2)[:10])
        failed |= bool(status)

        def fmt_t(key):
            s, rc = res[key]
            if rc != 0:
                return "fail"
            return f"{s:.2f}s" + (f" ({nframes / s:.0f} fps)" if nframes and s else "")

        rows.append([name, str(nframes), fmt_t("hip"), fmt_t("cuda"), fmt_t("cpu"),
                     cells.get("hip", "-"), cells.get("cuda", "-"), "ok" if not status else "; ".join(status)])

    head = ["pair", "frames", "sw decode+hwupload hip+vmafx", "sw decode+hwupload cuda+vmafx", "sw+vmafx (cpu)",
            "hip: values compared with cpu", "cuda: values compared with cpu", "status"]
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"\ntimes: best of {runs}; cpu run options: {cpu_opts}; logs, metadata and JSON logs in {work}")
    if details:
        print("\ndetails:")
        for d in details:
            print("  " + d)
    sys.exit(1 if failed else 0)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "build/gpu-ffmpeg"
    if len(sys.argv) > 2 and sys.argv[2] == "--soak":
        return soak(out, int(sys.argv[3]) if len(sys.argv) > 3 else 10000)
    if len(sys.argv) > 2 and sys.argv[2] == "--hip":
        return hip_main(out)
    ff = os.path.join(out, "bin/ffmpeg")
    work = os.path.join(out, "work")
    os.makedirs(work, exist_ok=True)
    find_nvrtc()
    os.environ.setdefault("VMAFX_KERNEL_CACHE", os.path.join(out, "kernel-cache"))
    runs = int(os.environ.get("RUNS", "2"))
    with_psnr = os.environ.get("PSNR", "1") != "0"
    cores = os.cpu_count() or 1
    cuda_opts = os.environ.get("CUDA_FILTER_OPTS", "")
    variants = [v for v in os.environ.get("CUDA_VARIANTS", "").split(";") if v]
    skip = set(filter(None, os.environ.get("SKIP", "").split(",")))
    cpu_opts = os.environ.get("CPU_FILTER_OPTS", f"n_threads={cores}")
    print(f"VMAFX_NVRTC_LIB={os.environ.get('VMAFX_NVRTC_LIB', '(by SONAME)')}")
    try:
        subprocess.call(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    except OSError:
        print("nvidia-smi: not found")
    sys.stdout.flush()
    subprocess.call([ff, "-hide_banner", "-version"])
    pairs = clip_pairs(out)

    rows, details, failed = [], [], False

    def vmafx_cmd(inputs, tag, opts, prep="[0:v]null[d];[1:v]null[r];"):
        return vmafx_graph(ff, work, inputs, tag, opts, prep)

    for name, dist, ref in pairs:
        t = f"{name}"
        # LOOP=n reads each clip n+1 times (-stream_loop): steady-state
        # rates without carrying longer clips.
        lp = ["-stream_loop", os.environ["LOOP"]] if os.environ.get("LOOP", "0") != "0" else []
        cuda_in = [*HW, *lp, "-i", dist, *HW, *lp, "-i", ref]
        sw_in = [*lp, "-i", dist, *lp, "-i", ref]
        mixed_in = [*HW, *lp, "-i", dist, *lp, "-i", ref]
        null = ["-map", "0:v", "-map", "1:v", "-f", "null", "-"]
        res = {}
        res["dec_cuda"] = best_of(runs, [ff, "-hide_banner", "-nostdin", *cuda_in, *null], f"{work}/{t}-dec-cuda.log")
        res["dec_sw"] = best_of(runs, [ff, "-hide_banner", "-nostdin", *sw_in, *null], f"{work}/{t}-dec-sw.log")
        res["cpu"] = best_of(runs, vmafx_cmd(sw_in, f"{t}-cpu", cpu_opts), f"{work}/{t}-cpu.log")
        res["cuda"] = best_of(runs, vmafx_cmd(cuda_in, f"{t}-cuda", cuda_opts), f"{work}/{t}-cuda.log")
        for i, v in enumerate(variants):
            res[f"cuda-v{i}"] = best_of(runs, vmafx_cmd(cuda_in, f"{t}-cuda-v{i}", v), f"{work}/{t}-cuda-v{i}.log")
        if with_psnr:
            psnr = "feature=name=psnr"
            res["cpu_psnr"] = best_of(1, vmafx_cmd(sw_in, f"{t}-cpu-psnr", ":".join(filter(None, [psnr, cpu_opts]))),
                                      f"{work}/{t}-cpu-psnr.log")
            res["psnr"] = best_of(1, vmafx_cmd(cuda_in, f"{t}-psnr", ":".join(filter(None, [psnr, cuda_opts]))),
                                  f"{work}/{t}-psnr.log")
        # The software reference in NVDEC's layout (nv12 / p010le): vmafx
        # wants one format on both inputs.
        nvdec_fmt = "p010le" if "10" in name.split("-")[0] else "nv12"
        mixed_prep = f"[0:v]null[d];[1:v]format={nvdec_fmt}[r];"
        if "mixed" not in skip:
            res["mixed"] = best_of(1, vmafx_cmd(mixed_in, f"{t}-mixed", cuda_opts, mixed_prep), f"{work}/{t}-mixed.log")
        # NVDEC, frames downloaded to the host, vmafx on the CPU: what works
        # with no GPU scoring.
        dl_prep = f"[0:v]hwdownload,format={nvdec_fmt}[d];[1:v]hwdownload,format={nvdec_fmt}[r];"
        if "dl" not in skip:
            res["dl"] = best_of(runs, vmafx_cmd(cuda_in, f"{t}-dl", cpu_opts, dl_prep), f"{work}/{t}-dl.log")

        frames = counters(f"{work}/{t}-cpu.log")[0] if res["cpu"][1] == 0 else (None, None, None)
        status = []
        cpu_meta = cpu_json = None
        if res["cpu"][1] != 0:
            status.append("cpu run failed")
            details.append(f"{name} cpu: {first_error(f'{work}/{t}-cpu.log')}")
        else:
            cpu_meta = read_metadata(f"{work}/{t}-cpu.meta")
            cpu_json, cpu_pooled = read_json(f"{work}/{t}-cpu.json")
            cpu_score = counters(f"{work}/{t}-cpu.log")[1]
        compared = {}
        copies = {}
        if with_psnr and res["cpu_psnr"][1] == 0:
            ref_runs = {"psnr": (read_metadata(f"{work}/{t}-cpu-psnr.meta"), *read_json(f"{work}/{t}-cpu-psnr.json"),
                                 counters(f"{work}/{t}-cpu-psnr.log")[1])}
        else:
            ref_runs = {}
            if with_psnr:
                status.append("cpu psnr run failed")
                details.append(f"{name} cpu psnr: {first_error(f'{work}/{t}-cpu-psnr.log')}")
        for run_name in ("cuda", *(f"cuda-v{i}" for i in range(len(variants))), "mixed", "dl", "psnr"):
            if run_name not in res:
                continue
            log = f"{work}/{t}-{run_name}.log"
            if res[run_name][1] != 0:
                status.append(f"{run_name} failed")
                details.append(f"{name} {run_name}: {first_error(log)}")
                continue
            (pairs_scored, host_copies, in_place), score, cuda_line = counters(log)
            copies[run_name] = host_copies
            # Both inputs CUDA: two frames per pair; mixed: one; downloaded: none.
            want = (pairs_scored or 0) * {"mixed": 1, "dl": 0}.get(run_name, 2)
            if cuda_line != (run_name != "dl") or in_place != want or not pairs_scored:
                status.append(f"{run_name}: {in_place} CUDA frames on the device for {pairs_scored} pairs")
            # CUDA frames are never copied through the host (p010 is shifted
            # on the device). Downloaded p010 is shifted on the host
            # (counted), and so is the mixed run's software p010 reference.
            allowed = {"dl": host_copies, "mixed": (pairs_scored or 0) if nvdec_fmt == "p010le" else 0}.get(run_name, 0)
            if host_copies != allowed:
                status.append(f"{run_name}: {host_copies} host copies")
            if run_name in ref_runs:
                ref_meta, ref_json, ref_pooled, ref_score = ref_runs[run_name]
            elif run_name == "psnr":
                continue
            else:
                if cpu_meta is None:
                    continue
                ref_meta, ref_json, ref_pooled, ref_score = cpu_meta, cpu_json, cpu_pooled, cpu_score
            n1, p1 = compare(read_metadata(f"{work}/{t}-{run_name}.meta"), ref_meta, f"{run_name} metadata")
            js, pooled = read_json(f"{work}/{t}-{run_name}.json")
            n2, p2 = compare(js, ref_json, f"{run_name} json")
            if pooled != ref_pooled:
                p2.append(f"{run_name} json pooled_metrics differ")
            if score != ref_score:
                p2.append(f"{run_name} VMAF score line {score} vs {ref_score}")
            compared[run_name] = (n1 + n2, len(p1) + len(p2))
            if p1 or p2:
                status.append(f"{run_name}: {len(p1) + len(p2)} differences")
                details.extend(f"{name} {x}" for x in (p1 + p2)[:10])
        failed |= bool(status)
        nframes = frames[0] or 0

        def fmt_t(key):
            if key not in res:
                return "-"
            s, rc = res[key]
            if rc != 0:
                return "fail"
            fps = f" ({nframes / s:.0f} fps)" if nframes and s else ""
            return f"{s:.2f}s{fps}"

        rows.append([
            name, str(nframes), fmt_t("dec_cuda"), fmt_t("cuda"),
            *(fmt_t(f"cuda-v{i}") for i in range(len(variants))), fmt_t("mixed"), fmt_t("dl"), fmt_t("dec_sw"),
            fmt_t("cpu"),
            fmt_t("psnr") if "psnr" in res else "-",
            fmt_t("cpu_psnr") if "cpu_psnr" in res else "-",
            " / ".join(f"{compared[k][0]}: {compared[k][1]} diff" if k in compared else "-"
                       for k in ("cuda", *(f"cuda-v{i}" for i in range(len(variants))), "mixed", "dl", "psnr")),
            " / ".join(str(copies[k]) if k in copies else "-" for k in ("cuda", "mixed", "dl", "psnr")),
            "ok" if not status else "; ".join(status),
        ])

    vnames = "".join(f" / cuda {v}" for v in variants)
    head = ["pair", "frames", "decode cuda", "cuda+vmafx", *(f"cuda+vmafx {v}" for v in variants),
            "mixed+vmafx", "cuda+hwdownload+vmafx (cpu)",
            "decode sw", "sw+vmafx (cpu)", "cuda+psnr", "sw+psnr (cpu)",
            f"values compared: diffs (cuda{vnames} / mixed / dl / psnr)", "host copies (cuda / mixed / dl / psnr)", "status"]
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"\ntimes: best of {runs} (mixed, psnr: 1 run); cpu run options: {cpu_opts}; cuda run options: {cuda_opts or '(defaults)'}")
    print(f"logs, metadata and JSON logs in {work}")
    if details:
        print("\ndetails:")
        for d in details:
            print("  " + d)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
