"""The document the app works on: what is loaded and what has run, without Qt.

:class:`Session` holds the image (or feature file), the pattern and operator
made from the parameters, the whole-image patch sites, the keypoints of a
library descriptor or a feature file with the one selected, and one record
per kind of run (:mod:`lbdviewer.gui.runs`).

It works in one of three modes (:attr:`Session.mode`):

``"pattern"``
    The paper's patterns on the open image: the patch under the selector is
    described with the form's pattern and solved.
``"library"``
    A library descriptor (ORB, BRISK, ...) on the open image: the library
    detects and describes keypoints (:func:`~lbdviewer.gui.library_jobs.describe_library`,
    on a worker), the selected keypoint's patch is solved from the library's
    own bits, the whole image is its features inverted.
``"features"``
    A feature file: its descriptor, bits and keypoints, no pixels. An image
    is paired with it as its ``"original"`` only when its SHA-256 is the one
    the file records (or the user says so when the file records none), or
    ``"compared"`` with it on request; otherwise it is a new document.

Views subscribe to changes as they do to :class:`~lbdviewer.gui.model.Parameters`:
``callback(name, value)`` with ``name`` one of :data:`EVENTS`.

This module must not import Qt (its tests run without a display).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace

import numpy as np

from lbdviewer.gui import jobs, library_jobs
from lbdviewer.gui.model import descriptor_label, is_library
from lbdviewer.gui.runs import FEATURE_RUN_PARAMETERS, LiveRun, WholeRun
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.reconstruction.image import default_method

#: What subscribers hear about: a new image, a new pattern/operator, new sites, new keypoints (a library's or a
#: file's), the selected keypoint's view (None while it is being built), a live run's record, the whole-image
#: run's record.
EVENTS = ("image", "pattern", "sites", "keypoints", "keypoint", "live", "whole")
#: How an image relates to the open feature file.
PAIRINGS = ("original", "compared")


def features_summary(features):
    """One line naming what a feature set holds.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> features = SimpleNamespace(descriptor="orb", keypoints=[0] * 500, n_bits=256, image_shape=(512, 512))
    >>> features_summary(features)
    'ORB, 500 keypoints, 256 bits, 512x512'
    """
    height, width = features.image_shape
    return (f"{descriptor_label(features.descriptor)}, {len(features.keypoints)} keypoints, {features.n_bits} bits, "
            f"{width}x{height}")


@dataclass
class Session:
    """The open document: image or feature file, pattern, operator, sites, keypoints, runs.

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
    >>> session.mode, session.patch_at(20, 2).shape, len(session.sites)
    ('pattern', (16, 16), 16)
    """

    image: np.ndarray | None = None
    source: str | None = None
    sha256: str | None = None
    start_xy: tuple = (0, 0)
    preview: object = None
    features: object = None
    features_source: str | None = None
    features_sha256: str | None = None
    pairing: str | None = None
    library: object = None
    library_images: tuple | None = None
    keypoint: int | None = None
    keypoint_view: object = None
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
    def set_image(self, image, source, *, sha256=None, start_xy=None, preview=None):
        """Open a float image (H, W) in [0, 1]; forget the previous document (a feature file too) and every run.

        ``start_xy`` is where the patch selector starts (default: the most
        textured patch of the current patch size, :func:`~lbdviewer.gui.jobs.textured_position`);
        ``preview`` is what views draw of a large image (:func:`~lbdviewer.gui.jobs.make_preview`).
        """
        image = np.ascontiguousarray(image, dtype=np.float64)
        if image.ndim != 2:
            raise ValueError(f"image must be 2-D (H, W), got shape {image.shape}")
        if start_xy is None:
            size = self.parameters.get("patch_size", 32)
            start_xy = jobs.textured_position(image, size) if min(image.shape) >= size else (0, 0)
        self._forget_features()
        self._set_pixels(image, source, sha256, preview)
        self.start_xy = tuple(start_xy)
        self.live = self.whole = None
        self._emit("image", image)

    def set_features(self, features, source, *, sha256=None):
        """Open a feature file: an empty canvas of its image size (no pixels), its keypoints, no run yet."""
        height, width = features.image_shape
        self._forget_features()
        self._set_pixels(np.zeros((height, width)), source, sha256, None)
        self.start_xy = (0, 0)
        self.features, self.features_source, self.features_sha256 = features, source, sha256
        self.live = self.whole = None
        self._emit("image", self.image)
        self._emit("keypoints", features.keypoints)

    def _set_pixels(self, image, source, sha256, preview):
        self.image, self.source, self.sha256, self.preview = image, source, sha256, preview

    def _forget_features(self):
        self.features = self.features_source = self.features_sha256 = self.pairing = None
        self.library = self.library_images = None
        self.keypoint = self.keypoint_view = None

    def pairing_for(self, image_shape, sha256):
        """What an image just opened is to the open feature file.

        Returns
        -------
        str
            ``"original"`` (the SHA-256 the file records), ``"ask"`` (the
            file records none and the sizes agree: only the user knows), or
            ``"other"`` (no feature file, another size, or another image):
            a new document.
        """
        if self.mode != "features" or tuple(image_shape) != tuple(self.features.image_shape):
            return "other"
        recorded = self.features.image_sha256
        if recorded is None:
            return "ask"
        return "original" if sha256 == recorded else "other"

    def pair_image(self, image, source, *, sha256=None, preview=None, relation="original"):
        """Show ``image`` with the open feature file as its ``"original"`` or an image ``"compared"`` with it.

        The inversion stays; its metrics are computed on a worker
        (:meth:`start_metrics`). The keypoints' true patches come once the
        model's images of it are in (:meth:`set_library_images`).
        """
        if self.mode != "features":
            raise ValueError("pair_image needs an open feature file")
        if relation not in PAIRINGS:
            raise ValueError(f"relation must be one of {PAIRINGS}, got {relation!r}")
        if tuple(np.shape(image)) != tuple(self.features.image_shape):
            raise ValueError(f"the image is {np.shape(image)[1]}x{np.shape(image)[0]}; the feature file's is "
                             f"{self.features.image_shape[1]}x{self.features.image_shape[0]}")
        self._set_pixels(np.ascontiguousarray(image, dtype=np.float64), source, sha256, preview)
        self.pairing, self.library_images = relation, None
        self._emit("image", self.image)
        if self.whole is not None:  # drawn again fitted to the image (shown=None), measured against it
            self._set_whole(replace(self.whole, metrics=None, metrics_pending=False, shown=None,
                                    compared_with=self.name if relation == "compared" else None))

    def close_features(self):
        """Leave the feature file: its paired image stays open as an image (True), or there is none (False)."""
        if self.mode != "features":
            return False
        if not self.has_pixels:
            return False
        self.set_image(self.image, self.source, sha256=self.sha256, preview=self.preview)
        return True

    @property
    def mode(self):
        """``"features"``, ``"library"`` or ``"pattern"`` (see the module notes)."""
        if self.features_source is not None:
            return "features"
        if is_library(self.parameters.get("family")):
            return "library"
        return "pattern"

    @property
    def keypoint_mode(self):
        """The live panel solves a keypoint (library descriptors, feature files), not the patch under the selector."""
        return self.mode in ("library", "features")

    @property
    def descriptor(self):
        """The descriptor shown: the feature file's, else the form's."""
        return self.features.descriptor if self.mode == "features" else self.parameters.get("family")

    @property
    def has_pixels(self):
        """An image is open (not only a feature file's keypoints on an empty canvas)."""
        return self.image is not None and (self.mode != "features" or self.pairing is not None)

    def defence_inputs(self):
        """``(features, image, reason)`` a defence preview starts from (:mod:`lbdviewer.defences.preview`).

        The features shown (a library descriptor's of the open image, or the
        feature file's) and the image they describe: the open image, or the
        feature file's original when it is paired as such (None otherwise:
        an image only *compared* with the file is not what it describes).
        Without features, ``reason`` says why.

        Examples
        --------
        >>> Session().defence_inputs()[2]
        "defences apply to a library descriptor's features or a feature file: choose ORB, BEBLID, ... or open a feature file"
        """
        if self.mode == "features":
            return self.features, (self.image if self.pairing == "original" else None), None
        if self.mode == "library":
            if self.library is None:
                return None, None, "the library is still describing the image"
            return self.library.features, self.image, None
        return None, None, ("defences apply to a library descriptor's features or a feature file: choose ORB, "
                            "BEBLID, ... or open a feature file")

    @property
    def name(self):
        """The document's short name (file name or sample name)."""
        return self.short_name(self.source)

    @staticmethod
    def short_name(source):
        if source is None:
            return ""
        return source.split(":", 1)[1] if source.startswith("sample:") else os.path.basename(source)

    # -- what the form and the status bar say -------------------------------------
    def form_state(self):
        """``(line, fixed, unused)`` for the form (:meth:`lbdviewer.gui.controls.ParametersPanel.set_document`).

        A feature file fixes the descriptor, its bits and its keypoints
        (shown read-only) and leaves the pattern's own parameters unused; a
        library descriptor is named with the keypoints it found.
        """
        if self.mode == "features":
            features = self.features
            what = "the feature file's"
            fixed = {"family": (features.descriptor, f"{what} descriptor"), "m": (features.n_bits, f"{what} bits"),
                     "keypoints": (len(features.keypoints), f"{what} keypoints")}
            unused = {name: "the feature file fixes each keypoint's pattern and patch"
                      for name in ("patch_size", "seed", "offset", "sites")}
            unused["binary"] = "a feature file holds bits"
            unused["joint_solver"] = "a feature file is inverted by sign consistency (as lbdviewer invert)"
            line = f"Feature file {self.short_name(self.features_source)}: {features_summary(features)}"
            if self.pairing == "original":
                line += f"; its original {self.name} is open"
            elif self.pairing == "compared":
                line += f"; compared with {self.name} (not its original)"
            return line, fixed, unused
        if self.mode == "library":
            label = descriptor_label(self.parameters["family"])
            if self.library is None:
                return f"{label}: the library is describing {self.name}…", {}, {}
            return f"{label} on {self.name}: {features_summary(self.library.features)}", {}, {}
        return "", {}, {}

    def status_line(self):
        """The status bar's summary of what is shown."""
        p = self.parameters
        solver = f"{p.get('solver', '')}"
        if self.mode == "features":
            return f"{features_summary(self.features)}  ·  feature file  ·  live {solver}"
        if self.mode == "library":
            if self.library is None:
                return f"{descriptor_label(p['family'])}  ·  describing…"
            return f"{features_summary(self.library.features)}  ·  live {solver}"
        if self.pattern is None:
            return ""
        pattern = self.pattern
        return (f"{descriptor_label(pattern.name)}  P={pattern.patch_size}  M={pattern.m}  {solver}  "
                f"{'bits' if p['binary'] else 'real'}")

    # -- parameters -> pattern, operator, sites, keypoints ------------------------
    def rebuild(self, parameters):
        """Take ``parameters`` (a dict): the pattern, operator and sites of the paper's patterns; mark runs stale.

        For a library descriptor or a feature file no pattern is made here:
        the keypoints come from :meth:`set_library` or the file. Raises
        ``ValueError`` (from the core) and changes nothing when the
        parameters cannot make a pattern.
        """
        parameters = dict(parameters)
        if self.mode != "features" and not is_library(parameters["family"]):
            pattern = jobs.pattern_for(parameters)
            operator = DescriptorOperator(pattern)
        else:
            pattern = operator = None
        library_changed = self.mode == "library" and self.library is not None and self.library_key(
            parameters) != self.library_key(self.parameters)
        self.pattern, self.operator, self.parameters = pattern, operator, parameters
        if self.mode != "features" and (not is_library(parameters["family"]) or library_changed):
            self.library = self.keypoint = self.keypoint_view = None
        self._emit("pattern", pattern)
        self.update_sites()
        if self.whole is not None and self.whole.status != "running":
            stale = self._run_parameters(self.whole.parameters) != self._run_parameters(self.parameters)
            if stale != self.whole.stale:
                self._set_whole(replace(self.whole, stale=stale))

    def _run_parameters(self, parameters):
        """The parameters a whole-image run of the current kind depends on."""
        if self.mode == "features":
            return {key: parameters.get(key) for key in FEATURE_RUN_PARAMETERS}
        if self.mode == "library":
            return {key: parameters.get(key) for key in FEATURE_RUN_PARAMETERS + ("family", "keypoints")}
        return parameters

    @staticmethod
    def library_key(parameters):
        """What a library description depends on: the descriptor and the keypoints asked for."""
        return parameters.get("family"), parameters.get("keypoints")

    def update_sites(self):
        """The whole-image patch sites (grid or FAST keypoints) of the paper's patterns; none otherwise."""
        if self.image is None or not self.parameters:
            return
        if self.mode != "pattern" or min(self.image.shape) < self.parameters["patch_size"]:
            self.sites = np.empty((0, 2), dtype=np.int64)  # no patch fits: start_whole says so
        else:
            self.sites = jobs.image_sites(self.image, self.parameters)
        self._emit("sites", self.sites)

    def patch_at(self, x, y):
        """The patch of the current pattern's size with top-left corner (x, y) = (column, row)."""
        size = self.pattern.patch_size
        return self.image[y : y + size, x : x + size]

    # -- keypoints -------------------------------------------------------------------
    def needs_library(self):
        """``(descriptor, keypoints)`` to describe the image with, when a library descriptor has no description yet."""
        if self.mode != "library" or self.image is None or self.library is not None:
            return None
        return self.library_key(self.parameters)

    def set_library(self, document):
        """Take a :class:`~lbdviewer.gui.library_jobs.LibraryDocument` of the open image (ignored if outdated)."""
        if self.needs_library() != (document.descriptor, document.keypoints_requested):
            return False
        self.library, self.library_images = document, document.images
        self.keypoint = self.keypoint_view = None
        self._emit("keypoints", document.features.keypoints)
        return True

    def set_library_images(self, images):
        """Take the model's images of a feature file's paired image (its keypoints' true patches)."""
        if self.mode == "features" and self.pairing is not None:
            self.library_images = images
            self.keypoint_view = None
            self._emit("keypoint", None)

    @property
    def keypoint_features(self):
        """The features whose keypoints are shown: a library's description or the feature file (or None)."""
        if self.mode == "features":
            return self.features
        if self.mode == "library" and self.library is not None:
            return self.library.features
        return None

    def select_keypoint(self, index):
        """Select keypoint ``index``; its view is to be built (:func:`~lbdviewer.gui.library_jobs.keypoint_view`)."""
        features = self.keypoint_features
        if features is None or not 0 <= int(index) < len(features.keypoints):
            raise ValueError("index must be one of the keypoints shown")
        self.keypoint, self.keypoint_view = int(index), None
        self._emit("keypoint", None)

    def start_keypoint_view(self):
        """The generator building the selected keypoint's view (with its true patch when there are pixels)."""
        images = self.library_images if self.has_pixels else None
        return library_jobs.keypoint_view(self.keypoint_features, self.keypoint, images)

    def set_keypoint_view(self, view):
        """Take the view of the selected keypoint (ignored if another one was selected since)."""
        if view.index != self.keypoint or self.keypoint_features is None:
            return False
        self.keypoint_view = view
        self._emit("keypoint", view)
        return True

    # -- the live run ------------------------------------------------------------
    def start_live(self, patch_xy):
        """Record a live run; return the generator a worker runs.

        The paper's patterns solve the patch at ``patch_xy``; a library
        descriptor or a feature file solves the selected keypoint from its
        own bits. Raises ``ValueError`` when there is nothing to solve yet.
        """
        if self.keypoint_mode:
            view = self.keypoint_view
            if view is None:
                raise ValueError("no keypoint selected yet")
            method = self.parameters["solver"]
            self.live = LiveRun(dict(self.parameters), tuple(int(v) for v in view.origin[::-1]), view.patch,
                                method, keypoint=view)
            self._emit("live", self.live)
            return library_jobs.keypoint_live_updates(view, self.parameters)
        if not self.has_pixels:
            raise ValueError("a feature file has no pixels: open its original image to solve patches")
        patch = np.array(self.patch_at(*patch_xy))
        self.live = LiveRun(dict(self.parameters), tuple(int(v) for v in patch_xy), patch, self.parameters["solver"])
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

    def clear_live(self):
        """Forget the live run (nothing to solve now): its estimate must not stay on view as current."""
        self.live = None
        self._emit("live", None)

    # -- the whole-image run -----------------------------------------------------
    def start_whole(self):
        """Record a whole-image run with the current parameters; return the generator a worker runs.

        Raises ``ValueError`` when nothing can be reconstructed (no patch
        site fits, or a library's keypoints are not described yet).
        """
        if self.mode == "features":
            return self.start_features()
        p = dict(self.parameters)
        if self.mode == "library":
            if self.library is None:
                raise ValueError(f"{descriptor_label(p['family'])} has not described the image yet")
            features = self.library.features
            self._set_whole(WholeRun(p, default_method(p["mode"], True), p["mode"], self.source, kind="library",
                                     descriptor=features.descriptor, site_count=len(features.keypoints),
                                     started=time.perf_counter()))
            return jobs.feature_updates(features, p, original=self.image)
        if len(self.sites) == 0:
            raise ValueError("no patch site fits in the image with these parameters")
        self._set_whole(WholeRun(p, jobs.whole_image_method(p), p["mode"], self.source,
                                 site_count=len(self.sites), started=time.perf_counter()))
        return jobs.whole_image_updates(self.image, self.pattern, self.sites, p)

    def start_features(self):
        """Record the inversion of the open feature file; return the generator a worker runs."""
        p = dict(self.parameters)
        compared = self.name if self.pairing == "compared" else None
        self._set_whole(WholeRun(p, default_method(p["mode"], True), p["mode"], self.features_source,
                                 kind="features", descriptor=self.features.descriptor,
                                 site_count=len(self.features.keypoints), started=time.perf_counter(),
                                 compared_with=compared))
        return jobs.feature_updates(self.features, p, original=self.image if self.has_pixels else None)

    def whole_progress(self, update):
        """Take a :class:`~lbdviewer.gui.jobs.WholeUpdate` from the running job."""
        if self.whole is None or self.whole.status != "running":
            return
        run = replace(self.whole, fraction=update.fraction, stage=update.stage,
                      shown=update.shown if update.shown is not None else self.whole.shown,
                      estimate=update.image if update.image is not None else self.whole.estimate,
                      iterations_run=update.iterations_run if update.iterations_run is not None
                      else self.whole.iterations_run)
        if update.result is not None:
            ran = update.result.iterations_run  # the core's count (patchwise: the most any patch ran)
            run = replace(run, result=update.result, method=update.result.method, mode=update.result.mode,
                          estimate=update.result.image, metrics=update.metrics,
                          metrics_pending=update.metrics_pending, seconds=float(update.result.seconds),
                          iterations_run=ran if ran is not None else run.iterations_run)
        self._set_whole(run)

    def whole_ended(self, completed):
        """The job ended: completed (with its result) or cancelled (what it estimated so far stays partial).

        A job stopped while computing the metrics of its result keeps the
        result (completed, without metrics).
        """
        if self.whole is None or self.whole.status != "running":
            return
        if self.whole.result is not None and (completed or self.whole.metrics_pending):
            stale = self._run_parameters(self.whole.parameters) != self._run_parameters(self.parameters)
            self._set_whole(replace(self.whole, status="completed", fraction=1.0, stale=stale,
                                    metrics_pending=False, stage="solving"))
        else:
            self._set_whole(replace(self.whole, status="cancelled", result=None, metrics=None,
                                    metrics_pending=False, seconds=time.perf_counter() - self.whole.started,
                                    shown=None))  # drawn again over the partial estimate

    def whole_failed(self, message):
        if self.whole is not None:
            self._set_whole(replace(self.whole, status="failed", error=message, result=None, metrics=None,
                                    metrics_pending=False))

    def start_metrics(self):
        """The generator computing a completed run's metrics against the image now open with it (None if not due).

        Due when a completed run has no metrics and there are pixels to
        compare with (a feature file's image paired after its inversion).
        """
        run = self.whole
        if (run is None or run.status != "completed" or run.result is None or run.metrics is not None
                or not self.has_pixels):
            return None
        self._set_whole(replace(run, metrics_pending=True))
        return jobs.metrics_updates(self.image, run.result)

    def set_metrics(self, result, metrics):
        """Take the metrics a worker computed for ``result`` (ignored when the run shown is another one)."""
        if self.whole is not None and self.whole.result is result and self.whole.metrics_pending:
            self._set_whole(replace(self.whole, metrics=metrics, metrics_pending=False))

    def metrics_dropped(self):
        """The metrics job was stopped: the run stays without metrics."""
        if self.whole is not None and self.whole.metrics_pending and self.whole.status != "running":
            self._set_whole(replace(self.whole, metrics_pending=False))

    def _set_whole(self, run):
        self.whole = run
        self._emit("whole", run)

    # -- what can be exported ----------------------------------------------------------
    def has_whole_result(self):
        """A completed whole-image run exists (stale or not) with its metrics in."""
        return self.whole is not None and self.whole.status == "completed" and not self.whole.metrics_pending

    def live_ended_with_update(self):
        """The live run has ended (completed or stopped) after at least one iteration: it can be exported."""
        return self.live is not None and self.live.status != "running" and self.live.update is not None

    def whole_estimate_ended(self):
        """The whole-image run has ended with an estimate (completed, or a cancelled partial one)."""
        return (self.whole is not None and self.whole.status in ("completed", "cancelled")
                and self.whole.estimate is not None)
