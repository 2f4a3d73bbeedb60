"""The lmms-eval task index a fork server keeps for its runs: a folder indexed once, handed to a run's TaskManager
only where that run would have read the same index and logged nothing the server's reading did not show it.

A TaskManager indexes every task folder it is given (lmms-eval's own, each `--include_path`) by loading each YAML
file under it and the files those include. `keep_task_index` reads a folder once, in the server (`lmms_fork`), and
records what the reading depended on; a TaskManager in a fork gets a copy of the kept index (what one run's manager
does to its copy no other sees) only while (1) every file the reading loaded and every file under the folder (as
lmms-eval walks it) is as it was: size, inode, modification and change times, so a write of any size, a rename, a
new or a removed file counts; (2) no include the YAMLs name by a relative path names a file from the run's working
folder (lmms-eval looks for an include there before it looks beside the YAML); (3) the run's log handlers would
print none of the messages the reading logged (lmms-eval logs each file it skips at DEBUG). Otherwise the manager
reads the folder itself, as in a new interpreter. A folder whose YAMLs name an include in a form read here
(anything but one plain or quoted path on the `include:` line) is not kept.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

IGNORED_DIRS = ("__pycache__", ".ipynb_checkpoints")  # the folders lmms-eval's indexing does not enter
_INCLUDE_LINE = re.compile(r"^include:(.*)$", re.M)
_PLAIN_PATH = re.compile(r"""\s*(?:"([^"\\]+)"|'([^']+)'|([^\s"'\[\]{}#&*!|>%@`,][^\s#,]*))\s*(?:#.*)?""")
FileState = tuple[int, int, int, int] | None  # size, inode, modification and change times (ns); None: no such file


@dataclass(frozen=True)
class KeptIndex:
    """One folder's index and what it depends on."""

    index: dict[str, dict[str, Any]]
    state: tuple[tuple[str, str, FileState], ...]  # `folder_state` of the folder and the included files outside it
    outside: tuple[str, ...]  # the loaded files outside the folder
    relative_includes: frozenset[str]  # the include paths the YAMLs name relative to a working folder
    loudest: int  # the highest log level number the reading logged (0: it logged nothing)


def file_state(path: str) -> FileState:
    """A file's size, inode and modification and change times; None when it cannot be stat'ed (gone, dangling)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_size, found.st_ino, found.st_mtime_ns, found.st_ctime_ns


def folder_state(folder: str, outside: Iterable[str] = ()) -> tuple[tuple[str, str, FileState], ...]:
    """Every file under `folder` as lmms-eval's indexing walks it, then each of the `outside` files, with its
    `file_state`."""
    state = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_DIRS)
        state += [(root, name, file_state(os.path.join(root, name))) for name in sorted(files)]
    return (*state, *((path, "", file_state(path)) for path in outside))


def include_paths(text: str) -> list[str] | None:
    """The paths a YAML file's `include:` lines name, or None for an include written in another form (a list, a
    flow sequence, an anchor, ...) than one plain or quoted path."""
    found = []
    for rest in _INCLUDE_LINE.findall(text):
        match = _PLAIN_PATH.fullmatch(rest)
        if match is None:
            return None
        found.append(next(group for group in match.groups() if group))
    return found


def read_recorded(read: Callable[[Any, str], dict[str, dict[str, Any]]], manager: Any,
                  folder: str) -> KeptIndex | None:
    """`read(manager, folder)` (lmms-eval's indexing) with the files it loaded and the log levels it logged
    recorded; None when a loaded YAML names an include in a form `include_paths` does not read."""
    from lmms_eval import utils
    from loguru import logger

    loaded: list[str] = []
    levels: list[int] = []
    load = utils.load_yaml_config

    def recording(yaml_path: Any = None, *args: Any, **kwargs: Any) -> Any:
        if yaml_path is not None:
            loaded.append(os.fspath(yaml_path))
        return load(yaml_path, *args, **kwargs)

    sink = logger.add(lambda message: levels.append(message.record["level"].no), level=0)
    utils.load_yaml_config = recording  # include loads go through the module's name too
    try:
        index = read(manager, folder)
    finally:
        utils.load_yaml_config = load
        logger.remove(sink)
    includes: set[str] = set()
    for path in dict.fromkeys(loaded):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                named = include_paths(handle.read())
        except OSError:
            continue  # a file the reading could not open either (it skipped it)
        if named is None:
            return None
        includes.update(named)
    root = os.path.join(os.path.abspath(folder), "")
    outside = tuple(sorted({p for p in loaded if not os.path.abspath(p).startswith(root)}))
    return KeptIndex(index, folder_state(folder, outside), outside,
                     frozenset(p for p in includes if not os.path.isabs(p)), max(levels, default=0))


def _quietest_handler() -> int:
    """The lowest level number any of loguru's handlers prints (above every level when there is none)."""
    from loguru import logger

    return logger._core.min_level  # noqa: SLF001 - loguru keeps no public accessor for it


def usable(kept: KeptIndex, folder: str) -> bool:
    """Whether a TaskManager in this process would read `folder` to `kept.index`, logging nothing visible."""
    return (kept.loudest < _quietest_handler()
            and not any(os.path.isfile(path) for path in kept.relative_includes)
            and folder_state(folder, kept.outside) == kept.state)


def respelled(index: dict[str, dict[str, Any]], folder: str, task_dir: str) -> dict[str, dict[str, Any]]:
    """A copy of `index` (read from `folder`) as reading the same folder spelled `task_dir` (a relative path, another
    spelling) gives it: each YAML path joined to `task_dir` as lmms-eval's walk joins it."""
    copied = copy.deepcopy(index)
    if task_dir != folder:
        for entry in copied.values():
            if isinstance(entry.get("yaml_path"), str):
                entry["yaml_path"] = os.path.join(task_dir, os.path.relpath(entry["yaml_path"], folder))
    return copied


def keep_task_index(folders: Sequence[str]) -> None:
    """Index each of `folders` once, in this process, and have every TaskManager of this process and its forks that
    asks for one of them (in any spelling: the matrix names levante-tasks' relative to its base) take a copy where
    `usable`, else read the folder itself."""
    from lmms_eval import tasks

    read = tasks.TaskManager._get_task_and_group
    manager = tasks.TaskManager(include_defaults=False)
    kept = {os.path.realpath(folder): (folder, found) for folder in folders
            if (found := read_recorded(read, manager, folder)) is not None}

    def indexed(self: tasks.TaskManager, task_dir: str) -> dict[str, dict[str, Any]]:
        folder, found = kept.get(os.path.realpath(task_dir), (task_dir, None))
        if found is not None and usable(found, folder):
            return respelled(found.index, folder, task_dir)
        return read(self, task_dir)

    tasks.TaskManager._get_task_and_group = indexed  # type: ignore[method-assign] - this server's runs only
