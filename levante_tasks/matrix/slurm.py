"""`--submit`: the matrix on a Slurm cluster as job arrays (one model per array task) and an end-step job.

Each array task runs the unfinished cells of one model in one lmms-eval process (`--model K`: one model load).
The models with unfinished cells are grouped into arrays by their sbatch resources (the config's `slurm:`
defaults and per-model settings), each at most the cluster's MaxArraySize wide (an array task id plus the
array's offset is the model's index in the config). The end step (`--report-only`: summaries, comparisons and
the report from the cells that finished; it runs no cell, records the others as they ended and exits 1 if any
did not finish) waits for them with `--dependency=afterany`, so it runs however the cells ended. Rerunning what
did not finish is a second `--submit --resume`: it submits arrays of only the models with such cells, each
running only those. Every job checks the plan's SHA-256 before it runs anything, so a config, data or software
changed after the submission is refused.

Nothing is queued while a whole run or an end step holds OUT's lock, or an earlier submission's end step runs:
every array task would wait for it on its allocation; nor while another --submit is submitting to OUT. Each
array is in jobs.json the moment sbatch accepts it; an sbatch that fails later names what is queued and the
`--resume` that continues (it skips the models of an unfinished submission's arrays Slurm still lists). `dry_run`
writes the scripts and prints them and the sbatch commands instead.

The scripts name absolute paths, and say so in their header (PATHS_NOTE): Slurm runs a spooled copy of a
script, which cannot find itself, from the submitting folder or a node's, under `--export=NONE`; the interpreter,
config and data live outside OUT, and a path relative to OUT would still climb through the user's home and break
through symlinks. They set PATH, the interpreter, PYTHONPATH and the LEVANTE_/HF_ variables of the submitting
shell, and the working folder; no output of a run names an absolute path. Each job `exec`s levante-tasks, so
Slurm's SIGTERM (scancel, preemption, a time limit) reaches the runner, which stops lmms-eval and records the
interrupt.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from levante_tasks import folder_lock
from levante_tasks.atomic import write_json, write_text
from levante_tasks.errors import LevanteError, display_path, problem_text, shell_path
from levante_tasks.matrix.config import MatrixConfig
from levante_tasks.matrix.plan import Cell, plan, plan_sha256
from levante_tasks.matrix.run import (
    LOCK_NAME,
    PLAN_FILE,
    SLURM_DIR,
    SUBMIT_HEADER,
    SUBMIT_SCRIPTS,
    check_out,
    plan_document,
)
from levante_tasks.matrix.slurm_options import Resources
from levante_tasks.matrix.state import unfinished_reason

CELL_SCRIPT, END_SCRIPT = SUBMIT_SCRIPTS
JOBS_FILE = "jobs.json"
# Variables of the submitting shell a job needs to see the same software and data (never tokens).
PASSED_ENV = ("PYTHONPATH", "LEVANTE_DATA_DIR", "LEVANTE_DATA_VERSION", "LEVANTE_MATRIX_LOCK_WAIT", "HF_HOME",
              "HF_HUB_CACHE", "HF_DATASETS_CACHE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
# Each script says why it names absolute paths, and that it is not an output (module doc).
PATHS_NOTE = ("# It names this machine's absolute paths (interpreter, config, --out, data): Slurm runs a copy of it\n"
              "# in a spool folder, under --export=NONE. Not a result: leave OUT/slurm/ out when you share OUT.")
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
        throttle = f"%{self.resources.throttle}" if self.resources.throttle else ""
        return _ranges([i - self.offset for i in self.indices]) + throttle

    def describe(self) -> str:
        """What the array runs, task ids with the models they are (`--array=0-1: models 3-4 (c, d)`): a
        resubmitted array starts at task 0 whatever its models' indices."""
        noun = "model" if len(self.indices) == 1 else "models"
        return f"--array={self.array_spec()}: {noun} {_ranges(list(self.indices))} ({', '.join(self.models)})"


def _ranges(ids: list[int]) -> str:
    """Increasing integers as ranges: `0-3,7`."""
    runs: list[str] = []
    start = prev = ids[0]
    for i in [*ids[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        runs.append(f"{start}-{prev}" if prev > start else str(start))
        if i is not None:
            start = prev = i
    return ",".join(runs)


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
        f"{SUBMIT_HEADER}one model's cells per array task (model = $1 + task id).",
        PATHS_NOTE,
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
        f"{SUBMIT_HEADER}the end step, after the cell arrays.",
        PATHS_NOTE,
        *_preamble(config),
        f"exec >>{logs}/end.log 2>&1",
        'echo "=== end step: job ${SLURM_JOB_ID:-?}, $(date -u +%Y-%m-%dT%H:%M:%SZ) ==="',
        f"{_levante(config, out, digest)} --report-only",
        "",
    ])


def _submit(argv: list[str]) -> str:
    """sbatch --parsable ...: the job id."""
    return _slurm_command(["sbatch", "--parsable", *argv]).stdout.strip().split(";")[0]


