"""Run audit tasks in a local process pool or on a Dask cluster; the report folder is the checkpoint.

The runner does three things and no scheduling of its own:

1. **Plan**: :func:`collect_inputs` expands files, folders (recursed) and
   globs; :func:`plan_tasks` makes one :class:`~lbdviewer.audit.tasks.AuditTask`
   per image and descriptor (one per feature file).
2. **Execute** :func:`~lbdviewer.audit.tasks.run_task` on each task, either in
   a :class:`concurrent.futures.ProcessPoolExecutor` (processes started by a
   fork server, never forked from a process with running threads) or, given a
   scheduler address, on Dask (``distributed.Client(address).map`` and
   ``as_completed``). The local pool is fed ``workers`` tasks at a time, so
   when a worker process dies (a crash or the kernel's out-of-memory killer)
   at most ``workers`` tasks are suspect: the others are resubmitted and each
   suspect is run again alone, in its own process, and becomes an error row
   if that process dies too. Dask retries and reports a dying worker itself
   (``KilledWorker``), which also becomes an error row.
3. **Record**: each row is appended to ``REPORT_DIR/results.csv`` as soon as
   it arrives (one ``write`` of one line, then ``flush`` and ``fsync``), its
   thumbnails written beside it under ``thumbs/`` first. A crash or Ctrl-C
   loses no finished row; a half-written last line (power cut) is cut off
   when the file is opened again. A second run over the same folder skips
   every ``(input, descriptor)`` already in the file, error rows included
   (delete a row to run it again).

Workers read their inputs by path: on a cluster, run the workers where the
paths resolve (the same machine or a shared filesystem).

The same runner serves other batches of one-row tasks: a :class:`TaskKind`
names the task function, the columns of its table, how a row names its task
and its file (``lbdviewer defend``: :data:`lbdviewer.defences.tasks.DEFEND`);
:data:`AUDIT` is the audit's.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import hashlib
import io
import multiprocessing
import os
import signal
import threading
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from lbdviewer.audit.tasks import (COLUMNS, FROM_FILE, IMAGE_SUFFIXES, AuditTask, feature_file_entries,
                                   is_feature_file, row_key, run_task)
from lbdviewer.features.files import FEATURE_SUFFIXES
from lbdviewer.io.files import atomic_write

RESULTS = "results.csv"
#: Imported once by the fork server, so each worker process starts with them loaded.
PRELOAD = ["lbdviewer.audit.tasks", "lbdviewer.features.invert", "lbdviewer.cli.commands.extract", "lbdviewer.evaluation.metrics"]
THUMBS = "thumbs"
#: Seconds to wait for a Dask scheduler to answer.
CONNECT_TIMEOUT = 15
#: What a row says when the process running its task died twice.
DIED = "error: the worker process died on this input (a crash, or killed for its memory)"


def default_workers():
    """Processes of the local pool by default: the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def collect_inputs(paths):
    """The input files named by ``paths``: files as given, folders recursed, globs expanded.

    Folders contribute their images (:data:`~lbdviewer.audit.tasks.IMAGE_SUFFIXES`)
    and feature files (:data:`lbdviewer.features.files.FEATURE_SUFFIXES`), sorted; a file named explicitly is an input
    whatever its suffix (a file that cannot be read becomes an error row).
    Paths are made absolute; duplicates are dropped, first occurrence kept.

    Raises
    ------
    ValueError
        If a path does not exist, a glob pattern matches nothing, or no input
        is left (before any work starts).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     for name in ("b.png", "a.npz", "notes.txt"):
    ...         _ = Path(folder, name).write_bytes(b"")
    ...     [Path(p).name for p in collect_inputs([folder])]
    ['a.npz', 'b.png']
    """
    suffixes = set(IMAGE_SUFFIXES) | set(FEATURE_SUFFIXES)
    found = []
    for given in paths:
        given = os.fspath(given)
        if glob.has_magic(given) and not os.path.exists(given):
            matches = sorted(glob.glob(given, recursive=True))
            if not matches:
                raise ValueError(f"INPUT pattern {given!r} matches no file")
        elif not os.path.exists(given):
            raise ValueError(f"INPUT {given!r} does not exist")
        else:
            matches = [given]
        for match in matches:
            if os.path.isdir(match):
                found.extend(str(p) for p in sorted(Path(match).rglob("*"))
                             if p.is_file() and p.suffix.lower() in suffixes)
            else:
                found.append(match)
    unique = list(dict.fromkeys(os.path.abspath(p) for p in found))
    if not unique:
        raise ValueError(f"INPUT names no image or feature file: {[os.fspath(p) for p in paths]}")
    return unique


