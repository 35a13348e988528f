"""The Qt-free Session: document state, run records built from what ran, staleness (no qtbot)."""

import json

import numpy as np
import pytest

from lbdviewer.gui import sidecars
from lbdviewer.gui.model import Parameters
from lbdviewer.gui.session import Session
from lbdviewer.io.strict_json import dumps_strict
from lbdviewer.evaluation.records import check_record


@pytest.fixture
def session(make_image):
    s = Session()
    s.set_image(make_image(), "sample:test", sha256="ab" * 32)
    s.rebuild(Parameters(patch_size=16, m=128, iterations=30, offset=8).as_dict())
    return s


def run_to_end(session, items, *, stop_after=None):
    """Feed a job's updates to the session as the worker would, optionally stopping early."""
    for count, update in enumerate(items, start=1):
        session.whole_progress(update)
        if stop_after is not None and count >= stop_after:
            session.whole_ended(False)
            return
    session.whole_ended(True)


def test_events_reach_subscribers_in_order(make_image):
    s = Session()
    heard = []
    s.subscribe(lambda name, value: heard.append(name))
    s.set_image(make_image(), "sample:test")
    s.rebuild(Parameters(patch_size=16, m=64).as_dict())
    items = s.start_live((0, 0))
    s.live_progress(next(items))
    assert heard == ["image", "pattern", "sites", "live", "live"]
    assert s.live.update.iteration == 1 and s.live.status == "running"


def test_a_joint_run_records_the_solver_it_ran_not_the_form(session):
    assert session.parameters["solver"] == "biht"  # the form asks for BIHT ...
    run_to_end(session, session.start_whole())
    run = session.whole
    assert run.status == "completed" and run.method == "consistency"  # ... the joint solve ran sign consistency
    record = check_record(sidecars.whole_record("figure:whole", session))
    solver = record["solver"]
    assert (solver["method"], solver["mode"], record["status"]) == ("consistency", "joint", "completed")
    assert solver["iterations_run"] is not None and 1 <= solver["iterations_run"] <= solver["iterations_requested"]
    assert solver["stopped_early"] == (solver["iterations_run"] < solver["iterations_requested"])
    assert record["seconds"] > 0 and record["metrics"]["psnr"] > 0 and record["extra"]["current"] is True
    assert record["parameters"]["method"] == "consistency" and "solver" not in record["parameters"]
    assert record["source"]["sha256"] == "ab" * 32 and record["source"]["name"] == "test"
    json.loads(dumps_strict(record))  # strict JSON


def test_a_parameter_edit_marks_the_result_stale_and_back(session):
    run_to_end(session, session.start_whole())
    current = session.parameters
    assert not session.whole.stale
    session.rebuild({**current, "m": 64})
    assert session.whole.stale
    assert session.whole.title().startswith("Outdated") and session.whole.metrics_text().startswith("Previous run:")
    assert sidecars.whole_record("figure:whole", session)["extra"]["current"] is False
    session.rebuild(current)
    assert not session.whole.stale and not session.whole.metrics_text().startswith("Previous")


def test_a_run_edited_while_it_ran_ends_outdated(session):
    items = session.start_whole()
    session.rebuild({**session.parameters, "seed": 5})
    run_to_end(session, items)
    assert session.whole.status == "completed" and session.whole.stale
    assert session.whole.parameters["seed"] == 0  # the record keeps what the run used


def test_a_cancelled_run_keeps_no_result_and_no_metrics(session):
    run_to_end(session, session.start_whole())
    session.rebuild({**session.parameters, "offset": 4})
    run_to_end(session, session.start_whole(), stop_after=2)
    run = session.whole
    assert run.status == "cancelled" and run.result is None and run.metrics is None
    assert run.metrics_text() == ""  # the previous run's metrics are not shown under "cancelled"
    assert run.title().startswith("Cancelled")
    assert not session.has_whole_result()
    record = check_record(sidecars.whole_record("panel:reconstruction", session))
    assert record["status"] == "cancelled" and record["metrics"] == {} and record["extra"]["fraction_done"] < 1
    assert record["solver"]["method"] == "consistency" and record["parameters"]["offset"] == 4
    assert record["seconds"] > 0 and record["solver"]["iterations_run"] >= 1


