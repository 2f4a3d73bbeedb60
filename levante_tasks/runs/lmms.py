"""Read lmms-eval's results JSON and samples JSON Lines strictly: any damage is one line naming the file (and line).

A UTF-8 BOM is accepted; a NUL byte, bytes that are not UTF-8, invalid or truncated JSON and missing keys are
`FileProblem`s, worded as textfile words bad bytes: `<file>:<line>: <problem>` (`<file>: <problem>` for a whole
file). Schema: lmms-eval 0.7.x `EvaluationTracker` output (keys `results`, `configs`, `config`, `n-samples` are
required; `groups`, `group_subtasks` and the rest are optional). summary, verify, rescore, compare and matrix all
read these files here.
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import jiter

from levante_tasks.errors import LevanteError
from levante_tasks.runs import variant_check
from levante_tasks.schema.records import RECORD_KEY
from levante_tasks.textfile import read_text

REQUIRED = {"results": dict, "configs": dict, "config": dict, "n-samples": dict}
OPTIONAL = {"groups": dict, "group_subtasks": dict}
RESULTS_SUFFIX = "_results.json"
# `<date>_samples_<task>.jsonl` as lmms-eval names it (the date prefix is missing from hand-made copies)
SAMPLES_NAME = re.compile(r"^(?:(?P<date>.+?)_)?samples_(?P<task>.+)\.jsonl$")


class FileProblem(LevanteError):
    """One file (or one line of it) cannot be used; the message is one line that names it."""


class SampleLine(NamedTuple):
    """One line of a samples file: its 1-based line number and the JSON object written there (a named tuple: a file
    makes one per line, at half a frozen dataclass's cost)."""

    number: int
    data: dict[str, Any]

    @property
    def record(self) -> dict[str, Any] | None:
        """The LEVANTE per-item record of the line (key `levante_item`), None when it carries none."""
        value = self.data.get(RECORD_KEY)
        return value if isinstance(value, dict) else None


def _text(path: Path, label: str) -> str:
    """The file's text (textfile.read_text: BOM dropped; unreadable, NUL or non-UTF-8 bytes: FileProblem)."""
    return read_text(path, label, nul=True, error=FileProblem)


def _json(text: str, label: str, first_line: int = 1) -> Any:
    """`text` parsed as JSON, the value `json.loads` gives; FileProblem `<label>:<line>: invalid JSON at column <c>
    (truncated or damaged?)`.

    jiter (pydantic's Rust parser) reads it first, about twice as fast as the standard library's decoder, and gives
    the same values: NaN and Infinity, integers of any size, floats correctly rounded, a repeated key's last value
    at its first place. What jiter refuses (a lone surrogate escape, nesting deeper than its limit, or damage) goes
    to `json.loads`, which reads it or names the problem.
    """
    try:
        return jiter.from_json(text.encode())
    except ValueError:
        return _json_loads(text, label, first_line)


def _json_loads(text: str, label: str, first_line: int) -> Any:
    """`json.loads(text)`, its problem a FileProblem naming the line and column (`_json`'s second reader)."""
    try:
        return json.loads(text)
    except ValueError as exc:
        line, column = (exc.lineno, exc.colno) if isinstance(exc, json.JSONDecodeError) else (1, 1)
        raise FileProblem(f"{label}:{first_line + line - 1}: invalid JSON at column {column} "
                          "(truncated or damaged?)") from None
    except RecursionError:  # nested too deep for json too: damage
        raise FileProblem(f"{label}:{first_line}: invalid JSON nested too deep (damaged?)") from None


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while JSON is read: its collections would walk the new trees again and
    again as they grow; parsed JSON holds no cycles, so nothing piles up (reference counting frees it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_json_object(path: Path, label: str) -> dict[str, Any]:
    """A JSON file holding one object (FileProblem otherwise): a results file, complete or not."""
    data = _json(_text(path, label), label)
    if not isinstance(data, dict):
        raise FileProblem(f"{label}: not a JSON object (not an lmms-eval results file)")
    return data


def read_results(path: Path, label: str) -> dict[str, Any]:
    """A parsed `*_results.json`; FileProblem when it is damaged, truncated or not an lmms-eval results file."""
    data = read_json_object(path, label)
    for key, kind in {**REQUIRED, **OPTIONAL}.items():
        if key not in data and key in REQUIRED:
            raise FileProblem(f"{label}: missing key {key!r} (not a complete lmms-eval results file)")
        if key in data and not isinstance(data[key], kind):
            raise FileProblem(f"{label}: key {key!r} is not a JSON {'object' if kind is dict else kind.__name__}")
    return data


def read_samples(path: Path, label: str) -> list[SampleLine]:
    """The lines of a `*_samples_<task>.jsonl` (blank lines skipped); FileProblem names the first bad line, or the
    file when its records are of another LEVANTE variant than its name says (variant_check: a swapped file)."""
    lines = []
    with cyclic_gc_paused():
        for number, line in enumerate(_text(path, label).split("\n"), start=1):
            if line.strip():
                try:  # `_json(line, label, number)`, its first reader inline: every line of every file comes here
                    obj = jiter.from_json(line.encode())
                except ValueError:
                    obj = _json_loads(line, label, number)
                if type(obj) is not dict:
                    raise FileProblem(f"{label}:{number}: not a JSON object")
                lines.append(SampleLine(number, obj))
    named = samples_name(path.name)
    expected = variant_check.named_variant(named[1]) if named else None
    if expected is not None:
        records = ((f"line {line.number}", record) for line in lines
                   if isinstance(record := line.data.get(RECORD_KEY), dict))  # SampleLine.record, read once
        problem = variant_check.mismatch(label, f"its name ({named[1]})", expected, records)
        if problem:
            raise FileProblem(problem)
    return lines


class RunReader:
    """`read_results` and `read_samples` with each file read once: the readers of one run in one pass (`summarize
    --verify`) share what was read (a FileProblem is raised again to each), and it is freed with the reader. The
    values are shared, so no reader may change them."""

    def __init__(self) -> None:
        self._read: dict[tuple[Any, Path, str], Any] = {}  # (reader function, path, label): value or FileProblem

    def results(self, path: Path, label: str) -> dict[str, Any]:
        """`read_results(path, label)`, read once."""
        return self._once(read_results, path, label)

    def samples(self, path: Path, label: str) -> list[SampleLine]:
        """`read_samples(path, label)`, read once."""
        return self._once(read_samples, path, label)

    def _once(self, read: Any, path: Path, label: str) -> Any:
        key = (read, path, label)
        if key not in self._read:
            try:
                self._read[key] = read(path, label)
            except FileProblem as exc:
                self._read[key] = exc
        value = self._read[key]
        if isinstance(value, FileProblem):
            raise value
        return value


def samples_name(name: str) -> tuple[str, str] | None:
    """(date prefix, lmms-eval task) of a samples file name (date "" when it has none); None for other names."""
    match = SAMPLES_NAME.match(name)
    return (match["date"] or "", match["task"]) if match else None
