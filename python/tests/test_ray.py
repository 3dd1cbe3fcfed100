"""vmafx.ray on a Ray cluster this test starts on 127.0.0.1 (a head node and a
second worker node, `ray start`, so tasks cross nodes; only the second node
declares a GPU): segmented runs of several lengths equal the vmafx CLI's logs
on the same inputs (y4m and an x265/x264 encoded pair), a task whose worker
dies on its first attempt is retried with the same result, device="cuda" tasks
hold a GPU and run only where one is declared (scoring on the CPU: no GPU
here), a second node stopped while it holds tasks costs only its segments, and
`python -m vmafx.ray` writes the CLI's log. The cluster is stopped however the
tests end.
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
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


class Cluster:
    """A head (no GPU) and a second node declaring one GPU (`--num-gpus=1`: a
    logical resource Ray schedules by; no GPU is needed or used)."""

    COMMON = ["--num-cpus=2", "--object-store-memory=100000000", "--disable-usage-stats"]

    def __init__(self):
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        # The head's GCS declares a node dead after 5 failed health checks
        # 1 s apart (Ray's default: 3 s apart), so a lost-node test is short;
        # a dead raylet fails each check at once, a slow one (a loaded
        # machine) has 5 s to answer.
        self.env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_health_check_period_ms="1000",
                        RAY_health_check_timeout_ms="5000", RAY_health_check_failure_threshold="5")

    def ray_cli(self, *args):
        subprocess.run([RAY, *args], check=True, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def start(self):
        self.ray_cli("start", "--head", "--node-ip-address=127.0.0.1", f"--port={self.port}",
                     "--include-dashboard=false", "--num-gpus=0", *self.COMMON)
        self.start_second_node()

    def start_second_node(self):
        self.ray_cli("start", f"--address={self.address}", "--node-ip-address=127.0.0.1", "--num-gpus=1",
                     *self.COMMON)

    def stop(self):
        subprocess.run([RAY, "stop", "--force"], env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def cluster_nodes(tmp_path_factory):
    c = Cluster()
    try:
        c.start()
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def cluster(cluster_nodes):
    return cluster_nodes.address


def alive_nodes():
    """Ray node id -> its resources, for the nodes alive now."""
    return {n["NodeID"]: n["Resources"] for n in ray.nodes() if n["Alive"]}


def processes_of_node(node_id):
    """The pids of a Ray node's processes on this machine: those started with
    its node id (raylet, agents, log monitor), and their descendants (the
    workers the raylet starts)."""
    parents, node = {}, set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents[int(entry)] = ppid
        if f"node_id={node_id}" in cmdline or f"node-id={node_id}" in cmdline:
            node.add(int(entry))
    grew = True
    while grew:
        children = {pid for pid, ppid in parents.items() if ppid in node} - node
        node |= children
        grew = bool(children)
    return node


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


def test_gpu_tasks_hold_a_gpu_and_run_only_where_one_is(connected, pairs, tmp_path):
    ref, dist = pairs["y4m"]
    expected = cli_json(ref, dist, tmp_path)
    nodes = alive_nodes()
    gpu_nodes = {n for n, resources in nodes.items() if resources.get("GPU")}
    assert len(nodes) == 2 and len(gpu_nodes) == 1, nodes
    # No GPU here: tasks Ray gives a GPU score on the CPU (test hook; their
    # records say device "cpu"). The request and the placement are Ray's own.
    connected({vmafx.ray.GPU_TASKS_ON_CPU_ENV: "1"})
    segments = -(-FRAMES // 2)
    run = vmafx.ray.score(ref, dist, segment_frames=2, features=FEATURES, device="cuda")
    assert without_fps(run.json()) == expected
    assert [a["segment"] for a in run.attempts] == list(range(segments)), run.attempts
    for a in run.attempts:
        assert a["node"] in gpu_nodes, a
        assert (a["resources"].get("GPU"), a["resources"].get("CPU"), len(a["gpu_ids"])) == (1.0, 1.0, 1), a
        assert a["device"] == "cpu"
    # CPU tasks hold no GPU, under the same hook (it acts only on tasks given one).
    run = vmafx.ray.score(ref, dist, segment_frames=2, features=FEATURES, device="cpu")
    assert without_fps(run.json()) == expected
    assert len(run.attempts) == segments
    for a in run.attempts:
        assert ("GPU" not in a["resources"], a["resources"].get("CPU"), a["gpu_ids"]) == (True, 1.0, []), a


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


def test_a_lost_node_costs_only_its_segments(cluster_nodes, connected, pairs, tmp_path):
    """The second node stopped (its processes killed, as a machine lost)
    while it holds tasks: their segments run again on the head, no other
    segment runs twice, and the merged log is the single pass's."""
    ref, dist = pairs["y4m"]
    expected = cli_json(ref, dist, tmp_path)
    nodes = alive_nodes()
    (second,) = [n for n, resources in nodes.items() if resources.get("GPU")]
    (head,) = set(nodes) - {second}
    held = tmp_path / "held"
    held.mkdir()
    connected({vmafx.ray.HOLD_FIRST_ATTEMPTS_ENV: f"{second}:{held}"})
    out = {}

    def score():
        try:
            out["run"] = vmafx.ray.score(ref, dist, segment_frames=1, features=FEATURES, max_retries=2)
        except BaseException as e:  # noqa: BLE001 (reported below)
            out["error"] = e

    scoring = threading.Thread(target=score)
    try:
        scoring.start()
        deadline = time.monotonic() + 120
        while not [f for f in held.iterdir() if f.read_text()]:
            assert scoring.is_alive() and time.monotonic() < deadline, f"no task held on the second node: {out}"
            time.sleep(0.05)
        doomed = processes_of_node(second)
        held_pids = {int(f.read_text()) for f in held.iterdir() if f.read_text()}
        assert held_pids <= doomed, (held_pids, doomed)
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        scoring.join(timeout=180)
        assert not scoring.is_alive(), "the run did not end after the second node was lost"
        assert "error" not in out, out
        run = out["run"]
        assert without_fps(run.json()) == expected
        lost = [a for a in run.attempts if a["node"] == second]
        assert lost and all(a["attempt"] == 0 for a in lost), run.attempts
        assert (run.tasks, run.retries) == (FRAMES + len(lost), len(lost))
        # Only the lost segments ran again, each on the head; the others once.
        again = [a["segment"] for a in run.attempts if a["attempt"] > 0]
        assert sorted(again) == sorted(a["segment"] for a in lost), run.attempts
        last = {a["segment"]: a for a in run.attempts}
        assert sorted(last) == list(range(FRAMES)) and {a["node"] for a in last.values()} == {head}
        # The head's GCS has declared the node dead, or does so shortly.
        deadline = time.monotonic() + 60
        while second in alive_nodes():
            assert time.monotonic() < deadline, "the stopped node is still alive to Ray after 60 s"
            time.sleep(0.2)
    finally:
        scoring.join(timeout=180)
        # The next test finds the cluster whole again.
        cluster_nodes.start_second_node()
