"""Segment-parallel scoring on Ray (docs/ray.md).

``score(reference, distorted, segment_frames=...)`` cuts the title into frame
ranges, scores each range as one Ray task (on any node of the cluster; a GPU
task asks Ray for a GPU), and merges the ranges' per-frame values in frame
order into one ``vmafx.Result``: look-ahead features (motion2, motion3) settled,
models scored and every value pooled once over all frames, by the same core
code as a single pass, so the result equals ``vmafx.score`` on the same inputs
as bits, whatever the segment length.

Each task reads its range plus the frames before it that the chosen features
look back at (``look_behind``: motion's previous reference, the five-frame
window's two, speed_temporal's previous distorted picture); the values of those
context frames are dropped. A task that fails (its worker or node lost) is
retried by Ray (``max_retries``); ``Result.tasks`` and ``Result.retries`` say how
many ran and how many were attempts after a first, and ``Result.attempts`` where
each ran and what Ray gave it (its node, CPUs and GPUs).
"""

import os
import time
from dataclasses import dataclass
from os import fspath

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .. import DEFAULT_MODEL, _features, _models, _vmafx

__all__ = ["RayResult", "score"]

# Test hook: a task of this segment index exits its worker process on its
# first attempt (a node or worker lost mid-run), so a test sees Ray retry it.
KILL_FIRST_ATTEMPT_ENV = "VMAFX_RAY_KILL_FIRST_ATTEMPT_OF_SEGMENT"
# Test hook, "<node id>:<directory>": a first attempt that lands on that Ray
# node writes its pid to <directory>/<segment>.held and holds its task (sleeps
# up to HOLD_SECONDS, then scores), so a test can stop the node while it holds
# tasks.
HOLD_FIRST_ATTEMPTS_ENV = "VMAFX_RAY_TEST_HOLD_FIRST_ATTEMPTS_ON_NODE"
HOLD_SECONDS = 120
# Test hook for machines without a GPU: a task given a GPU by Ray (device
# cuda/hip) scores on the CPU instead. Its attempt record says so ("device":
# "cpu"); the Ray request (num_gpus=1) and the placement are the real ones.
GPU_TASKS_ON_CPU_ENV = "VMAFX_RAY_TEST_SCORE_GPU_TASKS_ON_CPU"


@ray.remote(num_cpus=0)
class _Attempts:
    """Counts each segment's attempts: every task asks for its attempt
    number before it scores, so a retried task is counted however it died."""

    def __init__(self):
        self._count = {}
        self._records = []

    def begin(self, segment, record):
        n = self._count.get(segment, 0)
        self._count[segment] = n + 1
        self._records.append(dict(record, segment=segment, attempt=n))
        return n

    def counts(self):
        return dict(self._count)

    def records(self):
        return sorted(self._records, key=lambda r: (r["segment"], r["attempt"]))


def _score_segment(attempts, segment, reference, distorted, first, end, models, features, threads, device,
                   subsample, maps):
    here = ray.get_runtime_context()
    if os.environ.get(GPU_TASKS_ON_CPU_ENV) and ray.get_gpu_ids():
        device = "cpu"
    # What Ray gave this attempt: its node, the resources it holds (CPU,
    # GPU: what the task asked for) and the GPU ids.
    record = {"node": here.get_node_id(), "resources": here.get_assigned_resources(),
              "gpu_ids": [str(g) for g in ray.get_gpu_ids()], "device": device}
    attempt = ray.get(attempts.begin.remote(segment, record))
    if attempt == 0 and os.environ.get(KILL_FIRST_ATTEMPT_ENV) == str(segment):
        os._exit(1)
    hold = os.environ.get(HOLD_FIRST_ATTEMPTS_ENV, "").split(":", 1)
    if attempt == 0 and len(hold) == 2 and hold[0] == record["node"]:
        with open(os.path.join(hold[1], f"{segment}.held"), "w") as f:
            f.write(str(os.getpid()))
        time.sleep(HOLD_SECONDS)
    return _vmafx.score_range(reference, distorted, first, end, models, features, threads, device, subsample, *maps)


