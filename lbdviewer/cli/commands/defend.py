"""``lbdviewer defend INPUT... -o DIR --defence KIND:VALUES``: what each defence costs in matching and leaves to an attacker.

For every image, descriptor, defence strength and attacker (``aware``: knows
the defence; ``naive``: ignores it) one task measures matching on synthetic
image pairs (HPatches' mean matching accuracy at 1, 3 and 5 px and
homography accuracy) and what the attacker rebuilds from the defended
features (correlation with the original, lines of text read back). The
undefended baseline is the row whose defence is ``none``. Defences
(``--defence``, repeatable): ``rr:eps=0.5,1,2,4,8`` (randomized response on
each bit), ``keep-bits:0.25,0.5,0.75`` (a share of the bit positions),
``keep-keypoints:0.25,0.5`` (a random share of the keypoints),
``keep-keypoints-aware:0.25,0.5`` (the best-matching share, none in text),
``quantize:2,4,8`` (coordinates to a grid, pixels), ``jitter:1,2,4``
(coordinate noise, pixels). One row per task goes to ``DIR/results.csv``
as it finishes; a second run over the same folder does only what is missing.
``DIR/index.html`` shows a privacy–utility figure per descriptor
(``privacy_utility_<descriptor>.png``/``.pdf``) and the table. Tasks run in a
local process pool, or on a Dask cluster with ``--scheduler tcp://HOST:PORT``.
"""

from __future__ import annotations

from lbdviewer.cli.commands._args import add_command, add_limit_options, add_output, positive_int
from lbdviewer.cli.commands._batch import add_run_options, descriptor_list, resolve_run_options, run_tasks
from lbdviewer.io import limits
from lbdviewer.libraries.registry import DESCRIPTORS


def add_defence_options(parser, *, required):
    """``--defence`` (repeatable) and the options of the defend tasks, shared with ``audit``."""
    parser.add_argument("--defence", action="append", default=[], metavar="KIND:VALUES", required=required,
                        help="a defence and its strengths, e.g. rr:eps=0.5,1,2 keep-bits:0.25,0.5 "
                             "keep-keypoints:0.5 keep-keypoints-aware:0.5 quantize:4 jitter:1,2 (repeatable)")
    parser.add_argument("--pairs", type=positive_int, default=4, metavar="N",
                        help="synthetic pairs of each kind (viewpoint, illumination) per image to measure matching")
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help="seed of the pairs, the defences' draws and the positions keep-bits keeps")


def defence_list(values):
    """Every defence of the ``--defence`` values, in order, without repeats."""
    from lbdviewer.defences.transforms import parse_defences

    out = []
    for value in values:
        out.extend(parse_defences(value))
    return list(dict.fromkeys(out))


def image_inputs(paths):
    """The images named by ``paths`` (:func:`lbdviewer.audit.runner.collect_inputs`); feature files refused by name."""
    from lbdviewer.audit.runner import collect_inputs
    from lbdviewer.audit.tasks import is_feature_file

    inputs = collect_inputs(paths)
    features = [path for path in inputs if is_feature_file(path)]
    if features:
        raise ValueError(f"defend measures matching on synthetic pairs of images; {features[0]!r} is a feature file")
    return inputs


def defend_options(args, threads):
    """The fields of every :class:`lbdviewer.defences.tasks.DefendTask` of a command line."""
    max_keypoints = limits.max_keypoints(getattr(args, "max_keypoints", None))
    limits.check_keypoints(args.keypoints, "--keypoints", limit=max_keypoints)
    return {"keypoints": args.keypoints, "iterations": args.iterations, "viewpoints": args.pairs,
            "illuminations": args.pairs, "seed": args.seed, "ocr": not args.no_ocr, "threads": threads,
            "max_pixels": limits.max_pixels(args.max_pixels)}


def describe_row(row):
    """One line for a finished defend row."""
    strength = "" if row["strength"] is None else f" {row['strength']:g}"
    text = "" if row["ocr_lines_total"] in (None, 0) or row["ocr_lines_read"] is None else \
        f", {row['ocr_lines_read']}/{row['ocr_lines_total']} lines read"
    return (f"{row['input']} {row['descriptor']} {row['defence']}{strength} {row['attacker']}: matching "
            f"{row['matching_accuracy_3px']:.2f}, correlation {row['correlation']:.3f}{text}")


def add_parser(subparsers):
    """Register the ``defend`` subcommand."""
    parser = add_command(subparsers, "defend", __doc__, "measure defences of released features: matching kept "
                         "against what an attacker who knows them rebuilds")
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="image, folder or glob")
    add_output(parser, "DIR", "report folder (created; an existing one is resumed)")
    parser.add_argument("--descriptor", default="orb", metavar="NAMES",
                        help=f"comma-separated descriptors ({', '.join(DESCRIPTORS)}; default orb)")
    add_defence_options(parser, required=True)
    parser.add_argument("--keypoints", type=positive_int, default=500, metavar="N",
                        help="keypoints to detect per image (at most --max-keypoints)")
    parser.add_argument("--iterations", type=positive_int, default=None, metavar="N",
                        help="solver iterations of each inversion (default: the solver's)")
    add_run_options(parser)
    parser.add_argument("--no-ocr", action="store_true", help="skip OCR even if tesseract is installed")
    parser.add_argument("--title", default=None, help="title of the report (default: the folder's name)")
    add_limit_options(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no line per row, no summary")
    parser.set_defaults(func=run)
    return parser


def run(args):
    """Run ``lbdviewer defend``; return the exit status."""
    from lbdviewer.audit.defences_report import write_defend_report
    from lbdviewer.defences.tasks import DEFEND, plan_defend_tasks

    descriptors = descriptor_list(args.descriptor)
    defences = defence_list(args.defence)
    workers, threads = resolve_run_options(args)
    tasks = plan_defend_tasks(image_inputs(args.inputs), descriptors, defences, **defend_options(args, threads))
    try:
        done, failed, before = run_tasks(tasks, args, kind=DEFEND, desc="defend", describe=describe_row,
                                         workers=workers)
    finally:
        report = write_defend_report(args.output, title=args.title)
    if not args.quiet:
        print(f"{report}: {done} new rows ({failed} errors), {before} already done")
    return 0
