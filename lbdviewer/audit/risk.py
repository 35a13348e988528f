"""A risk level per descriptor, by a rule the report states, and which descriptor leaks most.

The levels read the summary of one descriptor's rows (:func:`lbdviewer.audit.report.summarise`):

``high``
    the text of some input whose original holds legible text is read back
    from its reconstruction, or the median correlation over the covered
    pixels is at least :data:`HIGH_CORRELATION` (a person recognises the
    scene, faces and objects in such reconstructions);
``medium``
    the median correlation is at least :data:`MEDIUM_CORRELATION` (layout
    and large shapes are recognisable);
``low``
    otherwise.
"""

from __future__ import annotations

__all__ = ["HIGH_CORRELATION", "LEVELS", "MEDIUM_CORRELATION", "RULE", "leak_ranking", "risk"]

HIGH_CORRELATION = 0.8
MEDIUM_CORRELATION = 0.5
LEVELS = ("high", "medium", "low")
RULE = (f"high: the text of some document is read back from its reconstruction, or the median correlation over "
        f"covered pixels is at least {HIGH_CORRELATION} (scene, faces and objects recognisable); medium: median "
        f"correlation at least {MEDIUM_CORRELATION} (layout and large shapes recognisable); low: otherwise.")


def risk(item):
    """``(level, reason)`` of one descriptor's summary (see the module notes).

    Examples
    --------
    >>> risk({"legible": 2, "with_text": 2, "median_correlation": 0.62})
    ('high', 'text read back from 2 of 2 documents')
    >>> risk({"legible": 0, "with_text": 0, "median_correlation": 0.62})
    ('medium', 'median correlation 0.62')
    >>> risk({"legible": 0, "with_text": 1, "median_correlation": None})
    ('low', 'no text read back (of 1 document); no correlation measured')
    """
    correlation = item.get("median_correlation")
    legible, with_text = item.get("legible") or 0, item.get("with_text") or 0
    documents = f"{with_text} document{'s' if with_text != 1 else ''}"
    measured = "no correlation measured" if correlation is None else f"median correlation {correlation:.2f}"
    if legible:
        return "high", f"text read back from {legible} of {documents}"
    if correlation is not None and correlation >= HIGH_CORRELATION:
        return "high", measured
    if correlation is not None and correlation >= MEDIUM_CORRELATION:
        return "medium", measured
    return "low", (f"no text read back (of {documents}); " if with_text else "") + measured


def leak_ranking(summary):
    """The descriptors' summaries, the one that leaks most first: by level, share of text read, median correlation.

    Examples
    --------
    >>> items = [{"descriptor": "a", "legible": 0, "with_text": 2, "median_correlation": 0.9},
    ...          {"descriptor": "b", "legible": 2, "with_text": 2, "median_correlation": 0.7}]
    >>> [item["descriptor"] for item in leak_ranking(items)]
    ['b', 'a']
    """
    def key(item):
        share = (item.get("legible") or 0) / item["with_text"] if item.get("with_text") else 0.0
        correlation = item.get("median_correlation")
        return LEVELS.index(risk(item)[0]), -share, -(correlation if correlation is not None else -2.0)

    return sorted(summary, key=key)
