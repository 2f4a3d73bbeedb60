"""Find runs under run folders (for summarize, verify and rescore): each lmms-eval `<date>_results.json` with the
`<date>_samples_<task>.jsonl` beside it, and each inspect_ai log `<name>.eval` (one task of one run; read by
`runs.inspect_log`).

lmms-eval exits 0 when an evaluation fails, so a folder is judged by its files: samples without a results file,
or a run folder with no results file at all, is a failed run (reported, never skipped). Labels shown to users
and written to outputs are `<run folder name>/<path inside it>`: never an absolute path.
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field
from pathlib import Path

from levante_tasks.errors import problem_text
from levante_tasks.runs.lmms import RESULTS_SUFFIX, samples_name

EVAL_SUFFIX = ".eval"
LMMS_EVAL, INSPECT_AI = "lmms-eval", "inspect_ai"  # RunFiles.kind: the harness that wrote the run


@dataclass
class RunFiles:
    """One run: its results file (None when it is missing) and its samples files by task (lmms-eval), or one
    inspect_ai `.eval` log as `results` (kind INSPECT_AI, no samples files)."""

    folder: str  # `<run folder name>/<relative path>`
    date: str  # the files' date prefix
    results: Path | None
    samples: dict[str, Path] = field(default_factory=dict)
    kind: str = LMMS_EVAL

    @property
    def label(self) -> str:
        """`<folder>/<date>`: names the run in messages and outputs."""
        return f"{self.folder}/{self.date}"

    def file_label(self, path: Path) -> str:
        """The label of one of this run's files."""
        return f"{self.folder}/{path.name}"


def folder_label(run_dir: Path) -> str:
    """A run folder's display name: its own name, never its location (nor a user or home folder name)."""
    name = Path(os.path.abspath(run_dir)).name or "run"
    private = {Path.home().name}
    try:
        private.add(getpass.getuser())
    except (KeyError, OSError):
        pass
    return "run" if name in private else name


def run_labels(run_dirs: list[Path]) -> list[str]:
    """The label of each run folder argument: its `folder_label`, made unique with `-2`, `-3`, ... in order."""
    labels: list[str] = []
    for run_dir in run_dirs:
        label, k = folder_label(run_dir), 2
        while label in labels:
            label, k = f"{folder_label(run_dir)}-{k}", k + 1
        labels.append(label)
    return labels


def discover(run_dir: Path, label: str) -> tuple[list[RunFiles], list[str]]:
    """The runs under `run_dir` (sorted by path) and one problem line per unreadable folder or failed run."""
    problems: list[str] = []
    if not run_dir.is_dir():
        return [], [f"{label}: {'not a folder' if run_dir.exists() else 'no such folder'}"]

    def unreadable(exc: OSError) -> None:
        where = Path(exc.filename).relative_to(run_dir).as_posix() if exc.filename else "."
        problem = problem_text(exc)
        problems.append(f"{label}/{where}: {problem} (runs in it are not read)")

    found: dict[tuple[str, str], RunFiles] = {}
    for folder, dirs, files in os.walk(run_dir, onerror=unreadable):
        dirs.sort()
        rel = Path(folder).relative_to(run_dir).as_posix()
        prefix = label if rel == "." else f"{label}/{rel}"
        for name in sorted(files):
            path = Path(folder) / name
            if name.endswith(EVAL_SUFFIX) and len(name) > len(EVAL_SUFFIX):
                found[(prefix, name)] = RunFiles(prefix, name[: -len(EVAL_SUFFIX)], path, kind=INSPECT_AI)
                continue
            if name.endswith(RESULTS_SUFFIX):
                date, task = name[: -len(RESULTS_SUFFIX)], None
            elif (parts := samples_name(name)) and parts[0]:
                date, task = parts
            else:
                continue
            run = found.setdefault((prefix, date), RunFiles(prefix, date, None))
            if task is None:
                run.results = path
            else:
                run.samples[task] = path
    runs = [found[key] for key in sorted(found)]
    for run in runs:
        if run.results is None:
            problems.append(f"{run.label}_samples_*.jsonl: samples without a results file: the lmms-eval run "
                            "failed or did not finish")
    if not runs and not problems:
        problems.append(f"{label}: no lmms-eval results file (*{RESULTS_SUFFIX}) and no inspect_ai log "
                        f"(*{EVAL_SUFFIX}): the run failed or did not finish")
    return [run for run in runs if run.results is not None], problems
