"""Can OCR read text back from its descriptors? The paper's privacy claim, measured.

``resources/book-titles.png`` holds four printed title lines (the titles are
``BOOK_TITLES`` of ``scripts/make_samples.py``), ``resources/document.png``
seven lines 12-35 pixels high on noisy paper (``DOCUMENT_LINES``); the
generalisation set adds ``whiteboard`` (five marker lines under uneven
light), ``dark-screen`` (eleven lines of light text on a dark phone screen) and
``receipt`` (seven lines). Each image is described at a grid of 32x32
patches with offset 8 (``--offset``) by binary BRIEF and by binary FREAK
(M = 512) and reconstructed from the bits alone, jointly and patch by patch;
or (``--features DESCRIPTOR:K``) the real library writes a feature file of
``K`` keypoints (``DESCRIPTOR:all``: every keypoint its detector keeps at its
default threshold, as a program that sets no cap sends them; OpenCV's AKAZE
has no cap by default) and :func:`lbdviewer.features.invert.invert_features`
rebuilds the image from it alone (joint), shown with the uncovered pixels at
the covered median (the display rule's ``uncovered="neutral"``). Each
reconstruction (and the original, as a control) is read by ``tesseract``
twice:

- ``none``: the reconstruction as written (8-bit PNG, no contrast change);
- ``blur-otsu``: enlarged 2x (bicubic), Gaussian blur (sigma 2 pixels of the
  enlarged image), Otsu threshold, and inverted if the result is mostly black,
  so that text ends up dark on white.

each as it is and inverted, the better read counting
(:func:`lbdviewer.evaluation.ocr.read_lines`: bits carry no polarity a
reader could not flip). A title counts as read when some OCR line matches it
with a ``difflib.SequenceMatcher`` ratio >= 0.8 after normalising both (upper
case, letters and single spaces only). ``--rev REV`` adds the rows of
``lbdviewer`` as of the git revision ``REV`` (exported as
``scripts/bench_joint_ab.py`` does), in the same run: its grid solves, or
its inversion of the same feature file shown as it drew it then.

Usage: ``python scripts/legibility.py [OUTDIR] [--samples book-titles document ...] [--offset N]
[--features DESCRIPTOR:K] [--method NAME] [--modes joint patches] [--psm N] [--iterations N] [--rev REV] [--quick]``
(reconstructions and the cleaned images are written to OUTDIR, default ``legibility-out``; ``--method``
names the joint solver, default the library's; ``--quick`` uses 20 iterations: a smoke test, not a
measurement).
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import shutil
import sys
import time
from pathlib import Path

import cv2

from lbdviewer.io.images import save_png, to_uint8
from lbdviewer.io.samples import sample_image
from lbdviewer.io.strict_json import save_json
from lbdviewer.evaluation.metrics import correlation, rank_correlation
from lbdviewer.evaluation.display import display_stretch
from lbdviewer.evaluation.ocr import MATCH_RATIO, read_lines
from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.image import describe_sites, reconstruct_image
from lbdviewer.reconstruction.sites import grid_sites

SCRIPTS = Path(__file__).resolve().parent
OFFSET = 8
UPSCALE = 2
BLUR_SIGMA = 2.0
EVERY_KEYPOINT = 10 ** 6  # ``--features DESCRIPTOR:all``: a cap no detector reaches on these samples


SAMPLES = ("book-titles", "document", "whiteboard", "dark-screen", "receipt")


def expected_lines(sample):
    """The printed lines of a text sample (one of ``SAMPLES``), read from ``scripts/make_samples.py``."""
    spec = importlib.util.spec_from_file_location("make_samples", SCRIPTS / "make_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = {"book-titles": module.BOOK_TITLES, "document": [text for text, _, _ in module.DOCUMENT_LINES],
             "whiteboard": [text for text, _ in module.WHITEBOARD_LINES],
             "dark-screen": [text for text, _ in module.DARK_SCREEN_LINES],
             "receipt": [text for text, _ in module.RECEIPT_LINES]}
    if sample not in lines:
        raise ValueError(f"sample must be one of {SAMPLES}, got {sample!r}")
    return tuple(lines[sample])


def grid_runs(image, offset, modes, method, iterations, rev):
    """``(descriptor, mode, estimate, params)`` of the grid solves of ``image`` (of ``rev``'s lbdviewer if given)."""
    if rev:
        from bench_joint_ab import load_revision

        modules = load_revision(rev)
        make, grid, describe = (modules["patterns"].make_pattern, modules["sites"].grid_sites,
                                modules["reconstruct"].describe_sites)
        reconstruct = modules["reconstruct"].reconstruct_image
    else:
        make, grid, describe, reconstruct = make_pattern, grid_sites, describe_sites, reconstruct_image
    sites = grid(image.shape, patch_size=32, offset=offset)
    runs = []
    for family in ("brief", "freak"):
        pattern = make(family, patch_size=32, m=512)
        bits = describe(image, sites, pattern)
        for mode in modes:
            started = time.perf_counter()
            result = reconstruct(bits, sites, pattern, shape=image.shape, mode=mode,
                                 method=method if mode == "joint" else None, iterations=iterations)
            label = f"{mode}@{rev}" if rev else mode
            runs.append((family, label, result.image, {"seconds": round(time.perf_counter() - started, 1),
                                                        **result.params}))
    return runs


def _feature_library(rev):
    """``(extract_features, invert_features, show)`` of the working tree or of ``rev`` (either package layout).

    ``show`` is the display rule as that version drew an inversion: uncovered pixels at
    the covered median where its display rule has ``uncovered="neutral"``, else black.
    """
    if not rev:
        from lbdviewer.features.extract import extract_features
        from lbdviewer.features.invert import invert_features

        return extract_features, invert_features, lambda result: display_stretch(
            result.image, mask=result.covered, uncovered="neutral").image
    from bench_joint_ab import RENAMED, load_revision

    load_revision(rev)

    def load(*names):
        for name in names:
            module, attribute = name.split(":")
            try:
                return getattr(importlib.import_module(f"{RENAMED}.{module}"), attribute)
            except ModuleNotFoundError:
                continue
        raise ImportError(f"{rev} has none of {names}")

    stretch = load("evaluation.display:display_stretch", "display:display_stretch")
    drawn = {"uncovered": "neutral"} if "uncovered" in inspect.signature(stretch).parameters else {}
    return (load("features.extract:extract_features", "commands.extract:extract_features"),
            load("features.invert:invert_features", "inversion:invert_features"),
            lambda result: stretch(result.image, mask=result.covered, **drawn).image)


def feature_runs(image, case, iterations, rev=None):
    """The inversion of the real library's feature file of ``image`` (``case`` is ``DESCRIPTOR:K``), as shown."""
    extract_features, invert_features, show = _feature_library(rev)
    descriptor, count = case.split(":")
    features = extract_features(image, descriptor, n_keypoints=EVERY_KEYPOINT if count == "all" else int(count))
    started = time.perf_counter()
    result = invert_features(features, iterations=iterations)
    seconds = round(time.perf_counter() - started, 1)
    label = f"file:{count}@{rev}" if rev else f"file:{count}"
    return [(descriptor, label, show(result), {"seconds": seconds, "keypoints": len(features.keypoints),
                                               "covered": round(float(result.covered.mean()), 3),
                                               **result.params})]


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
    parser.add_argument("--samples", nargs="+", default=["book-titles", "document"], choices=SAMPLES)
    parser.add_argument("--offset", type=int, default=OFFSET, help=f"grid offset (default {OFFSET})")
    parser.add_argument("--features", metavar="DESCRIPTOR:K", default=None,
                        help="invert the library's feature file of K keypoints (K: a number or all) instead of the "
                             "grid's bits")
    parser.add_argument("--modes", nargs="+", default=["joint", "patches"], choices=("joint", "patches"))
    parser.add_argument("--method", default=None, help="joint solver (default: the library's)")
    parser.add_argument("--psm", type=int, default=6, help="tesseract page segmentation mode (default 6)")
    parser.add_argument("--iterations", type=int, default=None, help="solver iterations (default: the library's)")
    parser.add_argument("--rev", default=None, help="also the rows of lbdviewer as of this git revision "
                                                    "(one: its modules share one package name)")
    parser.add_argument("--quick", action="store_true", help="20 iterations (smoke test)")
    args = parser.parse_args(argv)
    if shutil.which("tesseract") is None:
        print("legibility: tesseract is not installed", file=sys.stderr)
        return 2
    iterations = 20 if args.quick else args.iterations
    outdir = Path(args.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f"{'sample':11} {'descriptor':10} {'mode':16} {'clean-up':9} {'read':>5} {'corr':>6} {'rank':>6} "
          f"{'inv':>3}  OCR text")
    for sample in args.samples:
        lines = expected_lines(sample)
        image = sample_image(sample)
        runs = [("original", "-", image, {})]
        if args.features:
            for rev in [None, args.rev] if args.rev else [None]:
                runs += feature_runs(image, args.features, iterations, rev)
        else:
            for rev in [None, args.rev] if args.rev else [None]:
                runs += grid_runs(image, args.offset, args.modes, args.method, iterations, rev)
        for family, mode, estimate, params in runs:
            stem = f"{sample}-{family}" if family == "original" else f"{sample}-{family}-{mode.replace(':', '')}"
            quality = {"correlation": round(correlation(image, estimate), 4),
                       "rank_correlation": round(rank_correlation(image, estimate), 4)}
            for cleaning, pixels in (("none", estimate), ("blur-otsu", clean_up(estimate))):
                path = save_png(outdir / f"{stem}-{cleaning}.png", pixels)
                reading = read_lines(pixels, lines, psm=args.psm)
                flat = " | ".join(line.strip() for line in reading.text.splitlines() if line.strip())
                print(f"{sample:11} {family:10} {mode:16} {cleaning:9} {reading.count:>2}/{len(lines)} "
                      f"{quality['correlation']:>6.3f} {quality['rank_correlation']:>6.3f} "
                      f"{'yes' if reading.inverted else 'no':>3}  {flat}", flush=True)
                rows.append({"sample": sample, "descriptor": family, "mode": mode, "clean_up": cleaning,
                             "lines_read": reading.count, "lines": len(lines), "inverted": reading.inverted,
                             **quality, "ratios": [round(r, 3) for r in reading.ratios], "ocr_text": reading.text,
                             "png": path.name, **params})
    save_json(outdir / "legibility.json", {"samples": {sample: expected_lines(sample) for sample in args.samples},
                                          "offset": args.offset, "features": args.features, "rev": args.rev,
                                          "patch_size": 32, "m": 512, "psm": args.psm, "match_ratio": MATCH_RATIO,
                                          "upscale": UPSCALE, "blur_sigma": BLUR_SIGMA, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
