"""Run the cells of a matrix: one lmms-eval process per cell attempt, state files, out-of-memory fallback.

lmms-eval exits 0 even when an evaluation fails, so an attempt succeeded only when it left exactly one results
file that parses. An attempt that left none and whose output mentions running out of memory is retried with the
next configured batch size (only those); any other failure is recorded in the cell's state and log, and the
matrix goes on with the next cell.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from levante_tasks import folder_lock
from levante_tasks.atomic import clean_stale, write_json, write_text
from levante_tasks.errors import LevanteError, display_path, os_error, problem_text
from levante_tasks.matrix import slurm_job
from levante_tasks.matrix.config import MatrixConfig
from levante_tasks.matrix.plan import (
    Cell,
    cell_argv,
    cell_env,
    config_argv,
    data_facts,
    plan,
    plan_sha256,
    relative_to_base,
    runs_list,
    shell_command,
)
from levante_tasks.matrix.state import (
    LMMS_DIR,
    LOG_FILE,
    error_line,
    live_runner,
    log_text,
    process_start,
    read_state,
    results_files,
    tail,
    task_problem,
    unfinished_reason,
    unfinished_state,
    write_state,
)
from levante_tasks.parent_death import parent_death_signal
from levante_tasks.runs.lmms import FileProblem, read_results

PLAN_FILE = "matrix-plan.json"  # marks a folder as a matrix (and lists its cells)
OOM = re.compile(r"OutOfMemoryError|CUDA out of memory|\bout of memory\b", re.IGNORECASE)
LOCK_NAME = ".matrix.lock"  # OUT's lock: a whole run holds it exclusively, a --shard/--cell run shared
LOCK_WAIT_ENV = "LEVANTE_MATRIX_LOCK_WAIT"  # seconds a run waits for OUT's lock (default folder_lock.WAIT_SECONDS)
STOP_SECONDS = 10.0  # how long an interrupted lmms-eval gets to exit after SIGTERM before SIGKILL


class Interrupted(KeyboardInterrupt):
    """SIGTERM (Slurm preemption, `scancel`, a time limit, `kill`) while the matrix runs: stop like Ctrl-C, exit
    128 + signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def time_limit(self) -> str | None:
        """The job's time limit when this is Slurm's SIGTERM for reaching it, else None."""
        return _time_limit_reached() if self.signum == signal.SIGTERM else None


@functools.cache
def _time_limit_reached() -> str | None:
    """slurm_job.time_limit_reached, asked once per process: the runner stops at its first SIGTERM, and the one
    Slurm also sent lmms-eval may raise a second Interrupted while the first is recorded."""
    return slurm_job.time_limit_reached()


