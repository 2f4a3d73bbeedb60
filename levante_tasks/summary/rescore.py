"""`levante-tasks rescore RUN_DIR... --out DIR`: re-read saved responses with today's parser, write new runs.

Every lmms-eval run (`*_results.json` + `*_samples_<task>.jsonl`) and inspect_ai `.eval` log under the run folders
is re-parsed record by record (`core.reparse`: the saved response, the record's presented order and option
texts) and written to `DIR/<run folder name>/<path inside it>` in its own format, so `summarize` and `verify`
read the output as they read runs. A file whose records all stay the same is copied byte for byte; in a changed
samples file only the changed lines are rewritten (record and its per-line metrics), and the results file's
metrics are recomputed from the lines (verify.leaf_expected, group rows pooled); a changed log gets the new
`levante_record` scores and its accuracy and stderr recomputed. `DIR/rescore.json` and `DIR/rescore.md` list
the items whose record changed and count them by (old form -> new form). The inputs are only read: `--out`
inside a run folder, or a run folder inside `--out`, is refused; `--out` is replaced whole (staging, then
rename) and only when it is empty, absent or an earlier rescore output.
"""

from __future__ import annotations

import argparse
import codecs
import json
import os
import shutil
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from levante_tasks.atomic import clean_stale, replaceable_dir, staged_dir
from levante_tasks.core.parsing import PARSER_VERSION
from levante_tasks.core.reparse import NotReparsable, answer_of, decided_changes, not_reparsable_lines, reparse
from levante_tasks.errors import LevanteError, display_path
from levante_tasks.lmms.metrics import item_metrics
from levante_tasks.markdown_table import markdown_table
from levante_tasks.runs.discover import INSPECT_AI, RunFiles, discover, run_labels
from levante_tasks.runs.inspect_log import levante_log
from levante_tasks.runs.lmms import FileProblem, SampleLine, read_results, read_samples
from levante_tasks.schema.records import RECORD_KEY
from levante_tasks.summary import stats
from levante_tasks.summary.inspect_logs import RECORD_SCORER, check_records, response_of
from levante_tasks.summary.units import group_rows
from levante_tasks.summary.verify import group_expected, leaf_expected

