r"""The paper's notation in figures: symbols, names, panel letters, and captions ready for LaTeX and HTML.

Titles and captions are written as matplotlib mathtext: words, with the
paper's symbols between dollars — :math:`N_{\mathrm{off}}` (``$N_{\mathrm{off}} = 8$``),
:math:`L_i`, :math:`M`, :math:`K`, :math:`\lambda`, :math:`P` — so the figure
sets them as the paper does. The same text is LaTeX once the few characters
LaTeX reads otherwise outside math are escaped (:func:`latex_text`: ``%``,
``&``, ``#``, ``_``, and symbols such as ``×`` or ``λ`` moved into math);
:func:`html_text` turns that LaTeX into HTML for the contact sheet. Solvers
are named as the paper names them (BIHT, primal–dual; :func:`solver_name`);
pairs are numbered from 1 as in the paper
(:func:`lbdviewer.patterns.base.pair_label`).

Examples
--------
>>> offset_text(8), solver_name("primal-dual"), letter(2), letter_span(0, 3)
('$N_{\\mathrm{off}} = 8$', 'primal–dual', '(c)', '(a)–(d)')
>>> latex_text("coverage 41 %, 32×32 patches")
'coverage 41 \\%, 32$\\times$32 patches'
>>> html_text(r"$N_{\mathrm{off}} = 8$, 41 \%")
'<i>N</i><sub>off</sub> = 8, 41 %'
"""

from __future__ import annotations

import html
import re
import string

#: The grid offset between patches, as the paper writes it.
N_OFF = r"N_{\mathrm{off}}"
#: Solvers as the paper (and lbdviewer's documentation) names them.
SOLVER_NAMES = {"biht": "BIHT", "primal-dual": "primal–dual", "consistency": "sign consistency",
                "likelihood": "likelihood", "coherent": "coherent"}
#: How a whole image is solved: each patch alone, or all patches at once.
MODE_NAMES = {"patches": "patchwise", "joint": "joint"}
# Symbols LaTeX sets only in math mode (and their names there); in mathtext they may stand anywhere.
_MATH_SYMBOLS = {"×": r"\times", "±": r"\pm", "−": "-", "λ": r"\lambda", "σ": r"\sigma", "ℓ": r"\ell",
                 "Δ": r"\Delta", "≥": r"\geq", "≤": r"\leq", "°": r"^{\circ}", "µ": r"\mu", "μ": r"\mu",
                 "≈": r"\approx", "→": r"\to"}
# Characters LaTeX reads as commands outside math.
_TEXT_ESCAPES = {"%": r"\%", "&": r"\&", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                 "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}",
                 "\u00a0": "~"}
# Math for HTML: commands and the characters they stand for.
_HTML_COMMANDS = {r"\times": " × ", r"\pm": "±", r"\lambda": "λ", r"\sigma": "σ", r"\ell": "ℓ", r"\Delta": "Δ",
                  r"\geq": "≥", r"\leq": "≤", r"\circ": "°", r"\mu": "μ", r"\approx": "≈", r"\to": "→",
                  r"\%": "%", r"\,": "\u2009", r"\;": " ", r"\cdot": "·", r"\infty": "∞", r"\pi": "π"}
_HTML_TEXT = {r"\%": "%", r"\&": "&", r"\#": "#", r"\_": "_", r"\{": "{", r"\}": "}", r"\$": "$",
              r"\textasciitilde{}": "~", r"\textasciicircum{}": "^", r"\textbackslash{}": "\\", "~": "\u00a0"}


def math(expression):
    """``expression`` set as mathematics: ``$expression$``."""
    return f"${expression}$"


def offset_text(offset):
    """The grid offset as the paper writes it: ``$N_{\\mathrm{off}} = 8$``."""
    return math(f"{N_OFF} = {offset}")


def measurements_text(m):
    """``$M = 512$``: measurements (bits) per descriptor."""
    return math(f"M = {int(m)}")


