"""The dialog that asks what a feature file does not say: which image, which descriptor, what image size.

The command line takes ``--entry``, ``--descriptor`` and ``--image-size``;
the app asks instead. :func:`feature_options` reads what each entry of the
file says (:func:`lbdviewer.features.files.entry_summaries`, a bounded
linear parse) and shows :class:`FeatureChoiceDialog` only when something is
open: several images, a descriptor the file does not name (default: inferred
from the bits, ``auto``), an image size it does not give (default: the
keypoints' extent, :func:`lbdviewer.features.infer.extent_shape`). The
answer is the keyword arguments of
:func:`lbdviewer.features.files.load_features`.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

from PyQt6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QSpinBox,
                             QVBoxLayout)

from lbdviewer.features.files import entry_summaries
from lbdviewer.features.infer import AUTO, candidates_for, label
from lbdviewer.libraries.registry import DESCRIPTORS

__all__ = ["FeatureChoiceDialog", "feature_options"]

#: Largest image side the size boxes offer.
MAX_SIDE = 100_000


def _entry_text(summary):
    name = summary["entry"] if summary["entry"] is not None else "(the whole file)"
    named = summary["descriptor"] or "descriptor not named"
    return f"{name}: {summary['keypoints']} keypoints, {summary['bytes']} bytes each, {named}"


class FeatureChoiceDialog(QDialog):
    """Asks for the entry, the descriptor and the image size a feature file leaves open.

    Parameters
    ----------
    path : str
    summaries : list of dict
        :func:`lbdviewer.features.files.entry_summaries` of the file.
    """

    def __init__(self, path, summaries, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Open features")
        self.summaries = summaries
        layout = QVBoxLayout(self)
        intro = QLabel(f"{path} does not say everything needed to invert it. Choose:")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        form = QFormLayout()
        layout.addLayout(form)
        self.entry_box = QComboBox()
        for summary in summaries:
            self.entry_box.addItem(_entry_text(summary), summary["entry"])
        form.addRow("Image in the file", self.entry_box)
        self.descriptor_box = QComboBox()
        form.addRow("Descriptor", self.descriptor_box)
        self.width_box, self.height_box = QSpinBox(), QSpinBox()
        for box in (self.width_box, self.height_box):
            box.setRange(1, MAX_SIDE)
            box.setSuffix(" px")
        form.addRow("Image width", self.width_box)
        form.addRow("Image height", self.height_box)
        self.size_note = QLabel()
        self.size_note.setWordWrap(True)
        form.addRow("", self.size_note)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.entry_box.currentIndexChanged.connect(self._show_entry)
        self._show_entry(0)

    def _show_entry(self, index):
        summary = self.summaries[index]
        self.descriptor_box.clear()
        if summary["descriptor"] is not None:
            self.descriptor_box.addItem(f"{summary['descriptor']} (named by the file)", summary["descriptor"])
            self.descriptor_box.setEnabled(False)
        else:
            fitting = [label(name, params) for name, params in candidates_for(summary["bytes"])]
            hint = f": one of {', '.join(fitting)}" if fitting else ""
            self.descriptor_box.addItem(f"infer from the bits{hint}", AUTO)
            for name in DESCRIPTORS:
                self.descriptor_box.addItem(name, name)
            self.descriptor_box.setEnabled(True)
        size = summary["image_size"]
        given = size is not None
        height, width = size if given else summary["extent"]
        self.width_box.setValue(int(width))
        self.height_box.setValue(int(height))
        for box in (self.width_box, self.height_box):
            box.setEnabled(not given)
        self.size_note.setText("as the file gives it" if given else
                               "the file does not give the image size: this is what its keypoints suggest")

    def options(self):
        """The keyword arguments of :func:`lbdviewer.features.files.load_features` chosen."""
        index = self.entry_box.currentIndex()
        out = {"entry": self.entry_box.currentData(), "descriptor": self.descriptor_box.currentData()}
        if self.summaries[index]["image_size"] is None:
            out["image_shape"] = (self.height_box.value(), self.width_box.value())
        return out


def needs_choice(summaries):
    """True when a file's entries leave something open (several images, no descriptor or no size)."""
    return len(summaries) > 1 or any(s["descriptor"] is None or s["image_size"] is None for s in summaries)


def feature_options(parent, path, *, dialog_factory=FeatureChoiceDialog):
    """Ask what a feature file leaves open; the ``load_features`` options, ``{}`` if nothing is, None if cancelled.

    Raises
    ------
    ValueError
        When the file cannot be read (the caller reports it as any failed load).
    """
    summaries = entry_summaries(path)
    if not needs_choice(summaries):
        return {}
    dialog = dialog_factory(str(path), summaries, parent)
    if dialog.exec() != QDialog.DialogCode.Accepted:
        return None
    return dialog.options()
