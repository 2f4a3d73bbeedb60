"""Run the cells of a matrix: one lmms-eval process per cell attempt, state files, out-of-memory fallback.

lmms-eval exits 0 even when an evaluation fails, so an attempt succeeded only when it left exactly one results
file that parses. An attempt that left none and whose output mentions running out of memory is retried with the
next configured batch size (only those); any other failure is recorded in the cell's state and log, and the
matrix goes on with the next cell.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
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
from levante_tasks.matrix.config import MatrixConfig
from levante_tasks.matrix.plan import Cell, cell_argv, cell_env, data_facts, plan, plan_sha256, shell_command
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
from levante_tasks.runs.lmms import FileProblem, read_results

PLAN_FILE = "matrix-plan.json"  # marks a folder as a matrix (and lists its cells)
OOM = re.compile(r"OutOfMemoryError|CUDA out of memory|\bout of memory\b", re.IGNORECASE)
LOCK_NAME = ".matrix.lock"  # OUT's lock: a whole run holds it exclusively, a --shard/--cell run shared
LOCK_WAIT_ENV = "LEVANTE_MATRIX_LOCK_WAIT"  # seconds a run waits for OUT's lock (default folder_lock.WAIT_SECONDS)
STOP_SECONDS = 10.0  # how long an interrupted lmms-eval gets to exit after SIGTERM before SIGKILL


class Interrupted(KeyboardInterrupt):
    """SIGTERM (Slurm preemption, `kill`) while the matrix runs: stop like Ctrl-C, exit 128 + signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


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


