"""Run records: built from what ran, strict JSON, versioned (lbdviewer.evaluation.records)."""

import json

import numpy as np
import pytest

from lbdviewer.evaluation.display import display_stretch
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.image import describe_sites, reconstruct_image
from lbdviewer.evaluation.records import (SCHEMA, check_record, image_source, pixels_sha256, read_sidecar, run_record,
                               solver_record, write_sidecar)
from lbdviewer.reconstruction.sites import grid_sites
from lbdviewer.solvers.patch.biht import BIHT


def _edge(size=24):
    image = np.zeros((size, size))
    image[:, size // 2:] = 1.0
    return image


def _edge_reconstructed(*, m, offset, iterations):
    """The edge image, described by the paper's BRIEF (16 px patches) on a grid and solved jointly."""
    image = _edge()
    pattern = make_pattern("brief", patch_size=16, m=m)
    sites = grid_sites(image.shape, patch_size=16, offset=offset)
    return image, reconstruct_image(describe_sites(image, sites, pattern), sites, pattern, shape=image.shape,
                                    iterations=iterations)


def test_joint_run_is_recorded_as_the_solver_that_ran(tmp_path):
    image, result = _edge_reconstructed(m=128, offset=4, iterations=20)
    shown = display_stretch(result.image, mask=result.covered, reference=image)
    record = run_record("panel:whole-image", result=result, metrics={"psnr": float("inf"), "correlation": 0.9},
                        source=image_source("synthetic edge", image), display=shown.record(),
                        parameters={"descriptor": "brief", "m": 128})
    path = write_sidecar(tmp_path / "run.json", record)
    text = path.read_text()
    assert "Infinity" not in text and "NaN" not in text
    back = read_sidecar(path)
    assert back["solver"]["method"] == result.method == "consistency"
    assert back["solver"]["mode"] == "joint" and back["solver"]["iterations_requested"] == 20
    assert back["solver"]["bit_consistency"] == pytest.approx(result.solver_bit_consistency)
    assert back["seconds"] == pytest.approx(result.seconds)
    assert back["metrics"]["psnr"] is None and back["undefined"]["metrics/psnr"] == "infinite"
    assert back["parameters"]["method"] == "consistency" and back["parameters"]["m"] == 128
    assert back["display"]["rule"] == "fit"
    assert back["source"]["pixels_sha256"] == pixels_sha256(image) and back["source"]["sha256"] is None
    assert back["versions"]["numpy"] == np.__version__


def test_parameters_that_contradict_the_result_are_refused():
    _, result = _edge_reconstructed(m=128, offset=4, iterations=5)
    with pytest.raises(ValueError, match="'method'.*biht.*contradicts.*consistency"):
        run_record("panel:whole-image", result=result, parameters={"method": "biht"})


def test_patch_solver_stopping_at_a_fixed_point_is_recorded():
    pattern = make_pattern("brief", patch_size=16, m=128, rng=1)
    operator = DescriptorOperator(pattern)
    patch = np.zeros((16, 16))
    patch[:, 8:] = 1.0
    bits = operator.describe(patch)[None, :]
    final = list(BIHT(operator, bits, iterations=500).steps())[-1]
    ran = int(final.iterations_run[0])
    assert ran < 500 and final.bit_consistency[0] == 1.0   # this case converges: the test needs it
    record = solver_record(state=final, iterations_requested=500)
    assert record["iterations_run"] == ran and record["rows"] == 1 and record["rows_stopped_early"] == 1
    assert record["stopped_early"] is True and record["stop_reason"] == "all bits consistent"
    budget_spent = solver_record(state=final, iterations_requested=ran)
    assert budget_spent["stopped_early"] is False and budget_spent["stop_reason"] is None


def _biht_state_after(iterations):
    """BIHT's state after ``iterations`` of a 50-iteration run on three random 16x16 patches (FREAK, 128 bits)."""
    operator = DescriptorOperator(make_pattern("freak", patch_size=16, m=128))
    rng = np.random.default_rng(3)
    bits = np.stack([operator.describe(rng.random((16, 16))) for _ in range(3)])
    steps = BIHT(operator, bits, iterations=50).steps()
    state = [next(steps) for _ in range(iterations)][-1]
    steps.close()
    return state


def test_cancelled_run_records_the_last_state_it_saw():
    state = _biht_state_after(4)                            # cancelled after 4 iterations
    record = run_record("panel:live", state=state, status="cancelled", iterations_requested=50,
                        parameters={"method": "biht"})
    assert record["status"] == "cancelled" and record["solver"]["iterations_run"] == 4
    assert record["solver"]["rows"] == 3 and record["solver"]["stopped_early"] is True
    assert record["solver"]["bit_consistency"] == pytest.approx(float(np.mean(state.bit_consistency)))


def test_real_valued_run_has_no_bit_consistency():
    from types import SimpleNamespace
    state = SimpleNamespace(iteration=30, iterations_run=np.array([30, 30]), active=np.array([True, True]),
                            bit_consistency=None, finished=True)
    record = solver_record(state=state, iterations_requested=30)
    assert record["bit_consistency"] is None and record["stopped_early"] is False and record["stop_reason"] is None


def test_image_source_hashes_the_file_and_the_pixels(tmp_path):
    path = tmp_path / "a.bin"
    path.write_bytes(b"abc")
    source = image_source(path, np.ones((2, 3)), crop=(1, 2, 2, 3))
    assert source["kind"] == "file" and source["name"] == "a.bin"
    assert source["sha256"] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert source["shape"] == [2, 3] and source["crop"] == [1, 2, 2, 3]
    assert pixels_sha256(np.ones((2, 3))) != pixels_sha256(np.ones((3, 2)))
    assert image_source(None)["kind"] == "unknown"


@pytest.mark.parametrize("kwargs, message", [
    ({"kind": ""}, "kind must be a non-empty string"),
    ({"kind": "panel:x", "status": "stopped"}, "status must be one of"),
])
def test_bad_record_arguments_name_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        run_record(**kwargs)


def test_reading_refuses_non_strict_json_and_other_schemas(tmp_path):
    record = run_record("figure:x")
    bad = dict(record, metrics={"psnr": float("nan")})
    (tmp_path / "nan.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="not strict JSON"):
        read_sidecar(tmp_path / "nan.json")
    with pytest.raises(ValueError, match="schema"):
        check_record(dict(record, schema="other"))
    with pytest.raises(ValueError, match="lacks the keys"):
        check_record({"schema": SCHEMA})


def test_whole_image_runs_record_the_iterations_they_ran():
    image = _edge()
    pattern = make_pattern("brief", patch_size=16, m=128)
    sites = grid_sites(image.shape, patch_size=16, offset=4)
    bits = describe_sites(image, sites, pattern)
    patchwise = reconstruct_image(bits, sites, pattern, shape=image.shape, mode="patches", iterations=500)
    assert patchwise.iterations_run < 500                              # every patch reached consistent bits
    record = run_record("panel:whole-image", result=patchwise)["solver"]
    assert record["method"] == "biht" and record["iterations_run"] == patchwise.iterations_run
    assert record["stopped_early"] is True and record["stop_reason"] == "all bits consistent"
    budget = reconstruct_image(bits, sites, pattern, shape=image.shape, mode="joint", iterations=5)
    record = run_record("panel:whole-image", result=budget)["solver"]
    assert record["iterations_run"] == 5 and record["stopped_early"] is False


def test_a_sample_source_names_its_file_and_a_record_its_time_in_utc():
    from datetime import datetime

    from lbdviewer.io.files import file_sha256
    from lbdviewer.io.samples import sample_images

    path = sample_images()["shapes"]
    source = image_source("shapes")
    assert source["path"] == str(path) and source["sha256"] == file_sha256(path)
    text = run_record("live", status="cancelled", source="shapes")["created"]
    created = datetime.fromisoformat(text)
    assert created.utcoffset() is not None and created.utcoffset().total_seconds() == 0
    assert len(text) == len("2026-01-31T12:00:00+00:00")                       # to the second


def test_parameters_given_as_numpy_values_agree_with_what_ran():
    _, result = _edge_reconstructed(m=64, offset=8, iterations=5)
    record = run_record("whole", result=result, parameters={"m": np.int64(64), "patch_size": np.array([16])})
    assert record["parameters"]["m"] == 64
    with pytest.raises(ValueError, match="contradicts what the run used"):
        run_record("whole", result=result, parameters={"m": np.int64(32)})


def test_rows_that_ran_the_whole_budget_did_not_stop_early():
    state = _biht_state_after(4)
    assert np.asarray(state.iterations_run).tolist() == [4, 4, 4]
    ran_all = run_record("panel:live", state=state, status="cancelled", iterations_requested=4)["solver"]
    cut = run_record("panel:live", state=state, status="cancelled", iterations_requested=5)["solver"]
    assert ran_all["rows_stopped_early"] == 0 and cut["rows_stopped_early"] == 3


def test_a_record_names_the_matplotlib_it_ran_with():
    from importlib import metadata

    try:
        installed = metadata.version("matplotlib")
    except metadata.PackageNotFoundError:
        installed = None
    assert run_record("figure:x")["versions"]["matplotlib"] == installed