def plan_tasks(inputs, descriptors, **options):
    """One task per image and descriptor, one per feature file (its descriptor is in the file) or entry of one.

    Parameters
    ----------
    inputs : list of str
        From :func:`collect_inputs`.
    descriptors : sequence of str
        Library descriptors to extract from images.
    **options
        The other fields of :class:`~lbdviewer.audit.tasks.AuditTask`.

    Examples
    --------
    >>> [t.key for t in plan_tasks(["/a.png", "/b.npz"], ["orb", "opencv-brief"])]
    [('/a.png', 'orb'), ('/a.png', 'opencv-brief'), ('/b.npz', '*')]
    """
    tasks = []
    for path in inputs:
        if is_feature_file(path):  # one task per image the file holds
            tasks += [AuditTask(path, FROM_FILE, entry=entry, **options)
                      for entry in feature_file_entries(path, max_keypoints=options.get("max_keypoints"))]
            continue
        tasks += [AuditTask(path, descriptor, **options) for descriptor in descriptors]
    return tasks


class ResultsLog:
    """``REPORT_DIR/results.csv``, opened for appending rows one at a time, durably.

    Parameters
    ----------
    folder : str or os.PathLike
        The report folder (created if missing).
    kind : TaskKind
        Whose table (default :data:`AUDIT`).

    Raises
    ------
    ValueError
        If an existing table has other columns than the kind's
        (:data:`~lbdviewer.audit.tasks.COLUMNS` for an audit).
    """

    def __init__(self, folder, *, kind=None):
        self.kind = kind = AUDIT if kind is None else kind
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / kind.results
        header = _csv_line(kind.columns)
        if self.path.exists():
            _cut_partial_line(self.path)
        if not self.path.exists() or self.path.stat().st_size == 0:
            atomic_write(self.path, header.encode("utf-8"))
        with open(self.path, newline="", encoding="utf-8") as file:
            reader = csv.reader(file)
            columns = tuple(next(reader, ()))
            if columns != kind.columns:
                raise ValueError(f"{str(self.path)!r} has columns {list(columns)}, this lbdviewer writes "
                                 f"{list(kind.columns)}: use another REPORT_DIR")
            self.done = {kind.key(dict(zip(columns, values))) for values in reader if len(values) == len(columns)}
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def append(self, row, thumbnails=None):
        """Write the row's thumbnails under ``thumbs/``, then the row, then ``fsync``.

        Returns the row as written (thumbnail columns filled in).
        """
        row = dict(row)
        key = self.kind.key(row)
        for kind, png in (thumbnails or {}).items():
            name = f"{THUMBS}/{_thumb_stem(key)}-{kind}.png"
            (self.folder / THUMBS).mkdir(exist_ok=True)
            atomic_write(self.folder / name, png)
            row[f"thumbnail_{kind}"] = name
        columns = self.kind.columns  # the input exactly: it is the key
        cells = [row[columns[0]]] + [_cell(row.get(column)) for column in columns[1:]]
        os.write(self._fd, _csv_line(cells).encode("utf-8"))
        os.fsync(self._fd)
        self.done.add(key)
        return row

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


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
        data = file.read()
        if data and not data.endswith(b"\n"):
            file.truncate(data.rfind(b"\n") + 1)


