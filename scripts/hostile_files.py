"""Make the hostile files of issue #13 and measure how the CLI copes with each.

    .venv/bin/python scripts/hostile_files.py [--keep DIR]

Each file is small on disk but declares big work:

* ``huge.png``: a 20000 x 20000 PNG (a few hundred KB of zeros), given to ``reconstruct``;
* ``wide-shape.npz``: a feature file whose ``image_shape`` is 30000 x 30000, given to ``invert``;
* ``zip-bomb.npz``: a feature file whose keypoints member inflates to 3 GB, given to ``invert``;
* ``duplicates.npz``: 20000 ORB keypoints at one place, given to ``invert``;
* ``npy-48gb.npz``: a member whose ``.npy`` header declares 48 GB, given to ``invert``.

FileStorage, FIFO and calibration-cache cases (issue #24):

* ``orb-10k.yml`` / ``orb-10k.json``: 10,000 ORB keypoints as ``extract`` writes them, listed (a whole
  parse) with ``invert --list``; ``--timing`` also times both loads in this process (best of 5);
* ``block-64mb.yml``, ``flow-64mb.yml``, ``flow-64mb.json``, ``text-64mb.xml``: 64 MB of keypoint
  numbers (a block sequence of rows, one flow sequence, JSON, XML text), given to ``invert``;
* ``over-64mb.yml``: 64 MB of nothing; ``fifo.yml``, ``fifo.npz``: named pipes;
* ``at-cap.yml``, ``at-cap.json``, ``at-cap.xml``: just under the size cap, 10,000 keypoints (the default
  limit) and a descriptor matrix as wide as fits, on one line: allowed by every limit, so read to the end
  (the bounded worst case), then refused for its width;
* ``cache-*``: ``invert`` of a small BEBLID feature file with its BEBLID cache entry replaced by a FIFO, a
  symbolic link to one, a 3 GB zip bomb, TEBLID's entry, or its own rows permuted with the checksum
  recomputed (each is recomputed with a one-line note); ``verify-model-all``: every descriptor (warm cache).

With ``--at-limits``, two files that declare exactly the default limits
(allowed work) run too: a 12 M pixel texture through ``reconstruct`` (20
iterations: memory does not depend on them) and 4000 ORB keypoints at one
place through ``invert``.

Each command runs in a child process; the table gives its exit status, wall
time, peak resident memory (``wait4``'s ``ru_maxrss``), whether a traceback
was printed, and the last line of stderr. Issue #13 asks for < 60 s, < 2 GB,
exit 2 (or 0 where the work is bounded) and no traceback; issue #24 for
< 300 MB for the FileStorage and cache cases (a damaged entry recomputed with
a note) and < 1.2 GB for ``verify-model-all``.
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


def write_repeated(path, head, line, size, tail=""):
    """A file of ``head``, ``line`` repeated to ``size`` bytes, and ``tail``, written in blocks."""
    block = line * max(1, (1 << 20) // len(line))
    with open(path, "w") as handle:
        handle.write(head)
        written = len(head)
        while written < size:
            handle.write(block)
            written += len(block)
        handle.write(tail)


def make_filestorage_files(folder):
    """The FileStorage and FIFO cases of issue #24."""
    from lbdviewer.features.files import save_features
    from lbdviewer.features.keypoints import FeatureSet, Keypoints

    folder = Path(folder)
    rng = np.random.default_rng(0)
    n = 10_000
    octave = rng.integers(0, 8, n)
    features = FeatureSet("orb", {"n_levels": 8}, (2000, 2000), Keypoints(
        rng.uniform(40, 1960, n), rng.uniform(40, 1960, n), np.float32(31) * np.float32(1.2) ** octave,
        rng.uniform(0, 360, n), octave, rng.uniform(0, 0.01, n)), rng.integers(0, 256, (n, 32), dtype=np.uint8),
        256, "little")
    for suffix in (".yml", ".json"):
        save_features(folder / f"orb-10k{suffix}", features)
    size = 64 * 2**20 - 4096
    row = "   - [ 100., 100., 31., 0., 0., 0, -1 ]\n"
    write_repeated(folder / "block-64mb.yml", "%YAML:1.0\n---\nkeypoints:\n", row, size, "descriptors: 0\n")
    write_repeated(folder / "flow-64mb.yml", "%YAML:1.0\n---\nkeypoints: [ ", "100., 100., 31., 0., 0., 0, -1,\n",
                   size, "0 ]\ndescriptors: 0\n")
    write_repeated(folder / "flow-64mb.json", '{"keypoints": [', "100.0, 100.0, 31.0, 0.0, 0.0, 0, -1, ", size,
                   '0], "descriptors": 0}')
    write_repeated(folder / "text-64mb.xml", '<?xml version="1.0"?>\n<opencv_storage><keypoints>',
                   "100. 100. 31. 0. 0. 0 -1\n", size, "</keypoints></opencv_storage>\n")
    with open(folder / "over-64mb.yml", "wb") as handle:
        handle.truncate(64 * 2**20 + 1)
    write_at_cap(folder)
    for name in ("fifo.yml", "fifo.npz"):
        os.mkfifo(folder / name)
    out = str(folder / "out.png")
    commands = {name: ["invert", str(folder / name), "-o", out]
                for name in ("block-64mb.yml", "flow-64mb.yml", "flow-64mb.json", "text-64mb.xml", "over-64mb.yml",
                             "at-cap.yml", "at-cap.json", "at-cap.xml", "fifo.yml", "fifo.npz")}
    commands.update({name: ["invert", str(folder / name), "--list"] for name in ("orb-10k.yml", "orb-10k.json")})
    return commands


