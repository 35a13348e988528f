import numpy as np
import pytest

from lbdviewer._validation import check_choice, check_fraction, check_int, check_iterations, check_positive
from lbdviewer.operators.joint.operator import JointOperator
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.image import describe_sites, reconstruct_image
from lbdviewer.reconstruction.sites import grid_sites
from lbdviewer.solvers.patch.primal_dual import PrimalDualL1
from lbdviewer.solvers.patch.biht import BIHT
from lbdviewer.solvers.image.consistency import SignConsistency


@pytest.mark.parametrize("value", [2.5, 0, -3, True, "7", float("nan"), None])
def test_iterations_refused_with_the_value_as_given(value):
    with pytest.raises(ValueError, match=rf"^iterations must be a positive integer, got {value!r}$".replace(
            "(", r"\(").replace(")", r"\)")):
        check_iterations(value)


def test_checks_accept_what_they_should():
    assert check_iterations(np.int64(3)) == 3 and check_iterations(4.0) == 4
    assert check_int("m", 5, minimum=0, maximum=5) == 5
    assert check_fraction("sparsity", 1) == 1.0 and check_positive("lam", np.float32(0.5)) == 0.5
    assert check_choice("mode", "joint", ("joint", "patches")) == "joint"
    refused = {"sparsity must be in \\(0, 1\\], got 1.5": lambda: check_fraction("sparsity", 1.5),
               "lam must be a finite number > 0, got inf": lambda: check_positive("lam", float("inf")),
               "m must be an integer from 0 to 5, got 6": lambda: check_int("m", 6, minimum=0, maximum=5),
               "mode must be one of \\('joint', 'patches'\\), got 'both'":
                   lambda: check_choice("mode", "both", ("joint", "patches"))}
    for message, call in refused.items():
        with pytest.raises(ValueError, match=f"^{message}$"):
            call()


def test_every_solver_and_entry_point_refuses_fractional_iterations():
    pattern = make_pattern("brief", patch_size=8, m=16)
    image = np.random.default_rng(0).random((16, 16))
    sites = grid_sites(image.shape, patch_size=8, offset=4)
    bits = describe_sites(image, sites, pattern)
    op = DescriptorOperator(pattern)
    patch_bits = op.describe(image[None, :8, :8])
    joint = JointOperator(image.shape, sites, pattern)
    calls = [
        lambda: reconstruct_image(bits, sites, pattern, shape=image.shape, iterations=2.5),
        lambda: BIHT(op, patch_bits, iterations=2.5),
        lambda: PrimalDualL1(op, patch_bits, iterations=2.5),
        lambda: SignConsistency(joint, np.ones(joint.range_shape), iterations=2.5),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=r"iterations must be a positive integer, got 2\.5"):
            call()
