"""Recover a library's comparison tables by running the library itself, and the cache that keeps them."""

__all__ = []
