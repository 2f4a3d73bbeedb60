"""Balanced option orders: the gold answer sits at every letter equally often (+-1) within a task.

Items are grouped by option count and ranked within a group by a stable hash of their uid; the gold position
cycles through the letters, position = (rank + start) mod n. The start of the first group is the seed; each
later group (by increasing n) starts where its left-over items best even out the letter counts accumulated so
far (ties go to the seed's rotation), so a model that always answers one letter stays within one item of chance
on the whole task as well as within each group. The presented order is the cyclic rotation of the canonical list
that puts the gold option at its position, so seeds 0..n-1 together show every cyclic rotation of an item.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable

DEFAULT_SEEDS = (0, 1, 2)


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


def _badness(errors: dict[int, float], n_options: int, size: int, start: int, seed: int) -> tuple[float, int]:
    """Worst letter imbalance after the group (rounded so float noise cannot break ties), then seed distance."""
    worst = max(abs(v) for v in _group_errors(errors, n_options, size, start).values())
    return round(worst, 9), (start - seed) % n_options


def gold_positions(items: Iterable[tuple[str, int]], seed: int) -> dict[str, int]:
    """Map item_uid -> presented position of the gold answer (see the module docstring for the rule)."""
    groups: dict[int, list[str]] = defaultdict(list)
    for uid, n_options in items:
        groups[n_options].append(uid)
    positions: dict[str, int] = {}
    errors: dict[int, float] = {}
    for n_options in sorted(groups):
        uids = sorted(groups[n_options], key=stable_hash)
        if n_options < 2:
            positions.update((uid, 0) for uid in uids)
            continue

        size = len(uids)
        start = min(range(n_options), key=lambda s, n=n_options, e=errors: _badness(e, n, size, s, seed))
        errors = _group_errors(errors, n_options, len(uids), start)
        positions.update((uid, (rank + start) % n_options) for rank, uid in enumerate(uids))
    return positions


def presented_order(n_options: int, gold_position: int) -> list[int]:
    """Canonical index shown at each position: the rotation of [0..n-1] that puts index 0 at gold_position."""
    return [(p - gold_position) % n_options for p in range(n_options)]

