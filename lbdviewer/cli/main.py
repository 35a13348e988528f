"""The ``lbdviewer`` command.

``lbdviewer [IMAGE]`` opens the desktop app; ``lbdviewer COMMAND ...`` runs a
headless job. Each subcommand lives in its own module under
:mod:`lbdviewer.cli.commands` (found there, in :data:`ORDER` first) and exposes
``add_parser(subparsers)``, which registers its arguments and sets ``func`` to
the function that runs it. The GUI is imported only when it is launched, so
the headless paths never load Qt.

Exit status: 0 done, 2 bad input or a refused limit (the message names the
problem; no traceback), 130 interrupted.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import pkgutil
import sys
import warnings

from lbdviewer import __version__
from lbdviewer.cli.commands._args import CommandParser, HelpFormatter

#: Modules of :mod:`lbdviewer.cli.commands` listed first in the help, in this order; others follow by name.
ORDER = ("reconstruct", "invert", "extract", "verify_model", "figures")
DESCRIPTION = "Invert local binary descriptors (BRIEF, FREAK, ORB, ...) back into images."
#: Smallest window for ``--screenshot`` (``--size``).
MIN_WINDOW = (640, 400)


def command_modules():
    """Names of the subcommand modules, :data:`ORDER` first.

    Examples
    --------
    >>> command_modules()[:2]
    ['reconstruct', 'invert']
    """
    import lbdviewer.cli.commands

    found = {info.name for info in pkgutil.iter_modules(lbdviewer.cli.commands.__path__) if not info.name.startswith("_")}
    return [name for name in ORDER if name in found] + sorted(found - set(ORDER))


class _Registry:
    """Wraps the subparsers action: records each command's parser and one-line help."""

    def __init__(self, action):
        self.action, self.commands, self.parsers = action, {}, {}

    def add_parser(self, name, **kwargs):
        self.commands[name] = kwargs.get("help", "")
        self.parsers[name] = self.action.add_parser(name, **kwargs)
        return self.parsers[name]


def build_parser():
    """The parser of the headless commands and a ``{command: one-line help}`` table.

    The parser's ``command_parsers`` attribute maps each command to its
    :class:`~lbdviewer.cli.commands._args.CommandParser`.
    """
    parser = argparse.ArgumentParser(prog="lbdviewer", description=DESCRIPTION, formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"lbdviewer {__version__}")
    action = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    registry = _Registry(action)
    for name in command_modules():
        module = importlib.import_module(f"lbdviewer.cli.commands.{name}")
        module.add_parser(registry)
    parser.command_parsers = registry.parsers
    return parser, registry.commands


def _window_size(text):
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be WIDTHxHEIGHT in pixels, got {text!r}") from None
    if width < MIN_WINDOW[0] or height < MIN_WINDOW[1] or width > 16384 or height > 16384:
        raise argparse.ArgumentTypeError(
            f"must be at least {MIN_WINDOW[0]}x{MIN_WINDOW[1]} and at most 16384x16384, got {text!r}")
    return f"{width}x{height}"


def gui_parser(commands):
    """The parser of ``lbdviewer [IMAGE]`` (the app); its help lists ``commands``."""
    listing = "\n".join(f"  {name:14s}{text}" for name, text in commands.items())
    parser = argparse.ArgumentParser(
        prog="lbdviewer",
        usage="lbdviewer [IMAGE] [--features FILE] [--no-restore] [--screenshot OUT.png [--size WxH]]\n"
              "       lbdviewer COMMAND [options]   (lbdviewer COMMAND --help for its options)",
        description=f"{DESCRIPTION}\nWith no COMMAND, opens the desktop app.",
        epilog=f"commands:\n{listing}\n\nexit status: 0 done, 2 bad input or a limit refused, 130 interrupted",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("image", nargs="?",
                        help="image to open in the app (default: the last image opened, or a shipped sample)")
    parser.add_argument("--features", metavar="FILE", help="open a feature file instead of an image")
    parser.add_argument("--no-restore", action="store_true",
                        help="start with the default parameters, overlays and layout and the sample image, "
                             "ignoring what the app remembers from earlier launches (and leaving it unchanged)")
    parser.add_argument("--screenshot", metavar="OUT.png",
                        help="render the window offscreen after the first reconstructions finish, save it, and exit "
                             "(always with the defaults, as --no-restore)")
    parser.add_argument("--size", default="1600x1000", type=_window_size, metavar="WxH",
                        help="window size for --screenshot")
    parser.add_argument("--version", action="version", version=f"lbdviewer {__version__}")
    return parser


def _ensure_standard_streams():
    """Give closed standard output or error (``2>&-``) a sink, so no file we open takes their place."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            sink = os.open(os.devnull, os.O_WRONLY)
            if sink != fd:
                os.dup2(sink, fd)
                os.close(sink)
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w"))


def _format_warning(message, category, filename, lineno, line=None):
    return f"lbdviewer: warning: {message}\n"


def _error(command, message):
    print(f"lbdviewer{' ' + command if command else ''}: error: {message}", file=sys.stderr)
    return 2


def main(argv=None):
    """Run the ``lbdviewer`` command line; return the exit status."""
    _ensure_standard_streams()
    warnings.formatwarning = _format_warning  # one line, no source line, for a user
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("lbdviewer: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into a reader that stopped (`| head`)
        return 0
    except SystemExit as stop:  # argparse: --help, --version (0) or a refused option (2)
        return stop.code if isinstance(stop.code, int) else 2


def _main(argv):
    parser, commands = build_parser()
    if argv and argv[0] in commands:
        args = parser.parse_args(argv)
        return _run(argv[0], args)
    if argv[:1] == ["--help-commands"]:
        parser.print_help()
        return 0
    app = gui_parser(commands)
    if argv and not argv[0].startswith("-") and not os.path.exists(argv[0]) and "." not in argv[0]:
        close = difflib.get_close_matches(argv[0], list(commands), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        app.error(f"{argv[0]!r} is neither a command nor an image file{hint}; "
                  f"commands: {', '.join(commands)}")
    args = app.parse_args(argv)
    from lbdviewer.gui.app import run_app

    return run_app(args)


def _run(command, args):
    import cv2

    try:
        return int(args.func(args) or 0)
    except MemoryError:
        return _error(command, "out of memory; lower the work (--max-pixels, --max-keypoints, a smaller image "
                               "or fewer iterations)")
    except RecursionError:
        return _error(command, "input nested too deeply to read")
    except cv2.error as error:
        detail = str(error).strip().splitlines()
        return _error(command, f"OpenCV refused the input: {detail[-1] if detail else error}")
    except (ValueError, OSError) as error:
        # Bad input (an unreadable image, a malformed feature file, a refused limit, ...):
        # the message names the problem; no traceback.
        return _error(command, str(error))


if __name__ == "__main__":
    sys.exit(main())
