"""OpenCV's AKAZE (M-LDB, 486 bits): its nonlinear scale space, its model, and its measurements as an operator."""

__all__ = []
