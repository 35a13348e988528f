"""Files written whole or not at all, files read only when they are regular files, and the hash of a file's bytes."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_all", "file_sha256", "open_regular", "read_regular"]

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode):
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path, what="file", *, max_bytes=None):
    """Open ``path`` for reading in binary mode only if it is a regular file (of at most ``max_bytes``).

    A FIFO, a device, a socket or a folder is refused by name before it is
    opened (``os.stat``; a symbolic link is followed), so that nothing blocks
    on it; the file is then opened with ``O_NONBLOCK`` and checked again on
    the open descriptor (``os.fstat``), so that a file swapped in between is
    refused too.

    Parameters
    ----------
    path : str or os.PathLike
    what : str
        What the file is, for messages (``"feature file"``, ...).
    max_bytes : int, optional
        Largest size accepted (checked on the open descriptor, before any read).

    Returns
    -------
    file object
        Opened ``"rb"``, blocking again (reads of a regular file never block).

    Raises
    ------
    ValueError
        Naming the file and what it is, or its size and the limit.

    Examples
    --------
    >>> open_regular("/dev/null", "image file")
    Traceback (most recent call last):
    ...
    ValueError: image file '/dev/null' is a character device, not a regular file: refused
    """
    name = os.fspath(path)
    try:
        mode = os.stat(name).st_mode
    except OSError as error:
        raise ValueError(f"cannot read {what} {name!r}: {error.strerror or error}") from None
    if not stat.S_ISREG(mode):
        raise ValueError(f"{what} {name!r} is {_kind(mode)}, not a regular file: refused")
    try:
        descriptor = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as error:
        raise ValueError(f"cannot read {what} {name!r}: {error.strerror or error}") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise ValueError(f"{what} {name!r} is {_kind(status.st_mode)}, not a regular file: refused")
        if max_bytes is not None and status.st_size > max_bytes:
            raise ValueError(f"{what} {name!r} has {status.st_size:,} bytes, more than the {max_bytes:,} "
                             "this reader accepts")
        if hasattr(os, "set_blocking"):
            os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def read_regular(path, what="file", *, max_bytes=None):
    """The bytes of a regular file of at most ``max_bytes`` (see :func:`open_regular`).

    A file that grows past ``max_bytes`` while it is read is refused too.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = atomic_write(Path(folder, "a.txt"), b"abc")
    ...     read_regular(Path(folder, "a.txt"), max_bytes=3)
    b'abc'
    """
    with open_regular(path, what, max_bytes=max_bytes) as handle:
        data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    if max_bytes is not None and len(data) > max_bytes:
        raise ValueError(f"{what} {os.fspath(path)!r} has more than the {max_bytes:,} bytes this reader accepts")
    return data

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
