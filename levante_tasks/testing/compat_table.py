"""Render the model-class compatibility table (docs/compatibility.md, README) from the compatibility suite's results.

`tests/test_compat_models.py`, run with `$LEVANTE_COMPAT_RESULTS=DIR` on each lmms-eval version, writes one JSON per
case (model class, checkpoint, chat or simple, generate / MC, status, the patches of ours it needs, the outcome at
each batch size). This module
turns them into tables; nothing in them is written by hand:

    python -m levante_tasks.testing.compat_table DIR --doc docs/compatibility.md --readme README.md
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from levante_tasks.atomic import write_text
from levante_tasks.markdown_table import markdown_table

# What runs the `_mc` variants where a class has no loglikelihood (lmms-eval patch 0017's refusal says the same).
MC_INSTEAD = "; instead: `levante_vlm_mc` or `levante_clip`, or this class on the generation variants"
BEGIN, END = "<!-- compat-table:begin (generated: levante_tasks.testing.compat_table) -->", "<!-- compat-table:end -->"


def load_results(folder: Path) -> list[dict[str, Any]]:
    """Every case outcome in `folder` (`<version>-<case>.json`), sorted by class, checkpoint, layout, version."""
    rows = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))]
    return sorted(rows, key=lambda r: (r["model"], r["checkpoint"], str(r["simple"]), r.get("option", ""),
                                       r["lmms_eval"]))


def _status(row: dict[str, Any]) -> str:
    if row["status"] == "works" and row["patches"]:
        return "works with patch " + ", ".join(row["patches"])
    return row["status"] + (f": {row['detail']}" if row["detail"] else "")


def _mc_status(row: dict[str, Any], refused: dict[tuple[str, str], dict[str, Any]]) -> str:
    if row["mc"]:
        return _status(row)
    refusal = refused.get((row["model"], row["lmms_eval"]))
    return _status(refusal) + MC_INSTEAD if refusal else "not in the suite"


def _batches(row: dict[str, Any]) -> str:
    """The batch sizes a case ran at: those that work listed, then any other with its outcome (`1` for a result
    written before the suite ran several batch sizes; `-` for a class that was refused outright)."""
    if row["status"] == "refused":
        return "-"
    outcomes = row.get("batches") or {"1": row["status"]}
    works = [size for size, outcome in outcomes.items() if outcome == "works"]
    others = [f"{size}: {outcome}" for size, outcome in outcomes.items() if outcome != "works"]
    return "; ".join(filter(None, [", ".join(works), *others]))


def full_table(rows: Iterable[dict[str, Any]]) -> str:
    """Class x checkpoint x layout x lmms-eval version: batch sizes run, generate and MC (`_mc` variants) status."""
    rows = list(rows)
    refused = {(r["model"], r["lmms_eval"]): r for r in rows if r["status"] == "refused" and r["mc"]}
    table = []
    for row in rows:
        if row["status"] == "refused" and row["mc"]:
            continue
        layout = "simple (`--force_simple`)" if row["simple"] else "chat"
        if row.get("option"):
            layout += f", `{row['option']}`"
        if row["status"] == "refused":
            generate = mc = _status(row)
            layout = "-"
        else:
            generate, mc = _status(row), _mc_status(row, refused)
        table.append([f"`{row['model']}`", row["checkpoint"], layout, row["lmms_eval"], _batches(row), generate, mc])
    header = ["model class", "checkpoint", "layout", "lmms-eval", "batch sizes", "generate (every task)",
              "MC (`_mc` variants)"]
    return markdown_table(header, table) + "\n"


def _word(outcomes: set[str]) -> str:
    """`yes` if some checkpoint works, `no` if it failed or was refused, `not run` for a version it was not run on."""
    return "yes" if "works" in outcomes else "no" if outcomes else "not run"


def short_table(rows: Iterable[dict[str, Any]]) -> str:
    """Per model class and lmms-eval version: does generate / MC work on every LEVANTE task (any checkpoint)."""
    seen: dict[tuple[str, str, str], set[str]] = {}
    for row in rows:
        refused_mc_only = row["status"] == "refused" and row["mc"]
        kinds = ["mc"] if refused_mc_only else ["generate", "mc"] if row["mc"] or row["status"] == "refused" else [
            "generate"]
        for kind in kinds:
            seen.setdefault((row["model"], row["lmms_eval"], kind), set()).add(row["status"])
    versions = sorted({version for _, version, _ in seen})
    header = ["model class", *(f"{v} {kind}" for v in versions for kind in ("generate", "MC"))]
    table = [[f"`{model}`", *(_word(seen.get((model, version, kind), set())) for version in versions
                              for kind in ("generate", "mc"))] for model in sorted({model for model, _, _ in seen})]
    return markdown_table(header, table) + "\n"


def replace_between_markers(text: str, table: str, where: str) -> str:
    """`text` with the generated block between the compat-table markers replaced by `table`."""
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{where}: no compat-table markers ({BEGIN} ... {END})")
    return pattern.sub(lambda _: f"{BEGIN}\n{table}{END}", text, count=1)


def main(argv: list[str] | None = None) -> int:
    """Write the full table into `--doc` and the short one into `--readme`, between their markers."""
    parser = argparse.ArgumentParser(prog="python -m levante_tasks.testing.compat_table")
    parser.add_argument("results", type=Path, help="folder of the suite's case results ($LEVANTE_COMPAT_RESULTS)")
    parser.add_argument("--doc", type=Path, required=True)
    parser.add_argument("--readme", type=Path)
    args = parser.parse_args(argv)
    rows = load_results(args.results)
    if not rows:
        raise SystemExit(f"{args.results}: no case results (run tests/test_compat_models.py with "
                         "LEVANTE_COMPAT_RESULTS set)")
    for path, table in ((args.doc, full_table(rows)), (args.readme, short_table(rows))):
        if path is not None:
            write_text(path, replace_between_markers(path.read_text(encoding="utf-8"), table, str(path)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
