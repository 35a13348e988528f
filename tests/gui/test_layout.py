"""Geometry at the two screen sizes users have: nothing clipped, every panel sized by design."""

import numpy as np
import pytest
from PyQt6.QtCore import QRectF
from PyQt6.QtGui import QImage, QPainter

from lbdviewer.gui.jobs import WholeUpdate

SIZES = [(1280, 720), (1920, 1080)]


def canvases(window):
    return {name: canvas for name, canvas in window.panels().items()}


def visible_rect(widget):
    """The part of ``widget`` the window shows, in window coordinates."""
    top_left = widget.mapTo(widget.window(), widget.rect().topLeft())
    return widget.rect().translated(top_left)


def assert_inside(inner, outer, what):
    assert outer.contains(inner), f"{what}: {inner} is not inside {outer}"


def tick_label_rects(axis):
    """Scene rectangles of an axis's tick labels, as pyqtgraph lays them out."""
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _, _, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [(axis.mapRectToScene(QRectF(rect)), text) for rect, _, text in texts]


def check_canvas(name, canvas):
    window_rect = canvas.window().rect()
    assert canvas.width() > 40 and canvas.height() > 40, f"{name} is {canvas.width()}x{canvas.height()}"
    assert_inside(visible_rect(canvas), window_rect, name)
    title = canvas.title
    assert title.fontMetrics().horizontalAdvance(title.text()) <= title.width(), f"{name}: title clipped"
    assert title.width() <= canvas.width()
    scene = QRectF(canvas.graphics.viewport().rect())
    image = canvas.view.sceneBoundingRect()
    assert_inside(image, scene.adjusted(-1, -1, 1, 1), f"{name}: image view")
    if canvas.colorbar is not None:
        bar = canvas.colorbar.sceneBoundingRect()
        assert_inside(bar, scene.adjusted(-1, -1, 1, 1), f"{name}: colour bar")
        labels = tick_label_rects(canvas.colorbar.axis)
        assert len(labels) >= 2, f"{name}: colour bar has {len(labels)} tick labels"
        for rect, text in labels:
            assert_inside(rect, scene, f"{name}: colour bar tick {text!r}")


@pytest.fixture
def busy_window(qtbot, window):
    """The window after a whole-image run, then a parameter edit (a long "previous run" title)."""
    qtbot.waitUntil(lambda: window.session.live is not None and window.session.live.status == "completed",
                    timeout=10000)
    with qtbot.waitSignal(window.whole_finished, timeout=20000):
        window.run_whole()
    window.parameters.m = 96
    window.rebuild()
    assert window.whole.state_label.full_text().startswith("Outdated")
    return window


def check_window(qtbot, window, size):
    assert (window.width(), window.height()) == size
    for name, canvas in canvases(window).items():
        check_canvas(name, canvas)
    result = window.whole.result
    state = window.whole.state_label
    assert state.full_text() == "Outdated: parameters changed (Ctrl+R to run again)"
    assert not state.is_elided() and result.title_text() == "Reconstruction (outdated)"  # read in full
    assert result.view.width() > 0.8 * result.graphics.width()  # the title took no room from the image
    for label in (window.whole.metrics_label, window.live.iteration_label):
        assert label.fontMetrics().horizontalAdvance(label.text()) <= label.width()


def test_a_cancelled_title_is_read_in_full_at_1280x720(qtbot, window):
    window.resize(*SIZES[0])
    window.reset_layout()
    qtbot.wait(50)
    window.session.start_whole().close()  # recorded as running; its updates are fed by hand below
    window.session.whole_progress(WholeUpdate(0.47, np.zeros((96, 96))))
    window.session.whole_ended(False)
    title = window.whole.state_label
    assert title.full_text() == "Cancelled at 47 %: partial estimate" and not title.is_elided()


def test_nothing_is_clipped_and_the_panels_grow_with_the_window(qtbot, busy_window):
    """At 1280x720 and 1920x1080 (after a resize, and in the default layout), no title, image or tick is cut."""
    window = busy_window
    window.resize(*SIZES[0])
    window.reset_layout()
    qtbot.wait(50)
    check_window(qtbot, window, SIZES[0])
    small = {key: window.docks[key].width() for key in ("pattern", "live")}
    small_whole = window.docks["whole"].height()
    window.resize(*SIZES[1])  # as a user enlarges the window
    qtbot.wait(50)
    for key, width in small.items():
        assert window.docks[key].width() >= 1.35 * width, f"{key} stayed {window.docks[key].width()} px wide"
    assert window.docks["whole"].height() >= 1.35 * small_whole
    check_window(qtbot, window, SIZES[1])
    window.reset_layout()
    qtbot.wait(50)
    check_window(qtbot, window, SIZES[1])
