"""A model's response distribution from option-order replicates, and KL(human || model) with bootstrap intervals.

A model without option scores (a chat model) is asked each item under balanced presented orders: replicate r is
option-order seed r; for an item with n options, seeds b*n .. b*n + n - 1 form block b, a Latin square (every
canonical option at every position once). Conventions, all stated in comparison.json and docs/comparison.md:

- Whole blocks only, distinct orders only: R = the seeds present contiguously from 0 for the item; the first
  min(n * floor(R / n), n!) of them count. A partial block (e.g. seeds 6, 7 of a 3-option item run with K = 8)
  would let position bias in, and an item has only n! distinct orders (2 options: 2; 3: 6; 4: 24; seeds n! ..
  repeat the orders of seeds 0 .., block by block, in `core.options`), whose repeats a greedy model answers
  again: counting them would be false precision. Both are left out (NOT_COUNTED). Several records of one seed
  (temperature samples) all count.
- q_k = (c_k + alpha) / (parsed + n * alpha): c_k the counted answers naming canonical option k; unparsed answers
  are counted apart (the unparsed share), never as an option (an item with no parsed answer has no q: left
  out); alpha = 0.5 (the Jeffreys prior).
- KL(human || q) per (item, ability bin) cell with the children's p, natural log, p = 0 terms add 0, q == 0 replaced
  by KL_EPSILON (only reachable with alpha = 0); cells weighted by their children's count n (`distributions.Cells`).
  No beta is fitted: q is a distribution already.
- The point estimate `kl` is bias-corrected: kl = max(0, 2 kl_plugin - the mean of the replicate-only bootstrap
  KLs), kl_plugin the KL of q itself (reported too). The plug-in KL of a q estimated from K answers is biased
  upward (+0.13 nats at K = 4 in benchmarks/order_recovery.py); the bootstrap estimate of that bias removes most
  of it (a delete-one-replicate jackknife removed less and had a larger RMSE there). The basic intervals are
  centred the same way (their midpoint is 2 kl_plugin - the percentiles' midpoint), so they hold `kl`.
- Intervals: bootstrap, n_boot draws, seeded. Each draw redraws every item's parsed replicates from its estimated
  q (a multinomial of the same size) and re-estimates q and the KL; `kl_ci_low/high` is two-stage (items resampled
  first, then each drawn item's replicates), `kl_replicate_ci_low/high` over replicates only (items fixed). Both
  are basic intervals (2 kl - upper, 2 kl - lower percentile): the KL of a re-estimated q is biased upward, and
  the percentile interval would add that bias to the estimator's own (it then missed the exact KL in simulation,
  even excluded the estimate); redrawing from q rather than from the raw answers keeps the bootstrap's truth
  at the estimate (raw shares have zeros). `kl_replicate_halfwidth`: half the replicate-only interval's width,
  the noise more replicates remove; the stopping rule (`orders_enough`) uses it, on prefixes that count every
  item (with mixed option counts, K/4 may hold no whole block of the larger items).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from levante_tasks.compare.conventions import KL_EPSILON, ORDERS_TOLERANCE
from levante_tasks.compare.distributions import Cells

ALPHA = 0.5  # Dirichlet prior per option: Jeffreys
UNPARSED = -1  # a counted replicate whose answer named no option
NOT_COUNTED = -2  # no record, or a record outside the item's whole blocks of distinct orders
TOLERANCE = ORDERS_TOLERANCE  # default stopping tolerance on kl_replicate_halfwidth (nats)
BOOT_CHUNK_ELEMENTS = 2_000_000  # draw x item x option values held at once
ESTIMATE_KEYS = ("kl", "kl_plugin", "kl_ci_low", "kl_ci_high", "kl_replicate_ci_low", "kl_replicate_ci_high",
                 "kl_replicate_halfwidth", "n_items", "replicates", "replicates_min", "replicates_max",
                 "unparsed_share")


def records_per_seed(frame: pd.DataFrame) -> int:
    """The most records any (item_uid, seed) has (1 without temperature samples): the choices' slots per seed."""
    if frame.empty:
        return 1
    return int(frame.groupby(["item_uid", "seed"], sort=False).size().max())


