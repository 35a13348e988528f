"""Checks of parameters, one message style: ``"<name> must be <what>, got <value>"``.

Every public function validates its options with these, so a bad value is
refused with a message naming the parameter and the value as given (never
rounded: ``2.5`` iterations is an error, not 2).

Examples
--------
>>> check_iterations(200)
200
>>> check_iterations(2.5)
Traceback (most recent call last):
...
ValueError: iterations must be a positive integer, got 2.5
"""

from __future__ import annotations

import math
import numbers


def check_choice(name, value, choices):
    """Return ``value`` if it is one of ``choices``, else raise ``ValueError`` naming ``name``.

    Examples
    --------
    >>> check_choice("mode", "joint", ("joint", "patches"))
    'joint'
    >>> check_choice("mode", "both", ("joint", "patches"))
    Traceback (most recent call last):
    ...
    ValueError: mode must be one of ('joint', 'patches'), got 'both'
    """
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def check_int(name, value, *, minimum=None, maximum=None):
    """Return ``value`` as an int within ``[minimum, maximum]`` (each optional), else raise ``ValueError``.

    Integral floats (``3.0``) and numpy integers pass; booleans, ``2.5`` and
    strings do not.

    Examples
    --------
    >>> check_int("m", 3.0, minimum=1)
    3
    >>> check_int("m", 0, minimum=1)
    Traceback (most recent call last):
    ...
    ValueError: m must be a positive integer, got 0
    >>> check_int("index", 512, minimum=0, maximum=511)
    Traceback (most recent call last):
    ...
    ValueError: index must be an integer from 0 to 511, got 512
    """
    if minimum == 1 and maximum is None:
        what = "a positive integer"
    elif minimum is not None and maximum is not None:
        what = f"an integer from {minimum} to {maximum}"
    else:
        bounds = [text for text in (None if minimum is None else f">= {minimum}",
                                    None if maximum is None else f"<= {maximum}") if text]
        what = " ".join(["an integer", *bounds])
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
            or int(value) != value:
        raise ValueError(f"{name} must be {what}, got {value!r}")
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return value


def check_iterations(iterations, name="iterations"):
    """Return ``iterations`` as an int >= 1, else raise ``ValueError`` naming it.

    Examples
    --------
    >>> check_iterations(0)
    Traceback (most recent call last):
    ...
    ValueError: iterations must be a positive integer, got 0
    """
    return check_int(name, iterations, minimum=1)


def check_positive(name, value):
    """Return ``value`` as a finite float > 0, else raise ``ValueError`` naming ``name``.

    Examples
    --------
    >>> check_positive("lam", 0.1)
    0.1
    >>> check_positive("lam", -1)
    Traceback (most recent call last):
    ...
    ValueError: lam must be a finite number > 0, got -1
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
            or not value > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def check_fraction(name, value):
    """Return ``value`` as a float in ``(0, 1]``, else raise ``ValueError`` naming ``name``.

    Examples
    --------
    >>> check_fraction("sparsity", 0.4)
    0.4
    >>> check_fraction("sparsity", 0)
    Traceback (most recent call last):
    ...
    ValueError: sparsity must be in (0, 1], got 0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 < value <= 1.0:
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")
    return float(value)


def check_finite_array(name, value):
    """Return ``value`` as a float64 array, else raise ``ValueError`` naming ``name``.

    ``None``, non-numbers, NaN and infinities are refused (a ``None`` inside a
    list becomes NaN in a float array, so it is refused too); the message
    gives the first bad value and its index.

    Examples
    --------
    >>> check_finite_array("image", [[0.0, 1.0]]).dtype
    dtype('float64')
    >>> check_finite_array("image", [[0.0, None]])
    Traceback (most recent call last):
    ...
    ValueError: image must be finite numbers (no NaN, None or infinity), got nan at index (0, 1)
    >>> check_finite_array("patches", None)
    Traceback (most recent call last):
    ...
    ValueError: patches must be an array of numbers, got None
    """
    import numpy as np

    if value is None:
        raise ValueError(f"{name} must be an array of numbers, got None")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers, got {type(value).__name__}") from None
    bad = ~np.isfinite(array)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} must be finite numbers (no NaN, None or infinity), got {array[index]} "
                         f"at index {index}")
    return array
