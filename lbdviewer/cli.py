"""The ``lbdviewer`` command.

``lbdviewer [IMAGE]`` opens the desktop app; ``lbdviewer SUBCOMMAND ...`` runs a
headless job. Each subcommand lives in its own module under
:mod:`lbdviewer.commands` and exposes ``add_parser(subparsers)``, which
registers its arguments and sets ``func`` to the function that runs it. The GUI
is imported only when it is launched, so the headless paths never load Qt.
"""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = ("reconstruct", "figures", "extract", "invert", "verify_model")


def _build_parser():
    parser = argparse.ArgumentParser(
        prog="lbdviewer",
        description="Invert local binary descriptors (BRIEF, FREAK, ORB) back into images.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"lbdviewer.commands.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"lbdviewer.commands.{name}":
                raise
            continue
        module.add_parser(subparsers)
    return parser


def _gui_parser():
    parser = argparse.ArgumentParser(
        prog="lbdviewer",
        description="Open the lbdviewer app (run 'lbdviewer --help-commands' for the headless commands).",
    )
    parser.add_argument("image", nargs="?", help="image to open (default: a shipped sample)")
    parser.add_argument("--features", metavar="FILE", help="open a feature file instead of an image")
    parser.add_argument(
        "--screenshot",
        metavar="OUT.png",
        help="render the window offscreen after the first reconstructions finish, save it, and exit",
    )
    parser.add_argument("--size", default="1600x1000", help="window size for --screenshot (WxH)")
    return parser


def main(argv=None):
    """Run the ``lbdviewer`` command line; return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _build_parser()
    if argv and argv[0] in parser._subparsers._group_actions[0].choices:
        args = parser.parse_args(argv)
        try:
            return int(args.func(args) or 0)
        except KeyboardInterrupt:
            print("lbdviewer: interrupted", file=sys.stderr)
            return 130
        except (ValueError, OSError) as error:
            # Bad input (an unreadable image, a malformed feature file, ...):
            # the message names the problem; no traceback.
            print(f"lbdviewer {argv[0]}: error: {error}", file=sys.stderr)
            return 2
    if argv[:1] == ["--help-commands"]:
        parser.print_help()
        return 0
    args = _gui_parser().parse_args(argv)
    from lbdviewer.gui.app import run_app

    return run_app(args)


if __name__ == "__main__":
    sys.exit(main())