MARKER = "rescore.json"
SCHEMA_VERSION = 1


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `rescore` subcommand."""
    parser = subparsers.add_parser(
        "rescore", help="re-parse the saved responses of runs with today's parser and write re-scored runs",
        description="Re-parse every saved response of the lmms-eval runs and inspect_ai logs under RUN_DIR... with "
        "this installation's answer parser and write the runs, re-scored, into --out (same file formats), with "
        "rescore.json and rescore.md listing the items whose record changed. The inputs are never modified.")
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR",
                        help="lmms-eval output folder(s) and inspect_ai log folder(s)")
    parser.add_argument("--out", required=True, type=Path, help="output folder (replaced whole)")
    parser.set_defaults(func=run_rescore)


def _inside(path: Path, folder: Path) -> bool:
    """Whether `path` is `folder` or lies under it (resolved, so links cannot hide it)."""
    path, folder = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    return path == folder or folder in path.parents


def _check_out(out: Path, run_dirs: list[Path]) -> Path:
    """The folder to replace; refused when it is (or is under, or holds) a run folder."""
    target = replaceable_dir(out, MARKER, "rescore output")
    for run_dir in run_dirs:
        if _inside(target, run_dir) or _inside(run_dir, target):
            raise LevanteError(f"--out {display_path(out)}: overlaps the run folder {display_path(run_dir)}; "
                               "rescore never writes into its inputs: choose an --out outside it")
    return target


def _side(record: Mapping[str, Any]) -> dict[str, Any]:
    """One side of a changed item: how the record was read."""
    return {"parser_version": record.get("parser_version"), "answer": answer_of(record),
            "parse_method": record.get("parse_method"), "correct": record.get("correct")}


def _change(source: str, task: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """One changed item of the diff report."""
    return {"source": source, "task": task, "item_uid": new["item_uid"], "seed": new["seed"],
            "variant": new["variant"], "before": _side(old), "after": _side(new)}


class _Run:
    """What rescoring one run produced: output files (relative path -> bytes or a source path), records, changes."""

    def __init__(self) -> None:
        self.files: dict[str, bytes | Path] = {}
        self.records = 0
        self.changes: list[dict[str, Any]] = []
        self.problems: list[str] = []


def _rescore_samples(path: Path, label: str, task: str, out: _Run) -> tuple[list[SampleLine], bool]:
    """Re-parse one samples file into `out.files` (a copy, or only its changed lines rewritten: every other line's
    bytes, the file's BOM and a rewritten line's CRLF kept); returns its lines (updated) and whether any changed."""
    lines = read_samples(path, label)
    data = path.read_bytes()
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    raw = data[len(bom):].split(b"\n")  # the line numbers of read_samples: UTF-8 holds no other byte 0x0A
    changed, failures = False, []
    for line in lines:
        record = line.record
        if record is None:
            continue
        out.records += 1
        number = line.number
        try:
            fresh = reparse(record, line.data.get("filtered_resps"))
        except NotReparsable as exc:
            failures.append((f"line {number}", str(exc)))
            continue
        if not decided_changes(record, fresh):
            continue
        out.changes.append(_change(label, task, record, fresh))
        line.data.update((key, value) for key, value in item_metrics(fresh).items() if key in line.data)
        ending = b"\r" if raw[number - 1].endswith(b"\r") else b""
        raw[number - 1] = json.dumps(line.data, ensure_ascii=False).encode("utf-8") + ending
        changed = True
    out.problems += not_reparsable_lines(label, failures)
    out.files[path.name] = bom + b"\n".join(raw) if changed else path
    return lines, changed


def _rescore_lmms(run: RunFiles, out: _Run) -> None:
    """Re-parse one lmms-eval run: changed samples files rewritten, its results file's metrics recomputed."""
    assert run.results is not None
    results = read_results(run.results, run.file_label(run.results))
    all_lines: dict[str, list[SampleLine]] = {}
    changed: set[str] = set()
    for task, path in sorted(run.samples.items()):
        all_lines[task], task_changed = _rescore_samples(path, run.file_label(path), task, out)
        if task_changed:
            changed.add(task)
    if not changed:
        out.files[run.results.name] = run.results
        return
    recomputed = {}
    for task, lines in all_lines.items():
        expected, recomputed[task], _ = leaf_expected(task, results, lines)
        if task in changed:
            results["results"].setdefault(task, {}).update(
                (key, "N/A" if value is None else value) for key, value in expected.items())
    for group, values in group_expected(results, recomputed).items():
        for row in group_rows(results, group).values():  # under `results` and under `groups`
            row.update((key, "N/A" if value is None else value) for key, value in values.items() if key in row)
    out.files[run.results.name] = (json.dumps(results, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _rescore_eval(run: RunFiles, staging: Path, out: _Run) -> None:
    """Re-parse one inspect_ai log: an unchanged log is copied, a changed one written with the new scores."""
    from levante_tasks.inspect.scorer import score_of

    assert run.results is not None
    label = run.file_label(run.results)
    log, spec = levante_log(run.results, label)
    changed, failures, seen = False, [], []
    for sample in (log.samples or []) if spec is not None else []:
        score = (sample.scores or {}).get(RECORD_SCORER)
        record = (score.metadata or {}).get(RECORD_KEY) if score is not None else None
        if not isinstance(record, dict):
            out.problems.append(f"{label}: sample {sample.id!r}: no {RECORD_SCORER} record")
            continue
        out.records += 1
        seen.append((f"sample {sample.id!r}", record))
        try:
            fresh = reparse(record, response_of(sample))
        except NotReparsable as exc:
            failures.append((f"sample {sample.id!r}", str(exc)))
            continue
        if decided_changes(record, fresh):
            out.changes.append(_change(label, str(spec["lmms_name"]), record, fresh))
            sample.scores[RECORD_SCORER] = score_of(fresh)
            changed = True
    if spec is not None:
        check_records(spec, seen, label)
    out.problems += not_reparsable_lines(label, failures)
    if not changed:
        out.files[run.results.name] = run.results
        return
    _rescore_metrics(log)
    from inspect_ai.log import write_eval_log

    temp = staging / f".rescore.{run.results.name}"  # inspect picks the log format by the .eval suffix
    write_eval_log(log, str(temp))
    out.files[run.results.name] = temp.read_bytes()
    temp.unlink()


def _rescore_metrics(log: Any) -> None:
    """The levante_record accuracy and stderr of a log, recomputed from its samples' scores (inspect's formulas)."""
    values = [float(s.scores[RECORD_SCORER].value == "C") for s in log.samples if RECORD_SCORER in (s.scores or {})]
    for score in log.results.scores if log.results else []:
        if score.name != RECORD_SCORER:
            continue
        if "accuracy" in score.metrics:
            score.metrics["accuracy"].value = sum(values) / len(values)
        if "stderr" in score.metrics:
            score.metrics["stderr"].value = stats.mean_stderr(values) or 0.0


def _report_md(document: Mapping[str, Any]) -> str:
    """rescore.md: the counts by (old form -> new form) and the changed items."""
    lines = [f"# Rescore with parser version {document['parser_version']}", "",
             f"{document['records']} record(s) in {len(document['runs'])} run(s); {len(document['changed'])} "
             "changed.", ""]
    if document["by_method"]:
        lines += [markdown_table(["before -> after", "items"], document["by_method"].items()), ""]
        changed = [[c["source"], c["item_uid"], c["seed"], c["variant"],
                    f"{c['before']['answer']} ({c['before']['parse_method']}, v{c['before']['parser_version']}, "
                    f"correct {c['before']['correct']})",
                    f"{c['after']['answer']} ({c['after']['parse_method']}, correct {c['after']['correct']})"]
                   for c in document["changed"]]
        lines.append(markdown_table(["source", "item", "seed", "variant", "before", "after"], changed))
    if document["problems"]:
        lines += ["", "## Problems", "", *[f"- {p}" for p in document["problems"]]]
    return "\n".join(lines) + "\n"


def rescore_runs(run_dirs: list[Path], out: Path) -> dict[str, Any]:
    """Re-score every run under `run_dirs` into `out` (module docstring); returns rescore.json's content.

    Runs that cannot be read are in its `problems` (the rest is written). Raises LevanteError when `--out` cannot
    be used or nothing could be read."""
    target = _check_out(out, run_dirs)
    problems: list[str] = []
    done: list[tuple[RunFiles, _Run]] = []
    clean_stale(target.parent)
    with staged_dir(target) as staging:
        for run_dir, label in zip(run_dirs, run_labels(run_dirs), strict=True):
            runs, found = discover(run_dir, label)
            problems += found
            for run in runs:
                result = _Run()
                try:
                    (_rescore_eval(run, staging, result) if run.kind == INSPECT_AI else _rescore_lmms(run, result))
                except FileProblem as exc:
                    problems.append(str(exc))
                    continue
                problems += result.problems
                done.append((run, result))
        if not done:
            raise LevanteError("\n".join([*problems, "no run could be read: nothing to rescore"]))
        changes = [c for _, result in done for c in result.changes]
        counts = Counter(f"{c['before']['parse_method']} -> {c['after']['parse_method']}" for c in changes)
        document = {"schema_version": SCHEMA_VERSION, "parser_version": PARSER_VERSION,
                    "records": sum(result.records for _, result in done),
                    "runs": [{"source": run.label, "harness": run.kind, "records": result.records,
                              "changed": len(result.changes),
                              "files": sorted(f"{run.folder}/{name}" for name in result.files)}
                             for run, result in done],
                    "by_method": dict(sorted(counts.items())), "changed": changes, "problems": problems}
        for run, result in done:
            folder = staging / run.folder
            folder.mkdir(parents=True, exist_ok=True)
            for name, content in result.files.items():
                if isinstance(content, Path):
                    shutil.copyfile(content, folder / name)
                else:
                    (folder / name).write_bytes(content)
        (staging / MARKER).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        (staging / "rescore.md").write_text(_report_md(document), encoding="utf-8")
    return document


def run_rescore(args: argparse.Namespace) -> int:
    """CLI: rescore; problems are one line each on stderr; exit 1 if any."""
    document = rescore_runs(args.run_dirs, args.out)
    for line in document["problems"]:
        print(f"levante-tasks: error: {line}", file=sys.stderr)
    by_method = ", ".join(f"{k} {n}" for k, n in document["by_method"].items())
    print(f"rescored {document['records']} record(s) in {len(document['runs'])} run(s) with parser version "
          f"{PARSER_VERSION}: {len(document['changed'])} changed{f' ({by_method})' if by_method else ''}; outputs in "
          f"{display_path(args.out)}")
    return 1 if document["problems"] else 0
