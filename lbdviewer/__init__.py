"""lbdviewer: invert local binary descriptors (BRIEF, FREAK, ORB) back into images.

The numeric core never imports Qt; the desktop app lives in :mod:`lbdviewer.gui`.
"""

from lbdviewer.operators import DescriptorOperator, pack_bits, sign_with_ties, unpack_bits
from lbdviewer.patterns import FAMILIES, Pattern, make_pattern, max_measurements

__version__ = "0.1.0"

__all__ = [
    "FAMILIES",
    "DescriptorOperator",
    "Pattern",
    "make_pattern",
    "max_measurements",
    "pack_bits",
    "sign_with_ties",
    "unpack_bits",
]
