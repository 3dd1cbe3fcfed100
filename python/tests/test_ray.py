"""vmafx.ray on a Ray cluster this test starts on 127.0.0.1 (a head node and a
second worker node, `ray start`, so tasks cross nodes): segmented runs of
several lengths equal the vmafx CLI's logs on the same inputs (y4m and an
x265/x264 encoded pair), a task whose worker dies on its first attempt is
retried with the same result, and `python -m vmafx.ray` writes the CLI's log.
The cluster is stopped however the tests end.
"""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is an extra: VMAFX_PY_EXTRAS=test,ray (scripts/python-test's default)")

import vmafx  # noqa: E402
import vmafx.ray  # noqa: E402
from test_vmafx import FRAMES, distort, ffmpeg, run_cli, synthetic, without_fps, write_y4m  # noqa: E402

RAY = str(Path(sys.executable).with_name("ray"))
FEATURES = ["psnr=enable_apsnr=true", "float_motion"]
# Lengths 1, 2, 7 and the whole title.
LENGTHS = [1, 2, 7, FRAMES]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    port = free_port()
    address = f"127.0.0.1:{port}"
    common = ["--num-cpus=2", "--object-store-memory=100000000", "--disable-usage-stats"]
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")

    def ray_cli(*args):
        subprocess.run([RAY, *args], check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    try:
        ray_cli("start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--include-dashboard=false",
                *common)
        ray_cli("start", f"--address={address}", "--node-ip-address=127.0.0.1", *common)
        yield address
    finally:
        subprocess.run([RAY, "stop", "--force"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture
def connected(cluster):
    """A driver connected to the cluster; `connected(env)` reconnects with
    environment variables set in every task's worker."""
    def connect(env=None):
        if ray.is_initialized():
            ray.shutdown()
        ray.init(address=cluster, runtime_env={"env_vars": env or {}}, logging_level="warning",
                 log_to_driver=False)
        return cluster
    connect()
    yield connect
    ray.shutdown()


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    d = tmp_path_factory.mktemp("rayclips")
    ref = synthetic(8, 5)
    write_y4m(d / "ref.y4m", ref, 8)
    write_y4m(d / "dist.y4m", distort(ref, 8, 6), 8)
    # Key frames every 4 frames, B-frames between: tasks start mid-GOP.
    ffmpeg("-i", str(d / "ref.y4m"), "-c:v", "libx265", "-x265-params", "log-level=none:keyint=4:min-keyint=4",
           "-crf", "10", str(d / "ref.mkv"))
    ffmpeg("-i", str(d / "ref.y4m"), "-c:v", "libx264", "-g", "4", "-bf", "2", "-crf", "35", "-preset", "veryfast",
           str(d / "x264.mp4"))
    return {"y4m": (d / "ref.y4m", d / "dist.y4m"), "encoded": (d / "ref.mkv", d / "x264.mp4")}


def cli_json(ref, dist, tmp_path, features=FEATURES):
    log = tmp_path / "cli.json"
    args = ["-r", str(ref), "-d", str(dist), "--json", "-o", str(log)]
    for f in features:
        args += ["--feature", f]
    run_cli(*args)
    return without_fps(log.read_text())


@pytest.mark.parametrize("inputs", ["y4m", "encoded"])
def test_segments_equal_the_cli(connected, pairs, tmp_path, inputs):
    ref, dist = pairs[inputs]
    expected = cli_json(ref, dist, tmp_path)
    for length in LENGTHS:
        run = vmafx.ray.score(ref, dist, segment_frames=length, features=FEATURES)
        segments = -(-FRAMES // length)
        assert (run.tasks, run.retries, len(run.segments)) == (segments, 0, segments), length
        assert without_fps(run.json()) == expected, f"{inputs}, segments of {length}"
        assert run.aggregates["apsnr_y"] > 0
    # Python floats from a segmented run are the single pass's bits.
    single = vmafx.score(ref, dist, features=FEATURES)
    assert run.frames == single.frames and run.pooled == single.pooled


def test_a_killed_task_is_retried_with_the_same_result(connected, pairs, tmp_path):
    ref, dist = pairs["y4m"]
    expected = cli_json(ref, dist, tmp_path)
    connected({vmafx.ray.KILL_FIRST_ATTEMPT_ENV: "1"})
    run = vmafx.ray.score(ref, dist, segment_frames=3, features=FEATURES, max_retries=2)
    segments = -(-FRAMES // 3)
    assert (run.tasks, run.retries) == (segments + 1, 1)
    assert without_fps(run.json()) == expected
    # Without retries the lost worker fails the run, saying so.
    with pytest.raises(ray.exceptions.RayError):
        vmafx.ray.score(ref, dist, segment_frames=3, features=FEATURES, max_retries=0)


def test_module_command_writes_the_cli_log(cluster, pairs, tmp_path):
    ref, dist = pairs["y4m"]
    expected = cli_json(ref, dist, tmp_path, features=["psnr"])
    out = tmp_path / "ray.json"
    done = subprocess.run(
        [sys.executable, "-m", "vmafx.ray", "-r", str(ref), "-d", str(dist), "--feature", "psnr",
         "--segment-frames", "3", "--address", cluster, "-o", str(out)],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    assert without_fps(out.read_text()) == expected
    mean = vmafx.score(ref, dist, features=["psnr"]).pooled["vmaf"]["mean"]
    assert "vmaf: %.6f\n" % mean in done.stdout, done.stdout
