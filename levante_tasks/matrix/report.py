"""The end step of a whole matrix: per group, the summary (model x task matrix) and the comparison with children
over the finished cells; then matrix.json and report.md (links plus a per-cell status table).

Models are compared only within their group: each group gets its own summary/<group>/ and comparison/<group>/,
built from that group's finished cells only (cells/<group>/), so models the config did not declare comparable
never share a matrix or a comparison.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from levante_tasks.atomic import write_json, write_text
from levante_tasks.errors import LevanteError, problem_text
from levante_tasks.markdown_table import markdown_table
from levante_tasks.matrix.config import MatrixConfig
from levante_tasks.matrix.plan import Cell
from levante_tasks.matrix.run import NOT_NEEDED, MatrixRun
from levante_tasks.matrix.state import read_state
from levante_tasks.summary.card import CARD_FILE, write_results_card

SCHEMA_VERSION = 1


@contextlib.contextmanager
def _writing(out: Path, rel: str) -> Iterator[None]:
    """Name the output an OSError (a full disk, a read-only folder) hit, as `<out>/<rel>: <problem>`; what was there
    before stays (every output is written whole or not at all)."""
    try:
        yield
    except OSError as exc:
        raise LevanteError(f"{Path(out.name) / rel}: {problem_text(exc)}") from None


def _cell_entry(cell: Cell, state: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """matrix.json's record of one cell (no times: those are under `timing`); `model_label` is the summary's name of
    its model (runs.model.model_label) once a summary read the cell, else None."""
    attempts = [{k: a[k] for k in ("batch_size", "outcome", "exit_code")} | {"model_load": _loaded(a)}
                for a in state.get("attempts", [])]
    return {"cell_id": cell.cell_id, "dir": cell.rel_dir, "model": cell.model.name,
            "public_id": cell.model.public_id, "revision": cell.model.revision, "group": cell.model.group,
            "model_label": labels.get(Path(cell.rel_dir).name),
            "task": cell.task, "seed": cell.seed, **({} if cell.sample is None else {"sample": cell.sample}),
            "lmms_task": cell.lmms_task, "sha256": cell.sha256,
            "status": state.get("status", "not run"), "batch_size": state.get("batch_size"),
            "oom_fallback": len(attempts) > 1 and state.get("status") == "done", "attempts": attempts,
            "error": state.get("error")}


def _loaded(attempt: dict[str, Any]) -> bool:
    """Whether an attempt's run built its model (an attempt recorded before runs shared a process: its own)."""
    return bool(attempt.get("model_load", True))


