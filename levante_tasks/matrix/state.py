"""A cell's state file (`state.json`, written atomically) and the one rule for "finished" (unfinished_reason): the
state says done, its hash is the cell's, and its single results file parses and holds the cell's task."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from levante_tasks.atomic import pid_alive, write_json
from levante_tasks.runs.lmms import FileProblem, read_results

STATE_FILE = "state.json"
LMMS_DIR = "lmms"  # lmms-eval's --output_path inside a cell folder
LOG_FILE = "cell.log"
# An absolute path (not part of a URL): scrubbed from logs and error lines down to its last two parts.
_ABSOLUTE = re.compile(r"(?<![\w.:/~-])/[^\s'\"():,;<>\[\]]+")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # terminal colours in lmms-eval's log lines
# A tqdm progress-bar update (`Postprocessing:  50%|#####     | 2/4 [00:00<00:00, 99.1it/s]`).
_BAR = re.compile(r"^.*\d+%\|.*\|\s*[\d.]+[kMG]?/[\d.?]+[kMG]?\s*\[.*\]\s*$")
# The line a Python traceback ends with (`ValueError: Model 'x' not found ...`).
_EXCEPTION = re.compile(r"^\s*((?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Interrupt)\b: .+)$", re.MULTILINE)


def read_state(cell_dir: Path) -> dict[str, Any] | None:
    """The cell's state, or None when it has none or it cannot be read (then the cell simply runs again)."""
    try:
        state = json.loads((cell_dir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def write_state(cell_dir: Path, state: dict[str, Any]) -> None:
    """Replace the cell's state file atomically (a kill leaves the old state or the new one)."""
    write_json(cell_dir / STATE_FILE, state)


def results_files(cell_dir: Path) -> list[Path]:
    """Every lmms-eval results file of the cell, sorted."""
    return sorted((cell_dir / LMMS_DIR).rglob("*_results.json"))


def task_problem(results: dict[str, Any], lmms_task: str) -> str | None:
    """Why a parsed results file is not the cell's (it holds no result for the task or group the cell ran), else
    None: a wrapper or a task alias must not make another task's numbers count as this cell's."""
    found = {*results.get("results", {}), *(results.get("groups") or {}), *(results.get("group_subtasks") or {})}
    if lmms_task in found:
        return None
    shown = ", ".join(sorted(found)[:5]) or "no task"
    return f"its results file holds {shown}, not {lmms_task}"


def unfinished_reason(cell_dir: Path, sha256: str, lmms_task: str) -> str | None:
    """Why the cell must run (again), or None when it is finished: its state says done with this hash, exactly
    one results file, it parses and holds the cell's lmms-eval task. A damaged state is never trusted."""
    path = cell_dir / STATE_FILE
    if not path.exists():
        return "not run yet"
    state = read_state(cell_dir)
    if state is None:
        return f"{STATE_FILE} is damaged or unreadable"
    if state.get("sha256") != sha256:
        return f"{STATE_FILE} names another hash (damaged or edited)"
    if state.get("status") != "done":
        return "interrupted earlier" if state.get("status") == "running" else "failed earlier"
    found = results_files(cell_dir)
    if len(found) != 1 or found[0].relative_to(cell_dir).as_posix() != state.get("results"):
        return "its results file is missing, moved or not alone"
    try:
        results = read_results(found[0], state["results"])
    except FileProblem:
        return "its results file is damaged"
    return task_problem(results, lmms_task)


def unfinished_state(cell_dir: Path, sha256: str, reason: str) -> dict[str, Any]:
    """What the report records for a cell that did not finish (unfinished_reason gave `reason`) and is not run:
    its failed state as it is (its reason kept, e.g. `interrupted by SIGTERM`), else status `not finished` with
    `reason` (never run, a `running` state whose process is gone, a damaged state or results file)."""
    state = read_state(cell_dir) or {}
    if state.get("status") == "failed" and state.get("sha256") == sha256 and state.get("error"):
        return state
    return {"status": "not finished", "error": {"reason": reason, "tail": []}}


def process_start(pid: int) -> str | None:
    """A running process's start time (clock ticks since boot, from /proc), None when it is gone or a zombie
    (an orphan nobody reaped after its parent was killed). Where /proc is missing: "" if the pid exists."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None
    except OSError:
        return "" if pid_alive(pid) else None
    return None if fields[0] in ("Z", "X") else fields[19]


def live_runner(cell_dir: Path) -> int | None:
    """The pid of the lmms-eval process a state file says is running this cell, when that same process (same
    start time, so not a reused pid) is still alive."""
    state = read_state(cell_dir) or {}
    pid = state.get("pid")
    if state.get("status") != "running" or not isinstance(pid, int):
        return None
    start = process_start(pid)
    return pid if start is not None and start == state.get("pid_start", start) else None


def scrub(text: str) -> str:
    """Text without absolute paths (nor the user and host names they carry): each becomes `.../<last two parts>`."""
    def short(match: re.Match[str]) -> str:
        parts = [p for p in match.group(0).split("/") if p]
        return ".../" + "/".join(parts[-2:]) if parts else "/"

    return _ABSOLUTE.sub(short, _ANSI.sub("", text))


def log_text(text: str) -> str:
    """A process's output for cell.log: scrubbed (see scrub), without progress-bar updates (a bar some code
    shows despite TQDM_DISABLE), a carriage-return-updated line kept as its last state."""
    kept = []
    for line in _ANSI.sub("", text).splitlines():
        parts = [part for part in line.split("\r") if not _BAR.match(part)]
        if parts and (parts[-1].strip() or "\r" not in line):
            kept.append(parts[-1].rstrip())
    return scrub("\n".join(kept))


def tail(text: str, lines: int = 20) -> list[str]:
    """The last non-empty lines of a process's output, scrubbed (progress-bar carriage returns folded)."""
    kept = [line.rsplit("\r", 1)[-1].rstrip() for line in text.splitlines()]
    return [scrub(line) for line in kept if line.strip()][-lines:]


def error_line(text: str, exit_code: int | None = None, width: int = 160) -> str | None:
    """The last exception line of a process's output, scrubbed and cut to `width`: a failure's one-line cause.
    A process that failed (exit code not 0) without any exception line stopped on a SystemExit, whose message is
    its last line (our one-line refusals: RunStopped, patch 0013): then that line."""
    found = _EXCEPTION.findall(scrub(text)) or (tail(text, 1) if exit_code not in (0, None) else [])
    if not found:
        return None
    line = found[-1].strip()
    return line if len(line) <= width else line[: width - 3] + "..."
