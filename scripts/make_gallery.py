"""Make the paper's figures for the documentation: every figure of ``lbdviewer figures``, and the page section that shows them.

Usage: python scripts/make_gallery.py [--quick] [--only NAME ...] [--dpi 300] [--section-only]

Writes ``resources/docs/gallery/NAME.png`` and ``NAME.json`` (the run record)
for each figure, double column wide, then rewrites the part of
``docs/performance.rst`` between ``.. gallery:start`` and ``.. gallery:end``
("The paper's figures, made again") with the images and their captions
(taken from the records). That section is never edited by hand: run this
script again instead (``--section-only`` rewrites it from the records already
there, without making the figures). PNGs only, at 300 dpi, where a double
column holds four 512-pixel images side by side at one output pixel each;
``lbdviewer figures OUTDIR`` makes PDF and SVG too.
"""

import argparse
import re
import sys
import time
from pathlib import Path

from lbdviewer.figures import FIGURES, write_figure
from lbdviewer.figures.notation import split_math, unescape_text
from lbdviewer.io.files import atomic_write
from lbdviewer.evaluation.records import read_sidecar

ROOT = Path(__file__).resolve().parent.parent
GALLERY = ROOT / "resources" / "docs" / "gallery"
PAGE = ROOT / "docs" / "performance.rst"
START, END = ".. gallery:start", ".. gallery:end"
_RST_SPECIAL = re.compile(r"([\\*`|_])")


def rst_text(text):
    r"""``text`` with reST's inline markup characters escaped, so a caption reads as written.

    Examples
    --------
    >>> print(rst_text("L_i, *bits*"))
    L\_i, \*bits\*
    """
    return _RST_SPECIAL.sub(r"\\\1", text)


def rst_caption(latex):
    r"""A caption as the records hold it (LaTeX: math between dollars) in reST: math as ``:math:``, text escaped.

    Examples
    --------
    >>> print(rst_caption(r"FREAK at $N_{\mathrm{off}} = 8$, 41 \% of L_i, 32$\times$32."))
    FREAK at \ :math:`N_{\mathrm{off}} = 8`\ , 41 % of L\_i, 32\ :math:`\times`\ 32.
    """
    return "".join(rf"\ :math:`{part}`\ " if is_math else rst_text(unescape_text(part))
                   for is_math, part in split_math(latex))


def section(names):
    """The page's gallery section (reST), from the records in ``GALLERY``."""
    relative = Path("..") / GALLERY.relative_to(ROOT)
    lines = [START, "", ".. made by scripts/make_gallery.py from the records beside the images: do not edit", ""]
    for name in names:
        record = read_sidecar(GALLERY / f"{name}.json")
        figure = record["extra"]["figure"]
        quick = " (quick: small crops, few iterations)" if record["parameters"].get("quick") else ""
        title = f"``{name}``{quick}"
        lines += [title, "~" * len(title), "", f".. figure:: {(relative / f'{name}.png').as_posix()}",
                  f"   :alt: {name}", "   :width: 100%", "", f"   {rst_caption(figure['caption'])}", ""]
    lines.append(END)
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small crops and few iterations (a preview)")
    parser.add_argument("--only", nargs="+", choices=tuple(FIGURES), metavar="NAME")
    parser.add_argument("--dpi", type=int, default=300)
    parser.add_argument("--section-only", action="store_true",
                        help="rewrite the page's section from the records already made; make no figure")
    args = parser.parse_args(argv)
    GALLERY.mkdir(parents=True, exist_ok=True)
    for name in [] if args.section_only else args.only or FIGURES:
        started = time.perf_counter()
        write_figure(GALLERY, name, quick=args.quick, formats=("png",), dpi=args.dpi, width="double")
        print(f"{name}: {time.perf_counter() - started:.1f} s", flush=True)
    text = PAGE.read_text(encoding="utf-8")
    if START not in text or END not in text:
        print(f"{PAGE.relative_to(ROOT)} has no {START} ... {END} markers: gallery section not written",
              file=sys.stderr)
        return 1
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    names = [name for name in FIGURES if (GALLERY / f"{name}.json").exists()]
    atomic_write(PAGE, (before + section(names) + after).encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