def _listed(job_ids: list[str]) -> dict[str, set[str]]:
    """The states (`PENDING`, `RUNNING`, ...; one per array task) of those of `job_ids` Slurm still lists."""
    if not job_ids:
        return {}
    states: dict[str, set[str]] = {}
    for line in _slurm_command(["squeue", "--noheader", "--format=%F %T"]).stdout.splitlines():
        job, _, state = line.strip().partition(" ")
        if job in job_ids:
            states.setdefault(job, set()).add(state.strip())
    return states


def _read_jobs(folder: Path) -> list[dict]:
    """jobs.json's submissions (none when it is missing or damaged)."""
    try:
        return list(json.loads((folder / JOBS_FILE).read_text(encoding="utf-8"))["submissions"])
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _record(folder: Path, submissions: list[dict]) -> None:
    """Write jobs.json; a failure names the jobs already queued (they run whatever this file says), and before the
    end step is queued, the scancel that undoes them (a --resume would not know them, and queue them again)."""
    try:
        write_json(folder / JOBS_FILE, {"schema": 1, "submissions": submissions})
    except OSError as exc:
        last = submissions[-1]
        queued = " ".join(j for j in [*last["arrays"], last["end_step"]] if j)
        undo = "" if last["end_step"] else (f"; nothing more was queued: `scancel {queued}`, then submit again "
                                            "with --resume")
        raise LevanteError(f"{display_path(folder / JOBS_FILE)}: {problem_text(exc)} (queued all the same: "
                           f"{queued}{undo})") from None


_WHY = "nothing was submitted (its array tasks would wait for it on their allocations): submit when it has ended"


@contextlib.contextmanager
def _sole_submit(out: Path, target: Path) -> Iterator[None]:
    """Hold OUT's lock shared for the block (as a shard does), refusing in one line when a whole run or an end
    step holds it (every array task would wait for it on its allocation); and OUT itself exclusively, refusing a
    second --submit meanwhile (both would queue every model, and the later jobs.json drop the other's arrays)."""
    try:
        with folder_lock.hold(target, LOCK_NAME, who="another matrix process", what="the matrix lock", shared=True,
                              wait_seconds=0, role="a --submit"), folder_lock.hold_folder(target):
            yield
    except folder_lock.Busy as exc:
        raise LevanteError(f"{display_path(out)}: {exc.holder} is using it; {_WHY}") from None
    except folder_lock.FolderHeld:
        raise LevanteError(f"{display_path(out)}: another --submit is submitting to it; nothing was submitted (it "
                           "queues what this one would)") from None


def _no_end_step_running(out: Path, earlier: list[dict], listed: dict[str, set[str]]) -> None:
    """Refuse in one line while an earlier submission's end step runs (on another node its lock is not seen here):
    every array task would wait for it on its allocation."""
    running = [e["end_step"] for e in earlier if e.get("end_step") and listed.get(e["end_step"], set()) - {"PENDING"}]
    if running:
        raise LevanteError(f"{display_path(out)}: the end step of an earlier --submit (Slurm job {running[0]}) is "
                           f"running on it; {_WHY}")


def _still_queued(earlier: list[dict], listed: dict[str, set[str]], digest: str) -> set[str]:
    """Models in arrays of an unfinished submission (sbatch failed after them; no end step) of this same plan that
    Slurm still lists: a --resume continues that submission instead of queueing them twice."""
    return {model for entry in earlier if entry.get("end_step") is None and entry.get("plan_sha256") == digest
            for job, models in (entry.get("array_models") or {}).items() if job in listed for model in models}


def _stopped(exc: LevanteError, config: MatrixConfig, out: Path, entry: dict[str, Any], chunks: list[Chunk]) -> str:
    """The one line of an sbatch that failed mid-submission: what is queued and the command that continues."""
    again = shlex.join(["levante-tasks", "matrix", "--config", shell_path(config.path), "--out", shell_path(out),
                        "--submit", "--resume"])
    queued = entry["arrays"]
    if not queued:
        return f"{exc}; nothing was queued: fix what sbatch refused, then `{again}`"
    ids = " ".join(queued)
    rest = "the end step" if len(queued) == len(chunks) else "the other models' arrays and the end step"
    return (f"{exc}; this --submit queued array(s) {ids} (in {shell_path(out / SLURM_DIR / JOBS_FILE)}) and no "
            f"end step: fix what sbatch refused, then `{again}` queues {rest} after them (or `scancel {ids}` "
            "cancels them)")


def _preview(folder: Path, commands: list[tuple[list[str], str]], echo: Callable[[str], None]) -> None:
    """`--submit --dry-run`: the scripts as written and the sbatch commands, as shell lines to read or paste."""
    for name in (CELL_SCRIPT, END_SCRIPT):
        echo(f"# {display_path(folder / name)} (written; nothing was queued)")
        echo((folder / name).read_text(encoding="utf-8").rstrip("\n"))
    echo(f"# the sbatch commands --submit runs once it has made {display_path(folder / 'logs')}/ ($arrayN: the "
         "job id sbatch gives array N):")
    for k, (argv, what) in enumerate(commands, 1):
        line = " ".join(f'"{a}"' if "$array" in a else shlex.quote(a) for a in ["sbatch", "--parsable", *argv])
        echo(f"array{k}=$({line})  # {what}" if k < len(commands) else f"{line}  # {what}")


