"""Defend rows read back and summarised: one privacy–utility point per descriptor, defence and strength.

Everything is rebuilt from the rows of ``results.csv``
(:func:`lbdviewer.defences.rows.read_defend_rows`). A point averages the ok rows of
its inputs; an input's **leakage** is the higher of what the aware and the
naive attacker get (correlation, and lines of text read), so a defence is
credited only with what neither attacker recovers.

:func:`recommend` turns the points of one descriptor into advice, by a rule
it states (:data:`MAX_MATCHING_COST`).
"""

from __future__ import annotations

import numpy as np

from lbdviewer.defences.rows import NONE, strength_text
from lbdviewer.defences.transforms import DEFENCES, HIDES_MORE, STRENGTH_NAMES

__all__ = ["MAX_MATCHING_COST", "MIN_GAIN", "recommend", "summarise_defences", "table_markdown"]

#: Largest loss of mean matching accuracy at 3 px (and of homography accuracy) a recommended defence may cost.
MAX_MATCHING_COST = 0.10
#: Smallest fall of the leakage correlation, or of the share of text lines read, worth recommending a defence for.
MIN_GAIN = 0.10


def _order(item):
    kind = item["defence"]
    rank = -1 if kind == NONE else DEFENCES.index(kind) if kind in DEFENCES else len(DEFENCES)
    strength = item["strength"] or 0.0
    return rank, HIDES_MORE.get(kind, 1) * strength  # weakest first


def _mean(values):
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def summarise_defences(rows):
    """One point per descriptor, defence and strength (see the module notes), weakest defence first.

    Returns
    -------
    list of dict
        ``descriptor``, ``defence``, ``strength``, ``label``, ``inputs``,
        ``errors``, means over inputs of ``matching_accuracy_{1,3,5}px``,
        ``homography_accuracy``, ``keypoints``; ``correlation`` (mean over
        inputs of the higher attacker's), ``correlation_aware``,
        ``correlation_naive``; ``lines_read`` and ``lines_total`` over the
        inputs with legible text (the higher attacker's per input) and their
        ``text_share`` (None without text).

    Examples
    --------
    >>> rows = [{"input": "a", "descriptor": "orb", "defence": "rr", "strength": 2.0, "attacker": attacker,
    ...          "status": "ok", "matching_accuracy_1px": 0.5, "matching_accuracy_3px": 0.9,
    ...          "matching_accuracy_5px": 0.95, "homography_accuracy": 1.0, "keypoints": 500,
    ...          "correlation": value, "ocr_lines_read": read, "ocr_lines_total": 4}
    ...         for attacker, value, read in (("aware", 0.88, 3), ("naive", 0.83, 1))]
    >>> point = summarise_defences(rows)[0]
    >>> point["label"], point["correlation"], point["correlation_naive"], point["text_share"]
    ('rr eps=2', 0.88, 0.83, 0.75)
    """
    groups = {}
    for row in rows:
        key = (row["descriptor"], row["defence"], strength_text(row["strength"]))
        groups.setdefault(key, []).append(row)
    points = []
    for (descriptor, defence, _), group in groups.items():
        ok = [row for row in group if row["status"] == "ok"]
        by_input = {}
        for row in ok:
            by_input.setdefault(row["input"], {})[row["attacker"]] = row
        strength = group[0]["strength"]
        point = {"descriptor": descriptor, "defence": defence, "strength": strength,
                 "label": "no defence" if defence == NONE else
                 f"{defence} {STRENGTH_NAMES.get(defence, 'strength')}={strength:g}",
                 "inputs": len(by_input), "errors": len(group) - len(ok)}
        firsts = [next(iter(attackers.values())) for attackers in by_input.values()]
        for name in ("matching_accuracy_1px", "matching_accuracy_3px", "matching_accuracy_5px",
                     "homography_accuracy", "keypoints"):
            point[name] = _mean(row[name] for row in firsts)
        for attacker in ("aware", "naive"):
            point[f"correlation_{attacker}"] = _mean(a[attacker]["correlation"] for a in by_input.values()
                                                     if attacker in a)
        point["correlation"] = _mean(max(row["correlation"] or 0.0 for row in a.values()) for a in by_input.values())
        text = [a for a in by_input.values() if (next(iter(a.values()))["ocr_lines_total"] or 0) > 0]
        read = [max(row["ocr_lines_read"] or 0 for row in a.values()) for a in text]
        total = sum(next(iter(a.values()))["ocr_lines_total"] for a in text)
        point.update(lines_read=sum(read) if text else None, lines_total=total if text else None,
                     text_share=sum(read) / total if total else None)
        points.append(point)
    descriptors = list(dict.fromkeys(point["descriptor"] for point in points))
    return sorted(points, key=lambda p: (descriptors.index(p["descriptor"]), *_order(p)))


def _cost(point, baseline, name):
    if point[name] is None or baseline[name] is None:
        return None
    return baseline[name] - point[name]


