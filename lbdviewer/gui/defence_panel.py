"""The Defence panel: a defence and its strength, what the attacker rebuilds through it, and what matching keeps.

The panel only displays and forwards intent: choosing a kind or a strength
and pressing Apply emits :attr:`DefencePanel.requested` with the
:class:`~lbdviewer.defences.transforms.Defence` (None for no defence); the
window runs :func:`lbdviewer.defences.preview.iter_preview_defence` on a
worker and feeds back its progress (:meth:`DefencePanel.show_progress`) and
the :class:`~lbdviewer.defences.preview.DefencePreview`
(:meth:`DefencePanel.show_preview`): side by side the aware attacker's
reconstruction and the synthetic pair with its matches (green within 3 px of
the truth, red not), with the two numbers above them.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

import numpy as np
import pyqtgraph as pg
from PyQt6.QtCore import pyqtSignal
from PyQt6.QtWidgets import QComboBox, QDoubleSpinBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from lbdviewer.defences.preview import NO_DEFENCE, STRENGTH_CHOICES, defence_choice, pair_picture
from lbdviewer.defences.transforms import STRENGTH_NAMES
from lbdviewer.evaluation.display import display_stretch
from lbdviewer.gui.canvas import ImageCanvas

#: Colours of correct and wrong matches.
CORRECT_COLOUR, WRONG_COLOUR = (60, 200, 90), (230, 70, 60)
#: What each kind is called in the menu.
KIND_LABELS = {NO_DEFENCE: "No defence", "rr": "Randomized response (ε per bit)", "keep-bits": "Share of bit positions",
               "keep-keypoints": "Share of keypoints (random)", "keep-keypoints-aware": "Share of keypoints (best, no text)",
               "quantize": "Coordinates to a grid (px)", "jitter": "Coordinate jitter (σ, px)"}


class DefencePanel(QWidget):
    """Kind and strength of a defence, its reconstruction and the matches of a synthetic pair, with both numbers.

    Signals
    -------
    requested(object)
        The :class:`~lbdviewer.defences.transforms.Defence` to preview, or None.
    """

    requested = pyqtSignal(object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.kind = QComboBox()
        for kind, label in KIND_LABELS.items():
            self.kind.addItem(label, kind)
        self.strength = QDoubleSpinBox()
        self.strength.setDecimals(2)
        self.strength_name = QLabel("")
        self.apply_button = QPushButton("Apply")
        self.numbers = QLabel("Choose a defence and press Apply.")
        self.numbers.setWordWrap(True)
        self.reconstruction = ImageCanvas("Rebuilt from the defended features (aware attacker)")
        self.pair = ImageCanvas("Synthetic pair: matches within 3 px (green) and not (red)")
        self._lines = {}
        for name, colour in (("correct", CORRECT_COLOUR), ("wrong", WRONG_COLOUR)):
            self._lines[name] = pg.PlotDataItem(connect="pairs", pen=pg.mkPen(colour, width=1))
            self.pair.view.addItem(self._lines[name])
        controls = QHBoxLayout()
        controls.addWidget(QLabel("Defence"))
        controls.addWidget(self.kind, 1)
        controls.addWidget(self.strength_name)
        controls.addWidget(self.strength)
        controls.addWidget(self.apply_button)
        views = QHBoxLayout()
        views.addWidget(self.reconstruction, 1)
        views.addWidget(self.pair, 2)
        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.numbers)
        layout.addLayout(views, 1)
        self.kind.currentIndexChanged.connect(self._kind_changed)
        self.apply_button.clicked.connect(self.apply)
        self._kind_changed()
        self.preview = None

    def current_kind(self):
        return self.kind.currentData()

    def _kind_changed(self):
        kind = self.current_kind()
        has_strength = kind != NO_DEFENCE
        self.strength.setEnabled(has_strength)
        self.strength_name.setText(f"{STRENGTH_NAMES[kind]} =" if has_strength else "")
        if has_strength:
            minimum, maximum, step, default = STRENGTH_CHOICES[kind]
            self.strength.blockSignals(True)
            self.strength.setRange(minimum, maximum)
            self.strength.setSingleStep(step)
            self.strength.setValue(default)
            self.strength.blockSignals(False)

    def set_choice(self, kind, strength=None):
        """Select ``kind`` (and ``strength``) as a user would."""
        self.kind.setCurrentIndex(self.kind.findData(kind))
        if strength is not None:
            self.strength.setValue(float(strength))

    def defence(self):
        """The :class:`~lbdviewer.defences.transforms.Defence` the controls name, or None."""
        kind = self.current_kind()
        return defence_choice(kind, None if kind == NO_DEFENCE else self.strength.value())

    def apply(self):
        """Ask for a preview of the chosen defence."""
        defence = self.defence()
        self.numbers.setText(f"{'No defence' if defence is None else defence.label}: rebuilding…")
        self.requested.emit(defence)

    def show_progress(self, progress):
        """Draw the running estimate of the inversion (an :class:`~lbdviewer.features.progress.InversionProgress`)."""
        if progress.image is not None:
            self.reconstruction.show_array(np.clip(progress.image, 0.0, 1.0))
            self.reconstruction.set_dimmed(True)

    def show_preview(self, preview, image=None):
        """Draw a :class:`~lbdviewer.defences.preview.DefencePreview` (``image``: the original, when known)."""
        self.preview = preview
        shown = display_stretch(preview.reconstruction, mask=preview.covered, reference=image,
                                uncovered="neutral").image \
            if preview.covered.any() else preview.reconstruction
        self.reconstruction.show_array(shown)
        self.reconstruction.set_dimmed(False)
        if preview.second is None or image is None:
            self.pair.clear_array("Synthetic pair: needs the original image (open or compare with it)")
            for line in self._lines.values():
                line.setData([], [])
        else:
            picture, segments, correct = pair_picture(image, preview)
            self.pair.show_array(picture)
            for name, chosen in (("correct", correct), ("wrong", ~correct)):
                points = segments[chosen].reshape(-1, 2)
                self._lines[name].setData(points[:, 0], points[:, 1])
        self.numbers.setText(self.numbers_text(preview))

    def show_message(self, text):
        """Say why there is nothing to preview (no features, a failure)."""
        self.numbers.setText(text)

    def mark_outdated(self):
        """The document changed: fade what is shown and say so."""
        if self.reconstruction.array is not None:
            self.reconstruction.set_dimmed(True)
        if self.pair.array is not None:
            self.pair.set_dimmed(True)
        if self.preview is not None:
            self.numbers.setText(f"Outdated (another document): {self.numbers_text(self.preview)} · Apply again")

    @staticmethod
    def numbers_text(preview):
        """``"<defence>: leakage r = 0.84 · matching at 3 px 0.80 (12 of 15 matches)"``."""
        leak = "leakage r = –" if preview.correlation is None else f"leakage r = {preview.correlation:.2f}"
        if preview.matching_accuracy is None:
            match = "matching: needs the original"
        else:
            match = (f"matching at 3 px {preview.matching_accuracy:.2f} ({int(np.count_nonzero(preview.correct))} "
                     f"of {len(preview.matches)} matches)")
        return f"{preview.label}: {leak} · {match}"
