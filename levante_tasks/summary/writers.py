"""The summary's files: matrix.csv, matrix.json (schema_version), summary.md, and runs/<run>/summary.json.

Everything is written into the staging folder the CLI hands in (levante_tasks.atomic), and holds labels
(`<run folder name>/<path inside it>`), never absolute paths, hostnames or user names.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from levante_tasks import __version__
from levante_tasks.atomic import atomic_open, write_json, write_text
from levante_tasks.markdown_table import markdown_table
from levante_tasks.runs.model import model_label
from levante_tasks.summary import l0_bins

SCHEMA_VERSION = 1
CI_METHOD = "wilson_items"  # stats.item_interval: Wilson at the effective number of items (replicates clustered)
KIND = "levante-tasks summary"
METHODS = {
    "ci": "95% interval over items: per-item accuracy = mean over the cell's replicates; p = mean over items; "
          "V = sum((m_i - p)^2) / n^2; Wilson score interval (z = 1.959964) at the effective number of items "
          "n_eff = p(1 - p) / V (at most the number of responses; n when p is 0 or 1); with one replicate the "
          "plain Wilson interval over the items. More seeds of the same items do not narrow it by sqrt(k)",
    "seeds": "over a cell's replicates (option-order seed x lmms-eval seeds): mean, sample SD (ddof = 1) and the "
             "t-based 95% CI radius t(0.975, n - 1) * sd / sqrt(n); none for one replicate",
    "accuracy": "mean of the replicates' accuracies, recomputed from the per-item records (levante_item)",
    "visual_dependency_delta": "acc(original) - acc(shuffled), mean over the replicates both cells ran",
    "blank_image_delta": "acc(original) - acc(blank), mean over the replicates both cells ran",
    "task_version": "the task's version from the task catalogue (TaskInfo.version, bumped by hand when what a "
                    "model is shown or how a response is scored or recorded changes), as the run recorded it; "
                    "unknown for runs that recorded none; replicates of different versions are never pooled",
    "task_config_sha256": "sha256 of the canonical JSON of the task's resolved config in the results file (memory "
                          "addresses removed, metadata.levante.provenance left out); inspect_ai: of the log's task "
                          "name, task version, task arguments and solver plan",
    "chance": "mean per-item chance: the record's chance_level, else 1 / number of options; items without one "
              "(sliders) are left out",
    "comparison_keys": "limit, budget, prompt, dataset_fingerprint, patch_set_sha256 must agree within a column "
                       "(among the cells of one harness)",
    "overall": "per model, harness and output type: accuracy pooled over the items of every task column (original "
               "images; sub-type columns left out, their items are in their task's), i.e. the mean over all items "
               "of the per-item accuracy (mean over replicates), each task weighted by its item count (as "
               "lmms-eval's levante group row); 95% interval over items as for cells",
    "markers": "synthetic data: the task's run provenance says its dataset was prepared from a levante-tasks synth "
               "release (synthetic_data, from dataset.json); test model: the model's answers carry test_model "
               "(a random-init checkpoint of levante_tasks.testing) or its adapter is an offline test double",
    "harness": "lmms-eval or inspect_ai: cells of different harnesses are never merged as replicates (the harness is "
               "part of the cell key; inspect rows have adapter inspect_ai:<model>)",
}
CSV_FIELDS = [
    "model", "revision", "adapter", "harness", "test_model", "family", "task", "parent", "output_type", "variant",
    "n_replicates", "n_items", "n_responses", "n_correct", "accuracy", "ci95_low", "ci95_high", "ci_method",
    "parse_rate", "chance", "seed_mean", "seed_sd", "seed_ci95_radius", "acc_blank", "blank_image_delta",
    "acc_shuffled", "visual_dependency_delta", "flags", "lmms_eval_version", "lmms_eval_commit", "patch_set_sha256",
    "task_version", "task_config_sha256", "task_source_sha256", "dataset_fingerprint", "data_version", "synthetic_data",
    "seeds", "option_seeds", "limit", "budget", "batch_size", "device_class", "model_args", "sources",
]
PROVENANCE_FIELDS = CSV_FIELDS[CSV_FIELDS.index("lmms_eval_version"):CSV_FIELDS.index("sources")]


def run_id(label: str, taken: set[str]) -> str:
    """A file-name-safe, unique id for a run label (`fixed/20261201_111129` -> `fixed__20261201_111129`)."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", label.replace("/", "__")).strip("._") or "run"
    name, k = base, 2
    while name in taken:
        name, k = f"{base}-{k}", k + 1
    taken.add(name)
    return name


