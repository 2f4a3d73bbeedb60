"""Task source hash: a sha256 over the task's own code, recorded by the task layer, checked by `verify`.

It is audit evidence of the exact code a run used, not the task's version: the version is the human-bumped
`TaskInfo.version` of the catalogue (`schema.tasks`), which says when results stop being comparable.

Scope: the task's own code only, i.e. the harness-neutral core (`levante_tasks/core/`, `levante_tasks/schema/`, the
task registry `levante_tasks/tasks/__init__.py` and each task folder's catalogue row, `tasks/<folder>/__init__.py`;
not the folders' item rules, synthetic builders or fixtures) and the task's face. lmms-eval face
(`task_source_sha256`): the task's YAML (`tasks/<folder>/`), the YAMLs it includes (recursively: its own
templates, the shared ones in `tasks/`), the Python modules its `!function` names point at (local `utils.fn` modules
beside the YAML and absolute `levante_tasks.<module>.fn` modules, e.g. `levante_tasks/lmms/task.py`), and the
modules of `lmms/` (and of the folder of each such module, e.g. `l0/` for the L0 trace tasks) they import,
transitively, lazy imports included. inspect_ai face (`inspect.task.source_files`):
`_registry.py`, `inspect/` and what they import of `core/` and `schema/`. Never in it: `lmms/patcher/` (the
lmms-eval patcher has its own `patch_set_sha256`), the shared error machinery and texts (`errors.py`), `atomic.py`,
`textfile.py`, the package `__init__.py` and the other packages (data, summary, matrix, ...): an edit there leaves
the hash as it was. Files are hashed whole, so a message written inside a core or face module (e.g. "has no prepared
items" in `core/docs.py`) is part of the hash. Each file enters as its path relative to the package root and the
sha256 of its bytes, in path order, so the hash is the same wherever the package is installed.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import hashlib
import re
from collections.abc import Callable
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
TASKS_DIR = PACKAGE_ROOT / "tasks"  # the task folders and lmms-eval's task root (every YAML)
_TASK_LINE = re.compile(r"^task:\s*([A-Za-z0-9_.\-]+)\s*$", re.M)
_INCLUDE = re.compile(r"^include:\s*(\S+)\s*$", re.M)
_LOCAL_FUNCTION = re.compile(r"!function\s+([A-Za-z_]\w*)\.\w+\b(?!\.)")
_PACKAGE_FUNCTION = re.compile(r"!function\s+(levante_tasks(?:\.\w+)+)\.\w+")
REGISTRY = "tasks/__init__.py"  # the task registry: it loads each folder's catalogue row by name
CATALOGUE_ROWS = "tasks/*/__init__.py"  # each task folder's row (TaskInfo), part of the catalogue
CORE_SCOPE = ("core/", "schema/", REGISTRY, CATALOGUE_ROWS)  # the harness-neutral code every task is made of
LMMS_SCOPE = (*CORE_SCOPE, "lmms/")  # lmms-eval face: task class, model bridge, metrics, YAMLs
INSPECT_SCOPE = (*CORE_SCOPE, "_registry.py", "inspect/")  # inspect_ai face: the @task entry point and inspect/
NEVER = ("lmms/patcher/",)  # not the task's code even where its folder is in scope


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
    """A task YAML, the YAMLs it includes (recursively), the modules its `!function` names point at and the
    modules of the task's own code those import (transitively; LMMS_SCOPE plus the folders of the named modules)."""
    return _source_files(yaml, _Package(package_root))


