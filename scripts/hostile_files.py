"""Make the hostile files of issue #13 and measure how the CLI copes with each.

    .venv/bin/python scripts/hostile_files.py [--keep DIR]

Each file is small on disk but declares big work:

* ``huge.png``: a 20000 x 20000 PNG (a few hundred KB of zeros), given to ``reconstruct``;
* ``wide-shape.npz``: a feature file whose ``image_shape`` is 30000 x 30000, given to ``invert``;
* ``zip-bomb.npz``: a feature file whose keypoints member inflates to 3 GB, given to ``invert``;
* ``duplicates.npz``: 20000 ORB keypoints at one place, given to ``invert``;
* ``npy-48gb.npz``: a member whose ``.npy`` header declares 48 GB, given to ``invert``.

With ``--at-limits``, two files that declare exactly the default limits
(allowed work) run too: a 12 M pixel texture through ``reconstruct`` (20
iterations: memory does not depend on them) and 4000 ORB keypoints at one
place through ``invert``.

Each command runs in a child process; the table gives its exit status, wall
time, peak resident memory (``wait4``'s ``ru_maxrss``), whether a traceback
was printed, and the last line of stderr. The issue asks for < 60 s, < 2 GB,
exit 2 (or 0 where the work is bounded) and no traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def write_huge_png(path, height=20000, width=20000):
    """A gray 8-bit PNG of zeros, compressed row by row (never held in memory)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    compressor = zlib.compressobj(9)
    row = b"\x00" * (width + 1)  # filter byte + pixels
    parts = [compressor.compress(row) for _ in range(height)]
    parts.append(compressor.flush())
    with open(path, "wb") as file:
        file.write(b"\x89PNG\r\n\x1a\n")
        file.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)))
        file.write(chunk(b"IDAT", b"".join(parts)))
        file.write(chunk(b"IEND", b""))


def _npy_bytes(array):
    from io import BytesIO

    buffer = BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def feature_members(keypoints, *, image_shape=(512, 512)):
    keypoints = np.asarray(keypoints, dtype=np.float64)
    rng = np.random.default_rng(0)
    return {
        "format": np.array("lbdviewer-features"), "version": np.array(1, dtype=np.int64),
        "descriptor": np.array("orb"), "params": np.array(json.dumps({})),
        "image_shape": np.array(image_shape, dtype=np.int64), "keypoints": keypoints,
        "descriptors": rng.integers(0, 256, (len(keypoints), 32), dtype=np.uint8),
        "n_bits": np.array(256, dtype=np.int64), "bitorder": np.array("little"),
    }


