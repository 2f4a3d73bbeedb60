"""Units -> the model x task matrix: duplicates resolved, comparisons checked, replicates and controls combined.

- Harness: lmms-eval and inspect_ai units never share a cell (the harness is part of the cell key, and inspect
  rows name their provider as adapter `inspect_ai:<model>`), so they are never merged as replicates; comparison
  keys are checked among the cells of one harness within a column (the harnesses record different budgets and
  prompts). Agreement across harnesses is a per-item check (docs/inspect.md), not a matrix merge.
- Task version: the replicates of one cell must share the task's version (provenance `task_version`, the
  catalogue's human-bumped `TaskInfo.version`; "unknown" for runs that recorded none, which differs from any
  number). Runs of different versions are refused, always (`allow_mismatch` does not keep them: results of different
  task versions are never pooled); one line per cell naming each version and the files that carry it.
- Duplicate: two units of one cell with the same replicate key (same option-order seed and lmms-eval seeds).
  The newest (results `date`, then label) wins when their provenance is identical; otherwise it is an error
  (never overridden: the two runs claim to be the same thing and are not).
- Comparison: every cell of a column (all models, all variants, all replicates) must agree on
  provenance.COMPARISON_KEYS (limit, budget, prompt, dataset fingerprint, patch set). A disagreement is refused;
  with `allow_mismatch` the disagreeing units form their own cells (never averaged with the others), flagged.
- Cell numbers: accuracy = mean of the replicates' accuracies (= the accuracy with one replicate); 95% interval
  over items (stats.item_interval: per-item mean over the replicates, Wilson at the effective number of items,
  so re-asking the same items under more seeds does not narrow it); parse rate pooled; over >= 2 replicates the mean,
  sample SD and t-based 95% CI radius (stats.seed_summary).
- Overall (`Built.overall`): per model row, harness and output type, the accuracy pooled over the items of every
  task column (original images; sub-type columns left out), each task weighted by its item count, with its 95%
  interval over items (`_overall`).
- Controls (positive = the images helped): visual_dependency_delta = acc - acc_shuffled,
  blank_image_delta = acc - acc_blank, each the mean over the replicates both cells ran (paired on
  option-order seed and lmms-eval seeds); None when they share no replicate.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from levante_tasks.errors import LevanteError
from levante_tasks.summary import stats
from levante_tasks.summary.provenance import UNKNOWN, sha256_json
from levante_tasks.summary.units import Unit

CONTROLS = {"shuffled": "visual_dependency_delta", "blank": "blank_image_delta"}
CellKey = tuple[tuple[str, str, str], str, str, str, str, str, str]  # row, harness, family, task, output type,
# variant, comparison signature


@dataclass
class Built:
    """What `build` found: cells (dicts ready to write), columns, rows, superseded duplicates, flags."""

    cells: list[dict[str, Any]]
    columns: list[dict[str, Any]]
    models: list[dict[str, Any]]
    superseded: list[dict[str, str]] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    overall: list[dict[str, Any]] = field(default_factory=list)


def _short(value: Any) -> str:
    """A value for a one-line message: JSON, long strings (hashes) cut to 16 characters."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text[:16] + "..." if len(text) > 24 else text


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    """`key.sub a vs b` for every leaf where two provenance dicts differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [line for key in sorted(set(a) | set(b), key=str)
                for line in _differences(a.get(key), b.get(key), f"{path}.{key}" if path else str(key))]
    if sha256_json(a) == sha256_json(b):
        return []
    return [f"{path} {_short(a)} vs {_short(b)}"]


def _model_text(row: tuple[str, str, str]) -> str:
    public_id, revision, adapter = row
    return f"{public_id}@{revision[:12]} ({adapter})"


def check_task_versions(units: list[Unit]) -> None:
    """LevanteError when the replicates of one cell carry different task versions (one line per cell)."""
    by_cell: dict[tuple, list[Unit]] = defaultdict(list)
    for unit in units:
        if not unit.parent:  # a sub-type column's units share their task's file and version
            by_cell[(unit.row, unit.harness, unit.family, unit.task, unit.output_type, unit.variant)].append(unit)
    lines = []
    for (row, _, _, task, _, variant), members in sorted(by_cell.items(), key=lambda kv: repr(kv[0])):
        sources: dict[str, set[str]] = defaultdict(set)
        for unit in members:
            sources[str(unit.provenance.get("task_version", UNKNOWN))].add(unit.source)
        if len(sources) > 1:
            found = "; ".join(f"task_version {version} in {', '.join(sorted(files))}"
                              for version, files in sorted(sources.items()))
            lines.append(f"{task} ({variant}, {_model_text(row)}): runs of different task versions would be pooled "
                         f"into one cell: {found}; results of different task versions are never pooled: summarize "
                         f"them apart or rerun the older version")
    if lines:
        raise LevanteError("\n".join(lines))


def resolve_duplicates(units: list[Unit]) -> tuple[list[Unit], list[dict[str, str]]]:
    """Keep one unit per (cell, replicate): newest when provenance is identical; else LevanteError."""
    by_key: dict[tuple, list[Unit]] = defaultdict(list)
    for unit in units:
        by_key[(unit.row, unit.harness, unit.family, unit.task, unit.output_type, unit.variant,
                unit.replicate)].append(unit)
    kept, superseded, errors = [], [], []
    for group in by_key.values():
        group.sort(key=lambda u: (u.date, u.source))
        newest = group[-1]
        for other in group[:-1]:
            differ = _differences(other.provenance, newest.provenance)
            if differ:
                errors.append(f"duplicate cell {newest.task} ({newest.variant}, seed {newest.replicate[0]}, "
                              f"{_model_text(newest.row)}) in {other.source} and {newest.source} with other "
                              f"provenance: {'; '.join(differ)}")
            else:
                superseded.append({"source": other.source, "task": other.leaf, "replaced_by": newest.source})
        kept.append(newest)
    if errors:
        raise LevanteError("\n".join(errors))
    return kept, superseded


def check_comparisons(units: list[Unit], allow_mismatch: bool) -> dict[int, list[str]]:
    """Flags per unit (by id) whose comparison keys differ from its column's; LevanteError unless allowed."""
    by_column: dict[tuple, list[Unit]] = defaultdict(list)
    for unit in units:
        by_column[(unit.harness, unit.family, unit.task, unit.output_type)].append(unit)
    flags: dict[int, list[str]] = {}
    lines: list[str] = []
    for (_, _, task, _), members in sorted(by_column.items()):
        counts = Counter(u.signature for u in members)
        reference_sig = min(counts, key=lambda s: (-counts[s], s))
        reference = next(u for u in members if u.signature == reference_sig)
        seen: set[tuple] = set()
        for unit in members:
            if unit.signature == reference_sig:
                continue
            differ = _differences(reference.comparison, unit.comparison)
            flag = f"not comparable with the column's other cells: {'; '.join(differ)}"
            flags[id(unit)] = [flag]
            key = (unit.row, unit.variant, unit.signature)
            if key not in seen:
                seen.add(key)
                lines.append(f"{task} ({unit.variant}, {_model_text(unit.row)}, {unit.source}) differs from "
                             f"{reference.source} in {'; '.join(differ)}")
    by_cell: dict[tuple, list[Unit]] = defaultdict(list)
    for unit in units:
        by_cell[(unit.row, unit.harness, unit.family, unit.task, unit.output_type, unit.variant)].append(unit)
    for members in by_cell.values():
        if len({u.signature for u in members}) > 1:
            for unit in members:
                flags.setdefault(id(unit), []).append(
                    "replicates of this cell with other provenance are kept apart (never averaged)")
    if lines and not allow_mismatch:
        raise LevanteError("\n".join(
            [*lines, "cells that differ in these keys are not compared or averaged: rerun with the same settings, "
                     "or pass --allow-mismatch to keep them as separate, flagged cells"]))
    return flags


