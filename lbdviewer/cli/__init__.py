"""The ``lbdviewer`` command: argument parsing only; every subcommand calls the core."""

from lbdviewer.cli.main import main

__all__ = ["main"]
