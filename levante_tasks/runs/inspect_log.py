"""Read one inspect_ai `.eval` log (inspect_ai.log.read_eval_log): the log of a finished LEVANTE task, or the header
of another task's log; an unreadable log or an unfinished LEVANTE run is one line naming the file (FileProblem).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from levante_tasks.runs.lmms import FileProblem


def read_log(path: Path, label: str, header_only: bool = False) -> Any:
    """The parsed log (with its samples unless `header_only`); FileProblem (one line naming the file) otherwise."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise FileProblem(f"{label}: inspect_ai is not installed (pip install 'levante-tasks[inspect]')") from None
    try:
        log = read_eval_log(str(path), header_only=header_only)
    except Exception as exc:  # noqa: BLE001 (zip, JSON and schema errors alike mean: not a usable log)
        first = (str(exc).strip().splitlines() or [""])[0][:120]
        raise FileProblem(f"{label}: not a readable inspect_ai .eval log ({type(exc).__name__}"
                          f"{': ' + first if first else ''})") from None
    return log


def levante_log(path: Path, label: str) -> tuple[Any, dict[str, Any] | None]:
    """(log, its `metadata.levante`): the finished log of a LEVANTE task; for another task's log (any status), its
    header and None. FileProblem for an unreadable log or an unfinished LEVANTE run."""
    header = read_log(path, label, header_only=True)
    spec = levante_spec(header)
    if spec is None:
        return header, None
    if header.status != "success":
        raise FileProblem(f"{label}: the inspect_ai run did not finish (status {header.status})")
    return read_log(path, label), spec


def levante_spec(log: Any) -> dict[str, Any] | None:
    """The task's `metadata.levante` ({task, lmms_name, seed, variant, provenance}); None when it has none."""
    spec = (log.eval.metadata or {}).get("levante")
    if not isinstance(spec, Mapping) or not {"task", "lmms_name", "seed", "variant"} <= set(spec):
        return None
    return dict(spec)
