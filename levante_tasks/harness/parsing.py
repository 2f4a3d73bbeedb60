"""Read a model's answer: per-option scores, JSON, "the answer is X", a lone letter, or an option's text.

Only upper-case letters of the item's own label set count (so the article "a" is never read as option A);
prose that names no single option is left unparsed (an unparsed answer is scored wrong). The confidence is
a fixed value per method, from the most explicit (scores, JSON) to the least (option text).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

CONFIDENCE = {
    "scores": 1.0,
    "json": 1.0,
    "answer_is": 0.9,
    "lone_letter": 0.8,
    "lone_number": 0.8,
    "option_text": 0.7,
    "none": 0.0,
}

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_ANSWER_IS = re.compile(
    r"(?:the\s+)?(?:correct\s+|final\s+|best\s+)?(?:answer|option|choice)\s*(?:is|:)\s*[:\s]*"
    r"[\(\[\"'*]*\s*([A-Z])\s*[\)\]\"'*]*(?=$|[\s.,;:!])",
    re.IGNORECASE,
)
# `ANSWER: b` as the last thing on its line (inspect's multiple_choice() asks for that form; a lower-case letter is
# read only here, where it cannot be an article: "the answer is a ..." stays prose).
_ANSWER_LINE = re.compile(r"^\s*answer\s*:\s*[\(\[\"'*]*\s*([a-z])\s*[\)\]\"'*]*[.!]?\s*$",
                          re.IGNORECASE | re.MULTILINE)
_LONE = re.compile(r"^[\s\(\[\"'*]*([A-Z])[\s\)\]\"'*]*[.,:;!]?[\s\)\]\"'*]*$")
_HEDGE = re.compile(r"\b[A-Z]\s*(?:or|and|/)\s*[A-Z]\b")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Parsed:
    """One parsed answer: the letter as presented (None when unparsed) and how it was read."""

    letter: str | None
    method: str
    scores: dict[str, float] | None = field(default=None)
    scores_kind: str | None = None

    @property
    def confidence(self) -> float:
        """The fixed confidence of the parse method (0 when unparsed)."""
        return CONFIDENCE[self.method]


def _clean(text: str) -> str:
    """Drop reasoning blocks and code fences around the answer."""
    text = _THINK.sub("", text or "").strip()
    fence = _FENCE.match(text)
    return fence.group(1).strip() if fence else text


def _letter(value: object, letters: Sequence[str]) -> str | None:
    """A JSON answer value as one of this item's letters."""
    if isinstance(value, str):
        match = _LONE.match(value)
        if match and match.group(1) in letters:
            return match.group(1)
    return None


def _from_json(text: str, letters: Sequence[str]) -> Parsed | None:
    """Parse a JSON object answer: {"answer": "B"} or {"answer": "B", "scores": {...}, "scores_kind": ...}."""
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    scores = data.get("scores")
    if isinstance(scores, dict) and set(scores) == set(letters):
        values = {k: float(v) for k, v in scores.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if len(values) == len(letters) and all(math.isfinite(v) for v in values.values()):
            best = max(letters, key=lambda k: values[k])
            kind = data.get("scores_kind") if isinstance(data.get("scores_kind"), str) else "logprob"
            return Parsed(best, "scores", values, kind)
    letter = _letter(data.get("answer"), letters)
    return Parsed(letter, "json") if letter else None


def parse_choice(text: str, letters: Sequence[str], option_texts: Sequence[str] = ()) -> Parsed:
    """Parse a generated answer to one presented letter; `option_texts` are the options in presented order."""
    cleaned = _clean(text)
    parsed = _from_json(cleaned, letters)
    if parsed:
        return parsed
    found = {m.group(1) for m in _ANSWER_IS.finditer(cleaned) if m.group(1).isupper()}
    found |= {m.group(1).upper() for m in _ANSWER_LINE.finditer(cleaned)}
    if len(found) == 1 and found <= set(letters) and not _HEDGE.search(cleaned):
        return Parsed(found.pop(), "answer_is")
    lone = _LONE.match(cleaned)
    if lone and lone.group(1) in letters:
        return Parsed(lone.group(1), "lone_letter")
    if option_texts:
        norm = re.sub(r"^(?:the\s+)?(?:answer\s+is\s*:?\s*)", "", cleaned, flags=re.IGNORECASE)
        norm = norm.strip().strip(".!*\"' ").strip().lower()
        matches = [letters[i] for i, opt in enumerate(option_texts) if opt and norm == str(opt).strip().lower()]
        if len(matches) == 1:
            return Parsed(matches[0], "option_text")
    return Parsed(None, "none")


def parse_number(text: str) -> tuple[float | None, str]:
    """Parse a numeric answer (slider position): JSON {"answer": x}, "the answer is x", or a lone number."""
    cleaned = _clean(text)
    if cleaned.startswith("{"):
        try:
            data = json.loads(cleaned)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("answer"), (int, float, str)):
            value = _single_number(str(data["answer"]))
            if value is not None:
                return value, "json"
    match = re.search(r"answer\s*(?:is|:)\s*:?\s*(" + _NUMBER.pattern + r")", cleaned, re.IGNORECASE)
    if match:
        return float(match.group(1)), "answer_is"
    value = _single_number(cleaned)
    return (value, "lone_number") if value is not None else (None, "none")


def _single_number(text: str) -> float | None:
    """The number when `text` is exactly one number (with optional trailing period)."""
    stripped = text.strip().rstrip(".").strip()
    if _NUMBER.fullmatch(stripped):
        value = float(stripped)
        return value if math.isfinite(value) else None
    return None