def recommend(points, *, max_cost=MAX_MATCHING_COST, min_gain=MIN_GAIN):
    """The measured defence of one descriptor that leaks least for a matching cost of at most ``max_cost``.

    Parameters
    ----------
    points : list of dict
        :func:`summarise_defences` of one descriptor, its baseline included.
    max_cost : float
        Largest drop of mean matching accuracy at 3 px and of homography
        accuracy, from the baseline's, that a recommendation may cost.
    min_gain : float
        Smallest fall of the leakage correlation or of the share of text lines
        read that makes a defence worth recommending.

    Returns
    -------
    dict or None
        ``point`` (the recommended one, or None when no defence within the
        cost lowers the leakage by ``min_gain``), ``baseline``, ``cost`` (its
        drop of matching accuracy at 3 px), ``rule`` and ``text`` (the advice,
        a sentence with the numbers); None without a baseline or a defence
        measured.

    Examples
    --------
    >>> base = {"defence": "none", "label": "no defence", "correlation": 0.9, "matching_accuracy_3px": 0.9,
    ...         "homography_accuracy": 1.0, "text_share": None}
    >>> weak = {**base, "defence": "rr", "label": "rr eps=4", "correlation": 0.88, "matching_accuracy_3px": 0.89}
    >>> good = {**base, "defence": "keep-bits", "label": "keep-bits fraction=0.5", "correlation": 0.7,
    ...         "matching_accuracy_3px": 0.85}
    >>> costly = {**weak, "label": "rr eps=1", "correlation": 0.5, "matching_accuracy_3px": 0.4}
    >>> recommend([base, weak, good, costly])["point"]["label"]
    'keep-bits fraction=0.5'
    >>> recommend([base, weak, costly])["point"] is None
    True
    """
    baseline = next((p for p in points if p["defence"] == NONE), None)
    defended = [p for p in points if p["defence"] != NONE and p["correlation"] is not None]
    if baseline is None or not defended:
        return None
    rule = (f"the lowest leakage among the defences that cost at most {max_cost:.2f} of matching accuracy at 3 px "
            f"and of homography accuracy, if it lowers the correlation or the share of text lines read by at "
            f"least {min_gain:.2f}")
    affordable = [p for p in defended
                  if (_cost(p, baseline, "matching_accuracy_3px") or 0.0) <= max_cost
                  and (_cost(p, baseline, "homography_accuracy") or 0.0) <= max_cost]
    best = min(affordable, key=lambda p: (p["correlation"], p.get("text_share") or 0.0), default=None)

    def gain(point):
        text = (baseline.get("text_share") or 0.0) - (point.get("text_share") or 0.0)
        return max(baseline["correlation"] - point["correlation"], text)

    if best is None or gain(best) < min_gain:
        cheapest = min(defended, key=lambda p: (_cost(p, baseline, "matching_accuracy_3px") or 0.0, p["correlation"]))
        strongest = min(defended, key=lambda p: p["correlation"])
        text = (f"no measured defence lowers the leakage by {min_gain:.2f} within {max_cost:.2f} of matching "
                f"accuracy: the cheapest, {cheapest['label']}, leaves a correlation of {cheapest['correlation']:.2f} "
                f"(from {baseline['correlation']:.2f}); the strongest, {strongest['label']}, reaches "
                f"{strongest['correlation']:.2f} for {_cost(strongest, baseline, 'matching_accuracy_3px'):.2f} of "
                f"matching accuracy at 3 px")
        return {"point": None, "baseline": baseline, "cost": None, "rule": rule, "text": text}
    cost = _cost(best, baseline, "matching_accuracy_3px")
    text = (f"{best['label']}: correlation {baseline['correlation']:.2f} → {best['correlation']:.2f}"
            + (f", text lines read {baseline['text_share']:.0%} → {best['text_share']:.0%}"
               if best.get("text_share") is not None and baseline.get("text_share") is not None else "")
            + f", for {cost:.2f} of matching accuracy at 3 px ({baseline['matching_accuracy_3px']:.2f} → "
              f"{best['matching_accuracy_3px']:.2f})")
    return {"point": best, "baseline": baseline, "cost": cost, "rule": rule, "text": text}


def table_markdown(points):
    """The points as a Markdown table (one line each).

    Examples
    --------
    >>> print(table_markdown([]).splitlines()[0])
    | descriptor | defence | MMA@1 | MMA@3 | MMA@5 | homography | r aware | r naive | leak r | text lines | keypoints |
    """
    lines = ["| descriptor | defence | MMA@1 | MMA@3 | MMA@5 | homography | r aware | r naive | leak r | text lines "
             "| keypoints |", "|---|---|---|---|---|---|---|---|---|---|---|"]

    def cell(value, digits=3):
        return "-" if value is None else f"{value:.{digits}f}"

    for p in points:
        text = "-" if p["lines_total"] is None else f"{p['lines_read']}/{p['lines_total']}"
        lines.append(f"| {p['descriptor']} | {p['label']} | {cell(p['matching_accuracy_1px'])} | "
                     f"{cell(p['matching_accuracy_3px'])} | {cell(p['matching_accuracy_5px'])} | "
                     f"{cell(p['homography_accuracy'])} | {cell(p['correlation_aware'])} | "
                     f"{cell(p['correlation_naive'])} | {cell(p['correlation'])} | {text} | "
                     f"{cell(p['keypoints'], 0)} |")
    return "\n".join(lines)
