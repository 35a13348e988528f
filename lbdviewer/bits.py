"""The bit conventions: the sign with its tie rule, how bits are packed into bytes, what an array of descriptors holds.

A descriptor bit is the sign of a measurement ``<G_a - G_b, p>`` (eq. (2) of the paper).
Inside lbdviewer bits are int8 in {-1, +1} (what ``describe`` and ``describe_sites``
return by default); feature files and the libraries store them packed, 8 a byte, least
significant bit first (``"little"``: ORB, FREAK, BRISK, ...) or most significant first
(``"big"``: OpenCV's BRIEF), which ``packed=True`` gives.

Descriptors handed to a reconstruction are read by one rule, :func:`descriptor_encoding`:
the array's dtype and shape say whether it holds packed bytes, bits or real measurements,
and a floating-point array of only -1 and +1 (what ``np.sign(L p)`` gives), which could be
either bits or real values, is refused with a message saying how to pass each.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ENCODINGS", "descriptor_encoding", "pack_bits", "sign_with_ties", "unpack_bits"]

#: What :func:`descriptor_encoding` finds in an array of descriptors.
ENCODINGS = ("packed", "bits", "real")


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


def descriptor_encoding(descriptors, m):
    """What an array of descriptors of ``m`` bits or measurements holds: ``"packed"``, ``"bits"`` or ``"real"``.

    The one rule by which lbdviewer reads descriptors (its reconstructions
    choose their solver from it):

    * ``"packed"``: uint8 with ``ceil(m / 8)`` columns, as :func:`pack_bits`
      and feature files store bits;
    * ``"bits"``: an integer type with ``m`` columns, every value -1 or +1;
    * ``"real"``: a floating-point type with ``m`` columns, the measurements
      ``L p``.

    Parameters
    ----------
    descriptors : ndarray, shape (..., m) or (..., ceil(m / 8))
    m : int
        Bits (or measurements) per descriptor.

    Returns
    -------
    str
        One of :data:`ENCODINGS`.

    Raises
    ------
    ValueError
        If the shape fits neither form, integer values are not all -1 or
        +1, or a floating-point array holds only -1 and +1: signs
        (``np.sign(L p)``, ``np.where(v > 0, 1., -1.)``) are bits, but read
        as real values they would silently be solved as measurements; the
        message says to pass ``descriptors.astype(np.int8)`` for bits, or the
        measurements themselves.

    Examples
    --------
    >>> descriptor_encoding(np.array([[1, -1, 1]], dtype=np.int8), 3)
    'bits'
    >>> descriptor_encoding(np.array([[5]], dtype=np.uint8), 3), descriptor_encoding(np.array([[0.3, -1.2, 2.0]]), 3)
    ('packed', 'real')
    >>> descriptor_encoding(np.sign(np.array([[0.3, -1.2, 2.0]])), 3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: descriptors are floating-point numbers that are all -1 or +1: bits or real measurements? ...
    """
    descriptors = np.asarray(descriptors)
    n_bytes = (m + 7) // 8
    if descriptors.dtype == np.uint8 and descriptors.ndim >= 1 and descriptors.shape[-1] == n_bytes:
        return "packed"
    if descriptors.ndim < 1 or descriptors.shape[-1] != m:
        raise ValueError(f"descriptors must have {m} columns (bits or real values) or {n_bytes} (packed uint8 "
                         f"bytes), got {descriptors.dtype} {descriptors.shape}")
    if np.issubdtype(descriptors.dtype, np.floating):
        if descriptors.size and np.all((descriptors == 1) | (descriptors == -1)):
            raise ValueError("descriptors are floating-point numbers that are all -1 or +1: bits or real "
                             "measurements? Pass bits as integers (descriptors.astype(np.int8)) or packed "
                             "(lbdviewer.bits.pack_bits), real measurements as measured (L p, not their signs)")
        return "real"
    if not np.issubdtype(descriptors.dtype, np.integer):
        raise ValueError(f"descriptors must be integer bits, packed uint8 bytes or floating-point "
                         f"measurements, got dtype {descriptors.dtype}")
    if not np.all(np.abs(descriptors) == 1):
        raise ValueError("descriptors of integer type must hold bits in {-1, +1}")
    return "bits"
