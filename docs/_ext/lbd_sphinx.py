"""What lbdviewer's documentation adds to Sphinx.

- ``.. lbdviewer-help:: COMMAND`` shows ``lbdviewer COMMAND --help`` as the
  installed command prints it (``app``: the help of ``lbdviewer [IMAGE]``),
  so the pages never drift from the parser; the build warns about a
  subcommand no page shows (a new command needs its page).
- References to ``lbdviewer.*`` objects by the module that defines them
  (``:func:`lbdviewer.io.images.load_image```) link to the page of the
  public name (``lbdviewer.io.load_image``); a reference to an object that
  does not exist (a module that moved, a name that changed) is a warning,
  hence an error under ``-W``.
- Constants documented with ``#:`` comments in their defining module get
  that text (autodoc looks in the namespace, which only re-exports them).
- :func:`figure_scraper` puts the figures an example made with the figure
  engine (:func:`lbdviewer.figures.render_figure`) into the gallery page.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

#: The public namespaces the API reference documents.
NAMESPACES = ("bits", "patterns", "operators", "solvers", "reconstruction", "libraries", "features", "evaluation",
              "io", "audit", "figures", "testing")
HELP_COLUMNS = "100"


# --- the command line ------------------------------------------------------------------------------------------

def command_help(command):
    """The text of ``lbdviewer COMMAND --help`` (``app``: ``lbdviewer --help``), 100 columns wide."""
    from lbdviewer.cli.main import build_parser, gui_parser

    with _environ(COLUMNS=HELP_COLUMNS):
        parser, commands = build_parser()
        if command == "app":
            return gui_parser(commands).format_help()
        if command not in parser.command_parsers:
            raise ValueError(f"lbdviewer has no command {command!r}; commands: {', '.join(commands)}")
        return parser.command_parsers[command].format_help()


def commands():
    """The subcommands of ``lbdviewer``, in the order of its help."""
    from lbdviewer.cli.main import build_parser

    return list(build_parser()[1])


@contextlib.contextmanager
def _environ(**values):
    old = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class LbdviewerHelp(SphinxDirective):
    """``.. lbdviewer-help:: COMMAND``: the command's ``--help`` as a literal block."""

    required_arguments = 1
    option_spec = {"class": directives.class_option}

    def run(self):
        command = self.arguments[0]
        try:
            text = command_help(command)
        except ValueError as error:
            logger.warning(str(error), location=self.get_location())
            return []
        self.env.domaindata.setdefault("lbdviewer", {}).setdefault("helped", {})[command] = self.env.docname
        block = nodes.literal_block(text, text, language="text")
        block["classes"] += ["lbdviewer-help"]
        return [block]


def _merge_helped(app, env, docnames, other):
    env.domaindata.setdefault("lbdviewer", {}).setdefault("helped", {}).update(
        other.domaindata.get("lbdviewer", {}).get("helped", {}))


def _purge_helped(app, env, docname):
    helped = env.domaindata.get("lbdviewer", {}).get("helped", {})
    for command in [name for name, where in helped.items() if where == docname]:
        del helped[command]


def _check_commands_documented(app, env):
    helped = env.domaindata.get("lbdviewer", {}).get("helped", {})
    for command in commands():
        if command not in helped:
            logger.warning(f"the command 'lbdviewer {command}' has no page: add '.. lbdviewer-help:: {command}' "
                           f"with a section on it to the user guide (docs/user_guide/)")


# --- references to lbdviewer objects ---------------------------------------------------------------------------

_MISSING = object()


def _resolve_object(target):
    """The object ``target`` ("lbdviewer.a.b.name.attr") names, or ``_MISSING``."""
    parts = target.split(".")
    if "__main__" in parts:  # importing it would run the command
        return importlib.util.find_spec("lbdviewer.__main__") if target == "lbdviewer.__main__" else _MISSING
    for split in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            owner, value = value, getattr(value, attribute, _MISSING)
            if value is _MISSING:
                return _instance_attribute(owner, attribute)
        return value
    return _MISSING


def _instance_attribute(owner, attribute):
    """``attribute`` of ``owner``'s instances (set in a method as ``self.NAME``, or a field), or ``_MISSING``."""
    if not isinstance(owner, type):
        return _MISSING
    if attribute in getattr(owner, "__dataclass_fields__", {}) or attribute in getattr(owner, "__annotations__", {}):
        return attribute
    try:
        source = inspect.getsource(owner)
    except (OSError, TypeError):
        return _MISSING
    return attribute if re.search(rf"\bself\.{re.escape(attribute)}\s*=[^=]", source) else _MISSING


def public_names():
    """``{id(object): public name}`` of the functions and classes the namespaces export, and
    ``{name: [(public name, object)]}`` of every exported name (constants are found by name and identity)."""
    by_id, by_name = {}, {}
    for namespace in NAMESPACES:
        module = importlib.import_module(f"lbdviewer.{namespace}")
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            public = f"lbdviewer.{namespace}.{name}"
            by_name.setdefault(name, []).append((public, value))
            if callable(value) or isinstance(value, type):
                by_id.setdefault(id(value), public)
    return by_id, by_name