def _merge_provenance(units: list[Unit]) -> dict[str, Any]:
    """Per key: the value when all replicates agree, else the sorted list of distinct values."""
    merged: dict[str, Any] = {}
    for key, first in units[0].provenance.items():
        if all(u.provenance[key] == first for u in units[1:]):
            merged[key] = first
            continue
        values = {sha256_json(u.provenance[key]): u.provenance[key] for u in units}
        merged[key] = [values[h] for h in sorted(values)]
    merged["seeds"] = sorted({tuple(u.provenance["seeds"].values()) for u in units}, key=repr)
    merged["option_seeds"] = sorted({u.replicate[0] for u in units})
    return merged


def _cell(key: CellKey, units: list[Unit], flags: list[str]) -> dict[str, Any]:
    units = sorted(units, key=lambda u: repr(u.replicate))
    row, harness, family, task, output_type, variant, sig = key
    n = sum(u.n for u in units)
    correct = sum(u.correct for u in units)
    low, high = stats.item_interval(_item_means(units), n)
    spread = stats.seed_summary([u.accuracy for u in units])
    chance_n = sum(u.chance_n for u in units)
    return {
        "model": row[0], "revision": row[1], "adapter": row[2], "test_model": any(u.test_model for u in units),
        "harness": harness, "family": family, "task": task,
        "parent": units[0].parent, "output_type": output_type, "variant": variant,
        "n_replicates": len(units), "n_items": len(frozenset().union(*(u.items for u in units))),
        "n_responses": n, "n_correct": correct, "accuracy": spread["mean"],
        "ci95_low": low, "ci95_high": high, "parse_rate": sum(u.parsed for u in units) / n if n else None,
        "chance": sum(u.chance_sum for u in units) / chance_n if chance_n else None,
        "seed_mean": spread["mean"] if len(units) > 1 else None, "seed_sd": spread["sd"],
        "seed_ci95_radius": spread["ci95_radius"],
        "replicates": [{"option_seed": u.replicate[0], "seeds": list(u.replicate[1:]), "accuracy": u.accuracy,
                        "n": u.n, "correct": u.correct, "parsed": u.parsed, "source": u.source, "task": u.leaf}
                       for u in units],
        "flags": sorted(set(flags)), "sources": sorted({u.source for u in units}), "comparison_sig": sig,
        "provenance": _merge_provenance(units),
    }


