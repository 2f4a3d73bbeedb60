"""`verify --rerun K`: re-run K sampled items of each lmms-eval run through the model it recorded, compare responses.

What `verify` alone checks is that a run's files agree with each other; a forgery that edits a saved response along
with its record, metrics and results agrees too. An auditor who has the model re-runs items instead: per results
file, K items drawn by `random.Random(seed)` from every (task, doc_id) of its samples files go through lmms-eval
itself (`python -m lmms_eval`, in the working folder) with the recorded model, model_args (its `revision=`
included), batch size, device, `gen_kwargs`, seeds and chat options, one `--config` run per item (`--offset doc_id
--limit 1` of the recorded task; patch 0019 builds the model once for all of them), writing into a temporary folder.
Each new response (`filtered_resps`) must equal the saved one: text exactly, numbers (multiple_choice losses, scores
in a JSON answer) within REL_TOLERANCE, and the answer it was scored as (the records' choice and correctness) the
same, so the tolerance cannot hide two near-tied options trading places; the item must be the same item (`item_uid`
of the records). Greedy decoding
reproduces a genuine run; a run decoded by sampling (`do_sample`, `temperature` > 0) cannot be re-run and is refused.
The results file chooses what runs: a `trust_remote_code` in its model_args (the checkpoint's own Python code) is
refused unless the auditor passes --rerun-trust-remote-code.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from levante_tasks.errors import LevanteError, shown_paths
from levante_tasks.runs.discover import INSPECT_AI, discover, folder_label
from levante_tasks.runs.lmms import FileProblem, SampleLine, read_results, read_samples
from levante_tasks.runs.model import HEX40, find_answer, model_identity, parse_model_args, path_like, redact_model_args
from levante_tasks.schema import layout
from levante_tasks.schema.records import RECORD_KEY
from levante_tasks.schema.task_source import TASKS_DIR
from levante_tasks.summary import provenance as prov
from levante_tasks.summary.units import leaf_tasks

REL_TOLERANCE = 1e-5  # numbers in a response (losses, scores) may move in their last digits with batch composition
CHAT_FLAGS = ("force_simple", "apply_chat_template", "fewshot_as_multiturn")  # recorded switches a re-run repeats
Runner = Callable[..., subprocess.CompletedProcess[str]]  # runner(lmms-eval args, cwd=..., env=...)


@dataclass(frozen=True)
class Item:
    """One sampled item of a run: its lmms-eval task and the saved samples line."""

    task: str
    line: SampleLine

    @property
    def doc_id(self) -> int:
        """The item's lmms-eval doc index (the re-run's --offset)."""
        return int(self.line.data["doc_id"])

    def label(self) -> str:
        """`<task> doc <doc_id>`, as the report names it."""
        return f"{self.task} doc {self.doc_id}"


@dataclass(frozen=True)
class RerunPlan:
    """What to re-run of one results file: where it is, its parsed content, the sampled items, the pool's size."""

    where: str
    results: dict[str, Any]
    items: list[Item]
    pool: int
    revision: str  # the recorded revision (runs.model.model_identity: model_args, answers, snapshot path) or unknown


