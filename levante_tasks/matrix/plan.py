"""The cells of a matrix (model x task x seed), the canonical JSON and SHA-256 of each, and their lmms-eval argv.

A cell's hash covers everything that changes its output: the model (lmms-eval name, model_args, public id,
revision), the task and the lmms-eval task it resolves to for the seed, the seed, limit, device, number of
processes, extra args, extra environment, the lmms-eval module, the data version and the fingerprints of the
datasets the task reads, the lmms-eval identity (version, commit, patch set) and the levante-tasks version.
The batch size is not in it: an out-of-memory fallback must not invalidate a cell.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from levante_tasks import __version__
from levante_tasks.core.options import DEFAULT_SEEDS, MAX_ORDERS
from levante_tasks.errors import LevanteError, display_path
from levante_tasks.matrix.config import MatrixConfig, ModelSpec
from levante_tasks.schema import layout
from levante_tasks.schema.dataset import read_dataset_info
from levante_tasks.schema.locales import ENGLISH, LOCALES, Locale
from levante_tasks.schema.locales import locale as locale_of
from levante_tasks.schema.task_source import TASKS_DIR
from levante_tasks.schema.tasks import TASKS
from levante_tasks.schema.variant import AllTasksGroup, SeedGroup, Variant, VariantNameError, parse_name

SCHEMA_VERSION = 1
# Progress bars in a log are noise: tqdm honours TQDM_<parameter> defaults, Hugging Face its own switches.
NO_PROGRESS_BARS = {"TQDM_DISABLE": "1", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
_NAME_LINE = re.compile(r"^(?:task|group):\s*([A-Za-z0-9_.-]+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Cell:
    """One evaluation: a model on one task with one seed; `cell_id` names its folder."""

    index: int
    model: ModelSpec
    task: str
    seed: int
    lmms_task: str
    spec: dict[str, Any]
    sha256: str
    sample: int | None = None  # the run of its order at the model's temperature (distribution mode), else None

    @property
    def cell_id(self) -> str:
        """`<model>__<task>__s<seed>__<hash12>` (`s<seed>n<sample>` for a temperature sample): readable, and a
        changed config never lands in an old folder."""
        sample = "" if self.sample is None else f"n{self.sample}"
        return f"{self.model.name}__{self.task}__s{self.seed}{sample}__{self.sha256[:12]}"

    @property
    def rel_dir(self) -> str:
        """The cell folder relative to the matrix folder: `cells/<group>/<cell_id>`."""
        return f"cells/{self.model.group}/{self.cell_id}"


@cache
def package_task_names() -> frozenset[str]:
    """Every task and group name defined by this package's lmms-eval YAMLs (LEVANTE and L0)."""
    return frozenset(m for p in TASKS_DIR.rglob("*.yaml") for m in _NAME_LINE.findall(p.read_text(encoding="utf-8")))


@cache
def lmms_eval_words() -> frozenset[str]:
    """Every word of lmms-eval's own task YAMLs: a task, group or tag name that is none of them does not exist."""
    spec = importlib.util.find_spec("lmms_eval")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    words: set[str] = set()
    for root in spec.submodule_search_locations:
        for path in (Path(root) / "tasks").rglob("*.yaml"):
            words.update(re.findall(r"[A-Za-z0-9_.-]+", path.read_text(encoding="utf-8", errors="replace")))
    return frozenset(words)


