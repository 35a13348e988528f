"""Headless subcommands of ``lbdviewer``; each module exposes ``add_parser``."""

__all__ = []
