"""The test suite's own rules: every test has a time limit, and wall-clock bounds are marked as such."""

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLOCKS = {"perf_counter", "monotonic", "time", "perf_counter_ns", "monotonic_ns"}


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_test_has_a_time_limit(tmp_path):
    config = _pyproject()
    assert config["tool"]["pytest"]["ini_options"]["timeout"] > 0
    assert any(requirement.startswith("pytest-timeout") for requirement in config["project"]["optional-dependencies"]["test"])
    (tmp_path / "test_hang.py").write_text("import time\n\n\ndef test_hangs():\n    time.sleep(120)\n")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "timeout=1",
                             "test_hang.py"], cwd=tmp_path, capture_output=True, text=True, timeout=100)
    assert result.returncode == 1 and "Timeout" in result.stdout


def _reads_a_clock(node, imported=frozenset()):
    """Whether ``node`` calls ``time.perf_counter()`` (or another clock of :mod:`time`), or one ``imported`` by name."""
    return any(isinstance(n, ast.Call) and (
        isinstance(n.func, ast.Attribute) and n.func.attr in CLOCKS and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "time" or isinstance(n.func, ast.Name) and n.func.id in imported)
        for n in ast.walk(node))


def _clocks_imported(tree):
    """Local names of the clocks a module imports from :mod:`time` (``from time import perf_counter as now``)."""
    return frozenset(alias.asname or alias.name for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module == "time"
                     for alias in node.names if alias.name in CLOCKS)


def _marked_wallclock(function):
    return any("wallclock" in ast.unparse(decorator) for decorator in function.decorator_list)


def test_tests_that_time_the_wall_clock_are_marked_wallclock():
    unmarked = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        tree = ast.parse(path.read_text())
        imported = _clocks_imported(tree)
        timing = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                  and not node.name.startswith("test_") and _reads_a_clock(node, imported)}
        for node in tree.body:
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
                continue
            uses = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            if (_reads_a_clock(node, imported) or uses & timing) and not _marked_wallclock(node):
                unmarked.append(f"{path.relative_to(ROOT)}::{node.name}")
    assert not unmarked, f"tests timing the wall clock without @pytest.mark.wallclock: {unmarked}"


def test_the_wall_clock_rule_sees_a_clock_imported_by_name():
    tree = ast.parse("from time import perf_counter as now\n\ndef test_x():\n    assert now() < 1\n")
    assert _reads_a_clock(tree.body[1], _clocks_imported(tree))
    assert not _reads_a_clock(ast.parse("def test_x():\n    assert now() < 1\n").body[0])
