"""Visual-dependency controls (docs/tasks.md, Controls): blank images of the same size, or images of another item.

Shuffled: items are ordered by a salted hash of their uid (independent of the option-order hash, so a donor's
gold letter is unrelated to the receiver's) and each takes the images of the next item with the same number of
images, a derangement; an item alone in its image-count group takes the next item's images, cycled or cut to
length. Items without images are left unchanged. Blank: each image becomes an all-zero RGB image of its size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from PIL import Image

from levante_tasks.core.options import stable_hash

SHUFFLE_SALT = "levante-shuffle"


def _fit(images: list[str], count: int) -> list[str]:
    """`count` paths taken cyclically from `images`."""
    if count == len(images):  # a donor of the same image-count group: the common case
        return list(images)
    return [images[i % len(images)] for i in range(count)]


def shuffle_visuals(docs: list[dict[str, Any]]) -> None:
    """Replace every doc's `visual_paths` with another item's (in place, deterministic; linear in the docs)."""
    with_images = sorted((d for d in docs if d["visual_paths"]), key=lambda d: stable_hash(d["item_uid"], SHUFFLE_SALT))
    if len(with_images) < 2:
        return
    rank = {id(d): position for position, d in enumerate(with_images)}
    groups: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for doc in with_images:
        groups[len(doc["visual_paths"])].append(doc)
    receivers: list[dict[str, Any]] = []
    donors: list[dict[str, Any]] = []  # every donor is read before any doc's paths are replaced
    for group in groups.values():
        pool = group if len(group) >= 2 else with_images
        first = 0 if pool is group else rank[id(group[0])]
        receivers += group
        donors += [pool[(first + offset + 1) % len(pool)] for offset in range(len(group))]
    paths = [_fit(d["visual_paths"], len(r["visual_paths"])) for r, d in zip(receivers, donors, strict=True)]
    for doc, donor, new in zip(receivers, donors, paths, strict=True):
        doc["visual_paths"] = new
        doc["visual_donor"] = donor["item_uid"]


def blank_like(image: Image.Image) -> Image.Image:
    """An all-zero RGB image of the same size."""
    return Image.new("RGB", image.size, (0, 0, 0))


def apply_variant(doc: Mapping[str, Any], images: list[Image.Image]) -> list[Image.Image]:
    """The images to show for the doc's variant (shuffling already happened in the doc's paths)."""
    return [blank_like(im) for im in images] if doc["variant"] == "blank" else images
