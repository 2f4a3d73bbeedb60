"""Is a model's response distribution closer to the children's than a uniform model's? A permutation test.

Null hypothesis: within every item the model's option scores are exchangeable across the options (they carry
no information about which options children choose): a uniform model, random scores, a random choice or one
fixed presented position under shuffled presentation all satisfy it. Statistic: the derivative at beta = 0 of
the count-weighted log-likelihood of the children's responses under softmax(beta * scores),
S = sum_ik m_ik (s_ik - mean_k s_ik) (m = children's counts pooled over the item's cells), i.e. the direction in
which any beta > 0 moves the count-weighted KL away from the uniform model's. Its null distribution comes from
permuting each item's options (the same permutations for every model, seeded); the p-value is
(1 + #{S_perm >= S}) / (1 + n_perm), exact at any sample size because items, not children, are resampled.
An option scored -inf among finite scores counts as the item's lowest finite score here.
"""

from __future__ import annotations

import numpy as np

PERM_CHUNK_ELEMENTS = 4_000_000  # permutation x item x option values held at once
TIE = 1e-9  # relative: a permuted S this close to the observed one counts as reaching it (rounding)


def centred_scores(scores: np.ndarray, usable: np.ndarray, n_options: np.ndarray) -> np.ndarray:
    """Units x items x K scores minus their item mean over the item's options; 0 for unusable items and padding.

    `scores` hold -inf as padding beyond an item's option count (`score_array`); -inf inside it becomes the
    item's lowest finite score.
    """
    valid = np.arange(scores.shape[-1])[None, None, :] < n_options[None, :, None]
    finite = np.isfinite(scores) & valid
    low = np.where(finite, scores, np.inf).min(axis=-1, keepdims=True)
    filled = np.where(valid, np.where(finite, scores, low), 0.0)
    filled = np.where(np.isfinite(filled), filled, 0.0)
    mean = filled.sum(axis=-1, keepdims=True) / np.maximum(n_options, 1)[None, :, None]
    return np.where(valid & usable[:, :, None], filled - mean, 0.0)


def permutation_test(
    m: np.ndarray, centred: np.ndarray, n_options: np.ndarray, n_perm: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(S, one-sided p-value) per unit; `m` is items x K counts, `centred` units x items x K (`centred_scores`)."""
    observed = np.einsum("ik,uik->u", m, centred)
    if n_perm < 1:
        return observed, np.full(len(observed), np.nan)
    rng = np.random.default_rng(seed)
    kmax = m.shape[1]
    pad = np.arange(kmax)[None, :] >= n_options[:, None]
    reached = np.zeros(len(observed))
    chunk = max(1, PERM_CHUNK_ELEMENTS // max(1, m.size))
    tolerance = TIE * np.einsum("ik,uik->u", m, np.abs(centred))
    flat = centred.reshape(len(centred), -1).T  # (item, option) x units
    for start in range(0, n_perm, chunk):
        keys = rng.random((min(chunk, n_perm - start), *m.shape))
        keys[:, pad] = np.inf  # padding stays last: only an item's own options are permuted
        permuted = np.take_along_axis(np.broadcast_to(m, keys.shape), np.argsort(keys, axis=-1), axis=-1)
        # a matrix product (BLAS; 5x faster than einsum's loops with 100 units): its rounding differs from the
        # observed S's by ~1e-16 relative, far inside TIE
        stats = permuted.reshape(len(permuted), -1) @ flat
        reached += (stats >= observed[None, :] - tolerance[None, :]).sum(axis=0)
    return observed, (1.0 + reached) / (1.0 + n_perm)
