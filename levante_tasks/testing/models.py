"""Offline lmms-eval test models: a fixed-letter answerer and oracles that read option indices from images.

`levante_fixed` answers one letter to everything (`model_args=letter=B`); for multiple_choice it gives that
letter the lowest loss. `levante_image_oracle` (simple) and `levante_chat_oracle` (chat: it reads the
`doc_to_messages` turns) see only what any model of their kind sees (prompt text and images) and, for
`fixture_data` images that encode their canonical index by colour, answer the letter whose `<image N>` decodes
to index 0: they score 100% exactly when option k's image is the k-th image the model receives.
"""

from __future__ import annotations

import re
from typing import Any

from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from lmms_eval.models.registry_v2 import ModelManifest

from levante_tasks.core.prompts import IMAGE_MARKER
from levante_tasks.schema.items import LETTERS
from levante_tasks.testing.fixture_data import decode_colour

_LISTED = re.compile(rf"\b([{LETTERS}]): {IMAGE_MARKER.pattern}")


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
    """The letter whose listed image (`<image N>` = images[N-1]) decodes to canonical index 0, or "none" when the
    layout disagrees (a picture no letter lists is not the context picture)."""
    listed = [(letter, int(n) - 1) for letter, n in _LISTED.findall(context)]
    options = {index for _, index in listed}
    if any(decode_colour(image) != -1 for i, image in enumerate(images) if i not in options):
        return "none"
    for letter, index in listed:
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


class ChatImageOracle(_OfflineModel):
    """The image oracle as a chat model: answers from the text and images of the `doc_to_messages` turns."""

    is_simple = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message_shapes: list[list[str]] = []  # per request: the content types of its turns, in order

    def generate_until(self, requests: list[Instance]) -> list[str]:
        out = []
        for req in requests:
            _, doc_to_messages, gen_kwargs, doc_id, task, split = req.args
            assert isinstance(gen_kwargs, dict), "the chat layout has the generation kwargs third"
            turns = doc_to_messages(self.task_dict[task][split][doc_id])
            content = [part for turn in turns for part in turn["content"]]
            self.message_shapes.append([part["type"] for part in content])
            text = " ".join(part["text"] for part in content if part["type"] == "text")
            out.append(oracle_answer(text, [part["url"] for part in content if part["type"] == "image"]))
        return out

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError("chat models answer generate_until only")


MANIFESTS = (
    ModelManifest(model_id="levante_fixed", simple_class_path=f"{__name__}.FixedLetterModel"),
    ModelManifest(model_id="levante_image_oracle", simple_class_path=f"{__name__}.ImageIndexOracle"),
    ModelManifest(model_id="levante_chat_oracle", chat_class_path=f"{__name__}.ChatImageOracle"),
)