def _thumb_stem(key):
    return hashlib.sha1("\0".join(map(str, key)).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def iter_audit(tasks, folder, *, workers=None, scheduler=None, kind=None):
    """Run the tasks not yet in ``folder``'s results, yielding each row as it is recorded.

    Parameters
    ----------
    tasks : list of AuditTask
    folder : str or os.PathLike
        The report folder (the checkpoint).
    workers : int, optional
        Processes of the local pool (default :func:`default_workers`); unused
        with ``scheduler``.
    scheduler : str or distributed.Client, optional
        A Dask scheduler address (``tcp://HOST:PORT``) or a connected client:
        run the tasks on that cluster.
    kind : TaskKind, optional
        What the tasks are (default :data:`AUDIT`).

    Yields
    ------
    dict
        Each row as written to the kind's table (``results.csv``).
    """
    with ResultsLog(folder, kind=kind) as log:
        kind = log.kind
        pending = [task for task in tasks if task.key not in log.done]
        if not pending:
            return
        if scheduler is not None:
            results = _on_dask(pending, scheduler, kind)
        else:
            results = _on_local_pool(pending, workers or default_workers(), kind.run, kind.error_row)
        try:
            for row, thumbnails in results:
                yield log.append(row, thumbnails)
        finally:
            results.close()


def _error_row(task, status):
    row = dict.fromkeys(COLUMNS)
    row.update(input=task.label, descriptor=task.descriptor, status=status, mode=task.mode,
               iterations=task.iterations)
    return row, {}


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
    results : str
        The table's file name in the report folder.
    """

    run: Callable
    columns: tuple
    key: Callable
    error_row: Callable
    results: str = RESULTS


#: The audit's tasks (:func:`~lbdviewer.audit.tasks.run_task`), in ``results.csv``.
AUDIT = TaskKind(run_task, COLUMNS, row_key, _error_row)


def _on_local_pool(tasks, workers, function=run_task, error_row=_error_row):
    """``function(task)`` (default :func:`~lbdviewer.audit.tasks.run_task`) of every task in a local process pool.

    Yields the ``(row, thumbnails)`` results in completion order; a task whose
    process dies twice (see the module notes) yields ``error_row(task, DIED)``.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(dict.fromkeys(PRELOAD + [function.__module__])))
    _start_forkserver()
    queue, suspects = list(reversed(tasks)), []
    while queue:
        pool = ProcessPoolExecutor(max_workers=min(workers, len(queue)), mp_context=context,
                                   initializer=_ignore_interrupts)
        running = {}
        try:
            while queue or running:
                while queue and len(running) < workers:
                    task = queue.pop()
                    with _interrupt_deferred():  # a worker being started is registered before Ctrl-C stops it
                        running[pool.submit(function, task)] = task
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                broken = False
                for future in finished:
                    task = running.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        suspects.append(task)
                        broken = True
                        continue
                    yield result
                if broken:  # every running task is suspect; the pool is unusable
                    suspects.extend(running.values())
                    running = {}
                    break
        finally:
            if running:  # interrupted: stop the tasks still running, then wait for their processes to end
                _terminate(pool)  # (a worker still starting when this process exits prints a traceback)
            pool.shutdown(wait=True, cancel_futures=True)
    for task in suspects:  # each alone: only the input that kills its process fails
        with ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_ignore_interrupts) as pool:
            try:
                yield pool.submit(function, task).result()
            except BrokenProcessPool:
                yield error_row(task, DIED)


def _start_forkserver():
    """Start the fork server with Ctrl-C ignored, so that it is never interrupted while it imports :data:`PRELOAD`.

    The fork server ignores Ctrl-C only once its imports are done: a Ctrl-C
    in the first seconds printed its traceback (forty lines of imports)
    before "interrupted". The ignored signal is inherited by the server's
    process (and its workers, which leave Ctrl-C to this one anyway).
    """
    from multiprocessing import forkserver

    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        forkserver.ensure_running()
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _interrupt_deferred():
    """Hold a Ctrl-C that arrives inside the block until the block ends, then raise it.

    Submitting a task may start a worker process; interrupted half-way, the
    worker was not yet known to the pool, outlived this process and printed
    a traceback when it could not find the pool's semaphores.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda *_: caught.append(True))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _ignore_interrupts():
    """Worker processes leave Ctrl-C to the parent, which stops them (no traceback from each worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _terminate(pool):
    """Stop the pool's worker processes now (``terminate_workers`` from Python 3.14 on)."""
    if hasattr(pool, "terminate_workers"):
        pool.terminate_workers()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _on_dask(tasks, scheduler, kind=AUDIT):
    """``(row, thumbnails)`` of ``kind.run`` on every task from a Dask cluster, in completion order."""
    from distributed import Client, as_completed

    client = scheduler if isinstance(scheduler, Client) else Client(scheduler, timeout=CONNECT_TIMEOUT)
    futures = client.map(kind.run, tasks, pure=False)
    by_key = {future.key: task for future, task in zip(futures, tasks)}
    try:
        for future in as_completed(futures):
            try:
                yield future.result()
            except Exception as error:  # noqa: BLE001 - e.g. KilledWorker: the task's row says so
                yield kind.error_row(by_key[future.key], f"error: dask: {type(error).__name__}: {error}")
            future.release()
    finally:
        client.cancel([future for future in futures if not future.done()])
        if client is not scheduler:
            client.close()


__all__ = ["AUDIT", "RESULTS", "THUMBS", "ResultsLog", "TaskKind", "collect_inputs", "default_workers", "iter_audit",
           "plan_tasks"]