def choices_from_records(frame: pd.DataFrame) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(sorted item uids, choices items x R, n_options per item) from record rows.

    `frame` has item_uid, seed (int >= 0), choice_index (canonical index; None/NaN = unparsed) and n_options.
    Columns are seed-major with `records_per_seed(frame)` = S slots per seed: column seed * S + s holds the s-th
    record of that seed (file order), so R = S * (largest seed + 1). Entries: the canonical choice, UNPARSED, or
    NOT_COUNTED (no record in that slot, or a seed outside the item's whole blocks of distinct orders: only the
    first `counted_orders(n, R_i)` seeds count, R_i the seeds present contiguously from 0 for the item).
    Raises ValueError for a choice outside 0 .. n_options - 1 or an item with two option counts.
    """
    if frame.empty:
        return [], np.full((0, 0), NOT_COUNTED, dtype=int), np.zeros(0, dtype=int)
    uid_code, uids = pd.factorize(frame["item_uid"].astype(str), sort=True)
    seed = frame["seed"].to_numpy(int)
    n_of_row = frame["n_options"].to_numpy(int)
    n_options = np.zeros(len(uids), dtype=int)
    n_options[uid_code] = n_of_row
    if (n_options[uid_code] != n_of_row).any():
        bad = uids[uid_code[n_options[uid_code] != n_of_row][0]]
        raise ValueError(f"item {bad}: records give more than one option count")
    raw = pd.to_numeric(frame["choice_index"], errors="coerce").to_numpy(float)
    choice = np.where(np.isnan(raw), UNPARSED, np.nan_to_num(raw, nan=0.0)).astype(int)
    outside = (~np.isnan(raw)) & ((raw < 0) | (raw >= n_of_row) | (raw != np.round(raw)))
    if outside.any():
        row = int(np.flatnonzero(outside)[0])
        raise ValueError(f"item {uids[uid_code[row]]}: choice_index {raw[row]:g} is not an option of "
                         f"{n_of_row[row]}")
    per_seed = records_per_seed(frame)
    n_seeds = int(seed.max()) + 1
    present = np.zeros((len(uids), n_seeds + 1), dtype=bool)
    present[uid_code, seed] = True
    contiguous = np.argmin(present, axis=1)  # first absent seed = seeds present from 0
    counted_seeds = counted_orders(n_options, contiguous)
    slot = frame.assign(_u=uid_code, _s=seed).groupby(["_u", "_s"], sort=False).cumcount().to_numpy()
    choices = np.full((len(uids), n_seeds * per_seed), NOT_COUNTED, dtype=int)
    keep = seed < counted_seeds[uid_code]
    choices[uid_code[keep], seed[keep] * per_seed + slot[keep]] = choice[keep]
    return list(uids), choices, n_options


def distinct_orders(n_options: np.ndarray) -> np.ndarray:
    """n! per item: how many distinct presented orders an item with n options has (seeds beyond repeat them)."""
    return np.array([math.factorial(int(n)) for n in np.atleast_1d(n_options)], dtype=int)


def counted_orders(n_options: np.ndarray, seeds: np.ndarray | int) -> np.ndarray:
    """Seeds counted per item out of the first `seeds`: whole blocks of n, at most the n! distinct orders (n! is
    a whole number of blocks)."""
    n = np.asarray(n_options)
    return np.minimum(n * (np.asarray(seeds) // np.maximum(n, 1)), distinct_orders(n))


def align_choices(cells: Cells, uids: list[str], choices: np.ndarray,
                  n_options: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(choices, n_options) reordered to the cells' items; an item without records gets NOT_COUNTED and 0."""
    out = np.full((len(cells.items), choices.shape[1]), NOT_COUNTED, dtype=int)
    options = np.zeros(len(cells.items), dtype=int)
    position = pd.Index(uids, dtype=object).get_indexer(pd.Index(cells.items, dtype=object))
    found = position >= 0
    out[found] = choices[position[found]]
    options[found] = np.asarray(n_options)[position[found]]
    return out, options


