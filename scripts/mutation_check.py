"""One-line mutants of the core modules against their tests: does a wrong line make a test fail?

For each module of :data:`TARGETS` the script lists every one-line mutant the
operators below can make, draws ``--per-module`` of them (seeded, so a run can
be repeated), and for each one writes the mutated line into a copy of the
working tree, runs the module's test files (and its own doctests) there with a
time limit, and records whether a test failed (*killed*) or not (*survived*).

Operators (each on one line of code, never in docstrings, ``raise`` messages,
f-strings, ``assert`` statements, decorators or ``__all__``):

* ``compare``: ``<`` and ``<=``, ``>`` and ``>=``, ``==`` and ``!=``, ``is``
  and ``is not``, ``in`` and ``not in`` swapped;
* ``arithmetic``: ``+`` and ``-``, ``*`` and ``/`` swapped (also in ``+=``...);
* ``drop-term``: ``a + b`` -> ``a`` (likewise ``-``, ``*``, ``/``);
* ``boolean``: ``and`` and ``or`` swapped, ``not x`` -> ``x``, ``True`` and ``False``;
* ``negation``: ``-x`` -> ``x``;
* ``constant``: an integer ``n`` -> ``n + 1`` (``1`` -> ``0``), a float ``c``
  -> ``c + 1`` (``10 c`` below ``1e-3``);
* ``swap-args``: the first two positional arguments of a call swapped;
* ``drop-keyword``: one keyword argument of a call left out;
* ``drop-index``: ``x[name]`` -> ``x`` (a mask or an index left out).

A survivor the tests cannot see because it changes nothing a caller can
observe is *equivalent*: :data:`EQUIVALENT` says why, by module and the
original and mutated lines (so the table survives edits elsewhere in the
file). The kill rate is over the non-equivalent mutants.

The run is slow (one pytest process per mutant) and is kept out of CI: run it by
hand, one CPU-heavy process at a time::

    python scripts/mutation_check.py                      # every target, 12 mutants each
    python scripts/mutation_check.py --module metrics --per-module 40 --json out.json
    python scripts/mutation_check.py --list --module display   # the mutants, without running them

The copy of the tree lives in ``--workdir`` (default
``$TMPDIR/lbdviewer-mutation``) and is kept between runs, so numba's compiled
kernels are reused.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Module label -> (source files, the test files run against their mutants).
TARGETS = {
    "metrics": (["lbdviewer/evaluation/metrics.py", "lbdviewer/evaluation/orientation.py"],
                ["tests/evaluation/test_metrics.py", "tests/evaluation/test_patch_metrics.py",
                 "tests/evaluation/test_display.py"]),
    "display": (["lbdviewer/evaluation/display.py"], ["tests/evaluation/test_display.py"]),
    "records": (["lbdviewer/evaluation/records.py"], ["tests/evaluation/test_records.py"]),
    "solvers": (["lbdviewer/solvers/patch/biht.py", "lbdviewer/solvers/projections.py",
                 "lbdviewer/solvers/patch/base.py"],
                ["tests/solvers/test_biht_textbook.py", "tests/solvers/test_solvers.py",
                 "tests/solvers/test_projections.py"]),
    "sites": (["lbdviewer/reconstruction/sites.py"], ["tests/reconstruction/test_sites.py"]),
    "features": (["lbdviewer/features/keypoints.py", "lbdviewer/features/npz.py", "lbdviewer/features/files.py"],
                 ["tests/features/test_features.py"]),
    "filestorage": (["lbdviewer/features/filestorage/parser.py", "lbdviewer/features/filestorage/reader.py",
                     "lbdviewer/features/filestorage/writer.py", "lbdviewer/features/filestorage/values.py",
                     "lbdviewer/features/filestorage/flow.py"],
                    ["tests/features/test_filestorage.py", "tests/features/test_feature_files_bounded.py"]),
    "io": (["lbdviewer/io/images.py", "lbdviewer/io/files.py"], ["tests/io/test_io.py"]),
    "limits": (["lbdviewer/io/limits.py"], ["tests/io/test_io.py", "tests/test_bad_input.py"]),
    "calibration cache": (["lbdviewer/libraries/calibration/cache.py"],
                          ["tests/libraries/test_calibration_cache.py", "tests/libraries/test_calibration.py"]),
    "audit runner": (["lbdviewer/audit/runner.py", "lbdviewer/audit/results_log.py", "lbdviewer/io/tables.py"],
                     ["tests/audit/test_runner_files.py", "tests/audit/test_audit.py",
                      "tests/defences/test_defend_rows.py"]),
    "akaze joint": (["lbdviewer/libraries/akaze/joint.py", "lbdviewer/libraries/akaze/joint_kernels.py"],
                    ["tests/libraries/test_akaze_joint.py"]),
    "gui presenter": (["lbdviewer/gui/presenter.py"],
                      ["tests/gui/test_presenter_runs.py", "tests/gui/test_main_window.py",
                       "tests/gui/test_library_views.py", "tests/gui/test_feature_view.py"]),
}

#: (source file, original line, mutated line), both stripped -> why no caller can see the change.
EQUIVALENT = {
    ("lbdviewer/libraries/akaze/joint.py",
     "counts = np.stack([np.bincount(cells[row], minlength=N_CELLS) for row in inside], axis=0)",
     "counts = np.stack([np.bincount(cells[row], minlength=N_CELLS) for row in inside])"):
        "axis=0 is np.stack's default",
    ("lbdviewer/evaluation/display.py",
     "least_squares_gain, _ = least_squares_gain_offset(reference, image, mask=mask)",
     "least_squares_gain, _ = least_squares_gain_offset(image, reference, mask=mask)"):
        "only the gain's sign is read, and cov(x, r) / var(x) and cov(r, x) / var(r) have one sign "
        "(0 when either side is constant)",
    ("lbdviewer/evaluation/display.py", "x = np.asarray(image, dtype=np.float64)[mask]",
     "x = np.asarray(image)[mask]"): "numpy computes the mean and std of integers in float64",
    ("lbdviewer/evaluation/display.py", "r = np.asarray(reference, dtype=np.float64)[mask]",
     "r = np.asarray(reference)[mask]"): "numpy computes the mean and std of integers in float64",
    ("lbdviewer/solvers/patch/base.py", "n_steps = min(n_steps, self.iterations - run.iteration)",
     "n_steps = min(n_steps, self.iterations + run.iteration)"):
        "no caller asks for more steps than remain: run() asks for the budget from iteration 0, steps() for one "
        "while below it",
    ("lbdviewer/solvers/patch/biht.py", "fields = sparse.csc_matrix(operator.field_matrix(), dtype=np.float64)",
     "fields = sparse.csc_matrix(operator.field_matrix())"):
        "the one field_matrix() in lbdviewer (DescriptorOperator's) is float64 already",
    ("lbdviewer/solvers/patch/biht.py", "rng = np.random.default_rng(0)", "rng = np.random.default_rng(1)"):
        "the random projections only propose groups of columns; every group is then checked exactly, so any "
        "seed gives the same cells",
    ("lbdviewer/features/npz.py", '"version": np.array(VERSION, dtype=np.int64),', '"version": np.array(VERSION),'):
        "numpy's default integer is int64 (numpy 2, every platform)",
    ("lbdviewer/features/npz.py", "archive = np.load(handle, allow_pickle=False)",
     "archive = np.load(handle, allow_pickle=True)"):
        "check_archive refuses object arrays from their headers before np.load runs: the second guard is "
        "unreachable while the first holds",
    ("lbdviewer/io/images.py", 'params = [cv2.IMWRITE_JPEG_QUALITY, 95] if kind == ".jpg" else []',
     'params = [cv2.IMWRITE_JPEG_QUALITY, 95] if kind != ".jpg" else []'):
        "OpenCV's default JPEG quality is 95 and PNG ignores the JPEG key: the bytes are identical (checked)",
    ("lbdviewer/libraries/calibration/cache.py",
     "def calibrate_point_pairs(describe, smooth, *, radius, margin, n_images=2, size=224, step=3, rng=0,",
     "def calibrate_point_pairs(describe, smooth, *, radius, margin, n_images=2, size=224, step=3, rng=1,"):
        "another noise image identifies the same pairs (the library's comparisons do not depend on the seed)",
    ("lbdviewer/libraries/calibration/cache.py", "corr = zscores.T @ (2.0 * bits - 1.0) / n_samples",
     "corr = (zscores.T @ (2.0 * bits - 1.0))"):
        "a positive scale before an argsort: the same order",
    ("lbdviewer/libraries/calibration/cache.py",
     "all_bits.append(np.asarray(describe(image, centers), dtype=bool))",
     "all_bits.append(np.asarray(describe(image, centers)))"):
        "identify_pairs converts the bits to bool itself",
    ("lbdviewer/io/files.py",
     'descriptor = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))',
     'descriptor = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 1) | getattr(os, "O_BINARY", 0))'):
        "the fallback is read only where os has no O_NONBLOCK (Windows); Linux has it",
    ("lbdviewer/libraries/calibration/cache.py",
     "def point_pair_probe(describe, smooth, *, margin, tie_positive=False, size=None, step=5, rng=20261126):",
     "def point_pair_probe(describe, smooth, *, margin, tie_positive=False, size=None, step=5, rng=20261127):"):
        "the probe image has only to be the same when an entry is written and read; another seed probes as well "
        "(entries written with the old one would be recomputed once)",
    ("lbdviewer/libraries/calibration/cache.py", 'padded = np.pad(smoothed, pad, mode="reflect")',
     "padded = np.pad(smoothed, pad)"):
        "the probe's keypoints lie margin inside the image, beyond every offset a calibration finds: the padding "
        "is never read",
    ("lbdviewer/libraries/calibration/cache.py",
     "def calibrate_point_pairs(describe, smooth, *, radius, margin, n_images=2, size=224, step=3, rng=0,",
     "def calibrate_point_pairs(describe, smooth, *, radius, margin, n_images=3, size=224, step=3, rng=0,"):
        "a third noise image identifies the same pairs (two already leave no pair ambiguous)",
    ("lbdviewer/audit/results_log.py", "msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)",
     "msvcrt.locking(msvcrt.LK_NBLCK, fd, 1)"): "the Windows branch: not run on Linux",
    ("lbdviewer/audit/runner.py", 'if hasattr(pool, "terminate_workers"):',
     'if hasattr("terminate_workers", pool):'):
        "terminate_workers exists from Python 3.14; before, both branches terminate the pool's processes",
    ("lbdviewer/audit/results_log.py",
     'with open(path, newline="", encoding="utf-8", errors="surrogateescape") as file:',
     'with open(path, newline="", errors="surrogateescape") as file:'):
        "the default encoding is the locale's, UTF-8 on this machine and in CI (and always from Python 3.15)",
    ("lbdviewer/audit/runner.py", "return max(1, len(os.sched_getaffinity(0)))",
     "return max(len(os.sched_getaffinity(0)), 1)"): "max is symmetric",
    ("lbdviewer/gui/presenter.py", "self._estimate_drawn_at = -np.inf  # when a running run's estimate was last drawn",
     "self._estimate_drawn_at = (np.inf)  # when a running run's estimate was last drawn"):
        "overwritten with -inf when a run starts: start_whole shows it without an estimate before its first one",
    ("lbdviewer/gui/presenter.py",
     "panel.weights.show_array(weights, levels=(0.0, max(float(weights.max()), 1e-12)), metadata=described)",
     "panel.weights.show_array(weights, levels=(0.0, max(float(weights.max()), 1e-11)), metadata=described)"):
        "the floor only matters for an all-zero weight map, which no pattern has",
    ("lbdviewer/gui/presenter.py",
     "panel.occurrences.show_array(occurrences, levels=(0.0, max(1.0, float(occurrences.max()))),",
     "panel.occurrences.show_array(occurrences, levels=(0.0, max(float(occurrences.max()), 1.0)),"):
        "max is symmetric",
    ("lbdviewer/evaluation/orientation.py", "terms[4:7, part] = _structure_tensor(estimate_patches)",
     "terms[4:8, part] = _structure_tensor(estimate_patches)"):
        "terms has 7 rows: numpy clips the slice 4:8 to 4:7",
    ("lbdviewer/solvers/projections.py", "slopes = np.take_along_axis(slopes, order, axis=1)",
     "slopes = np.take_along_axis(slopes, order)"):
        "take_along_axis's default axis is the last, and slopes has two (axis 1 is the last)",
    ("lbdviewer/solvers/projections.py", "total = 0.0", "total = 1.0"):
        "only the first shift of the safeguarded Newton iteration moves (by 1/N); it ends on the same root, "
        "every later shift being the root of the linear piece it lands on",
    ("lbdviewer/features/filestorage/values.py",
     "cut = min((i for i in (text.find(sep, start + CHUNK_CHARS, stop) for sep in separators) if i >= 0),",
     "cut = min((i for i in (text.find(sep, (start), stop) for sep in separators) if i >= 0),"):
        "reached when the window holds no separator after its start, so the first one from start is the first one "
        "after the window; only a separator at start itself (two in a row before a token over 1 MiB, which is no "
        "number and is refused either way) differs",
    ("lbdviewer/io/limits.py", "if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:",
     "if marker in (0xD8, 0x01) or 0xD0 <= marker <= 216:"):
        "216 is 0xD8, skipped by the first test already",
    ("lbdviewer/io/limits.py",
     'value = struct.unpack(order + ("H" if kind == 3 else "I"), entry[8:10] if kind == 3 else entry[8:12])',
     'value = struct.unpack(order + ("H" if kind == 3 else "I"), entry[8:10] if kind == 3 else entry[8:13])'):
        "an IFD entry is sliced 12 bytes long: 8:13 ends at 12 too",
    ("lbdviewer/libraries/calibration/cache.py", "pad = int(np.abs(table).max(initial=0)) + 1",
     "pad = (int(np.abs(table).max(initial=0)))"):
        "the pad only shifts indices into the padded image; the probe's centres lie margin inside it, beyond "
        "every offset, so a pad one smaller reads the same pixels",
    ("lbdviewer/libraries/calibration/cache.py",
     "candidates=16, tie_positive=False, max_mismatch=0):", "candidates=17, tie_positive=False, max_mismatch=0):"):
        "a longer shortlist of candidate values before the exact check of every pair in it finds the same pairs "
        "(the tests' descriptors are found within 16)",
    ("lbdviewer/gui/presenter.py", "bound = max(float(np.abs(vector).max()), 1e-12)",
     "bound = max(1e-12, float(np.abs(vector).max()))"): "max is symmetric",
}

_COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
_ARITHMETIC = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
_SKIPPED_CALLS = {"print", "warn", "ValueError", "TypeError", "RuntimeError", "AssertionError"}


@dataclass(frozen=True)
class Mutant:
    """One changed line: where, what it was, what it becomes, and by which operator."""

    path: str
    line: int
    operator: str
    original: str
    mutated: str

    @property
    def key(self):
        return (self.path, self.original.strip(), self.mutated.strip())


_OPERATOR_TEXT = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
                  ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in", ast.Add: "+", ast.Sub: "-",
                  ast.Mult: "*", ast.Div: "/", ast.And: "and", ast.Or: "or"}


class _Collector(ast.NodeVisitor):
    """Every one-line mutant of a module's source, each a textual edit of one line (the rest kept as written)."""

    def __init__(self, path, source):
        self.path = path
        self.lines = source.splitlines()
        self.mutants = []
        self._skip_depth = 0

    # -- what is never mutated ------------------------------------------------------
    def _skip(self, node):
        self._skip_depth += 1
        self.generic_visit(node)
        self._skip_depth -= 1

    visit_Raise = visit_Assert = visit_JoinedStr = _skip

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.generic_visit(node)

    def _visit_function(self, node):
        """The body and the defaults; never the decorators or the annotations."""
        for statement in node.body:
            self.visit(statement)
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(default)

    visit_FunctionDef = visit_AsyncFunctionDef = _visit_function

    def visit_ClassDef(self, node):
        for statement in node.body:
            self.visit(statement)

    def visit_Assign(self, node):
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.visit(node.value)

    # -- editing one line ---------------------------------------------------------------
    def _line(self, *nodes):
        """The line's UTF-8 bytes if every node lies on it and it may be mutated, else None."""
        if self._skip_depth or any(getattr(n, "lineno", None) is None or n.lineno != n.end_lineno
                                   or n.lineno != nodes[0].lineno for n in nodes):
            return None
        text = self.lines[nodes[0].lineno - 1]
        return None if "no mutate" in text else text.encode("utf-8")

    def _add(self, line, operator, edits):
        """Record the line with ``edits`` applied: ``(start, end, replacement bytes)``, byte columns."""
        mutated = line
        for start, end, replacement in sorted(edits, reverse=True):
            mutated = mutated[:start] + replacement + mutated[end:]
        original, mutated = line.decode("utf-8"), mutated.decode("utf-8")
        if mutated != original:
            self.mutants.append(Mutant(self.path, self._current, operator, original, mutated))

    def _edit(self, operator, nodes, edits_of):
        line = self._line(*nodes)
        if line is not None:
            self._current = nodes[0].lineno
            edits = edits_of(line)
            if edits:
                self._add(line, operator, edits)

    @staticmethod
    def _span(node):
        return node.col_offset, node.end_col_offset

    @staticmethod
    def _token(line, start, end, text):
        """The byte span of operator ``text`` between two columns (a whole word for the keywords)."""
        gap = line[start:end]
        needle = text.encode()
        at = gap.find(b" " + needle + b" ") + 1 if text[0].isalpha() else gap.find(needle)
        if (text[0].isalpha() and at == 0) or at < 0:
            return None
        return start + at, start + at + len(needle)

    def _swap_operator(self, operator, node, left, right, old, new):
        def edits(line):
            span = self._token(line, left.end_col_offset, right.col_offset, _OPERATOR_TEXT[old])
            return [(*span, _OPERATOR_TEXT[new].encode())] if span else None
        self._edit(operator, [node, left, right], edits)

    def _replace_by(self, operator, node, part):
        self._edit(operator, [node, part],
                   lambda line: [(*self._span(node), b"(" + line[slice(*self._span(part))] + b")")])

    # -- mutants --------------------------------------------------------------------
    def visit_Compare(self, node):
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            if type(op) in _COMPARE:
                self._swap_operator("compare", node, operands[i], operands[i + 1], type(op), _COMPARE[type(op)])
        self.generic_visit(node)

    def visit_BinOp(self, node):
        if type(node.op) in _ARITHMETIC:
            self._swap_operator("arithmetic", node, node.left, node.right, type(node.op), _ARITHMETIC[type(node.op)])
            self._replace_by("drop-term", node, node.left)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        if type(node.op) in _ARITHMETIC:
            old, new = _OPERATOR_TEXT[type(node.op)], _OPERATOR_TEXT[_ARITHMETIC[type(node.op)]]
            self._edit("arithmetic", [node, node.target, node.value], lambda line: (
                [(*span, (new + "=").encode())] if (span := self._token(
                    line, node.target.end_col_offset, node.value.col_offset, old + "=")) else None))
        self.generic_visit(node)

    def visit_BoolOp(self, node):
        old, new = type(node.op), (ast.Or if isinstance(node.op, ast.And) else ast.And)
        for left, right in zip(node.values, node.values[1:]):
            self._swap_operator("boolean", node, left, right, old, new)
        self.generic_visit(node)

    def visit_UnaryOp(self, node):
        if isinstance(node.op, ast.Not):
            self._replace_by("boolean", node, node.operand)
        elif isinstance(node.op, ast.USub) and not isinstance(node.operand, ast.Constant):
            self._replace_by("negation", node, node.operand)
        self.generic_visit(node)

    def visit_Constant(self, node):
        value = node.value
        if isinstance(value, bool):
            new = repr(not value)
        elif isinstance(value, int):
            new = repr(0 if value == 1 else value + 1)
        elif isinstance(value, float):
            new = repr(value * 10 if 0 < abs(value) < 1e-3 else value + 1.0)
        else:
            return
        self._edit("constant", [node], lambda line: [(*self._span(node), new.encode())])

    def visit_Call(self, node):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in _SKIPPED_CALLS:
            return
        if len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args[:2]):
            first, second = node.args[:2]
            self._edit("swap-args", [node, first, second], lambda line: (
                None if line[slice(*self._span(first))] == line[slice(*self._span(second))] else
                [(*self._span(first), line[slice(*self._span(second))]),
                 (*self._span(second), line[slice(*self._span(first))])]))
        for i, keyword in enumerate(node.keywords):
            if keyword.arg is None:
                continue
            # from the end of what comes before (an argument or the open parenthesis) to the keyword's end
            before = ([*node.args, *node.keywords[:i]] or [None])[-1] if i or node.args else None
            self._edit("drop-keyword", [node, keyword], lambda line, keyword=keyword, before=before: (
                [(before.end_col_offset, keyword.end_col_offset, b"")] if before is not None
                and before.lineno == keyword.lineno else
                [(keyword.col_offset, self._after_comma(line, keyword), b"")]))
        self.generic_visit(node)

    @staticmethod
    def _after_comma(line, keyword):
        """The first keyword's end with the comma and spaces after it (it is dropped with them)."""
        end = keyword.end_col_offset
        while end < len(line) and line[end:end + 1] in b", ":
            end += 1
        return end

    def visit_Subscript(self, node):
        if isinstance(node.ctx, ast.Load) and isinstance(node.slice, ast.Name):
            self._edit("drop-index", [node, node.value],
                       lambda line: [(*self._span(node), line[slice(*self._span(node.value))])])
        self.generic_visit(node)