def _public_target(target, names):
    """The public name of ``target`` (or of its class, with the attribute kept), or None."""
    by_id, by_name = names
    parts = target.split(".")
    for split in range(len(parts), 1, -1):
        value = _resolve_object(".".join(parts[:split]))
        if value is _MISSING:
            continue
        if id(value) in by_id:
            return ".".join([by_id[id(value)], *parts[split:]])
        for public, exported in by_name.get(parts[split - 1], ()):
            if exported is value:
                return ".".join([public, *parts[split:]])
    return None


def _documented_module(docname):
    """The module defining the object an API page documents (``api/generated/lbdviewer.x.name``), or None."""
    stem = docname.rsplit("/", 1)[-1]
    if not docname.startswith("api/generated/") or not stem.startswith("lbdviewer."):
        return None
    value = _resolve_object(stem)
    module = getattr(value, "__module__", None) if value is not _MISSING else None
    return module if isinstance(module, str) and module.startswith("lbdviewer") else None


def _missing_reference(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    candidates = [target]
    if not target.startswith("lbdviewer"):
        context = [node.get("py:module"), node.get("py:class")]
        prefix = ".".join(part for part in context if part)
        candidates = [f"{prefix}.{target}", f"{node.get('py:module')}.{target}"] if prefix.startswith("lbdviewer") \
            else []
        home = _documented_module(node.get("refdoc", ""))
        if home is not None:  # a name the defining module sees, as its docstring was written there
            candidates.append(f"{home}.{target}")
    names, domain, exists = app.lbd_public_names, env.get_domain("py"), False
    for candidate in candidates:
        if _resolve_object(candidate) is _MISSING:
            continue
        exists = True
        public = _public_target(candidate, names)
        if public is None or public == target:
            continue
        for kind in (node.get("reftype"), "obj"):
            found = domain.resolve_xref(env, node["refdoc"], app.builder, kind, public, node, contnode)
            if found is not None:
                return found
    exported = names[1].get(target, ())
    if not target.startswith("lbdviewer") and len(exported) == 1:  # a public name, written unqualified
        return domain.resolve_xref(env, node["refdoc"], app.builder, "obj", exported[0][0], node, contnode)
    if target.startswith("lbdviewer") and not exists:
        logger.warning(f"reference to {target!r}, which does not exist (moved or renamed?)", location=node,
                       type="lbdviewer", subtype="reference")
    return None


def _collect_public_names(app):
    app.lbd_public_names = public_names()


# --- constants -------------------------------------------------------------------------------------------------

def _constant_comment(name, value):
    """The ``#:`` comment that documents ``value`` in the module defining it (the namespace only re-exports it)."""
    package, _, attribute = name.rpartition(".")
    for module_name, module in sorted(sys.modules.items()):
        if not module_name.startswith(package + ".") or getattr(module, attribute, _MISSING) is not value:
            continue
        try:
            docs = ModuleAnalyzer.for_module(module_name).find_attr_docs()
        except Exception:  # a module without source (compiled): nothing to read
            continue
        if ("", attribute) in docs:
            return list(docs[("", attribute)])
    return None


def _document_constants(app, what, name, obj, options, lines):
    if what != "data" or not name.startswith("lbdviewer."):
        return
    comment = _constant_comment(name, obj)
    type_doc = (type(obj).__doc__ or "").strip().splitlines()
    if comment is not None:
        lines[:] = comment
    elif lines and type_doc and lines[0].strip() == type_doc[0].strip():
        logger.warning(f"{name} has no '#:' comment in the module that defines it", type="lbdviewer",
                       subtype="constant")
        lines[:] = []


# --- the gallery's figures -------------------------------------------------------------------------------------

def figure_scraper(block, block_vars, gallery_conf):
    """Sphinx-gallery scraper: the figure engine's figures an example block left in its globals.

    An example draws with :func:`lbdviewer.figures.render_figure`, which
    returns a :class:`matplotlib.figure.Figure` that pyplot never sees; every
    such figure bound to a name of the example and not shown yet is written
    as PNG at the dpi it was rendered at (the engine's pixel-exact insets
    stay exact) and shown after the block.
    """
    from matplotlib.figure import Figure
    from sphinx_gallery.scrapers import figure_rst

    from lbdviewer.figures.engine import figure_bytes

    shown = gallery_conf.setdefault("_lbd_shown", {}).setdefault(block_vars["src_file"], set())
    figures = []
    for value in block_vars["example_globals"].values():
        candidates = value if isinstance(value, (list, tuple)) else (value,)
        figures += [item for item in candidates if isinstance(item, Figure) and id(item) not in shown]
    paths = []
    for figure, path in zip(figures, block_vars["image_path_iterator"]):
        shown.add(id(figure))
        Path(path).write_bytes(figure_bytes(figure, "png", figure.dpi))
        paths.append(path)
    return figure_rst(paths, gallery_conf["src_dir"]) if paths else ""


def setup(app):
    app.add_directive("lbdviewer-help", LbdviewerHelp)
    app.connect("builder-inited", _collect_public_names)
    app.connect("env-merge-info", _merge_helped)
    app.connect("env-purge-doc", _purge_helped)
    app.connect("env-check-consistency", _check_commands_documented)
    app.connect("missing-reference", _missing_reference)
    app.connect("autodoc-process-docstring", _document_constants)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
