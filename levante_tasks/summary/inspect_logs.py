"""Turn one inspect_ai `.eval` log of a LEVANTE task (levante_tasks.inspect) into the summary's units.

The log is read by runs.inspect_log. A log of a task that is not a LEVANTE task (no
`metadata.levante`) is skipped and listed in its run summary, as lmms-eval tasks without records are; for a LEVANTE
task, a file that is not a readable log, a run that did not finish (status other than `success`), a sample without
its `levante_item` record, or a log of several epochs is one line naming the file (FileProblem).
Units are those of an lmms-eval run (units.Unit) with harness `inspect_ai`: row = (public id, revision,
`inspect_ai:<model>`), column = the lmms-eval name of the task (`levante_trog`; per sub-type columns as in
lmms-eval), variant and option-order seed from the task's recorded metadata.
Provenance keys are those of lmms-eval units (`task_version` from the recorded provenance, as for lmms-eval;
`task_config_sha256` over the log's task name, inspect task version, task arguments and solver plan);
`lmms_eval_*` and `patch_set_sha256` read "n/a", the inspect_ai version is in `inspect_ai_version`, the budget is
the run's set generate config less NOT_BUDGET; the sampling seed (`--seed`) is a replicate key, so runs that differ
only in it are replicates of one cell.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from levante_tasks.core.options import MAX_ORDERS
from levante_tasks.core.reparse import NotReparsable, disagreement, not_reparsable_lines
from levante_tasks.runs import variant_check
from levante_tasks.runs.discover import INSPECT_AI, RunFiles
from levante_tasks.runs.inspect_log import levante_log
from levante_tasks.runs.lmms import FileProblem
from levante_tasks.runs.model import HEX40, UNKNOWN, is_test_model, local_name, or_unknown, path_like, redact_model_args
from levante_tasks.schema.locales import locale
from levante_tasks.schema.tasks import find_task, task_info
from levante_tasks.schema.variant import Control, OutputType, Variant
from levante_tasks.summary import provenance as prov
from levante_tasks.summary.units import ParsedRun, Unit, checked_record, column_of, record_counts

NOT_APPLICABLE = "n/a"
RECORD_SCORER = "levante_record"
ADAPTER_PREFIX = "inspect_ai:"
# Generate config fields that are not the generation budget: the sampling seed (a replicate key, as lmms-eval's
# --seed), concurrency, retries, timeouts, caching and batching, and request headers (which may hold API keys and
# are never written out).
NOT_BUDGET = frozenset({"seed", "max_retries", "timeout", "attempt_timeout", "stream_idle_timeout", "max_connections",
                        "adaptive_connections", "cache", "cache_prompt", "batch", "extra_headers"})


def skipped_run(run: RunFiles, log: Any) -> ParsedRun:
    """Another task's log: no units; its run summary lists the task as skipped."""
    tasks = {str(log.eval.task): {"status": "skipped", "reason": "not a LEVANTE task (no metadata.levante)"}}
    return ParsedRun(run, {}, model_row(log), tasks=tasks,
                     summary={"backend": INSPECT_AI, "date": str(log.eval.created), "tasks": tasks})


def spec_seeds(spec: Mapping[str, Any], label: str) -> list[int]:
    """The option-order seeds a log asked: 0 .. K-1 when its metadata.levante says `orders: K` (the inspect face's
    distribution mode), else its one `seed`; FileProblem for an orders value the task could not have written."""
    orders = spec.get("orders")
    if orders is None:
        return [spec_variant(spec, label).seed]
    if isinstance(orders, bool) or not isinstance(orders, int) or not 1 <= orders <= MAX_ORDERS:
        raise FileProblem(f"{label}: metadata.levante orders {orders!r} is not a number of option orders (1 to "
                          f"{MAX_ORDERS})")
    ran = spec_variant(spec, label)
    try:  # every replicate a variant lmms-eval has (seeds 3.. only of original images in English)
        return [replace(ran, seed=seed).seed for seed in range(orders)]
    except ValueError as exc:
        raise FileProblem(f"{label}: metadata.levante orders {orders} of {ran.format()}: {exc}") from None


