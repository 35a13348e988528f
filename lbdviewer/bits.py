"""The bit conventions: the sign with its tie rule, and how bits are packed into bytes.

A descriptor bit is the sign of a measurement ``<G_a - G_b, p>`` (eq. (2) of the paper).
Inside lbdviewer bits are int8 in {-1, +1}; feature files and the libraries store them
packed, 8 a byte, least significant bit first (``"little"``: ORB, FREAK, BRISK, ...) or
most significant first (``"big"``: OpenCV's BRIEF).
"""

from __future__ import annotations

import numpy as np

__all__ = ["pack_bits", "sign_with_ties", "unpack_bits"]


def sign_with_ties(values, *, tie_positive=False, atol=1e-6):
    """Quantise measurements to bits with an explicit tie convention.

    ``+1`` where ``values > atol``, ``-1`` where ``values < -atol``; values
    within ``atol`` of zero are ties and get ``+1`` if ``tie_positive`` else
    ``-1``. A flat patch thus has every bit equal to the tie value instead of
    bits decided by rounding noise.

    Parameters
    ----------
    values : array_like
        Real measurements ``L x``.
    tie_positive : bool
        Bit of a tie (OpenCV FREAK's ``>=`` is ``True``; ``sign`` of the paper
        and strict ``<`` tests are ``False``).
    atol : float
        Half-width of the tie band.

    Returns
    -------
    ndarray of int8
        Values in {-1, +1}, same shape as ``values``.

    Examples
    --------
    >>> sign_with_ties([0.5, -0.2, 1e-9]).tolist()
    [1, -1, -1]
    >>> sign_with_ties([1e-9], tie_positive=True).tolist()
    [1]
    """
    values = np.asarray(values)
    tie = np.int8(1 if tie_positive else -1)
    out = np.where(values > atol, np.int8(1), np.where(values < -atol, np.int8(-1), tie))
    return out.astype(np.int8, copy=False)


def pack_bits(bits, *, bitorder="little"):
    """Pack descriptor bits into bytes, as OpenCV stores descriptors.

    Parameters
    ----------
    bits : array_like, shape (..., M)
        Bits as {-1, +1} or {0, 1}; positive means a set bit.
    bitorder : {"little", "big"}
        ``"little"``: bit ``k`` is bit ``k % 8`` (least significant first) of
        byte ``k // 8``, as ORB and FREAK; ``"big"``: most significant first,
        as OpenCV's BRIEF.

    Returns
    -------
    ndarray of uint8, shape (..., ceil(M / 8))

    Examples
    --------
    >>> pack_bits([1, -1, -1, -1, -1, -1, -1, -1, 1]).tolist()
    [1, 1]
    """
    if bitorder not in ("little", "big"):
        raise ValueError(f"bitorder must be 'little' or 'big', got {bitorder!r}")
    bits = np.asarray(bits)
    return np.packbits(bits > 0, axis=-1, bitorder=bitorder)


def unpack_bits(packed, m, *, bitorder="little"):
    """Unpack bytes into ``m`` bits in {-1, +1}; inverse of :func:`pack_bits`.

    Examples
    --------
    >>> unpack_bits(np.array([1, 1], dtype=np.uint8), 9).tolist()
    [1, -1, -1, -1, -1, -1, -1, -1, 1]
    """
    if bitorder not in ("little", "big"):
        raise ValueError(f"bitorder must be 'little' or 'big', got {bitorder!r}")
    packed = np.asarray(packed)
    if packed.dtype != np.uint8:
        raise ValueError(f"packed must be uint8 bytes, got dtype {packed.dtype}")
    if not 1 <= m <= 8 * packed.shape[-1]:
        raise ValueError(f"m must be from 1 to {8 * packed.shape[-1]} for {packed.shape[-1]} bytes, got {m}")
    bits = np.unpackbits(packed, axis=-1, count=m, bitorder=bitorder)
    return (2 * bits.astype(np.int8) - 1).astype(np.int8)
