"""What the GPU-host scripts (gpu-ffmpeg-run.py, gpu-ffmpeg-libvmaf-run.py)
share about that host's environment."""

import os
import site


def find_nvrtc():
    """Sets VMAFX_NVRTC_LIB to the first NVRTC found (the CUDA toolkit, then
    python's nvidia wheels) unless it is set; leaves it unset when none is."""
    if os.environ.get("VMAFX_NVRTC_LIB"):
        return
    cands = ["/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12"]
    for sp in site.getsitepackages():
        cands.append(os.path.join(sp, "nvidia/cu13/lib/libnvrtc.so.13"))
        cands.append(os.path.join(sp, "nvidia/cuda_nvrtc/lib/libnvrtc.so.12"))
    for c in cands:
        if os.path.exists(c):
            os.environ["VMAFX_NVRTC_LIB"] = c
            return