def _parent_death_signal() -> Callable[[], None] | None:
    """On Linux, a preexec function that asks the kernel to SIGTERM lmms-eval when the runner dies (kill -9, OOM
    killer), so no orphan keeps the GPU and writes into a cell nobody owns; resolved here, not in the child."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong]

    def ask() -> None:
        prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG

    return ask


_PDEATHSIG = _parent_death_signal()


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
    document: dict[str, Any] | None = None  # matrix.json, when the end step ran

    @property
    def failed(self) -> list[Cell]:
        """Selected cells that did not finish."""
        return [c for c in self.selected if (self.states.get(c.cell_id) or {}).get("status") != "done"]


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


def run_cell(config: MatrixConfig, cell: Cell, cell_dir: Path, data: dict[str, Any],
             note: str | None = None) -> dict[str, Any]:
    """Run one cell (stale output removed first), falling back through the configured batch sizes on
    out-of-memory only; returns the final state (also written to the cell's state.json). The cell folder is
    locked meanwhile; an interrupt (Ctrl-C, SIGTERM) or an error stops lmms-eval, and an interrupt is recorded.
    `note` (why it runs again) is printed once the cell is known to be ours: not when another process runs it."""
    with folder_lock.hold_folder(cell_dir, f"{cell.rel_dir}: another matrix process is running this cell; wait for "
                                        "it, then rerun with --resume"):
        pid = live_runner(cell_dir)
        if pid is not None:
            raise LevanteError(f"{cell.rel_dir}: still being run by process {pid}; wait for it or stop it, then "
                               "rerun")
        if note:
            tqdm.write(note)
        try:
            clean_stale(cell_dir)
            return _attempts(config, cell, cell_dir, data)
        except OSError as exc:  # a full disk, a read-only folder: name the cell, not a temp file
            raise LevanteError(f"{cell.rel_dir}: {problem_text(exc)}") from None


def _attempts(config: MatrixConfig, cell: Cell, cell_dir: Path, data: dict[str, Any]) -> dict[str, Any]:
    """The attempts of one cell (see run_cell), with the cell folder locked."""
    base = {"cell_id": cell.cell_id, "sha256": cell.sha256, "spec": cell.spec, "started": _now()}
    attempts: list[dict[str, Any]] = []
    logs: list[str] = []
    env = cell_env(config, data)
    started = time.monotonic()
    results: str | None = None
    problem: str | None = None
    output = ""
    for batch_size in config.batch_sizes:
        _clear(cell_dir / LMMS_DIR)  # a killed or failed attempt's files never count
        argv = cell_argv(config, cell, batch_size, cell_dir / LMMS_DIR)
        began = time.monotonic()
        process = subprocess.Popen(argv, cwd=config.base, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, errors="replace", preexec_fn=_PDEATHSIG)
        try:
            write_state(cell_dir, {**base, "status": "running", "batch_size": batch_size, "attempts": attempts,
                                   "pid": process.pid, "pid_start": process_start(process.pid)})
            output, _ = process.communicate()
        except (KeyboardInterrupt, Interrupted) as exc:
            _stop(process)
            name = exc.args[0] if isinstance(exc, Interrupted) else "SIGINT"
            attempts.append({"batch_size": batch_size, "outcome": "interrupted", "exit_code": process.returncode,
                             "seconds": round(time.monotonic() - began, 1)})
            with contextlib.suppress(OSError):  # a full disk must not hide the interrupt; resume reruns the cell
                _clear(cell_dir / LMMS_DIR)
                write_text(cell_dir / LOG_FILE, "\n".join([*logs, f"=== batch size {batch_size}: interrupted by "
                                                                    f"{name} ==="]))
                write_state(cell_dir, {**base, "status": "failed", "batch_size": batch_size, "attempts": attempts,
                                       "results": None, "finished": _now(), "error": {
                                           "reason": f"interrupted by {name}", "tail": []}})
            raise
        except BaseException:
            _stop(process)
            raise
        results, problem = _parses(cell_dir, cell.lmms_task)
        outcome = "done" if results else "oom" if OOM.search(output) and not problem else "failed"
        attempts.append({"batch_size": batch_size, "outcome": outcome, "exit_code": process.returncode,
                         "seconds": round(time.monotonic() - began, 1)})
        logs.append(f"=== batch size {batch_size}: exit {process.returncode}, {outcome} ===\n{log_text(output)}")
        if outcome != "oom":
            break
    write_text(cell_dir / LOG_FILE, "\n".join(logs))
    state = {**base, "status": "done" if results else "failed", "batch_size": attempts[-1]["batch_size"],
             "attempts": attempts, "results": results, "finished": _now(),
             "seconds": round(time.monotonic() - started, 1), "error": None}
    if not results:
        _clear(cell_dir / LMMS_DIR)  # no partial samples for the summary to meet
        sizes = ", ".join(str(a["batch_size"]) for a in attempts)
        reason = (f"out of memory at every configured batch size ({sizes})" if attempts[-1]["outcome"] == "oom"
                  else f"lmms-eval exit {attempts[-1]['exit_code']}, {problem}" if problem
                  else f"lmms-eval exit {attempts[-1]['exit_code']}, no results file that parses")
        # with a results file that is not the cell's, only an exception line explains more than `problem` does
        cause = error_line(output, None if problem else attempts[-1]["exit_code"])
        if cause and attempts[-1]["outcome"] != "oom":
            reason = f"{reason}: {cause}"
        state["error"] = {"reason": reason, "tail": tail(output)}
    write_state(cell_dir, state)
    return state


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


def select_cells(cells: list[Cell], shard: tuple[int, int] | None, cell_index: int | None) -> list[Cell]:
    """The cells this invocation runs: all, one shard (index % n == i), or one cell by index."""
    if cell_index is not None:
        if not 0 <= cell_index < len(cells):
            raise LevanteError(f"--cell {cell_index}: the matrix has cells 0..{len(cells) - 1}")
        return [cells[cell_index]]
    if shard is not None:
        i, n = shard
        return [c for c in cells if c.index % n == i]
    return cells


def run_matrix(config: MatrixConfig, out: Path, *, resume: bool = False, shard: tuple[int, int] | None = None,
               cell_index: int | None = None, dry_run: bool = False, expect_plan: str | None = None,
               report_only: bool = False, echo: Callable[[str], None] = print) -> MatrixRun:
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
    selected = select_cells(cells, shard, cell_index)
    partial = shard is not None or cell_index is not None
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
    try:
        for k, cell in enumerate(selected, start=1):
            cell_dir = target / cell.rel_dir
            reason = unfinished_reason(cell_dir, cell.sha256, cell.lmms_task)
            kept = reason is None
            note = f"{cell.rel_dir}: {reason}; running it again" if reason not in (None, "not run yet") else None
            bar.set_postfix_str(f"{cell.cell_id}: {'kept' if kept else 'reported' if report_only else 'running'}")
            if kept:
                state = read_state(cell_dir)
            elif report_only:
                state = unfinished_state(cell_dir, cell.sha256, reason)  # its files stay: the report reads done cells
            else:
                state = run_cell(config, cell, cell_dir, data, note)
            run.states[cell.cell_id] = state or {}
            if kept:
                run.kept.add(cell.cell_id)
            bar.update(1)
            tqdm.write(f"[{k}/{len(selected)}] {cell.cell_id}: {describe(run.states[cell.cell_id], kept)}")
    finally:
        bar.close()
    if not partial:
        from levante_tasks.matrix.report import write_report

        run.document = write_report(run, echo)
