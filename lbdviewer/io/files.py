"""Files written whole or not at all, and the hash that names a file's bytes."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_all", "file_sha256"]

_HASH_BLOCK = 1 << 20


def file_sha256(path):
    """SHA-256 (hex) of a file's bytes, read a block at a time.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = atomic_write(Path(folder, "a.txt"), b"abc")
    ...     file_sha256(Path(folder, "a.txt"))[:16]
    'ba7816bf8f01cfea'
    """
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(_HASH_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def atomic_write(path, data):
    """Write ``data`` (bytes) to ``path`` through a temporary file and a rename.

    A reader never sees a half-written file, and an interrupted write leaves
    the old file (or none) in place.

    Raises
    ------
    ValueError
        If the folder of ``path`` does not exist.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise ValueError(f"output folder {str(directory)!r} does not exist")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        _give_default_mode(temporary)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return path


def atomic_write_all(files):
    """Write several files so that either all of them land or none does.

    Every file is first written in full to a temporary file beside it; then
    each existing destination is moved aside, the new files are renamed into
    place, and the old ones are deleted. If any step fails, the new files are
    removed and the old ones put back.

    Parameters
    ----------
    files : dict of path to bytes

    Raises
    ------
    ValueError
        If a destination folder does not exist or a destination is a folder.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     a, b = Path(folder, "a.png"), Path(folder, "a.json")
    ...     _ = atomic_write_all({a: b"png", b: b"{}"})
    ...     a.read_bytes(), b.read_bytes()
    (b'png', b'{}')
    """
    staged, placed, aside = [], [], []
    try:
        for path, data in files.items():
            path = Path(path)
            directory = path.parent if str(path.parent) else Path(".")
            if not directory.is_dir():
                raise ValueError(f"output folder {str(directory)!r} does not exist")
            if path.is_dir():
                raise ValueError(f"output {str(path)!r} is a folder")
            handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
            staged.append((temporary, path))
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            _give_default_mode(temporary)
        for temporary, path in staged:
            if path.exists():
                backup = f"{temporary}.old"
                os.replace(path, backup)
                aside.append((backup, path))
            os.replace(temporary, path)
            placed.append(path)
    except BaseException:
        for path in placed:
            if os.path.exists(path):
                os.unlink(path)
        for backup, path in aside:
            os.replace(backup, path)
        for temporary, _ in staged:
            if os.path.exists(temporary):
                os.unlink(temporary)
        raise
    for backup, _ in aside:
        os.unlink(backup)
    return [path for _, path in staged]


def _give_default_mode(path):
    # mkstemp creates the file readable by its owner only; give it the
    # permissions any new file gets here.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)