def mutants_of(path):
    """Every mutant of the module at ``path`` (relative to the repository), in line order."""
    source = (ROOT / path).read_text(encoding="utf-8")
    collector = _Collector(path, source)
    collector.visit(ast.parse(source))
    valid = []
    for mutant in collector.mutants:
        lines = source.splitlines(keepends=True)
        lines[mutant.line - 1] = mutant.mutated + "\n"
        try:
            compile("".join(lines), path, "exec")
        except SyntaxError:
            continue
        valid.append(mutant)
    return sorted(set(valid), key=lambda m: (m.line, m.operator, m.mutated))


def draw(mutants, count, seed):
    """``count`` mutants drawn without replacement (seeded), in line order; all of them if fewer."""
    if count is None or count >= len(mutants):
        return list(mutants)
    return sorted(random.Random(seed).sample(mutants, count), key=lambda m: (m.path, m.line))


def prepare_tree(workdir):
    """A copy of the working tree's tracked and new files in ``workdir/tree`` (only changed files rewritten)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard"],
                            check=True, capture_output=True, text=True).stdout.splitlines()
    tree = workdir / "tree"
    for name in listed:
        source = ROOT / name
        if not source.is_file() or name.startswith(".venv/"):
            continue
        target = tree / name
        if target.is_file() and target.read_bytes() == source.read_bytes():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return tree


def run_tests(tree, tests, timeout):
    """``(outcome, seconds)`` of the tests in ``tree``: "passed", "failed" or "timeout"."""
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1", QT_QPA_PLATFORM="offscreen",
               NUMBA_CACHE_DIR=str(tree.parent / "numba-cache"))
    started = time.perf_counter()
    try:
        result = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                                cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - started
    seconds = time.perf_counter() - started
    if result.returncode == 5:
        raise RuntimeError(f"no test ran for {tests}: {result.stdout[-500:]}")
    return ("passed" if result.returncode == 0 else "failed"), seconds


def check_module(tree, mutant, tests, timeout):
    """Run the tests with ``mutant`` written into the tree; the file is put back (contents and time) after."""
    target = tree / mutant.path
    original = target.read_bytes()
    stat = target.stat()
    lines = original.decode("utf-8").splitlines(keepends=True)
    lines[mutant.line - 1] = mutant.mutated + "\n"
    try:
        target.write_text("".join(lines), encoding="utf-8")
        return run_tests(tree, tests, timeout)
    finally:
        target.write_bytes(original)
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # numba's cache index keys on the time


def print_table(table):
    """The markdown table of ``(label, count, killed, equivalent, survived, note)`` rows, then the survivors."""
    print("\n| module | mutants | killed | equivalent | survived | kill rate (non-equivalent) |")
    print("|---|---:|---:|---:|---:|---:|")
    total = [0, 0, 0, 0]
    for label, count, killed, equivalent, survived, note in table:
        relevant = count - len(equivalent)
        rate = f"{100 * killed / relevant:.0f} %" if relevant else "n/a"
        print(f"| {label} | {count} | {killed} | {len(equivalent)} | {len(survived)} | {rate} {note}|")
        for value, i in ((count, 0), (killed, 1), (len(equivalent), 2), (len(survived), 3)):
            total[i] += value
    relevant = total[0] - total[2]
    rate = f"{100 * total[1] / relevant:.1f} %" if relevant else "n/a"
    print(f"| all | {total[0]} | {total[1]} | {total[2]} | {total[3]} | {rate} |")
    for label, _, _, equivalent, survived, _ in table:
        for m, why in equivalent:
            print(f"equivalent  {label}: {m.path}:{m.line} {m.mutated.strip()}  -- {why}")
        for m in survived:
            print(f"SURVIVED    {label}: {m.path}:{m.line} {m.original.strip()}  ->  {m.mutated.strip()}")


def rescore(path):
    """Print the table of a ``--json`` file, the equivalent mutants judged by today's :data:`EQUIVALENT`."""
    records = json.loads(Path(path).read_text())["mutants"]
    table = []
    for label in dict.fromkeys(r["module"] for r in records):
        rows = [r for r in records if r["module"] == label]
        mutants = [(Mutant(r["path"], r["line"], r["operator"], r["original"], r["mutated"]), r) for r in rows]
        killed = sum(r["outcome"] != "passed" for r in rows)
        equivalent = [(m, EQUIVALENT[m.key]) for m, r in mutants if r["outcome"] == "passed" and m.key in EQUIVALENT]
        survived = [m for m, r in mutants if r["outcome"] == "passed" and m.key not in EQUIVALENT]
        table.append((label, len(rows), killed, equivalent, survived, ""))
    print_table(table)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", choices=sorted(TARGETS),
                        help="a module label of TARGETS (repeatable; default: all)")
    parser.add_argument("--per-module", type=int, default=12, help="mutants drawn per module (0: all)")
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per test run (then: killed)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "lbdviewer-mutation")
    parser.add_argument("--list", action="store_true", help="list the drawn mutants, run nothing")
    parser.add_argument("--json", type=Path, help="write every mutant's outcome here")
    parser.add_argument("--rescore", type=Path, metavar="JSON",
                        help="print the table of an earlier run's --json with today's EQUIVALENT table; run nothing")
    args = parser.parse_args(argv)
    if args.rescore is not None:
        return rescore(args.rescore)
    labels = args.module or list(TARGETS)
    drawn = {}
    for label in labels:
        paths, _ = TARGETS[label]
        every = [m for path in paths for m in mutants_of(path)]
        drawn[label] = draw(every, args.per_module or None, args.seed)
        print(f"{label}: {len(drawn[label])} of {len(every)} mutants", flush=True)
    if args.list:
        for label in labels:
            for m in drawn[label]:
                print(f"{label:18s} {m.path}:{m.line} [{m.operator}] {m.mutated.strip()}")
        return 0
    args.workdir.mkdir(parents=True, exist_ok=True)
    tree = prepare_tree(args.workdir)
    records, table = [], []
    for label in labels:
        paths, tests = TARGETS[label]
        tests = [*tests, *paths]  # the modules' doctests too
        baseline, seconds = run_tests(tree, tests, args.timeout)
        if baseline != "passed":
            print(f"{label}: the tests fail without a mutant ({baseline}); skipped", flush=True)
            table.append((label, 0, 0, [], [], "baseline " + baseline))
            continue
        print(f"{label}: baseline passed in {seconds:.0f} s", flush=True)
        killed, equivalent, survived = 0, [], []
        for m in drawn[label]:
            outcome, seconds = check_module(tree, m, tests, args.timeout)
            why = EQUIVALENT.get(m.key)
            if outcome != "passed":
                killed += 1
            elif why is not None:
                equivalent.append((m, why))
            else:
                survived.append(m)
            status = "killed" if outcome != "passed" else ("equivalent" if why else "SURVIVED")
            print(f"  {status:10s} {seconds:5.0f} s  {m.path}:{m.line} [{m.operator}] {m.mutated.strip()}",
                  flush=True)
            records.append({**asdict(m), "module": label, "outcome": outcome, "status": status,
                            "equivalent_because": why, "seconds": round(seconds, 1)})
        table.append((label, len(drawn[label]), killed, equivalent, survived, ""))
    print_table(table)
    if args.json:
        args.json.write_text(json.dumps({"seed": args.seed, "per_module": args.per_module, "mutants": records},
                                        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
