"""A scripted greedy black-box model with a known answer distribution q* and a known position bias.

Each item has a content preference c* (a distribution over its canonical options) and a position bias: with
probability `bias` (lambda) the model answers whatever option sits at its `favourite` presented position,
otherwise it picks a canonical option drawn from c*. The model is greedy: its answer is a deterministic function
of (item key, presented order, salt), two uniforms from a SHA-256 of them, so asking the same order twice gives
the same answer and new information comes only from new orders. Its true distribution q* is the share of each
canonical option over all n! presented orders, enumerated exactly (`true_distribution`), the quantity that
balanced option orders estimate. `scripted_item` derives c* from a hash of the key (a Dirichlet(1) draw), so the
fake OpenAI server (`fake_openai.black_box_reply`) and a test's in-process check give the same answers with no
shared table; the recovery study (benchmarks/order_recovery.py) sets c* itself.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BoxItem:
    """One item as the black box sees it: its key (what identifies it), c* over canonical options, the favourite
    presented position and the probability of answering it."""

    key: str
    preference: tuple[float, ...]
    favourite: int = 0
    bias: float = 0.0

    @property
    def n_options(self) -> int:
        """The item's option count."""
        return len(self.preference)


def _uniforms(*parts: object) -> tuple[float, float]:
    """Two independent uniforms in [0, 1) from a stable hash of the parts."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return (int.from_bytes(digest[:8], "big") / 2**64, int.from_bytes(digest[8:16], "big") / 2**64)


def answer(item: BoxItem, order: Sequence[int], salt: str = "") -> int:
    """The canonical index the black box chooses when shown `order` (presented position -> canonical index)."""
    if sorted(order) != list(range(item.n_options)):
        raise ValueError(f"order {list(order)} is not a permutation of {item.n_options} options")
    position_draw, content_draw = _uniforms(salt, item.key, ",".join(map(str, order)))
    if position_draw < item.bias:
        return int(order[item.favourite % item.n_options])
    cumulative = np.cumsum(item.preference)
    return int(min(np.searchsorted(cumulative, content_draw * cumulative[-1], side="right"), item.n_options - 1))


def true_distribution(item: BoxItem, salt: str = "") -> np.ndarray:
    """q*: the share of each canonical option among the answers to all n! presented orders (exact)."""
    counts = np.zeros(item.n_options)
    for order in itertools.permutations(range(item.n_options)):
        counts[answer(item, order, salt)] += 1
    return counts / math.factorial(item.n_options)


def scripted_item(key: str, n_options: int, *, favourite: int = 0, bias: float = 0.3) -> BoxItem:
    """An item whose c* is a Dirichlet(1) draw seeded by a hash of its key (normalised exponentials)."""
    draws = [-math.log(1.0 - _uniforms("preference", key, index)[0]) for index in range(n_options)]
    return BoxItem(key, tuple(d / sum(draws) for d in draws), favourite, bias)
