"""Task version: a sha256 over the source a task is built from, recorded by the task layer, checked by `verify`.

The files: the task's YAML, the YAMLs it includes (recursively), and the Python modules its `!function` names
point at directly: local `utils.fn` modules beside the YAML and absolute `levante_tasks.<module>.fn` modules of
this package (e.g. `levante_tasks/harness/lmms_task.py`). Each file enters as its path relative to the package
root and the sha256 of its bytes, in path order, so the hash is the same wherever the package is installed.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
TASKS_DIR = PACKAGE_ROOT / "tasks"
_TASK_LINE = re.compile(r"^task:\s*([A-Za-z0-9_.\-]+)\s*$", re.M)
_INCLUDE = re.compile(r"^include:\s*(\S+)\s*$", re.M)
_LOCAL_FUNCTION = re.compile(r"!function\s+([A-Za-z_]\w*)\.\w+\b(?!\.)")
_PACKAGE_FUNCTION = re.compile(r"!function\s+(levante_tasks(?:\.\w+)+)\.\w+")


@functools.lru_cache(maxsize=4)
def task_yamls(tasks_dir: Path) -> dict[str, Path]:
    """Task name -> YAML file under `tasks_dir` (files whose `task:` line names one task)."""
    found: dict[str, Path] = {}
    for path in sorted(tasks_dir.rglob("*.yaml")):
        match = _TASK_LINE.search(path.read_text(encoding="utf-8"))
        if match:
            found.setdefault(match.group(1), path)
    return found


def source_files(yaml: Path, package_root: Path = PACKAGE_ROOT) -> list[Path]:
    """A task YAML, the YAMLs it includes (recursively) and the modules its `!function` names point at."""
    files: list[Path] = []
    pending = [yaml]
    while pending:
        path = pending.pop()
        if path in files or not path.is_file():
            continue
        files.append(path)
        if path.suffix == ".py":
            continue
        text = path.read_text(encoding="utf-8")
        pending += [path.parent / m for m in _INCLUDE.findall(text)]
        pending += [path.parent / f"{m}.py" for m in _LOCAL_FUNCTION.findall(text)]
        for module in _PACKAGE_FUNCTION.findall(text):
            pending.append(package_root.parent.joinpath(*module.split(".")).with_suffix(".py"))
    return files


def task_source_sha256(task: str, tasks_dir: Path = TASKS_DIR, package_root: Path = PACKAGE_ROOT) -> str | None:
    """The task version of `task` (see the module docstring); None when no YAML under `tasks_dir` defines it."""
    yaml = task_yamls(tasks_dir.resolve()).get(task)
    if yaml is None:
        return None
    roots = [package_root.resolve(), tasks_dir.resolve()]

    def relative(path: Path) -> str:
        resolved = path.resolve()
        for root in roots:
            if resolved.is_relative_to(root):
                return resolved.relative_to(root).as_posix()
        return path.name

    digest = hashlib.sha256()
    for path in sorted(source_files(yaml, package_root), key=relative):
        digest.update(relative(path).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).hexdigest().encode() + b"\n")
    return digest.hexdigest()
