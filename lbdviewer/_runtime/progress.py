"""Progress bars for the command line (tqdm), shown only on a terminal.

A bar never fails a run: it is drawn only when standard error is a terminal
(not a pipe, a file or a closed stream) and it is disabled by ``quiet``.
Everything else (the summary line a command prints when it ends) goes to
standard output as usual.
"""

from __future__ import annotations

import sys

from tqdm import tqdm


def stderr_is_terminal():
    """Whether standard error is an open terminal.

    Examples
    --------
    >>> isinstance(stderr_is_terminal(), bool)
    True
    """
    stream = sys.stderr
    try:
        return bool(stream is not None and not stream.closed and stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def progress_bar(total=None, *, desc, unit="it", quiet=False):
    """A tqdm bar on standard error, disabled unless it is a terminal (or when ``quiet``).

    Parameters
    ----------
    total : int, optional
        Work units; None for a bar that only counts.
    desc : str
        The label before the bar.
    unit : str
        What one unit is (``"iteration"``, ``"keypoint"``).
    quiet : bool
        Never draw.

    Returns
    -------
    tqdm.tqdm
        Use as a context manager; ``update(n)`` or ``bar.n = done; bar.refresh()``.

    Examples
    --------
    >>> with progress_bar(3, desc="work", quiet=True) as bar:
    ...     bar.disable
    True
    """
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True,
                mininterval=0.25, disable=quiet or not stderr_is_terminal())


def advance(bar, done, total=None):
    """Move ``bar`` to ``done`` of ``total`` (reports that give totals, not increments).

    Examples
    --------
    >>> import io
    >>> with tqdm(total=10, file=io.StringIO()) as bar:
    ...     advance(bar, 4, 20)
    ...     bar.n, bar.total
    (4, 20)
    """
    if total is not None and total != bar.total:
        bar.total = total
    bar.update(done - bar.n)
