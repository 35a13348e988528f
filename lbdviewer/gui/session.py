"""The document the app works on: what is loaded and what has run, without Qt.

:class:`Session` holds the image (or feature file), the pattern and operator
made from the parameters, the whole-image patch sites, and one record per
kind of run (the live patch solver, the whole image). A run's record is
written from what the worker reported (:mod:`lbdviewer.gui.jobs`): the
parameters the run started with, the solver the core actually ran, the
iterations it did, whether it stopped early, completed or was cancelled, its
seconds and metrics. The window shows these records and exports them; it
never rebuilds them from the form.

Views subscribe to changes as they do to :class:`~lbdviewer.gui.model.Parameters`:
``callback(name, value)`` with ``name`` one of :data:`EVENTS`.

This module must not import Qt (its tests run without a display).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace

import numpy as np

from lbdviewer.gui import jobs
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.reconstruction.image import default_method

#: What subscribers hear about: a new image, a new pattern/operator, new
#: sites, a live run's record, the whole-image run's record.
EVENTS = ("image", "pattern", "sites", "live", "whole")
#: States of a run.
STATUSES = ("running", "completed", "cancelled", "failed")


@dataclass(frozen=True)
class LiveRun:
    """The live solver on one patch: what it was started with and what it has done.

    ``update`` is the last :class:`~lbdviewer.gui.jobs.LiveUpdate` (None
    before the first iteration).
    """

    parameters: dict
    patch_xy: tuple
    patch: np.ndarray
    method: str
    status: str = "running"
    update: object = None

    @property
    def iterations_run(self):
        return 0 if self.update is None else self.update.iteration

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
    """A whole-image reconstruction (or feature-file inversion) as it ran.

    Attributes
    ----------
    parameters : dict
        The parameters the run started with (never the form's later values).
    method, mode : str
        The solver the core ran and the mode (joint or patchwise).
    status : {"running", "completed", "cancelled", "failed"}
    fraction : float
        Share of the work done.
    estimate : ndarray or None
        The latest whole-image estimate (the result's image when completed).
    result : lbdviewer.reconstruction.image.ImageResult or None
        Only for a completed run.
    metrics : dict or None
        Against the original, when there is one.
    iterations_run : int or None
        Iterations run: the whole-image solver's so far, and at the end the
        core's count (for a patchwise run the most any patch ran).
    stale : bool
        The parameters changed since the run: it is no longer current.
    source : str
        The image source it ran on (path, ``sample:NAME`` or feature file).
    error : str or None
        Why a failed run failed.
    features : bool
        The run inverts a feature file (no pixels) rather than the image's own descriptors.
    site_count : int
        Patch sites the run started with.
    started : float
        ``time.perf_counter()`` at the start.
    seconds : float or None
        Wall-clock time from start to end (the core's own timing when it completed).
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
    features: bool = False
    site_count: int = 0
    started: float = 0.0
    seconds: float | None = None

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

    def title(self):
        """The reconstruction panel's title for this run: its state first (titles elide at the end).

        Examples
        --------
        >>> run = WholeRun({"family": "brief", "offset": 8, "sites": "grid"}, "consistency", "joint", "x")
        >>> run.title()
        'Running 0 % — BRIEF: joint consistency, N_off 8'
        >>> replace(run, status="cancelled", fraction=0.4, estimate=np.zeros((4, 4))).title()
        'Cancelled at 40 %: partial estimate, not a result'
        """
        if self.status == "running":
            return f"Running {100 * self.fraction:.0f} % — {self.label()}"
        if self.status == "cancelled":
            if self.estimate is None:
                return "Cancelled before any estimate"
            return f"Cancelled at {100 * self.fraction:.0f} %: partial estimate, not a result"
        if self.status == "failed":
            return "Reconstruction failed"
        if self.stale:
            return f"Outdated: parameters changed (Ctrl+R) — was {self.label()}"
        return self.label()

    def label(self):
        """What ran, in a few words: family, mode, solver, sites."""
        p = self.parameters
        if self.features:
            return f"Inverted from {p.get('descriptor', '?')} bits alone ({self.method})"
        where = f"N_off {p['offset']}" if p["sites"] == "grid" else "FAST"
        return f"{p['family'].upper()}: {self.mode} {self.method}, {where}"

    def metrics_text(self):
        """The metrics line under the panel; empty when there is nothing current to report."""
        if self.status != "completed" or self.result is None:
            return ""
        parts = []
        if self.metrics:
            parts.append(f"PSNR {self.metrics['psnr']:.2f} dB")
            parts.append(f"r = {self.metrics['correlation']:.3f}")
        if self.result.solver_bit_consistency is not None:
            parts.append(f"bits {100 * self.result.solver_bit_consistency:.1f} %")
        if self.stopped_early:
            parts.append(f"stopped at iteration {self.iterations_run} of {self.result.iterations}")
        parts.append(f"{self.result.seconds:.1f} s")
        text = "  ·  ".join(parts)
        return f"Previous run: {text}" if self.stale else text


@dataclass
class Session:
    """The open document: image or feature file, pattern, operator, sites, runs.

    Examples
    --------
    >>> from lbdviewer.gui.model import Parameters
    >>> session = Session()
    >>> heard = []
    >>> session.subscribe(lambda name, value: heard.append(name))
    >>> session.set_image(np.random.default_rng(0).random((40, 40)), "sample:noise", sha256="0" * 64)
    >>> session.rebuild(Parameters(patch_size=16, m=64, offset=8).as_dict())
    >>> heard
    ['image', 'pattern', 'sites']
    >>> session.patch_at(20, 2).shape, len(session.sites)
    ((16, 16), 16)
    """

    image: np.ndarray | None = None
    source: str | None = None
    sha256: str | None = None
    start_xy: tuple = (0, 0)
    preview: object = None
    features: object = None
    features_source: str | None = None
    pattern: object = None
    operator: DescriptorOperator | None = None
    parameters: dict = field(default_factory=dict)
    sites: np.ndarray = field(default_factory=lambda: np.empty((0, 2), dtype=np.int64))
    live: LiveRun | None = None
    whole: WholeRun | None = None
    _subscribers: list = field(default_factory=list, repr=False)

    # -- notifications -------------------------------------------------------
    def subscribe(self, callback):
        """Call ``callback(name, value)`` after every change (``name`` in :data:`EVENTS`)."""
        self._subscribers.append(callback)

    def _emit(self, name, value):
        for callback in list(self._subscribers):
            callback(name, value)

    # -- the document --------------------------------------------------------
    def set_image(self, image, source, *, sha256=None, start_xy=None, preview=None, features=None):
        """Open a float image (H, W) in [0, 1]; forget the previous document and every run.

        ``start_xy`` is where the patch selector starts (default: the most
        textured patch of the current patch size, :func:`~lbdviewer.gui.jobs.textured_position`);
        ``preview`` is what views draw of a large image (:func:`~lbdviewer.gui.jobs.make_preview`);
        ``features`` is set by :meth:`set_features`.
        """
        image = np.ascontiguousarray(image, dtype=np.float64)
        if image.ndim != 2:
            raise ValueError(f"image must be 2-D (H, W), got shape {image.shape}")
        if start_xy is None:
            size = self.parameters.get("patch_size", 32)
            start_xy = jobs.textured_position(image, size) if min(image.shape) >= size else (0, 0)
        self.image, self.source, self.sha256, self.start_xy = image, source, sha256, tuple(start_xy)
        self.preview = preview
        self.features, self.features_source = features, None if features is None else source
        self.live = self.whole = None
        self._emit("image", image)

    def set_features(self, features, source, *, sha256=None):
        """Open a feature file: an empty canvas of its image size (no pixels), its keypoints, no run yet."""
        height, width = features.image_shape
        self.set_image(np.zeros((height, width)), source, sha256=sha256, start_xy=(0, 0), features=features)

    def is_original_of_features(self, image):
        """Is ``image`` (just opened) the size of the open feature file's image?"""
        return self.features is not None and tuple(image.shape) == tuple(self.features.image_shape)

    def set_features_original(self, image, source, *, sha256=None, preview=None):
        """Open the original of the open feature file: the inversion stays, now with metrics."""
        self.image = np.ascontiguousarray(image, dtype=np.float64)
        self.source, self.sha256, self.preview = source, sha256, preview
        self._emit("image", self.image)
        if self.whole is not None and self.whole.result is not None:
            self._set_whole(replace(self.whole, metrics=jobs.result_metrics(self.image, self.whole.result)))

    @property
    def has_pixels(self):
        """An image is open (not only a feature file's keypoints on an empty canvas)."""
        return self.image is not None and (self.features is None or self.source != self.features_source)

    @property
    def name(self):
        """The document's short name (file name or sample name)."""
        if self.source is None:
            return ""
        return self.source.split(":", 1)[1] if self.source.startswith("sample:") else os.path.basename(self.source)

    # -- parameters -> pattern, operator, sites ----------------------------------
    def rebuild(self, parameters):
        """Make the pattern, operator and sites of ``parameters`` (a dict); mark older runs stale.

        Raises ``ValueError`` (from the core) and changes nothing when the
        parameters cannot make a pattern.
        """
        pattern = jobs.pattern_for(parameters)
        operator = DescriptorOperator(pattern)
        self.pattern, self.operator, self.parameters = pattern, operator, dict(parameters)
        self._emit("pattern", pattern)
        self.update_sites()
        if self.whole is not None and self.whole.status != "running" and not self.whole.features:
            stale = self.whole.parameters != self.parameters
            if stale != self.whole.stale:
                self._set_whole(replace(self.whole, stale=stale))

    def update_sites(self):
        """The whole-image patch sites (grid or FAST keypoints) for the current parameters."""
        if self.image is None or not self.parameters:
            return
        if min(self.image.shape) < self.parameters["patch_size"]:
            self.sites = np.empty((0, 2), dtype=np.int64)  # no patch fits: start_whole says so
        else:
            self.sites = jobs.image_sites(self.image, self.parameters)
        self._emit("sites", self.sites)

    def patch_at(self, x, y):
        """The patch of the current pattern's size with top-left corner (x, y) = (column, row)."""
        size = self.pattern.patch_size
        return self.image[y : y + size, x : x + size]

    # -- the live run ------------------------------------------------------------
    def start_live(self, patch_xy):
        """Record a live run on the patch at ``patch_xy``; return the generator a worker runs.

        Raises ``ValueError`` when there are no pixels (a feature file without its original).
        """
        if not self.has_pixels:
            raise ValueError("a feature file has no pixels: open its original image to solve patches")
        patch = np.array(self.patch_at(*patch_xy))
        self.live = LiveRun(dict(self.parameters), tuple(int(v) for v in patch_xy), patch,
                            self.parameters["solver"])
        self._emit("live", self.live)
        return jobs.live_updates(self.operator, patch, self.parameters)

    def live_progress(self, update):
        if self.live is not None:
            self.live = replace(self.live, update=update)
            self._emit("live", self.live)

    def live_ended(self, completed):
        if self.live is not None and self.live.status == "running":
            self.live = replace(self.live, status="completed" if completed else "cancelled")
            self._emit("live", self.live)

    # -- the whole-image run -----------------------------------------------------
    def start_whole(self):
        """Record a whole-image run with the current parameters; return the generator a worker runs.

        Raises ``ValueError`` when no patch site fits in the image.
        """
        if len(self.sites) == 0:
            raise ValueError("no patch site fits in the image with these parameters")
        p = dict(self.parameters)
        self._set_whole(WholeRun(p, jobs.whole_image_method(p), p["mode"], self.source,
                                 site_count=len(self.sites), started=time.perf_counter()))
        return jobs.whole_image_updates(self.image, self.pattern, self.sites, p)

    def start_features(self):
        """Record the inversion of the open feature file; return the generator a worker runs."""
        p = {**self.parameters, "features": self.features_source, "descriptor": self.features.descriptor}
        self._set_whole(WholeRun(p, default_method("joint", True), "joint", self.features_source, features=True,
                                 site_count=len(self.features.keypoints.x), started=time.perf_counter()))
        return jobs.feature_updates(self.features, self.parameters)

    def whole_progress(self, update):
        """Take a :class:`~lbdviewer.gui.jobs.WholeUpdate` from the running job."""
        if self.whole is None or self.whole.status != "running":
            return
        run = replace(self.whole, fraction=update.fraction,
                      estimate=update.image if update.image is not None else self.whole.estimate,
                      iterations_run=update.iterations_run if update.iterations_run is not None
                      else self.whole.iterations_run)
        if update.result is not None:
            metrics = update.metrics
            if metrics is None and self.whole.features and self.source != self.features_source:
                metrics = jobs.result_metrics(self.image, update.result)
            ran = update.result.iterations_run  # the core's count (patchwise: the most any patch ran)
            run = replace(run, result=update.result, method=update.result.method, mode=update.result.mode,
                          estimate=update.result.image, metrics=metrics, seconds=float(update.result.seconds),
                          iterations_run=ran if ran is not None else run.iterations_run)
        self._set_whole(run)

    def whole_ended(self, completed):
        """The job ended: completed (with its result) or cancelled (what it estimated so far stays partial)."""
        if self.whole is None or self.whole.status != "running":
            return
        if completed and self.whole.result is not None:
            stale = not self.whole.features and self.whole.parameters != self.parameters  # edited while it ran
            self._set_whole(replace(self.whole, status="completed", fraction=1.0, stale=stale))
        else:
            self._set_whole(replace(self.whole, status="cancelled", result=None, metrics=None,
                                    seconds=time.perf_counter() - self.whole.started))

    def whole_failed(self, message):
        if self.whole is not None:
            self._set_whole(replace(self.whole, status="failed", error=message, result=None, metrics=None))

    def _set_whole(self, run):
        self.whole = run
        self._emit("whole", run)

    # -- what can be exported ----------------------------------------------------------
    def has_whole_result(self):
        """A completed whole-image run exists (stale or not)."""
        return self.whole is not None and self.whole.status == "completed"

    def live_ended_with_update(self):
        """The live run has ended (completed or stopped) after at least one iteration: it can be exported."""
        return self.live is not None and self.live.status != "running" and self.live.update is not None

    def whole_estimate_ended(self):
        """The whole-image run has ended with an estimate (completed, or a cancelled partial one)."""
        return (self.whole is not None and self.whole.status in ("completed", "cancelled")
                and self.whole.estimate is not None)
