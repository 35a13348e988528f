"""What the app remembers between launches, read back with every value checked.

The store is a ``QSettings`` (organisation and application ``"lbdviewer"``)
or anything with its ``value(key)``, ``setValue(key, value)``,
``remove(key)`` and ``allKeys()``; this module does not import Qt. Values
are written as JSON text, so they read back with their types whatever the
store's format (an INI file gives every value back as a string).

Reading never fails: a value that is missing, is not JSON, or is refused by
the model (:meth:`lbdviewer.gui.model.Parameters.check`) or by the given
choices and ranges gives the default, and the key goes into a list of
what was ignored, which the window shows in its status bar. A corrupted
settings file therefore opens the app with defaults, never an error.
"""

from __future__ import annotations

import json
import os

from lbdviewer.gui.model import Parameters

#: Key of each parameter (``parameters/<name>``) and of the M remembered per family.
PARAMETERS_GROUP = "parameters"
M_BY_FAMILY_KEY = "parameters/m_by_family"
#: The last image opened (a path, or ``sample:NAME``), re-opened on launch when it still loads.
LAST_IMAGE_KEY = "paths/last_image"
#: Keys "Reset settings" keeps: the recent-files list is history, not a setting.
KEPT_ON_RESET = ("paths/recent",)
#: Parameters set first when restoring: the others' limits and choices depend on them.
RESTORE_ORDER = ("family", "patch_size", "solver", "binary")
_MISSING = object()


def write(store, key, value):
    """Store ``value`` (JSON-serialisable) under ``key`` as JSON text."""
    store.setValue(key, json.dumps(value))


def read(store, key):
    """The value stored under ``key``; a private sentinel when missing or unreadable.

    Examples
    --------
    >>> store = DictStore({"a": "[1, 2]", "b": "not json"})
    >>> read(store, "a"), read(store, "b") is _MISSING, read(store, "c") is _MISSING
    ([1, 2], True, True)
    """
    raw = store.value(key)
    if not isinstance(raw, str):
        return _MISSING
    try:
        return json.loads(raw)
    except ValueError:
        return _MISSING


def read_choice(store, key, choices, default, ignored=None):
    """The stored value of ``key`` if it is one of ``choices``, else ``default`` (``key`` noted in ``ignored``).

    Examples
    --------
    >>> store, ignored = DictStore({"view/pairs": '"none"', "view/bad": '"sideways"'}), []
    >>> read_choice(store, "view/pairs", ("all", "none"), "all", ignored)
    'none'
    >>> read_choice(store, "view/bad", ("all", "none"), "all", ignored), ignored
    ('all', ['view/bad'])
    """
    value = read(store, key)
    if value is _MISSING and store.value(key) is None:
        return default
    if isinstance(value, (str, bool, int, float)) and value in choices and type(value) is type(default):
        return value
    _note(ignored, key)
    return default


def read_checked(store, key, check, default, ignored=None):
    """``check(stored value)`` (it raises ``ValueError`` or ``TypeError`` to refuse), else ``default``.

    Examples
    --------
    >>> def dpi(value):
    ...     if not isinstance(value, int) or not 72 <= value <= 1200:
    ...         raise ValueError(value)
    ...     return value
    >>> store, ignored = DictStore({"dpi": "600", "bad": "5"}), []
    >>> read_checked(store, "dpi", dpi, 300, ignored), read_checked(store, "bad", dpi, 300, ignored), ignored
    (600, 300, ['bad'])
    """
    value = read(store, key)
    if value is _MISSING:
        if store.value(key) is not None:
            _note(ignored, key)
        return default
    try:
        return check(value)
    except (ValueError, TypeError):
        _note(ignored, key)
        return default


def _note(ignored, key):
    if ignored is not None:
        ignored.append(key)


# -- the parameters ------------------------------------------------------------------
def save_parameters(store, parameters):
    """Write every parameter and the M remembered per family."""
    for name, value in parameters.as_dict().items():
        write(store, f"{PARAMETERS_GROUP}/{name}", value)
    write(store, M_BY_FAMILY_KEY, parameters.m_by_family())


