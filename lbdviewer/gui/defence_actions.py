"""The window's slots of the Defence panel: what to preview, on a worker, and what comes back.

Mixed into :class:`~lbdviewer.gui.main_window.MainWindow`: the panel asks
for a defence (:attr:`~lbdviewer.gui.defence_panel.DefencePanel.requested`);
the session says what it applies to (:meth:`~lbdviewer.gui.session.Session.defence_inputs`:
the library's features of the open image, or the feature file's, and the
original image when known); :func:`lbdviewer.defences.preview.iter_preview_defence`
runs on the window's ``defence`` pool and its progress and result go back to
the panel. A new document stops the preview and marks the panel outdated.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

from lbdviewer.defences.preview import DefencePreview, iter_preview_defence


class DefenceActions:
    """Slots of the Defence panel (a mixin of the main window)."""

    def _connect_defence(self):
        self.defence_panel.requested.connect(self.preview_defence)
        self.defence_runner.progressed.connect(self._on_defence_item)
        self.defence_runner.failed.connect(lambda message: self.defence_panel.show_message(
            f"The preview failed: {message}"))

    def preview_defence(self, defence):
        """Preview ``defence`` (a :class:`~lbdviewer.defences.transforms.Defence`, or None) on what is shown."""
        features, image, reason = self.session.defence_inputs()
        if features is None:
            self.defence_runner.stop()
            self.defence_panel.show_message(f"Nothing to defend: {reason}.")
            return
        self._defence_image = image
        # the inversion's budget is the form's, as the whole-image panel's
        self.defence_runner.start(iter_preview_defence(features, defence, image=image,
                                                       iterations=self.parameters.iterations))

    def _on_defence_item(self, item):
        if isinstance(item, DefencePreview):
            self.defence_panel.show_preview(item, self._defence_image)
        else:
            self.defence_panel.show_progress(item)

    def _defence_document_changed(self):
        """A new document: the preview no longer describes it."""
        self.defence_runner.stop()
        self.defence_panel.mark_outdated()
