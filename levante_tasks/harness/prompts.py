"""Model-facing prompt text of a task doc, following the LEVANTE templates.

`<optionK>` placeholders are filled with the text option at presented position K; `<image0>` (context) and
`<imageK>` (option images) stay in the text as markers of where the k-th image of `doc_to_visual` belongs.
The answer instruction is rewritten to match the item's option count (some manifest rows carry a 2-option
instruction on a 3-option item), and a missing option listing is appended.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

_INSTRUCTION = re.compile(r"Answer(?: with)? [A-J](?:,? (?:[A-J],? )*(?:or|and) [A-J])?\.?")
_PLACEHOLDER = re.compile(r"<(?:image|option)([1-9]\d*)>")
_LISTING = re.compile(r"\s*[A-J]: <(?:image|option)[1-9]\d*>(?:[;,]\s*[A-J]: <(?:image|option)[1-9]\d*>)*\.?")


def answer_instruction(letters: Sequence[str]) -> str:
    """ "Answer with A or B." / "Answer with A, B, or C." for the item's letters."""
    if len(letters) == 2:
        return f"Answer with {letters[0]} or {letters[1]}."
    return f"Answer with {', '.join(letters[:-1])}, or {letters[-1]}."


def option_listing(letters: Sequence[str], kind: str) -> str:
    """ "A: <image1>; B: <image2>" (kind image) or with <optionK> placeholders (kind text)."""
    tag = "image" if kind == "image" else "option"
    return "; ".join(f"{letter}: <{tag}{k}>" for k, letter in enumerate(letters, start=1))


def _fallback_text(doc: Mapping[str, Any]) -> str:
    """A template for rows whose manifest has no full prompt: instruction, phrase, answer line."""
    phrase = f' "{doc["prompt_phrase"]}".' if doc.get("prompt_phrase") else ""
    context = "<image0> " if doc.get("stimulus_image") else ""
    return f"{context}{doc.get('prompt') or 'Choose the correct option.'}{phrase}"


def choice_prompt(doc: Mapping[str, Any]) -> str:
    """The full prompt of a choice item with placeholders for the presented order."""
    letters = list(doc["letters"])
    text = (doc.get("prompt_text") or _fallback_text(doc)).strip()
    numbers = {int(k) for k in _PLACEHOLDER.findall(text)}
    if numbers != set(range(1, len(letters) + 1)):
        text = _LISTING.sub("", text).strip()
        text = f"{text} {option_listing(letters, doc['option_kind'])}"
    if _INSTRUCTION.search(text):
        text = _INSTRUCTION.sub(answer_instruction(letters), text, count=1)
    else:
        first = re.search(r"\s[A-J]: <", text)
        cut = first.start() if first else len(text)
        text = f"{text[:cut].rstrip()} {answer_instruction(letters)}{text[cut:]}"
    if doc["option_kind"] != "image":
        shown = [doc["options"][i] for i in doc["presented_order"]]
        text = _PLACEHOLDER.sub(lambda m: _fill_option(m, shown), text)
    story = (doc.get("story") or "").strip()
    if story and story not in text:
        text = f"{story}\n{text}"
    return text


def _fill_option(match: re.Match[str], shown: Sequence[str]) -> str:
    """Replace <optionK> with the K-th presented option; leave <imageK> markers alone."""
    if match.group(0).startswith("<option"):
        return str(shown[int(match.group(1)) - 1])
    return match.group(0)


def _fmt(value: float) -> str:
    """A range end without a trailing .0 (0, 10, 0.5)."""
    return str(int(value)) if float(value).is_integer() else str(value)


def slider_prompt(doc: Mapping[str, Any]) -> str:
    """The number-line slider prompt: states the target number and the line's ends, never its position."""
    lo, hi = doc["range_min"], doc["range_max"]
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        raise ValueError(f"{doc['item_uid']}: slider item without a number-line range")
    context = "<image0> " if doc.get("stimulus_image") else ""
    return (
        f"{context}This number line goes from {_fmt(lo)} on the left to {_fmt(hi)} on the right. "
        f"Where does the number {doc['answer']} go? Answer with a single number between 0 and 1: "
        "0 means the left end and 1 means the right end."
    )


def render(doc: Mapping[str, Any], pre_prompt: str = "", post_prompt: str = "") -> str:
    """The prompt for any doc, with optional text before and after (from lmms_eval_specific_kwargs)."""
    body = slider_prompt(doc) if doc["response_format"] == "slider" else choice_prompt(doc)
    return f"{pre_prompt}{body}{post_prompt}"
