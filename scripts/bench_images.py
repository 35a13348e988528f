"""Whole-image reconstruction benchmark: seconds and peak memory per row.

Rows: the 512x512 ``camera`` sample, 32x32 patches, M = 512 bits, offsets
32, 8 and 1 (``--offsets``), patchwise (BIHT, 200 iterations a patch) and
joint (oriented sign consistency, 300 iterations), BRIEF and FREAK: the library's
defaults. Each row
runs in its own subprocess, so ``peak_rss_mb`` (``ru_maxrss`` of that
process) is the row's own peak; ``setup_rss_mb`` is the resident size after
imports, loading and describing, before the solve. Rows are printed as they
complete (offset 1 means one patch per pixel: ~230 000 patches, minutes per row).

The reference rows run the offset-32 patchwise solve again with the slow,
obviously-correct path (dense ``(M, N)`` matrix operator, generic batched
BIHT) and give its time as a ratio to the default path.

Each row reports the Pearson ``correlation`` and the Spearman
``rank_correlation`` (invariant to tone maps) over the covered pixels.

``--sites fast`` puts the patches at the image's FAST keypoints instead of a
grid (``--offsets`` is then ignored). ``--rev REV`` runs every row a second
time with ``lbdviewer`` as of the git revision ``REV`` (exported as
``scripts/bench_joint_ab.py`` does; its method column reads ``@REV``; several
revisions may be given), in the same run, on the same images (read by the working tree: samples the
revision did not ship are measured too).

Usage: ``python scripts/bench_images.py [--quick] [--offsets 32 8 1] [--images camera astronaut]
[--sites grid|fast] [--modes patches joint] [--method NAME] [--rev REV ...] [--no-reference] [--json OUT.json]``
(``--quick``: a 128x128 crop, offsets 32 and 8, 20 iterations; ``--method``: the joint solver, default
the library's).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

QUICK_CROP = (192, 192, 128)


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _library(rev):
    """``(make_pattern, grid_sites, fast_sites, describe_sites, reconstruct_image)`` of the working tree or of ``rev``."""
    if rev:
        from bench_joint_ab import load_revision

        modules = load_revision(rev)
        sites, reconstruct = modules["sites"], modules["reconstruct"]
        return (modules["patterns"].make_pattern, sites.grid_sites, sites.fast_sites, reconstruct.describe_sites,
                reconstruct.reconstruct_image)
    from lbdviewer.patterns.families import make_pattern
    from lbdviewer.reconstruction.image import describe_sites, reconstruct_image
    from lbdviewer.reconstruction.sites import fast_sites, grid_sites

    return make_pattern, grid_sites, fast_sites, describe_sites, reconstruct_image


def run_row(spec):
    """Run one row in this process and return its measurements (a dict)."""
    from lbdviewer.io.samples import sample_image
    from lbdviewer.evaluation.metrics import correlation, rank_correlation
    from lbdviewer.operators.descriptor import DescriptorOperator
    from lbdviewer.bits import unpack_bits
    from lbdviewer.reconstruction.image import average_patches
    from lbdviewer.solvers.patch.biht import BIHT

    make_pattern, grid_sites, fast_sites, describe_sites, reconstruct_image = _library(spec.get("rev"))
    image = sample_image(spec["image"])
    if spec["crop"]:
        top, left, side = spec["crop"]
        image = image[top:top + side, left:left + side]
    pattern = make_pattern(spec["descriptor"], patch_size=32, m=512)
    if spec.get("sites", "grid") == "fast":
        sites, _ = fast_sites(image, patch_size=32)
    else:
        sites = grid_sites(image.shape, patch_size=32, offset=spec["offset"])
    bits = describe_sites(image, sites, pattern)
    setup = _rss_mb()
    started = time.perf_counter()
    if spec["mode"] == "reference":
        state = BIHT(DescriptorOperator(pattern, backend="dense"), unpack_bits(bits, pattern.m),
                     iterations=spec["iterations"] or 200, backend="batched").run()
        estimate, counts = average_patches(state.x, sites, image.shape)
        covered, method = counts > 0, "biht"
    else:
        result = reconstruct_image(bits, sites, pattern, shape=image.shape, mode=spec["mode"],
                                   method=spec.get("method") if spec["mode"] == "joint" else None,
                                   iterations=spec["iterations"])
        estimate, covered, method = result.image, result.covered, result.method
    seconds = time.perf_counter() - started
    if spec.get("rev"):
        method = f"{method}@{spec['rev']}"
    return {**spec, "method": method, "shape": list(image.shape), "sites": int(len(sites)),
            "seconds": round(seconds, 2),
            "setup_rss_mb": round(setup, 1), "peak_rss_mb": round(_rss_mb(), 1),
            "correlation": round(correlation(image, estimate, mask=covered), 4),
            "rank_correlation": round(rank_correlation(image, estimate, mask=covered), 4)}


def _spawn(spec):
    command = [sys.executable, __file__, "--row", json.dumps(spec)]
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        raise RuntimeError(f"row {spec} failed:\n{completed.stderr}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="128x128 crop, offsets 32 and 8, 20 iterations")
    parser.add_argument("--offsets", type=int, nargs="+", default=None, help="grid offsets (default 32 8 1)")
    parser.add_argument("--images", nargs="+", default=["camera"], help="sample images (default camera)")
    parser.add_argument("--modes", nargs="+", default=["patches", "joint"], choices=("patches", "joint"))
    parser.add_argument("--sites", default="grid", choices=("grid", "fast"), help="grid (default) or FAST keypoints")
    parser.add_argument("--method", default=None, help="joint solver (default: the library's)")
    parser.add_argument("--rev", nargs="+", default=[], help="also run every row with lbdviewer as of these git revisions")
    parser.add_argument("--no-reference", action="store_true", help="skip the dense reference rows")
    parser.add_argument("--json", metavar="OUT.json", help="also write all rows to this file")
    parser.add_argument("--row", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.row:
        print(json.dumps(run_row(json.loads(args.row))))
        return 0
    offsets = args.offsets or ([32, 8] if args.quick else [32, 8, 1])
    base = {"image": "camera", "crop": list(QUICK_CROP) if args.quick else None,
            "iterations": 20 if args.quick else None, "method": args.method}
    if args.sites == "fast":
        offsets = ["fast"]
    specs = [{**base, "image": name, "offset": offset, "descriptor": family, "mode": mode, "sites": args.sites,
              "rev": rev}
             for name in args.images for offset in offsets for family in ("brief", "freak") for mode in args.modes
             for rev in [None, *args.rev]]
    rows = []
    header = (f"{'image':11} {'offset':>6} {'descriptor':10} {'mode':9} {'method':20} {'sites':>7} {'seconds':>8} "
              f"{'peak MB':>8} {'corr':>6} {'rank':>6}")
    print(header, flush=True)
    for spec in specs:
        row = _spawn(spec)
        rows.append(row)
        print(f"{row['image']:11} {row['offset']:>6} {row['descriptor']:10} {row['mode']:9} {row['method']:20} "
              f"{row['sites']:>7} {row['seconds']:>8.2f} "
              f"{row['peak_rss_mb']:>8.1f} {row['correlation']:>6.3f} {row['rank_correlation']:>6.3f}", flush=True)
    for family in () if args.no_reference or args.sites == "fast" else ("brief", "freak"):
        reference = _spawn({**base, "offset": 32, "descriptor": family, "mode": "reference"})
        fast = next((r for r in rows if r["image"] == "camera" and r["offset"] == 32 and r["descriptor"] == family
                     and r["mode"] == "patches" and not r["rev"]),
                    None) or _spawn({**base, "offset": 32, "descriptor": family, "mode": "patches"})
        reference["ratio_to_default"] = round(reference["seconds"] / max(fast["seconds"], 1e-9), 2)
        rows.append(reference)
        print(f"{'camera':11} {32:>6} {family:10} {'dense ref':9} {'biht':20} {reference['sites']:>7} "
              f"{reference['seconds']:>8.2f} {reference['peak_rss_mb']:>8.1f} {reference['correlation']:>6.3f} "
              f"{reference['rank_correlation']:>6.3f}  "
              f"= {reference['ratio_to_default']}x the default patchwise time", flush=True)
    if args.json:
        from lbdviewer.io.strict_json import save_json

        save_json(args.json, {"rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