def write_npz(path, members, *, raw=None):
    """An npz of ``members`` (arrays) plus ``raw`` members (name -> (header bytes, payload generator))."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in members.items():
            if raw and name in raw:
                continue
            archive.writestr(f"{name}.npy", _npy_bytes(array))
        for name, (header, payload) in (raw or {}).items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                member.write(header)
                for block in payload:
                    member.write(block)


def npy_header(shape, dtype="<f8"):
    text = repr({"descr": dtype, "fortran_order": False, "shape": tuple(shape)}).encode()
    padding = 64 - (10 + len(text) + 1) % 64
    header = text + b" " * padding + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header


def make_files(folder):
    folder = Path(folder)
    write_huge_png(folder / "huge.png")
    one = [[100.0, 100.0, 31.0, 0.0, 0.0, 0.0]]
    members = feature_members(one, image_shape=(30000, 30000))
    write_npz(folder / "wide-shape.npz", members)
    rows = 3 * 1024 ** 3 // 48  # 3 GB of float64 keypoint rows
    block = np.zeros((1 << 16, 6)).tobytes()
    members = feature_members(one)
    write_npz(folder / "zip-bomb.npz", members, raw={
        "keypoints": (npy_header((rows, 6)), (block for _ in range(rows >> 16)))})
    write_npz(folder / "duplicates.npz", feature_members(np.tile(one, (20000, 1))))
    members = feature_members(one)
    write_npz(folder / "npy-48gb.npz", members, raw={
        "descriptors": (npy_header((48 * 1024 ** 3 // 32, 32), "|u1"), iter(()))})
    return {
        "huge.png": ["reconstruct", str(folder / "huge.png"), "-o", str(folder / "out.png")],
        "wide-shape.npz": ["invert", str(folder / "wide-shape.npz"), "-o", str(folder / "out.png")],
        "zip-bomb.npz": ["invert", str(folder / "zip-bomb.npz"), "-o", str(folder / "out.png")],
        "duplicates.npz": ["invert", str(folder / "duplicates.npz"), "-o", str(folder / "out.png")],
        "npy-48gb.npz": ["invert", str(folder / "npy-48gb.npz"), "-o", str(folder / "out.png")],
    }


def make_limit_files(folder):
    """Files that declare exactly the default limits: allowed, so the work must stay bounded."""
    import cv2

    from lbdviewer.io.limits import DEFAULT_MAX_KEYPOINTS, DEFAULT_MAX_PIXELS

    folder = Path(folder)
    side = int(DEFAULT_MAX_PIXELS ** 0.5)
    rows, cols = np.mgrid[0:side, 0:side].astype(np.float32)
    texture = 128 + 60 * np.sin(rows / 23.0) * np.cos(cols / 17.0) + np.random.default_rng(0).normal(0, 20, rows.shape)
    cv2.imwrite(str(folder / "limit-pixels.png"), np.clip(texture, 0, 255).astype(np.uint8))
    one = [[100.0, 100.0, 31.0, 0.0, 0.0, 0.0]]
    write_npz(folder / "limit-keypoints.npz", feature_members(np.tile(one, (DEFAULT_MAX_KEYPOINTS, 1))))
    return {
        "limit-pixels.png": ["reconstruct", str(folder / "limit-pixels.png"), "-o", str(folder / "out.png"),
                             "--iterations", "20"],
        "limit-keypoints.npz": ["invert", str(folder / "limit-keypoints.npz"), "-o", str(folder / "out.png")],
    }


def measure(argv, *, timeout=600):
    """Exit status, seconds, peak RSS (MB), traceback seen, last stderr line of ``lbdviewer argv``."""
    started = time.perf_counter()
    process = subprocess.Popen([PYTHON, "-m", "lbdviewer", *argv], cwd=HERE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
    seconds = time.perf_counter() - started
    # communicate() reaped the child; its rusage is in RUSAGE_CHILDREN, a running maximum,
    # so each command runs in a fresh helper process (see main) to measure it alone.
    import resource

    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    last = (stderr.strip().splitlines() or [""])[-1]
    return process.returncode, seconds, peak_mb, "Traceback" in stderr, last


def main():
    if sys.argv[1:2] == ["--one"]:  # internal: measure one command in this fresh process
        print(json.dumps(measure(sys.argv[2:])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", metavar="DIR", help="make the files in DIR and keep them")
    parser.add_argument("--at-limits", action="store_true",
                        help="also run files that declare exactly the default limits (allowed work; minutes)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.keep or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        commands = make_files(folder)
        if args.at_limits:
            commands.update(make_limit_files(folder))
        print(f"{'file':16s} {'size':>9s} {'exit':>4s} {'seconds':>8s} {'peak MB':>8s} {'traceback':>9s}  message")
        for name, argv in commands.items():
            out = subprocess.run([PYTHON, __file__, "--one", *argv], capture_output=True, text=True, check=True)
            code, seconds, peak, traceback, last = json.loads(out.stdout)
            size = os.path.getsize(folder / name)
            print(f"{name:16s} {size / 1024:7.0f}KB {code:4d} {seconds:8.1f} {peak:8.0f} {str(traceback):>9s}  "
                  f"{last[:150]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