def model_loads(run: MatrixRun, states: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """How many times each model was built for the attempts its cells record (one per lmms-eval process with
    patch 0019, else one per run), and the total."""
    per_model = {m.name: sum(_loaded(a) for c in run.cells if c.model.name == m.name
                             for a in states[c.cell_id].get("attempts", [])) for m in run.config.models}
    return {"per_model": per_model, "total": sum(per_model.values())}


def orders_reached(run: MatrixRun, states: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per model in distribution mode: its settings, and per task the replicate orders K it reached (seeds 0..K-1
    with every sample done), the requests per item that cost (K x samples) and why it stopped there (`stops`:
    auto's decision per task, when it made one; a fixed K above the task's n! distinct orders is planned as n!)."""
    readout: dict[str, Any] = {}
    for model in run.config.models:
        spec = model.distribution
        if spec is None:
            continue
        tasks = {}
        for task in run.config.tasks:
            done_seeds = {c.seed for c in run.cells if c.model.name == model.name and c.task == task}
            planned = len(done_seeds)  # fewer than `orders` when the task has fewer distinct orders (plan.py)
            for cell in run.cells:
                if cell.model.name == model.name and cell.task == task and \
                        states[cell.cell_id].get("status") != "done":
                    done_seeds.discard(cell.seed)
            reached = next((k for k in range(spec.most_orders + 1) if k not in done_seeds), spec.most_orders)
            stop = run.stops.get((model.name, task))
            why = stop or (f"cells of order {reached} not finished" if reached < planned or spec.auto
                           else f"orders: {spec.orders}" if reached == spec.orders
                           else f"orders: {spec.orders}, capped at every order asked (n! = {planned})")
            tasks[task] = {"orders": reached, "requests_per_item": reached * spec.samples, "why": why}
        readout[model.name] = {**spec.document(), "tasks": tasks}
    return readout


def group_tolerance(config: MatrixConfig, group: str) -> dict[str, float]:
    """The comparison's `orders_tolerance` for a group: the tolerance its `orders: auto` models share (their
    comparison then reads `orders enough` as their runs decided), else the comparison's default (no key)."""
    tolerances = {m.distribution.tolerance for m in config.models
                  if m.group == group and m.distribution is not None and m.distribution.auto}
    return {"orders_tolerance": tolerances.pop()} if len(tolerances) == 1 else {}


def _summaries(run: MatrixRun, group: str, done: list[Cell], echo: Callable[[str], None]) -> dict[str, Any]:
    """Summarize and compare one group's finished cells; a step that cannot run is recorded, not fatal."""
    from levante_tasks.runs.model import model_label
    from levante_tasks.summary import summarize_runs, writers

    entry: dict[str, Any] = {"models": list(run.config.groups[group]), "cells_done": len(done), "summary": None,
                             "comparison": None, "problems": [], "notes": [], "model_labels": [], "labels": {}}
    if not done:
        entry["problems"].append("no finished cell: nothing to summarize")
        return entry
    try:
        with _writing(run.out, f"summary/{group}"):
            document = summarize_runs([run.out / c.rel_dir for c in done], run.out / "summary" / group,
                                      data_dir=run.config.data_dir)
        entry["summary"] = f"summary/{group}/summary.md"
        entry["problems"] += document["problems"]
        entry["notes"] = writers.reader_notes(document)
        entry["model_labels"] = [model_label(m) for m in document["models"]]
        entry["labels"] = {source.split("/", 1)[0]: model_label(cell)
                           for cell in document["cells"] for source in cell["sources"]}
        echo(f"summary ({group}): {len(document['cells'])} cell(s) -> summary/{group}/summary.md")
    except LevanteError as exc:
        entry["problems"] += [f"summary: {line}" for line in str(exc).splitlines()]
    spec = run.config.compare
    if spec is not None:
        from levante_tasks.compare.pipeline import Settings, run_compare  # only then: its imports cost ~1 s

        try:
            with _writing(run.out, f"comparison/{group}"):
                result = run_compare(list(spec.irt), spec.trials, spec.runs,
                                     run.out / "cells" / group, run.out / "comparison" / group,
                                     Settings(min_n=spec.min_n, n_boot=spec.n_boot, seed=spec.seed, plots=True,
                                              across_languages=spec.across_languages,
                                              **group_tolerance(run.config, group)),
                                     items_path=spec.items, model_folders=[run.out / c.rel_dir for c in done])
            entry["comparison"] = f"comparison/{group}/comparison.md"
            echo(f"comparison ({group}): {len(result['tasks'])} task(s) -> comparison/{group}/comparison.md")
        except LevanteError as exc:
            entry["problems"] += [f"comparison: {line}" for line in str(exc).splitlines()]
    return entry


def _markdown(document: dict[str, Any], timing: dict[str, float]) -> str:
    """report.md: where the summaries and comparisons are, then one row per cell."""
    lines = ["# Matrix report", "", f"Config: `{document['config']}`; {len(document['cells'])} cell(s), "
             f"{sum(c['status'] == 'done' for c in document['cells'])} done.", "",
             f"Model loads: {document['model_loads']['total']} ("
             + ", ".join(f"{name} {n}" for name, n in document["model_loads"]["per_model"].items())
             + ").", "", "## Groups", ""]
    for group, entry in document["groups"].items():
        links = [f"[summary]({entry['summary']})" if entry["summary"] else "no summary"]
        if entry["comparison"]:
            links.append(f"[comparison with children]({entry['comparison']})")
        names = entry["model_labels"] or entry["models"]
        lines.append(f"- **{group}** ({', '.join(names)}): {'; '.join(links)}")
        lines += [f"  - **{note}**" for note in entry["notes"]]
        lines += [f"  - problem: {p}" for p in entry["problems"]]
    rows = []
    for cell in document["cells"]:
        status = ("done (oom fallback)" if cell["oom_fallback"] else cell["status"])
        attempts = " -> ".join(f"{a['batch_size']}:{a['outcome']}" for a in cell["attempts"]) or "-"
        seconds = timing.get(cell["cell_id"])
        wall = f"{seconds:.0f} s" if seconds is not None else "-"
        model = cell["model_label"] or f"{cell['model']} (not summarized)"
        seed = cell["seed"] if "sample" not in cell else f"{cell['seed']} (sample {cell['sample']})"
        rows.append([f"[{cell['cell_id']}]({cell['dir']}/)", model, cell["task"], seed, status,
                     cell["batch_size"] or "-", attempts, wall])
    lines += ["", "## Cells", "", markdown_table(
        ["cell", "model", "task", "seed", "status", "batch size", "attempts", "wall time"], rows)]
    lines += _distribution_markdown(document.get("distribution") or {})
    failed = [c for c in document["cells"] if c["status"] not in ("done", NOT_NEEDED)]
    if failed:
        lines += ["", "## Failures", ""]
        for cell in failed:
            error = cell["error"] or {}
            lines += [f"### {cell['cell_id']}", "", error.get("reason", cell["status"]), "", "```",
                      *error.get("tail", []), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def _distribution_markdown(readout: dict[str, Any]) -> list[str]:
    """report.md's section on the models in distribution mode: per model x task the orders reached and why."""
    if not readout:
        return []
    rows = []
    for model, entry in readout.items():
        setting = f"orders: {entry['orders']}" + (f" (tolerance {entry['tolerance']:g}, max {entry['max_orders']})"
                                                  if entry["orders"] == "auto" else "")
        decoding = "greedy" if entry["temperature"] is None else \
            f"{entry['samples']} sample(s) per order at temperature {entry['temperature']:g}"
        rows += [[model, task, setting, decoding, t["orders"], t["requests_per_item"], t["why"]]
                 for task, t in entry["tasks"].items()]
    return ["", "## Response distributions", "",
            "Models in distribution mode ask every item under balanced option orders 0..K-1 (docs/matrix.md, "
            "*Response distributions*); K reached counts the orders whose cells all finished.", "",
            markdown_table(["model", "task", "setting", "decoding", "K reached", "requests per item", "why"], rows)]


def _linked(groups: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The files the matrix's results card lists beside the summaries' tables: matrix.json, and each group's
    summary card and (when compared) the card of the children's data its comparison used."""
    linked = {"matrix.json": "the matrix run's matrix.json (cells, attempts, groups)"}
    for group, entry in groups.items():
        if entry["summary"]:
            linked[f"summary/{group}/{CARD_FILE}"] = f"results card of group {group}'s summary"
        if entry["comparison"]:
            linked[f"comparison/{group}/{CARD_FILE}"] = f"card of the children's data group {group} was compared with"
    return linked


def write_report(run: MatrixRun, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Summaries and comparisons per group, then matrix.json and report.md; returns matrix.json's content."""
    states = {c.cell_id: run.states.get(c.cell_id) or read_state(run.out / c.rel_dir) or {} for c in run.cells}
    groups = {}
    for group in run.config.groups:
        done = [c for c in run.cells if c.model.group == group and states[c.cell_id].get("status") == "done"]
        groups[group] = _summaries(run, group, done, echo)
    labels = {folder: label for entry in groups.values() for folder, label in entry.pop("labels").items()}
    timing = {c.cell_id: states[c.cell_id]["seconds"] for c in run.cells if "seconds" in states[c.cell_id]}
    document = {"schema": SCHEMA_VERSION, "config": run.config.path.name,
                "cells": [_cell_entry(c, states[c.cell_id], labels) for c in run.cells],
                "model_loads": model_loads(run, states), "groups": groups,
                "timing": {"cell_seconds": timing}}
    readout = orders_reached(run, states)
    if readout:
        document["distribution"] = readout
    with _writing(run.out, "matrix.json"):
        write_json(run.out / "matrix.json", document)
    with _writing(run.out, CARD_FILE):
        write_results_card(run.out, {f"results_{group}": f"summary/{group}/matrix.csv"
                                     for group, entry in groups.items() if entry["summary"]},
                           _linked(groups), run.config.data_dir)
    with _writing(run.out, "report.md"):
        write_text(run.out / "report.md", _markdown(document, timing))
    echo(f"report: {Path(run.out.name) / 'report.md'} ({sum(c['status'] == 'done' for c in document['cells'])}/"
         f"{len(document['cells'])} cell(s) done)")
    return document

