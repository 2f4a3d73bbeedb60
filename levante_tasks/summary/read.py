"""Read lmms-eval's results JSON and samples JSON Lines strictly: any damage is one line naming the file (and line).

A UTF-8 BOM is accepted; a NUL byte, bytes that are not UTF-8, invalid or truncated JSON and missing keys are
`FileProblem`s. Schema: lmms-eval 0.7.x `EvaluationTracker` output (keys `results`, `configs`, `config`, `n-samples`
are required; `groups`, `group_subtasks` and the rest are optional).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from levante_tasks.textfile import read_text

REQUIRED = {"results": dict, "configs": dict, "config": dict, "n-samples": dict}
OPTIONAL = {"groups": dict, "group_subtasks": dict}


class FileProblem(Exception):
    """One file (or one line of it) cannot be used; the message is one line that names it."""


def _text(path: Path, label: str) -> str:
    """The file's text (textfile.read_text: BOM dropped; unreadable, NUL or non-UTF-8 bytes: FileProblem)."""
    return read_text(path, label, nul=True, error=FileProblem)


def read_results(path: Path, label: str) -> dict[str, Any]:
    """A parsed `*_results.json`; FileProblem when it is damaged, truncated or not an lmms-eval results file."""
    text = _text(path, label)
    try:
        data = json.loads(text)
    except ValueError as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise FileProblem(f"{label}: invalid JSON{where} (truncated or damaged file?)") from None
    if not isinstance(data, dict):
        raise FileProblem(f"{label}: not a JSON object (not an lmms-eval results file)")
    for key, kind in {**REQUIRED, **OPTIONAL}.items():
        if key not in data and key in REQUIRED:
            raise FileProblem(f"{label}: missing key {key!r} (not a complete lmms-eval results file)")
        if key in data and not isinstance(data[key], kind):
            raise FileProblem(f"{label}: key {key!r} is not a JSON {'object' if kind is dict else kind.__name__}")
    return data


def read_samples(path: Path, label: str) -> list[dict[str, Any]]:
    """The lines of a `*_samples_<task>.jsonl` as dicts; FileProblem names the first bad line (`file:line`)."""
    text = _text(path, label)
    lines = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise FileProblem(f"{label}:{number}: invalid JSON ({exc.__class__.__name__}: truncated line?)") from None
        if not isinstance(obj, dict):
            raise FileProblem(f"{label}:{number}: not a JSON object")
        obj["_line"] = number
        lines.append(obj)
    return lines