def check_records(spec: Mapping[str, Any], records: Iterable[tuple[str, Mapping[str, Any]]], label: str) -> None:
    """FileProblem (one line naming the log) when a record ((sample, record) pairs) is of another task or seed than
    the log's metadata.levante says (runs.variant_check's line), when an item occurs twice under one seed, or, in an
    orders log, when the seeds do not all hold the same items (a replicate dropped, or `--limit` not a multiple of
    the orders)."""
    ran, seeds = spec_variant(spec, label), spec_seeds(spec, label)
    pairs = list(records)
    says = f"its metadata.levante ({ran.format()}{f', orders {len(seeds)}' if 'orders' in spec else ''})"
    problem = variant_check.mismatch(label, says, ran, pairs, seeds if "orders" in spec else None)
    if problem:
        raise FileProblem(problem)
    items: dict[int, set[str]] = {seed: set() for seed in seeds}
    for where, record in pairs:
        seed, uid = int(record.get("seed", ran.seed)), record.get("item_uid")
        if uid in items[seed]:
            raise FileProblem(f"{label}: {where}: item {uid!r} occurs twice"
                              + (f" under seed {seed}" if len(seeds) > 1 else ""))
        items[seed].add(uid)
    every = set().union(*items.values())
    short = {seed: len(every - held) for seed, held in items.items() if held != every}
    if short:
        lacking = ", ".join(f"seed {seed} lacks {n}" for seed, n in sorted(short.items()))
        raise FileProblem(f"{label}: orders {len(seeds)}: the replicates do not hold the same items ({lacking} of "
                          f"{len(every)}): a replicate was dropped, or --limit was not a multiple of {len(seeds)}")


def log_records(log: Any, label: str, spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The checked per-item records of the log's samples, in sample order, each of the variant (and seeds) `spec`
    says (check_records): what summarize, verify, rescore and compare read of a LEVANTE log."""
    if int(log.eval.config.epochs or 1) != 1:
        raise FileProblem(f"{label}: {log.eval.config.epochs} epochs: one epoch per run is summarized")
    records = []
    for sample in log.samples or []:
        score = (sample.scores or {}).get(RECORD_SCORER)
        where = f"{label}: sample {sample.id!r}"
        if score is None:
            why = sample.error.message.splitlines()[0][:120] if sample.error else "unscored"
            raise FileProblem(f"{where}: no {RECORD_SCORER} score ({why})")
        records.append(checked_record(score.metadata or {}, where))
    if not records:
        raise FileProblem(f"{label}: no samples")
    check_records(spec, ((f"sample {sample.id!r}", r) for sample, r in zip(log.samples, records, strict=True)), label)
    return records


def _answer(log: Any) -> dict[str, Any]:
    """The first §3c JSON answer a sample's output carries (model id and revision of scoring models), else {}."""
    for sample in (log.samples or [])[:3]:
        text = (sample.output.metadata or {}).get("levante_answer") if sample.output else None
        try:
            value = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("model"), Mapping):
            return dict(value["model"])
    return {}


def model_row(log: Any) -> dict[str, Any]:
    """`{"adapter", "public_id", "revision"}`: `model_id=`/`revision=` model args, else the model's JSON answer,
    else the provider's model name (`vllm/Qwen/Qwen2-VL-2B` -> `Qwen/Qwen2-VL-2B`); a local path becomes its name,
    in the adapter too (`inspect_ai:vllm/<folder name>`)."""
    args = {str(k): str(v) for k, v in (log.eval.model_args or {}).items()}
    answer = _answer(log)
    provider, _, name = str(log.eval.model).partition("/")
    if path_like(name):  # `vllm//home/alice/models/qwen`: a local folder served by the provider
        name = local_name(name)[0]
    public_id = str(args.get("model_id") or answer.get("model_id") or name or provider)
    if path_like(public_id):
        public_id = local_name(public_id)[0]
    revision = next((r for r in (args.get("revision"), answer.get("revision"))
                     if isinstance(r, str) and HEX40.fullmatch(r)), UNKNOWN)
    adapter = ADAPTER_PREFIX + (f"{provider}/{name}" if name else provider)
    return {"adapter": adapter, "public_id": public_id, "revision": revision,
            "test_model": is_test_model(adapter, answer)}


def _budget(log: Any) -> dict[str, Any]:
    """The run's generate config without unset values and NOT_BUDGET (what the model was allowed to generate)."""
    config = log.eval.model_generate_config.model_dump(exclude_none=True) if log.eval.model_generate_config else {}
    config = {k: v for k, v in config.items() if k not in NOT_BUDGET}
    return {"generate_config": config, "max_tokens": config.get("max_tokens")}


def _plan(log: Any) -> dict[str, Any] | None:
    """The solver plan (steps and finish) without its generate config, which the budget and seeds hold."""
    return log.plan.model_dump(exclude={"config"}) if log.plan else None


