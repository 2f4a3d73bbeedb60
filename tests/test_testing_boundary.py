"""Test doubles live in `levante_tasks.testing` only: the product (task layer, data layer, model adapters) never
imports them and registers no test model with lmms-eval."""

from __future__ import annotations

import ast
from pathlib import Path

import levante_adapters

import levante_tasks

ROOT = Path(levante_tasks.__file__).resolve().parents[1]
# The demo builds its tiny CLIP with the testing module; the inspect entry point registers the offline model API
# `levante-tiny` by name and imports the testing module only when such a model is made (test below).
ALLOWED = {"levante_tasks/demo.py", "levante_tasks/_registry.py"}
# A task folder keeps its tests' data spec beside its other pieces (`fixture.py`, testing layer); only the testing
# package loads that piece (test below), so the product never imports it.
FIXTURE_PIECE = "fixture.py"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return names | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}


def test_product_modules_never_import_the_test_doubles() -> None:
    offenders = []
    for package in (levante_tasks, levante_adapters):
        folder = Path(package.__file__).parent
        for path in folder.rglob("*.py"):
            rel = f"{folder.name}/{path.relative_to(folder).as_posix()}"
            if rel.startswith("levante_tasks/testing/") or rel in ALLOWED or (
                    rel.startswith("levante_tasks/tasks/") and path.name == FIXTURE_PIECE):
                continue
            if any(m.split(".")[:2] == ["levante_tasks", "testing"] for m in imported_modules(path)):
                offenders.append(rel)
    assert offenders == []


def test_only_the_product_models_are_lmms_eval_entry_points() -> None:
    lines = (ROOT / "pyproject.toml").read_text(encoding="utf-8").splitlines()
    start = lines.index('[project.entry-points."lmms_eval.models"]') + 1
    section = lines[start:next(i for i in range(start, len(lines)) if lines[i].startswith("["))]
    entries = [line for line in section if line.strip() and not line.lstrip().startswith("#")]
    assert entries == ['levante_adapters = "levante_adapters.manifest:MANIFESTS"']
    from levante_adapters.manifest import MANIFESTS

    assert {m.model_id for m in MANIFESTS} == {"levante_clip", "levante_vlm_mc", "levante_openai"}
    assert all((m.simple_class_path or m.chat_class_path).startswith("levante_adapters.") for m in MANIFESTS)
    assert sorted(p.name for p in Path(levante_adapters.__file__).parent.glob("*.py")) == [
        "__init__.py", "clip_scorer.py", "common.py", "manifest.py", "openai_stop.py", "revision.py", "vlm_mc.py"]


def test_the_inspect_entry_point_imports_the_test_model_only_when_one_is_made() -> None:
    """`levante_tasks._registry` registers `levante-tiny` by name; loading it imports neither the test doubles nor
    torch, and the registered factory gives the test double's ModelAPI class."""
    import subprocess
    import sys

    code = ("import sys, levante_tasks._registry as r; "
            "print(sorted(m for m in sys.modules if m.startswith('levante_tasks.testing') or m == 'torch')); "
            "from inspect_ai.model._model import get_model; "
            "print(type(get_model('levante-tiny/reply', reply='B').api).__name__)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[:2] == ["[]", "LevanteTinyAPI"]


def test_only_the_testing_package_loads_the_task_folders_fixture_pieces() -> None:
    """The fixture pieces (`levante_tasks/tasks/<folder>/fixture.py`) import the testing layer; the registry loads a
    piece by module name, so the callers that name `"fixture"` must all be test code."""
    callers = sorted(f"{path.relative_to(ROOT).as_posix()}" for path in (ROOT / "levante_tasks").rglob("*.py")
                     if '"fixture"' in path.read_text(encoding="utf-8"))
    assert callers and all(caller.startswith("levante_tasks/testing/") for caller in callers), callers
