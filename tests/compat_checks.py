"""Checks for the model-class compatibility suite: what each request carried vs what each item shows."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq


def fixture_rows(data_dir: Path) -> dict[str, dict[str, Any]]:
    """The fixture's item rows by item_uid (every task of the prepared fixture version)."""
    (version,) = [p for p in data_dir.iterdir() if p.is_dir()]
    rows = {}
    for parquet in sorted(version.glob("datasets/*/test.parquet")):
        rows.update((row["item_uid"], row) for row in pq.read_table(parquet).to_pylist())
    return rows


def expected_colours(row: dict[str, Any], presented_order: list[int]) -> list[int]:
    """The pictures an item must send, in the order its prompt numbers them: context (-1), then the option
    pictures as presented (their canonical index); none for a text-only item."""
    context = [-1] if row["stimulus_image"] else []
    return context + (list(presented_order) if row["option_kind"] == "image" else [])


def item_records(out: Path) -> dict[str, list[dict[str, Any]]]:
    """The per-item records of every samples file under `out`, by task."""
    records = {}
    for path in sorted(out.rglob("*_samples_*.jsonl")):
        task = path.stem.split("_samples_", 1)[1]
        lines = path.read_text(encoding="utf-8").splitlines()
        records[task] = [json.loads(line)["levante_item"] for line in lines if line]
    return records


def last_write(folder: Path) -> float:
    """When a run finished writing its output folder (the newest file's mtime; infinity for a run that wrote none)."""
    times = [path.stat().st_mtime for path in folder.rglob("*") if path.is_file()]
    return max(times, default=math.inf)


def calls_by_run(calls: list[dict[str, Any]], run_ends: list[float]) -> list[list[dict[str, Any]]]:
    """The logged calls of one process that ran several evaluations in turn, split per run: a run's calls are those
    logged after the previous run wrote its last file and before its own (`run_ends`, from `last_write`)."""
    starts = [-math.inf, *run_ends[:-1]]
    return [[call for call in calls if start < call["time"] <= end]
            for start, end in zip(starts, run_ends, strict=True)]


def pictures_by_text(call: dict[str, Any]) -> list[list[int] | None]:
    """Each text's picture colours in one recorded call: a batched call's flat picture list split by the number of
    picture tokens in each text (None for every text when the counts do not account for the pictures)."""
    texts, counts = call["texts"], call.get("pictures_per_text")
    if len(texts) == 1:
        return [call["colours"]]
    if counts is None or sum(counts) != len(call["colours"]):
        return [None] * len(texts)
    starts = [sum(counts[:i]) for i in range(len(counts))]
    return [call["colours"][start:start + count] for start, count in zip(starts, counts, strict=True)]


def requests_of(calls: list[dict[str, Any]], phrase: str) -> list[list[int] | None]:
    """The picture colours of every recorded request whose text names this item's phrase (`"phrase 12"`), one entry
    per text of a batched call (None when that call's pictures cannot be told apart by text)."""
    marker = re.compile(re.escape(f'"{phrase}"'))
    return [colours for call in calls
            for text, colours in zip(call["texts"], pictures_by_text(call), strict=True) if marker.search(text)]


def picture_problems(calls: list[dict[str, Any]], records: dict[str, list[dict[str, Any]]],
                     rows: dict[str, dict[str, Any]]) -> list[str]:
    """One line per item whose requests did not carry exactly its pictures in prompt order (or were not seen)."""
    problems = []
    for task, recs in records.items():
        for rec in recs:
            row = rows[rec["item_uid"]]
            seen = requests_of(calls, row["prompt_phrase"])
            want = expected_colours(row, rec["presented_order"])
            if not seen:
                problems.append(f"{task}: {rec['item_uid']}: no request reached the processor")
            elif any(colours != want for colours in seen):
                problems.append(f"{task}: {rec['item_uid']}: sent {seen}, expected {want} every time")
    return problems


def placement_problems(calls: list[dict[str, Any]], records: dict[str, list[dict[str, Any]]],
                       rows: dict[str, dict[str, Any]], picture: str) -> list[str]:
    """For a class that interleaves pictures at their `<image N>` markers: one line per item whose request text
    (`picture` = the class's picture token run) does not put the context picture before the question, each option
    picture right after its letter (`A: <picture>`), and no marker left as text."""
    problems = []
    for task, recs in records.items():
        for rec in recs:
            row = rows[rec["item_uid"]]
            phrase = f'"{row["prompt_phrase"]}"'
            for text in (t for call in calls for t in call["texts"] if phrase in t):
                wrong = ["a `<image N>` marker left as text"] if re.search(r"<image \d+>", text) else []
                if bool(row["stimulus_image"]) != (picture in text[:text.index(phrase)]):
                    wrong.append("context picture not (only) before the question")
                if row["option_kind"] == "image":
                    letters = "ABCDEFGH"[:len(rec["presented_order"])]
                    wrong += [f"no picture after {x}:" for x in letters if f"{x}: {picture}" not in text]
                if text.count(picture) != len(expected_colours(row, rec["presented_order"])):
                    wrong.append(f"{text.count(picture)} pictures in the text")
                problems += [f"{task}: {rec['item_uid']}: {w}" for w in wrong]
    return problems