def check_task(task: str) -> None:
    """Refuse a task name lmms-eval would not find (before any cell runs): one of ours must be defined by this
    package's YAMLs; another must appear in lmms-eval's task YAMLs (a lenient check: never refuses a real name)."""
    ours = package_task_names()
    if task in ours:
        return
    known = ours if task.startswith(("levante", "l0_")) else lmms_eval_words()
    if not known and not task.startswith(("levante", "l0_")):
        return  # lmms-eval's task folder not found: nothing to check against
    if task not in known:
        close = difflib.get_close_matches(task, sorted(known | ours), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise LevanteError(f"{task!r} is not an lmms-eval task or group{hint}")


def _levante_name(task: str) -> Variant | SeedGroup | AllTasksGroup | None:
    """The LEVANTE variant or group an lmms-eval name stands for; None for any other task (L0, lmms-eval's own)."""
    try:
        return parse_name(task)
    except VariantNameError:
        return None


def seeded_task(task: str, seed: int) -> str:
    """The lmms-eval task a matrix seed runs: our variants and `levante<suffix>` groups take the option-order
    variant of the seed (`levante_trog` -> `levante_trog_seed1`, up to `_seed31` for generate_until; seed 0 is the
    name itself); other tasks keep their name (the seed then only reaches lmms-eval's `--seed`)."""
    ours = package_task_names()
    if seed == 0 or task not in ours:
        return task
    named, missing = _levante_name(task), ""
    if isinstance(named, Variant | AllTasksGroup) and named.seed == 0:
        try:
            variant = replace(named, seed=seed).format()
        except ValueError as exc:  # a seed this output type, image control or locale has not (schema.variant)
            missing = f"{exc}; "
        else:
            if variant in ours:
                return variant
            missing = f"{variant} does not exist; "
    seeds = ", ".join(map(str, DEFAULT_SEEDS))
    raise LevanteError(f"{task}: has no option-order variant for seed {seed} ({missing}LEVANTE seeds: {seeds}, and "
                       f"order replicates up to {MAX_ORDERS - 1} for generate_until in English with original images; "
                       "image controls, locale tasks and L0 tasks run with seed 0 only)")


def lmms_seed_arg(seed: int) -> str:
    """lmms-eval's `--seed` (python, numpy, torch, fewshot): lmms-eval's default `0,1234,1234,1234` shifted by it."""
    return f"{seed},{1234 + seed},{1234 + seed},{1234 + seed}"


SAMPLE_SEED_STRIDE = 1000  # temperature sample k of seed s runs with lmms-eval seeds shifted by s + 1000 k


def model_seeds(config: MatrixConfig, model: ModelSpec, distinct: int | None = None) -> tuple[int, ...]:
    """The seeds a model's cells run: its replicate orders 0..K-1 in distribution mode (auto: up to max_orders),
    at most the task's `distinct` orders (task_distinct_orders; None: no cap), else the config's `seeds`."""
    spec = model.distribution
    if spec is None:
        return config.seeds
    return tuple(range(min(spec.most_orders, distinct or spec.most_orders)))


def block_size(task: str, data: dict[str, Any]) -> int:
    """The largest option count of the choice items the task reads (its prepared datasets): one block of orders."""
    largest = 0
    for key in datasets_of(task):
        name, _, code = key.partition("@")
        try:
            path = layout.dataset_dir(data["version"], name, data["dir"], locale_of(code)) / layout.DATASET_FILE
            table = pq.read_table(path, columns=["n_options", "response_format"]).to_pydict()
        except (OSError, TypeError, ValueError) as exc:
            raise LevanteError(f"{task}: cannot read the option counts of {name} ({exc.__class__.__name__}); "
                               "prepare the data first") from None
        counts = [n for n, kind in zip(table["n_options"], table["response_format"], strict=True) if kind == "choice"]
        largest = max([largest, *counts])
    if largest < 2:
        raise LevanteError(f"{task}: no choice item with two or more options: nothing for orders to balance")
    return largest


def task_distinct_orders(task: str, data: dict[str, Any]) -> int | None:
    """n! of the task's largest option count n (block_size): the distinct orders its items can be shown in.
    Seeds from n! on repeat earlier orders (core.options' Latin blocks cycle) and the estimator never counts them
    (compare.replicates.counted_orders), so no cell runs them. None when the option counts cannot be read (data
    not prepared: the task's cells fail for want of data anyway, and the orders stay as configured)."""
    from levante_tasks.compare.replicates import distinct_orders

    try:
        return int(distinct_orders(block_size(task, data))[0])
    except LevanteError:
        return None


def model_samples(model: ModelSpec) -> tuple[int | None, ...]:
    """The temperature samples of each of a model's orders (0..n-1), or (None,) for its one greedy run."""
    spec = model.distribution
    return tuple(range(spec.samples)) if spec is not None and spec.temperature is not None else (None,)


def gen_kwargs_arg(temperature: float) -> str:
    """lmms-eval's `--gen_kwargs` for a temperature sample (merged over the task's generation_kwargs)."""
    return f"temperature={temperature:g},do_sample=True"


def dataset_key(task: str, locale: Locale = ENGLISH) -> str:
    """A prepared dataset's key in the cell hash: the task's internal name, `<task>@<code>` in a translated locale."""
    return task if locale.is_source else f"{task}@{locale.code}"


def datasets_of(task: str) -> list[str]:
    """Keys (`dataset_key`) of the LEVANTE datasets an lmms-eval task or group reads, in its locale (every task's for
    a `levante<suffix>` group, none for a task not ours)."""
    named = _levante_name(task)
    if isinstance(named, Variant | SeedGroup):
        return [dataset_key(named.task, named.locale)]
    members = named.members() if isinstance(named, AllTasksGroup) else []
    return [dataset_key(variant.task, variant.locale) for variant in members]


def data_facts(config: MatrixConfig) -> dict[str, Any]:
    """The data version the cells read and each prepared dataset's fingerprint, per task and locale (`dataset_key`;
    None when not prepared)."""
    root = layout.data_dir(config.data_dir)
    version = config.data_version
    if version and not layout.is_version_name(version):
        raise LevanteError(f"{display_path(config.path)}: data version {version[:40]!r} is not a version folder name")
    version = version or layout.prepared_version(root)  # none: LEVANTE cells fail with lmms-eval's one line
    fingerprints: dict[str, str | None] = {}
    for info in TASKS:
        for locale in LOCALES:
            key = dataset_key(info.name, locale)
            try:
                path = layout.dataset_dir(version, info.name, root, locale) / layout.DATASET_INFO_FILE if version \
                    else None
                fingerprints[key] = read_dataset_info(path).fingerprint if path else None
            except LevanteError:
                fingerprints[key] = None
    return {"dir": root, "version": version, "fingerprints": fingerprints}


def software_facts() -> dict[str, Any]:
    """The lmms-eval identity (version, commit, patch set) and the levante-tasks version."""
    from levante_tasks.lmms.patcher.provenance import installed_lmms_eval

    return {"lmms_eval": installed_lmms_eval(), "levante_tasks": __version__}


def canonical_json(value: Any) -> str:
    """Key-sorted, compact JSON: the bytes that are hashed."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cell_spec(config: MatrixConfig, model: ModelSpec, task: str, seed: int, data: dict[str, Any],
              software: dict[str, Any], sample: int | None = None) -> dict[str, Any]:
    """Everything that changes a cell's output (not the batch size, not where it is written). A temperature
    sample adds `generation` (its temperature and sample index) and shifts lmms-eval's seeds; a greedy replicate
    order is the same cell as that seed without distribution mode."""
    generation = {}
    if sample is not None and model.distribution is not None and model.distribution.temperature is not None:
        generation = {"generation": {"temperature": model.distribution.temperature, "sample": sample,
                                     "gen_kwargs": gen_kwargs_arg(model.distribution.temperature)}}
    lmms_seed = lmms_seed_arg(seed + SAMPLE_SEED_STRIDE * (sample or 0))
    return {
        "schema": SCHEMA_VERSION,
        "model": {"model": model.model, "model_args": model.model_args, "public_id": model.public_id,
                  "revision": model.revision},
        **generation,
        "task": task, "lmms_task": seeded_task(task, seed), "seed": seed, "lmms_seed": lmms_seed,
        "limit": config.limit, "device": config.device, "num_processes": config.num_processes,
        "extra_args": list(config.extra_args), "env": dict(sorted(config.env.items())),
        "lmms_eval_module": config.lmms_eval_module,
        "data": {"version": data["version"],
                 "fingerprints": {name: data["fingerprints"][name] for name in datasets_of(task)}},
        "software": software,
    }


# lmms-eval classes that, without our patch 0015, read every item of a batch in the first item's task: a batch that
# mixes tasks (`levante`, any group) gives items another task's pictures (issue 31).
BATCH_NEEDS_PATCH = frozenset({"qwen2_vl", "qwen2_5_vl", "huggingface"})


def check_batch_sizes(config: MatrixConfig, software: dict[str, Any]) -> None:
    """Refuse, before anything runs, a batch size above 1 for a class in BATCH_NEEDS_PATCH when our current patch
    set is not in effect: its cells would finish with wrong pictures."""
    if software["lmms_eval"].get("patched") or max(config.batch_sizes) == 1:
        return
    for model in config.models:
        if model.model in BATCH_NEEDS_PATCH:
            raise LevanteError(
                f"{display_path(config.path)}: models: {model.name}: `{model.model}` at batch_sizes "
                f"{list(config.batch_sizes)} needs lmms-eval patch 0015, which is not in effect (without it an item "
                "batched with another task's items gets that task's pictures): run `levante-tasks lmms-eval patch`, "
                "or set batch_sizes: [1]")


def plan(config: MatrixConfig, data: dict[str, Any] | None = None,
         software: dict[str, Any] | None = None) -> list[Cell]:
    """All cells in a fixed order (models, then tasks, then seeds, as listed, then temperature samples); an unknown
    seed variant is an error, and so is a batch size the installed lmms-eval gets wrong (check_batch_sizes)."""
    data = data if data is not None else data_facts(config)
    software = software if software is not None else software_facts()
    for task in config.tasks:
        try:
            check_task(task)
        except LevanteError as exc:
            raise LevanteError(f"{display_path(config.path)}: tasks: {exc}") from None
    check_batch_sizes(config, software)
    cells = []
    distinct: dict[str, int | None] = {}
    for index, model in enumerate(config.models):
        for task in config.tasks:
            if model.distribution is not None and _levante_name(task) is None:
                raise LevanteError(f"{display_path(config.path)}: models[{index}].distribution: {task} has no "
                                   "balanced option orders (distribution mode runs LEVANTE tasks and groups)")
            if model.distribution is not None and task not in distinct:
                distinct[task] = task_distinct_orders(task, data)
            for seed in model_seeds(config, model, distinct.get(task)):
                for sample in model_samples(model):
                    try:
                        spec = cell_spec(config, model, task, seed, data, software, sample)
                    except LevanteError as exc:
                        raise LevanteError(f"{display_path(config.path)}: tasks: {exc}") from None
                    digest = hashlib.sha256(canonical_json(spec).encode("utf-8")).hexdigest()
                    cells.append(Cell(len(cells), model, task, seed, spec["lmms_task"], spec, digest, sample))
    return cells


def plan_sha256(cells: list[Cell]) -> str:
    """The SHA-256 of the whole plan (every cell's hash, in order): a Slurm job checks it before it runs a cell."""
    return hashlib.sha256(canonical_json([c.sha256 for c in cells]).encode("utf-8")).hexdigest()


def relative_to_base(config: MatrixConfig, path: Path) -> str:
    """`path` relative to the folder cells run in (the config's folder; `..` parts where it lies elsewhere), both
    resolved first so that `..` means what the kernel will make of it."""
    return Path(os.path.relpath(os.path.realpath(path), os.path.realpath(config.base))).as_posix()


def _launcher(config: MatrixConfig) -> list[str]:
    """`python -m <module>`, or `accelerate launch` of it when the config asks for more than one process."""
    module = config.lmms_eval_module
    return [sys.executable, "-m", module] if config.num_processes == 1 else [
        sys.executable, "-m", "accelerate.commands.launch", "--num_processes", str(config.num_processes),
        "-m", module]


def cell_argv(config: MatrixConfig, cell: Cell, batch_size: int, cell_output: Path) -> list[str]:
    """The command of one cell attempt alone, as an argument list (never a shell string); `accelerate launch` when
    the config asks for more than one process. lmms-eval records its argv in every results file, so paths are
    relative to the cell's working folder, and a patched lmms-eval (it finds our tasks through their entry
    point) gets no --include_path."""
    argv = [*_launcher(config), "--model", cell.model.model]
    if cell.model.model_args:
        argv += ["--model_args", cell.model.model_args]
    argv += ["--tasks", cell.lmms_task]
    if not cell.spec["software"]["lmms_eval"].get("patched"):
        argv += ["--include_path", relative_to_base(config, TASKS_DIR)]
    argv += ["--batch_size", str(batch_size), "--output_path", relative_to_base(config, cell_output),
             "--log_samples", "--seed", cell.spec["lmms_seed"]]
    if "generation" in cell.spec:
        argv += ["--gen_kwargs", cell.spec["generation"]["gen_kwargs"]]
    if config.limit is not None:
        argv += ["--limit", f"{config.limit:g}"]
    if config.device is not None:
        argv += ["--device", config.device]
    return [*argv, *config.extra_args]


_PER_RUN = {"--tasks": "tasks", "--output_path": "output_path", "--seed": "seed"}


def runs_list(config: MatrixConfig, cells: list[Cell], outputs: list[Path]) -> list[dict[str, Any]]:
    """lmms-eval's `--config` list for cells of one model: per run what differs between its cells (task, output
    path, seed), as `cell_argv` gives them."""
    runs = []
    for cell, output in zip(cells, outputs, strict=True):
        argv = cell_argv(config, cell, 1, output)
        run = {key: argv[argv.index(flag) + 1] for flag, key in _PER_RUN.items()}
        run["seed"] = [int(part) for part in run["seed"].split(",")]  # a --config value is not parsed as --seed is
        runs.append(run)
    return runs


def config_argv(config: MatrixConfig, cell: Cell, batch_size: int, runs_file: Path) -> list[str]:
    """The command of one process running a `--config` list of a model's runs (runs_list in `runs_file`): the
    cell's argv without its per-run flags, which lmms-eval applies to every run of the list. With patch 0019 the
    runs share one model instance."""
    argv = cell_argv(config, cell, batch_size, runs_file)
    for flag in _PER_RUN:
        at = argv.index(flag)
        del argv[at:at + 2]
    at = argv.index("--batch_size")
    return [*argv[:at], "--config", relative_to_base(config, runs_file), *argv[at:]]


def cell_env_overrides(config: MatrixConfig, data: dict[str, Any]) -> dict[str, str]:
    """The variables the runner sets for every cell: the data location and version, no tokenizer threads
    fighting the evaluation, no progress bars (tqdm's and Hugging Face's: the output goes to cell.log), and the
    config's `env`."""
    env = {layout.DATA_DIR_ENV: str(data["dir"]), "TOKENIZERS_PARALLELISM": "false", **NO_PROGRESS_BARS}
    if data["version"]:
        env[layout.VERSION_ENV] = data["version"]
    return {**env, **config.env}


def cell_env(config: MatrixConfig, data: dict[str, Any]) -> dict[str, str]:
    """The environment of a cell: ours (cell_env_overrides) over the caller's; HF offline flags and the rest pass
    through."""
    return {**os.environ, **cell_env_overrides(config, data)}


def shell_command(config: MatrixConfig, data: dict[str, Any], argv: list[str]) -> str:
    """A cell attempt as one shell line that runs it as the runner does (working folder, variables, argv)."""
    assignments = " ".join(shlex.quote(f"{k}={v}") for k, v in cell_env_overrides(config, data).items())
    return f"cd {shlex.quote(str(config.base))} && env {assignments} {shlex.join(argv)}"
