"""The app's own thread pools: a paused live solve and a running whole-image solve hold up nothing else."""

import threading

import numpy as np

from lbdviewer import io
from lbdviewer.gui import jobs
from lbdviewer.gui.export_actions import ExportOptions


def start_paused_live_and_long_whole(qtbot, window):
    """A live solve paused mid-run (holding its thread) and a whole-image run of minutes (holding another)."""
    window.parameters.solver = "primal-dual"
    window.parameters.iterations = 2000
    window.parameters.offset = 1
    window.parameters.mode = "patches"  # 6561 patches x 2000 iterations: far longer than this test
    window.live.delay.setValue(20)  # the live solve is still running when it is paused
    window.rebuild()
    qtbot.waitUntil(lambda: window.session.live is not None and window.session.live.update is not None
                    and window.session.live.update.iteration >= 2, timeout=60000)
    window.play_pause()
    assert window.live_runner.paused and window.live_runner.running
    window.run_whole()
    qtbot.waitUntil(lambda: window.session.whole.fraction > 0, timeout=10000)
    assert window.pools["live"].activeThreadCount() == 1 and window.pools["whole"].activeThreadCount() == 1


def test_a_file_opens_while_a_live_solve_is_paused_and_the_whole_image_runs(qtbot, window, tmp_path, make_image):
    path = tmp_path / "next.png"
    io.save_png(path, make_image(phase=2.0))
    start_paused_live_and_long_whole(qtbot, window)
    # on Qt's shared pool (2 threads here) the load waited for the whole image to end, minutes later
    with qtbot.waitSignal(window.image_loaded, timeout=2000):
        window.load_path(str(path))
    assert window.session.source == str(path)


def test_an_export_is_written_while_both_solves_hold_their_threads(qtbot, window, tmp_path):
    start_paused_live_and_long_whole(qtbot, window)
    with qtbot.waitSignal(window.exports.exported, timeout=30000):
        window.exports.export_figure("maps", str(tmp_path / "maps"), ExportOptions(("png",)))
    assert window.session.whole.status == "running" and window.live_runner.paused  # neither was stopped for it
    window.stop()


def test_metrics_are_never_computed_on_the_gui_thread(qtbot, window, monkeypatch):
    on_gui_thread = []
    compute = jobs.result_metrics

    def spied(original, result):
        on_gui_thread.append(threading.current_thread() is threading.main_thread())
        return compute(original, result)

    monkeypatch.setattr(jobs, "result_metrics", spied)
    window.parameters.offset = 8
    window.rebuild()
    with qtbot.waitSignal(window.whole_finished, timeout=30000):
        window.run_whole()
    assert window.session.whole.metrics["psnr"] > 0
    assert on_gui_thread == [False]


def test_the_describing_phase_of_a_whole_image_run_can_be_cancelled(qtbot, window):
    image = np.random.default_rng(0).random((768, 768))
    window.session.set_image(image, "noise", sha256="0" * 64)
    window.parameters.offset = 1  # ~540,000 sites to describe
    window.rebuild()
    stages = []
    window.session.subscribe(lambda name, run: stages.append((run.stage, run.fraction)) if name == "whole" else None)
    window.run_whole()
    qtbot.waitUntil(lambda: sum(stage == "describing" and fraction > 0 for stage, fraction in stages) >= 2,
                    timeout=30000)  # the describing phase reports its progress: points where it can stop
    with qtbot.waitSignal(window.whole_finished, timeout=10000) as blocker:
        window.cancel_whole()
    assert blocker.args == [False]
    run = window.session.whole
    assert run.status == "cancelled" and run.stage == "describing" and run.fraction < jobs.DESCRIBE_SHARE
    qtbot.waitUntil(lambda: window.pools["whole"].activeThreadCount() == 0, timeout=10000)
