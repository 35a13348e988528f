"""Sampling geometry of the paper's descriptors: the :class:`Pattern` record, BRIEF and FREAK (+ the data FREAK learned)."""

from lbdviewer._lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, {
    "Pattern": "base",
    "pair_label": "base",
    "pair_number": "base",
    "FAMILIES": "families",
    "make_pattern": "families",
    "max_measurements": "families",
    "brief_pattern": "brief",
    "freak_pattern": "freak",
    "ra_freak_pattern": "freak",
    "ex_freak_pattern": "freak",
})
