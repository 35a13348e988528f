"""The records of what ran: the live patch solve (:class:`LiveRun`) and the whole image (:class:`WholeRun`).

A run's record is written from what the worker reported
(:mod:`lbdviewer.gui.jobs`): the parameters the run started with, the solver
the core actually ran, the iterations it did, whether it stopped early,
completed or was cancelled, its seconds and metrics. The window shows these
records and exports them; it never rebuilds them from the form.

Three kinds of whole-image run exist (:data:`WHOLE_KINDS`): the paper's
patterns on the open image (``"pattern"``), a library descriptor's features
of the open image inverted as ``lbdviewer extract`` + ``invert`` do
(``"library"``), and a feature file's bits (``"features"``).

Qt-free.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lbdviewer.gui import jobs
from lbdviewer.gui.model import descriptor_label

#: States of a run.
STATUSES = ("running", "completed", "cancelled", "failed")
#: What a whole-image run inverts (see the module notes).
WHOLE_KINDS = ("pattern", "library", "features")
#: Parameters a library or feature-file inversion uses (the rest of the form plays no part in it).
FEATURE_RUN_PARAMETERS = ("mode", "iterations", "sparsity")


@dataclass(frozen=True)
class LiveRun:
    """The live solver on one patch: what it was started with and what it has done.

    ``update`` is the last :class:`~lbdviewer.gui.jobs.LiveUpdate` (None
    before the first iteration); ``patch`` the true patch (None for a
    feature file without its image); ``keypoint`` the
    :class:`~lbdviewer.gui.library_jobs.KeypointView` solved (None for the
    paper's patterns, which solve the patch at ``patch_xy``).
    """

    parameters: dict
    patch_xy: tuple
    patch: np.ndarray | None
    method: str
    status: str = "running"
    update: object = None
    keypoint: object = None

    @property
    def iterations_run(self):
        return 0 if self.update is None else self.update.iteration

    @property
    def descriptor(self):
        """The descriptor whose bits are solved."""
        return self.parameters["family"] if self.keypoint is None else self.keypoint.descriptor

    def summary(self):
        """One line on the run's state, for the live panel.

        Examples
        --------
        >>> LiveRun({}, (0, 0), np.zeros((2, 2)), "biht").summary()
        'iteration 0'
        """
        if self.update is None:
            return "iteration 0"
        if self.status == "completed":
            return self.update.stop_reason()
        if self.status == "cancelled":
            return f"stopped by you at iteration {self.update.iteration}"
        return f"iteration {self.update.iteration}"


@dataclass(frozen=True)
class WholeRun:
    """A whole-image reconstruction (or feature inversion) as it ran.

    Attributes
    ----------
    parameters : dict
        The parameters the run started with (never the form's later values).
    method, mode : str
        The solver the core ran and the mode (joint or patchwise).
    source : str
        The image source it ran on (path, ``sample:NAME`` or feature file).
    status : {"running", "completed", "cancelled", "failed"}
    fraction : float
        Share of the work done.
    estimate : ndarray or None
        The latest whole-image estimate (the result's image when completed).
    result : lbdviewer.reconstruction.image.ImageResult or None
        Only for a completed run.
    metrics : dict or None
        Against the original (or the image compared with), when there is one.
    iterations_run : int or None
        Iterations run: the whole-image solver's so far, and at the end the
        core's count (for a patchwise run the most any patch ran).
    stale : bool
        The parameters changed since the run: it is no longer current.
    error : str or None
        Why a failed run failed.
    kind : str
        One of :data:`WHOLE_KINDS`.
    descriptor : str or None
        The library descriptor of a ``"library"`` or ``"features"`` run.
    site_count : int
        Patch sites (or keypoints) the run started with.
    started : float
        ``time.perf_counter()`` at the start.
    seconds : float or None
        Wall-clock time from start to end (the core's own timing when it completed).
    metrics_pending : bool
        The result is in; its metrics are being computed on a worker.
    stage : str
        ``"describing"``, ``"solving"`` or ``"metrics"``.
    compared_with : str or None
        The image's name when the metrics compare with an image that is not
        the features' original (File > Compare with image).
    shown : lbdviewer.evaluation.display.Stretched or None
        The latest estimate mapped for display by the worker (:func:`~lbdviewer.gui.jobs.with_display`).
    """

    parameters: dict
    method: str
    mode: str
    source: str
    status: str = "running"
    fraction: float = 0.0
    estimate: np.ndarray | None = None
    result: object = None
    metrics: dict | None = None
    iterations_run: int | None = None
    stale: bool = False
    error: str | None = None
    kind: str = "pattern"
    descriptor: str | None = None
    site_count: int = 0
    started: float = 0.0
    seconds: float | None = None
    metrics_pending: bool = False
    stage: str = "solving"
    compared_with: str | None = None
    shown: object = None

    @property
    def features(self):
        """The run inverts features (a library's or a file's), not the paper's patterns."""
        return self.kind != "pattern"

    @property
    def iterations(self):
        """The iteration budget of the solver that ran (of a cancelled run: the one it was given)."""
        if self.result is not None:
            return int(self.result.iterations)
        if self.features:  # feature_updates gives the inversion the form's count
            return int(self.parameters["iterations"])
        return jobs.whole_image_budget(self.parameters)

    @property
    def stopped_early(self):
        """True when the whole-image solver ended at a fixed point before its budget (None if unknown)."""
        if self.status != "completed" or self.iterations_run is None or self.result is None:
            return None
        return self.iterations_run < self.result.iterations

    @property
    def coverage(self):
        """Share of the image's pixels some patch or keypoint reaches (None before the result)."""
        return None if self.result is None else float(np.mean(self.result.covered))

    def short_title(self):
        """The reconstruction canvas's own title: what it shows, in a word or two (the state line says more).

        Examples
        --------
        >>> WholeRun({}, "consistency", "joint", "x", status="cancelled").short_title()
        'Reconstruction (cancelled)'
        """
        if self.status == "completed":
            return "Reconstruction (outdated)" if self.stale else "Reconstruction"
        return f"Reconstruction ({self.status})"

    def title(self):
        """The run's state in a few words, read across the panel (what ran is :meth:`label`).

        Examples
        --------
        >>> from dataclasses import replace
        >>> run = WholeRun({"family": "brief", "offset": 8, "sites": "grid"}, "consistency", "joint", "x")
        >>> run.title()
        'Running: 0 %'
        >>> replace(run, status="cancelled", fraction=0.47, estimate=np.zeros((4, 4))).title()
        'Cancelled at 47 %: partial estimate'
        >>> replace(run, status="completed", stale=True).title()
        'Outdated: parameters changed (Ctrl+R to run again)'
        """
        if self.status == "running":
            if self.stage == "describing":
                return f"Describing the image: {100 * self.fraction:.0f} %"
            if self.metrics_pending:
                return "Computing the metrics…"
            return f"Running: {100 * self.fraction:.0f} %"
        if self.status == "cancelled":
            if self.estimate is None:
                return "Cancelled before any estimate"
            return f"Cancelled at {100 * self.fraction:.0f} %: partial estimate"
        if self.status == "failed":
            return "Reconstruction failed"
        if self.stale:
            return "Outdated: parameters changed (Ctrl+R to run again)"
        if self.compared_with:
            return f"Done; compared with {self.compared_with}, not its original"
        return "Done"

    def label(self):
        """What ran, in a few words: descriptor, mode, solver, sites.

        Examples
        --------
        >>> WholeRun({"family": "brief", "offset": 8, "sites": "grid"}, "consistency", "joint", "x").label()
        'BRIEF: joint consistency, N_off 8'
        >>> WholeRun({}, "consistency", "joint", "x", kind="features", descriptor="orb", site_count=500).label()
        'ORB bits of 500 keypoints (feature file): joint consistency'
        """
        p = self.parameters
        if self.features:
            origin = "feature file" if self.kind == "features" else "extracted"
            return (f"{descriptor_label(self.descriptor)} bits of {self.site_count} keypoints ({origin}): "
                    f"{self.mode} {self.method}")
        where = f"N_off {p['offset']}" if p["sites"] == "grid" else "FAST"
        return f"{descriptor_label(p['family'])}: {self.mode} {self.method}, {where}"

    def metrics_text(self):
        """The metrics line under the panel; empty when there is nothing current to report."""
        if self.status != "completed" or self.result is None:
            return ""
        parts = []
        if self.metrics:
            against = f" vs {self.compared_with}" if self.compared_with else ""
            parts.append(f"PSNR {self.metrics['psnr']:.2f} dB{against}")
            parts.append(f"r = {self.metrics['correlation']:.3f}")
        elif self.metrics_pending:
            parts.append("computing the metrics…")
        if self.result.solver_bit_consistency is not None:
            parts.append(f"bits {100 * self.result.solver_bit_consistency:.1f} %")
        if self.coverage is not None and self.coverage < 1.0:
            parts.append(f"covers {100 * self.coverage:.0f} %")
        if self.stopped_early:
            parts.append(f"stopped at iteration {self.iterations_run} of {self.result.iterations}")
        parts.append(f"{self.result.seconds:.1f} s")
        text = "  ·  ".join(parts)
        return f"Previous run: {text}" if self.stale else text
