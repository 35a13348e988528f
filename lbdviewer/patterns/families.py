"""The paper's descriptor families by name: :func:`make_pattern` builds any of them."""

from __future__ import annotations

from lbdviewer._validation import check_choice
from lbdviewer.patterns.base import check_patch_size
from lbdviewer.patterns.brief import brief_max_pairs, brief_pattern
from lbdviewer.patterns.freak import N_PAIRS, ex_freak_pattern, freak_pattern, ra_freak_pattern

__all__ = ["FAMILIES", "make_pattern", "max_measurements"]

#: The paper's descriptor families (section 4.1).
FAMILIES = ("brief", "freak", "ra-freak", "ex-freak")


def max_measurements(name, patch_size=32):
    """Largest ``m`` a family allows at ``patch_size``.

    Examples
    --------
    >>> max_measurements("freak"), max_measurements("brief", 8)
    (903, 630)
    """
    check_choice("name", name, FAMILIES)
    if name == "brief":
        return brief_max_pairs(check_patch_size(patch_size))
    return N_PAIRS


def make_pattern(name, *, patch_size=32, m=512, rng=0, **options):
    """Build the sampling pattern of a descriptor family.

    Parameters
    ----------
    name : {"brief", "freak", "ra-freak", "ex-freak"}
        Family. ``"ex-freak"`` always has all 903 pairs and ignores ``m``.
    patch_size : int
        Patch side in pixels, 8 to 128.
    m : int
        Number of measurements (bits).
    rng : int or numpy.random.Generator
        Seed for the random families (``"brief"``, ``"ra-freak"``).
    **options
        Family options, e.g. ``distribution="gaussian"`` for BRIEF.

    Returns
    -------
    Pattern

    Raises
    ------
    ValueError
        Unknown family or option, or a parameter out of range; the message
        names the parameter and the value.

    Examples
    --------
    >>> make_pattern("brief", m=256).m
    256
    >>> make_pattern("ex-freak").m
    903
    """
    check_choice("name", name, FAMILIES)
    if name == "brief":
        return brief_pattern(patch_size, m, rng=rng, **options)
    if options:
        raise ValueError(f"{name!r} takes no options, got {sorted(options)}")
    if name == "freak":
        return freak_pattern(patch_size, m)
    if name == "ra-freak":
        return ra_freak_pattern(patch_size, m, rng=rng)
    return ex_freak_pattern(patch_size)

