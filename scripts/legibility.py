"""Can OCR read text back from its descriptors? The paper's privacy claim, measured.

``resources/book-titles.png`` holds four printed title lines (the titles are
``BOOK_TITLES`` of ``scripts/make_samples.py``), ``resources/document.png``
seven lines 12-35 pixels high on noisy paper (``DOCUMENT_LINES``). Each image is described at a
grid of 32x32 patches with offset 8 by binary BRIEF and by binary FREAK
(M = 512) and reconstructed from the bits alone, jointly and patch by patch.
Each reconstruction (and the original, as a control) is read by ``tesseract``
twice:

- ``none``: the reconstruction as written (8-bit PNG, no contrast change);
- ``blur-otsu``: enlarged 2x (bicubic), Gaussian blur (sigma 2 pixels of the
  enlarged image), Otsu threshold, and inverted if the result is mostly black,
  so that text ends up dark on white.

A title counts as read when some OCR line matches it with a
``difflib.SequenceMatcher`` ratio >= 0.8 after normalising both (upper case,
letters and single spaces only).

Usage: ``python scripts/legibility.py [OUTDIR] [--samples book-titles document] [--method NAME]
[--modes joint patches] [--psm N] [--iterations N] [--quick]`` (reconstructions and the cleaned
images are written to OUTDIR, default ``legibility-out``; ``--method`` names the joint solver,
default the library's; ``--quick`` uses 20 iterations: a smoke test, not a measurement).
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import time
from pathlib import Path

import cv2

from lbdviewer.io.images import save_png, to_uint8
from lbdviewer.io.samples import sample_image
from lbdviewer.io.strict_json import save_json
from lbdviewer.evaluation.metrics import correlation, rank_correlation
from lbdviewer.evaluation.ocr import MATCH_RATIO, lines_read, ocr_text
from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.image import describe_sites, reconstruct_image
from lbdviewer.reconstruction.sites import grid_sites

SCRIPTS = Path(__file__).resolve().parent
OFFSET = 8
UPSCALE = 2
BLUR_SIGMA = 2.0


def expected_lines(sample):
    """The printed lines of a sample (``book-titles`` or ``document``), read from ``scripts/make_samples.py``."""
    spec = importlib.util.spec_from_file_location("make_samples", SCRIPTS / "make_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if sample == "book-titles":
        return tuple(module.BOOK_TITLES)
    if sample == "document":
        return tuple(text for text, _, _ in module.DOCUMENT_LINES)
    raise ValueError(f"sample must be 'book-titles' or 'document', got {sample!r}")



def clean_up(image):
    """2x bicubic enlargement, Gaussian blur, Otsu threshold, dark text on white (see the module notes)."""
    pixels = to_uint8(image)
    pixels = cv2.resize(pixels, None, fx=UPSCALE, fy=UPSCALE, interpolation=cv2.INTER_CUBIC)
    pixels = cv2.GaussianBlur(pixels, (0, 0), BLUR_SIGMA)
    _, binary = cv2.threshold(pixels, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    if binary.mean() < 127:
        binary = 255 - binary
    return binary / 255.0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", nargs="?", default="legibility-out")
    parser.add_argument("--samples", nargs="+", default=["book-titles", "document"],
                        choices=("book-titles", "document"))
    parser.add_argument("--modes", nargs="+", default=["joint", "patches"], choices=("joint", "patches"))
    parser.add_argument("--method", default=None, help="joint solver (default: the library's)")
    parser.add_argument("--psm", type=int, default=6, help="tesseract page segmentation mode (default 6)")
    parser.add_argument("--iterations", type=int, default=None, help="solver iterations (default: the library's)")
    parser.add_argument("--quick", action="store_true", help="20 iterations (smoke test)")
    args = parser.parse_args(argv)
    if shutil.which("tesseract") is None:
        print("legibility: tesseract is not installed", file=sys.stderr)
        return 2
    iterations = 20 if args.quick else args.iterations
    outdir = Path(args.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f"{'sample':11} {'descriptor':10} {'mode':8} {'clean-up':9} {'read':>5} {'corr':>6} {'rank':>6}  OCR text")
    for sample in args.samples:
        lines = expected_lines(sample)
        image = sample_image(sample)
        sites = grid_sites(image.shape, patch_size=32, offset=OFFSET)
        runs = [("original", "-", image, {})]
        for family in ("brief", "freak"):
            pattern = make_pattern(family, patch_size=32, m=512)
            bits = describe_sites(image, sites, pattern)
            for mode in args.modes:
                started = time.perf_counter()
                result = reconstruct_image(bits, sites, pattern, shape=image.shape, mode=mode,
                                           method=args.method if mode == "joint" else None, iterations=iterations)
                runs.append((family, mode, result.image, {"seconds": round(time.perf_counter() - started, 1),
                                                           **result.params}))
        for family, mode, estimate, params in runs:
            stem = f"{sample}-{family}" if family == "original" else f"{sample}-{family}-{mode}"
            quality = {"correlation": round(correlation(image, estimate), 4),
                       "rank_correlation": round(rank_correlation(image, estimate), 4)}
            for cleaning, pixels in (("none", estimate), ("blur-otsu", clean_up(estimate))):
                path = save_png(outdir / f"{stem}-{cleaning}.png", pixels)
                text = ocr_text(pixels, psm=args.psm)
                read, ratios = lines_read(text, lines)
                flat = " | ".join(line.strip() for line in text.splitlines() if line.strip())
                print(f"{sample:11} {family:10} {mode:8} {cleaning:9} {read:>2}/{len(lines)} "
                      f"{quality['correlation']:>6.3f} {quality['rank_correlation']:>6.3f}  {flat}", flush=True)
                rows.append({"sample": sample, "descriptor": family, "mode": mode, "clean_up": cleaning,
                             "lines_read": read, "lines": len(lines), **quality,
                             "ratios": [round(r, 3) for r in ratios], "ocr_text": text, "png": path.name, **params})
    save_json(outdir / "legibility.json", {"samples": {sample: expected_lines(sample) for sample in args.samples},
                                          "offset": OFFSET, "patch_size": 32, "m": 512,
                                          "psm": args.psm, "match_ratio": MATCH_RATIO, "upscale": UPSCALE,
                                          "blur_sigma": BLUR_SIGMA, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
