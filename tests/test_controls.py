"""The shuffled control: the linear exchange gives what the first (quadratic) one gave, and 16k docs take well
under a second of CPU."""

from __future__ import annotations

import copy
import time
from collections import defaultdict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from levante_tasks.core import controls
from levante_tasks.core.options import stable_hash


def quadratic_shuffle(docs: list[dict[str, Any]]) -> None:
    """The exchange as first written (`pool.index` per doc): the reference the seeds' outputs were made with."""
    with_images = sorted((d for d in docs if d["visual_paths"]),
                         key=lambda d: stable_hash(d["item_uid"], controls.SHUFFLE_SALT))
    if len(with_images) < 2:
        return
    original = {id(d): list(d["visual_paths"]) for d in with_images}
    groups: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for doc in with_images:
        groups[len(doc["visual_paths"])].append(doc)
    for group in groups.values():
        pool = group if len(group) >= 2 else with_images
        for doc in group:
            donor = pool[(pool.index(doc) + 1) % len(pool)]
            doc["visual_paths"] = [original[id(donor)][i % len(original[id(donor)])]
                                   for i in range(len(original[id(doc)]))]
            doc["visual_donor"] = donor["item_uid"]


def make_docs(image_counts: list[int]) -> list[dict[str, Any]]:
    """One doc per count (unique uids, as `prepare` guarantees), each with that many distinct picture paths."""
    return [{"item_uid": f"item-{n}", "visual_paths": [f"visual/{n}-{k}.png" for k in range(count)],
             "visual_donor": ""} for n, count in enumerate(image_counts)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=6), max_size=60))
def test_linear_shuffle_gives_the_quadratic_ones_output(image_counts: list[int]) -> None:
    docs = make_docs(image_counts)
    expected = copy.deepcopy(docs)
    quadratic_shuffle(expected)
    controls.shuffle_visuals(docs)
    assert docs == expected


def test_lone_image_counts_take_the_next_items_pictures() -> None:
    """Counts met once (3 and 5 images here) borrow across groups: the case where the pool is every item."""
    docs = make_docs([1, 1, 3, 1, 5, 0, 2, 2])
    expected = copy.deepcopy(docs)
    quadratic_shuffle(expected)
    controls.shuffle_visuals(docs)
    assert docs == expected
    assert all(d["visual_donor"] not in ("", d["item_uid"]) for d in docs if d["visual_paths"])


def test_sixteen_thousand_docs_shuffle_in_linear_time() -> None:
    docs = make_docs([1 + n % 4 for n in range(16_000)])
    start = time.process_time()
    controls.shuffle_visuals(docs)
    assert time.process_time() - start < 1.0  # the quadratic exchange took 8.8 s of CPU here; linear ~0.05 s
