"""Decoded pictures kept in memory, so a picture shown several times is verified and decoded once per process.

lmms-eval's multiple_choice variants call `doc_to_visual` once per option (4 decodes of each picture of a 4-option
item); batches, seeds and controls in one process show the same files again. Entries are keyed by the sha256 of the
file's bytes, not by path and stat: a file replaced between two runs of one process, even at the same size within
one mtime tick, is decoded anew; reading plus hashing a file costs about 1% of decoding it (the sample's vocab
WebPs: 0.03 of 2.4 ms). The least recently used pictures are dropped beyond a budget of decoded bytes
(`$LEVANTE_IMAGE_CACHE_MIB`, default 256; 0 turns the cache off). Callers get a copy: PIL images are mutable, and
a model that draws on or resizes its picture in place must not change what the next option is shown (a copy costs
about 0.4% of a decode).
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable

from PIL import Image

from levante_tasks.errors import LevanteError

BUDGET_ENV = "LEVANTE_IMAGE_CACHE_MIB"
DEFAULT_BUDGET_MIB = 256


def footprint(image: Image.Image) -> int:
    """Bytes a decoded picture holds (Pillow stores an RGB pixel in 4 bytes)."""
    return image.width * image.height * 4


class DecodedImages:
    """A least-recently-used map from a file's sha256 to its decoded picture, bounded by decoded bytes."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self.held_bytes = 0
        self.decodes = 0  # pictures decoded (misses), for tests and benchmarks/images.py
        self.hits = 0
        self._entries: OrderedDict[bytes, Image.Image] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, digest: bytes, decode: Callable[[], Image.Image]) -> Image.Image:
        """A copy of the picture with this content digest, decoding it (by `decode`) when it is not held."""
        with self._lock:
            image = self._entries.get(digest)
            if image is not None:
                self._entries.move_to_end(digest)
                self.hits += 1
        if image is None:
            image = decode()
            self._keep(digest, image)
        return image.copy()

    def clear(self) -> None:
        """Drop every picture and reset the counts."""
        with self._lock:
            self._entries.clear()
            self.held_bytes = self.decodes = self.hits = 0

    def _keep(self, digest: bytes, image: Image.Image) -> None:
        size = footprint(image)
        with self._lock:
            self.decodes += 1
            if size > self.budget_bytes or digest in self._entries:
                return
            self._entries[digest] = image
            self.held_bytes += size
            while self.held_bytes > self.budget_bytes:
                _, dropped = self._entries.popitem(last=False)
                self.held_bytes -= footprint(dropped)


def budget_from_env() -> int:
    """The cache budget in bytes from `$LEVANTE_IMAGE_CACHE_MIB` (a whole number of MiB; 0 = no cache)."""
    text = os.environ.get(BUDGET_ENV, str(DEFAULT_BUDGET_MIB)).strip()
    if not (text.isascii() and text.isdigit()):  # "²" is a digit to str.isdigit, not to int()
        raise LevanteError(f"${BUDGET_ENV}: expected a whole number of MiB (0 turns the cache off), got {text!r}")
    return int(text) * 2**20


@functools.cache
def shared_cache() -> DecodedImages:
    """The process's cache, sized from the environment when first used."""
    return DecodedImages(budget_from_env())
