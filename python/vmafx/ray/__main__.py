"""``python -m vmafx.ray``: the vmafx command's main options, scored on Ray
in segments (docs/ray.md); writes the log and prints the pooled scores."""

import argparse
import sys

from .. import Error
from . import score


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m vmafx.ray", description=__doc__)
    p.add_argument("-r", "--reference", required=True, help="reference file (y4m, or any format FFmpeg decodes)")
    p.add_argument("-d", "--distorted", required=True, help="distorted file")
    p.add_argument("-m", "--model", action="append", help="model, as vmafx --model (repeatable; default vmaf_v0.6.1)")
    p.add_argument("--no-model", action="store_true", help="features only")
    p.add_argument("--feature", action="append", default=[], help="feature, as vmafx --feature (repeatable)")
    p.add_argument("-o", "--output", help="log path (default: none)")
    fmt = p.add_mutually_exclusive_group()
    for f in ("xml", "json", "csv", "sub"):
        fmt.add_argument(f"--{f}", dest="log_format", action="store_const", const=f, help=f"{f} log")
    p.add_argument("--threads", type=int, default=0, help="threads per task")
    p.add_argument("--subsample", type=int, default=1)
    p.add_argument("--device", default="cpu", help="cpu, cuda[:N] or hip[:N] (GPU tasks ask Ray for a GPU)")
    p.add_argument("--segment-frames", type=int, default=2400, help="frames per Ray task")
    p.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS, or a local cluster)")
    p.add_argument("--max-retries", type=int, default=3, help="Ray retries per task")
    p.add_argument("--plot", help="also draw the per-frame scores into this SVG")
    a = p.parse_args(argv)
    model = None if a.no_model else (a.model or "vmaf_v0.6.1")
    try:
        run = score(a.reference, a.distorted, segment_frames=a.segment_frames, model=model, features=a.feature,
                    address=a.address, device=a.device, threads=a.threads, subsample=a.subsample,
                    max_retries=a.max_retries)
    except Error as e:
        print(f"vmafx.ray: {e}", file=sys.stderr)
        return 1
    if a.output:
        # As the vmafx command: the format flag, else the output's extension, else XML.
        ext = a.output.rsplit(".", 1)[-1].lower() if "." in a.output else ""
        fmt = a.log_format or (ext if ext in ("xml", "json", "csv", "sub") else "xml")
        with open(a.output, "w") as f:
            f.write(getattr(run.result, fmt)())
    if a.plot:
        run.result.plot(a.plot)
    print(f"{len(run.segments)} segments, {run.tasks} tasks ran, {run.retries} retried", file=sys.stderr)
    # The pooled means, as the vmafx command's score line.
    for name, pooled in run.result.pooled.items():
        if name.startswith("vmaf") or not model:
            print(f"{name}: {pooled['mean']:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