def write_at_cap(folder, keypoints=10_000, width=1024):
    """``at-cap.*``: files just under the size cap that every limit lets through to the end of the parse.

    ``keypoints`` keypoints (the default limit) and a descriptor matrix as wide as fits (at most ``width``,
    the widest a file may declare), its values widened to three digits until the file reaches the cap, its
    data on one line (the YAML reader's costliest case): everything is read and converted, then the width
    is refused.
    """
    from lbdviewer.features.filestorage.parser import MAX_FILE_BYTES

    points = [(20 + i % 400, 20 + i // 400) for i in range(keypoints)]
    layouts = {  # head (given the columns), separator, tail
        "yml": (lambda cols: "%YAML:1.0\n---\nimage_size: [ 512, 512 ]\nkeypoints:\n"
                + "".join(f"   - [ {x}., {y}., 31., 0., 0., 0, -1 ]\n" for x, y in points)
                + f"descriptors: !!opencv-matrix\n   rows: {keypoints}\n   cols: {cols}\n   dt: u\n   data: [ ",
                ", ", " ]\n"),
        "json": (lambda cols: '{"image_size": [512, 512], "keypoints": ['
                 + ", ".join(f"{x}.0, {y}.0, 31.0, 0.0, 0.0, 0, -1" for x, y in points)
                 + f'], "descriptors": {{"type_id": "opencv-matrix", "rows": {keypoints}, "cols": {cols}, '
                 '"dt": "u", "data": [', ", ", "]}}\n"),
        "xml": (lambda cols: '<?xml version="1.0"?>\n<opencv_storage><image_size>512 512</image_size><keypoints>'
                + " ".join(f"{x}. {y}. 31. 0. 0. 0 -1" for x, y in points)
                + f'</keypoints><descriptors type_id="opencv-matrix"><rows>{keypoints}</rows><cols>{cols}</cols>'
                "<dt>u</dt><data>", " ", "</data></descriptors></opencv_storage>\n"),
    }
    room = MAX_FILE_BYTES - 4096
    for suffix, (head, separator, tail) in layouts.items():
        fixed = len(head(width)) + len(tail)
        cols = min(width, (room - fixed) // (keypoints * (1 + len(separator))))
        narrow = fixed + keypoints * cols * (1 + len(separator))
        wide = min(cols, (room - narrow) // keypoints // 2)  # three-digit values a row
        row = separator.join(["177"] * wide + ["7"] * (cols - wide))
        with open(folder / f"at-cap.{suffix}", "w") as handle:
            handle.write(head(cols))
            for k in range(keypoints):
                handle.write(row if k == 0 else separator + row)
            handle.write(tail)


def _cache_entry(folder, flavour, bits=512):
    import cv2

    return folder / f"{flavour}-{cv2.__version__}-bits-{bits}-v2.npz"


def make_cache_cases(folder, image):
    """Copies of a warm calibration cache whose BEBLID entry is damaged, one per case: ``{name: (argv, env)}``.

    Each case inverts a small BEBLID feature file (39 keypoints of a camera crop), which reads the entry and,
    the entry refused, recomputes it: the peak is the recomputation's. ``verify-model-all`` runs every
    descriptor with the warm cache.
    """
    import shutil

    from lbdviewer.features.npz import save_npz
    from lbdviewer.io.images import load_image, save_image
    from lbdviewer.libraries.calibration.cache import CHECKSUM_KEY, KEY_KEY, arrays_checksum

    folder = Path(folder)
    warm = folder / "cache-warm"
    env = {**os.environ, "LBDVIEWER_CACHE_DIR": str(warm)}
    for flavour in ("beblid", "teblid"):
        subprocess.run([PYTHON, "-m", "lbdviewer", "verify-model", str(image), "--descriptor", flavour, "--quiet"],
                       cwd=HERE, env=env, check=True, capture_output=True)
    crop = folder / "camera-crop.png"
    save_image(crop, load_image(image)[100:260, 150:310])
    features = folder / "beblid.npz"
    subprocess.run([PYTHON, "-m", "lbdviewer", "extract", str(crop), "--descriptor", "beblid", "--keypoints", "50",
                    "-o", str(features)], cwd=HERE, env=env, check=True, capture_output=True)

    def fifo(path):
        path.unlink()
        os.mkfifo(path)

    def link_to_fifo(path):
        path.unlink()
        os.mkfifo(path.with_name("pipe"))
        path.symlink_to(path.with_name("pipe"))

    def zip_bomb(path):
        path.unlink()
        rows = 3 * 1024 ** 3 // 40  # 3 GB of int64 boxes
        block = np.zeros((1 << 16, 5), dtype=np.int64).tobytes()
        write_npz(path, {}, raw={"boxes": (npy_header((rows, 5), "<i8"), (block for _ in range(rows >> 16)))})

    def foreign(path):
        shutil.copy(_cache_entry(path.parent, "teblid"), path)

    def permuted(path):
        with np.load(path) as data:
            entry = {name: data[name] for name in data.files}
        entry.pop(CHECKSUM_KEY)
        order = np.random.default_rng(0).permutation(len(entry["boxes"]))
        entry["boxes"], entry["thresholds"] = entry["boxes"][order], entry["thresholds"][order]
        entry[CHECKSUM_KEY] = arrays_checksum(entry)
        assert str(entry[KEY_KEY]).startswith("beblid")
        save_npz(path, entry)

    cases = {}
    for name, damage in (("fifo", fifo), ("link-to-fifo", link_to_fifo), ("zip-bomb-3gb", zip_bomb),
                         ("teblid-as-beblid", foreign), ("permuted-rows", permuted)):
        copy = folder / f"cache-{name}"
        shutil.copytree(warm, copy, symlinks=True)
        damage(_cache_entry(copy, "beblid"))
        cases[f"cache-{name}"] = (["invert", str(features), "-o", str(folder / "out.png"), "--quiet"],
                                  {**os.environ, "LBDVIEWER_CACHE_DIR": str(copy)})
    cases["verify-model-all"] = (["verify-model", str(image), "--quiet"], env)
    return cases


def filestorage_timing(folder, repeats=5):
    """Best-of-``repeats`` seconds to load the 10,000-keypoint YAML and JSON files, in this process."""
    from lbdviewer.features.files import load_features

    best = {}
    for suffix in (".yml", ".json"):
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            load_features(Path(folder) / f"orb-10k{suffix}")
            times.append(time.perf_counter() - started)
        best[suffix] = min(times)
    return best


def measure(argv, *, timeout=600, env=None):
    """Exit status, seconds, peak RSS (MB), traceback seen, last stderr line of ``lbdviewer argv``."""
    started = time.perf_counter()
    process = subprocess.Popen([PYTHON, "-m", "lbdviewer", *argv], cwd=HERE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, env=env)
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
        print(json.dumps(measure(sys.argv[2:], env=json.loads(os.environ.pop("HOSTILE_ENV", "null")))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", metavar="DIR", help="make the files in DIR and keep them")
    parser.add_argument("--at-limits", action="store_true",
                        help="also run files that declare exactly the default limits (allowed work; minutes)")
    parser.add_argument("--only", choices=("npz", "filestorage", "cache"), default=None,
                        help="run one group of cases (default: all)")
    parser.add_argument("--timing", action="store_true",
                        help="also time the 10,000-keypoint YAML and JSON loads in this process")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.keep or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        commands = {}
        if args.only in (None, "npz"):
            commands.update(make_files(folder))
        if args.at_limits:
            commands.update(make_limit_files(folder))
        if args.only in (None, "filestorage"):
            commands.update(make_filestorage_files(folder))
        if args.only in (None, "cache"):
            from lbdviewer.io.samples import sample_images

            commands.update(make_cache_cases(folder, sample_images()["camera"]))
        print(f"{'file':20s} {'size':>9s} {'exit':>4s} {'seconds':>8s} {'peak MB':>8s} {'traceback':>9s}  message")
        for name, argv in commands.items():
            argv, env = argv if isinstance(argv, tuple) else (argv, None)
            child_env = {**os.environ, "HOSTILE_ENV": json.dumps(env)}
            out = subprocess.run([PYTHON, __file__, "--one", *argv], capture_output=True, text=True, check=True,
                                 env=child_env)
            code, seconds, peak, traceback, last = json.loads(out.stdout)
            path = folder / name
            size = path.lstat().st_size if path.exists() and path.is_file() else 0
            print(f"{name:20s} {size / 1024:7.0f}KB {code:4d} {seconds:8.1f} {peak:8.0f} {str(traceback):>9s}  "
                  f"{last[:150]}", flush=True)
        if args.timing and args.only in (None, "filestorage"):
            best = filestorage_timing(folder)
            print(f"10,000 ORB keypoints: YAML {best['.yml']:.3f} s, JSON {best['.json']:.3f} s, "
                  f"YAML/JSON {best['.yml'] / best['.json']:.2f}x (best of 5, this process)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
