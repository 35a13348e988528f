"""Private run-time services: the thread pool of the kernels, progress bars, library versions, kernel warm-up."""

__all__ = []
