"""Balanced option orders: every letter gets the gold answer equally often, and fixed letters score chance."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from levante_tasks.core.options import DEFAULT_SEEDS, gold_positions, presented_order
from levante_tasks.schema.items import letters_for

group_sizes = st.dictionaries(st.integers(2, 5), st.integers(1, 40), min_size=1, max_size=4)


def _items(sizes: dict[int, int]) -> list[tuple[str, int]]:
    return [(f"item-{n}-{i}", n) for n, count in sizes.items() for i in range(count)]


@settings(max_examples=150, deadline=None)
@given(sizes=group_sizes, seed=st.integers(0, 5))
def test_each_option_count_group_is_balanced(sizes: dict[int, int], seed: int) -> None:
    items = _items(sizes)
    positions = gold_positions(items, seed)
    for n in sizes:
        counts = Counter(positions[uid] for uid, k in items if k == n)
        per_letter = [counts.get(p, 0) for p in range(n)]
        assert max(per_letter) - min(per_letter) <= 1, (n, per_letter)


@settings(max_examples=150, deadline=None)
@given(sizes=group_sizes, seed=st.integers(0, 5))
def test_fixed_letter_within_one_item_of_chance(sizes: dict[int, int], seed: int) -> None:
    items = _items(sizes)
    positions = gold_positions(items, seed)
    for letter in range(max(sizes)):
        hits = sum(1 for uid, _ in items if positions[uid] == letter)
        expected = sum(1 / n for _, n in items if n > letter)
        assert abs(hits - expected) <= 1, (letter, hits, expected)


def test_seeds_shift_single_group_orders_and_are_deterministic() -> None:
    items = [(f"trog_{i}", 4) for i in range(20)]
    by_seed = [gold_positions(items, s) for s in DEFAULT_SEEDS]
    assert by_seed[0] == gold_positions(list(reversed(items)), 0)
    for uid, _ in items:
        assert [(positions[uid] - by_seed[0][uid]) % 4 for positions in by_seed] == [0, 1, 2]


def test_presented_order_is_rotation_with_gold_at_position() -> None:
    for n in (2, 3, 4, 5):
        for gold in range(n):
            order = presented_order(n, gold)
            assert sorted(order) == list(range(n))
            assert order[gold] == 0
            assert all(order[(gold + j) % n] == j for j in range(n))
    assert letters_for(3) == ["A", "B", "C"]
