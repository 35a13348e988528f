"""OpenCV ``cv::FileStorage`` files (YAML, XML, JSON): our own bounded parser, the reader and the writer."""

__all__ = []
