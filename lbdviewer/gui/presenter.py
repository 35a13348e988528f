"""How the session is shown: copies the :class:`~lbdviewer.gui.session.Session` into the panels.

:class:`SessionPresenter` draws the image, the pattern (or the selected
keypoint's pattern) and its maps, the live run and the whole-image run; it
decides nothing (the window's slots do). What it derives is small and per
view: the display mapping of :mod:`lbdviewer.evaluation.display` (the one
rule shared with the CLI and the figures), one pattern's weight, occurrence
and frame-vector maps, the original's edges. Long work stays on the workers.
"""

from __future__ import annotations

import time

import numpy as np

from lbdviewer.evaluation.display import uncovered_rule
from lbdviewer.gui.jobs import DisplayChoice
from lbdviewer.gui.model import descriptor_label
from lbdviewer.gui.overlay import pattern_overlay
from lbdviewer.patterns.base import pair_label, pair_number

#: A running whole-image run's estimate is drawn again at most this often (seconds; its progress follows every
#: update): drawing ten frames a second made the window's solve of camera 2.4-2.6x the core's time (one
#: process; 1.3x at this interval). The worker maps the estimate for display at the same pace
#: (:func:`lbdviewer.gui.jobs.with_display`); an update without that mapping is mapped here, as rarely.
ESTIMATE_REDRAW_SECONDS = 0.5


