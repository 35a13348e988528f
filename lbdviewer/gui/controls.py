"""The parameter form: widgets bound to the Qt-free :class:`~lbdviewer.gui.model.Parameters`.

Widgets only ever offer what the model accepts: spin-box ranges and enabled
combo items come from the model's limits, with the reason in the tooltip and
in a note under the form. If the model still refuses a value, the widget goes
back to the model's value and :attr:`ParametersPanel.refused` carries the
reason (the window shows it in the status bar). A control that plays no part
in the runs asked for is disabled, its tooltip saying why
(:meth:`~lbdviewer.gui.model.Parameters.why_unused`).

The descriptor menu lists the paper's patterns, then the library descriptors
(bit-exact models of ORB, BRISK, BEBLID, ...) under a header each. A
document can fix values (:meth:`ParametersPanel.set_document`): an open
feature file shows its descriptor, bits and keypoints read-only, with a line
naming them above the form; below that line is the place for the controls
that act on features (:meth:`ParametersPanel.add_feature_control`).
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

from PyQt6.QtCore import Qt, pyqtSignal
from PyQt6.QtGui import QFont, QStandardItem, QValidator
from PyQt6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from lbdviewer.gui import jobs
from lbdviewer.gui.model import DESCRIPTOR_LABELS, FAMILIES, LIBRARY_DESCRIPTORS
from lbdviewer.reconstruction.image import DEFAULT_ITERATIONS

#: Characters a closed combo box is wide enough for (the popup shows the whole entries).
COMBO_CHARACTERS = 12
#: The descriptor menu's groups: a header (not selectable) above each.
DESCRIPTOR_GROUPS = (("Paper patterns", FAMILIES), ("Library descriptors (bit-exact)", LIBRARY_DESCRIPTORS))
#: What each library descriptor is (its menu item's tooltip).
LIBRARY_TIPS = {
    "orb": "OpenCV ORB: 256 rotated point pairs on a Gaussian-smoothed pyramid level",
    "opencv-brief": "OpenCV BRIEF (xfeatures2d): 256 pairs of 9x9 box means, not rotated",
    "opencv-freak": "OpenCV FREAK: 43 retinal box fields, 512 pairs, turned by the keypoint",
    "skimage-brief": "scikit-image BRIEF: 256 pairs of Gaussian-smoothed pixels, not rotated",
    "beblid": "OpenCV BEBLID: 512 pairs of boxes against learned thresholds",
    "teblid": "OpenCV TEBLID: BEBLID's computation with triplet-learned boxes and thresholds",
    "brisk": "OpenCV BRISK: 60 points on rings, 512 short pairs, turned by the keypoint",
    "akaze": "OpenCV AKAZE (M-LDB): 2x2, 3x3, 4x4 grid cells of the nonlinear scale space, 486 comparisons",
}

CHOICES = {
    "solver": (("biht", "BIHT (1-bit CS)"), ("primal-dual", "Primal-dual l1")),
    "sites": (("grid", "grid with offset"), ("fast", "FAST keypoints")),
    "mode": (("patches", "patchwise + averaging"), ("joint", "joint (one problem)")),
    "joint_solver": (("consistency", "sign consistency"), ("coherent", "coherent contrast"),
                     ("likelihood", "noisy-bit likelihood")),
    "binary": ((True, "binary (bits)"), (False, "real-valued")),
}
TIPS = {
    "family": "Descriptor whose bits are inverted: a pattern of the paper, or a library's own (bit-exact)",
    "keypoints": "Keypoints the library's detector is asked for (lbdviewer extract --keypoints)",
    "patch_size": "Side P of the square patch, in pixels",
    "m": "Number of measurements M (bits of the descriptor)",
    "sparsity": "K: percentage of Haar coefficients BIHT keeps",
    "offset": "Grid offset N_off between patches for the whole image (P: no overlap, 1: dense)",
    "sites": "Where the whole-image patches are taken",
    "mode": "Whole image: patches solved separately and averaged, or jointly as one problem",
    "joint_solver": "Solver of the whole image from bits in one problem (lbdviewer reconstruct --method); "
                    "a feature file keeps its own",
    "solver": "BIHT inverts bits; the primal-dual l1 solver inverts bits or real values",
    "iterations": "Iterations of the solver (live patch, patchwise whole image); a joint solve of bits has its own",
    "lam": "Trade-off lambda of the primal-dual solver",
    "binary": "Invert the descriptor's bits or its real-valued measurements",
    "seed": "Random seed of the pattern (BRIEF, RA-FREAK)",
}
#: What a choice is for and what it costs (its item's tooltip).
CHOICE_TIPS = {
    "joint_solver": {
        "consistency": "sign consistency + TV with margins oriented along the bits' own ramps (the default): "
                       "fast; late in the solve, sites whose bits look like noise are asked for no contrast, "
                       "so noisy paper comes out flat. "
                       f"{DEFAULT_ITERATIONS[('joint', 'consistency')]} iterations",
        "coherent": "coherent contrast: flat paper and faint noise drawn flat, text and edges kept, "
                    "photos closer to the original than the default's. Slower: up to "
                    f"{DEFAULT_ITERATIONS[('joint', 'coherent')]} iterations (it stops when no step improves), "
                    "5-10x the default's time",
        "likelihood": "bits as noisy signs (a robust logistic likelihood), for comparison: photos lose "
                      f"brightness and detail. {DEFAULT_ITERATIONS[('joint', 'likelihood')]} iterations, "
                      "about the default's time",
    },
}
LABELS = {
    "family": "Descriptor", "keypoints": "Keypoints", "patch_size": "Patch size P", "m": "Measurements M",
    "sparsity": "Sparsity K",
    "offset": "Offset N_off", "sites": "Sites", "mode": "Whole image", "joint_solver": "Joint solver",
    "solver": "Solver",
    "iterations": "Iterations", "lam": "Lambda", "binary": "Measurements", "seed": "Seed",
}
ORDER = ("family", "keypoints", "patch_size", "m", "binary", "solver", "sparsity", "iterations", "lam", "seed",
         "offset", "sites", "mode", "joint_solver")


def _descriptor_menu():
    """The descriptor combo box: a header (bold, not selectable) above each group of :data:`DESCRIPTOR_GROUPS`."""
    widget = QComboBox()
    model = widget.model()
    for header, names in DESCRIPTOR_GROUPS:
        item = QStandardItem(header)
        item.setFlags(Qt.ItemFlag.NoItemFlags)
        font = QFont(widget.font())
        font.setBold(True)
        item.setFont(font)
        model.appendRow(item)
        for name in names:
            widget.addItem(f"   {DESCRIPTOR_LABELS[name]}", name)
    return widget


def descriptor_menu_groups(widget):
    """The descriptor menu as shown: ``[(header, [descriptor names])]``."""
    groups = []
    for index in range(widget.count()):
        value = widget.itemData(index)
        if value is None:
            groups.append((widget.itemText(index), []))
        else:
            groups[-1][1].append(value)
    return groups


class ReportingSpinBox(QSpinBox):
    """A spin box that reports a typed value beyond its range instead of silently dropping the keystroke.

    Qt refuses the key that would take the text out of range (typing 5000
    with a maximum of 4096 leaves 500): :attr:`typed_out_of_range` carries
    the value that was refused, so the form can say why.
    """

    typed_out_of_range = pyqtSignal(int)

    def validate(self, text, pos):
        state, text, pos = super().validate(text, pos)
        if state == QValidator.State.Invalid:
            digits = self.cleanText() if text == self.text() else text.removeprefix(self.prefix()).removesuffix(
                self.suffix()).strip()
            if digits.lstrip("-").isdigit() and not self.minimum() <= int(digits) <= self.maximum():
                self.typed_out_of_range.emit(int(digits))
        return state, text, pos


class ParametersPanel(QWidget):
    """A form editing a :class:`~lbdviewer.gui.model.Parameters`.

    Signals
    -------
    refused(str)
        The model refused an edit; the message says why.
    """

    refused = pyqtSignal(str)

    def __init__(self, parameters, parent=None):
        super().__init__(parent)
        self.parameters = parameters
        self.fixed = {}  # name -> (value, reason): what the open document fixes
        self.unused = {}  # name -> reason: what the open document leaves unused
        self.widgets = {}
        self.document_line = QLabel()
        self.document_line.setWordWrap(True)
        self.document_line.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.document_line.setStyleSheet("font-weight: bold;")
        self.document_line.setVisible(False)
        #: Controls acting on an open document's features (issue 27's Defence goes here), shown with it.
        self.feature_controls = QFormLayout()
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        for name in ORDER:
            widget = self._make_widget(name)
            widget.setToolTip(TIPS[name])
            self.widgets[name] = widget
            label = QLabel(LABELS[name])
            label.setObjectName(f"label-{name}")
            label.setToolTip(TIPS[name])
            form.addRow(label, widget)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: #444;")
        self.refusal = QLabel()
        self.refusal.setWordWrap(True)
        self.refusal.setStyleSheet("color: #b00020;")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.document_line)
        layout.addLayout(self.feature_controls)
        layout.addLayout(form)
        layout.addWidget(self.note)
        layout.addWidget(self.refusal)
        layout.addStretch(1)
        parameters.subscribe(lambda name, value: self.sync())
        self.sync()

    def _make_widget(self, name):
        if name in CHOICES or name == "family":
            widget = _descriptor_menu() if name == "family" else QComboBox()
            for value, text in CHOICES.get(name, ()):
                widget.addItem(text, value)
            # as narrow as a short entry: the form fits a small screen, the popup shows the full entries
            widget.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            widget.setMinimumContentsLength(COMBO_CHARACTERS)
            widget.view().setMinimumWidth(widget.view().sizeHintForColumn(0) + 24)
            widget.currentIndexChanged.connect(lambda index, name=name: self._edited(name))
            return widget
        if name == "lam":
            widget = QDoubleSpinBox()
            widget.setDecimals(4)
            # steps of a tenth of the value's decade: 10 -> 11, 0.1 -> 0.11 (the default is 10, the paper's 0.1)
            widget.setStepType(QDoubleSpinBox.StepType.AdaptiveDecimalStepType)
        else:
            widget = ReportingSpinBox()
            widget.typed_out_of_range.connect(lambda value, name=name: self._typed_out_of_range(name, value))
        if name == "sparsity":
            widget.setSuffix(" %")
        widget.setKeyboardTracking(False)
        widget.valueChanged.connect(lambda value, name=name: self._edited(name))
        return widget

    def value_of(self, name):
        widget = self.widgets[name]
        if isinstance(widget, QComboBox):
            return widget.currentData()
        if name == "sparsity":
            return widget.value() / 100.0
        return widget.value()

    def set_value(self, name, value):
        """Edit a control as a user would (the model validates)."""
        widget = self.widgets[name]
        if isinstance(widget, QComboBox):
            widget.setCurrentIndex(widget.findData(value))
        else:
            widget.setValue(round(value * 100) if name == "sparsity" else value)

    def _edited(self, name):
        if name in self.fixed:  # shown, not edited: the document fixes it
            self.sync()
            return
        value = self.value_of(name)
        try:
            setattr(self.parameters, name, value)
        except ValueError as error:
            self._refuse(str(error))
            self.sync()
        else:
            self.refusal.clear()

    def _typed_out_of_range(self, name, value):
        """Say why a typed value was refused, in the model's words."""
        if name == "sparsity":
            value = value / 100.0
        try:
            self.parameters.check(name, value)
        except ValueError as error:
            self._refuse(str(error))

    def _refuse(self, message):
        if message != self.refusal.text():
            self.refusal.setText(message)
            self.refused.emit(message)

    def sync(self):
        """Show the model's values, ranges and allowed choices; the document's fixed values; why controls are off."""
        p = self.parameters
        for name, widget in self.widgets.items():
            widget.blockSignals(True)
            try:
                if isinstance(widget, QComboBox):
                    allowed = p.allowed(name)
                    for index in range(widget.count()):
                        value = widget.itemData(index)
                        if value is None:  # a group header
                            continue
                        item = widget.model().item(index)
                        enabled = value in allowed
                        item.setEnabled(enabled)
                        tip = (CHOICE_TIPS.get(name, {}).get(value) or LIBRARY_TIPS.get(value) if enabled
                               else self._why_disabled(name))
                        widget.setItemData(index, tip, Qt.ItemDataRole.ToolTipRole)
                    widget.setCurrentIndex(widget.findData(self._shown_value(name)))
                else:
                    limits = p.limits(name)
                    if name == "sparsity":
                        widget.setRange(round(limits.low * 100), round(limits.high * 100))
                        widget.setValue(round(p.sparsity * 100))
                    elif name in self.fixed:
                        value = int(self.fixed[name][0])
                        widget.setRange(min(int(limits.low), value), max(int(limits.high), value))
                        widget.setValue(value)
                    else:
                        widget.setRange(limits.low, limits.high)
                        widget.setValue(getattr(p, name))
                    widget.setToolTip(f"{TIPS[name]}\nAllowed: {self._range_text(limits)} ({limits.reason})")
                off = self.why_off(name)
                widget.setEnabled(not off)
                if off:
                    widget.setToolTip(f"{TIPS[name]}\n{off}")
                label = self.findChild(QLabel, f"label-{name}")
                if label is not None:
                    label.setEnabled(not off)
            finally:
                widget.blockSignals(False)
        m_limits = p.limits("m")
        if "m" in self.fixed:
            m_line = f"M: {self.fixed['m'][0]} bits, {self.fixed['m'][1]}."
        else:
            m_line = f"M: {self._range_text(m_limits)} — {m_limits.reason}."
        self.note.setText(
            m_line + "\n"
            + ("BIHT needs bits: pick the primal-dual solver for real values." if p.solver == "biht"
               else "Primal-dual inverts bits or real values.")
            + "\n" + self._sync_joint_solver()
        )

    def _shown_value(self, name):
        return self.fixed[name][0] if name in self.fixed else getattr(self.parameters, name)

    def why_off(self, name):
        """Why control ``name`` is disabled (the document fixes it, or it plays no part now); ``""`` if it is on."""
        if name in self.fixed:
            return f"Fixed: {self.fixed[name][1]}"
        if name == "m":
            limits = self.parameters.limits("m")
            if limits.low == limits.high:
                return f"Fixed: {limits.reason}"
        unused = self.unused.get(name) or self.parameters.why_unused(name)
        return f"Disabled: {unused}" if unused else ""

    def set_document(self, line="", *, fixed=None, unused=None):
        """What the open document fixes and leaves unused, and the line naming it (empty: none).

        Parameters
        ----------
        line : str
            Shown in bold above the form (e.g. ``"Feature file: orb.npz — ORB, 500 keypoints, 256 bits, 512x512"``).
        fixed : dict, optional
            ``name -> (value, reason)``: shown read-only with the reason.
        unused : dict, optional
            ``name -> reason``: disabled, the reason in the tooltip.
        """
        if (line, dict(fixed or {}), dict(unused or {})) == (self.document_line.text(), self.fixed, self.unused):
            return  # unchanged: no form to redraw
        self.fixed = dict(fixed or {})
        self.unused = dict(unused or {})
        self.document_line.setText(line)
        self.document_line.setVisible(bool(line))
        for row in range(self.feature_controls.rowCount()):
            for role in (QFormLayout.ItemRole.LabelRole, QFormLayout.ItemRole.FieldRole):
                item = self.feature_controls.itemAt(row, role)
                if item is not None and item.widget() is not None:
                    item.widget().setVisible(bool(line))
        self.sync()

    def add_feature_control(self, label, widget):
        """Add a control that acts on an open document's features (shown with the document's line)."""
        self.feature_controls.addRow(label, widget)
        widget.setVisible(self.document_line.isVisible())

    def _sync_joint_solver(self):
        """Enable the joint solver's choice when it applies; return the note's line: what runs, or why it does not."""
        p, widget = self.parameters, self.widgets["joint_solver"]
        unused = self.unused.get("joint_solver") or p.why_unused("joint_solver")
        if unused:
            return f"{unused[0].upper()}{unused[1:]}."
        widget.setToolTip(f"{TIPS['joint_solver']}\nNow: {CHOICE_TIPS['joint_solver'][p.joint_solver]}")
        return f"Whole image: {p.joint_solver}, at most {jobs.whole_image_budget(p.as_dict())} iterations."

    @staticmethod
    def _range_text(limits):
        low, high = limits.low, limits.high
        if isinstance(low, float) and not float(low).is_integer():
            return f"{low:g} to {high:g}"
        return f"{int(low)} to {int(high)}" if low != high else f"exactly {int(low)}"

    def _why_disabled(self, name):
        if name == "solver":
            return "BIHT inverts bits: switch Measurements to binary first"
        if name == "binary":
            return "BIHT needs bits: choose the primal-dual solver to invert real values"
        return "not available with the other parameters"
