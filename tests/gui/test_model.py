"""The Qt-free parameter model: validation on assignment, dependent limits, notifications."""

import subprocess
import sys

import pytest

from lbdviewer.gui.model import Parameters
from lbdviewer.solvers.patch.primal_dual import DEFAULT_LAM


def test_defaults_are_the_papers_but_lambda():
    p = Parameters()
    assert (p.family, p.patch_size, p.m, p.sparsity, p.solver, p.iterations, p.binary) == (
        "brief", 32, 512, 0.4, "biht", 200, True)
    assert p.lam == DEFAULT_LAM == 10.0  # the paper's 0.1 leaves most patches constant (test_primal_dual_lam.py)


@pytest.mark.parametrize(("name", "value", "message"), [
    ("m", 0, "m must be between 1 and 4096"),
    ("patch_size", 200, "patch_size must be between 8 and 128, got 200"),
    ("family", "sift", "family must be one of"),
    ("offset", 33, "offset must be between 1 and 32, got 33"),
    ("sparsity", 1.5, "sparsity must be between"),
    ("iterations", 2.5, "iterations must be an integer, got 2.5"),
    ("binary", False, "binary must be True while the solver is BIHT"),
])
def test_invalid_assignments_are_refused_and_leave_the_model_unchanged(name, value, message):
    p = Parameters()
    before = p.as_dict()
    with pytest.raises(ValueError, match=message):
        setattr(p, name, value)
    assert p.as_dict() == before


def test_dependent_parameters_are_clamped_and_announced():
    p = Parameters(m=2000, offset=32)
    heard = []
    p.subscribe(lambda name, value: heard.append((name, value)))
    p.family = "ra-freak"
    assert p.m == 903 and heard == [("family", "ra-freak"), ("m", 903)]
    p.patch_size = 16
    assert p.offset == 16 and ("offset", 16) in heard
    p.family = "ex-freak"
    assert p.limits("m").low == p.limits("m").high == 903


def test_biht_and_real_values_exclude_each_other():
    p = Parameters()
    assert p.allowed("binary") == (True,)
    p.solver = "primal-dual"
    p.binary = False
    assert p.allowed("solver") == ("primal-dual",)
    with pytest.raises(ValueError, match="switch to binary first"):
        p.solver = "biht"


def test_the_models_do_not_import_qt():
    """The parameter model, the session and what they use run without Qt (and their tests without qtbot)."""
    code = ("import sys, lbdviewer.gui.model, lbdviewer.gui.session, lbdviewer.gui.sidecars, lbdviewer.gui.jobs, "
            "lbdviewer.gui.presenter, lbdviewer.gui.runs, lbdviewer.gui.overlay, lbdviewer.gui.library_jobs; "
            "print(any(m.startswith(('PyQt', 'pyqtgraph', 'superqt', 'qtpy')) for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_m_is_remembered_per_family():
    p = Parameters()
    p.m = 500
    p.family = "ex-freak"
    assert p.m == 903
    p.family = "brief"
    assert p.m == 500  # not EX-FREAK's 903
    p.family = "freak"
    p.m = 300
    p.family = "brief"
    p.family = "freak"
    assert p.m == 300
    fresh = Parameters()
    fresh.family = "ex-freak"
    fresh.family = "brief"
    assert fresh.m == 512  # the default comes back too


def test_the_joint_solver_is_one_of_the_whole_image_methods_and_says_when_it_is_unused():
    p = Parameters()
    assert p.joint_solver == "consistency" and p.allowed("joint_solver") == ("consistency", "likelihood", "coherent")
    with pytest.raises(ValueError, match="joint_solver must be one of .* got 'biht'"):
        p.joint_solver = "biht"
    p.joint_solver = "coherent"
    p.mode = "patches"
    assert "solved jointly" in p.why_unused("joint_solver") and p.joint_solver == "coherent"
    p.mode = "joint"
    p.solver = "primal-dual"
    p.binary = False
    assert "inverts bits only" in p.why_unused("joint_solver")
    p.binary = True
    assert p.why_unused("joint_solver") == ""


def test_library_descriptors_fix_their_bits_and_leave_the_patterns_parameters_unused():
    p = Parameters(m=1000)
    heard = []
    p.subscribe(lambda name, value: heard.append((name, value)))
    p.family = "akaze"
    assert p.m == 486 and ("m", 486) in heard and p.limits("m").low == p.limits("m").high == 486
    for name in ("patch_size", "seed", "offset", "sites", "binary", "joint_solver"):
        assert "AKAZE" in p.why_unused(name)
    assert p.why_unused("keypoints") == "" and p.why_unused("iterations") == ""
    with pytest.raises(ValueError, match="m must be 486 for akaze"):
        p.m = 256
    p.family = "brief"
    assert p.m == 1000 and p.why_unused("keypoints")  # BRIEF gets its own M back and detects no keypoints
