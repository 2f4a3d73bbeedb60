"""Offline lmms-eval test models: a fixed-letter answerer and an oracle that reads option indices from images.

`levante_fixed` answers one letter to everything (`model_args=letter=B`); for multiple_choice it gives that
letter the lowest loss. `levante_image_oracle` sees only what any model sees (prompt text and the image list)
and, for fixture images that encode their canonical index by colour, answers the letter whose `<imageK>`
decodes to index 0: it scores 100% exactly when option k's image is the k-th image the model receives.
"""

from __future__ import annotations

import re
from typing import Any

from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms

from levante_tasks.harness.fixture_data import decode_colour

_LISTED = re.compile(r"\b([A-J]): <image([1-9]\d*)>")


class _OfflineModel(lmms):
    """Shared plumbing: accept any CLI kwargs, no multi-round support."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError("multi-round generation is not used by the LEVANTE tasks")


class FixedLetterModel(_OfflineModel):
    """Always answers `letter` (default A)."""

    def __init__(self, letter: str = "A", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.letter = letter.strip().upper()

    def generate_until(self, requests: list[Instance]) -> list[str]:
        return [self.letter for _ in requests]

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        return [(0.0 if req.args[1].strip() == self.letter else 1.0, False) for req in requests]


def oracle_answer(context: str, images: list[Any]) -> str:
    """The letter whose listed image decodes to canonical index 0, or "none" when the layout disagrees."""
    offset = 0 if "<image0>" in context else -1
    if offset == 0 and (not images or decode_colour(images[0]) != -1):
        return "none"
    for letter, k in _LISTED.findall(context):
        index = int(k) + offset
        if 0 <= index < len(images) and decode_colour(images[index]) == 0:
            return letter
    return "none"


class ImageIndexOracle(_OfflineModel):
    """Answers from the colours of the images it receives (see the module docstring)."""

    def generate_until(self, requests: list[Instance]) -> list[str]:
        out = []
        for req in requests:
            context, _, doc_to_visual, doc_id, task, split = req.args
            out.append(oracle_answer(context, doc_to_visual(self.task_dict[task][split][doc_id])))
        return out

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        out = []
        for req in requests:
            context, continuation, doc_to_visual, doc_id, task, split = req.args
            choice = oracle_answer(context, doc_to_visual(self.task_dict[task][split][doc_id]))
            out.append((0.0 if continuation.strip() == choice else 1.0, False))
        return out
