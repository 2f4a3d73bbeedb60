"""The package's layers, as imports: no package imports one above it, the two harness faces never import each
other, and the inspect face (with core/ and schema/ under it) runs without lmms-eval.

Every `import` and `from ... import` of a module counts, at any depth (lazy imports inside functions too), read
from the source with `ast`, so a violation is found even on a code path no test runs.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import levante_tasks

PACKAGE = Path(levante_tasks.__file__).resolve().parent

pytest_plugins = ["inspect_helpers"]  # the data_dir and fixture_env fixtures

ADAPTERS = PACKAGE.parent / "adapters" / "levante_adapters"

# Lowest first. A module may import its own unit and any unit of a lower layer; units that share a layer (the two
# harness faces) may not import each other. `__init__` is the package's own module (its version).
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(layer) for layer in (
    {"__init__", "temp_names", "markdown_table", "parent_death", "filehash", "blas"},
    {"errors"},
    {"textfile"},
    {"atomic", "yaml_file", "folder_lock"},
    {"cards"},  # Croissant JSON-LD building blocks and the card check (the cards themselves: data/, summary/, ...)
    {"schema"},  # contracts: the catalogue, layouts, record and item schemas, uid spellings
    {"core"},  # what both harnesses share: docs, option orders, controls, prompts, hooks, parsing, records
    {"data"},  # prepare: release -> prepared dataset
    {"synth"},  # synthetic releases and children
    {"lmms", "inspect", "models"},  # the two harness faces; `models`: the empty model map LMMS_EVAL_PLUGINS reads
    {"l0"},  # the L0 task (an lmms-eval task of its own)
    {"runs"},  # reading run outputs (results, samples, inspect logs, model identity): summary and compare share it
    {"summary"},
    {"compare"},
    {"matrix"},
    {"testing"},
    {"demo", "_registry"},
    {"cli"},
    {"__main__"},
))
RANK = {unit: rank for rank, layer in enumerate(LAYERS) for unit in layer}
# A task folder (`levante_tasks/tasks/<folder>/`) holds one module of each of several layers; each is part of its
# layer's unit: the registry (`tasks/__init__.py`) and each folder's row (`__init__.py`) of schema, `items.py` of
# data, `synth.py` of synth, `fixture.py` of testing.
TASK_FOLDER_UNITS = {"items": "data", "synth": "synth", "fixture": "testing"}
# The model adapters (top-level `adapters/`) stand on the contracts and the shared core only.
ADAPTER_MAY_IMPORT = frozenset({"__init__", "temp_names", "errors", "textfile", "atomic", "schema", "core"})


def imported_modules(path: Path, own: tuple[str, ...]) -> list[str]:
    """Dotted names of every module `path` imports (absolute, relative, lazy); `own` is its dotted name's parts."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = [*own[: len(own) - node.level]] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            if module == "levante_tasks":
                names += [f"{module}.{alias.name}" for alias in node.names]
            else:  # `from levante_tasks.tasks.vocab import items` imports the data-layer module too
                names += [module, *(f"{module}.{alias.name}" for alias in node.names
                                    if module.startswith("levante_tasks.tasks."))]
    return names


def unit(dotted: str) -> str | None:
    """The layer unit of a `levante_tasks...` module name (None for other packages)."""
    parts = dotted.split(".")
    if parts[0] != "levante_tasks":
        return None
    if len(parts) == 1 or parts[1] == "__version__":
        return "__init__"
    if parts[1] == "tasks":
        return TASK_FOLDER_UNITS.get(parts[3], "schema") if len(parts) > 3 else "schema"
    return parts[1]


