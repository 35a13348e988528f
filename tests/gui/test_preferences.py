"""What the app remembers between launches: edited in one window, back in the next; garbage gives defaults."""

import argparse

import pytest
from PyQt6.QtCore import QSettings

from lbdviewer import io
from lbdviewer.gui import preferences
from lbdviewer.gui.export_actions import ExportDialog, ExportOptions
from lbdviewer.gui.main_window import DEFAULT_SAMPLE
from lbdviewer.gui.window_layout import VIEW_DEFAULTS
from lbdviewer.gui.model import Parameters
from lbdviewer.gui.preferences import DictStore, restore_parameters, save_parameters

EDITS = {"family": "freak", "patch_size": 48, "offset": 12, "sparsity": 0.25, "iterations": 77,
         "solver": "primal-dual", "lam": 3.0, "joint_solver": "coherent", "seed": 5}


def shown(window, name):
    return window.controls.value_of(name)


def test_parameters_and_overlays_edited_in_the_form_come_back_in_the_next_window(qtbot, make_window):
    first = make_window()
    assert first.parameters.as_dict() == Parameters.DEFAULTS  # nothing remembered yet
    first.controls.set_value("m", 1000)  # BRIEF's M, remembered per family
    for name, value in EDITS.items():
        first.controls.set_value(name, value)
    first.controls.set_value("m", 700)  # FREAK's
    first.pattern_panel.pairs_mode.setCurrentIndex(first.pattern_panel.pairs_mode.findData("none"))
    first.whole.edges_box.setChecked(True)
    first.menu_actions.stretch.trigger()  # View > Stretch off
    first.close()

    second = make_window()
    for name, value in {**EDITS, "m": 700}.items():
        assert getattr(second.parameters, name) == value, name
        assert shown(second, name) == pytest.approx(value), name  # the form shows it too
    assert second.pattern_panel.pairs_mode.currentData() == "none" and second.whole.edges_box.isChecked()
    assert not second.menu_actions.stretch.isChecked()
    second.controls.set_value("family", "brief")
    assert shown(second, "m") == 1000


def test_size_and_dock_state_come_back(qtbot, make_window):
    first = make_window(size=(1100, 760))
    first.docks["live"].hide()
    first.close()
    second = make_window(size=None)
    # the height is restored (not the default 1000); offscreen, Qt fits the width to its 800-px screen
    assert second.height() == 760 and not second.docks["live"].isVisible()


def test_the_last_image_is_reopened_on_launch_and_a_missing_one_gives_the_sample(qtbot, make_window, make_image,
                                                                               tmp_path):
    path = tmp_path / "last.png"
    io.save_png(path, make_image())
    first = make_window()
    with qtbot.waitSignal(first.image_loaded, timeout=10000):
        first.load_path(str(path))
    first.close()
    second = make_window(load_sample=True, show=False)
    qtbot.waitUntil(lambda: second.session.source == str(path), timeout=10000)
    second.close()

    path.write_bytes(b"no longer a PNG")  # the file is there but does not load
    third = make_window(load_sample=True, show=False)
    qtbot.waitUntil(lambda: third.session.source == f"sample:{DEFAULT_SAMPLE}", timeout=15000)
    assert third.message_box is None  # no error box at start-up ...
    third.close()
    path.unlink()  # ... nor when the file is gone
    fourth = make_window(load_sample=True, show=False)
    qtbot.waitUntil(lambda: fourth.session.source == f"sample:{DEFAULT_SAMPLE}", timeout=15000)
    assert fourth.message_box is None


GARBAGE = {
    "parameters/family": '"sideways"', "parameters/m": "not json", "parameters/patch_size": "9999",
    "parameters/offset": "[1, 2]", "parameters/sparsity": "true", "parameters/lam": '"ten"',
    "parameters/binary": "0", "parameters/m_by_family": '{"freak": 5000, "brief": "x"}',
    "view/pairs": '"diagonal"', "view/edges": '"yes"', "view/stretch": "2",
    "window/geometry": "garbage", "window/state": "17", "paths/last_folder": "/no/such/folder",
    "paths/recent": "7", "paths/last_image": "[]", "export/dpi": "5", "export/formats": '["gif"]',
    "export/width": "99",
}


