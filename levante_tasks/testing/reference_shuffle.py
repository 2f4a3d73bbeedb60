"""The shuffled control's exchange as first written (`pool.index` per doc, quadratic): the reference the seeds'
outputs were made with, which the linear `core.controls.shuffle_visuals` must reproduce (tests, benchmarks/images.py).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from levante_tasks.core.controls import SHUFFLE_SALT
from levante_tasks.core.options import stable_hash


def quadratic_shuffle(docs: list[dict[str, Any]]) -> None:
    """Replace every doc's `visual_paths` with another item's, as the first exchange did (in place)."""
    with_images = sorted((d for d in docs if d["visual_paths"]), key=lambda d: stable_hash(d["item_uid"], SHUFFLE_SALT))
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
            paths = original[id(donor)]
            doc["visual_paths"] = [paths[i % len(paths)] for i in range(len(original[id(doc)]))]
            doc["visual_donor"] = donor["item_uid"]


def shuffle_docs(image_counts: list[int]) -> list[dict[str, Any]]:
    """One doc per count (unique uids, as `prepare` guarantees), each with that many distinct picture paths."""
    return [{"item_uid": f"item-{n}", "visual_paths": [f"visual/{n}-{k}.png" for k in range(count)],
             "visual_donor": ""} for n, count in enumerate(image_counts)]
