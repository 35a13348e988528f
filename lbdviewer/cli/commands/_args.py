"""What every subcommand shares: help formatting, checked argument types, limits and outputs.

:class:`CommandParser` is the parser class of every subcommand: its help
shows each option's default, and descriptions written in reST (module
docstrings) are shown as plain text. The ``*_type`` factories turn a bad
value into argparse's own error (exit 2, naming the option); NaN and
infinities are refused for every float option, used or not.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from pathlib import Path

from lbdviewer.io import limits

_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


def plain(text):
    """``text`` with reST markup removed (roles, double back-quotes), for terminal help.

    Examples
    --------
    >>> plain("``lbdviewer invert``: see :func:`lbdviewer.io.images.load_image` and :mod:`~a.b`")
    'lbdviewer invert: see lbdviewer.io.images.load_image and a.b'
    """
    if text is None:
        return None
    text = _ROLE.sub(lambda match: match.group(1).lstrip("~"), text)
    return text.replace("``", "")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps paragraph breaks in descriptions and appends ``(default: X)`` where help does not say it."""

    def _get_help_string(self, action):
        text = action.help or ""
        if ("default" in text or action.default is None or action.default is False
                or action.default == argparse.SUPPRESS or not action.option_strings):
            return text
        return f"{text} (default: %(default)s)"


class CommandParser(argparse.ArgumentParser):
    """The parser of a subcommand: plain-text help, defaults shown, options recorded in :attr:`options`."""

    def __init__(self, *args, **kwargs):
        self.options = []
        kwargs.setdefault("formatter_class", HelpFormatter)
        kwargs["description"] = plain(kwargs.get("description"))
        super().__init__(*args, **kwargs)

    def error(self, message):
        """Print one line naming the problem and where help is, then exit with status 2."""
        self.exit(2, f"{self.prog}: error: {message}\n(run '{self.prog} --help' for the options)\n")

    def add_argument(self, *args, **kwargs):
        if "help" in kwargs:
            kwargs["help"] = plain(kwargs["help"])
        action = super().add_argument(*args, **kwargs)
        self.options.append(action)
        return action


def command_doc(module_doc):
    """A subcommand's description: its module docstring, reST removed."""
    return plain(module_doc.strip())


def add_command(subparsers, name, module_doc, summary):
    """Register subcommand ``name``: ``summary`` in the command list, :func:`command_doc` of ``module_doc`` its help."""
    return subparsers.add_parser(name, help=summary, description=command_doc(module_doc))


def add_output(parser, metavar, what):
    """The required ``-o/--output`` option of a subcommand; ``what`` says what it writes."""
    return parser.add_argument("-o", "--output", required=True, metavar=metavar, help=what)


def _typed(convert, check, message):
    def parse(text):
        try:
            value = convert(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"{message}, got {text!r}") from None
        if not check(value):
            raise argparse.ArgumentTypeError(f"{message}, got {text!r}")
        return value
    parse.__name__ = message  # argparse names the type in some errors
    return parse


def positive_int(text):
    """argparse type: an integer >= 1.

    Examples
    --------
    >>> positive_int("3")
    3
    """
    return _typed(int, lambda v: v >= 1, "must be a positive integer")(text)


def non_negative_int(text):
    """argparse type: an integer >= 0 (a seed)."""
    return _typed(int, lambda v: v >= 0, "must be a non-negative integer")(text)


def finite_float(text):
    """argparse type: a finite float (no NaN, no infinity).

    Examples
    --------
    >>> finite_float("0.5")
    0.5
    >>> finite_float("nan")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a finite number, got 'nan'
    """
    return _typed(float, math.isfinite, "must be a finite number")(text)


def positive_float(text):
    """argparse type: a finite float > 0."""
    return _typed(float, lambda v: math.isfinite(v) and v > 0, "must be a finite number > 0")(text)


def fraction(text):
    """argparse type: a float in ``(0, 1]``."""
    return _typed(float, lambda v: math.isfinite(v) and 0 < v <= 1, "must be a number in (0, 1]")(text)


def add_limit_options(parser, *, keypoints=True):
    """Add ``--max-pixels`` (and ``--max-keypoints``): the limits of :mod:`lbdviewer.io.limits`."""
    parser.add_argument("--max-pixels", type=positive_int, default=None, metavar="N",
                        help=f"refuse images (or image_shape) of more pixels (default ${limits.MAX_PIXELS_ENV} "
                             f"or {limits.DEFAULT_MAX_PIXELS:,})")
    if keypoints:
        parser.add_argument("--max-keypoints", type=positive_int, default=None, metavar="N",
                            help=f"refuse feature files of more keypoints (default ${limits.MAX_KEYPOINTS_ENV} "
                                 f"or {limits.DEFAULT_MAX_KEYPOINTS:,})")


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp")


def check_outputs(outputs, *, inputs=(), image_outputs=()):
    """Refuse bad output paths before any work starts.

    Parameters
    ----------
    outputs : dict of str to path or None
        ``{"--metrics": path, ...}``: every given path must sit in an
        existing folder, not be a folder, and differ from the others.
    inputs : sequence of path
        No output may overwrite one of these.
    image_outputs : sequence of str
        Options among ``outputs`` that write an image: the suffix must be one
        of :data:`IMAGE_SUFFIXES`.

    Raises
    ------
    ValueError
        Naming the option and the path.
    """
    seen = {}
    given = {option: Path(path) for option, path in outputs.items() if path is not None}
    sources = {os.path.realpath(path) for path in inputs if path is not None}
    for option, path in given.items():
        if path.is_dir():
            raise ValueError(f"{option} {str(path)!r} is a folder; give a file name")
        folder = path.parent if str(path.parent) else Path(".")
        if not folder.is_dir():
            raise ValueError(f"{option} {str(path)!r}: folder {str(folder)!r} does not exist")
        real = os.path.realpath(path)
        if real in sources:
            raise ValueError(f"{option} {str(path)!r} is an input of this command; it would be overwritten")
        if real in seen:
            raise ValueError(f"{option} and {seen[real]} are the same file {str(path)!r}")
        seen[real] = option
        if option in image_outputs and path.suffix.lower() not in IMAGE_SUFFIXES:
            raise ValueError(f"{option} {str(path)!r} must end in one of {', '.join(IMAGE_SUFFIXES)}")