def restore_parameters(store):
    """:class:`~lbdviewer.gui.model.Parameters` from the store, defaults where a value is missing or refused.

    Each stored value goes through the model's own validation, in an order
    where the values others depend on come first (family, patch size,
    solver, binary), then the M of each other family, then the rest.

    Returns
    -------
    parameters : Parameters
    ignored : list of str
        Keys whose stored value was refused (the default stands).

    Examples
    --------
    >>> store = DictStore()
    >>> p = Parameters(family="freak", m=600, patch_size=48, offset=12)
    >>> p.family = "brief"; p.m = 1000
    >>> save_parameters(store, p)
    >>> store.setValue("parameters/iterations", "-3")   # out of range: the default comes back
    >>> q, ignored = restore_parameters(store)
    >>> (q.family, q.patch_size, q.m, q.offset, q.iterations), ignored
    (('brief', 48, 1000, 12, 200), ['parameters/iterations'])
    >>> q.family = "freak"; q.m                        # FREAK's M came back too
    600
    """
    parameters, ignored = Parameters(), []
    stored = {}
    for name in Parameters.DEFAULTS:
        key = f"{PARAMETERS_GROUP}/{name}"
        value = read(store, key)
        if value is not _MISSING:
            stored[name] = value
        elif store.value(key) is not None:
            ignored.append(key)
    for name in RESTORE_ORDER:
        _assign(parameters, name, stored.pop(name, _MISSING), ignored)
    _restore_m_by_family(store, parameters, stored.pop("m", _MISSING), ignored)
    for name, value in stored.items():
        _assign(parameters, name, value, ignored)
    return parameters, ignored


def _assign(parameters, name, value, ignored):
    if value is _MISSING:
        return
    try:
        setattr(parameters, name, value)
    except (ValueError, TypeError):
        ignored.append(f"{PARAMETERS_GROUP}/{name}")


def _restore_m_by_family(store, parameters, m, ignored):
    """Set each other family's remembered M (switching to it and back), then the current family's."""
    family = parameters.family
    by_family = read(store, M_BY_FAMILY_KEY)
    if store.value(M_BY_FAMILY_KEY) is not None and not isinstance(by_family, dict):
        ignored.append(M_BY_FAMILY_KEY)
    if isinstance(by_family, dict):
        for other, value in by_family.items():
            if other == family or other not in parameters.allowed("family"):
                continue
            try:
                Parameters(family=other, patch_size=parameters.patch_size, m=value)  # refused: no memory for it
            except (ValueError, TypeError):
                ignored.append(M_BY_FAMILY_KEY)
                continue
            parameters.family = other
            parameters.m = value
        parameters.family = family
    _assign(parameters, "m", m, ignored)


# -- files ------------------------------------------------------------------------------
def read_folder(store, key, default):
    """The folder stored under ``key`` when it still exists, else ``default``.

    Written by Qt as plain text (``QSettings.setValue(key, path)``), so read as such.
    """
    value = store.value(key)
    return value if isinstance(value, str) and value and os.path.isdir(value) else default


def read_last_image(store):
    """The last image to re-open: ``sample:NAME`` or the path of a file that still exists; None otherwise."""
    value = read(store, LAST_IMAGE_KEY)
    if not isinstance(value, str) or not value:
        return None
    if value.startswith("sample:") or os.path.isfile(value):
        return value
    return None


def reset(store):
    """Forget every remembered value but :data:`KEPT_ON_RESET`."""
    for key in list(store.allKeys()):
        if key not in KEPT_ON_RESET:
            store.remove(key)


class DictStore:
    """A dict with the four ``QSettings`` methods this module uses (for doctests and Qt-free tests)."""

    def __init__(self, values=None):
        self.values = dict(values or {})

    def value(self, key, default=None):
        return self.values.get(key, default)

    def setValue(self, key, value):  # noqa: N802  (QSettings' name)
        self.values[key] = value

    def remove(self, key):
        self.values.pop(key, None)

    def allKeys(self):  # noqa: N802  (QSettings' name)
        return list(self.values)