def interrupt_reason(exc: KeyboardInterrupt, config: MatrixConfig, model: str | None = None,
                     end_step: bool = False) -> tuple[str, str | None]:
    """What stopped the run (`interrupted by SIGTERM`, or `hit its time limit (01:00:00)` for Slurm's), and for a
    time limit what to do: raise the config key of the time of `model`'s jobs (or the end step's), then submit
    again."""
    if isinstance(exc, Interrupted) and exc.time_limit is not None:
        key = config.slurm.time_key(model, end_step)
        return f"hit its time limit ({exc.time_limit})", f"raise {key} in {config.path.name}, then --submit --resume"
    return f"interrupted by {exc.args[0] if isinstance(exc, Interrupted) else 'SIGINT'}", None


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Turn SIGTERM into Interrupted for the block (Python's default would die without stopping lmms-eval); only
    the main thread can set a handler, so elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: Any) -> None:
        raise Interrupted(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _matrix_lock(out: Path, partial: bool) -> contextlib.AbstractContextManager[None]:
    """OUT's lock (module doc of folder_lock): shared for a shard or single cell, exclusive for a whole run, so a
    whole run (which moves superseded cells and writes the end step) never overlaps another process on OUT."""
    wait = os.environ.get(LOCK_WAIT_ENV, "").strip()
    return folder_lock.hold(out, LOCK_NAME, who="a whole matrix run" if partial else "another matrix process",
                         what="the matrix lock", shared=partial, wait_seconds=float(wait) if wait else None)


# lmms-eval gets SIGTERM when the runner dies (kill -9, OOM killer): no orphan keeps the GPU and writes into a cell
_PDEATHSIG = parent_death_signal(signal.SIGTERM)


_INTERRUPTS = (signal.SIGTERM, signal.SIGINT)  # lmms-eval killed by one of these: the matrix was interrupted


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Hold SIGTERM and SIGINT for the block (delivered when it ends): an interrupt's recording is not itself
    interrupted when the signal that killed lmms-eval reaches this process a moment later."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _INTERRUPTS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _stop(process: subprocess.Popen[str]) -> None:
    """Stop an lmms-eval process we started: SIGTERM, then SIGKILL after STOP_SECONDS; reap it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _clear(folder: Path) -> None:
    """Remove an attempt's output folder; one that cannot be removed stops the run (its old files must never
    count as the next attempt's results)."""
    try:
        shutil.rmtree(folder)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise os_error(exc, "clearing a cell's earlier output") from None


@dataclass
class MatrixRun:
    """What one invocation did: every planned cell, the ones it selected, and their states afterwards."""

    config: MatrixConfig
    out: Path
    cells: list[Cell]
    selected: list[Cell]
    states: dict[str, dict[str, Any]] = field(default_factory=dict)
    kept: set[str] = field(default_factory=set)  # cells found finished (not run again)
    elsewhere: dict[str, str] = field(default_factory=dict)  # cells another process was running: where (held_by)
    document: dict[str, Any] | None = None  # matrix.json, when the end step ran

    @property
    def failed(self) -> list[Cell]:
        """Selected cells that did not finish (not those left to the process that was running them)."""
        return [c for c in self.selected if c.cell_id not in self.elsewhere
                and (self.states.get(c.cell_id) or {}).get("status") != "done"]


def _now() -> str:
    """UTC time for state files, to the second."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parses(cell_dir: Path, lmms_task: str) -> tuple[str | None, str | None]:
    """(the attempt's single results file relative to the cell folder, None) when it parses and holds the cell's
    task; else (None, why not: None when there is no such file)."""
    found = results_files(cell_dir)
    if len(found) != 1:
        return None, f"{len(found)} results files" if found else None
    rel = found[0].relative_to(cell_dir).as_posix()
    try:
        problem = task_problem(read_results(found[0], rel), lmms_task)
    except FileProblem as exc:
        return None, str(exc)
    return (None, problem) if problem else (rel, None)


def held_by(cell_dir: Path) -> str:
    """Where the process holding a cell's lock runs it, from the `running` state it wrote (`Slurm job 12_3,
    process 4567`; `process 4567` outside Slurm); `just starting` before it wrote one (no host names: a pid is
    per host)."""
    state = read_state(cell_dir) or {}
    if state.get("status") != "running":
        return "just starting"
    job = state.get("slurm_job")
    return f"Slurm job {job}, process {state.get('pid')}" if job else f"process {state.get('pid')}"


def run_model_cells(config: MatrixConfig, cells: list[Cell], out: Path, data: dict[str, Any],
                    notes: dict[str, str] | None = None) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Run cells of one model in one lmms-eval process per attempt (one model load: patch 0019), stale output
    removed first, falling back through the configured batch sizes for the cells that ran out of memory. Returns
    each run cell's final state (also in its state.json), and the cells another matrix process holds with where
    it runs them (held_by): those are left to it (it finishes them; a duplicate Slurm task is no failure). Every
    cell folder run is locked meanwhile; an interrupt (Ctrl-C, SIGTERM) or an error stops lmms-eval, and an
    interrupt is recorded in the cells not finished. A `notes` line (why a cell runs again) is printed once the
    cell is known to be ours."""
    ours, elsewhere = [], {}
    with contextlib.ExitStack() as locks:
        for cell in cells:
            cell_dir = out / cell.rel_dir
            try:
                locks.enter_context(folder_lock.hold_folder(cell_dir))
            except folder_lock.FolderHeld:
                elsewhere[cell.cell_id] = held_by(cell_dir)
                continue
            pid = live_runner(cell_dir)
            if pid is not None:  # an lmms-eval whose runner died (no one holds the lock, no one records it)
                raise LevanteError(f"{cell.rel_dir}: still being run by process {pid}; wait for it or stop it, then "
                                   "rerun")
            ours.append(cell)
        for cell in ours:
            if (notes or {}).get(cell.cell_id):
                tqdm.write(notes[cell.cell_id])
        try:
            for cell in ours:
                clean_stale(out / cell.rel_dir)
            return (_attempts(config, ours, out, data) if ours else {}), elsewhere
        except OSError as exc:  # a full disk, a read-only folder: name the cell, not a temp file
            raise LevanteError(f"{ours[0].rel_dir}: {problem_text(exc)}") from None


@dataclass
class _Cell:
    """One cell's record across its attempts: the state's fixed part, attempts, log parts, final state."""

    cell: Cell
    folder: Path
    base: dict[str, Any]
    attempts: list[dict[str, Any]] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    output: str = ""  # the last attempt's output (its reason and tail when it ends failed)
    state: dict[str, Any] | None = None


def _attempts(config: MatrixConfig, cells: list[Cell], out: Path, data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The attempts of a model's cells (see run_model_cells), with their folders locked: one process per batch
    size, holding the cells still to run at that size (all, then those that ran out of memory)."""
    env = cell_env(config, data)
    records = [_Cell(c, out / c.rel_dir, {"cell_id": c.cell_id, "sha256": c.sha256, "spec": c.spec,
                                          "started": _now()}) for c in cells]
    pending = records
    for batch_size in config.batch_sizes:
        outcomes = _process(config, pending, batch_size, out, env)
        pending = [r for r in pending if outcomes[r.cell.cell_id] == "oom"]
        if not pending:
            break
    for record in pending:  # out of memory at every size
        _finish(record, None, record.output)
    return {r.cell.cell_id: r.state or {} for r in records}


def _marker(line: str, by_output: dict[str, _Cell]) -> _Cell | None:
    """The run a line of lmms-eval's output starts: its per-run `Evaluation tracker args` line names the run's
    output path (our only way to attribute the output of one process to its runs)."""
    found = _TRACKER.search(line)
    return by_output.get(found[1]) if found else None


REUSED = "levante-tasks: reusing the"  # patch 0019's line for a run that reused the previous run's model
_TRACKER = re.compile(r"Evaluation tracker args: .*'output_path': '([^']+)'")


def _process(config: MatrixConfig, records: list[_Cell], batch_size: int, out: Path,
             env: dict[str, str]) -> dict[str, str]:
    """One lmms-eval process running `records` at `batch_size`; each run's cell is settled as soon as the next run
    starts (so a kill later keeps it) and the rest when the process ends. Returns each cell's outcome."""
    for record in records:
        _clear(record.folder / LMMS_DIR)  # a killed or failed attempt's files never count
    argv, runs_file = _process_argv(config, records, batch_size, out)
    by_output = {relative_to_base(config, r.folder / LMMS_DIR): r for r in records}
    began = time.monotonic()
    process = subprocess.Popen(argv, cwd=config.base, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, errors="replace", preexec_fn=_PDEATHSIG)
    lines: dict[int, list[str]] = {id(r): [] for r in records}
    started: list[tuple[_Cell, float]] = []
    preamble: list[str] = []
    outcomes: dict[str, str] = {}
    try:
        job = slurm_job.job_name()  # named to a duplicate task that finds the cell held (held_by)
        for record in records:
            write_state(record.folder, {**record.base, "status": "running", "batch_size": batch_size,
                                        "attempts": record.attempts, "pid": process.pid,
                                        "pid_start": process_start(process.pid), **({"slurm_job": job} if job else {})})
        assert process.stdout is not None
        for line in process.stdout:
            record = _marker(line, by_output)
            if record is not None:
                if started:  # the previous run has written all its files: settle it if it finished
                    previous, since = started[-1]
                    output = "".join(lines[id(previous)])
                    outcomes.update(_settle(previous, batch_size, None, output, since, REUSED not in output,
                                            final=False))
                else:  # what came before the first run (start-up, task indexing) is the first run's
                    lines[id(record)] += preamble
                    preamble.clear()
                started.append((record, time.monotonic()))
            (lines[id(started[-1][0])] if started else preamble).append(line)
        if -process.wait() in _INTERRUPTS:  # Slurm signals every process of the step: lmms-eval may die first
            raise Interrupted(-process.returncode)
    except (KeyboardInterrupt, Interrupted) as exc:
        with _interrupts_deferred():  # the same signal reaching us now must not cut the recording short
            what, fix = interrupt_reason(exc, config, records[0].cell.model.name)  # Slurm's lmms-eval is ending too
            _stop(process)
            for record in records:
                if record.cell.cell_id not in outcomes:
                    _interrupted(record, batch_size, process.returncode, began, f"{what}; {fix}" if fix else what)
        raise
    except BaseException:
        _stop(process)
        raise
    finally:
        if runs_file is not None:
            with contextlib.suppress(OSError):
                runs_file.unlink(missing_ok=True)
    whole = "".join([*preamble, *(line for r, _ in started for line in lines[id(r)])])
    since = {id(r): at for r, at in started}
    reuse = bool(records[0].cell.spec["software"]["lmms_eval"].get("patched"))  # patch 0019 in effect
    for record in records:
        if record.cell.cell_id in outcomes:
            continue
        if id(record) in since:
            output = "".join(lines[id(record)])
            built = REUSED not in output
        else:  # no marker line (a --verbosity above INFO, or the run never started): the whole output
            output, built = whole, not started and (record is records[0] or not reuse)
        outcomes.update(_settle(record, batch_size, process.returncode, output, since.get(id(record), began),
                                built, final=True))
    return outcomes


RUNS_FILE = ".runs-{model}-{pid}.yaml"  # in the matrix folder while a model's process runs (its --config list)


def _process_argv(config: MatrixConfig, records: list[_Cell], batch_size: int,
                  out: Path) -> tuple[list[str], Path | None]:
    """The argv of one process and the runs file it reads (written here; None for one cell: its own argv)."""
    cells, outputs = [r.cell for r in records], [r.folder / LMMS_DIR for r in records]
    if len(cells) == 1:
        return cell_argv(config, cells[0], batch_size, outputs[0]), None
    path = out / RUNS_FILE.format(model=cells[0].model.name, pid=os.getpid())
    write_text(path, json.dumps(runs_list(config, cells, outputs), indent=1) + "\n")  # JSON is YAML
    return config_argv(config, cells[0], batch_size, path), path


def _settle(record: _Cell, batch_size: int, exit_code: int | None, output: str, since: float, built: bool,
            final: bool) -> dict[str, str]:
    """Record one run's attempt: done when its results file parses, else, at the process's end (`final`), oom or
    failed (a run not finished when the next one starts waits for the end). `built`: the process built a model
    for this run (it did not reuse the previous run's)."""
    results, problem = _parses(record.folder, record.cell.lmms_task)
    if not results and not final:
        return {}
    outcome = "done" if results else "oom" if OOM.search(output) and not problem else "failed"
    record.attempts.append({"batch_size": batch_size, "outcome": outcome, "exit_code": exit_code,
                            "seconds": round(time.monotonic() - since, 1), "model_load": built})
    record.logs.append(f"=== batch size {batch_size}: exit {exit_code}, {outcome} ===\n{log_text(output)}")
    record.output = output
    if outcome in ("done", "failed"):
        _finish(record, results, output, problem)
    return {record.cell.cell_id: outcome}


def _finish(record: _Cell, results: str | None, output: str, problem: str | None = None) -> None:
    """Write a cell's log and final state (done, or failed with its reason)."""
    attempts = record.attempts
    write_text(record.folder / LOG_FILE, "\n".join(record.logs))
    state = {**record.base, "status": "done" if results else "failed", "batch_size": attempts[-1]["batch_size"],
             "attempts": attempts, "results": results, "finished": _now(),
             "seconds": round(sum(a["seconds"] for a in attempts), 1), "error": None}  # its runs' own time
    if not results:
        _clear(record.folder / LMMS_DIR)  # no partial samples for the summary to meet
        sizes = ", ".join(str(a["batch_size"]) for a in attempts)
        exit_code = attempts[-1]["exit_code"]
        reason = (f"out of memory at every configured batch size ({sizes})" if attempts[-1]["outcome"] == "oom"
                  else f"lmms-eval exit {exit_code}, {problem}" if problem
                  else f"lmms-eval exit {exit_code}, no results file that parses")
        # with a results file that is not the cell's, only an exception line explains more than `problem` does
        cause = error_line(output, None if problem else exit_code)
        if cause and attempts[-1]["outcome"] != "oom":
            reason = f"{reason}: {cause}"
        state["error"] = {"reason": reason, "tail": tail(output)}
    write_state(record.folder, state)
    record.state = state


def _interrupted(record: _Cell, batch_size: int, exit_code: int | None, began: float, reason: str) -> None:
    """Record an interrupted cell (its partial output removed) with `reason` (interrupt_reason's); resume reruns it.
    A full disk must not hide the interrupt."""
    record.attempts.append({"batch_size": batch_size, "outcome": "interrupted", "exit_code": exit_code,
                            "seconds": round(time.monotonic() - began, 1), "model_load": False})
    with contextlib.suppress(OSError):
        _clear(record.folder / LMMS_DIR)
        write_text(record.folder / LOG_FILE, "\n".join([*record.logs, f"=== batch size {batch_size}: {reason} ==="]))
        write_state(record.folder, {**record.base, "status": "failed", "batch_size": batch_size,
                                    "attempts": record.attempts, "results": None, "finished": _now(),
                                    "error": {"reason": reason, "tail": []}})


def check_out(out: Path, resume: bool, partial: bool) -> Path:
    """The matrix folder (a symlink's target): absent, empty or an earlier matrix (it holds matrix-plan.json);
    continuing an earlier one needs --resume (a shard or single cell always continues it: they are parts of one
    matrix). A file, or a non-empty folder without matrix-plan.json (a user's own folder), is refused."""
    target = Path(os.path.realpath(out)) if out.is_symlink() else out
    if target.exists() and not target.is_dir():
        raise LevanteError(f"{display_path(out)}: exists and is not a folder; choose another --out")
    try:
        entries = [p.name for p in target.iterdir()] if target.is_dir() else []
    except OSError as exc:
        raise os_error(exc, "checking --out") from None
    has_plan = PLAN_FILE in entries
    if not has_plan and any(name != LOCK_NAME for name in entries):
        raise LevanteError(f"{display_path(out)}: not empty and holds no {PLAN_FILE} (not an earlier matrix); "
                           "it is not replaced: choose another --out")
    if has_plan and not (resume or partial):
        raise LevanteError(f"{display_path(out)}: holds an earlier matrix; pass --resume to continue it (finished "
                           "cells with an unchanged config are kept) or choose another --out")
    return target


def plan_document(config: MatrixConfig, cells: list[Cell]) -> dict[str, Any]:
    """matrix-plan.json: the config's name and every planned cell with its hash and spec (no times)."""
    return {"schema": 1, "config": config.path.name,
            "cells": [{"index": c.index, "cell_id": c.cell_id, "dir": c.rel_dir, "model": c.model.name,
                       "group": c.model.group, "task": c.task, "seed": c.seed, "lmms_task": c.lmms_task,
                       "sha256": c.sha256, "spec": c.spec} for c in cells]}


def set_aside_superseded(out: Path, cells: list[Cell]) -> list[str]:
    """Move cell folders of an earlier config (not in this plan) to superseded/, so no old output is reused or
    summarized; a cell whose model only changed group moves to its new group's folder. Returns what was set aside."""
    planned = {c.rel_dir: c for c in cells}
    by_id = {c.cell_id: c for c in cells}
    moved = []
    for folder in sorted((out / "cells").glob("*/*")):
        rel = folder.relative_to(out).as_posix()
        if not folder.is_dir() or rel in planned or folder.name.startswith("."):
            continue
        regrouped = by_id.get(folder.name)
        if regrouped is not None and not (out / regrouped.rel_dir).exists():
            (out / regrouped.rel_dir).parent.mkdir(parents=True, exist_ok=True)
            folder.rename(out / regrouped.rel_dir)
            continue
        target = out / "superseded" / folder.relative_to(out / "cells")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            shutil.rmtree(target)
        folder.rename(target)
        moved.append(rel)
    return moved


def restore_superseded(out: Path, cells: list[Cell]) -> list[str]:
    """Move back from superseded/ the folders of planned cells that are not in cells/ (a config changed and then
    changed back: the same hash is the same protocol, so a finished cell is kept, not run again). Returns them."""
    restored = []
    for cell in cells:
        target = out / cell.rel_dir
        if target.exists():
            continue
        found = sorted(p for p in (out / "superseded").glob(f"*/{cell.cell_id}") if p.is_dir())
        if found:
            target.parent.mkdir(parents=True, exist_ok=True)
            found[0].rename(target)
            restored.append(cell.rel_dir)
    return restored


def describe(state: dict[str, Any], kept: bool) -> str:
    """One word or phrase for a cell's status (progress lines and the report)."""
    if kept:
        return "kept (finished earlier)"
    if state.get("status") == "done":
        sizes = [a["batch_size"] for a in state.get("attempts", [])]
        fallback = f", out-of-memory fallback {' -> '.join(map(str, sizes))}" if len(sizes) > 1 else ""
        return f"done (batch size {state['batch_size']}{fallback}, {state.get('seconds', 0):.0f} s)"
    return f"{state.get('status', 'failed')}: {(state.get('error') or {}).get('reason', 'unknown')}"


def by_model(cells: list[Cell]) -> list[list[Cell]]:
    """`cells` split into one list per model, in order: each runs in one lmms-eval process (one model load). A
    model's cells share its resources (its Slurm settings are per model), so the model is the only key."""
    groups: dict[str, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(cell.model.name, []).append(cell)
    return list(groups.values())


def select_cells(cells: list[Cell], shard: tuple[int, int] | None, cell_index: int | None,
                 model_index: int | None = None) -> list[Cell]:
    """The cells this invocation runs: all, one shard (index % n == i), one cell by index, or one model's (by its
    index in the config: the unit of a Slurm array task)."""
    if model_index is not None:
        models = by_model(cells)
        if not 0 <= model_index < len(models):
            raise LevanteError(f"--model {model_index}: the matrix has models 0..{len(models) - 1}")
        return models[model_index]
    if cell_index is not None:
        if not 0 <= cell_index < len(cells):
            raise LevanteError(f"--cell {cell_index}: the matrix has cells 0..{len(cells) - 1}")
        return [cells[cell_index]]
    if shard is not None:
        i, n = shard
        return [c for c in cells if c.index % n == i]
    return cells


def run_matrix(config: MatrixConfig, out: Path, *, resume: bool = False, shard: tuple[int, int] | None = None,
               cell_index: int | None = None, model_index: int | None = None, dry_run: bool = False,
               expect_plan: str | None = None, report_only: bool = False,
               echo: Callable[[str], None] = print) -> MatrixRun:
    """Plan, run the selected cells that are not finished, and (for a whole matrix) write the report.
    `expect_plan`: the plan_sha256 a Slurm job was submitted with; another plan is refused before anything runs.
    `report_only`: the end step of an earlier matrix (it must hold matrix-plan.json) over the cells as they are:
    runs no cell and deletes nothing; one that did not finish is recorded as it is (unfinished_state)."""
    data = data_facts(config)
    cells = plan(config, data)
    if expect_plan is not None and plan_sha256(cells) != expect_plan:
        raise LevanteError(f"{display_path(config.path)}: the plan changed after it was submitted to Slurm (plan "
                           f"{expect_plan[:12]} then, {plan_sha256(cells)[:12]} now: the config, the prepared data "
                           "or the software changed); nothing was run: submit again")
    selected = select_cells(cells, shard, cell_index, model_index)
    partial = shard is not None or cell_index is not None or model_index is not None
    run = MatrixRun(config, out, cells, selected)
    if dry_run:
        for cell in selected:
            status = "to run" if unfinished_reason(out / cell.rel_dir, cell.sha256, cell.lmms_task) else "finished"
            argv = cell_argv(config, cell, config.batch_sizes[0], out / cell.rel_dir / LMMS_DIR)
            echo(f"# cell {cell.index} {cell.cell_id} ({status})\n{shell_command(config, data, argv)}")
        return run
    resume = resume or report_only
    target = check_out(out, resume, partial)  # before the lock: a user's own folder gets no lock file
    if report_only and not (target / PLAN_FILE).is_file():
        raise LevanteError(f"{display_path(out)}: holds no {PLAN_FILE}: no matrix to report on (run it first)")
    with _matrix_lock(target, partial), sigterm_raises():
        check_out(out, resume, partial)  # again: a whole run may have started it while this one waited
        _run_locked(run, target, data, partial, report_only, echo)
    return run


def _run_locked(run: MatrixRun, target: Path, data: dict[str, Any], partial: bool, report_only: bool,
                echo: Callable[[str], None]) -> None:
    """The part of run_matrix that holds the matrix lock: plan file, superseded cells, the cells (run, or with
    `report_only` only read), the end step."""
    config, cells, selected = run.config, run.cells, run.selected
    if not partial:
        clean_stale(target, recursive=True)  # what writers killed earlier left (temp files, staging folders)
        for leftover in target.glob(RUNS_FILE.format(model="*", pid="*")):  # of a killed process (none runs now)
            leftover.unlink(missing_ok=True)
    try:
        write_json(target / PLAN_FILE, plan_document(config, cells))
    except OSError as exc:  # a read-only or full --out: name the folder, not the temp file
        raise LevanteError(f"{display_path(run.out)}: {problem_text(exc)} (cannot write {PLAN_FILE})") from None
    if not partial:
        for rel in set_aside_superseded(target, cells):
            echo(f"superseded (config changed): {rel} -> superseded/")
        for rel in restore_superseded(target, cells):
            echo(f"restored from superseded/ (same config again): {rel}")
    bar = tqdm(total=len(selected), desc="matrix cells", unit="cell", disable=None)
    done = 0

    def show(cell: Cell, kept: bool) -> None:
        nonlocal done
        done += 1
        bar.update(1)
        where = run.elsewhere.get(cell.cell_id)
        status = (f"another matrix process is running it ({where}); left to it, not run here" if where
                  else describe(run.states[cell.cell_id], kept))
        tqdm.write(f"[{done}/{len(selected)}] {cell.cell_id}: {status}")

    try:
        for model_cells in by_model(selected):
            to_run, notes = [], {}
            for cell in model_cells:
                cell_dir = target / cell.rel_dir
                reason = unfinished_reason(cell_dir, cell.sha256, cell.lmms_task)
                if reason is None:
                    run.states[cell.cell_id] = read_state(cell_dir) or {}
                    run.kept.add(cell.cell_id)
                    show(cell, True)
                elif report_only:  # its files stay: the report reads done cells
                    run.states[cell.cell_id] = unfinished_state(cell_dir, cell.sha256, reason)
                    show(cell, False)
                else:
                    to_run.append(cell)
                    if reason != "not run yet":
                        notes[cell.cell_id] = f"{cell.rel_dir}: {reason}; running it again"
            if to_run:
                bar.set_postfix_str(f"{to_run[0].model.name}: running {len(to_run)} cell(s) in one process")
                states, elsewhere = run_model_cells(config, to_run, target, data, notes)
                run.states.update(states)
                run.elsewhere.update(elsewhere)
                for cell in to_run:
                    show(cell, False)
    finally:
        bar.close()
    if not partial:
        from levante_tasks.matrix.report import write_report

        run.document = write_report(run, echo)