def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, sort_keys=True, default=str)
    return value


def write_csv(path: Path, cells: list[dict[str, Any]]) -> None:
    """matrix.csv: one row per cell, provenance flattened (JSON for structured values)."""
    with atomic_open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS, lineterminator="\n")
        writer.writeheader()
        for cell in cells:
            row = {k: cell.get(k) for k in CSV_FIELDS}
            row.update({k: cell["provenance"].get(k) for k in PROVENANCE_FIELDS})
            row["ci_method"] = CI_METHOD
            row["flags"] = "; ".join(cell["flags"])
            row["sources"] = "; ".join(cell["sources"])
            writer.writerow({k: _csv_value(v) for k, v in row.items()})


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _cell_text(cell: dict[str, Any]) -> str:
    text = f"{_pct(cell['accuracy'])} [{_pct(cell['ci95_low'])}, {_pct(cell['ci95_high'])}] n={cell['n_items']}"
    text += f", parsed {cell['parse_rate']:.0%}" if cell["parse_rate"] is not None else ""
    replicates = cell["n_replicates"]
    text += f", {replicates} seed{'s' if replicates > 1 else ''}"
    if replicates > 1:
        radius = cell["seed_ci95_radius"]
        text += f" sd {cell['seed_sd']:.3f}" + (f" ±{radius:.3f}" if radius else "")
    return text + (" ⚠" if cell["flags"] else "")


def synthetic_cells(matrix: dict[str, Any]) -> list[dict[str, Any]]:
    """The cells whose data was prepared from a synthetic release (any replicate's provenance says so)."""
    def synthetic(value: Any) -> bool:
        return value is True or (isinstance(value, list) and True in value)
    return [c for c in matrix["cells"] if synthetic(c["provenance"].get("synthetic_data"))]


def reader_notes(matrix: dict[str, Any]) -> list[str]:
    """One line each when the matrix holds synthetic data or test models (summary.md, heatmap.png, report.md)."""
    notes = []
    synthetic = synthetic_cells(matrix)
    if synthetic:
        share = "all cells" if len(synthetic) == len(matrix["cells"]) else f"{len(synthetic)} of " \
            f"{len(matrix['cells'])} cells"
        notes.append(f"SYNTHETIC DATA ({share}): made-up items from levante-tasks synth, not LEVANTE's")
    tests = [model_label(m) for m in matrix["models"] if m.get("test_model")]
    if tests:
        notes.append(f"TEST MODEL{'S' if len(tests) > 1 else ''} (random-init or scripted, levante_tasks.testing; "
                     f"a pipeline check, not a capability result): {', '.join(tests)}")
    return notes


def _overall_section(matrix: dict[str, Any]) -> list[str]:
    """The overall row per model and output type: accuracy pooled over the items of every task (METHODS)."""
    rows = [[model_label(o), o["output_type"], f"{len(o['tasks'])}", _pct(o["chance"]),
             f"{_pct(o['accuracy'])} [{_pct(o['ci95_low'])}, {_pct(o['ci95_high'])}] n={o['n_items']}"]
            for o in matrix.get("overall") or []]
    if not rows:
        return []
    return ["## Overall", "", "Accuracy pooled over the items of every task column (original images; sub-type "
            "columns left out): each task weighted by its item count, as lmms-eval's `levante` group row; "
            "[95% CI over items] n = items; chance pooled the same way.", "",
            *_table(["model", "output type", "tasks", "chance", "overall"], rows)]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    clean = [[c.replace("|", "\\|") for c in row] for row in [header, *rows]]
    return [markdown_table(clean[0], clean[1:]), ""]