def patch_text(patch_size):
    """``$32 \\times 32$``: the patch, in pixels."""
    return math(f"{int(patch_size)} \\times {int(patch_size)}")


def lam_text(lam):
    """``$\\lambda = 0.5$``: the primal–dual solver's data weight."""
    return math(f"\\lambda = {float(lam):g}")


def solver_name(method):
    """The solver ``method`` as the paper names it (BIHT, primal–dual); unknown names are returned as they are."""
    return SOLVER_NAMES.get(method, method)


def mode_name(mode):
    """``"patchwise"`` or ``"joint"`` (unknown modes are returned as they are)."""
    return MODE_NAMES.get(mode, mode)


def descriptor_name(name):
    """A descriptor as papers write it: ``"ra-freak"`` → ``"RA-FREAK"``."""
    return str(name).upper()


def run_title(*, descriptor=None, keypoints=None, m=None, patch_size=None, offset=None, solver=None, mode=None,
              extra=None):
    """One phrase naming a run (whichever of descriptor, keypoints, M, patch size, offset, solver, mode are given).

    Captions open with it; panel titles stay short.

    Examples
    --------
    >>> run_title(descriptor="brief", m=512, patch_size=32, offset=8, solver="consistency", mode="joint")
    'BRIEF, $M = 512$, $32 \\\\times 32$ patches, $N_{\\\\mathrm{off}} = 8$, sign consistency (joint)'
    >>> run_title(descriptor="orb", keypoints=500, solver="consistency", mode="joint")
    'ORB, 500 keypoints, sign consistency (joint)'
    """
    parts = []
    if descriptor:
        parts.append(descriptor_name(descriptor))
    if keypoints is not None:
        parts.append(f"{int(keypoints)} keypoint{'' if int(keypoints) == 1 else 's'}")
    if m is not None:
        parts.append(measurements_text(m))
    if patch_size is not None:
        parts.append(f"{patch_text(patch_size)} patches")
    if offset is not None:
        parts.append(offset_text(offset))
    run = solver_name(solver) if solver else ""
    if mode:
        run = f"{run} ({mode_name(mode)})" if run else mode_name(mode)
    return ", ".join(part for part in (*parts, run, extra) if part)


def letter(index):
    """The panel letter of the ``index``-th panel (from 0): ``(a)``, ``(b)``, ... ``(z)``, ``(aa)``, ..."""
    letters = string.ascii_lowercase
    name = letters[index % 26]
    while index >= 26:
        index = index // 26 - 1
        name = letters[index % 26] + name
    return f"({name})"


def letter_span(first, last):
    """Panels ``first`` to ``last`` (from 0): ``(a)–(d)``, or one letter."""
    return letter(first) if first == last else f"{letter(first)}–{letter(last)}"


def split_math(text):
    """``text`` cut into ``(is_math, part)`` pieces at unescaped dollars.

    Raises
    ------
    ValueError
        If a ``$`` is left open.

    Examples
    --------
    >>> split_math("a $x_1$ b")
    [(False, 'a '), (True, 'x_1'), (False, ' b')]
    """
    pieces, current, inside, k = [], "", False, 0
    while k < len(text):
        if text.startswith("\\$", k):
            current += "\\$"
            k += 2
            continue
        if text[k] == "$":
            if current:
                pieces.append((inside, current))
            current, inside = "", not inside
        else:
            current += text[k]
        k += 1
    if inside:
        raise ValueError(f"text has a $ left open: {text!r}")
    if current:
        pieces.append((False, current))
    return pieces


