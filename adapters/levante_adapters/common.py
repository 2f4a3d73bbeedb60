"""Helpers shared by the LEVANTE model adapters: model_args parsing, task docs, visuals and score answers."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from PIL import Image

from levante_tasks.core.hooks import doc_to_text, item_text
from levante_tasks.core.prompts import IMAGE_MARKER, without_answer_clause
from levante_tasks.schema.items import LETTERS

_PLACEHOLDER = re.compile(rf"{IMAGE_MARKER.pattern}|<option\d+>")
_DTYPES = {"float32": torch.float32, "fp32": torch.float32, "float16": torch.float16, "fp16": torch.float16,
           "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}


def parse_dtype(name: str | torch.dtype) -> torch.dtype:
    """Map a model_args dtype string (float32, float16, bfloat16) to a torch dtype."""
    if isinstance(name, torch.dtype):
        return name
    try:
        return _DTYPES[str(name).lower()]
    except KeyError:
        raise ValueError(f"dtype={name!r}: expected one of {sorted(_DTYPES)}") from None


def resolve_device(device: str | None) -> str:
    """`auto`/None -> cuda when available, else cpu; anything else is passed through."""
    if device in (None, "", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    return str(device)


def as_positive_int(value: Any, name: str) -> int:
    """lmms-eval passes batch sizes as int or string ("8"); accept both, reject <= 0 and "auto"."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r}: expected a positive integer") from None
    if number <= 0:
        raise ValueError(f"{name}={value!r}: expected a positive integer")
    return number


def get_doc(task_dict: Mapping, task: str, split: str, doc_id: int) -> Mapping[str, Any]:
    """The full task doc (design.md §3b) for one request; empty mapping when the task exposes none."""
    try:
        return task_dict[task][split][doc_id]
    except (KeyError, IndexError, TypeError):
        return {}


def doc_letters(doc: Mapping[str, Any], n_options: int) -> list[str]:
    """Option letters as presented: the doc's `letters` when set, else A, B, ... for n options."""
    letters = doc.get("letters")
    if letters is not None and len(letters) > 0:
        return [str(x) for x in letters]
    return list(LETTERS[:n_options])


def presented_options(doc: Mapping[str, Any]) -> list[str]:
    """Option keys/texts in presented order (`options[presented_order[p]]`)."""
    options = [str(x) for x in (doc.get("options") if doc.get("options") is not None else [])]
    order = doc.get("presented_order")
    if order is None or len(order) != len(options):
        return options
    return [options[int(i)] for i in order]


def has_context_image(doc: Mapping[str, Any]) -> bool:
    """True when the item shows a context image (`<image 1>`): first entry of doc_to_visual."""
    return bool(doc.get("stimulus_image"))


def question(doc: Mapping[str, Any], ctx: str = "") -> str:
    """The item's question without its answer clause: a prepared doc composes it (`core.hooks.item_text`), after
    the pre-prompt lmms-eval put before the doc's text in its context string `ctx`; a doc that is no prepared
    item (no `question`) is foreign text, read up to its answer clause."""
    if not doc.get("question"):
        return without_answer_clause(ctx or "")
    body = doc_to_text(doc)
    pre_prompt = ctx[: ctx.index(body)] if body and body in (ctx or "") else ""
    return pre_prompt + item_text(doc, with_clause=False)


def query_text(doc: Mapping[str, Any], ctx: str = "") -> str:
    """Text that describes the target: prompt_phrase, else the prompt, else the prompt text without placeholders
    and answer instructions (e.g. same-different "Choose the card with a circle.")."""
    for key in ("prompt_phrase", "prompt"):
        value = doc.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return re.sub(r"\s+", " ", _PLACEHOLDER.sub(" ", question(doc, ctx))).strip()


def to_images(visuals: Any) -> list[Image.Image]:
    """doc_to_visual output (PIL images, paths or None) as a list of RGB PIL images."""
    if visuals is None:
        return []
    if not isinstance(visuals, (list, tuple)):
        visuals = [visuals]
    images = []
    for visual in visuals:
        if isinstance(visual, Image.Image):
            images.append(visual.convert("RGB"))
        elif isinstance(visual, str):
            with Image.open(visual) as handle:
                images.append(handle.convert("RGB"))
        else:
            raise TypeError(f"unsupported visual of type {type(visual).__name__}")
    return images


def image_key(image: Image.Image) -> str:
    """Content hash of an image: identical pixels share one embedding whatever file they came from."""
    digest = hashlib.sha1(f"{image.mode}|{image.size}".encode())
    digest.update(image.tobytes())
    return digest.hexdigest()


def log_softmax(values: Sequence[float]) -> list[float]:
    """Numerically stable log-softmax of a short list (per-option scores)."""
    top = max(values)
    log_total = top + math.log(sum(math.exp(v - top) for v in values))
    return [v - log_total for v in values]


def score_answer(letters: Sequence[str], logprobs: Sequence[float], **extra: Any) -> str:
    """The JSON answer of design.md §3c: argmax letter + per-letter log-probabilities (sum of exp = 1).

    Ties go to the first letter as presented; `extra` keys (model id, revision, mode) are kept for auditing; an
    `extra` `scores_kind` names other scores (`yes_no_logit`: logit(Yes) - logit(No) per option).
    """
    best = max(range(len(letters)), key=lambda i: (logprobs[i], -i))
    scores = {k: round(float(v), 6) for k, v in zip(letters, logprobs, strict=True)}
    payload = {"answer": letters[best], "scores": scores, "scores_kind": "logprob", **extra}
    return json.dumps(payload, sort_keys=False)


def choice_position(continuation: str, idx: int, letters: Sequence[str], options: Sequence[str]) -> int:
    """Presented position a multiple_choice continuation refers to: a letter, an option text, else `idx`."""
    text = continuation.strip()
    if text in letters:
        return list(letters).index(text)
    if text in options:
        return list(options).index(text)
    return idx
