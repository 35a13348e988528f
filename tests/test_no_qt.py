"""The numeric core and the headless CLI never load Qt (DESIGN.md, rule 1)."""

import json
import subprocess
import sys
from pathlib import Path

import lbdviewer

#: Every module but the app's and ``python -m lbdviewer`` (which would run the command).
CORE_MODULES = sorted(
    ".".join(path.relative_to(Path(lbdviewer.__file__).parent.parent).with_suffix("").parts).removesuffix(".__init__")
    for path in Path(lbdviewer.__file__).parent.rglob("*.py")
    if "gui" not in path.parts and path.name != "__main__.py")


def test_core_and_cli_import_no_qt():
    code = f"""
import importlib, json, sys
for name in {CORE_MODULES!r}:
    importlib.import_module(name)
from lbdviewer.cli.main import build_parser
build_parser()
qt = sorted(m for m in sys.modules if m.split('.')[0] in ('PyQt6', 'PyQt5', 'PySide6', 'PySide2', 'qtpy', 'pyqtgraph', 'superqt'))
print(json.dumps(qt))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_headless_help_runs_without_qt():
    code = """
import sys
from lbdviewer.cli.main import main
try:
    main(["reconstruct", "--help"])
except SystemExit:
    pass
print([m for m in sys.modules if m.startswith("PyQt6")])
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "[]"
    assert "--offset" in result.stdout