def test_a_patchwise_run_records_patchwise_biht(session):
    session.rebuild({**session.parameters, "mode": "patches"})
    run_to_end(session, session.start_whole())
    record = sidecars.whole_record("figure:whole", session)
    solver = record["solver"]
    assert (solver["mode"], solver["method"], record["status"]) == ("patches", "biht", "completed")
    assert solver["iterations_requested"] == 30 and 1 <= solver["iterations_run"] <= 30  # the most any patch ran


def test_a_real_valued_live_run_has_no_bit_consistency(session):
    session.rebuild({**session.parameters, "solver": "primal-dual", "binary": False, "iterations": 5})
    items = session.start_live((8, 8))
    for update in items:
        session.live_progress(update)
    session.live_ended(True)
    record = check_record(sidecars.live_record("figure:live", session))
    assert record["solver"]["method"] == record["parameters"]["method"] == "primal-dual"
    assert record["parameters"]["binary"] is False and record["solver"]["bit_consistency"] is None
    assert record["solver"]["iterations_run"] == 5 and record["status"] == "completed"
    assert record["source"]["crop"] == [8, 8, 16]
    np.testing.assert_array_equal(session.live.patch, session.image[8:24, 8:24])


def test_a_live_biht_run_says_when_it_stopped_early(session):
    session.rebuild({**session.parameters, "iterations": 500})
    for update in session.start_live((16, 16)):
        session.live_progress(update)
    session.live_ended(True)
    update = session.live.update
    assert update.finished and update.stopped_early and update.iteration < 500  # BIHT reached a fixed point
    assert session.live.summary().startswith(f"stopped at iteration {update.iteration}: ")
    solver = sidecars.live_record("panel:live-reconstruction", session)["solver"]
    assert solver["stopped_early"] is True and solver["iterations_run"] == update.iteration


def test_no_site_refuses_to_start(make_image):
    s = Session()
    s.set_image(make_image()[:20, :20], "sample:tiny")
    s.rebuild(Parameters(patch_size=32).as_dict())
    with pytest.raises(ValueError, match="no patch site fits"):
        s.start_whole()
    assert s.whole is None


def test_a_patchwise_run_shows_its_estimate_as_it_progresses(session):
    session.rebuild({**session.parameters, "mode": "patches", "offset": 4})  # 289 sites: 5 chunks of 64
    seen = []
    session.subscribe(lambda name, run: seen.append((run.fraction, run.estimate)) if name == "whole"
                      and run.status == "running" and run.estimate is not None else None)
    run_to_end(session, session.start_whole())
    partial = [(fraction, estimate) for fraction, estimate in seen if fraction < 1]
    assert len(partial) >= 3
    covered = [np.count_nonzero(estimate) for _, estimate in partial]
    assert covered == sorted(covered) and covered[0] < covered[-1]  # the estimate fills in as patches are solved


def test_a_feature_file_has_no_pixels_and_pairs_only_with_its_own_image(make_image):
    from types import SimpleNamespace

    s = Session()
    s.rebuild(Parameters(patch_size=16, m=64).as_dict())
    heard = []
    s.subscribe(lambda name, value: heard.append((name, s.features is not None)))
    digest = "ab" * 32
    features = SimpleNamespace(image_shape=(40, 48), descriptor="orb", keypoints=SimpleNamespace(x=[1, 2]),
                               image_sha256=digest)
    s.set_features(features, "/data/orb.npz")
    assert heard[:2] == [("image", True), ("keypoints", True)]  # heard once the feature file is known
    assert s.image.shape == (40, 48) and not s.has_pixels and s.mode == "features"
    s.rebuild(s.parameters)
    assert s.pattern is None and len(s.sites) == 0  # the form's pattern plays no part
    with pytest.raises(ValueError, match="no keypoint selected"):
        s.start_live((0, 0))
    assert s.pairing_for((40, 48), "cd" * 32) == "other"  # another image of the same size: a new document
    assert s.pairing_for((40, 40), digest) == "other"
    assert s.pairing_for((40, 48), digest) == "original"
    s.pair_image(make_image()[:40, :48], "/data/original.png", sha256=digest, relation="original")
    assert s.has_pixels and s.features is features and s.pairing == "original"
    assert s.close_features() and s.mode == "pattern" and s.features is None and s.source == "/data/original.png"