class SessionPresenter:
    """Draws a session into the window's panels.

    Parameters
    ----------
    session : Session
    source, pattern_panel, live, whole
        The panels (:mod:`lbdviewer.gui.panels`, :mod:`lbdviewer.gui.run_panels`).
    controls : ParametersPanel
        The form (what the document fixes, the line naming it).
    status_label : QLabel
        The status bar's summary of what is shown.
    stretch : QAction
        Checked: reconstructions by the display rule; unchecked: as solved.
    """

    def __init__(self, session, *, source, pattern_panel, live, whole, controls, status_label, stretch):
        self.session = session
        self.source, self.pattern_panel, self.live, self.whole = source, pattern_panel, live, whole
        self.controls = controls
        self.status_label = status_label
        self.stretch = stretch
        self.choice = DisplayChoice(stretch.isChecked())  # read by the workers that map estimates for display
        stretch.toggled.connect(lambda checked: setattr(self.choice, "stretch", bool(checked)))
        self.clock = time.monotonic  # seconds, for the redraw interval
        self._estimate_drawn_at = -np.inf  # when a running run's estimate was last drawn
        self._drawn = None  # the worker's mapping of the estimate drawn last

    def panels(self):
        """Exportable canvases by name."""
        return {
            "image": self.source,
            "patch": self.pattern_panel.patch,
            "frame-vector": self.pattern_panel.frame,
            "weight-map": self.pattern_panel.weights,
            "occurrence-map": self.pattern_panel.occurrences,
            "live-original": self.live.original,
            "live-reconstruction": self.live.estimate,
            "original": self.whole.original,
            "reconstruction": self.whole.result,
        }

    def display(self, estimate, *, reference=None, mask=None, uncovered="black"):
        """``(array, levels, record)`` to show an estimate by the one display rule (:mod:`lbdviewer.evaluation.display`).

        With View > Stretch on: fitted to the original when there is one,
        else percentiles; off: as solved, clipped to [0, 1]. ``record`` names
        the rule for the exports' run records.
        """
        self.choice.stretch = self.stretch.isChecked()
        shown = self.choice.apply(estimate, reference=reference, mask=mask, uncovered=uncovered)
        return shown.image, (0.0, 1.0), shown.record()

    def redraw_runs(self):
        """Draw the runs again (after the display rule was switched)."""
        if self.session.live is not None:
            self.show_live(self.session.live)
        if self.session.whole is not None:
            self.show_whole(self.session.whole, redraw=True)

    # -- the document ----------------------------------------------------------------
    def show_document(self):
        """What the form fixes and the lines naming the document (form and status bar)."""
        line, fixed, unused = self.session.form_state()
        self.controls.set_document(line, fixed=fixed, unused=unused)
        self.status_label.setText(self.session.status_line())

    def show_image(self):
        """A new document (image or feature file), or an image paired with the open feature file."""
        session, source, whole = self.session, self.source, self.whole
        image = session.image
        height, width = image.shape
        features = session.features if session.mode == "features" else None
        if features is None:
            source.set_image(image, f"{session.name}  ({width}x{height})", preview=session.preview)
        elif session.has_pixels:
            relation = "its original" if session.pairing == "original" else "compared with it, NOT its original"
            source.set_image(image, f"{session.name} ({relation}) with the {len(features.keypoints)} "
                                    f"{descriptor_label(features.descriptor)} keypoints of "
                                    f"{session.short_name(session.features_source)}", preview=session.preview)
        else:
            source.set_image(image, f"{session.short_name(session.features_source)}: {len(features.keypoints)} "
                                    f"{descriptor_label(features.descriptor)} keypoints ({width}x{height}, no pixels)")
        if features is None or session.has_pixels:
            whole.original.show_array(image, autorange=True, metadata={"source": session.source},
                                      preview=session.preview)
            whole.original.set_title("Original" if session.pairing != "compared"
                                     else f"Compared with {session.name} (not the features' original)")
        else:
            whole.original.clear_array("Original: not in the feature file")
        if session.whole is None:
            whole.result.clear_array("Reconstruction (Ctrl+R)")
            whole.result.set_dimmed(False)
            whole.set_edges(None)
            whole.set_uncovered(None)
            whole.edges_box.setChecked(False)
            whole.progress.setValue(0)
            whole.metrics_label.setText("")
            whole.run_label.setText("")
            whole.set_state("idle", "Not run yet: Ctrl+R reconstructs the whole image")
        if session.live is None:
            self.show_live(None)
        if not session.keypoint_mode:
            source.set_keypoints(None)
            source.show_keypoint_frame(None)
            source.set_patch_position(*session.start_xy)
        self.show_document()

    def show_keypoints(self, keypoints):
        """A library's or a feature file's keypoints as thin marks; the chooser offers them."""
        self.source.set_keypoints(keypoints)
        self.pattern_panel.show_keypoint_chooser(0 if keypoints is None else len(keypoints))
        self.show_document()

    def show_sites(self, sites):
        """The whole-image patch sites as dots (none for keypoints: they are the sites)."""
        size = 0 if self.session.pattern is None else self.session.pattern.patch_size
        self.source.set_sites(sites[:, ::-1], patch_size=size)

    def show_pattern(self):
        """The paper's pattern and its maps; for keypoints, the views wait for the selected keypoint."""
        pattern, operator = self.session.pattern, self.session.operator
        panel = self.pattern_panel
        self.show_document()
        if pattern is None:
            if not self.session.keypoint_mode:
                return
            self.source.show_keypoint_frame(None if self.session.keypoint_view is None
                                            else self.session.keypoint_view.footprint())
            if self.session.keypoint_view is None:
                self._clear_pattern_views(f"{descriptor_label(self.session.descriptor)}: choosing a keypoint…")
            self.live.set_binary(True)
            return
        self.pattern_panel.show_keypoint_chooser(0)
        self.source.set_keypoints(None)
        self.source.show_keypoint_frame(None)
        self.source.set_patch_size(pattern.patch_size)
        panel.patch.set_geometry(pattern_overlay(pattern))
        panel.set_measurements(pattern.m)
        described = {"pattern": pattern.describe_params()}
        self._show_maps(operator.weight_map(), operator.occurrence_map(), described)
        self.show_frame_vector(panel.frame_index())
        self.show_patch()
        self.live.set_binary(self.session.parameters["binary"])

    def _clear_pattern_views(self, title):
        panel = self.pattern_panel
        panel.patch.set_geometry(None)
        panel.patch.clear_array(title)
        for canvas, name in ((panel.frame, "Frame vector"), (panel.weights, "Weight map"),
                             (panel.occurrences, "Occurrence map")):
            canvas.clear_array(name)

    def _show_maps(self, weights, occurrences, metadata):
        panel = self.pattern_panel
        panel.weights.show_array(weights, levels=(0.0, max(float(weights.max()), 1e-12)), metadata=metadata)
        panel.weights.set_title("Weight map")
        panel.occurrences.show_array(occurrences, levels=(0.0, max(1.0, float(occurrences.max()))),
                                     metadata=metadata)
        panel.occurrences.set_title("Occurrence map")

    def show_keypoint(self, view):
        """The selected keypoint: its patch (or an empty one), the library's geometry over it, its maps."""
        session, panel = self.session, self.pattern_panel
        features = session.keypoint_features
        if view is None:
            if session.keypoint is not None and features is not None:
                kp = features.keypoints
                k = session.keypoint
                self.source.select_keypoint(kp.x[k], kp.y[k], kp.size[k], kp.angle[k])
                panel.show_keypoint_chooser(len(kp), k)
            return
        label = descriptor_label(view.descriptor)
        size = view.patch_size
        described = {"keypoint": view.record(), "descriptor": view.descriptor}
        kp = view.keypoint
        angle = "" if kp["angle"] < 0 else f", {kp['angle']:.0f}°"
        short = f"{label} keypoint {view.index}{angle}, level {view.level}"
        if view.patch is not None:
            panel.patch.show_array(view.patch, metadata=described)
            panel.patch.set_title(short)
        else:
            panel.patch.show_array(np.zeros((size, size)), metadata=described)
            panel.patch.set_title(f"{short} (bits only, no pixels)")
        panel.patch.title.setToolTip(f"{label}, {view.describe()}: its {size}x{size} patch"
                                     + (" of the level image" if view.scale != 1.0 else ""))
        centre = None
        if view.pattern is not None:
            centre = view.pattern.center + 0.5
        else:
            centre = (view.overlay.outlines[:, :-1].reshape(-1, 2).mean(axis=0))
        panel.patch.set_geometry(view.overlay, centre=centre)
        panel.set_measurements(view.m)
        self._show_maps(view.weights, view.occurrences, described)
        self.show_frame_vector(panel.frame_index())
        self.source.show_keypoint_frame(view.footprint())
        self.source.select_keypoint(kp["x"], kp["y"], kp["size"], kp["angle"])
        panel.show_keypoint_chooser(len(features.keypoints), view.index)
        self.live.set_binary(True)
        self.status_label.setText(f"{session.status_line()}  ·  {view.describe()}")

    def show_frame_vector(self, index):
        session, panel = self.session, self.pattern_panel
        view = session.keypoint_view if session.keypoint_mode else None
        operator = view.operator if view is not None else session.operator
        if operator is None:
            return
        m = int(operator.shape[0])
        index = min(int(index), m - 1)
        vector = operator.frame_vector(index)
        bound = max(float(np.abs(vector).max()), 1e-12)
        if view is None:
            i, j = (int(f) + 1 for f in session.pattern.pairs[index])  # fields numbered from 1, as pairs are
            fields, described = f"fields {i} − {j}", {"pattern": session.pattern.describe_params()}
        else:
            i, j = (int(f) + 1 for f in view.overlay.pair_fields[index])
            kind = "cells" if view.overlay.kind == "cells" else "fields"
            fields, described = f"{kind} {i} − {j}", {"keypoint": view.record(), "descriptor": view.descriptor}
        panel.frame.show_array(vector, levels=(-bound, bound),
                               metadata={"pair": pair_number(index), "fields": [int(i), int(j)], **described})
        panel.frame.set_title(f"Frame vector {pair_label(index)}  ({fields})")
        panel.patch.highlight_pair(index)

    def show_patch(self):
        """The patch under the selector, with the pattern over it (the paper's patterns)."""
        if self.session.operator is None:
            return
        x, y = self.source.patch_position()
        self.pattern_panel.patch.show_array(self.session.patch_at(x, y), metadata={"patch_xy": [x, y]})
        self.pattern_panel.patch.set_title(f"Patch ({x}, {y}) + {descriptor_label(self.session.pattern.name)} "
                                           "pattern")

    # -- the runs ---------------------------------------------------------------------
    def show_live(self, run):
        """The live run: its true patch, then its estimate once it has one (never an older run's)."""
        live = self.live
        if run is None:
            live.original.clear_array("True patch")
            live.reset()
            return
        metadata = {"patch_xy": list(run.patch_xy)}
        if run.keypoint is not None:
            metadata = {"keypoint": run.keypoint.record()}
        if run.patch is not None:
            live.original.show_array(run.patch, metadata=metadata)
            live.original.set_title("True patch" if run.keypoint is None
                                    else f"True patch of keypoint {run.keypoint.index}")
        else:
            live.original.clear_array("True patch: not in the feature file")
        live.set_budget(run.parameters["iterations"])
        update = run.update
        if update is None:
            live.reset("Live estimate: none yet (Space plays, S steps)")
            return
        shown, levels, display = self.display(update.estimate, reference=run.patch)
        live.estimate.show_array(shown, levels=levels, metadata={**metadata, "iteration": update.iteration,
                                                                 "display": display})
        what = "Live estimate" if run.keypoint is None else f"Estimate from {descriptor_label(run.descriptor)}'s bits"
        live.estimate.set_title(what if run.status != "cancelled" else f"{what} (stopped)")
        live.show_progress(run.summary(), update.objective, update.bit_consistency)

    def show_whole(self, run, *, redraw=False):
        """A whole-image run: running (its estimate so far), completed, stale (dimmed), cancelled or failed.

        While it runs, its estimate is drawn at most every ``ESTIMATE_REDRAW_SECONDS`` (``redraw``: now).
        """
        panel = self.whole
        running = run.status == "running"
        panel.set_running(running)
        panel.set_state("outdated" if run.stale and run.status == "completed" else run.status, run.title())
        panel.progress.setValue(int(round(100 * run.fraction)))
        panel.result.set_title(run.short_title())
        panel.run_label.setText(run.label())
        now = self.clock()
        if run.shown is not None and not redraw:  # mapped on the worker: only drawn here
            if run.shown is not self._drawn:
                self._drawn = run.shown
                panel.result.show_array(run.shown.image, levels=(0.0, 1.0),
                                        metadata={"status": run.status, "stale": run.stale,
                                                  "display": run.shown.record()})
            else:
                panel.result.metadata.update(status=run.status, stale=run.stale)
        elif running and not redraw and run.estimate is not None \
                and now - self._estimate_drawn_at < ESTIMATE_REDRAW_SECONDS:
            pass  # the estimate waits for the next redraw; progress and title are current
        elif run.estimate is None:
            panel.result.clear_array()
            self._estimate_drawn_at = -np.inf
            self._drawn = None
        else:
            self._estimate_drawn_at = now if running else -np.inf
            self._drawn = None
            if run.result is not None:
                covered = run.result.covered
            elif run.mode == "patches":  # pixels no solved patch has reached yet are exactly 0
                covered = run.estimate != 0
            else:
                covered = None
            reference = self.session.image if self.session.has_pixels else None
            shown, levels, display = self.display(run.estimate, reference=reference, mask=covered,
                                                  uncovered=uncovered_rule(run.result))
            panel.result.show_array(shown, levels=levels, metadata={"status": run.status, "stale": run.stale,
                                                                    "display": display})
        # Outdated: faint; unfinished (running, cancelled): half; a current result: as it is.
        panel.result.set_dimmed(run.stale or run.status != "completed", opacity=0.35 if run.stale else 0.6)
        panel.metrics_label.setText(run.metrics_text())
        if run.status != "completed":
            panel.set_edges(None)
            panel.set_uncovered(None)
        else:
            if panel.edges_box.isChecked():
                self.show_edges(True)
            self.show_coverage(panel.coverage_box.isChecked())

    def show_edges(self, visible):
        """The original's edges over the reconstruction (the paper's Fig. 7)."""
        image = self.session.image
        if not visible or not self.session.has_pixels or image is None or not image.any():
            self.whole.set_edges(None)
            return
        from skimage.feature import canny

        self.whole.set_edges(canny(image, sigma=2.0))

    def show_coverage(self, visible):
        """Tint the pixels the completed run's patches or keypoints do not reach."""
        run = self.session.whole
        if not visible or run is None or run.result is None:
            self.whole.set_uncovered(None)
            return
        self.whole.set_uncovered(~np.asarray(run.result.covered, dtype=bool))