def _provenance(log: Any, spec: Mapping[str, Any]) -> dict[str, Any]:
    """The lmms-eval unit provenance keys, filled from the inspect log (module docstring)."""
    mine = spec.get("provenance") if isinstance(spec.get("provenance"), Mapping) else {}
    config = log.eval.config
    config_sha256 = prov.sha256_json({"task": log.eval.task, "version": log.eval.task_version,
                                      "args": log.eval.task_args, "plan": _plan(log)})
    seed = log.eval.model_generate_config.seed if log.eval.model_generate_config else None
    return {
        "lmms_eval_version": NOT_APPLICABLE, "lmms_eval_commit": NOT_APPLICABLE, "patch_set_sha256": NOT_APPLICABLE,
        "patched": None, "inspect_ai_version": or_unknown(mine.get("inspect_ai_version")),
        "levante_tasks_version": or_unknown(mine.get("levante_tasks_version")),
        "task_version": prov.recorded_task_version(mine), "task_config_sha256": config_sha256,
        "task_source_sha256": or_unknown(mine.get("task_source_sha256")),
        "dataset_fingerprint": or_unknown(mine.get("dataset_fingerprint")),
        "data_version": or_unknown(mine.get("data_version")),
        "synthetic_data": mine.get("synthetic_data") if isinstance(mine.get("synthetic_data"), bool) else None,
        "seeds": {"random": seed, "numpy": None, "torch": None, "fewshot": None},
        "limit": {"limit": config.limit, "offset": 0, "sample_id": config.sample_id},
        "budget": _budget(log), "batch_size": None, "device_class": UNKNOWN,
        "model_args": redact_model_args(log.eval.model_args or {}),
    }


def _comparison(log: Any, provenance: Mapping[str, Any]) -> dict[str, Any]:
    """What inspect cells of one column must share: limit, budget, prompt (solver plan + task source + task
    version), dataset."""
    prompt = prov.sha256_json({"plan": _plan(log), "task_source_sha256": provenance["task_source_sha256"],
                               "task_version": provenance["task_version"]})
    return {"limit": provenance["limit"], "budget": provenance["budget"], "prompt": prompt,
            "dataset_fingerprint": provenance["dataset_fingerprint"], "patch_set_sha256": NOT_APPLICABLE}


def spec_variant(spec: Mapping[str, Any], label: str) -> Variant:
    """The task variant a log ran (the inspect face runs generate_until only), whose lmms-eval-style name is the
    leaf (`levante_trog`, `levante_trog_seed1`, `levante_trog_blank`, `levante_trog_de`); FileProblem when the spec
    names none."""
    try:
        return Variant(str(spec["task"]), OutputType.GENERATE_UNTIL, int(spec["seed"]), Control(spec["variant"]),
                       locale(spec.get("locale")))
    except (KeyError, TypeError, ValueError) as exc:
        raise FileProblem(f"{label}: metadata.levante names no LEVANTE task variant: {exc.args[0]}") from None


def _seed_units(base: Mapping[str, Any], ran: Variant, seed: int, records: list[dict[str, Any]],
                sampling: tuple[Any, ...]) -> list[Unit]:
    """The units of one option-order seed's records: the task's column and one per reported sub-type, the leaf
    named as lmms-eval names that seed's variant (`levante_trog_seed3`)."""
    variant = replace(ran, seed=seed)
    column = column_of(variant)
    mine = {**base, "leaf": variant.format(), "replicate": (seed, *sampling)}
    units = [Unit(task=column, parent="", **mine, **record_counts(records))]
    info = task_info(variant.task)
    for sub, _ in info.subtypes:
        chosen = [r for r in records if info.subtype_of(r["trial_type"]) == sub]
        if chosen:
            units.append(Unit(task=f"{column}/{sub}", parent=column, **mine, **record_counts(chosen)))
    return units