def lmms_eval_process(args: list[str], *, cwd: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """`python -m lmms_eval ARGS` in `cwd` (the default runner: what users run)."""
    return subprocess.run([sys.executable, "-m", "lmms_eval", *args], cwd=cwd, env=dict(env), capture_output=True,
                          text=True, check=False)


def sample_items(lines_by_task: Mapping[str, list[SampleLine]], count: int, seed: int) -> tuple[list[Item], int]:
    """(`count` items drawn by `random.Random(seed)` from every line with a doc_id, in task and doc order; the
    number of lines drawn from)."""
    pool = [Item(task, line) for task in sorted(lines_by_task) for line in lines_by_task[task]
            if isinstance(line.data.get("doc_id"), int) and not isinstance(line.data.get("doc_id"), bool)]
    picked = sorted(random.Random(seed).sample(range(len(pool)), min(count, len(pool))))
    return [pool[i] for i in picked], len(pool)


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


def _positive(value: Any) -> bool:
    try:
        return float(value) > 0
    except (TypeError, ValueError):
        return False


def sampling_decoding(results: Mapping[str, Any], tasks: list[str]) -> str | None:
    """`<task> (do_sample=..., temperature=...)` of the first generate_until task decoded by sampling (its
    generation_kwargs under the run's --gen_kwargs), None when every task decodes greedily."""
    run_kwargs = parse_model_args(results["config"].get("gen_kwargs"))
    for task in tasks:
        config = results["configs"].get(task) or {}
        if config.get("output_type") != "generate_until":
            continue  # multiple_choice compares losses: no decoding
        kwargs = {**(config.get("generation_kwargs") or {}), **run_kwargs}
        if _truthy(kwargs.get("do_sample")) or _positive(kwargs.get("temperature")):
            return f"{task} (do_sample={kwargs.get('do_sample')}, temperature={kwargs.get('temperature')})"
    return None


def _kv_text(value: Any) -> str:
    """A recorded model_args or gen_kwargs (text, or the dict lmms-eval parsed it into) as its `k=v,...` text."""
    if isinstance(value, Mapping):
        return ",".join(f"{k}={v}" for k, v in value.items())
    return str(value or "")


def pinned_model_args(model_args: Any, revision: str) -> str:
    """The recorded model_args, with `revision=<the recorded revision>` added when they name a hub checkpoint
    (`pretrained=` not a path) without a 40-hex revision while the run recorded one elsewhere (a levante adapter's
    answers): the re-run then loads the revision the run used, not the hub's current files."""
    text, args = _kv_text(model_args), parse_model_args(model_args)
    hub = args.get("pretrained") and not path_like(args["pretrained"])
    if hub and not HEX40.fullmatch(args.get("revision", "")) and HEX40.fullmatch(revision):
        kept = ",".join(f"{k}={v}" for k, v in args.items() if k != "revision")
        return f"{kept},revision={revision}"
    return text


def rerun_arguments(results: Mapping[str, Any], items: list[Item], out: Path,
                    revision: str = "unknown") -> tuple[list[str], list[dict[str, Any]]]:
    """(lmms-eval's command-line arguments but `--config`, its `--config` list: one run per item, writing to
    `out/item-<i>`), both from what the results file recorded (`revision`: the run's, pinned_model_args)."""
    run = results["config"]
    cli = run.get("resolved_cli_args") if isinstance(run.get("resolved_cli_args"), Mapping) else {}
    args = ["--model", str(run.get("model"))]
    recorded = {"model_args": pinned_model_args(run.get("model_args"), revision),
                "gen_kwargs": _kv_text(run.get("gen_kwargs"))}
    for key, value in recorded.items():
        if value:
            args += [f"--{key}", value]
    args += ["--batch_size", str(run.get("batch_size") or 1)]
    if run.get("device"):
        args += ["--device", str(run["device"])]
    args += [f"--{flag}" for flag in CHAT_FLAGS if cli.get(flag) is True]
    if cli.get("system_instruction"):
        args += ["--system_instruction", str(cli["system_instruction"])]
    args += ["--include_path", str(TASKS_DIR), "--log_samples", "--verbosity", "WARNING"]
    seeds = [run.get(f"{k}_seed") for k in ("random", "numpy", "torch", "fewshot")]
    runs = [{"tasks": item.task, "offset": item.doc_id, "limit": 1, "output_path": str(out / f"item-{i}"),
             **({"seed": seeds} if all(isinstance(s, int) for s in seeds) else {})} for i, item in enumerate(items)]
    return args, runs


def _data_version(results: Mapping[str, Any], items: list[Item]) -> str | None:
    """The data version the sampled tasks recorded, when they agree on one."""
    versions = {prov.recorded(results["configs"].get(item.task) or {}).get("data_version") for item in items}
    version = versions.pop() if len(versions) == 1 else None
    return str(version) if version else None


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _as_json(value: Any) -> Any:
    if not isinstance(value, str) or not value.lstrip().startswith(("{", "[")):
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


def same_response(saved: Any, new: Any) -> bool:
    """Whether a re-run response is the saved one: equal text; numbers (bare, as text, inside JSON) within
    REL_TOLERANCE."""
    if isinstance(saved, list) and isinstance(new, list):
        return len(saved) == len(new) and all(map(same_response, saved, new))
    if isinstance(saved, Mapping) and isinstance(new, Mapping):
        return saved.keys() == new.keys() and all(same_response(saved[k], new[k]) for k in saved)
    if saved == new:
        return True
    a, b = _as_number(saved), _as_number(new)
    if a is not None and b is not None:
        return math.isclose(a, b, rel_tol=REL_TOLERANCE, abs_tol=REL_TOLERANCE) or (math.isnan(a) and math.isnan(b))
    a, b = _as_json(saved), _as_json(new)
    return a is not None and b is not None and same_response(a, b)


def _show(response: Any, width: int = 80) -> str:
    text = json.dumps(response, ensure_ascii=False)
    return text if len(text) <= width else text[:width - 3] + "..."


def _uid(line: Mapping[str, Any]) -> Any:
    record = line.get(RECORD_KEY)
    return record.get("item_uid") if isinstance(record, Mapping) else None


def compare_item(item: Item, new: Mapping[str, Any] | None) -> str | None:
    """What differs between a saved line and its re-run (None: the same response of the same item)."""
    if new is None:
        return "the re-run wrote no samples line for it"
    if _uid(item.line.data) != _uid(new):
        return (f"the re-run showed item {_uid(new)!r}, the run saved {_uid(item.line.data)!r} (another data "
                "version or data dir?)")
    saved, again = item.line.data.get("filtered_resps"), new.get("filtered_resps")
    if not same_response(saved, again):
        return f"response differs: saved {_show(saved)}, re-run {_show(again)}"
    before, after = _scored(item.line.data), _scored(new)
    if before != after:  # numbers within REL_TOLERANCE may still order the options otherwise
        return f"the scored answer differs within the numeric tolerance: saved {before}, re-run {after}"
    return None


def _scored(line: Mapping[str, Any]) -> tuple[Any, Any]:
    """(choice_index, correct) of a line's record: the answer the response was scored as."""
    record = line.get(RECORD_KEY)
    record = record if isinstance(record, Mapping) else {}
    return record.get("choice_index"), record.get("correct")


def remote_code(results: Mapping[str, Any]) -> bool:
    """Whether the recorded model_args ask for `trust_remote_code`: loading the model would run Python code that
    the checkpoint the (possibly submitted, untrusted) results file names ships."""
    return _truthy(parse_model_args(results["config"].get("model_args")).get("trust_remote_code"))


def plan_reruns(run_dirs: list[Path], count: int, seed: int,
                trust_remote_code: bool = False) -> tuple[list[RerunPlan], list[str]]:
    """Per lmms-eval results file under `run_dirs`, the items to re-run; and one line per run that cannot be re-run.
    A run decoded by sampling is refused (LevanteError, one line): a re-run cannot reproduce it; so is a run whose
    model_args trust remote code, unless `trust_remote_code` (the auditor's --rerun-trust-remote-code). Files verify
    cannot read are skipped here (verify names them)."""
    plans: list[RerunPlan] = []
    problems: list[str] = []
    for run_dir in run_dirs:
        for run in discover(run_dir, folder_label(run_dir))[0]:
            assert run.results is not None
            where = run.file_label(run.results)
            if run.kind == INSPECT_AI:
                problems.append(f"{where}: an inspect_ai log: --rerun re-runs lmms-eval runs only")
                continue
            try:
                results = read_results(run.results, where)
                tasks = [t for t in leaf_tasks(results) if t in run.samples]
                lines = {t: read_samples(run.samples[t], run.file_label(run.samples[t])) for t in tasks}
            except FileProblem:
                continue
            sampled = sampling_decoding(results, tasks)
            if sampled:
                raise LevanteError(f"{where}: {sampled} was decoded by sampling: a re-run cannot reproduce its "
                                   "responses, so --rerun needs greedy decoding (verify without --rerun still "
                                   "checks the run's consistency)")
            if remote_code(results) and not trust_remote_code:
                raise LevanteError(f"{where}: its model_args set trust_remote_code: a re-run would execute the code "
                                   "that the checkpoint it names ships; read that code, then pass "
                                   "--rerun-trust-remote-code (nothing was run)")
            items, pool = sample_items(lines, count, seed)
            if items:
                revision = model_identity(results, find_answer(lines))["revision"]
                plans.append(RerunPlan(where, results, items, pool, revision))
    return plans, problems


def _new_lines(folder: Path, task: str) -> dict[int, dict[str, Any]]:
    """The re-run's samples lines of `task` under `folder`, by doc_id."""
    found: dict[int, dict[str, Any]] = {}
    for path in sorted(folder.rglob(f"*_samples_{task}.jsonl")):
        found.update((line.data.get("doc_id"), line.data) for line in read_samples(path, path.name))
    return found


def rerun(plan: RerunPlan, data_dir: Path | None = None, runner: Runner | None = None) -> tuple[list[str], list[str]]:
    """Re-run one plan's items through lmms-eval (`runner`, default lmms_eval_process): (report lines, a header and
    one per item; mismatch lines)."""
    run = plan.results["config"]
    model = f"{run.get('model')} ({redact_model_args(run.get('model_args')) or 'no model_args'})"
    header = (f"{plan.where}: re-running {len(plan.items)} of {plan.pool} items through {model} at revision "
              f"{plan.revision if HEX40.fullmatch(plan.revision) else 'unknown (what the checkpoint holds now)'}: "
              + ", ".join(item.label() for item in plan.items))
    # lmms-eval runs in this process's working folder (a relative `pretrained=` path reads as it does for verify's
    # user) and writes into a temporary folder
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false",
           layout.DATA_DIR_ENV: os.path.abspath(layout.data_dir(data_dir))}
    version = _data_version(plan.results, plan.items)
    if version:
        env[layout.VERSION_ENV] = version
    with tempfile.TemporaryDirectory(prefix="levante-rerun-") as tmp:
        folder = Path(tmp)
        args, runs = rerun_arguments(plan.results, plan.items, folder, plan.revision)
        (folder / "runs.json").write_text(json.dumps(runs, indent=1), encoding="utf-8")  # JSON is YAML
        done = (runner or lmms_eval_process)([*args, "--config", str(folder / "runs.json")], cwd=Path.cwd(), env=env)
        if done.returncode != 0:
            last = next((line for line in reversed(done.stderr.splitlines()) if line.strip()), "no output")
            return [header], [f"{plan.where}: --rerun: lmms-eval exited {done.returncode}: "
                               f"{shown_paths(last.strip())[:300]}"]
        try:
            new = [_new_lines(folder / f"item-{i}", item.task).get(item.doc_id) for i, item in enumerate(plan.items)]
        except FileProblem as exc:
            return [header], [f"{plan.where}: --rerun: the re-run's output: {exc}"]
    report, mismatches = [header], []
    for item, line in zip(plan.items, new, strict=True):
        problem = compare_item(item, line)
        report.append(f"{plan.where}: {item.label()}: {'MISMATCH: ' + problem if problem else 'same response'}")
        if problem:
            mismatches.append(f"{plan.where}: {item.label()}: re-run: {problem}")
    return report, mismatches
