"""Deterministic offline lmms-eval models whose answers vary in form per item (every parse path is taken).

The form and content of each answer come from a hash of the item, its seed, its variant and what the model was
shown (prompt, or chat turns with image hashes), so any change in what a model receives changes the answers:
tests/test_golden_records.py uses them to prove that refactors keep per-item records byte-identical.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms


def _digest(*parts: Any) -> int:
    """A stable integer hash of the parts."""
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest(), 16)


def scripted_choice(doc: dict[str, Any], context: str) -> str:
    """One of seven answer forms, chosen and filled from a hash of the item, its variant and the prompt."""
    letters = list(doc["letters"])
    h = _digest(doc["item_uid"], doc["seed"], doc["variant"], context)
    letter = letters[h % len(letters)]
    form = (h // 7) % 7
    if form == 0:
        return letter
    if form == 1:
        return f"The answer is {letter}."
    if form == 2:
        return json.dumps({"answer": letter})
    if form == 3:
        scores = {x: -((h >> (8 * i)) % 97) / 10 for i, x in enumerate(letters)}
        return json.dumps({"scores": scores, "scores_kind": "logprob"})
    if form == 4:
        shown = [doc["options"][i] for i in doc["presented_order"]]
        return shown[h % len(shown)] if doc["option_kind"] != "image" else f"{letters[0]} or {letters[-1]}"
    if form == 5:
        return "I am not sure."
    return f"<think>hmm</think> Answer: {letter}"


def scripted_slider(doc: dict[str, Any], context: str) -> str:
    """A position in [0, 1] as a bare number, a sentence, JSON, or no number at all."""
    h = _digest(doc["item_uid"], doc["seed"], doc["variant"], context)
    position = (h % 1001) / 1000
    return [f"{position}", f"The answer is {position}", json.dumps({"answer": position}), "no idea"][(h // 3) % 4]


class ScriptedModel(lmms):
    """generate_until: a hashed answer form per item; loglikelihood: a hashed loss per option."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()

    def generate_until(self, requests: list[Instance]) -> list[str]:
        """One answer per request, from the doc and the prompt."""
        out = []
        for req in requests:
            context, _, _, doc_id, task, split = req.args
            doc = self.task_dict[task][split][doc_id]
            answer = scripted_slider if doc["response_format"] == "slider" else scripted_choice
            out.append(answer(doc, context))
        return out

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        """A loss per option, from the doc, the prompt and the continuation."""
        out = []
        for req in requests:
            context, continuation, _, doc_id, task, split = req.args
            doc = self.task_dict[task][split][doc_id]
            out.append(((_digest(doc["item_uid"], doc["seed"], doc["variant"], context, continuation) % 1000) / 100,
                        False))
        return out

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError


def message_summary(messages: list[dict[str, Any]]) -> list[Any]:
    """Roles, texts and image pixel hashes of chat messages, in order."""
    out = []
    for message in messages:
        for part in message["content"]:
            if part["type"] == "text":
                out.append([message["role"], "text", part["text"]])
            else:
                image = part["url"]
                out.append([message["role"], part["type"], hashlib.sha256(image.tobytes()).hexdigest()[:16],
                            list(image.size)])
    return out


class ScriptedChatModel(lmms):
    """Chat-type (is_simple = False): answers from doc_to_messages, like ScriptedModel, keeps what it saw."""

    is_simple = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        self.seen: dict[tuple[str, int, str], list[Any]] = {}  # (item_uid, seed, variant) -> what it was shown

    def generate_until(self, requests: list[Instance]) -> list[str]:
        """One answer per request, from the doc and the chat turns it was shown."""
        out = []
        for req in requests:
            context, doc_to_messages, _, doc_id, task, split = req.args
            doc = self.task_dict[task][split][doc_id]
            summary = message_summary(doc_to_messages(doc))
            self.seen[(doc["item_uid"], doc["seed"], doc["variant"])] = summary
            answer = scripted_slider if doc["response_format"] == "slider" else scripted_choice
            out.append(answer(doc, json.dumps(summary)))
        return out

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError
