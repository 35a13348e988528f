"""How the session is shown: copies the :class:`~lbdviewer.gui.session.Session` into the panels.

:class:`SessionPresenter` draws the image, the pattern and its maps, the
live run and the whole-image run; it decides nothing (the window's slots
do). What it derives is small and per view: the display mapping of
:mod:`lbdviewer.evaluation.display` (the one rule shared with the CLI and the
figures), one pattern's weight, occurrence and frame-vector maps, the
original's edges. Long work stays on the workers.
"""

from __future__ import annotations

import time

import numpy as np

from lbdviewer.evaluation.display import display_original, display_stretch


#: A running whole-image run's estimate is drawn again at most this often (seconds; its progress follows every
#: update): the display rule costs ~35 ms a 512x512 frame on the main thread, and drawing ten frames a second
#: made the window's solve of camera 2.4-2.6x the core's time (one process; 1.3x at this interval).
ESTIMATE_REDRAW_SECONDS = 0.5


class SessionPresenter:
    """Draws a session into the window's panels.

    Parameters
    ----------
    session : Session
    source, pattern_panel, live, whole
        The panels (:mod:`lbdviewer.gui.panels`).
    status_label : QLabel
        The status bar's summary of the pattern.
    stretch : QAction
        Checked: reconstructions by the display rule; unchecked: as solved.
    """

    def __init__(self, session, *, source, pattern_panel, live, whole, status_label, stretch):
        self.session = session
        self.source, self.pattern_panel, self.live, self.whole = source, pattern_panel, live, whole
        self.status_label = status_label
        self.stretch = stretch
        self.clock = time.monotonic  # seconds, for the redraw interval
        self._estimate_drawn_at = -np.inf  # when a running run's estimate was last drawn

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

    def display(self, estimate, *, reference=None, mask=None):
        """``(array, levels, record)`` to show an estimate by the one display rule (:mod:`lbdviewer.evaluation.display`).

        With View > Stretch on: fitted to the original when there is one,
        else percentiles; off: as solved, clipped to [0, 1]. ``record`` names
        the rule for the exports' run records.
        """
        if self.stretch.isChecked():
            shown = display_stretch(estimate, mask=mask, reference=reference)
        else:
            shown = display_original(estimate)
        return shown.image, (0.0, 1.0), shown.record()

    def redraw_runs(self):
        """Draw the runs again (after the display rule was switched)."""
        if self.session.live is not None:
            self.show_live(self.session.live)
        if self.session.whole is not None:
            self.show_whole(self.session.whole, redraw=True)

    # -- the document ----------------------------------------------------------------
    def show_image(self):
        """A new image (or the original of the open feature file)."""
        session, source, whole = self.session, self.source, self.whole
        image = session.image
        height, width = image.shape
        if session.features is not None and session.source != session.features_source:
            source.set_image(image, f"{session.name} with the {len(session.features.keypoints.x)} "
                                    f"{session.features.descriptor} keypoints of the feature file",
                             preview=session.preview)
            whole.original.show_array(image, autorange=True, metadata={"source": session.source},
                                      preview=session.preview)
            whole.original.set_title(f"Original: {session.name}")
            return
        source.set_keypoints(None)
        source.set_image(image, f"{session.name}  ({width}x{height})", preview=session.preview)
        whole.original.show_array(image, autorange=True, metadata={"source": session.source},
                                  preview=session.preview)
        whole.original.set_title("Original")
        whole.result.clear_array("Reconstruction (Ctrl+R)")
        whole.result.set_dimmed(False)
        whole.set_edges(None)
        whole.edges_box.setChecked(False)
        whole.progress.setValue(0)
        whole.metrics_label.setText("")
        source.set_patch_position(*session.start_xy)

    def show_features(self):
        """The open feature file: its keypoints on the empty canvas."""
        session = self.session
        features = session.features
        kp = features.keypoints
        height, width = features.image_shape
        self.source.set_keypoints(np.asarray(kp.x), np.asarray(kp.y), np.asarray(kp.size))
        self.source.set_title(f"{session.name}: {len(kp.x)} {features.descriptor} keypoints "
                              f"({width}x{height}, no pixels)")
        self.whole.original.set_title("Original (not in the feature file)")

    def show_sites(self, sites):
        """The whole-image patch sites as dots (none on a feature file's canvas: its keypoints are the sites)."""
        if not self.session.has_pixels:
            sites = sites[:0]
        self.source.set_sites(sites[:, ::-1], patch_size=self.session.pattern.patch_size)

    def show_pattern(self):
        pattern, operator = self.session.pattern, self.session.operator
        panel = self.pattern_panel
        panel.patch.set_pattern(pattern)
        panel.set_measurements(pattern.m)
        described = {"pattern": pattern.describe_params()}
        weights = operator.weight_map()
        panel.weights.show_array(weights, levels=(0.0, max(float(weights.max()), 1e-12)), metadata=described)
        occurrences = operator.occurrence_map()
        panel.occurrences.show_array(occurrences, levels=(0.0, max(1.0, float(occurrences.max()))),
                                     metadata=described)
        self.show_frame_vector(panel.frame_index())
        self.show_patch()
        p = self.session.parameters
        self.status_label.setText(f"{pattern.name.upper()}  P={pattern.patch_size}  M={pattern.m}  "
                                  f"{p['solver']}  {'bits' if p['binary'] else 'real'}")
        self.live.set_binary(p["binary"])

    def show_frame_vector(self, index):
        operator, pattern = self.session.operator, self.session.pattern
        if operator is None:
            return
        index = min(int(index), operator.m - 1)
        vector = operator.frame_vector(index)
        bound = max(float(np.abs(vector).max()), 1e-12)
        i, j = pattern.pairs[index]
        self.pattern_panel.frame.show_array(vector, levels=(-bound, bound),
                                            metadata={"frame_index": index, "fields": [int(i), int(j)],
                                                      "pattern": pattern.describe_params()})
        self.pattern_panel.frame.set_title(f"Frame vector L_{index}  (fields {i} − {j})")
        self.pattern_panel.patch.highlight_pair(index)

    def show_patch(self):
        """The patch under the selector, with the pattern over it."""
        if self.session.operator is None:
            return
        x, y = self.source.patch_position()
        self.pattern_panel.patch.show_array(self.session.patch_at(x, y), metadata={"patch_xy": [x, y]})
        self.pattern_panel.patch.set_title(f"Patch ({x}, {y}) + {self.session.pattern.name.upper()} pattern")

    # -- the runs ---------------------------------------------------------------------
    def show_live(self, run):
        x, y = run.patch_xy
        self.live.original.show_array(run.patch, metadata={"patch_xy": [x, y]})
        update = run.update
        if update is None:
            return
        shown, levels, display = self.display(update.estimate, reference=run.patch)
        self.live.estimate.show_array(shown, levels=levels, metadata={"patch_xy": [x, y],
                                                                      "iteration": update.iteration,
                                                                      "display": display})
        self.live.show_progress(run.summary(), update.objective, update.bit_consistency)

    def show_whole(self, run, *, redraw=False):
        """A whole-image run: running (its estimate so far), completed, stale (dimmed), cancelled or failed.

        While it runs, its estimate is drawn at most every ``ESTIMATE_REDRAW_SECONDS`` (``redraw``: now).
        """
        panel = self.whole
        running = run.status == "running"
        panel.set_running(running)
        panel.progress.setValue(int(round(100 * run.fraction)))
        panel.result.set_title(run.title())
        now = self.clock()
        if running and not redraw and run.estimate is not None \
                and now - self._estimate_drawn_at < ESTIMATE_REDRAW_SECONDS:
            pass  # the estimate waits for the next redraw; progress and title are current
        elif run.estimate is None:
            panel.result.clear_array()
            self._estimate_drawn_at = -np.inf
        else:
            self._estimate_drawn_at = now if running else -np.inf
            has_original = self.session.source != self.session.features_source
            if run.result is not None:
                covered = run.result.covered
            elif run.mode == "patches":  # pixels no solved patch has reached yet are exactly 0
                covered = run.estimate != 0
            else:
                covered = None
            shown, levels, display = self.display(run.estimate, reference=self.session.image if has_original else None,
                                                  mask=covered)
            panel.result.show_array(shown, levels=levels, metadata={"status": run.status, "stale": run.stale,
                                                                    "display": display})
        # Outdated: faint; unfinished (running, cancelled): half; a current result: as it is.
        panel.result.set_dimmed(run.stale or run.status != "completed", opacity=0.35 if run.stale else 0.6)
        panel.metrics_label.setText(run.metrics_text())
        if run.status != "completed":
            panel.set_edges(None)
        elif panel.edges_box.isChecked():
            self.show_edges(True)

    def show_edges(self, visible):
        """The original's edges over the reconstruction (the paper's Fig. 7)."""
        image = self.session.image
        if not visible or image is None or not image.any():
            self.whole.set_edges(None)
            return
        from skimage.feature import canny

        self.whole.set_edges(canny(image, sigma=2.0))
