"""The app's parameters: a small Qt-free model that validates on assignment.

Views read the limits from here (so a spin box can never offer an invalid
value) and subscribe to changes; controllers assign. An invalid assignment
raises :class:`ValueError` naming the parameter and the value, and leaves the
model unchanged. Parameters that depend on others (``m`` on the family and the
patch size, ``offset`` on the patch size) are clamped when their bounds move,
and subscribers hear about it.

This module must not import Qt: the tests of the core import it freely.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from lbdviewer.libraries.registry import DESCRIPTORS as LIBRARY_DESCRIPTORS
from lbdviewer.libraries.registry import get_model
from lbdviewer.patterns.families import FAMILIES, max_measurements
from lbdviewer.reconstruction.image import WHOLE_IMAGE_METHODS, default_method
from lbdviewer.solvers.patch.primal_dual import DEFAULT_LAM

#: What the descriptor menu offers: the paper's patterns, then the descriptors real libraries emit (modelled bit
#: for bit, :mod:`lbdviewer.libraries`).
DESCRIPTOR_CHOICES = FAMILIES + LIBRARY_DESCRIPTORS
#: How the app names each descriptor.
DESCRIPTOR_LABELS = {
    "brief": "BRIEF", "freak": "FREAK", "ra-freak": "RA-FREAK", "ex-freak": "EX-FREAK",
    "orb": "ORB", "opencv-brief": "OpenCV BRIEF", "opencv-freak": "OpenCV FREAK",
    "skimage-brief": "scikit-image BRIEF", "beblid": "BEBLID", "teblid": "TEBLID", "brisk": "BRISK",
    "akaze": "AKAZE",
}


SOLVERS = ("biht", "primal-dual")
#: Solvers of the whole image from bits at once (``lbdviewer reconstruct --method``), the default first.
JOINT_SOLVERS = WHOLE_IMAGE_METHODS
SITES = ("grid", "fast")
MODES = ("patches", "joint")
FREAK_ALL_PAIRS = 903
MAX_M_SHOWN = 4096
PATCH_SIZE_RANGE = (8, 128)
ITERATIONS_RANGE = (1, 5000)
LAMBDA_RANGE = (1e-4, 100.0)
SEED_RANGE = (0, 2**31 - 1)
#: Keypoints a library's detector is asked for (lbdviewer extract --keypoints).
KEYPOINTS_RANGE = (1, 10_000)


def is_library(family):
    """Is ``family`` a library descriptor (its keypoints, pattern and bits come from the real library)?

    Examples
    --------
    >>> is_library("orb"), is_library("brief")
    (True, False)
    """
    return family in LIBRARY_DESCRIPTORS


def descriptor_label(name):
    """The app's name of a descriptor: ``"orb"`` -> ``"ORB"``, unknown names upper-cased.

    Examples
    --------
    >>> descriptor_label("skimage-brief"), descriptor_label("ra-freak")
    ('scikit-image BRIEF', 'RA-FREAK')
    """
    return DESCRIPTOR_LABELS.get(name, str(name).upper())


@functools.lru_cache(maxsize=None)
def library_bits(family):
    """Bits a library descriptor has with the parameters ``lbdviewer extract`` uses.

    Examples
    --------
    >>> library_bits("orb"), library_bits("akaze"), library_bits("beblid")
    (256, 486, 512)
    """
    return int(get_model(family).n_bits)


def max_m_offered(family, patch_size):
    """Largest ``m`` the app offers: the family's maximum, capped at 4096 (a library's own bit count).

    Beyond 4096 measurements the live views stop being useful (and the
    dense operator gets large), so the spin box stops there.

    Examples
    --------
    >>> max_m_offered("freak", 32), max_m_offered("brief", 32), max_m_offered("orb", 32)
    (903, 4096, 256)
    """
    if is_library(family):
        return library_bits(family)
    return min(MAX_M_SHOWN, max_measurements(family, patch_size))


def min_measurements(family):
    """Smallest ``m``: fixed for EX-FREAK (903) and the library descriptors (their bits), 1 otherwise."""
    if is_library(family):
        return library_bits(family)
    return FREAK_ALL_PAIRS if family == "ex-freak" else 1


@dataclass(frozen=True)
class Limits:
    """Closed range of a numeric parameter and the reason for its bounds."""

    low: float
    high: float
    reason: str = ""


class Parameters:
    """Every parameter of a reconstruction, validated on assignment.

    The last ``m`` set while a family was chosen is remembered for that
    family and comes back (within the family's limits) when the family is
    chosen again.

    Parameters
    ----------
    **values
        Initial values overriding the paper's defaults (section 4.1):
        BRIEF, 32x32 patches, M = 512, K = 40 % of the Haar coefficients,
        BIHT with 200 iterations, binary bits; primal-dual's lambda is
        :data:`~lbdviewer.solvers.patch.primal_dual.DEFAULT_LAM`, not the paper's 0.1, which
        leaves most patches constant with unit-l1 fields; the whole image
        is solved jointly on a grid with offset 8 (beyond the paper: patchwise
        averaging throws away the brightness that overlaps pin down), from
        bits by sign consistency (``joint_solver``). A library descriptor
        (``family`` in :data:`LIBRARY_DESCRIPTORS`) detects ``keypoints``
        keypoints (500, as ``lbdviewer extract``) and fixes its own M.

    Examples
    --------
    >>> p = Parameters()
    >>> p.m = 1000
    >>> p.family = "freak"      # m is clamped to FREAK's 903 pairs
    >>> p.m
    903
    >>> p.m = 904
    Traceback (most recent call last):
    ...
    ValueError: m must be between 1 and 903 for freak (the 903 FREAK pairs in their learned order), got 904
    >>> p.family = "brief"      # M is remembered per family: BRIEF gets its 1000 back
    >>> p.m
    1000
    """

    DEFAULTS = {
        "family": "brief",
        "patch_size": 32,
        "m": 512,
        "sparsity": 0.4,
        "offset": 8,
        "sites": "grid",
        "mode": "joint",
        "joint_solver": default_method("joint", True),
        "solver": "biht",
        "iterations": 200,
        "lam": DEFAULT_LAM,
        "binary": True,
        "seed": 0,
        "keypoints": 500,
    }

    def __init__(self, **values):
        unknown = set(values) - set(self.DEFAULTS)
        if unknown:
            raise ValueError(f"unknown parameters {sorted(unknown)}; known: {sorted(self.DEFAULTS)}")
        object.__setattr__(self, "_values", dict(self.DEFAULTS))
        object.__setattr__(self, "_subscribers", [])
        object.__setattr__(self, "_m_by_family", {})
        for name in ("family", "patch_size", "solver", "binary"):
            if name in values:
                setattr(self, name, values[name])
        for name, value in values.items():
            setattr(self, name, value)

    # -- reading ---------------------------------------------------------------
    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"Parameters has no attribute {name!r}")

    def as_dict(self):
        """All values as a plain dict (for JSON metadata)."""
        return dict(self._values)

    def m_by_family(self):
        """The M remembered for each family chosen so far, the current family's included.

        Examples
        --------
        >>> p = Parameters(m=1000)
        >>> p.family = "freak"
        >>> p.m_by_family()
        {'brief': 1000, 'freak': 903}
        """
        return {**self._m_by_family, self._values["family"]: self._values["m"]}

    def limits(self, name):
        """The :class:`Limits` of numeric parameter ``name`` given the others."""
        v = self._values
        if name == "m":
            family = v["family"]
            reason = {
                "brief": f"distinct point pairs in a {v['patch_size']}x{v['patch_size']} patch (at most {MAX_M_SHOWN})",
                "freak": "the 903 FREAK pairs in their learned order",
                "ra-freak": "43 retinal fields give 903 pairs",
                "ex-freak": "EX-FREAK uses all 903 pairs",
            }.get(family) or f"{descriptor_label(family)} has {library_bits(family)} bits"
            return Limits(min_measurements(family), max_m_offered(family, v["patch_size"]), reason)
        if name == "patch_size":
            return Limits(*PATCH_SIZE_RANGE, "supported patch sides")
        if name == "offset":
            return Limits(1, v["patch_size"], "between 1 (dense) and the patch size (no overlap)")
        if name == "sparsity":
            return Limits(0.01, 1.0, "fraction K of Haar coefficients kept by BIHT")
        if name == "iterations":
            return Limits(*ITERATIONS_RANGE, "solver iterations")
        if name == "lam":
            return Limits(*LAMBDA_RANGE, "trade-off lambda of the primal-dual solver")
        if name == "seed":
            return Limits(*SEED_RANGE, "random seed of the pattern")
        if name == "keypoints":
            return Limits(*KEYPOINTS_RANGE, "keypoints the library's detector is asked for")
        raise ValueError(f"name must be a numeric parameter, got {name!r}")

    def allowed(self, name):
        """The allowed choices of a categorical parameter, given the others."""
        if name == "family":
            return DESCRIPTOR_CHOICES
        if name == "solver":
            return SOLVERS if self._values["binary"] else ("primal-dual",)
        if name == "sites":
            return SITES
        if name == "mode":
            return MODES
        if name == "joint_solver":
            return JOINT_SOLVERS
        if name == "binary":
            return (True, False) if self._values["solver"] != "biht" else (True,)
        raise ValueError(f"name must be a categorical parameter, got {name!r}")

    def why_unused(self, name):
        """Why parameter ``name`` plays no part in the runs the other values ask for; ``""`` when it does.

        The form disables such a control and says why. A library descriptor
        brings its own patch, pattern and keypoints (so patch size, seed,
        offset and sites go unused), gives bits only, and its features are
        inverted as ``lbdviewer invert`` does; the paper's patterns detect
        no keypoints; the joint solver solves the whole image jointly from
        bits, so patchwise runs and real values do without it; K is BIHT's
        and lambda the primal-dual solver's.

        Examples
        --------
        >>> Parameters().why_unused("joint_solver")
        ''
        >>> Parameters(mode="patches").why_unused("joint_solver")
        'the joint solver is used only when the whole image is solved jointly (Whole image: joint)'
        >>> Parameters(family="orb").why_unused("patch_size")
        "ORB places its own patch at each keypoint, sized by the keypoint's scale"
        """
        if name not in self._values:
            raise ValueError(f"name must be a parameter, got {name!r}")
        v = self._values
        family = v["family"]
        if is_library(family):
            label = descriptor_label(family)
            reasons = {
                "patch_size": f"{label} places its own patch at each keypoint, sized by the keypoint's scale",
                "seed": f"{label}'s pattern is the library's own",
                "offset": f"{label}'s keypoints, found by its detector, are the sites",
                "sites": f"{label}'s keypoints, found by its detector, are the sites",
                "binary": f"{label} gives bits only",
                "joint_solver": f"{label}'s features are inverted by sign consistency (as lbdviewer invert)",
            }
            if name in reasons:
                return reasons[name]
        elif name == "keypoints":
            return "keypoints are detected for the library descriptors only"
        if name == "sparsity" and v["solver"] != "biht":
            return "K is the sparsity of BIHT"
        if name == "lam" and v["solver"] != "primal-dual":
            return "lambda weighs the primal-dual solver's misfit"
        if name != "joint_solver":
            return ""
        if v["mode"] != "joint":
            return "the joint solver is used only when the whole image is solved jointly (Whole image: joint)"
        if not v["binary"]:
            return "the joint solver inverts bits only; real values are solved jointly by primal-dual"
        return ""

    # -- writing ---------------------------------------------------------------
    def subscribe(self, callback):
        """Call ``callback(name, value)`` after every change of a value."""
        self._subscribers.append(callback)

    def __setattr__(self, name, value):
        if name not in self._values:
            raise AttributeError(f"Parameters has no parameter {name!r}")
        value = self.check(name, value)
        if self._values[name] == value and type(self._values[name]) is type(value):
            return
        before = dict(self._values)
        self._values[name] = value
        if name == "family":  # M is remembered per family
            self._m_by_family[before["family"]] = before["m"]
            self._values["m"] = self._m_by_family.get(value, before["m"])
        for dependent in ("m", "offset"):
            limits = self.limits(dependent)
            self._values[dependent] = int(min(max(self._values[dependent], limits.low), limits.high))
        changed = [name] + [key for key in ("m", "offset") if key != name and self._values[key] != before[key]]
        for changed_name in changed:
            for callback in list(self._subscribers):
                callback(changed_name, self._values[changed_name])

    def reset(self):
        """Every value back to :attr:`DEFAULTS`, the M remembered per family forgotten; subscribers hear each change."""
        self._m_by_family.clear()
        for name in ("binary", "solver", "family", "patch_size"):  # first the values others depend on
            setattr(self, name, self.DEFAULTS[name])
        for name, value in self.DEFAULTS.items():
            setattr(self, name, value)
        self._m_by_family.clear()

    def check(self, name, value):
        """``value`` as parameter ``name`` would store it; ``ValueError`` saying why it is refused.

        Changes nothing (views use it to explain a value they cannot offer).

        Examples
        --------
        >>> Parameters().check("m", 5000)
        Traceback (most recent call last):
        ...
        ValueError: m must be between 1 and 4096 for brief (distinct point pairs in a 32x32 patch (at most 4096)), got 5000
        """
        if name in ("family", "solver", "sites", "mode", "joint_solver"):
            choices = self.allowed(name)
            if value not in choices:
                reason = ""
                if name == "solver" and value == "biht":
                    reason = " (BIHT inverts binary descriptors: switch to binary first)"
                raise ValueError(f"{name} must be one of {choices}{reason}, got {value!r}")
            return value
        if name == "binary":
            if not isinstance(value, bool):
                raise ValueError(f"binary must be True or False, got {value!r}")
            if value not in self.allowed("binary"):
                raise ValueError(
                    "binary must be True while the solver is BIHT "
                    "(use the primal-dual solver for real-valued descriptors), got False"
                )
            return value
        if name in ("sparsity", "lam"):
            limits = self.limits(name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not limits.low <= value <= limits.high:
                raise ValueError(f"{name} must be between {limits.low} and {limits.high}, got {value!r}")
            return float(value)
        if isinstance(value, bool) or not isinstance(value, int) and not (isinstance(value, float) and value.is_integer()):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        value = int(value)
        limits = self.limits(name)
        if name == "m":
            if not limits.low <= value <= limits.high and limits.low == limits.high:
                raise ValueError(f"m must be {limits.low} for {self._values['family']} ({limits.reason}), "
                                 f"got {value}")
            if not limits.low <= value <= limits.high:
                raise ValueError(
                    f"m must be between {limits.low} and {limits.high} for {self._values['family']} "
                    f"({limits.reason}), got {value}"
                )
            return value
        if not limits.low <= value <= limits.high:
            raise ValueError(f"{name} must be between {limits.low} and {limits.high}, got {value}")
        return value
