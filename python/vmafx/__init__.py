"""vmafx: VMAF and companion video-quality metrics, bit-exact with libvmaf 3.2.0.

``score(reference, distorted, ...)`` scores two files (y4m, or anything FFmpeg
decodes); ``Context(width, height, pix_fmt, ...)`` scores frames pushed as numpy
arrays. Both return a ``Result``: ``frames``, ``pooled``, ``aggregates`` and the
CLI's logs (``json()``, ``xml()``, ``csv()``, ``sub()``). Errors raise
``vmafx.Error`` with the core's message. See docs/python.md.
"""

from os import fspath

from . import _vmafx
from ._vmafx import LIBVMAF_VERSION, Error, Result

__all__ = ["Context", "Error", "LIBVMAF_VERSION", "Result", "score"]

DEFAULT_MODEL = "vmaf_v0.6.1"


def _models(model):
    """A model argument as the core's list: None for none, one name, path or
    CLI ``--model`` string, or a sequence of them."""
    if model is None:
        return []
    if isinstance(model, str):
        return [model]
    return [str(m) for m in model]


def _features(features):
    if isinstance(features, str):
        return [features]
    return [str(f) for f in features]


def score(reference, distorted, model=DEFAULT_MODEL, features=(), threads=0, device="cpu", subsample=1):
    """Scores ``distorted`` against ``reference`` (paths).

    model: a built-in name (``"vmaf_v0.6.1"``, ``"vmaf_4k_v0.6.1"``, ...), a
    JSON model path, a CLI ``--model`` string (``"version=vmaf_v0.6.1:name=v"``),
    a list of them, or None for features only. features: CLI ``--feature``
    strings (``"psnr"``, ``"cambi=full_ref=true"``). threads: worker threads (0
    scores on the calling thread). device: ``"cpu"``, ``"cuda[:N]"`` or
    ``"hip[:N]"``. subsample: score every Nth frame.
    """
    return _vmafx.score(
        fspath(reference), fspath(distorted), _models(model), _features(features),
        int(threads), str(device), int(subsample),
    )


class Context:
    """Scores frames pushed as arrays: ``push(reference_planes,
    distorted_planes)`` per frame, then ``flush()`` for the ``Result``.

    pix_fmt: an FFmpeg planar format name (``yuv420p``, ``yuv422p10le``,
    ``gray16le``, ...). Each frame is a list of 2-D arrays, one per plane (Y,
    or Y, U, V), uint8 for 8 bits and uint16 above, read in place when each
    row's samples are contiguous (C order, or rows of a wider array): leave
    them unchanged until ``flush``. Other arrays (Fortran order, a step
    between columns, rows in reverse) are copied; ``planes_in_place``,
    ``planes_copied`` and ``bytes_copied`` say which path each plane took.
    """

    def __init__(self, width, height, pix_fmt="yuv420p", model=DEFAULT_MODEL, features=(), threads=0,
                 device="cpu", subsample=1):
        self._inner = _vmafx.Context(
            int(width), int(height), str(pix_fmt), _models(model), _features(features),
            int(threads), str(device), int(subsample),
        )

    def push(self, reference_planes, distorted_planes):
        self._inner.push(list(reference_planes), list(distorted_planes))

    def flush(self):
        return self._inner.flush()

    @property
    def planes_in_place(self):
        """Planes pushed so far that were read in the array's own memory."""
        return self._inner.planes_in_place

    @property
    def planes_copied(self):
        """Planes pushed so far that were copied (rows not contiguous)."""
        return self._inner.planes_copied

    @property
    def bytes_copied(self):
        """Bytes of those copies."""
        return self._inner.bytes_copied
