"""A report folder's table (``REPORT_DIR/results.csv``), written by one run at a time and read back tolerantly.

Each row is appended as soon as it arrives (one ``write`` of one line, then
``flush`` and ``fsync``), its thumbnails written beside it under ``thumbs/``
first; a thumbnail that cannot be written leaves its column empty and its
row stands. A half-written last line (power cut) is cut off when the file is
opened again. Reading back (:func:`read_rows`), a damaged row (bytes changed
on disk, a cell that is not a number, a row repeated) is reported and
skipped, and its task runs again; the other rows stand. File names that are
not UTF-8 are kept byte for byte (``surrogateescape``).

A :class:`TaskKind` names what a batch of tasks runs and the table it fills:
:data:`AUDIT` is the audit's (``results.csv``), ``lbdviewer defend`` has
its own (:data:`lbdviewer.defences.tasks.DEFEND`).

One audit at a time writes a report folder: :class:`ResultsLog` holds a lock
on ``REPORT_DIR/.lbdviewer-audit.lock`` while it is open, and a second audit
into the same folder is refused with the folder's name and who holds it (the
system drops the lock with its process, even one killed by ``kill -9``).
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import socket
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from lbdviewer.audit.tasks import COLUMNS, error_row, row_key, run_task
from lbdviewer.io.files import atomic_write
from lbdviewer.io.tables import read_table, typed_cells

RESULTS = "results.csv"
#: The lock file of a report folder (see :class:`ResultsLog`).
LOCK = ".lbdviewer-audit.lock"
#: Columns of ``results.csv`` read as integers, as floats and as text.
INTEGER_COLUMNS = ("keypoints", "iterations")
FLOAT_COLUMNS = ("coverage", "correlation", "rank_correlation", "ssim", "ocr_similarity", "ocr_confidence", "seconds")
TEXT_COLUMNS = tuple(column for column in COLUMNS if column not in INTEGER_COLUMNS + FLOAT_COLUMNS)
THUMBS = "thumbs"


class FolderInUseError(ValueError):
    """Another audit holds the report folder's lock."""


class ResultsLog:
    """A report folder's table, opened for appending rows one at a time, durably, by one run at a time.

    Parameters
    ----------
    folder : str or os.PathLike
        The report folder (created if missing).
    kind : TaskKind, optional
        Whose table (default :data:`AUDIT`: ``results.csv``).

    Attributes
    ----------
    done : set of tuple
        The task key of every row in the table.
    damaged : list of (int, str)
        Line and reason of each row skipped as damaged (see :func:`read_rows`);
        their tasks are not in ``done`` and run again.

    Raises
    ------
    FolderInUseError
        If another audit has the folder open (the message names the folder
        and that audit's process).
    ValueError
        If an existing table has other columns than the kind's
        (:data:`~lbdviewer.audit.tasks.COLUMNS` for an audit).
    """

    def __init__(self, folder, *, kind=None):
        self.kind = kind = AUDIT if kind is None else kind
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / kind.results
        self._fd = None
        self._lock = _FolderLock(self.folder / LOCK)
        try:
            if self.path.exists():
                _cut_partial_line(self.path)
            if not self.path.exists() or self.path.stat().st_size == 0:
                atomic_write(self.path, _csv_line(kind.columns).encode("utf-8"))
            rows, self.damaged = read_table(self.path, columns=kind.columns, key=kind.key, typed=kind.typed)
            self.done = {kind.key(row) for row in rows}
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except BaseException:
            self._lock.release()
            raise
        self._thumbs_failed = False

    def append(self, row, thumbnails=None):
        """Write the row's thumbnails under ``thumbs/``, then the row, then ``fsync``.

        Returns the row as written (thumbnail columns filled in). A thumbnail
        that cannot be written (``thumbs`` is a file, the disk is full) leaves
        its column empty and warns once; the row is written all the same.
        """
        row = dict(row)
        key = self.kind.key(row)
        for kind, png in (thumbnails or {}).items():
            name = f"{THUMBS}/{_thumb_stem(key)}-{kind}.png"
            try:
                (self.folder / THUMBS).mkdir(exist_ok=True)
                atomic_write(self.folder / name, png)
            except (OSError, ValueError) as error:
                if not self._thumbs_failed:
                    self._thumbs_failed = True
                    warnings.warn(f"thumbnails cannot be written under {str(self.folder / THUMBS)!r} ({error}): "
                                  "rows are recorded without them", AuditFilesWarning, stacklevel=2)
                continue
            row[f"thumbnail_{kind}"] = name
        columns = self.kind.columns  # the input exactly: it is the key
        cells = [row[columns[0]]] + [_cell(row.get(column)) for column in columns[1:]]
        os.write(self._fd, _csv_line(cells).encode("utf-8", "surrogateescape"))
        os.fsync(self._fd)
        self.done.add(key)
        return row

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class AuditFilesWarning(UserWarning):
    """Something beside the results could not be written (a thumbnail); the results are complete."""