def dirichlet_q(counts: np.ndarray, n_options: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """q = (c + alpha) / (parsed + n * alpha) over the last axis; 0 beyond an item's n options.

    `counts` is (..., items, K) with zeros as padding; `n_options` (items,) broadcasts over the leading axes.
    """
    valid = np.arange(counts.shape[-1]) < np.asarray(n_options)[..., None]
    smoothed = counts + alpha * valid
    total = smoothed.sum(axis=-1, keepdims=True)
    return smoothed / np.where(total > 0, total, 1.0)


def log_q(q: np.ndarray) -> np.ndarray:
    """ln q with the KL epsilon rule (q == 0 -> KL_EPSILON), so padding (p = 0 there) adds a finite 0 term."""
    return np.log(np.where(q == 0, KL_EPSILON, q))


def item_terms(cells: Cells) -> tuple[np.ndarray, np.ndarray]:
    """Per item: (sum over its cells of n * sum_k p ln p, sum of n): with cells.m (= sum n p) they give the
    item's n-weighted KL sum for any q as a - sum_k m_k ln q_k."""
    a = np.bincount(cells.item, weights=cells.n * cells.plogp, minlength=len(cells.items))
    weight = np.bincount(cells.item, weights=cells.n, minlength=len(cells.items))
    return a, weight


def weighted_kl(cells: Cells, q: np.ndarray) -> float:
    """The n-weighted mean KL(human || q) over the cells, for a q per item (items x K, aligned to cells.items)."""
    a, weight = item_terms(cells)
    return float((a - (cells.m * log_q(q)).sum(axis=1)).sum() / weight.sum())


def _counts(choices: np.ndarray, kmax: int) -> np.ndarray:
    """Counts of each canonical option over the last axis: (..., R) choices -> (..., kmax)."""
    code = np.where(choices >= 0, choices, kmax).reshape(-1, choices.shape[-1])
    rows = np.repeat(np.arange(code.shape[0]), code.shape[1])
    flat = np.bincount(rows * (kmax + 1) + code.ravel(), minlength=code.shape[0] * (kmax + 1))
    return flat.reshape(*choices.shape[:-1], kmax + 1)[..., :kmax]


def _mean_kl(counts: np.ndarray, items: np.ndarray, n_options: np.ndarray, m: np.ndarray, a: np.ndarray,
             weight: np.ndarray, alpha: float) -> np.ndarray:
    """Weighted mean KL per draw: counts (draws, slots, K) of the items `items` (draws, slots)."""
    q = dirichlet_q(counts, n_options[items], alpha)
    item_sum = a[items] - np.einsum("dsk,dsk->ds", m[items], log_q(q))
    return item_sum.sum(axis=1) / weight[items].sum(axis=1)


def _bootstrap(q: np.ndarray, parsed: np.ndarray, cells_terms: tuple, n_options: np.ndarray, alpha: float,
               n_boot: int, rng: np.random.Generator, resample_items: bool) -> np.ndarray:
    """n_boot bootstrap mean KLs: each (drawn) item's parsed replicates redrawn from its estimated q (a
    multinomial draw of `parsed` answers), items resampled too when asked; each draw's q is re-estimated."""
    m, a, weight = cells_terms
    n_items, kmax = q.shape
    chunk = max(1, BOOT_CHUNK_ELEMENTS // max(1, n_items * kmax))
    out = []
    for start in range(0, n_boot, chunk):
        draws = min(chunk, n_boot - start)
        items = (rng.integers(0, n_items, (draws, n_items)) if resample_items
                 else np.broadcast_to(np.arange(n_items), (draws, n_items)))
        out.append(_mean_kl(_multinomial(rng, parsed[items], q[items]), items, n_options, m, a, weight, alpha))
    return np.concatenate(out)


def _multinomial(rng: np.random.Generator, size: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """Multinomial counts (..., K) of `size` draws with `shares` over the last axis, as K - 1 vectorised binomial
    draws (numpy's multinomial loops over rows in Python-visible time: 10x slower here)."""
    counts = np.zeros(shares.shape, dtype=np.int64)
    left = size.astype(np.int64)
    tail = np.cumsum(shares[..., ::-1], axis=-1)[..., ::-1]  # share of options k.. (exactly share_k at the last)
    with np.errstate(invalid="ignore", divide="ignore"):
        chance = np.clip(np.nan_to_num(shares / tail), 0.0, 1.0)
    for k in range(shares.shape[-1] - 1):
        counts[..., k] = rng.binomial(left, chance[..., k])
        left -= counts[..., k]
    counts[..., -1] = left
    return counts


def _basic_interval(estimate: float, draws: np.ndarray, level: float) -> tuple[float, float, float]:
    """(low, high, half-width) of the basic bootstrap interval: 2 estimate - the upper and lower percentiles of
    `draws`, low floored at 0 (KL >= 0). It subtracts the bootstrap's own bias, where the percentile interval
    would add the estimator's upward bias (Jensen: a noisier q has a larger KL) a second time."""
    lower, upper = np.percentile(draws, [50 * (1 - level), 100 - 50 * (1 - level)])
    return max(0.0, 2 * estimate - upper), float(2 * estimate - lower), float(upper - lower) / 2


def _answered_items(cells: Cells, choices: np.ndarray, n_options: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(answered, used) item masks: answered = counted replicates and the children's option count; used = answered
    with at least one parsed answer (an item answered only unparsably has no q: left out, not taken as uniform)."""
    answered = (choices != NOT_COUNTED).any(axis=1) & (np.asarray(n_options) == cells.n_options)
    return answered, answered & (choices >= 0).any(axis=1)


def replicate_estimate(
    cells: Cells,
    choices: np.ndarray,
    n_options: np.ndarray,
    *,
    alpha: float = ALPHA,
    n_boot: int,
    seed: int,
    level: float = 0.95,
    per_seed: int = 1,
) -> dict[str, float | int]:
    """Weighted mean KL(human || q) over the cells of the items with counted replicates, with its intervals: `kl`
    bias-corrected, `kl_plugin` the KL of q itself (module docstring).

    `choices` is items x R aligned to `cells.items` (`choices_from_records`, `align_choices`): the canonical
    choice, UNPARSED or NOT_COUNTED; `n_options` per item (the records'; items whose count differs from the
    children's are the caller's to drop). `per_seed` = records per seed (slots per seed in `choices`).
    Keys: kl, kl_ci_low/high (two-stage bootstrap), kl_replicate_halfwidth (replicates only), n_items,
    replicates (seeds spanned by `choices`), replicates_min/max (counted answers per used item: one with a parsed
    answer), unparsed_share (of the counted answers of every item with the children's option count, used or not).
    NaN / 0 (unparsed_share aside) when no item has a parsed counted replicate.
    """
    counted = (choices != NOT_COUNTED).sum(axis=1)
    answered, usable = _answered_items(cells, choices, n_options)
    used = np.flatnonzero(usable)
    out: dict[str, float | int] = dict.fromkeys(ESTIMATE_KEYS, float("nan"))
    out.update(n_items=int(len(used)), replicates=int(choices.shape[1] // max(1, per_seed)))
    if answered.any():
        out["unparsed_share"] = float((choices[answered] == UNPARSED).sum() / counted[answered].sum())
    if not len(used):
        out.update(replicates_min=0, replicates_max=0)
        return out
    a, weight = item_terms(cells)
    terms = (cells.m[used], a[used], weight[used])
    n_used = cells.n_options[used]
    sub = choices[used]
    counts = _counts(sub, cells.p.shape[1])
    plugin = float(_mean_kl(counts[None], np.arange(len(used))[None, :], n_used, *terms, alpha)[0])
    q = dirichlet_q(counts, n_used, alpha)
    rng = np.random.default_rng(seed)
    both = _bootstrap(q, counts.sum(axis=1), terms, n_used, alpha, n_boot, rng, resample_items=True)
    within = _bootstrap(q, counts.sum(axis=1), terms, n_used, alpha, n_boot, rng, resample_items=False)
    low, high, _ = _basic_interval(plugin, both, level)
    r_low, r_high, halfwidth = _basic_interval(plugin, within, level)
    out.update(
        kl=max(0.0, 2 * plugin - float(within.mean())), kl_plugin=plugin, kl_ci_low=low, kl_ci_high=high,
        kl_replicate_ci_low=r_low, kl_replicate_ci_high=r_high,
        kl_replicate_halfwidth=halfwidth,
        replicates_min=int(counted[used].min()), replicates_max=int(counted[used].max()),
    )
    return out


def replicate_q(cells: Cells, choices: np.ndarray, n_options: np.ndarray,
                alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """(q items x K, used items mask) from all counted replicates, aligned to `cells.items`; only used items are
    counted (an unused item may have more options than the cells' K, whose choices would spill into its
    neighbour's counts)."""
    used = _answered_items(cells, choices, n_options)[1]
    counted = np.where(used[:, None], choices, NOT_COUNTED)
    return dirichlet_q(_counts(counted, cells.p.shape[1]), cells.n_options, alpha), used


def prefix(choices: np.ndarray, n_options: np.ndarray, orders: int, per_seed: int = 1) -> np.ndarray:
    """The choices of seeds 0 .. orders - 1 only (the first orders * per_seed columns), whole blocks of distinct
    orders per item (`counted_orders(n, orders)` seeds counted)."""
    keep_seeds = counted_orders(n_options, orders)
    head = choices[:, : orders * max(1, per_seed)]
    column_seed = np.arange(head.shape[1]) // max(1, per_seed)
    return np.where(column_seed[None, :] < keep_seeds[:, None], head, NOT_COUNTED)


def readout_orders(orders: int) -> list[int]:
    """The replicate counts of the stopping readout: K/4, K/2 and K (floored, distinct, > 0)."""
    return sorted({orders // 4, orders // 2, orders} - {0})


def orders_enough(rows: list[dict[str, float | int]], tolerance: float = TOLERANCE) -> int | None:
    """The smallest `orders` among `rows` whose kl_replicate_halfwidth <= tolerance and that counts as many items
    as the row counting the most (a prefix too short for an item's whole block leaves that item out: its
    half-width says nothing of it), or None."""
    most = max((int(r["n_items"]) for r in rows), default=0)
    fine = [int(r["orders"]) for r in rows
            if r["n_items"] == most and r["kl_replicate_halfwidth"] <= tolerance]
    return min(fine) if fine else None


def by_orders(
    cells: Cells,
    choices: np.ndarray,
    n_options: np.ndarray,
    ks: list[int],
    tolerance: float = TOLERANCE,
    *,
    alpha: float = ALPHA,
    n_boot: int,
    seed: int,
    level: float = 0.95,
    per_seed: int = 1,
) -> dict[str, object]:
    """The estimate on the seed prefixes `ks` (whole blocks): {"rows": [{orders, **estimate}], "tolerance",
    "orders_enough"} (the smallest K in `ks` counting every item whose replicate half-width is <= tolerance,
    else None)."""
    rows = []
    for k in ks:
        estimate = replicate_estimate(cells, prefix(choices, n_options, k, per_seed), n_options, alpha=alpha,
                                      n_boot=n_boot, seed=seed, level=level, per_seed=per_seed)
        rows.append({"orders": int(k), **estimate})
    return {"rows": rows, "tolerance": tolerance, "orders_enough": orders_enough(rows, tolerance)}
