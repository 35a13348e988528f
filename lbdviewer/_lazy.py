"""Package namespaces whose names load on first use (PEP 562), as scikit-image's ``lazy_loader`` does.

A package lists where each public name lives; importing the package costs
nothing, and ``import lbdviewer.io.limits`` does not load the whole of
:mod:`lbdviewer.io`. Inside lbdviewer, modules import from the module that
defines a name, never through a package namespace, so the namespaces add no
edge to the import graph.
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["lazy_namespace"]


def lazy_namespace(package, homes):
    """``__getattr__``, ``__dir__`` and ``__all__`` of a package whose names load on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    homes : dict of str to str
        Public name -> the module (relative to ``package``, or absolute) that defines it.
        A name whose home is the name itself, ``{"io": "io"}``, is the submodule.

    Returns
    -------
    tuple
        ``(__getattr__, __dir__, __all__)``, to assign in the package.

    Examples
    --------
    >>> getattr_, dir_, all_ = lazy_namespace("lbdviewer.io", {"load_image": "images"})
    >>> all_
    ['load_image']
    >>> getattr_("load_image").__module__
    'lbdviewer.io.images'
    """
    def home(name):
        module = homes[name]
        return module if module.startswith("lbdviewer") else f"{package}.{module}"

    def __getattr__(name):
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(home(name))
        value = module if homes[name] == name else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(homes))

    return __getattr__, __dir__, sorted(homes)