def _source_files(yaml: Path, package: _Package) -> list[Path]:
    """`source_files` with `package`'s resolved paths."""
    files: list[Path] = []
    pending = [yaml]
    while pending:
        path = pending.pop()
        if path in files or not package.is_file(path):
            continue
        files.append(path)
        if path.suffix == ".py":
            continue
        text = path.read_text(encoding="utf-8")
        pending += [path.parent / m for m in _INCLUDE.findall(text)]
        pending += [path.parent / f"{m}.py" for m in _LOCAL_FUNCTION.findall(text)]
        for module in _PACKAGE_FUNCTION.findall(text):
            pending.append(package.root.parent.joinpath(*module.split(".")).with_suffix(".py"))
    modules = [path for path in files if path.suffix == ".py"]
    named = [package.relative(m) for m in modules]
    folders = {f"{rel.rsplit('/', 1)[0]}/" for rel in named if rel and "/" in rel}
    scope = (*LMMS_SCOPE, *sorted(folders))
    return [*(path for path in files if path.suffix != ".py"), *_package_closure(modules, package, scope)]


class _Package:
    """The package at `root` as one computation sees it: each path resolved (links followed) and each file's
    existence checked once, not once per module that imports it (a task's closure asks ~40 modules about ~60 files)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._real: dict[Path, Path] = {}
        self._files: dict[Path, bool] = {}
        self._modules: dict[str, list[Path]] = {}  # by dotted name: the package files it names

    @functools.cached_property
    def real_root(self) -> Path:
        """The root resolved, on first use (as each function resolved it where it needed it)."""
        return self.root.resolve()

    def real(self, path: Path) -> Path:
        """`path.resolve()`."""
        if path not in self._real:
            self._real[path] = path.resolve()
        return self._real[path]

    def is_file(self, path: Path) -> bool:
        """`path.is_file()`."""
        if path not in self._files:
            self._files[path] = path.is_file()
        return self._files[path]

    def relative(self, path: Path) -> str | None:
        """`path` relative to the package root (`core/docs.py`), or None for a file outside the package."""
        try:
            return self.real(path).relative_to(self.real_root).as_posix()
        except ValueError:
            return None

    def in_scope(self, path: Path, scope: tuple[str, ...]) -> bool:
        """Whether a package file is task code under `scope` (see `in_scope`)."""
        rel = self.relative(path)
        if rel is None or rel.startswith(NEVER):
            return False
        return any(rel.startswith(prefix) if prefix.endswith("/") else fnmatch.fnmatchcase(rel, prefix)
                   and rel.count("/") == prefix.count("/") for prefix in scope)

    def imported_files(self, path: Path) -> list[Path]:
        """The files of this package that the module at `path` imports (see `imported_package_files`)."""
        try:
            own = self.real(path).relative_to(self.real_root.parent).with_suffix("").parts
        except ValueError:  # a module outside the package (a local utils.py): its relative imports name no package file
            own = ()
        files = []
        for name in _imported_names(path.read_bytes(), path.name, own):
            if name not in self._modules:
                self._modules[name] = self._module_files(name)
            files += self._modules[name]
        return files

    def _module_files(self, name: str) -> list[Path]:
        """The package files a dotted name imports: its module or package `__init__.py` (none outside the package)."""
        parts = name.split(".")
        if parts[0] != self.root.name:
            return []
        target = self.root.parent.joinpath(*parts)
        return [f for f in (target.with_suffix(".py"), target / "__init__.py") if self.is_file(f)]


def package_relative(path: Path, package_root: Path = PACKAGE_ROOT) -> str | None:
    """`path` relative to the package root (`core/docs.py`), or None for a file outside the package."""
    return _Package(package_root).relative(path)


def in_scope(path: Path, scope: tuple[str, ...], package_root: Path = PACKAGE_ROOT) -> bool:
    """Whether a package file is task code under `scope` (folder prefixes `core/`, files `_registry.py` or file
    patterns `tasks/*/__init__.py`), never one of NEVER."""
    return _Package(package_root).in_scope(path, scope)


def imported_package_files(path: Path, package_root: Path = PACKAGE_ROOT) -> list[Path]:
    """The files of this package that the module at `path` imports (absolute and relative imports, at any depth
    in the module: lazy imports inside functions count)."""
    return _Package(package_root).imported_files(path)


@functools.lru_cache(maxsize=512)
def _imported_names(source: bytes, filename: str, own: tuple[str, ...]) -> tuple[str, ...]:
    """The dotted names a module's source imports (relative ones resolved against its own dotted path `own`); keyed
    by the source bytes, so each module is parsed once per process although every task's closure shares most of
    them (an edited file is parsed again)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base_parts = list(own[: len(own) - node.level]) if node.level else []
            base = ".".join([*base_parts, *([node.module] if node.module else [])])
            names += [base, *(f"{base}.{alias.name}" for alias in node.names)]
    return tuple(names)


