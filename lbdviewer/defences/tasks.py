"""One defend task: one image, one descriptor, one defence at one strength, one attacker in; one row out.

:func:`run_defend_task` is a pure function of a :class:`DefendTask` (it
writes nothing and never raises for a bad input), so the audit's runner
(:mod:`lbdviewer.audit.runner`, kind :data:`DEFEND`) runs it in a local
process pool or on Dask, with ``results.csv`` as the checkpoint. The task

1. describes the image with the library (:func:`lbdviewer.features.extract.extract_features`);
2. measures matching on its synthetic pairs with the defence applied to both
   images (:func:`lbdviewer.defences.utility.measure_utility`);
3. applies the defence to the image's features, lets the attacker rebuild
   the image from them alone (:func:`lbdviewer.defences.attacks.attack`) and
   scores what leaks (:func:`lbdviewer.defences.leakage.measure_leakage`).

The undefended baseline is the task whose ``defence`` is ``"none"``. Seeds
are fixed by the task (``seed``), so a row can be made again.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass

import numpy as np

from lbdviewer._runtime.parallel import numba_threads
from lbdviewer.audit.results_log import TaskKind
from lbdviewer.audit.tasks import is_feature_file, thumbnail_png, worker_name
from lbdviewer.defences.attacks import ATTACKERS, attack
from lbdviewer.defences.leakage import described_region, measure_leakage
from lbdviewer.defences.pairs import synthetic_pairs
from lbdviewer.defences.rows import COLUMNS, NONE, defend_key, strength_text, typed_defend_row
from lbdviewer.defences.transforms import Defence
from lbdviewer.defences.utility import measure_utility
from lbdviewer.evaluation.display import display_stretch
from lbdviewer.evaluation.ocr import legible_lines, ocr_words
from lbdviewer.features.extract import extract_features
from lbdviewer.io.images import load_image

__all__ = ["AUDIT_DEFENCES", "DEFEND", "DefendTask", "plan_defend_tasks", "run_defend_task"]

@dataclass(frozen=True)
class DefendTask:
    """One image, descriptor, defence (or :data:`NONE`) at one strength, and attacker.

    Parameters
    ----------
    input : str
        Path of an image.
    descriptor : str
        Library descriptor.
    defence : str
        A kind of :data:`lbdviewer.defences.transforms.DEFENCES`, or :data:`NONE`.
    strength : float or None
        The defence's strength (None for :data:`NONE`).
    attacker : {"aware", "naive"}
    keypoints : int
        Keypoints to detect in each image.
    iterations : int or None
        Solver iterations of each inversion (None: the solver's default).
    viewpoints, illuminations : int
        Synthetic pairs of each kind.
    seed : int
        Seed of the pairs, of the defence's draws and of ``keep-bits``' positions.
    ocr : bool
        Read text with tesseract (if installed).
    threads : int or None
        Solver threads for this task (None: leave numba's setting).
    max_pixels : int or None
        Resource limit of image loading (None: the worker's default).
    """

    input: str
    descriptor: str
    defence: str
    strength: float | None
    attacker: str
    keypoints: int = 500
    iterations: int | None = None
    viewpoints: int = 4
    illuminations: int = 4
    seed: int = 0
    ocr: bool = True
    threads: int | None = None
    max_pixels: int | None = None

    @property
    def key(self):
        """What identifies the task's row (:func:`defend_key`)."""
        return (self.input, self.descriptor, self.defence, strength_text(self.strength), self.attacker)


def plan_defend_tasks(inputs, descriptors, defences, **options):
    """Every input x descriptor x (baseline and each defence) x attacker, baseline first.

    Examples
    --------
    >>> from lbdviewer.defences.transforms import parse_defences
    >>> tasks = plan_defend_tasks(["/a.png"], ["orb"], parse_defences("rr:eps=1,2"))
    >>> [(t.defence, t.strength, t.attacker) for t in tasks][:3], len(tasks)
    ([('none', None, 'aware'), ('none', None, 'naive'), ('rr', 1.0, 'aware')], 6)
    """
    tasks = []
    for path in inputs:
        for descriptor in descriptors:
            for defence in [None, *defences]:
                for attacker in ATTACKERS:
                    tasks.append(DefendTask(path, descriptor, NONE if defence is None else defence.kind,
                                            None if defence is None else defence.strength, attacker, **options))
    return tasks


def _error_row(task, status):
    row = dict.fromkeys(COLUMNS)
    row.update(input=task.input, descriptor=task.descriptor, defence=task.defence, strength=task.strength,
               attacker=task.attacker, status=status, iterations=task.iterations, seed=task.seed)
    return row, {}


def run_defend_task(task):
    """Run one defend task (see the module notes); never raises for a bad input.

    Returns
    -------
    row : dict
        The :data:`COLUMNS` (the thumbnail's name is filled in by the runner);
        ``status`` is ``"ok"`` or ``"error: <message>"``.
    thumbnails : dict
        ``{"reconstruction": bytes}``: the attacker's reconstruction on the
        original's scale (PNG); the baseline's also ``"original"``.

    Examples
    --------
    >>> row, thumbnails = run_defend_task(DefendTask("/nonexistent.png", "orb", "none", None, "aware"))
    >>> row["status"].startswith("error: "), thumbnails
    (True, {})
    """
    started = time.perf_counter()
    row, thumbnails = _error_row(task, None)
    row["worker"] = worker_name()
    try:
        with numba_threads(task.threads):  # this task's count, the worker's own restored after
            _defend(task, row, thumbnails)
        row["status"] = "ok"
    except MemoryError:
        row["status"] = "error: out of memory"
    except Exception as error:  # noqa: BLE001 - a bad input is a row, never the end of the run
        row["status"] = f"error: {' '.join(str(error).split()) or type(error).__name__}"
        thumbnails = {}
    row["seconds"] = round(time.perf_counter() - started, 3)
    return row, thumbnails


def _defend(task, row, thumbnails):
    if is_feature_file(task.input):
        raise ValueError("defend measures matching on synthetic pairs of an image: give images, not feature files")
    image = load_image(task.input, max_pixels=task.max_pixels)
    features = extract_features(image, task.descriptor, n_keypoints=task.keypoints)
    if not len(features.keypoints):
        raise ValueError("the detector finds no keypoint in this image: nothing is released, nothing to defend")
    defence = None if task.defence == NONE else Defence(task.defence, task.strength, seed=task.seed)
    pairs = synthetic_pairs(image, viewpoints=task.viewpoints, illuminations=task.illuminations, rng=task.seed)
    utility = measure_utility(image, task.descriptor, pairs, defence=defence, n_keypoints=task.keypoints,
                              rng=task.seed)
    row.update({name: utility[name] for name in ("matching_accuracy_1px", "matching_accuracy_3px",
                                                 "matching_accuracy_5px", "homography_accuracy", "matches",
                                                 "correct_matches", "pairs")})
    released = features if defence is None else defence.apply(features, rng=task.seed, image=image)
    row.update(keypoints=len(released.keypoints), bits=int(released.n_bits))
    lines = []
    if task.ocr and shutil.which("tesseract"):
        lines = legible_lines(ocr_words(image))[0]
    reconstruction = covered = None
    if len(released.keypoints):
        result, _ = attack(released, task.attacker, iterations=task.iterations)
        reconstruction, covered = result.image, result.covered
        row["iterations"] = result.iterations
    row.update(measure_leakage(image, described_region(features), reconstruction, covered, lines=lines,
                               ocr=task.ocr))
    if reconstruction is not None and covered.any():
        shown = display_stretch(reconstruction, mask=covered, reference=image).image
    else:
        shown = np.zeros_like(image)
    thumbnails["reconstruction"] = thumbnail_png(shown)
    if defence is None:
        thumbnails["original"] = thumbnail_png(image)


#: The defend tasks for :func:`lbdviewer.audit.runner.iter_audit`, in ``results.csv`` (``defences.csv``
#: beside an audit's results: :data:`AUDIT_DEFENCES`).
DEFEND = TaskKind(run_defend_task, COLUMNS, defend_key, _error_row, typed_defend_row)
#: The same tasks recorded beside an audit's ``results.csv`` (``lbdviewer audit --defence``).
AUDIT_DEFENCES = TaskKind(run_defend_task, COLUMNS, defend_key, _error_row, typed_defend_row,
                          results="defences.csv")
