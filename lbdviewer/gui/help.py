"""Help > About (version, the paper, licences) and Help > Keyboard shortcuts.

The text is made by plain functions (:func:`about_html`, :func:`shortcuts_html`),
so what the dialogs say can be checked without showing them; the licences
are read from the installed packages' metadata, not written down here.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

import html
from importlib import metadata

from PyQt6.QtCore import Qt
from PyQt6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout

from lbdviewer.gui.menus import SHORTCUTS

#: The paper lbdviewer implements.
CITATION = ("E. d'Angelo, L. Jacques, A. Alahi and P. Vandergheynst, “From Bits to Images: Inversion of Local "
            "Binary Descriptors”, IEEE Transactions on Pattern Analysis and Machine Intelligence 36(5), 2014.")
#: The packages the app is built on, whose licences About lists.
DEPENDENCIES = ("numpy", "scipy", "PyWavelets", "opencv-contrib-python-headless", "scikit-image", "numba",
                "PyQt6", "pyqtgraph", "superqt", "matplotlib", "dask", "tqdm")
#: Licences the metadata of some packages does not state in one short field.
KNOWN_LICENCES = {"PyQt6": "GPL v3 (PyQt6); Qt itself: LGPL v3", "opencv-contrib-python-headless": "Apache 2.0"}


def package_licence(name):
    """``(version, licence)`` of an installed package from its metadata (``None`` when not installed).

    Examples
    --------
    >>> package_licence("numpy")[1] != ""
    True
    """
    try:
        info = metadata.metadata(name)
    except metadata.PackageNotFoundError:
        return None
    if name in KNOWN_LICENCES:
        return info["Version"], KNOWN_LICENCES[name]
    licence = info.get("License-Expression") or ""
    if not licence:
        text = (info.get("License") or "").strip()
        licence = text.splitlines()[0] if text and len(text) < 120 else ""
    if not licence:
        classifiers = [c.split(" :: ")[-1] for c in info.get_all("Classifier") or [] if c.startswith("License ::")]
        licence = ", ".join(classifiers) or "see the package"
    return info["Version"], licence


def lbdviewer_version():
    try:
        return metadata.version("lbdviewer")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def about_html():
    """The About text: what lbdviewer is, its version, the paper, its licence and its dependencies' licences."""
    rows = []
    for name in DEPENDENCIES:
        found = package_licence(name)
        if found is not None:
            rows.append(f"<tr><td>{html.escape(name)}</td><td>{html.escape(found[0])}</td>"
                        f"<td>{html.escape(found[1])}</td></tr>")
    return (f"<h2>lbdviewer {html.escape(lbdviewer_version())}</h2>"
            "<p>See what a local binary descriptor encodes by turning its bits back into an image: the paper's "
            "patterns (BRIEF, FREAK and its variants) and the descriptors real libraries ship (ORB, BRISK, "
            "BEBLID, TEBLID, AKAZE, OpenCV and scikit-image BRIEF, OpenCV FREAK), modelled bit for bit.</p>"
            f"<p><b>Implements</b>: {html.escape(CITATION)}</p>"
            "<p><b>Licence</b>: BSD-3-Clause. The sample images: CC0 and public domain (scikit-image's camera "
            "and astronaut), or drawn by lbdviewer (resources/LICENSES.md).</p>"
            "<p><b>Built on</b>:</p><table cellspacing='6'><tr><th align='left'>package</th>"
            "<th align='left'>version</th><th align='left'>licence</th></tr>" + "".join(rows) + "</table>")


def shortcuts_html():
    """Every keyboard shortcut (:data:`~lbdviewer.gui.menus.SHORTCUTS`) as a table."""
    rows = "".join(f"<tr><td><b>{html.escape(keys)}</b></td><td>{html.escape(what)}</td></tr>"
                   for keys, what in SHORTCUTS)
    return ("<h3>Keyboard shortcuts</h3><table cellspacing='6'>" + rows + "</table>"
            "<p>Space, S and Esc work wherever the focus is in the window: they never edit a field or toggle "
            "a check box.</p>")


def show_text_dialog(parent, title, text):
    """A non-modal dialog showing ``text`` (HTML); returned (kept by the caller)."""
    dialog = QDialog(parent)
    dialog.setWindowTitle(title)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
    browser = QTextBrowser()
    browser.setOpenExternalLinks(False)
    browser.setHtml(text)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dialog.close)
    layout = QVBoxLayout(dialog)
    layout.addWidget(browser)
    layout.addWidget(buttons)
    dialog.resize(620, 520)
    dialog.show()
    return dialog
