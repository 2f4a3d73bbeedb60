"""Scoring one response against its target trace (L0-Bench's TraceAnalyzer rules) and what voting needs.

Rules: cut the response at the stop string; drop everything before the first `</think>`; keep from the first
occurrence of the target's first line marker (`L2,`); compare non-empty stripped lines in order, spaces ignored.
A target line without a value (`L5,`) only needs the response line's part before its first comma to match.
Steps to first error = the number of leading lines that match; the trace is correct when all of them do, so a
correct but truncated trace fails and lines after the target's end are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from levante_tasks.l0.prompt import STOP

THINK_END = "</think>"
TRACE_LINE = re.compile(r"L\d+,")


@dataclass(frozen=True)
class Score:
    """One response's result. `vote_key`: the compared form of its lines (voters agree when keys are equal)."""

    steps: int
    total: int
    correct: bool
    parse_failed: bool
    vote_key: str
    cleaned: str  # L0-Bench's cleaned response (from `L2,` on), what its majority vote compares exactly
    empty: bool  # nothing before the stop string: L0-Bench never logs such a response
    cleaned_steps: int  # steps of `cleaned` scored again, as L0-Bench scores a majority winner
    cleaned_correct: bool


def strip_reasoning(response: str) -> str:
    """The response up to the stop string, without anything before the first `</think>`."""
    text = response.split(STOP, 1)[0]
    if THINK_END in text:
        text = text[text.index(THINK_END) + len(THINK_END) :]
    return text


def target_lines(target: str) -> list[str]:
    """The target's non-empty stripped lines."""
    return [line.strip() for line in target.split("\n") if line.strip()]


def response_lines(response: str, start: str) -> list[str]:
    """Non-empty stripped lines of the response from the first `start` marker on (none if it never occurs)."""
    return [line.strip() for line in cleaned_response(response, start).split("\n") if line.strip()]


def _matches(target: str, got: str) -> bool:
    if target.endswith(","):
        return target.split(",", 1)[0] == got.split(",", 1)[0].replace(" ", "")
    return target == got.replace(" ", "")


def cleaned_response(response: str, start: str) -> str:
    """The response from the first `start` marker on, after the first `</think>` ("" without a marker)."""
    text = strip_reasoning(response)
    return text[text.index(start) :] if start in text else ""


def _steps(wanted: list[str], got: list[str]) -> int:
    steps = 0
    for want, line in zip(wanted, got, strict=False):
        if not _matches(want, line):
            break
        steps += 1
    return steps


def score_response(response: str, target: str) -> Score:
    """Steps to first error, whole-trace correctness, parse failure (no `L<n>,` anywhere) and the vote keys."""
    wanted = target_lines(target)
    if not wanted:
        raise ValueError("empty target trace")
    start = wanted[0].split(",", 1)[0] + ","
    got = response_lines(response, start)
    steps = _steps(wanted, got)
    cleaned = cleaned_response(response, start)
    again = _steps(wanted, response_lines(cleaned, start))
    return Score(
        steps=steps,
        total=len(wanted),
        correct=steps == len(wanted),
        parse_failed=TRACE_LINE.search(strip_reasoning(response)) is None,
        vote_key="\n".join(line.replace(" ", "") for line in got),
        cleaned=cleaned,
        empty=response.split(STOP, 1)[0] == "",
        cleaned_steps=again,
        cleaned_correct=again == len(wanted),
    )