def latex_text(text):
    r"""Mathtext ``text`` as LaTeX: special characters escaped outside math, symbols such as ``×`` set as math.

    The result is what a ``\caption{...}`` holds: it compiles with
    pdflatex (and LuaLaTeX), and renders as the mathtext did.

    Examples
    --------
    >>> latex_text("ORB, r = 0.72, 41 % & more_x, $\\lambda = 0.5$, ±0.01")
    'ORB, r = 0.72, 41 \\% \\& more\\_x, $\\lambda = 0.5$, $\\pm$0.01'
    """
    out = []
    for is_math, part in split_math(text):
        if is_math:
            out.append("$" + "".join(_math_symbol(c) for c in part) + "$")
            continue
        k = 0
        while k < len(part):
            if part.startswith("\\$", k):
                out.append("\\$")
                k += 2
                continue
            char = part[k]
            out.append(f"${_MATH_SYMBOLS[char]}$" if char in _MATH_SYMBOLS else _TEXT_ESCAPES.get(char, char))
            k += 1
    return "".join(out)


def _math_symbol(char):
    command = _MATH_SYMBOLS.get(char)
    if command is None:
        return char
    return command + (" " if command[-1].isalpha() else "")


def unescape_text(text):
    r"""Text outside math, as :func:`latex_text` wrote it, back to plain Unicode (``\%`` → ``%``, ``~`` → no-break space).

    Examples
    --------
    >>> unescape_text(r"41 \% of a\_b")
    '41 % of a_b'
    """
    pattern = "|".join(re.escape(key) for key in sorted(_HTML_TEXT, key=len, reverse=True))
    return "".join(_HTML_TEXT.get(piece, piece) for piece in re.split(f"({pattern})", text))


def html_text(latex):
    r"""The LaTeX of :func:`latex_text` as HTML (math in italics with sub- and superscripts), for the contact sheet.

    Examples
    --------
    >>> html_text(r"frame vectors $L_{509}$ to $L_{512}$, $\pm 0.012$, $32 \times 32$")
    'frame vectors <i>L</i><sub>509</sub> to <i>L</i><sub>512</sub>, ±0.012, 32 × 32'
    """
    out = []
    for is_math, part in split_math(latex):
        if is_math:
            out.append(_html_math(part))
            continue
        out.append(html.escape(unescape_text(part), quote=False))
    return "".join(out)


def _html_math(expression):
    """HTML of a math expression of the subset the figures use (symbols, sub/superscripts, \\mathrm)."""
    html_parts, k = [], 0
    while k < len(expression):
        char = expression[k]
        if char in "_^":
            body, k = _group(expression, k + 1)
            tag = "sub" if char == "_" else "sup"
            html_parts.append(f"<{tag}>{_html_math(body)}</{tag}>")
            continue
        if char == "\\":
            match = re.match(r"\\([A-Za-z]+|.)", expression[k:])
            command = match.group(0)
            k += len(command)
            if command in (r"\mathrm", r"\text", r"\mathrm "):
                body, k = _group(expression, k)
                html_parts.append(html.escape(body.replace("\\,", "\u2009")))
            elif command in _HTML_COMMANDS:
                html_parts.append(_HTML_COMMANDS[command])
            else:
                raise ValueError(f"math command {command!r} has no HTML form (in {expression!r})")
            continue
        if char in "{}":
            k += 1
            continue
        if char == " ":
            k += 1
            continue
        if char in "=<>":
            html_parts.append(f" {html.escape(char)} ")
        elif char == ",":
            html_parts.append(", ")
        elif char == "-":
            html_parts.append("−")
        elif char.isalpha():
            html_parts.append(f"<i>{char}</i>")
        else:
            html_parts.append(html.escape(char))
        k += 1
    return "".join(html_parts).replace("  ", " ").strip()


def _group(expression, k):
    """The argument at ``k``: a ``{...}`` group (nested braces kept) or one character; and where it ends."""
    if k < len(expression) and expression[k] == "{":
        depth, end = 0, k
        while end < len(expression):
            depth += {"{": 1, "}": -1}.get(expression[end], 0)
            if depth == 0:
                return expression[k + 1:end], end + 1
            end += 1
        raise ValueError(f"unbalanced braces in {expression!r}")
    if k < len(expression) and expression[k] == "\\":
        command = re.match(r"\\([A-Za-z]+|.)", expression[k:]).group(0)
        return command, k + len(command)
    return expression[k:k + 1], k + 1
