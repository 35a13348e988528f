"""Data the patterns ship: FREAK's learned pair order (``freak_pair_order.npy``)."""

__all__ = []
