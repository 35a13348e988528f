"""The reports an inversion of features yields while it runs: :class:`InversionProgress`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lbdviewer.reconstruction.image import ImageResult

__all__ = ["InversionProgress"]


@dataclass(frozen=True)
class InversionProgress:
    """One report of :func:`iter_invert_features`.

    ``done`` of ``total`` work units (keypoints or solver iterations) are
    finished; ``image`` is the whole-image estimate so far, shape ``(H, W)``
    in ``[0, 1]``, or None when the report carries none; ``iterations_run``
    counts the iterations the solver has run so far (joint: the whole-image
    solver's; patchwise: the most any keypoint's BIHT ran; None where no
    iterative solver runs, AKAZE's closed form); ``result`` is set on the
    last report only.
    """

    done: int
    total: int
    image: np.ndarray | None = None
    result: ImageResult | None = None
    iterations_run: int | None = None
