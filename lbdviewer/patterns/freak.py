"""FREAK: the retinal pattern of Alahi, Ortiz and Vandergheynst.

43 receptive fields on 8 concentric rings (6 fields on each of the 7 outer
rings, one at the centre); odd rings are turned by pi/6. With ``R = 2/3``,
``r = 2/24`` and ``u = (R - r) / 21`` the ring radii are ``R, R - 6u,
R - 11u, R - 15u, R - 18u, R - 20u, r, 0`` and each field's sigma is half its
ring radius (``r / 2`` at the centre). The fields are box means (FREAK reads
them from an integral image; the paper's C++ did the same).

Three pair selections:

- ``"freak"``: pairs learned the way FREAK learned them (most informative and
  least correlated first, on natural image patches; see
  ``scripts/learn_freak_pairs.py``). The first ``m`` of the learned order.
- ``"ra-freak"``: ``m`` pairs drawn at random among the 903.
- ``"ex-freak"``: all 903 pairs ``(i, j)``, ``i > j``.
"""

from __future__ import annotations

from importlib import resources

import numpy as np

from lbdviewer.patterns.base import Pattern, check_m, check_patch_size, seed_for_metadata

N_FIELDS = 43
N_PAIRS = N_FIELDS * (N_FIELDS - 1) // 2
BIG_R = 2.0 / 3.0
SMALL_R = 2.0 / 24.0
RING_POINTS = (6, 6, 6, 6, 6, 6, 6, 1)


def retina_unit():
    """The 43 FREAK fields in units where the outer ring has radius 2/3.

    Returns
    -------
    centers : ndarray, shape (43, 2)
        Field centres ``(x, y)``, outer ring first, centre last.
    sigmas : ndarray, shape (43,)

    Examples
    --------
    >>> c, s = retina_unit()
    >>> c.shape, float(np.hypot(*c[0])), float(s[0])  # doctest: +ELLIPSIS
    ((43, 2), 0.666..., 0.333...)
    """
    u = (BIG_R - SMALL_R) / 21.0
    radii = (BIG_R, BIG_R - 6 * u, BIG_R - 11 * u, BIG_R - 15 * u, BIG_R - 18 * u, BIG_R - 20 * u, SMALL_R, 0.0)
    centers, sigmas = [], []
    for ring, (radius, count) in enumerate(zip(radii, RING_POINTS)):
        turn = np.pi / 6 if ring % 2 else 0.0
        angles = turn + 2 * np.pi * np.arange(count) / count
        centers.append(np.stack([radius * np.cos(angles), radius * np.sin(angles)], axis=1))
        sigmas.append(np.full(count, (radius if radius > 0 else SMALL_R) / 2.0))
    return np.concatenate(centers), np.concatenate(sigmas)


def all_pairs():
    """All 903 field pairs ``(i, j)`` with ``i > j``, in row order.

    Examples
    --------
    >>> all_pairs()[:3].tolist()
    [[1, 0], [2, 0], [2, 1]]
    """
    i, j = np.tril_indices(N_FIELDS, k=-1)
    return np.stack([i, j], axis=1)


def retina_pattern(patch_size, pairs, *, name, params=()):
    """FREAK fields scaled so the outer ring plus its sigma fits the patch.

    The unit pattern reaches ``R + R/2 = 1``; it is scaled by ``(P - 1) / 2``
    about the patch centre, and each box has half-width sigma.
    """
    patch_size = check_patch_size(patch_size)
    centers, sigmas = retina_unit()
    scale = (patch_size - 1) / 2.0
    middle = (patch_size - 1) / 2.0
    return Pattern(
        name=name,
        patch_size=patch_size,
        centers=middle + scale * centers,
        sigmas=scale * sigmas,
        radii=scale * sigmas,
        pairs=pairs,
        kernel="box",
        params=tuple(params),
    )


def learned_pair_order():
    """All 903 pairs in the learned order shipped with lbdviewer.

    The file ``lbdviewer/patterns/data/freak_pair_order.npy`` is written by
    ``scripts/learn_freak_pairs.py``.
    """
    with resources.files("lbdviewer.patterns.data").joinpath("freak_pair_order.npy").open("rb") as handle:
        order = np.load(handle, allow_pickle=False)
    return order


def freak_pattern(patch_size=32, m=512):
    """FREAK with the learned pair order (the first ``m`` pairs).

    Examples
    --------
    >>> p = freak_pattern(32)
    >>> p.m, p.n_fields, p.kernel
    (512, 43, 'box')
    """
    m = check_m(m, N_PAIRS, "FREAK has 903 field pairs")
    return retina_pattern(patch_size, learned_pair_order()[:m], name="freak")


def ra_freak_pattern(patch_size=32, m=512, *, rng=0):
    """RA-FREAK: ``m`` distinct pairs drawn at random among the 903.

    Examples
    --------
    >>> ra_freak_pattern(32, 100, rng=3).m
    100
    """
    m = check_m(m, N_PAIRS, "FREAK has 903 field pairs")
    seed = seed_for_metadata(rng)
    chosen = np.random.default_rng(rng).choice(N_PAIRS, size=m, replace=False)
    return retina_pattern(patch_size, all_pairs()[chosen], name="ra-freak", params=(("rng", seed),))


def ex_freak_pattern(patch_size=32):
    """EX-FREAK: all 903 pairs.

    Examples
    --------
    >>> ex_freak_pattern(32).m
    903
    """
    return retina_pattern(patch_size, all_pairs(), name="ex-freak")


def learn_pair_order(field_means):
    """Order the 903 pairs as FREAK learned its pattern.

    FREAK keeps the pairs whose bits are the most informative (mean closest to
    1/2 over training keypoints) and the least correlated with those already
    kept. Greedily: sort pairs by ``|mean - 1/2|``; repeatedly scan that list
    and take each pair whose absolute correlation with every taken pair is
    below a threshold, raising the threshold by 0.05 after each scan until all
    pairs are taken. Pairs whose bit never changes come last.

    Parameters
    ----------
    field_means : ndarray, shape (K, 43)
        The 43 field means of ``K`` training patches.

    Returns
    -------
    ndarray of int, shape (903, 2)
        Pairs, most useful first.

    Examples
    --------
    >>> means = np.random.default_rng(0).random((200, 43))
    >>> learn_pair_order(means).shape
    (903, 2)
    """
    pairs = all_pairs()
    bits = (field_means[:, pairs[:, 0]] > field_means[:, pairs[:, 1]]).astype(np.float64)
    balance = np.abs(bits.mean(axis=0) - 0.5)
    centred = bits - bits.mean(axis=0)
    norms = np.linalg.norm(centred, axis=0)
    constant = norms == 0
    norms[constant] = 1.0
    correlation = np.abs((centred.T @ centred) / np.outer(norms, norms))
    # A bit that never changes carries nothing: it goes last.
    correlation[constant, :] = 1.0
    correlation[:, constant] = 1.0
    candidates = list(np.argsort(balance, kind="stable"))
    taken = []
    threshold = 0.2
    while candidates:
        remaining = []
        for index in candidates:
            if not taken or correlation[index, taken].max() < threshold:
                taken.append(index)
            else:
                remaining.append(index)
        candidates = remaining
        threshold += 0.05
    return pairs[np.array(taken)]