def _item_means(units: list[Unit], tag: str = "") -> list[float]:
    """Per item (`tag` + item_uid): its accuracy averaged over the replicates that asked it."""
    answers: dict[str, list[int]] = defaultdict(list)
    for unit in units:
        for uid, hit in unit.item_correct.items():
            answers[tag + "\0" + uid].append(hit)
    return [sum(v) / len(v) for v in answers.values()]


def _overall(grouped: dict[CellKey, list[Unit]]) -> list[dict[str, Any]]:
    """Per model row, harness and output type: accuracy pooled over the items of every task column (original
    images, sub-type columns left out: their items are in their task's): the mean over all items of the
    per-item accuracy (mean over replicates), i.e. each task weighted by its item count, as lmms-eval's `levante`
    group row; its 95% interval over items (stats.item_interval) and the pooled chance."""
    pools: dict[tuple, list[tuple[str, list[Unit]]]] = defaultdict(list)
    for (row, harness, _family, task, output_type, variant, _sig), units in grouped.items():
        if variant == "original" and not units[0].parent:
            pools[(row, harness, output_type)].append((task, units))
    out = []
    for (row, harness, output_type), members in sorted(pools.items(), key=lambda kv: repr(kv[0])):
        means = [m for task, units in members for m in _item_means(units, task)]
        units = [u for _, group in members for u in group]
        low, high = stats.item_interval(means, sum(u.n for u in units))
        chance_n = sum(u.chance_n for u in units)
        out.append({"model": row[0], "revision": row[1], "adapter": row[2], "harness": harness,
                    "output_type": output_type, "tasks": sorted({task for task, _ in members}),
                    "n_items": len(means), "accuracy": sum(means) / len(means) if means else None,
                    "ci95_low": low, "ci95_high": high,
                    "chance": sum(u.chance_sum for u in units) / chance_n if chance_n else None})
    return out


def _add_deltas(cells: dict[CellKey, dict[str, Any]], grouped: dict[CellKey, list[Unit]]) -> None:
    for key, cell in cells.items():
        row, harness, family, task, output_type, variant, sig = key
        if variant != "original":
            continue
        mine = {u.replicate: u.accuracy for u in grouped[key]}
        for control, name in CONTROLS.items():
            other = grouped.get((row, harness, family, task, output_type, control, sig), [])
            theirs = {u.replicate: u.accuracy for u in other}
            common = sorted(set(mine) & set(theirs), key=repr)
            cell[f"acc_{control}"] = sum(theirs[r] for r in common) / len(common) if common else None
            cell[name] = sum(mine[r] - theirs[r] for r in common) / len(common) if common else None
            cell[f"{control}_pairs"] = len(common)


def build(units: list[Unit], allow_mismatch: bool = False) -> Built:
    """The matrix of `units` (see the module docstring); LevanteError on mixed task versions, refused duplicates or
    comparisons."""
    check_task_versions(units)
    units, superseded = resolve_duplicates(units)
    flags = check_comparisons(units, allow_mismatch)
    grouped: dict[CellKey, list[Unit]] = defaultdict(list)
    for unit in units:
        grouped[(unit.row, unit.harness, unit.family, unit.task, unit.output_type, unit.variant,
                 unit.signature)].append(unit)
    cells = {key: _cell(key, members, [f for u in members for f in flags.get(id(u), [])])
             for key, members in sorted(grouped.items(), key=lambda kv: repr(kv[0]))}
    _add_deltas(cells, grouped)
    columns: dict[tuple, dict[str, Any]] = {}
    for cell in cells.values():
        column = columns.setdefault((cell["family"], cell["task"], cell["output_type"]), {
            "family": cell["family"], "task": cell["task"], "parent": cell["parent"],
            "output_type": cell["output_type"], "chance": cell["chance"]})
        if column["chance"] is None:
            column["chance"] = cell["chance"]
    test_models = {(c["model"], c["revision"], c["adapter"]) for c in cells.values() if c["test_model"]}
    rows = sorted({(c["model"], c["revision"], c["adapter"]) for c in cells.values()})
    return Built(
        cells=list(cells.values()), columns=[columns[k] for k in sorted(columns)],
        models=[{"model": m, "revision": r, "adapter": a, "test_model": (m, r, a) in test_models} for m, r, a in rows],
        superseded=superseded, flags=sorted({f for c in cells.values() for f in c["flags"]}),
        overall=_overall(grouped))
