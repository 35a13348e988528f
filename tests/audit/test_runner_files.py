"""The audit's own files: one audit a folder, damaged rows skipped and run again, any file name, no orphan worker."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from lbdviewer.audit.report import write_report
from lbdviewer.audit.results import read_results
from lbdviewer.audit.results_log import LOCK, RESULTS, AuditFilesWarning, FolderInUseError, ResultsLog, read_rows
from lbdviewer.audit.tasks import COLUMNS, AuditTask, run_task
from lbdviewer.io.images import save_png
from lbdviewer.io.tables import printable

NOT_UTF8 = os.fsdecode(b"caf\xe9-\xff.png")  # a name of bytes that are not UTF-8, as Linux allows


def _row(name, status="ok", **values):
    return {**dict.fromkeys(COLUMNS), "input": name, "descriptor": "orb", "status": status, "keypoints": 10,
            "correlation": 0.5, **values}


def test_a_second_audit_into_the_same_folder_is_refused_by_name(tmp_path):
    with ResultsLog(tmp_path) as log:
        with pytest.raises(FolderInUseError, match=rf"report folder '{tmp_path}' is in use by another audit "
                                                   rf"\(process {os.getpid()} on .*\): wait for it"):
            ResultsLog(tmp_path)
        log.append(_row("/a.png"))
    with ResultsLog(tmp_path) as log:                    # closed: the folder is free again
        assert log.done == {("/a.png", "orb")}


def test_the_lock_is_held_against_another_process_and_dies_with_it(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        from lbdviewer.audit.results_log import ResultsLog
        log = ResultsLog({str(tmp_path)!r})
        print("open", flush=True)
        sys.stdin.read()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(FolderInUseError, match=f"process {holder.pid} on"):
            ResultsLog(tmp_path)
        holder.kill()                                    # kill -9: no clean-up, the system drops the lock
        holder.wait(timeout=30)
        with ResultsLog(tmp_path) as log:
            assert log.done == set() and (tmp_path / LOCK).is_file()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=30)
        holder.stdin.close()
        holder.stdout.close()


def test_damaged_rows_are_reported_skipped_and_run_again(tmp_path):
    with ResultsLog(tmp_path) as log:
        for name in ("/a.png", "/b.png", "/c.png", "/d.png", "/e.png"):
            log.append(_row(name))
    path = tmp_path / RESULTS
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b",10,", b",1\xff0,")                   # a byte changed on disk: not UTF-8, no number
    lines[3] = b'"/c.png,orb,ok,10'                                     # an unclosed quote
    lines.insert(5, lines[5])                                           # /e.png twice
    path.write_bytes(b"\n".join(lines))
    rows, damaged = read_rows(path)
    assert [row["input"] for row in rows] == ["/a.png", "/d.png", "/e.png"]
    assert [line for line, _ in damaged] == [3, 4, 7]
    assert "keypoints is not a number" in damaged[0][1] and "quote is not closed" in damaged[1][1]
    assert "repeats the row of '/e.png'" in damaged[2][1]
    with ResultsLog(tmp_path) as log:                                   # resumed: b and c run again
        assert log.done == {("/a.png", "orb"), ("/d.png", "orb"), ("/e.png", "orb")}
        assert len(log.damaged) == 3
        log.append(_row("/b.png", correlation=0.25))
    assert [row["input"] for row in read_results(tmp_path)] == ["/a.png", "/d.png", "/e.png", "/b.png"]
    assert read_results(tmp_path)[-1]["correlation"] == 0.25
    assert "/b.png" in write_report(tmp_path).read_text()


def test_the_command_line_says_which_rows_were_damaged(tmp_path, capsys):
    from lbdviewer.cli.main import main

    (tmp_path / "in").mkdir()
    save_png(tmp_path / "in" / "flat.png", np.full((40, 40), 0.5))
    report = tmp_path / "report"
    with ResultsLog(report) as log:
        log.append(_row(str(tmp_path / "in" / "flat.png"), keypoints="x"))   # damaged as written
    argv = ["audit", str(tmp_path / "in"), "-o", str(report), "--no-ocr", "--workers", "1", "--iterations", "5"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "1 damaged rows skipped, their tasks run again (line 2: keypoints is not a number: 'x')" in captured.err
    assert [row["status"] for row in read_results(report)] == ["ok"]      # the task ran again, its row stands


def test_names_that_are_not_utf8_are_recorded_resumed_and_reported(tmp_path):
    image = tmp_path / NOT_UTF8
    save_png(image, np.random.default_rng(0).random((48, 48)))
    row, thumbnails = run_task(AuditTask(str(image), "orb", iterations=3, ocr=False))
    assert row["input"] == str(image) and row["status"] == "ok"
    with ResultsLog(tmp_path / "report") as log:
        log.append(row, thumbnails)
    assert b"caf\xe9-\xff.png" in (tmp_path / "report" / RESULTS).read_bytes()   # byte for byte
    with ResultsLog(tmp_path / "report") as log:
        assert log.done == {(str(image), "orb")} and not log.damaged
    [read] = read_results(tmp_path / "report")
    assert read["input"] == str(image) and read["thumbnail_reconstruction"]
    page = write_report(tmp_path / "report").read_text(encoding="utf-8")       # valid UTF-8
    assert "caf\ufffd-\ufffd.png" in page and printable(str(image)).endswith("caf\ufffd-\ufffd.png")


def test_a_thumbnail_folder_that_is_a_file_keeps_the_row(tmp_path):
    (tmp_path / "thumbs").write_text("not a folder")
    with ResultsLog(tmp_path) as log:
        with pytest.warns(AuditFilesWarning, match="thumbnails cannot be written"):
            written = log.append(_row("/a.png"), {"original": b"png", "reconstruction": b"png"})
        log.append(_row("/b.png"), {"original": b"png"})                 # warned once
    assert written["thumbnail_original"] is None and written["thumbnail_reconstruction"] is None
    assert [row["input"] for row in read_results(tmp_path)] == ["/a.png", "/b.png"]
    assert "no reconstruction" in write_report(tmp_path).read_text()


WORKER = '''
import os, sys, time
from lbdviewer.audit.runner import _on_local_pool
from lbdviewer.audit.tasks import AuditTask

def nap(task):
    with open(os.path.join({folder!r}, f"worker-{{os.getpid()}}"), "w") as file:
        file.write("started")
    time.sleep(600)

if __name__ == "__main__":
    sys.path.insert(0, {folder!r})
    from audit_worker import nap
    for result in _on_local_pool([AuditTask(f"/in/{{i}}.png", "orb") for i in range(2)], 2, function=nap):
        pass
'''


def _running(pid):
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_with_an_audit_killed_by_sigkill(tmp_path, wait_until):
    (tmp_path / "audit_worker.py").write_text(WORKER.format(folder=str(tmp_path)))
    audit = subprocess.Popen([sys.executable, str(tmp_path / "audit_worker.py")], cwd=tmp_path)
    try:
        wait_until(lambda: len(list(tmp_path.glob("worker-*"))) == 2 or audit.poll() is not None, 120,
                   "both workers to run a task")
        assert audit.poll() is None
        workers = [int(path.name.split("-")[1]) for path in tmp_path.glob("worker-*")]
        assert all(_running(pid) for pid in workers)
        os.kill(audit.pid, signal.SIGKILL)
        audit.wait(timeout=30)
        wait_until(lambda: not any(_running(pid) for pid in workers), 30, "the workers to end with the audit")
    finally:
        if audit.poll() is None:
            audit.kill()
            audit.wait(timeout=30)
        for path in tmp_path.glob("worker-*"):                         # never leave one behind
            pid = int(path.name.split("-")[1])
            if _running(pid):
                os.kill(pid, signal.SIGKILL)


def test_globs_reach_into_subfolders(tmp_path):
    from lbdviewer.audit.runner import collect_inputs

    for name in ("a.png", "deep/er/b.png", "deep/c.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    found = collect_inputs([str(tmp_path / "**" / "*.png")])
    assert [Path(p).relative_to(tmp_path).as_posix() for p in found] == ["a.png", "deep/er/b.png"]


def _fast_or_held(task):
    """A task: "fast" returns at once; "held" waits (at most 60 s) for the file ``released`` beside its input."""
    import time as clock

    released = Path(task.input).parent / "released"
    waited = 0.0
    while Path(task.input).name == "held" and not released.exists() and waited < 60:
        clock.sleep(0.05)
        waited += 0.05
    status = "ok" if Path(task.input).name == "fast" or released.exists() else "error: never released"
    return {**dict.fromkeys(COLUMNS), "input": task.input, "descriptor": "orb", "status": status}, {}


def test_rows_arrive_as_their_tasks_finish_not_all_at_once(tmp_path):
    from lbdviewer.audit.runner import _on_local_pool

    tasks = [AuditTask(str(tmp_path / "held"), "orb"), AuditTask(str(tmp_path / "fast"), "orb")]
    results = _on_local_pool(tasks, 2, function=_fast_or_held)
    first, _ = next(results)                       # the held task is still waiting: only the fast one can be done
    assert first["input"] == str(tmp_path / "fast")
    (tmp_path / "released").write_text("")
    second, _ = next(results)
    assert second["input"] == str(tmp_path / "held") and second["status"] == "ok"
    assert list(results) == []


def test_a_process_that_ended_is_not_running_even_unreaped():
    from lbdviewer.audit.runner import _running

    assert _running(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)         # ended, not reaped: a zombie
    assert not _running(child.pid)
    child.wait()
    assert not _running(child.pid)


def test_the_log_makes_its_folder_and_gives_back_every_file_it_opened(tmp_path):
    before = len(os.listdir("/proc/self/fd"))
    log = ResultsLog(tmp_path / "a" / "b" / "report")                  # parents made
    log.append(_row("/a.png"))
    log.close()
    log.close()                                                         # twice: harmless
    assert len(os.listdir("/proc/self/fd")) == before and (tmp_path / "a" / "b" / "report" / RESULTS).is_file()


def test_looking_at_a_process_does_not_signal_it():
    from lbdviewer.audit.runner import _running

    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                             preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGHUP,
                                                                                           signal.SIGTERM)])
    try:
        assert _running(child.pid) and _running(child.pid)
        with pytest.raises(subprocess.TimeoutExpired):                  # still there: nothing was sent to it
            child.wait(timeout=1)
    finally:
        child.stdin.close()
        child.wait(timeout=30)
