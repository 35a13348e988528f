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
   it arrives (:class:`~lbdviewer.audit.results_log.ResultsLog`: one audit a
   folder, damaged rows skipped and run again). A crash or Ctrl-C loses no
   finished row. A second run over the same folder skips every
   ``(input, descriptor)`` already in the file, error rows included (delete a
   row to run it again). A local pool's workers die with the audit, even when
   it is killed by ``kill -9`` (:func:`die_with`).

Workers read their inputs by path: on a cluster, run the workers where the
paths resolve (the same machine or a shared filesystem).

The same runner serves other batches of one-row tasks: a :class:`~lbdviewer.audit.results_log.TaskKind`
names the task function, the columns of its table, how a row names its task
and its file (``lbdviewer defend``: :data:`lbdviewer.defences.tasks.DEFEND`);
:data:`~lbdviewer.audit.results_log.AUDIT` is the audit's.
"""

from __future__ import annotations

import contextlib
import glob
import multiprocessing
import os
import select
import signal
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from lbdviewer.audit.results_log import AUDIT, ResultsLog
from lbdviewer.audit.tasks import (FROM_FILE, IMAGE_SUFFIXES, AuditTask, error_row, feature_file_entries,
                                   is_feature_file, run_task)
from lbdviewer.features.files import FEATURE_SUFFIXES

#: Imported once by the fork server, so each worker process starts with them loaded.
PRELOAD = ["lbdviewer.audit.tasks", "lbdviewer.features.invert", "lbdviewer.cli.commands.extract", "lbdviewer.evaluation.metrics"]
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


def iter_audit(tasks, folder, *, workers=None, scheduler=None, kind=None, log=None):
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
    kind : lbdviewer.audit.results_log.TaskKind, optional
        What the tasks are (default :data:`~lbdviewer.audit.results_log.AUDIT`).
    log : lbdviewer.audit.results_log.ResultsLog, optional
        ``folder``'s log, already open: the caller that counted what is
        pending in it keeps the folder's lock across the run (default: open
        one for the run).

    Yields
    ------
    dict
        Each row as written to the kind's table (``results.csv``).
    """
    if log is None:
        with ResultsLog(folder, kind=kind) as log:
            yield from _run_pending(tasks, log, workers, scheduler)
    else:
        yield from _run_pending(tasks, log, workers, scheduler)


def _run_pending(tasks, log, workers, scheduler):
    """:func:`iter_audit` on an open log."""
    pending = [task for task in tasks if task.key not in log.done]
    if not pending:
        return
    if scheduler is not None:
        results = _on_dask(pending, scheduler, log.kind)
    else:
        results = _on_local_pool(pending, workers or default_workers(), log.kind.run, log.kind.error_row)
    try:
        for row, thumbnails in results:
            yield log.append(row, thumbnails)
    finally:
        results.close()


def _on_local_pool(tasks, workers, function=run_task, error_row=error_row):
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
                                   initializer=_start_worker, initargs=(os.getpid(),))
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
        with ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_start_worker,
                                 initargs=(os.getpid(),)) as pool:
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


def _start_worker(audit_pid):
    """A worker process leaves Ctrl-C to the audit, which stops it (no traceback from each worker), and dies with it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with(audit_pid)


#: Seconds between two looks at the audit process where the system cannot wake a thread when it ends.
PARENT_WATCH_SECONDS = 1.0


def die_with(pid):
    """End this process as soon as process ``pid`` ends, even by ``kill -9``: no worker outlives its audit.

    A daemon thread waits for ``pid``: on Linux on a process file descriptor
    (``os.pidfd_open``), woken the moment the process ends; elsewhere it
    looks every :data:`PARENT_WATCH_SECONDS`. Asking the kernel for a signal
    when the *parent* ends (``prctl(PR_SET_PDEATHSIG)``) would not do: a
    worker's parent is the pool's fork server, which every worker keeps alive.

    Examples
    --------
    >>> die_with(os.getpid())      # this process: nothing happens until it ends
    """
    try:
        handle = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3 or later
        handle = None

    def watch():
        if handle is not None:
            select.select([handle], [], [])
        else:
            while _running(pid):
                time.sleep(PARENT_WATCH_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="lbdviewer-audit-watch", daemon=True).start()


def _running(pid):
    """Whether process ``pid`` still runs (a zombie has ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            return file.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return True  # no /proc: alive as far as kill says


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


__all__ = ["collect_inputs", "default_workers", "die_with", "iter_audit", "plan_tasks"]