def test_garbage_in_the_settings_gives_the_defaults_and_says_so(qtbot, make_window, settings, tmp_path):
    for key, value in GARBAGE.items():
        settings.setValue(key, value)
    window = make_window(load_sample=True)
    assert window.parameters.as_dict() == Parameters.DEFAULTS
    assert window.parameters.m_by_family() == {"brief": 512}
    assert {key: value for key, value in window._view_values().items()} == VIEW_DEFAULTS
    message = window.statusBar().currentMessage()
    assert "defaults used" in message and "parameters/patch_size" in message and "view/pairs" in message
    assert window.last_folder() != "/no/such/folder" and window.recent_files() == []
    assert window.exports.remembered_options() == ExportOptions()
    qtbot.waitUntil(lambda: window.session.source == f"sample:{DEFAULT_SAMPLE}", timeout=15000)
    assert window.message_box is None


def test_a_settings_file_of_random_bytes_opens_with_the_defaults(qtbot, make_window, tmp_path):
    path = tmp_path / "broken.ini"
    path.write_bytes(bytes(range(256)) * 8)
    window = make_window(store=QSettings(str(path), QSettings.Format.IniFormat))
    assert window.parameters.as_dict() == Parameters.DEFAULTS


def test_reset_settings_restores_the_defaults_and_keeps_the_recent_files(qtbot, make_window, settings):
    window = make_window()
    for name, value in EDITS.items():
        window.controls.set_value(name, value)
    window.whole.edges_box.setChecked(True)
    settings.setValue("paths/recent", ["/some/image.png"])
    window.reset_settings()
    assert window.parameters.as_dict() == Parameters.DEFAULTS and window.parameters.m_by_family() == {"brief": 512}
    assert shown(window, "family") == "brief" and shown(window, "patch_size") == 32
    assert window._view_values() == VIEW_DEFAULTS
    window.close()
    again = make_window()
    assert again.parameters.as_dict() == Parameters.DEFAULTS
    assert again.recent_files() == ["/some/image.png"]


def test_export_choices_are_remembered_and_shown_by_the_dialog(qtbot, window, tmp_path):
    options = ExportOptions(("png", "svg"), 5.5, 600)
    window.exports._remember_options(options)
    assert window.exports.remembered_options() == options
    dialog = ExportDialog("Export figure", str(tmp_path / "fig"), window, window.exports.remembered_options())
    qtbot.addWidget(dialog)
    assert dialog.options() == options


def test_no_restore_starts_on_an_empty_temporary_store(monkeypatch):
    from lbdviewer.gui import app

    used = {}
    monkeypatch.setattr(app, "_run_window", lambda _app, args, settings, size, shot: used.update(
        path=settings.fileName(), keys=settings.allKeys()) or 0)
    QSettings("lbdviewer", "lbdviewer").setValue("parameters/m", "1000")
    args = argparse.Namespace(image=None, features=None, screenshot=None, size=None, no_restore=True)
    assert app.run_app(args) == 0
    assert used["keys"] == [] and used["path"] != QSettings("lbdviewer", "lbdviewer").fileName()


def test_stored_solver_and_real_values_restore_in_an_order_the_model_accepts():
    store = DictStore()
    save_parameters(store, Parameters(solver="primal-dual", binary=False, family="ra-freak", m=300))
    restored, ignored = restore_parameters(store)
    assert ignored == []
    assert (restored.solver, restored.binary, restored.family, restored.m) == ("primal-dual", False, "ra-freak", 300)
    store.setValue("parameters/solver", '"biht"')  # BIHT with real values: refused, the stored binary wins
    restored, ignored = restore_parameters(store)
    assert ignored == ["parameters/binary"] and restored.solver == "biht" and restored.binary is True


def test_reset_forgets_all_but_the_recent_files():
    store = DictStore({"paths/recent": ["a"], "parameters/m": "3", "window/state": b"x"})
    preferences.reset(store)
    assert store.values == {"paths/recent": ["a"]}
