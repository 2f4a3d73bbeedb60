"""Balanced option orders: the gold answer sits at every letter equally often (+-1) within a task and each stratum,
and replicate seeds form Latin squares, so over n seeds an item shows every option at every position once.

Option-order seed r (0 <= r < MAX_ORDERS) is order replicate r. An item with n options reads it as block
b = r // n, row r % n. Its presented order is a rotation of the block's base order: block 0's is the canonical order
(so block 0 shows the cyclic rotations of the canonical list, the orders of seeds 0, 1, 2 before replicates), block
b >= 1's the b-th of a fixed enumeration of the (n-1)! cyclic classes of orders (each written starting with the
gold option 0: identity first, then lexicographic; cycling when b exceeds them; with 2 options every block is block
0's). The rotation is the one that puts the gold option at the item's gold position, and within a block an item's
rows take distinct gold positions, so each block is a Latin square: every canonical option at every position
exactly once. A greedy model that answers one order one way thus still gives new answers after the first block.

Gold positions: items are grouped by (stratum, option count), strata being a task's reported sub-types (one
stratum when it has none), and ranked within a group by a stable hash of their uid; the gold position cycles
through the letters, position = (rank + start) mod n, so a group is balanced for any start. Each group's start is
chosen per seed, strata by name and then increasing n, among the starts its earlier rows of the block have not
used: the one whose left-over items best even out the letter counts accumulated so far, over the whole task and
over its own stratum (the start minimising the worse of the two imbalances, then the task's, then the stratum's;
ties go to the seed's rotation). With one option count per task this is the rule before replicates (seed 0..2
orders unchanged) and the constraint never binds. With mixed counts (egma-math, theory-of-mind,
same-different-selection) the rule before replicates let seeds 0..n-1 repeat a gold position (real sample: 122 of
201 egma-math items over seeds 0-2), so their seeds 1 and 2 changed; seed 0 is unchanged everywhere. A model that
always answers one letter stays within one item of chance on the whole task and each stratum for seeds 0..2
(tests/test_balance.py checks it on the real sample and the synthetic release, and measures the bound over every
seed up to MAX_ORDERS, where a forced last row of a block can leave a mixed-count task up to that bound off).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

from levante_tasks.schema.seeds import DEFAULT_SEEDS as DEFAULT_SEEDS  # the seeds, also here: callers ask options
from levante_tasks.schema.seeds import MAX_ORDERS


def stable_hash(text: str, salt: str = "") -> str:
    """A hex digest independent of Python's hash randomisation (orders must be identical across runs)."""
    return hashlib.sha256(f"{salt}|{text}".encode()).hexdigest()


def check_seed(seed: int) -> None:
    """ValueError unless `seed` is an option-order seed (an int, 0 <= seed < MAX_ORDERS)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < MAX_ORDERS:
        raise ValueError(f"option-order seed {seed!r} is not an int in 0..{MAX_ORDERS - 1}")


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


def _stratum_starts(overall: dict[int, float], sizes: list[tuple[int, int]], seed: int,
                    allowed: list[list[int]]) -> tuple[int, ...]:
    """Cycle starts of one stratum's option-count groups ((n, size) pairs), each among its `allowed` starts: the
    combination whose left-over items leave the worse of the whole set's and the stratum's letter imbalance smallest
    (then the set's, then the stratum's; ties go to the seed's rotation)."""
    def badness(starts: tuple[int, ...]) -> tuple[float, float, float, tuple[int, ...]]:
        within: dict[int, float] = {}
        for (n, size), start in zip(sizes, starts, strict=True):
            within = _group_errors(within, n, size, start)
        whole = _worst({pos: overall.get(pos, 0.0) + within.get(pos, 0.0) for pos in {*overall, *within}})
        return max(whole, _worst(within)), whole, _worst(within), tuple((s - seed) % n for (n, _), s in
                                                                         zip(sizes, starts, strict=True))
    return min(itertools.product(*allowed), key=badness)


def _group_starts(layout: list[tuple[str, list[tuple[int, int]]]], seed: int) -> dict[tuple[str, int], int]:
    """(stratum, n) -> cycle start at `seed` of each group of `layout` ((stratum, its (n, size) groups) in order),
    replaying the seeds since the last one where every group's block begins (a multiple of the option counts' lcm),
    since a group's start must differ from its starts at the earlier rows of its block."""
    counts = [n for _, sizes in layout for n, _ in sizes]
    first = seed - seed % math.lcm(*counts) if counts else seed
    history: dict[tuple[str, int], list[int]] = defaultdict(list)  # start at seeds first, first + 1, ...
    for current in range(first, seed + 1):
        overall: dict[int, float] = {}
        for stratum, sizes in layout:
            used = [history[stratum, n][current - current % n - first:] for n, _ in sizes]
            allowed = [[s for s in range(n) if s not in taken] for (n, _), taken in zip(sizes, used, strict=True)]
            for (n, size), start in zip(sizes, _stratum_starts(overall, sizes, current, allowed), strict=True):
                overall = _group_errors(overall, n, size, start)
                history[stratum, n].append(start)
    return {group: starts[-1] for group, starts in history.items()}


def gold_positions(items: Iterable[tuple[str, int]], seed: int,
                   strata: Mapping[str, str] | None = None) -> dict[str, int]:
    """Map item_uid -> presented position of the gold answer at option-order `seed` (the module docstring's rule).

    `strata` (item_uid -> stratum, e.g. a reported sub-type) balances each stratum and the whole set at once.
    """
    check_seed(seed)
    strata = strata or {}
    groups: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for uid, n_options in items:
        groups[strata.get(uid, "")][n_options].append(uid)
    ranked = {stratum: {n: sorted(uids, key=stable_hash) for n, uids in sorted(groups[stratum].items())}
              for stratum in sorted(groups)}
    layout = [(stratum, [(n, len(uids)) for n, uids in by_n.items() if n >= 2]) for stratum, by_n in ranked.items()]
    starts = _group_starts(layout, seed)
    return {uid: (rank + starts[stratum, n]) % n if n >= 2 else 0
            for stratum, by_n in ranked.items() for n, uids in by_n.items() for rank, uid in enumerate(uids)}


def base_order(n_options: int, block: int) -> tuple[int, ...]:
    """The order whose rotations block `block` shows: the block-th cyclic class of orders of n_options options
    (written from the gold option 0; identity first, then lexicographic, cycling over the (n-1)! classes)."""
    index = block % math.factorial(max(n_options - 1, 0))
    return (0, *next(itertools.islice(itertools.permutations(range(1, n_options)), index, None)))


def presented_order(n_options: int, gold_position: int, seed: int) -> list[int]:
    """Canonical index shown at each position at option-order `seed`: the rotation of the seed's block's base order
    that puts the gold option (index 0) at gold_position (block 0: the rotation of [0..n-1])."""
    if n_options < 2:
        return list(range(n_options))
    base = base_order(n_options, seed // n_options)
    return [base[(p - gold_position) % n_options] for p in range(n_options)]


def presented_orders(items: Iterable[tuple[str, int]], seed: int,
                     strata: Mapping[str, str] | None = None) -> dict[str, list[int]]:
    """Map item_uid -> presented order at option-order `seed` (gold_positions, then presented_order)."""
    items = list(items)
    positions = gold_positions(items, seed, strata)
    return {uid: presented_order(n_options, positions[uid], seed) for uid, n_options in items}
