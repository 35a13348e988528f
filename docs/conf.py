"""Sphinx configuration of lbdviewer's documentation (built by ``scripts/docs``)."""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # nothing here should load Qt; if it does, never abort
os.environ.setdefault("MPLBACKEND", "Agg")

import lbdviewer  # noqa: E402

project = "lbdviewer"
author = "the lbdviewer authors"
copyright = "the lbdviewer authors, BSD-3-Clause"
release = lbdviewer.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax served from _static: the pages read offline, from file://
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "lbd_sphinx",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "examples/README.rst", "Thumbs.db", ".DS_Store"]
default_role = "literal"
nitpicky = False  # lbd_sphinx warns on references to lbdviewer objects that do not exist (moved or renamed)

# API reference: one page per public namespace (its __all__), one page per object.
autosummary_generate = True
autosummary_ignore_module_all = False
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_use_plots = False

# The example gallery: each example runs at build time on the shipped samples,
# its figures drawn by lbdviewer's figure engine (lbd_sphinx.figure_scraper).
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "generated/gallery",
    "filename_pattern": r"/plot_",
    "image_scrapers": ("lbd_sphinx.figure_scraper",),
    "reset_modules": (),
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "show_memory": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "doc_module": ("lbdviewer",),
    "backreferences_dir": None,
    "min_reported_time": 1,
    "write_computation_times": False,
}

html_theme = "pydata_sphinx_theme"
html_title = f"lbdviewer {release}"
html_static_path = ["_static"]
html_css_files = ["lbdviewer.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "navbar_align": "left",
}
html_sidebars = {"index": [], "getting_started": [], "background": [], "performance": []}
html_show_sourcelink = False
