"""Turn one parsed lmms-eval run into units: one unit = one task (or one sub-type of a task) of one run.

A leaf task is a LEVANTE task when its config has `metadata.levante` or its samples carry `levante_item`
records (docs/design.md §4); other leaves are listed as skipped. Per unit: the cell it belongs to (model row,
task family, column, variant, output type), its replicate key (option-order seed + lmms-eval's four seeds),
counts recomputed from the records, and its provenance.

Columns: a leaf's lmms-eval name read as a variant (`schema.variant`) and written again with seed 0 and original
images (no `_seed<k>`, `_blank`, `_shuffled`), so seeds and controls of one task share a column; a name that is no
LEVANTE variant name is its own column. A task that declares per-sub-type accuracies (`levante_acc_<sub>` in its
metric_list, e.g. egma-math) adds a column `<column>/<sub>` over the samples lines whose value of that metric is not
null (the docs of that sub-type), with the task's column as `parent`. Groups of the results file are not columns
(their leaves are).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from levante_tasks.runs.discover import RunFiles
from levante_tasks.runs.lmms import FileProblem, RunReader, SampleLine
from levante_tasks.runs.model import find_answer, model_identity
from levante_tasks.schema.records import RECORD_KEY
from levante_tasks.schema.variant import Control, Variant, VariantNameError
from levante_tasks.summary import provenance as prov

SUBTYPE_PREFIX = "levante_acc_"  # a task's per-sub-type accuracy metrics: levante_acc_<sub-type>
GROUP_SECTIONS = ("results", "groups")  # where a results file holds a group's row (lmms-eval writes both)


@dataclass
class Unit:
    """One replicate of one matrix cell, with the counts recomputed from its per-item records."""

    source: str  # label of the results file
    date: str
    leaf: str  # lmms-eval task (or group) name
    row: tuple[str, str, str]  # (public id, revision, adapter)
    family: str
    task: str  # column
    parent: str
    output_type: str
    variant: str
    replicate: tuple[Any, ...]  # (option-order seed, random, numpy, torch, fewshot seeds)
    n: int
    correct: int
    parsed: int
    chance_sum: float
    chance_n: int
    items: frozenset[str]
    provenance: dict[str, Any]
    comparison: dict[str, Any]
    signature: str  # short hash of `comparison`: units compare only when it is equal
    harness: str = "lmms-eval"  # lmms-eval or inspect_ai: cells of different harnesses are never merged
    item_correct: dict[str, int] = field(default_factory=dict)  # item_uid -> correct (0/1) in this replicate
    test_model: bool = False  # a random-init or scripted test model (runs.model.model_identity)

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else float("nan")


@dataclass
class ParsedRun:
    """A run that parsed: its units, its per-task record counts and what was skipped, for summary.json."""

    files: RunFiles
    results: dict[str, Any]
    model: dict[str, str]
    units: list[Unit] = field(default_factory=list)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    summary: dict[str, Any] | None = None  # inspect_ai runs: their runs/<run>/summary.json fields (cli._run_summary)


def group_names(results: Mapping[str, Any]) -> list[str]:
    """Groups of a results file: the names in `groups` and every name `group_subtasks` gives members (lmms-eval
    writes a group's row under both `results` and `groups`)."""
    groups = {name for name, children in (results.get("group_subtasks") or {}).items() if children}
    return sorted(groups | set(results.get("groups") or {}))


def group_rows(results: Mapping[str, Any], group: str) -> dict[str, dict[str, Any]]:
    """The rows lmms-eval wrote for a group, by the section that holds them (`results`, `groups`)."""
    rows = {section: (results.get(section) or {}).get(group) for section in GROUP_SECTIONS}
    return {section: row for section, row in rows.items() if isinstance(row, dict)}


def leaf_tasks(results: Mapping[str, Any]) -> list[str]:
    """Tasks of the results file that are not groups."""
    groups = set(group_names(results))
    return sorted(name for name in results["results"] if name not in groups)


def column_of(variant: Variant) -> str:
    """The column of a variant: the name of its task and output type with seed 0 and original images."""
    return replace(variant, seed=0, control=Control.ORIGINAL).format()


def leaf_column(name: str, family: str, output_type: str, seed: int, variant: str, where: str) -> str:
    """The column of a leaf (module docstring); FileProblem when its name says another variant than its records."""
    try:
        named = Variant.parse(name)
    except VariantNameError:
        return name
    if (named.task, named.output_type.value, named.seed, named.control.value) != (family, output_type, seed, variant):
        raise FileProblem(f"{where}: task {name!r} is not the variant its config and records describe ({family}, "
                          f"{output_type}, seed {seed}, {variant} images)")
    return column_of(named)


def checked_record(line: Mapping[str, Any], where: str, number: int | None = None) -> dict[str, Any]:
    """The checked per-item record of a samples line; FileProblem names the line (`where`, `where:number`)."""
    record = line.get(RECORD_KEY)
    if isinstance(record, dict) and record.get("correct") in (0, 1) \
            and type(record.get("item_uid")) is str and type(record.get("parse_method")) is str:
        return record  # the common case, decided as below without naming the line
    where = where if number is None else f"{where}:{number}"
    if not isinstance(record, dict):
        raise FileProblem(f"{where}: no '{RECORD_KEY}' record")
    if record.get("correct") not in (0, 1):
        raise FileProblem(f"{where}: record 'correct' is {record.get('correct')!r}, expected 0 or 1")
    for key in ("item_uid", "parse_method"):
        if not isinstance(record.get(key), str):
            raise FileProblem(f"{where}: record lacks '{key}'")
    return record


def levante_config(config: Any) -> bool:
    """Whether a task's config (any value a results file holds) carries `metadata.levante`."""
    return isinstance(config, dict) and bool(prov.levante_spec(config))


def holds_records(config: Any, lines: list[SampleLine]) -> bool:
    """Whether a task's samples lines are read as LEVANTE records, each checked (`checked_record`): its config
    carries `metadata.levante`, or its first line holds a record."""
    return levante_config(config) or bool(lines and RECORD_KEY in lines[0].data)


def _chance(record: Mapping[str, Any]) -> float | None:
    """An item's chance level: the record's `chance_level` (slider records carry it), else 1/n options for choice
    items, else None (a slider record written before records carried it)."""
    value = record.get("chance_level")
    if value is not None and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    order = record.get("presented_order")
    if "target_value" in record or not isinstance(order, list) or len(order) < 2:
        return None
    return 1.0 / len(order)


def record_counts(records: list[dict[str, Any]]) -> dict[str, Any]:
    """A unit's counts from its checked records: n, correct, parsed, chance sum and count, item uids."""
    chances = [c for c in map(_chance, records) if c is not None]
    corrects = [int(r["correct"]) for r in records]
    uids = [r["item_uid"] for r in records]
    return {
        "n": len(records),
        "correct": sum(corrects),
        "parsed": sum([r["parse_method"] != "none" for r in records]),
        "chance_sum": sum(chances),
        "chance_n": len(chances),
        "items": frozenset(uids),
        "item_correct": dict(zip(uids, corrects, strict=True)),
    }


@dataclass
class _Leaf:
    """One leaf task of a run, described and checked (records, variant, seed, provenance)."""

    name: str
    family: str
    variant: str
    seed: int
    output_type: str
    column: str
    records: list[dict[str, Any]]
    lines: list[SampleLine]
    provenance: dict[str, Any]
    comparison: dict[str, Any]
    signature: str


def _describe_leaf(name: str, results: dict[str, Any], lines: list[SampleLine], where: str,
                   results_label: str) -> _Leaf:
    config = results["configs"].get(name)
    if not isinstance(config, dict):
        raise FileProblem(f"{results_label}: no config for task {name!r} under 'configs'")
    records = [checked_record(line.data, where, line.number) for line in lines]
    if not records:
        raise FileProblem(f"{where}: no samples (empty file)")
    if len({line.data.get("doc_id") for line in lines}) < len(lines):
        raise FileProblem(f"{where}: a doc_id occurs twice (two lmms-eval runs appended to one file?)")
    spec = prov.levante_spec(config)
    first = records[0]
    family = str(spec.get("task") or first.get("task") or name)
    variant = str(spec.get("variant") or first.get("variant") or "original")
    try:
        seed = int(spec.get("seed", first.get("seed", 0)))
    except (TypeError, ValueError):
        raise FileProblem(f"{where}: task {name!r} has a non-integer option-order seed") from None
    for record in records:
        if record.get("variant", variant) != variant or int(record.get("seed", seed)) != seed:
            raise FileProblem(f"{where}: records of task {name!r} mix variants or seeds")
    provenance = prov.task_provenance(results, config)
    comparison = prov.comparison(provenance, config, results)
    output_type = str(config.get("output_type") or "generate_until")
    return _Leaf(name, family, variant, seed, output_type, leaf_column(name, family, output_type, seed, variant, where),
                 records, lines, provenance, comparison, prov.sha256_json(comparison)[:16])


def _unit(run: ParsedRun, leaf: _Leaf, records: list[dict[str, Any]], column: str, parent: str) -> Unit:
    seeds = leaf.provenance["seeds"]
    return Unit(
        source=run.files.file_label(run.files.results or Path()), date=str(run.results.get("date") or run.files.date),
        leaf=leaf.name, row=(run.model["public_id"], run.model["revision"], run.model["adapter"]),
        family=leaf.family, task=column, parent=parent, output_type=leaf.output_type, variant=leaf.variant,
        replicate=(leaf.seed, seeds["random"], seeds["numpy"], seeds["torch"], seeds["fewshot"]),
        provenance=leaf.provenance, comparison=leaf.comparison, signature=leaf.signature,
        test_model=bool(run.model.get("test_model")), **record_counts(records))


def _subtype_units(run: ParsedRun, leaf: _Leaf, config: Mapping[str, Any]) -> list[Unit]:
    """One unit per sub-type metric `levante_acc_<sub>` the task declares, over the lines where it is not null."""
    names = [str(m.get("metric")) for m in config.get("metric_list") or [] if isinstance(m, Mapping)]
    subtypes = [n.removeprefix(SUBTYPE_PREFIX) for n in names if n.startswith(SUBTYPE_PREFIX)]
    units = []
    for sub in subtypes:
        metric = SUBTYPE_PREFIX + sub
        records = [r for r, line in zip(leaf.records, leaf.lines, strict=True) if line.data.get(metric) is not None]
        if records:
            units.append(_unit(run, leaf, records, f"{leaf.column}/{sub}", leaf.column))
    return units


def parse_run(run: RunFiles, reader: RunReader | None = None) -> ParsedRun:
    """Parse one run, its files read through `reader` (a new one when None); a damaged results file raises
    FileProblem, a damaged task is a problem of the run."""
    assert run.results is not None
    reader = reader or RunReader()
    results = reader.results(run.results, run.file_label(run.results))
    lines_by_task: dict[str, list[SampleLine]] = {}
    problems: list[str] = []
    tasks: dict[str, dict[str, Any]] = {}
    leaves: dict[str, _Leaf] = {}
    for name in leaf_tasks(results):
        config = results["configs"].get(name)
        is_levante = levante_config(config)
        path = run.samples.get(name)
        where = run.file_label(path) if path else f"{run.label}_samples_{name}.jsonl"
        try:
            lines = reader.samples(path, where) if path else None
            if lines is None:
                if is_levante:
                    raise FileProblem(f"{where}: no samples file for task {name!r} (run lmms-eval with --log_samples)")
                tasks[name] = {"status": "skipped", "reason": "no samples file and no metadata.levante"}
                continue
            if not holds_records(config, lines):
                tasks[name] = {"status": "skipped", "reason": f"not a LEVANTE task (no '{RECORD_KEY}' records)"}
                continue
            leaves[name] = _describe_leaf(name, results, lines, where, run.file_label(run.results))
            lines_by_task[name] = lines
        except FileProblem as exc:
            problems.append(str(exc))
            tasks[name] = {"status": "failed", "problem": str(exc)}
    model = model_identity(results, find_answer(lines_by_task))
    parsed = ParsedRun(run, results, model, tasks=tasks, problems=problems)
    for name, leaf in leaves.items():
        parsed.units.append(_unit(parsed, leaf, leaf.records, leaf.column, ""))
        parsed.units += _subtype_units(parsed, leaf, results["configs"][name])
        tasks[name] = {"status": "parsed", "records": len(leaf.records), "family": leaf.family,
                       "column": leaf.column, "variant": leaf.variant, "seed": leaf.seed,
                       "output_type": leaf.output_type, "provenance": leaf.provenance}
    return parsed