def submit(config: MatrixConfig, out: Path, resume: bool, dry_run: bool = False,
           echo: Callable[[str], None] = print) -> dict[str, Any] | None:
    """Write the plan and the scripts, submit an array per chunk of unfinished cells and the end step after them
    (and after earlier submissions still queued); record each job id in OUT/slurm/jobs.json as sbatch accepts it.
    OUT follows the whole-run rule: absent, empty, or an earlier matrix with `resume`; no whole run or end step
    may be using it. `dry_run`: write the scripts, print them and the sbatch commands, queue nothing."""
    cells = plan(config)
    target = check_out(out, resume, partial=False)
    folder = target / SLURM_DIR
    with _sole_submit(out, target):
        check_out(out, resume, partial=False)  # again: another --submit may have made it a matrix meanwhile
        earlier = _read_jobs(folder)
        ids = [str(j) for entry in earlier for j in [*entry.get("arrays", []), entry.get("end_step")] if j]
        listed = _listed(ids)
        _no_end_step_running(out, earlier, listed)
        digest = plan_sha256(cells)
        queued = _still_queued(earlier, listed, digest)
        unfinished = [c for c in cells if unfinished_reason(target / c.rel_dir, c.sha256, c.lmms_task) is not None]
        todo = [c for c in unfinished if c.model.name not in queued]
        prefix = target.absolute().name
        chunks = chunk_models(config, todo, max_array_size(), prefix) if todo else []
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if not dry_run:
                (folder / "logs").mkdir(exist_ok=True)
                write_json(target / PLAN_FILE, plan_document(config, cells))
            for name, script in ((CELL_SCRIPT, cell_script), (END_SCRIPT, end_script)):
                write_text(folder / name, script(config, target, digest))
                (folder / name).chmod(0o755)
        except OSError as exc:
            raise LevanteError(f"{display_path(folder)}: {problem_text(exc)} (cannot write the Slurm scripts)"
                               ) from None
        waits_for = [j for j in ids if j in listed]
        log = str((folder / "logs" / "slurm-%A.log").absolute())
        common = [f"--output={log}", "--open-mode=append"]
        arrays = [([*common, "--requeue", f"--array={chunk.array_spec()}", *chunk.resources.sbatch_args(),
                    str(folder / CELL_SCRIPT), str(chunk.offset)], chunk) for chunk in chunks]
        end_resources = config.slurm.for_end_step()
        if end_resources.job_name is None:
            end_resources = replace(end_resources, job_name=f"{prefix}-end")

        def end_argv(after: list[str]) -> list[str]:
            dependency = [f"--dependency=afterany:{':'.join(after)}"] if after else []
            return [*common, *dependency, *end_resources.sbatch_args(), str(folder / END_SCRIPT)]

        def what(chunk: Chunk) -> str:
            options = " ".join(chunk.resources.sbatch_args()) or "the cluster's defaults"
            return (f"{sum(c.model.name in chunk.models for c in todo)} cell(s), one task per model "
                    f"({chunk.describe()}; {options})")

        if dry_run:
            placeholders = [f"$array{k}" for k in range(1, len(arrays) + 1)]
            _preview(folder, [*((argv, what(chunk)) for argv, chunk in arrays),
                              (end_argv([*placeholders, *waits_for]), "the end step, after them")], echo)
            return None
        entry: dict[str, Any] = {"plan_sha256": digest, "arrays": [], "array_models": {}, "end_step": None,
                                 "cells": [c.index for c in todo], "models": [m for c in chunks for m in c.models]}
        submissions = [*earlier, entry]

        def queue(argv: list[str]) -> str:
            try:
                return _submit(argv)
            except LevanteError as exc:
                raise LevanteError(_stopped(exc, config, out, entry, chunks)) from None

        for argv, chunk in arrays:
            job = queue(argv)
            entry["arrays"].append(job)
            entry["array_models"][job] = list(chunk.models)
            _record(folder, submissions)
            echo(f"submitted array {job}: {what(chunk)}")
        end = entry["end_step"] = queue(end_argv([*entry["arrays"], *waits_for]))
        _record(folder, submissions)
    after = f" after {', '.join([*entry['arrays'], *waits_for])}" if entry["arrays"] or waits_for else ""
    if not todo:
        echo("every unfinished cell is in an array an earlier --submit queued; only the end step was submitted"
             if unfinished else "every cell is finished; only the end step was submitted")
    echo(f"submitted end step {end}{after}: it writes {display_path(out / 'report.md')} from the cells that "
         f"finished (it runs none; rerun the others with --submit --resume); logs in "
         f"{display_path(folder / 'logs')}/")
    return entry