def parse_eval(run: RunFiles) -> ParsedRun:
    """One `.eval` log -> a ParsedRun with a unit for the task and one per reported sub-type, per option-order seed
    (an orders log holds seeds 0 .. K-1: one replicate each, as K lmms-eval runs would); FileProblem if bad."""
    assert run.results is not None and run.kind == INSPECT_AI
    label = run.file_label(run.results)
    log, spec = levante_log(run.results, label)
    if spec is None:
        return skipped_run(run, log)
    records = log_records(log, label, spec)
    model = model_row(log)
    provenance = _provenance(log, spec)
    comparison = _comparison(log, provenance)
    ran, seeds = spec_variant(spec, label), spec_seeds(spec, label)
    leaf, column, family, variant = ran.format(), column_of(ran), ran.task, ran.control.value
    base = dict(source=label, date=str(log.eval.created), row=(model["public_id"], model["revision"],
                model["adapter"]), family=family, output_type=str(records[0]["output_type"]), variant=variant,
                provenance=provenance, comparison=comparison, signature=prov.sha256_json(comparison)[:16],
                harness=INSPECT_AI, test_model=model["test_model"])
    units = [unit for seed in seeds for unit in _seed_units(
        base, ran, seed, [r for r in records if int(r.get("seed", ran.seed)) == seed],
        tuple(provenance["seeds"].values()))]
    accuracy = sum(r["correct"] for r in records) / len(records)
    orders = {"orders": len(seeds)} if "orders" in spec else {}
    summary = {"backend": INSPECT_AI, "date": str(log.eval.created),
               "protocol": {"limit": log.eval.config.limit, "epochs": log.eval.config.epochs,
                            "generate_config": provenance["budget"]["generate_config"], "seeds": seeds},
               "tasks": {leaf: {"status": "parsed", "records": len(records), "family": family, "column": column,
                                "variant": variant, "seed": ran.seed, **orders, "output_type": base["output_type"],
                                "metrics": reported_metrics(log), "recomputed_accuracy": accuracy,
                                "provenance": provenance}}}
    return ParsedRun(run, {}, model, units=units, tasks={leaf: {"status": "parsed"}}, summary=summary)


def reported_metrics(log: Any) -> dict[str, float]:
    """`<scorer>/<metric>` values inspect reported (e.g. `levante_record/accuracy`, `choice/accuracy`)."""
    found = {}
    for score in (log.results.scores if log.results else []):
        for name, metric in score.metrics.items():
            if isinstance(metric.value, int | float) and math.isfinite(float(metric.value)):
                found[f"{score.name}/{name}"] = float(metric.value)
    return found


def installed_inspect() -> dict[str, str]:
    """What this installation would record: the inspect tasks' source hash and the inspect_ai version."""
    from importlib.metadata import version

    from levante_tasks.inspect.task import source_sha256

    return {"task_source_sha256": source_sha256(), "inspect_ai_version": version("inspect_ai")}


def response_of(sample: Any) -> str:
    """What the record scorer parsed of a logged sample (its output's §3c JSON, else the completion)."""
    from levante_tasks.inspect.scorer import answer_text

    return answer_text(sample.output)


def verify_eval(run: RunFiles, fingerprint: Callable[[str, str, str | None], str] | None,
                installed: Mapping[str, str] | None) -> list[str]:
    """Mismatch lines of one `.eval` log: each record vs its response re-parsed, the reported levante_record
    accuracy vs the records; with `fingerprint`
    (the data dir check) and `installed` (installed_inspect()), the recorded task version (against the installed
    catalogue's), task source hash, inspect_ai version and dataset fingerprint. Another task's log has none."""
    label = run.file_label(run.results or Path())
    try:
        log, spec = levante_log(run.results or Path(), label)
        if spec is None:
            return []
        records = log_records(log, label, spec)
    except FileProblem as exc:
        return [str(exc)]
    out, failures = [], []
    for sample, record in zip(log.samples, records, strict=True):
        try:
            problem = disagreement(record, response_of(sample))
        except NotReparsable as exc:
            failures.append((f"sample {sample.id!r}", str(exc)))
            continue
        if problem:
            out.append(f"{label}: sample {sample.id!r}: {problem}")
    out += not_reparsable_lines(label, failures)
    metrics = reported_metrics(log)
    want = sum(r["correct"] for r in records) / len(records)
    if not math.isclose(metrics.get(f"{RECORD_SCORER}/accuracy", math.nan), want, abs_tol=1e-12):
        out.append(f"{label}: {RECORD_SCORER}/accuracy {metrics.get(f'{RECORD_SCORER}/accuracy')!r} disagrees with "
                   f"its records ({want!r})")
    if fingerprint is not None and installed is not None:
        mine = spec.get("provenance") or {}
        info = find_task(str(spec["task"]))
        checks = (("task_version", str(info.version) if info else "not installed"), *installed.items(),
                  ("dataset_fingerprint",
                   fingerprint(str(mine.get("data_version") or ""), str(spec["task"]), spec.get("locale"))))
        for key, current in checks:
            have = str(prov.recorded_task_version(mine) if key == "task_version" else mine.get(key) or UNKNOWN)
            if have != current:
                out.append(f"{label}: {key}: recorded {have}, installed {current}")
    return out