@dataclass(frozen=True)
class RayResult:
    """The merged ``vmafx.Result`` (``result``) and how the run went: attempts
    that ran (``tasks``), those after a segment's first (``retries``), the
    frame ranges (``segments``) and one dict per attempt (``attempts``, by
    segment then attempt: segment, attempt, node (Ray's node id), resources
    (what Ray assigned it: ``{"CPU": 1.0, "GPU": 1.0}``), gpu_ids, device)."""

    result: object
    tasks: int
    retries: int
    segments: list
    attempts: list

    def __getattr__(self, name):
        # frames, pooled, aggregates, json(), xml(), csv(), plot(): the result's.
        if name == "result":  # not yet set (copying, unpickling)
            raise AttributeError(name)
        return getattr(self.result, name)


def _ranges(frames, segment_frames):
    if segment_frames < 1:
        raise ValueError(f"segment_frames must be at least 1, not {segment_frames}")
    return [(a, min(a + segment_frames, frames)) for a in range(0, frames, segment_frames)]


def score(reference, distorted, segment_frames=2400, model=DEFAULT_MODEL, features=(), address=None,
          device="cpu", threads=0, subsample=1, max_retries=3, frames=None):
    """Scores ``distorted`` against ``reference`` (paths every node can read)
    in segments of ``segment_frames`` frames, one Ray task each, and returns
    a ``RayResult`` (the merged ``vmafx.Result`` and the task counts).

    model, features, threads, device, subsample: as ``vmafx.score`` (threads
    per task; a task asks Ray for max(threads, 1) CPUs, and for one GPU when
    device is ``cuda``/``hip``). address: the Ray cluster (``"auto"``,
    ``"ray://host:10001"``, ...); None joins the one this process is connected
    to, or starts a local one. max_retries: Ray's retries per task. frames:
    the title's frame count when known (else both inputs are read once to
    count them).
    """
    start = time.monotonic()
    reference, distorted = fspath(reference), fspath(distorted)
    models, features = _models(model), _features(features)
    threads, subsample = int(threads), max(int(subsample), 1)
    if not ray.is_initialized():
        ray.init(address=address, logging_level="warning", log_to_driver=False)
    # Encoded inputs: a demux-only pass maps each frame to its key frame, so
    # a task seeks near its range and decodes forward (y4m: None, read).
    maps = (_vmafx.frame_map(reference), _vmafx.frame_map(distorted))
    if frames is None:
        if None in maps:
            frames = _vmafx.frame_count(reference, distorted)
        elif len(maps[0][0]) != len(maps[1][0]):
            raise _vmafx.Error(f"{reference} has {len(maps[0][0])} frames and {distorted} has {len(maps[1][0])}")
        else:
            frames = len(maps[0][0])
    maps = ray.put(maps)
    ranges = _ranges(int(frames), int(segment_frames))
    gpu = str(device).split(":")[0] in ("cuda", "hip")
    task = ray.remote(_score_segment).options(
        num_cpus=max(threads, 1), num_gpus=1 if gpu else 0, max_retries=int(max_retries),
        retry_exceptions=False,
    )
    # On the driver's node: a lost worker node must not take the counts.
    attempts = _Attempts.options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False),
    ).remote()
    pending = [task.remote(attempts, i, reference, distorted, a, b, models, features, threads, str(device), subsample,
                           maps)
               for i, (a, b) in enumerate(ranges)]
    try:
        parts = ray.get(pending)
        counts = ray.get(attempts.counts.remote())
        records = ray.get(attempts.records.remote())
    finally:
        ray.kill(attempts)
    values = []
    for (a, b), (width, height, chroma, bits, part) in zip(ranges, parts):
        if len(part) != b - a:
            raise _vmafx.Error(f"segment {a}..{b} returned {len(part)} frames: the inputs changed or ended early")
        values.extend(part)
    width, height, chroma, bits = parts[0][:4]
    result = _vmafx.merge(width, height, chroma, bits, values, models, features, threads, subsample,
                          time.monotonic() - start)
    ran = sum(counts.values())
    return RayResult(result=result, tasks=ran, retries=ran - len(ranges), segments=ranges, attempts=records)