def package_units() -> dict[str, list[Path]]:
    """Unit -> its module files (a subpackage or a top-level module of levante_tasks)."""
    found: dict[str, list[Path]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = unit(".".join(("levante_tasks", *parts))) if parts[0] == "tasks" else parts[0]
        found.setdefault(name, []).append(path)
    return found


def violations() -> list[str]:
    """`file: imports X (layer a) from layer b` for each import that breaks the layering."""
    out = []
    for src, files in package_units().items():
        for path in files:
            own = ("levante_tasks", *path.relative_to(PACKAGE).with_suffix("").parts)
            for name in imported_modules(path, own):
                dst = unit(name)
                if dst is None or dst == src:
                    continue
                if dst not in RANK:
                    out.append(f"{path.relative_to(PACKAGE.parent)}: imports {name} (no such unit)")
                elif RANK[dst] > RANK[src] or RANK[dst] == RANK[src]:
                    out.append(f"{path.relative_to(PACKAGE.parent)}: imports {name} ({dst}, layer {RANK[dst]}) "
                               f"from {src} (layer {RANK[src]})")
    for path in sorted(ADAPTERS.rglob("*.py")):
        for name in imported_modules(path, ("levante_adapters", *path.relative_to(ADAPTERS).with_suffix("").parts)):
            dst = unit(name)
            if dst is not None and dst not in ADAPTER_MAY_IMPORT:
                out.append(f"{path.relative_to(PACKAGE.parent)}: imports {name} (adapters stand on schema/ and core/)")
    return out


def test_every_unit_of_the_package_has_a_layer():
    assert sorted(set(package_units()) - set(RANK)) == []
    assert sorted(set(RANK) - set(package_units())) == []  # no stale unit names


def test_no_package_imports_one_above_it_and_the_faces_stay_apart():
    assert violations() == []


def test_the_check_finds_an_upward_a_sideways_and_a_lazy_import(tmp_path, monkeypatch):
    """The rule is able to fail: a core module importing lmms (lazily), inspect importing lmms, schema importing
    core, a task folder's row importing its item rules and its item rules importing synth are each reported (its
    fixture importing its synthetic builder is allowed: testing stands above synth)."""
    package = tmp_path / "levante_tasks"
    for rel, text in {
        "core/hooks.py": "def f():\n    from levante_tasks.lmms import task\n",
        "inspect/task.py": "from levante_tasks.lmms.model_bridge import BothKindsTask\n",
        "schema/tasks.py": "from ..core import options\n",
        "lmms/task.py": "from levante_tasks.core import hooks\nfrom levante_tasks import errors\n",
        "tasks/probe/__init__.py": "from levante_tasks.tasks.probe import items\n",
        "tasks/probe/items.py": "from levante_tasks.synth import draw\nfrom levante_tasks.data import rules\n",
        "tasks/probe/fixture.py": "from levante_tasks.tasks.probe import synth\n",
    }.items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    monkeypatch.setattr(sys.modules[__name__], "ADAPTERS", tmp_path / "none")
    found = violations()
    assert len(found) == 5, found
    assert any("core/hooks.py: imports levante_tasks.lmms (lmms" in line for line in found)
    assert any("inspect/task.py: imports levante_tasks.lmms.model_bridge" in line for line in found)
    assert any("schema/tasks.py: imports levante_tasks.core (core" in line for line in found)
    assert any("tasks/probe/__init__.py: imports levante_tasks.tasks.probe.items (data" in line for line in found)
    assert any("tasks/probe/items.py: imports levante_tasks.synth (synth" in line for line in found)


INSPECT_WITHOUT_LMMS = """
import sys
import levante_tasks._registry, levante_tasks.inspect.task, levante_tasks.inspect.samples, levante_tasks.inspect.scorer
from levante_tasks.core import docs, hooks
from levante_tasks.inspect.samples import doc_sample
samples = [doc_sample(doc) for doc in docs.task_docs("trog", seed=0, variant="original", choice_only=True)[:2]]
assert samples and samples[0].input, samples
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "lmms_eval" or m.startswith("levante_tasks.lmms"))
print("LOADED", loaded)
"""


@pytest.mark.usefixtures("fixture_env")
def test_the_inspect_face_builds_samples_without_importing_lmms_eval():
    """In a fresh interpreter: the inspect entry point, the inspect task modules and two real samples built from
    prepared (fixture) data load no lmms-eval module and none of the lmms face."""
    run = subprocess.run([sys.executable, "-c", INSPECT_WITHOUT_LMMS], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "LOADED []" in run.stdout, run.stdout[-2000:]
