"""The parameter form: widgets bound to the Qt-free :class:`~lbdviewer.gui.model.Parameters`.

Widgets only ever offer what the model accepts: spin-box ranges and enabled
combo items come from the model's limits, with the reason in the tooltip and
in a note under the form. If the model still refuses a value, the widget goes
back to the model's value and :attr:`ParametersPanel.refused` carries the
reason (the window shows it in the status bar).
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

from PyQt6.QtCore import Qt, pyqtSignal
from PyQt6.QtGui import QValidator
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
from lbdviewer.reconstruction.image import DEFAULT_ITERATIONS

CHOICES = {
    "family": (("brief", "BRIEF"), ("freak", "FREAK"), ("ra-freak", "RA-FREAK"), ("ex-freak", "EX-FREAK")),
    "solver": (("biht", "BIHT (1-bit CS)"), ("primal-dual", "Primal-dual l1")),
    "sites": (("grid", "grid with offset"), ("fast", "FAST keypoints")),
    "mode": (("patches", "patchwise + averaging"), ("joint", "joint (one problem)")),
    "joint_solver": (("consistency", "sign consistency"), ("coherent", "coherent contrast"),
                     ("likelihood", "noisy-bit likelihood")),
    "binary": ((True, "binary (bits)"), (False, "real-valued")),
}
TIPS = {
    "family": "Descriptor family whose pattern is inverted",
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
    "family": "Descriptor", "patch_size": "Patch size P", "m": "Measurements M", "sparsity": "Sparsity K",
    "offset": "Offset N_off", "sites": "Sites", "mode": "Whole image", "joint_solver": "Joint solver",
    "solver": "Solver",
    "iterations": "Iterations", "lam": "Lambda", "binary": "Measurements", "seed": "Seed",
}
ORDER = ("family", "patch_size", "m", "binary", "solver", "sparsity", "iterations", "lam", "seed",
         "offset", "sites", "mode", "joint_solver")


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
        self.feature_file = False
        self.widgets = {}
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        for name in ORDER:
            widget = self._make_widget(name)
            widget.setToolTip(TIPS[name])
            self.widgets[name] = widget
            label = QLabel(LABELS[name])
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
        layout.addLayout(form)
        layout.addWidget(self.note)
        layout.addWidget(self.refusal)
        layout.addStretch(1)
        parameters.subscribe(lambda name, value: self.sync())
        self.sync()

    def _make_widget(self, name):
        if name in CHOICES:
            widget = QComboBox()
            for value, text in CHOICES[name]:
                widget.addItem(text, value)
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
        """Show the model's values, ranges and allowed choices."""
        p = self.parameters
        for name, widget in self.widgets.items():
            widget.blockSignals(True)
            try:
                if isinstance(widget, QComboBox):
                    allowed = p.allowed(name)
                    for index in range(widget.count()):
                        item = widget.model().item(index)
                        enabled = widget.itemData(index) in allowed
                        item.setEnabled(enabled)
                        tip = (CHOICE_TIPS.get(name, {}).get(widget.itemData(index)) if enabled
                               else self._why_disabled(name))
                        widget.setItemData(index, tip, Qt.ItemDataRole.ToolTipRole)
                    widget.setCurrentIndex(widget.findData(getattr(p, name)))
                else:
                    limits = p.limits(name)
                    if name == "sparsity":
                        widget.setRange(round(limits.low * 100), round(limits.high * 100))
                        widget.setValue(round(p.sparsity * 100))
                    else:
                        widget.setRange(limits.low, limits.high)
                        widget.setValue(getattr(p, name))
                    widget.setToolTip(f"{TIPS[name]}\nAllowed: {self._range_text(limits)} ({limits.reason})")
            finally:
                widget.blockSignals(False)
        m_limits = p.limits("m")
        self.widgets["m"].setEnabled(m_limits.low < m_limits.high)
        self.widgets["sparsity"].setEnabled(p.solver == "biht")
        self.widgets["lam"].setEnabled(p.solver == "primal-dual")
        self.note.setText(
            f"M: {self._range_text(m_limits)} — {m_limits.reason}.\n"
            + ("BIHT needs bits: pick the primal-dual solver for real values." if p.solver == "biht"
               else "Primal-dual inverts bits or real values.")
            + "\n" + self._sync_joint_solver()
        )

    def set_feature_file(self, is_open):
        """A feature file is open (True) or not: its inversion keeps its own solver, so the joint solver is unused."""
        self.feature_file = bool(is_open)
        self.sync()

    def _sync_joint_solver(self):
        """Enable the joint solver's choice when it applies; return the note's line: what runs, or why it does not."""
        p, widget = self.parameters, self.widgets["joint_solver"]
        unused = p.why_unused("joint_solver")
        if self.feature_file and not unused:
            unused = "a feature file is inverted by its own solver (as lbdviewer invert)"
        widget.setEnabled(not unused)
        if unused:
            widget.setToolTip(f"{TIPS['joint_solver']}\nDisabled: {unused}")
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
