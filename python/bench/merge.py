"""How fast vmafx.ray's driver merges a title (docs/ray.md, "The merge"): one
segment's extracted values of vmaf_v0.6.1 with psnr, repeated to 17,280 and 172,800
frames (a 2-hour title at 24 fps), merged and rendered as a JSON log.

    python python/bench/merge.py REF.y4m DIST.y4m     (8 frames or more; vmafx installed)
"""
import sys
import time

from vmafx import _vmafx

ref, dist = sys.argv[1], sys.argv[2]
w, h, chroma, bits, part = _vmafx.score_range(ref, dist, 0, 8, ["vmaf_v0.6.1"], ["psnr"], 0, "cpu", 1, None, None)
for n in (17280, 172800):
    values = [part[1 + i % 7] for i in range(n)]
    t = time.perf_counter()
    r = _vmafx.merge(w, h, chroma, bits, values, ["vmaf_v0.6.1"], ["psnr"], 0, 1, 1.0)
    merge = time.perf_counter() - t
    t = time.perf_counter()
    log = r.json()
    js = time.perf_counter() - t
    print(f"{n} frames: merge {merge:.2f} s ({n/merge:,.0f} frames/s), json log {js:.2f} s, {len(log)/1e6:.1f} MB, {len(part[0])} values a frame")