class _FolderLock:
    """An exclusive lock on ``path`` for this process (``flock``; ``msvcrt.locking`` on Windows), or refused.

    The file says who holds it (process, machine, time) for the message of a
    second audit. The system drops the lock when its process ends, however.
    """

    def __init__(self, path):
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _lock_fd(self._fd)
        except OSError:
            os.lseek(self._fd, 0, os.SEEK_SET)
            holder = os.read(self._fd, 200).decode("utf-8", "replace").strip() or "another process"
            os.close(self._fd)
            self._fd = None
            raise FolderInUseError(f"report folder {str(path.parent)!r} is in use by another audit ({holder}): "
                                   "wait for it to finish, or write to another REPORT_DIR") from None
        os.ftruncate(self._fd, 0)
        os.lseek(self._fd, 0, os.SEEK_SET)
        os.write(self._fd, f"process {os.getpid()} on {socket.gethostname()}, since "
                           f"{time.strftime('%Y-%m-%d %H:%M:%S')}".encode("utf-8"))

    def release(self):
        if self._fd is not None:
            os.close(self._fd)  # closing the file drops the lock
            self._fd = None


def _lock_fd(fd):
    """Take an exclusive lock on ``fd`` without waiting; OSError if another process holds it."""
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        return
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def typed_row(cells):
    """A row of ``results.csv`` from its cells: integers, floats, None for empty cells; ValueError if damaged.

    Examples
    --------
    >>> row = typed_row(["/a.png", "orb", "ok", "12"] + [""] * (len(COLUMNS) - 4))
    >>> row["keypoints"], row["coverage"]
    (12, None)
    """
    row = typed_cells(cells, COLUMNS, required=("input", "descriptor", "status"), text=TEXT_COLUMNS,
                      integers=INTEGER_COLUMNS)
    if row["status"] != "ok" and not row["status"].startswith("error: "):
        raise ValueError(f"status is neither 'ok' nor 'error: ...': {row['status'][:40]!r}")
    return row


def read_rows(path):
    """The rows of an audit's ``results.csv``, typed (:func:`typed_row`), and its damaged rows skipped.

    See :func:`lbdviewer.io.tables.read_table`: a row is damaged when it is
    not CSV, is refused by :func:`typed_row`, or repeats the
    ``(input, descriptor)`` of an earlier row.

    Returns
    -------
    rows : list of dict
    damaged : list of (int, str)
        The line each damaged row starts on, and why it was skipped.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "results.csv"
    ...     ok = "/a.png,orb,ok" + "," * (len(COLUMNS) - 3) + "\\n"
    ...     bad = "/b.png,orb,ok,x" + "," * (len(COLUMNS) - 4) + "\\n"
    ...     _ = path.write_bytes((",".join(COLUMNS) + "\\n" + ok + bad).encode())
    ...     rows, damaged = read_rows(path)
    >>> [row["input"] for row in rows], damaged
    (['/a.png'], [(3, "keypoints is not a number: 'x'")])
    """
    return read_table(path, columns=COLUMNS, key=row_key, typed=typed_row)


def _csv_line(values):
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(values)
    return buffer.getvalue()


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if value != value else f"{value:.6g}"  # NaN: undefined, an empty cell
    return " ".join(str(value).splitlines()) if isinstance(value, str) else value


def _cut_partial_line(path):
    """Drop a last line without its newline (a row cut short by a crash)."""
    with open(path, "rb+") as file:
        if file.seek(0, os.SEEK_END) == 0:
            return
        file.seek(-1, os.SEEK_END)
        if file.read(1) == b"\n":  # the usual case: one byte read, not the table
            return
        file.seek(0)
        file.truncate(file.read().rfind(b"\n") + 1)


def _thumb_stem(key):
    return hashlib.sha1("\0".join(map(str, key)).encode("utf-8", "surrogateescape")).hexdigest()[:16]


@dataclass(frozen=True)
class TaskKind:
    """A batch of one-row tasks: what runs, the table it fills and how a row names its task.

    Attributes
    ----------
    run : callable
        ``task -> (row, thumbnails)``, a pure function of a picklable task
        that never raises for a bad input.
    columns : tuple of str
        The table's columns, in order; the first is the input path.
    key : callable
        ``row -> tuple``: the ``key`` of the task that made the row.
    error_row : callable
        ``(task, status) -> (row, thumbnails)``: the row of a task whose
        process died.
    typed : callable
        ``cells -> row`` read back from the table, a ValueError for a damaged
        row (see :func:`read_rows`).
    results : str
        The table's file name in the report folder.
    """

    run: Callable
    columns: tuple
    key: Callable
    error_row: Callable
    typed: Callable
    results: str = RESULTS


#: The audit's tasks (:func:`~lbdviewer.audit.tasks.run_task`), in ``results.csv``.
AUDIT = TaskKind(run_task, COLUMNS, row_key, error_row, typed_row)


__all__ = ["AUDIT", "FLOAT_COLUMNS", "INTEGER_COLUMNS", "LOCK", "RESULTS", "TEXT_COLUMNS", "THUMBS", "AuditFilesWarning",
           "FolderInUseError", "ResultsLog", "TaskKind", "read_rows", "typed_row"]
