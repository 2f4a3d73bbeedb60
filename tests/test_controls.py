"""The shuffled control: the linear exchange gives what the first (quadratic) one gave, and 16k docs take well
under a second of CPU."""

from __future__ import annotations

import copy
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from levante_tasks.core import controls
from levante_tasks.testing.reference_shuffle import quadratic_shuffle, shuffle_docs


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=6), max_size=60))
def test_linear_shuffle_gives_the_quadratic_ones_output(image_counts: list[int]) -> None:
    docs = shuffle_docs(image_counts)
    expected = copy.deepcopy(docs)
    quadratic_shuffle(expected)
    controls.shuffle_visuals(docs)
    assert docs == expected


def test_lone_image_counts_take_the_next_items_pictures() -> None:
    """Counts met once (3 and 5 images here) borrow across groups: the case where the pool is every item."""
    docs = shuffle_docs([1, 1, 3, 1, 5, 0, 2, 2])
    expected = copy.deepcopy(docs)
    quadratic_shuffle(expected)
    controls.shuffle_visuals(docs)
    assert docs == expected
    assert all(d["visual_donor"] not in ("", d["item_uid"]) for d in docs if d["visual_paths"])


def test_sixteen_thousand_docs_shuffle_in_linear_time() -> None:
    docs = shuffle_docs([1 + n % 4 for n in range(16_000)])
    start = time.process_time()
    controls.shuffle_visuals(docs)
    assert time.process_time() - start < 1.0  # the quadratic exchange took 8.8 s of CPU here; linear ~0.05 s