def package_closure(entry: list[Path], package_root: Path = PACKAGE_ROOT,
                    scope: tuple[str, ...] = CORE_SCOPE) -> list[Path]:
    """The modules `entry` and every module of this package under `scope` (`in_scope`) they import, transitively:
    an import of a module out of scope (errors.py, the patcher) is not followed."""
    return _package_closure(entry, _Package(package_root), scope)


def _package_closure(entry: list[Path], package: _Package, scope: tuple[str, ...]) -> list[Path]:
    """`package_closure` with `package`'s resolved paths."""
    files: list[Path] = []
    seen: set[Path] = set()  # `files` as a set: the membership test of every import
    scoped: dict[Path, bool] = {}  # in_scope of each file once: modules import the same files

    def wanted(file: Path) -> bool:
        if file not in scoped:
            scoped[file] = package.in_scope(file, scope)
        return scoped[file]

    pending = list(entry)
    while pending:
        path = pending.pop()
        if path in seen or not package.is_file(path):
            continue
        files.append(path)
        seen.add(path)
        pending += [f for f in package.imported_files(path) if wanted(f)]
        if package.relative(path) == REGISTRY:  # the rows it loads by folder name
            pending += [f for f in sorted(path.parent.glob("*/__init__.py")) if wanted(f)]
    return files


def files_sha256(files: list[Path], roots: list[Path]) -> str:
    """sha256 over (path relative to the first root that holds it, sha256 of its bytes), in path order."""
    return _files_sha256(files, roots, Path.resolve)


def _files_sha256(files: list[Path], roots: list[Path], real: Callable[[Path], Path]) -> str:
    """`files_sha256`, each file resolved by `real` (a computation's `_Package.real`: resolved once)."""
    resolved_roots = [root.resolve() for root in roots]

    def relative(path: Path) -> str:
        resolved = real(path)
        for root in resolved_roots:
            if resolved.is_relative_to(root):
                return resolved.relative_to(root).as_posix()
        return path.name

    names = {path: relative(path) for path in set(files)}  # each resolved once
    digest = hashlib.sha256()
    for path in sorted(names, key=names.__getitem__):
        digest.update(names[path].encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).hexdigest().encode() + b"\n")
    return digest.hexdigest()


class TaskSources:
    """Task source hashes of several tasks as one computation (one `_Package`: each path resolved, each file's
    existence checked and each module's imports looked up once for all of them), e.g. verify's pass over every
    run's tasks. Each task is hashed once (`sha256`)."""

    def __init__(self, tasks_dir: Path = TASKS_DIR, package_root: Path = PACKAGE_ROOT) -> None:
        self.tasks_dir, self.package_root = tasks_dir, package_root
        self._package = _Package(package_root)
        self._hashes: dict[str, str | None] = {}

    def sha256(self, task: str) -> str | None:
        """The task source hash of `task` (see the module docstring); None when no YAML defines it."""
        if task not in self._hashes:
            yaml = task_yamls(self.tasks_dir.resolve()).get(task)
            self._hashes[task] = None if yaml is None else _files_sha256(
                _source_files(yaml, self._package), [self.package_root, self.tasks_dir], self._package.real)
        return self._hashes[task]


def task_source_sha256(task: str, tasks_dir: Path = TASKS_DIR, package_root: Path = PACKAGE_ROOT) -> str | None:
    """The task source hash of `task` (see the module docstring); None when no YAML under `tasks_dir` defines it."""
    return TaskSources(tasks_dir, package_root).sha256(task)
