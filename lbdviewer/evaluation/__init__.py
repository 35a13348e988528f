"""How good a reconstruction is and how it is shown: metrics, the display rule, run records, leakage."""

from lbdviewer._lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, {
    "image_metrics": "metrics",
    "patch_metrics": "orientation",
    "correlation": "metrics",
    "rank_correlation": "metrics",
    "psnr": "metrics",
    "ssim": "metrics",
    "bit_consistency": "metrics",
    "packed_bit_consistency": "metrics",
    "display_stretch": "display",
    "display_original": "display",
    "difference_image": "display",
    "uncovered_rule": "display",
    "run_record": "records",
    "read_sidecar": "records",
    "write_sidecar": "records",
    "compare_descriptors": "leakage",
})