def _family_section(family: str, matrix: dict[str, Any]) -> list[str]:
    """One family: a table per image variant (rows = task columns, columns = models), then the control deltas."""
    columns = [c for c in matrix["columns"] if c["family"] == family]
    cells = [c for c in matrix["cells"] if c["family"] == family]
    models = sorted({model_label(c) for c in cells})
    lines = [f"## {family}", ""]
    for variant in ("original", "blank", "shuffled"):
        chosen = [c for c in cells if c["variant"] == variant]
        if not chosen:
            continue
        rows = []
        for column in columns:
            found = [c for c in chosen if c["task"] == column["task"] and c["output_type"] == column["output_type"]]
            if found:
                rows.append([column["task"], _pct(column["chance"]),
                             *("<br>".join(_cell_text(c) for c in found if model_label(c) == m) for m in models)])
        lines += [f"Accuracy with {variant} images:", "", *_table(["task", "chance", *models], rows)]
    rows = []
    for cell in (c for c in cells if c["variant"] == "original"):
        for control, delta in (("shuffled", "visual_dependency_delta"), ("blank", "blank_image_delta")):
            if cell.get(delta) is not None:
                rows.append([model_label(cell), cell["task"], control, str(cell[f"{control}_pairs"]),
                             _pct(cell[f"acc_{control}"] + cell[delta]), _pct(cell[f"acc_{control}"]),
                             f"{delta} = {cell[delta]:+.3f}"])
    if rows:
        lines += ["Visual controls (original minus control, on the replicates both ran):", "", *_table(
            ["model", "task", "control", "replicates", "acc", "acc control", "delta"], rows)]
    return lines


def summary_markdown(matrix: dict[str, Any], heatmap: bool) -> str:
    """summary.md: methods, then a table per task family, the L0 bins, then flags, problems and superseded runs."""
    runs = matrix["runs"]
    failed = sum(r["status"] == "failed" for r in runs)
    lines = [
        "# LEVANTE model x task summary", "",
        f"{len(matrix['models'])} model(s), {len(matrix['columns'])} task column(s), {len(matrix['cells'])} cell(s) "
        f"from {len(runs)} run(s) ({failed} failed). Generated by {matrix['generator']}; matrix.json schema "
        f"{matrix['schema_version']}.", "",
        "Cells: accuracy [95% CI over items] n = items, parse rate, the number of replicates (`k seeds`: option-order "
        "seeds x lmms-eval or inspect sampling seeds; accuracy is their mean); with several: sample SD over seeds and "
        "t-based 95% CI radius. The CI treats seeds as replicates of an item (per-item mean over "
        "seeds, Wilson at the effective number of items; docs/summary.md), so re-asking the same items does not "
        "narrow it. Accuracy is recomputed from the per-item records. "
        "visual_dependency_delta = acc - acc(shuffled), blank_image_delta = acc - acc(blank).", "",
    ]
    for note in reader_notes(matrix):
        lines += [f"> **{note}**", ""]
    lines += _overall_section(matrix)
    if heatmap and matrix["cells"]:
        lines += ["![accuracy heatmap](heatmap.png)", ""]
    for family in sorted({c["family"] for c in matrix["columns"]}):
        lines += _family_section(family, matrix)
    lines += l0_bins.markdown(matrix["l0"], heatmap)
    for title, items in (("Flags (cells not comparable with their column)", matrix["flags"]),
                         ("Problems (failed runs and tasks)", matrix["problems"]),
                         ("Superseded duplicate runs (identical provenance, newest kept)",
                          [f"{s['source']} {s['task']} -> {s['replaced_by']}" for s in matrix["superseded"]])):
        if items:
            lines += [f"## {title}", "", *(f"- {item}" for item in items), ""]
    return "\n".join(lines)


def matrix_document(built: Any, runs: list[dict[str, Any]], problems: list[str],
                    l0: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """matrix.json's content (`l0`: the L0 bins of each run that has L0 tasks, summary.l0_bins)."""
    return {
        "schema_version": SCHEMA_VERSION, "kind": KIND, "generator": f"levante-tasks {__version__}",
        "methods": METHODS, "models": built.models, "columns": built.columns, "cells": built.cells,
        "overall": built.overall,
        "runs": runs, "superseded": built.superseded, "flags": built.flags, "problems": problems, "l0": l0 or [],
    }


def write_all(folder: Path, matrix: dict[str, Any], run_summaries: dict[str, dict[str, Any]], plot: bool) -> None:
    """Every output file into `folder` (a staging folder)."""
    write_csv(folder / "matrix.csv", matrix["cells"])
    for rid, summary in run_summaries.items():
        write_json(folder / "runs" / rid / "summary.json", summary)
    if plot and matrix["cells"]:
        from levante_tasks.summary.plot import write_heatmap

        write_heatmap(folder / "heatmap.png", matrix)
    if plot and matrix["l0"]:
        l0_bins.write_plot(folder / "l0_bins.png", matrix["l0"])
    write_text(folder / "summary.md", summary_markdown(matrix, plot))
    write_json(folder / "matrix.json", matrix)
