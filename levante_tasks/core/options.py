"""Balanced option orders: the gold answer sits at every letter equally often (+-1) within a task and each stratum.

Items are grouped by (stratum, option count), strata being a task's reported sub-types (one stratum when it has
none), and ranked within a group by a stable hash of their uid; the gold position cycles through the letters,
position = (rank + start) mod n. The start of the first group is the seed; each later group (strata by name,
then increasing n) starts where its left-over items best even out the letter counts accumulated so far, over
the whole task and over its own stratum: the start minimises the worse of the two imbalances (then the task's,
then the stratum's; ties go to the seed's rotation). So a model that always answers one letter stays within one
item of chance on the whole task as well as within each stratum and each group (a test checks it on the real
sample and the synthetic release for every seed and letter). The presented order is the cyclic rotation of the
canonical list that puts the gold option at its position, so seeds 0..n-1 together show every cyclic rotation of
an item.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping

DEFAULT_SEEDS = (0, 1, 2)
MAX_ORDERS = 32  # replicates (option-order seeds) 0 .. MAX_ORDERS - 1 of the distribution mode


def stable_hash(text: str, salt: str = "") -> str:
    """A hex digest independent of Python's hash randomisation (orders must be identical across runs)."""
    return hashlib.sha256(f"{salt}|{text}".encode()).hexdigest()


def _group_errors(errors: dict[int, float], n_options: int, size: int, start: int) -> dict[int, float]:
    """Letter count minus expected count after adding a group of `size` items whose cycle begins at `start`."""
    updated = dict(errors)
    extra = size % n_options
    for pos in range(n_options):
        count = size // n_options + (1 if (pos - start) % n_options < extra else 0)
        updated[pos] = updated.get(pos, 0.0) + count - size / n_options
    return updated


def _worst(errors: dict[int, float]) -> float:
    """Worst letter imbalance, rounded so float noise cannot break ties."""
    return round(max((abs(v) for v in errors.values()), default=0.0), 9)


def _stratum_starts(overall: dict[int, float], sizes: list[tuple[int, int]], seed: int) -> tuple[int, ...]:
    """Cycle starts of one stratum's option-count groups ((n, size) pairs): the combination whose left-over items
    leave the worse of the whole set's and the stratum's letter imbalance smallest (then the set's, then the
    stratum's; ties go to the seed's rotation)."""
    def badness(starts: tuple[int, ...]) -> tuple[float, float, float, tuple[int, ...]]:
        within: dict[int, float] = {}
        for (n, size), start in zip(sizes, starts, strict=True):
            within = _group_errors(within, n, size, start)
        whole = _worst({pos: overall.get(pos, 0.0) + within.get(pos, 0.0) for pos in {*overall, *within}})
        return max(whole, _worst(within)), whole, _worst(within), tuple((s - seed) % n for (n, _), s in
                                                                         zip(sizes, starts, strict=True))
    return min(itertools.product(*(range(n) for n, _ in sizes)), key=badness)


def gold_positions(items: Iterable[tuple[str, int]], seed: int,
                   strata: Mapping[str, str] | None = None) -> dict[str, int]:
    """Map item_uid -> presented position of the gold answer (see the module docstring for the rule).

    `strata` (item_uid -> stratum, e.g. a reported sub-type) balances each stratum and the whole set at once.
    """
    strata = strata or {}
    groups: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for uid, n_options in items:
        groups[strata.get(uid, "")][n_options].append(uid)
    positions: dict[str, int] = {}
    overall: dict[int, float] = {}
    for stratum in sorted(groups):
        by_n = {n: sorted(uids, key=stable_hash) for n, uids in sorted(groups[stratum].items())}
        positions.update((uid, 0) for n, uids in by_n.items() if n < 2 for uid in uids)
        sizes = [(n, len(uids)) for n, uids in by_n.items() if n >= 2]
        for (n, size), start in zip(sizes, _stratum_starts(overall, sizes, seed), strict=True):
            overall = _group_errors(overall, n, size, start)
            positions.update((uid, (rank + start) % n) for rank, uid in enumerate(by_n[n]))
    return positions


def presented_order(n_options: int, gold_position: int) -> list[int]:
    """Canonical index shown at each position: the rotation of [0..n-1] that puts index 0 at gold_position."""
    return [(p - gold_position) % n_options for p in range(n_options)]

