"""The Python package against the vmafx CLI on the same inputs (logs byte for
byte but the run's fps), and Context (numpy arrays) against the file path.

Run by scripts/test (scripts/python-test: a virtualenv outside the clone with
the package installed) with VMAFX_CLI set to a vmafx binary built with the
`decode` feature.
"""

import os
import re
import subprocess
import threading
import time

import numpy as np
import pytest

import vmafx

W, H, FRAMES = 176, 144, 8


def ffmpeg(*args):
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", *args], check=True)


def cli():
    path = os.environ.get("VMAFX_CLI")
    assert path and os.access(path, os.X_OK), "VMAFX_CLI must name a vmafx binary built with --features decode"
    return path


def synthetic(bits, seed):
    """FRAMES frames of (Y, U, V) 4:2:0 planes: moving gradients plus noise."""
    rng = np.random.default_rng(seed)
    dtype = np.uint8 if bits == 8 else np.uint16
    peak = (1 << bits) - 1
    y, x = np.mgrid[0:H, 0:W]
    frames = []
    for t in range(FRAMES):
        luma = (x * 3 + y * 2 + t * 5) % 256 * (peak / 255)
        luma = np.clip(luma + rng.normal(0, peak / 40, luma.shape), 0, peak)
        u = np.full((H // 2, W // 2), peak // 2) + (t % 3)
        v = np.clip(u + rng.integers(0, 4, u.shape), 0, peak)
        frames.append([luma.astype(dtype), u.astype(dtype), v.astype(dtype)])
    return frames


def distort(frames, bits, seed):
    rng = np.random.default_rng(seed)
    peak = (1 << bits) - 1
    out = []
    for planes in frames:
        out.append([np.clip(p.astype(np.int32) + rng.integers(-6, 7, p.shape), 0, peak).astype(p.dtype)
                    for p in planes])
    return out


def write_y4m(path, frames, bits):
    cs = "420" if bits == 8 else f"420p{bits}"
    with open(path, "wb") as f:
        f.write(f"YUV4MPEG2 W{W} H{H} F25:1 Ip A1:1 C{cs}\n".encode())
        for planes in frames:
            f.write(b"FRAME\n")
            for p in planes:
                f.write(p.astype("<u2" if bits > 8 else np.uint8).tobytes())


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    d = tmp_path_factory.mktemp("clips")
    out = {}
    for bits in (8, 10):
        ref = synthetic(bits, 1)
        dist = distort(ref, bits, 2)
        write_y4m(d / f"ref{bits}.y4m", ref, bits)
        write_y4m(d / f"dist{bits}.y4m", dist, bits)
        out[bits] = (ref, dist)
    ffmpeg("-i", str(d / "ref8.y4m"), "-c:v", "ffv1", str(d / "ref8.mkv"))
    ffmpeg("-i", str(d / "ref8.y4m"), "-c:v", "libx264", "-crf", "35", "-preset", "veryfast", str(d / "x264.mp4"))
    out["dir"] = d
    return out


def without_fps(text):
    """A log without the run's rate: JSON's "fps" line, XML's fps attribute."""
    text = re.sub(r'\n\s*"fps": [^\n]*', "", text)
    return re.sub(r' fps="[^"]*"', "", text)


def run_cli(*args):
    done = subprocess.run([cli(), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("pair", [("ref8.y4m", "dist8.y4m"), ("ref10.y4m", "dist10.y4m"), ("ref8.mkv", "x264.mp4")])
def test_score_logs_equal_the_cli_logs(clips, tmp_path, pair):
    d = clips["dir"]
    ref, dist = (str(d / p) for p in pair)
    result = vmafx.score(ref, dist, features=["psnr"], threads=2)
    assert result.frame_count == FRAMES
    for fmt, render in (("json", result.json), ("xml", result.xml), ("csv", result.csv), ("sub", result.sub)):
        log = tmp_path / f"cli.{fmt}"
        line = run_cli("-r", ref, "-d", dist, "--feature", "psnr", "--threads", "2", f"--{fmt}", "-o", str(log))
        assert without_fps(render()) == without_fps(log.read_text()), f"{pair} {fmt}"
    # The score line's pooled mean is the pooled dict's.
    assert line == "vmaf_v0.6.1: %.6f\n" % result.pooled["vmaf"]["mean"]
    frame = result.frames[0]
    assert {"vmaf", "psnr_y", "integer_vif_scale0", "integer_motion2"} <= set(frame), sorted(frame)
    assert 0 < frame["vmaf"] <= 100
    assert set(result.pooled["vmaf"]) == {"min", "max", "mean", "harmonic_mean"}


def in_layout(planes, layout):
    """The planes, same values, laid out in memory as `layout` says."""
    if layout == "C order":
        return [np.ascontiguousarray(p) for p in planes]
    if layout == "rows of a wider array":
        # Row stride 24 samples past the row's end, column stride one sample.
        wide = [np.zeros((p.shape[0], p.shape[1] + 24), p.dtype) for p in planes]
        for q, p in zip(wide, planes):
            q[:, : p.shape[1]] = p
        return [q[:, : p.shape[1]] for q, p in zip(wide, planes)]
    if layout == "Fortran order":
        return [np.asfortranarray(p) for p in planes]
    if layout == "every other column":
        return [np.repeat(p, 2, axis=1)[:, ::2] for p in planes]
    raise ValueError(layout)


# Layout -> whether its planes are read in place (rows' samples contiguous).
LAYOUTS = {"C order": True, "rows of a wider array": True, "Fortran order": False, "every other column": False}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("bits", [8, 10])
def test_context_on_numpy_arrays_equals_the_files(clips, bits, layout):
    d = clips["dir"]
    ref, dist = clips[bits]
    from_files = vmafx.score(str(d / f"ref{bits}.y4m"), str(d / f"dist{bits}.y4m"), features=["psnr"], threads=2)
    pix_fmt = "yuv420p" if bits == 8 else "yuv420p10le"
    ctx = vmafx.Context(W, H, pix_fmt, features=["psnr"], threads=2)
    for r, s in zip(ref, dist):
        r, s = in_layout(r, layout), in_layout(s, layout)
        if layout == "every other column":
            assert r[1].strides[1] == 2 * r[1].itemsize
        if layout == "rows of a wider array":
            assert r[0].strides == ((W + 24) * r[0].itemsize, r[0].itemsize)
        ctx.push(r, s)
    from_arrays = ctx.flush()
    # Which path each plane took: 3 planes a picture, 2 pictures a frame.
    planes = FRAMES * 2 * 3
    plane_bytes = FRAMES * 2 * (W * H + 2 * (W // 2) * (H // 2)) * (1 if bits == 8 else 2)
    if LAYOUTS[layout]:
        assert (ctx.planes_in_place, ctx.planes_copied, ctx.bytes_copied) == (planes, 0, 0)
    else:
        assert (ctx.planes_in_place, ctx.planes_copied, ctx.bytes_copied) == (0, planes, plane_bytes)
    assert from_arrays.frames == from_files.frames  # Python floats: equal means equal bits
    assert from_arrays.pooled == from_files.pooled
    assert from_arrays.aggregates == from_files.aggregates
    assert without_fps(from_arrays.json()) == without_fps(from_files.json())


def test_bad_input_raises_the_cores_message(clips, tmp_path):
    d = clips["dir"]
    with pytest.raises(vmafx.Error, match="missing.y4m"):
        vmafx.score(str(d / "ref8.y4m"), str(tmp_path / "missing.y4m"))
    with pytest.raises(vmafx.Error, match="differ"):
        vmafx.score(str(d / "ref8.y4m"), str(d / "ref10.y4m"))
    with pytest.raises(vmafx.Error, match="unknown model|vmaf_v9"):
        vmafx.score(str(d / "ref8.y4m"), str(d / "dist8.y4m"), model="vmaf_v9")
    ctx = vmafx.Context(W, H, "yuv420p10le")
    ref, dist = clips[10]
    bad = [p.copy() for p in dist[0]]
    bad[0][3, 5] = 1024
    with pytest.raises(vmafx.Error, match=r"sample \(5,3\) = 1024 exceeds 10 bits"):
        ctx.push(ref[0], bad)
    with pytest.raises(vmafx.Error, match="shape"):
        ctx.push(ref[0], [dist[0][0][:-2], dist[0][1], dist[0][2]])
    with pytest.raises(vmafx.Error, match="uint16"):
        ctx.push(ref[0], [p.astype(np.uint8) for p in dist[0]])


def test_the_gil_is_released_while_scoring(tmp_path):
    w, h = 640, 360
    y, x = np.mgrid[0:h, 0:w]
    chroma = np.full((h // 2, w // 2), 128, np.uint8).tobytes()

    def write_clips(n):
        with open(tmp_path / "ref.y4m", "wb") as r, open(tmp_path / "dist.y4m", "wb") as d:
            for f in (r, d):
                f.write(f"YUV4MPEG2 W{w} H{h} F25:1 Ip A1:1 C420\n".encode())
            for t in range(n):
                luma = ((x + 3 * t) ^ (y * 2)).astype(np.uint8)
                r.write(b"FRAME\n" + luma.tobytes() + chroma + chroma)
                d.write(b"FRAME\n" + (luma // 2 * 2).tobytes() + chroma + chroma)

    def score():
        start = time.monotonic()
        vmafx.score(str(tmp_path / "ref.y4m"), str(tmp_path / "dist.y4m"), features=["psnr"])
        return time.monotonic() - start

    # ONE call must last long enough to tell a held GIL from a released one:
    # with the GIL held, this thread stands still for the whole call, so the
    # call's length, not a sum of short calls, is what the gap is held to
    # (a loop of short calls lets this thread run between them).
    frames = 30
    write_clips(frames)
    while (alone := score()) < 0.4 and frames < 30 * 64:
        frames = min(30 * 64, frames * max(2, int(0.6 / max(alone, 0.01)) + 1))
        write_clips(frames)
    took = []
    go = threading.Event()

    def run():
        # Starts scoring only once this thread's loop below runs: a stall
        # inside worker.start() would go unmeasured.
        go.wait()
        took.append(score())

    worker = threading.Thread(target=run)
    worker.start()
    last, longest_gap = time.monotonic(), 0.0
    go.set()
    while worker.is_alive():
        now = time.monotonic()
        longest_gap, last = max(longest_gap, now - last), now
    worker.join()
    assert took, "score failed in the thread"
    assert took[0] > 0.2, f"scoring {frames} frames took only {took[0]:.3f} s: too short to tell"
    # Holding the GIL through the call would stop this loop for all of it.
    assert longest_gap < took[0] / 3, f"this thread stood still {longest_gap:.3f} s of the {took[0]:.3f} s call"


def test_result_plot_is_the_clis_svg(clips, tmp_path):
    d = clips["dir"]
    ref, dist = str(d / "ref8.y4m"), str(d / "dist8.y4m")
    result = vmafx.score(ref, dist, features=["psnr"])
    result.plot(tmp_path / "py.svg")
    run_cli("-r", ref, "-d", dist, "--feature", "psnr", "--plot", str(tmp_path / "cli.svg"))
    svg = (tmp_path / "py.svg").read_text()
    assert svg == (tmp_path / "cli.svg").read_text()
    assert svg.count("<polyline") == 4 and svg.count('class="worst"') == 5
    result.plot(tmp_path / "y.svg", features=["psnr_y"])
    assert (tmp_path / "y.svg").read_text().count("<polyline") == 2
    with pytest.raises(vmafx.Error, match="no feature 'ssim'"):
        result.plot(tmp_path / "x.svg", features=["ssim"])
