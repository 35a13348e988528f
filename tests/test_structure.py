"""The shape of the package: no import cycle, the core never imports the command line or the app, small modules,
and namespaces that say what they hold (DESIGN.md section 2)."""

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import lbdviewer

PACKAGE = Path(lbdviewer.__file__).resolve().parent
#: The layers above the core: the core never imports them.
OUTER = ("lbdviewer.cli", "lbdviewer.gui")
MAX_MODULE_LINES = 600


def module_files():
    """``{module name: path}`` of every module of lbdviewer."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def import_graph(files):
    """``{module: set of lbdviewer modules it imports}``, imports inside functions included.

    ``from a.b import c`` depends on ``a.b.c`` when that is a module, else on ``a.b``; importing
    a module also runs the ``__init__`` of every package above it that is not above the importer.
    """
    def resolve(name):
        while name not in files:
            name = name.rpartition(".")[0]
        return name

    def ancestors(name):
        parts = name.split(".")
        return {".".join(parts[:i]) for i in range(1, len(parts))}

    graph = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        here = name.split(".") if is_package else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
                targets |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base
                            for alias in node.names}
        deps = set()
        for target in targets:
            if target.split(".")[0] == "lbdviewer":
                target = resolve(target)
                deps |= {target} | (ancestors(target) - ancestors(name))
        graph[name] = deps - {name}
    return graph


def cycles(graph):
    """The strongly connected components of ``graph`` with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle_hidden_in_a_function(tmp_path):
    package = tmp_path / "lbdviewer"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from lbdviewer.b import f\n")
    (package / "b.py").write_text("def f():\n    from lbdviewer import a\n")
    (package / "c.py").write_text("import lbdviewer.a\n")
    files = {"lbdviewer": package / "__init__.py", "lbdviewer.a": package / "a.py",
             "lbdviewer.b": package / "b.py", "lbdviewer.c": package / "c.py"}
    graph = import_graph(files)
    assert graph["lbdviewer.c"] == {"lbdviewer.a"}
    assert cycles(graph) == [["lbdviewer.a", "lbdviewer.b"]]


def test_no_import_cycle():
    assert cycles(import_graph(module_files())) == []


def test_the_core_never_imports_the_command_line_or_the_app():
    graph = import_graph(module_files())
    arrows = sorted((source, target) for source, targets in graph.items() for target in targets
                    if not source.startswith(OUTER) and source not in ("lbdviewer", "lbdviewer.__main__")
                    and target.startswith(OUTER))
    assert arrows == []


def test_modules_stay_small():
    long = {name: n for name, path in module_files().items()
            if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}


@pytest.mark.parametrize("name", sorted(name for name, path in module_files().items()
                                        if path.name == "__init__.py"))
def test_each_package_says_in_one_line_what_it_holds_and_lists_its_names(name):
    tree = ast.parse(module_files()[name].read_text())
    docstring = ast.get_docstring(tree)
    assert docstring and docstring.splitlines()[0].endswith(".")
    module = importlib.import_module(name)
    assert isinstance(module.__all__, list)
    for public in module.__all__:
        assert getattr(module, public) is not None, f"{name}.{public}"


def test_the_public_namespaces_load_on_first_use():
    code = """
import json, sys
import lbdviewer as lbd
before = sorted(m for m in sys.modules if m.startswith("lbdviewer."))
op = lbd.operators.DescriptorOperator(lbd.patterns.make_pattern("brief", patch_size=16, m=32))
print(json.dumps([before, "lbdviewer.operators.descriptor" in sys.modules, lbd.__version__]))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, loaded, version = json.loads(result.stdout)
    assert before == ["lbdviewer._lazy"]
    assert loaded
    from importlib import metadata
    assert version == metadata.version("lbdviewer")
