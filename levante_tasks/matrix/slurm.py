"""`--submit`: the matrix on a Slurm cluster as job arrays (one model per array task) and an end-step job.

Each array task runs the unfinished cells of one model in one lmms-eval process (`--model K`: one model load).
The models with unfinished cells are grouped into arrays by their sbatch resources (the config's `slurm:`
defaults and per-model settings), each at most the cluster's MaxArraySize wide (an array task id plus the
array's offset is the model's index in the config). The end step (`--report-only`: summaries, comparisons and
the report from the cells that finished; it runs no cell, records the others as they ended and exits 1 if any
did not finish) waits for them with `--dependency=afterany`, so it runs however the cells ended. Rerunning what
did not finish is a second `--submit --resume`: it submits arrays of only the models with such cells, each
running only those. Every job checks the plan's SHA-256 before it runs
anything, so a config, data or software changed after the submission is refused.

The scripts name absolute paths (they must work from any folder and under `--export=NONE`: they set PATH, the
interpreter, PYTHONPATH and the LEVANTE_/HF_ variables of the submitting shell, and the working folder); no
output of a run does. Each job `exec`s levante-tasks, so Slurm's SIGTERM (scancel, preemption, a time limit)
reaches the runner, which stops lmms-eval and records the interrupt.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from levante_tasks.atomic import write_json, write_text
from levante_tasks.errors import LevanteError, display_path, problem_text
from levante_tasks.matrix.config import MatrixConfig
from levante_tasks.matrix.plan import Cell, plan, plan_sha256
from levante_tasks.matrix.run import PLAN_FILE, check_out, plan_document
from levante_tasks.matrix.slurm_options import Resources
from levante_tasks.matrix.state import unfinished_reason

SLURM_DIR = "slurm"  # under --out: the scripts, jobs.json and logs/
CELL_SCRIPT, END_SCRIPT, JOBS_FILE = "cells.sbatch", "end.sbatch", "jobs.json"
# Variables of the submitting shell a job needs to see the same software and data (never tokens).
PASSED_ENV = ("PYTHONPATH", "LEVANTE_DATA_DIR", "LEVANTE_DATA_VERSION", "LEVANTE_MATRIX_LOCK_WAIT", "HF_HOME",
              "HF_HUB_CACHE", "HF_DATASETS_CACHE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
_MAX_ARRAY = re.compile(r"^MaxArraySize\s*=\s*(\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Chunk:
    """One job array: models `indices` (config order; each one's array task id is index - offset) sharing
    `resources`."""

    offset: int
    indices: tuple[int, ...]
    resources: Resources
    models: tuple[str, ...]

    def array_spec(self) -> str:
        """`--array`'s value: ranges of task ids (`0-3,7`), then `%N` for a throttle."""
        ids = [i - self.offset for i in self.indices]
        runs: list[str] = []
        start = prev = ids[0]
        for i in [*ids[1:], None]:
            if i is not None and i == prev + 1:
                prev = i
                continue
            runs.append(f"{start}-{prev}" if prev > start else str(start))
            if i is not None:
                start = prev = i
        throttle = f"%{self.resources.throttle}" if self.resources.throttle else ""
        return ",".join(runs) + throttle


def _slurm_command(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a Slurm command; one line when it is missing or fails."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
    except FileNotFoundError:
        raise LevanteError(f"{argv[0]}: not found; --submit needs Slurm's commands on PATH") from None
    except subprocess.TimeoutExpired:
        raise LevanteError(f"{argv[0]}: no answer from Slurm within 120 s") from None
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        raise LevanteError(f"{argv[0]} failed (exit {done.returncode}): {lines[-1] if lines else 'no message'}")
    return done


def max_array_size() -> int:
    """The cluster's MaxArraySize (`scontrol show config`): array task ids must stay below it."""
    found = _MAX_ARRAY.search(_slurm_command(["scontrol", "show", "config"]).stdout)
    size = int(found[1]) if found else 1001  # Slurm's default
    if size < 1:
        raise LevanteError("this cluster allows no job arrays (MaxArraySize = 0); run cells with --cell instead")
    return size


def _gpus(config: MatrixConfig) -> int | None:
    """GPUs per job (`--gres=gpu:N` unless the config sets gres): num_processes for a CUDA device."""
    return config.num_processes if (config.device or "").startswith("cuda") else None


def chunk_models(config: MatrixConfig, cells: list[Cell], max_size: int, prefix: str) -> list[Chunk]:
    """The arrays for the models of `cells` (the unfinished ones; in config order), one array task per model: a new
    array where the resources change or an array would need a task id >= max_size. A model without a job name gets
    `<prefix>-<model>`."""
    index = {m.name: k for k, m in enumerate(config.models)}
    chunks: list[Chunk] = []
    for name in dict.fromkeys(c.model.name for c in cells):
        resources = config.slurm.for_model(name, _gpus(config))
        if resources.job_name is None:
            resources = replace(resources, job_name=f"{prefix}-{name}")
        last, k = chunks[-1] if chunks else None, index[name]
        if last is not None and last.resources == resources and k - last.offset < max_size:
            chunks[-1] = Chunk(last.offset, (*last.indices, k), resources, (*last.models, name))
        else:
            chunks.append(Chunk(k, (k,), resources, (name,)))
    return chunks


def _preamble(config: MatrixConfig) -> list[str]:
    """What every job sets before it runs levante-tasks: this interpreter first on PATH, the submitting shell's
    software and data variables, the config's folder as the working folder."""
    bindir = Path(sys.executable).parent
    lines = ["set -euo pipefail", f"export PATH={shlex.quote(str(bindir))}:\"${{PATH:-/usr/local/bin:/usr/bin:/bin}}\"",
             "export PYTHONUNBUFFERED=1  # each line reaches the log when it is printed, in order"]
    if sys.prefix != sys.base_prefix:
        lines.append(f"export VIRTUAL_ENV={shlex.quote(sys.prefix)}")
    lines += [f"export {name}={shlex.quote(os.environ[name])}" for name in PASSED_ENV if os.environ.get(name)]
    return [*lines, f"cd {shlex.quote(str(config.base))}"]


def _levante(config: MatrixConfig, out: Path, digest: str) -> str:
    """`exec python -m levante_tasks matrix --config C --out D --plan-sha256 H` (absolute paths)."""
    return (f"exec {shlex.quote(sys.executable)} -m levante_tasks matrix --config {shlex.quote(str(config.path))} "
            f"--out {shlex.quote(str(out.absolute()))} --plan-sha256 {digest}")


def cell_script(config: MatrixConfig, out: Path, digest: str) -> str:
    """The array job: model = offset ($1) + array task id, its unfinished cells in one process; its output
    appended to slurm/logs/model-<index>.log."""
    logs = shlex.quote(str((out / SLURM_DIR / "logs").absolute()))
    return "\n".join([
        "#!/bin/bash",
        "# Generated by `levante-tasks matrix --submit`: one model's cells per array task (model = $1 + task id).",
        *_preamble(config),
        'model=$(( ${1:?the array offset} + ${SLURM_ARRAY_TASK_ID:?run this script with sbatch --array} ))',
        f'exec >>{logs}/model-"$model".log 2>&1',
        'echo "=== model $model: job ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}, restart ${SLURM_RESTART_COUNT:-0},'
        ' $(date -u +%Y-%m-%dT%H:%M:%SZ) ==="',
        f'{_levante(config, out, digest)} --model "$model"',
        "",
    ])


def end_script(config: MatrixConfig, out: Path, digest: str) -> str:
    """The end-step job: `--report-only` (the summaries and the report from the cells that finished; runs none)."""
    logs = shlex.quote(str((out / SLURM_DIR / "logs").absolute()))
    return "\n".join([
        "#!/bin/bash",
        "# Generated by `levante-tasks matrix --submit`: the end step, after the cell arrays.",
        *_preamble(config),
        f"exec >>{logs}/end.log 2>&1",
        'echo "=== end step: job ${SLURM_JOB_ID:-?}, $(date -u +%Y-%m-%dT%H:%M:%SZ) ==="',
        f"{_levante(config, out, digest)} --report-only",
        "",
    ])


def _submit(argv: list[str]) -> str:
    """sbatch --parsable ...: the job id."""
    return _slurm_command(["sbatch", "--parsable", *argv]).stdout.strip().split(";")[0]


def _queued(job_ids: list[str]) -> list[str]:
    """Those of `job_ids` Slurm still has pending or running (their end steps must wait for them too)."""
    if not job_ids:
        return []
    listed = set(_slurm_command(["squeue", "--noheader", "--format=%F"]).stdout.split())
    return [job for job in job_ids if job in listed]


def _read_jobs(folder: Path) -> list[dict]:
    """jobs.json's submissions (none when it is missing or damaged)."""
    try:
        return list(json.loads((folder / JOBS_FILE).read_text(encoding="utf-8"))["submissions"])
    except (OSError, ValueError, KeyError, TypeError):
        return []


def submit(config: MatrixConfig, out: Path, resume: bool, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Write the plan and the scripts, submit an array per chunk of unfinished cells and the end step after them
    (and after earlier submissions still queued); record the job ids in OUT/slurm/jobs.json. OUT follows the
    whole-run rule: absent, empty, or an earlier matrix with `resume`."""
    cells = plan(config)
    out = check_out(out, resume, partial=False)
    digest = plan_sha256(cells)
    todo = [c for c in cells if unfinished_reason(out / c.rel_dir, c.sha256, c.lmms_task) is not None]
    prefix = out.absolute().name
    chunks = chunk_models(config, todo, max_array_size(), prefix) if todo else []
    folder = out / SLURM_DIR
    try:
        (folder / "logs").mkdir(parents=True, exist_ok=True)
        write_json(out / PLAN_FILE, plan_document(config, cells))
        for name, script in ((CELL_SCRIPT, cell_script), (END_SCRIPT, end_script)):
            text = script(config, out, digest)
            write_text(folder / name, text)
            (folder / name).chmod(0o755)
    except OSError as exc:
        raise LevanteError(f"{display_path(folder)}: {problem_text(exc)} (cannot write the Slurm scripts)") from None
    earlier = _read_jobs(folder)
    waits_for = _queued([str(j) for entry in earlier for j in [*entry.get("arrays", []), entry.get("end_step")]])
    log = str((folder / "logs" / "slurm-%A.log").absolute())
    common = [f"--output={log}", "--open-mode=append"]
    arrays: list[str] = []
    try:
        for chunk in chunks:
            job = _submit([*common, "--requeue", f"--array={chunk.array_spec()}", *chunk.resources.sbatch_args(),
                           str(folder / CELL_SCRIPT), str(chunk.offset)])
            arrays.append(job)
            options = " ".join(chunk.resources.sbatch_args()) or "the cluster's defaults"
            cells = sum(c.model.name in chunk.models for c in todo)
            echo(f"submitted array {job}: {cells} cell(s) of {', '.join(chunk.models)}, one task per model "
                 f"(--array={chunk.array_spec()}, {options})")
        dependency = [f"--dependency=afterany:{':'.join([*arrays, *waits_for])}"] if arrays or waits_for else []
        end_resources = config.slurm.for_end_step()
        if end_resources.job_name is None:
            end_resources = replace(end_resources, job_name=f"{prefix}-end")
        end = _submit([*common, *dependency, *end_resources.sbatch_args(),
                       str(folder / END_SCRIPT)])
    except LevanteError as exc:
        submitted = f"; already submitted: {' '.join(arrays)} (scancel them, or submit again)" if arrays else ""
        raise LevanteError(f"{exc}{submitted}") from None
    after = f" after {', '.join([*arrays, *waits_for])}" if arrays or waits_for else ""
    if not todo:
        echo("every cell is finished; only the end step was submitted")
    echo(f"submitted end step {end}{after}: it writes {display_path(out / 'report.md')} from the cells that "
         f"finished (it runs none; rerun the others with --submit --resume); logs in "
         f"{display_path(folder / 'logs')}/")
    earlier.append({"plan_sha256": digest, "arrays": arrays, "end_step": end,
                    "cells": [c.index for c in todo], "models": [m for chunk in chunks for m in chunk.models]})
    try:
        write_json(folder / JOBS_FILE, {"schema": 1, "submissions": earlier})
    except OSError as exc:
        raise LevanteError(f"{display_path(folder / JOBS_FILE)}: {problem_text(exc)} (the jobs were submitted: "
                           f"{' '.join([*arrays, end])})") from None
    return earlier[-1]

