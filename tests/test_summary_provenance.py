"""Provenance helpers of the summary: stable task config hashes, recorded task versions, model identity without local
paths, task source hash (the task's own code only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from levante_tasks.runs import model as runs_model
from levante_tasks.schema import task_source
from levante_tasks.summary import provenance as prov
from levante_tasks.tasks import FOLDERS

CONFIG = {
    "task": "levante_vocab",
    "doc_to_text": "<function doc_to_text at 0x7f6591dfff60>",
    "generation_kwargs": {"max_new_tokens": 128},
    "metadata": {"version": 1, "levante": {"task": "vocab", "seed": 0, "variant": "original"}},
}


def with_changes(**changes: object) -> dict:
    config = {**CONFIG, "metadata": {**CONFIG["metadata"], "levante": dict(CONFIG["metadata"]["levante"])}}
    config.update(changes)
    return config


def test_task_config_hash_ignores_memory_addresses_and_recorded_provenance() -> None:
    moved = with_changes(doc_to_text="<function doc_to_text at 0x7f0000000abc>")
    moved["metadata"]["levante"]["provenance"] = {"dataset_fingerprint": "f" * 64, "task_version": 2}
    assert prov.task_config_sha256(moved) == prov.task_config_sha256(CONFIG)
    changed = with_changes(generation_kwargs={"max_new_tokens": 8})
    assert prov.task_config_sha256(changed) != prov.task_config_sha256(CONFIG)


@pytest.mark.parametrize(("recorded", "version"), [({"task_version": 3}, 3), ({}, "unknown"),
                                                   ({"task_version": "3"}, "unknown"),
                                                   ({"task_version": True}, "unknown")])
def test_the_task_version_is_the_recorded_number_else_unknown(recorded: dict, version: object) -> None:
    config = with_changes()
    config["metadata"]["levante"]["provenance"] = recorded
    run = {"config": {}}
    got = prov.task_provenance(run, config)
    assert got["task_version"] == version and got["task_config_sha256"] == prov.task_config_sha256(CONFIG)


def test_prompt_hash_is_shared_by_seeds_and_controls_but_not_by_other_prompts() -> None:
    blank = with_changes(task="levante_vocab_blank")
    blank["metadata"]["levante"].update(variant="blank", seed=1)
    results = {"system_instruction_sha": None, "chat_template_sha": None}
    assert prov.prompt_hash(blank, results) == prov.prompt_hash(CONFIG, results)
    other = with_changes(lmms_eval_specific_kwargs={"default": {"post_prompt": "Think step by step."}})
    assert prov.prompt_hash(other, results) != prov.prompt_hash(CONFIG, results)
    assert prov.prompt_hash(CONFIG, {**results, "system_instruction_sha": "ab"}) != prov.prompt_hash(CONFIG, results)


def results_for(model: str, model_args: str, name: str = "") -> dict:
    return {"config": {"model": model, "model_args": model_args}, "model_name": name}


@pytest.mark.parametrize(
    ("model_args", "name", "answer", "public_id", "revision"),
    [
        ("pretrained=/home/alice/models/tiny-clip", "/home/alice/models/tiny-clip", None, "tiny-clip", "unknown"),
        ("pretrained=/cache/hub/models--org--clip-b/snapshots/" + "a" * 40, "", None, "org/clip-b", "a" * 40),
        ("pretrained=org/model,revision=" + "b" * 40, "org/model", None, "org/model", "b" * 40),
        ("pretrained=org/model,revision=main", "org/model", None, "org/model", "unknown"),
        ("pretrained=/x/y", "/x/y", {"model_id": "org/real", "revision": "c" * 40}, "org/real", "c" * 40),
        ("letter=B", "", None, "levante_fixed[letter=B]", "unknown"),
        ("model_id=/srv/ckpt/step-100", "", None, "step-100", "unknown"),
    ],
)
def test_model_identity(model_args: str, name: str, answer: dict | None, public_id: str, revision: str) -> None:
    got = runs_model.model_identity(results_for("levante_fixed", model_args, name), answer)
    assert got == {"adapter": "levante_fixed", "public_id": public_id, "revision": revision, "test_model": True}


@pytest.mark.parametrize(("adapter", "answer", "expected"), [
    ("levante_clip", None, False),  # a real adapter on a real checkpoint
    ("levante_clip", {"model_id": "tiny-clip", "test_model": True}, True),  # a tiny_models checkpoint
    ("levante_image_oracle", None, True),  # an offline test double
    ("inspect_ai:levante-tiny/clip", None, True),
    ("inspect_ai:vllm/levante-tiny", None, False),  # a provider's model that happens to be named so
    ("hf", {"model_id": "org/m"}, False),
])
def test_test_models_are_recognised(adapter: str, answer: dict | None, expected: bool) -> None:
    assert runs_model.is_test_model(adapter, answer) is expected


@pytest.mark.parametrize(("config", "expected"), [
    ('{"model_type": "qwen2_vl", "levante_test_model": "random-init"}', True),  # what tiny_models writes
    ('{"model_type": "qwen2_vl"}', False),  # a real checkpoint
    ('["levante_test_model"]', False), ("not json", False), (None, False),  # no config.json
])
def test_a_checkpoint_is_a_test_model_by_its_config_mark(tmp_path: Path, config: str | None, expected: bool) -> None:
    folder = tmp_path / "ckpt"
    folder.mkdir()
    if config is not None:
        (folder / "config.json").write_text(config, encoding="utf-8")
    assert runs_model.marked_test_checkpoint(str(folder)) is expected
    got = runs_model.model_identity(results_for("qwen2_vl", f"pretrained={folder},device_map=cpu"), None)
    assert got == {"adapter": "qwen2_vl", "public_id": "ckpt", "revision": "unknown", "test_model": expected}
    assert runs_model.marked_test_checkpoint("org/hub-model") is False


def test_redacted_model_args_hold_no_local_path() -> None:
    text = runs_model.redact_model_args("pretrained=/home/alice/models/tiny-clip,dtype=float32,cache=~/c")
    assert text == "pretrained=tiny-clip,dtype=float32,cache=c"


def test_task_source_hash_covers_the_package_modules_the_yaml_names(tmp_path: Path) -> None:
    package = tmp_path / "levante_tasks"
    tasks = package / "tasks"
    (package / "core").mkdir(parents=True)
    (tasks / "t").mkdir(parents=True)
    (package / "core" / "hooks.py").write_text("def f(doc):\n    return doc\n")
    (tasks / "t" / "my_task.yaml").write_text("task: my_task\ndoc_to_text: !function levante_tasks.core.hooks.f\n")
    before = task_source.task_source_sha256("my_task", tasks, package)
    (package / "core" / "hooks.py").write_text("def f(doc):\n    return None\n")
    assert task_source.task_source_sha256("my_task", tasks, package) != before
    assert prov.task_source_sha256 is task_source.task_source_sha256


def test_one_computation_over_many_tasks_hashes_each_as_a_run_records_it() -> None:
    """verify hashes every task of a pass with one `TaskSources` (files resolved and imports read once for all):
    each hash is the one a run records (`task_source_sha256`, a computation of its own), in any order of tasks."""
    names = sorted(task_source.task_yamls(task_source.TASKS_DIR.resolve()))
    tasks = [name for name in names if name.startswith("levante_")][::12] + ["levante_vocab", "no_such_task"]
    shared = task_source.TaskSources()
    assert [shared.sha256(task) for task in tasks] == [task_source.task_source_sha256(task) for task in tasks]
    assert shared.sha256("no_such_task") is None and len(set(tasks[:-1])) > 20


def test_task_source_hash_covers_the_package_modules_the_hooks_import(tmp_path: Path) -> None:
    """A module reached only through imports (absolute, relative or lazy inside a function) is part of the task's
    source: an edit to the option orders must change the recorded task version."""
    package = tmp_path / "levante_tasks"
    tasks = package / "tasks"
    (package / "core").mkdir(parents=True)
    (tasks / "t").mkdir(parents=True)
    (package / "core" / "hooks.py").write_text(
        "from levante_tasks.core import options\nfrom .prompts import text\n\n"
        "def f(doc):\n    from levante_tasks.core.records import record\n    return record(options.order(doc))\n")
    for name in ("options", "prompts", "records", "unrelated"):
        (package / "core" / f"{name}.py").write_text(f"# {name}\n")
    (tasks / "t" / "my_task.yaml").write_text("task: my_task\ndoc_to_text: !function levante_tasks.core.hooks.f\n")
    files = {p.name for p in task_source.source_files(tasks / "t" / "my_task.yaml", package)}
    assert files == {"my_task.yaml", "hooks.py", "options.py", "prompts.py", "records.py"}
    for name in ("options", "prompts", "records"):
        before = task_source.task_source_sha256("my_task", tasks, package)
        (package / "core" / f"{name}.py").write_text(f"# {name}, edited\n")
        assert task_source.task_source_sha256("my_task", tasks, package) != before, name
    before = task_source.task_source_sha256("my_task", tasks, package)
    (package / "core" / "unrelated.py").write_text("# edited, imported by nothing\n")
    assert task_source.task_source_sha256("my_task", tasks, package) == before


def test_task_source_hash_covers_the_tasks_own_code_not_the_patcher_or_error_texts(tmp_path: Path) -> None:
    """Scope: core/, schema/ and the lmms face (lmms/ less lmms/patcher/); an edit to an error message, the patcher,
    atomic.py, the package __init__, another package or a task folder's item rules beside its YAML leaves the hash
    (and `verify`) as it was."""
    package = tmp_path / "levante_tasks"
    tasks = package / "tasks"
    for folder in ("core", "schema", "lmms/patcher", "data", "summary"):
        (package / folder).mkdir(parents=True, exist_ok=True)
    (tasks / "t").mkdir(parents=True)
    (package / "lmms" / "task.py").write_text(
        "from levante_tasks import __version__\nfrom levante_tasks.core import docs\n"
        "from levante_tasks.errors import LevanteError\nfrom levante_tasks.lmms import metrics\n"
        "from levante_tasks.lmms.patcher import installed_lmms_eval\nfrom levante_tasks.schema.tasks import info\n\n"
        "def f(doc):\n    from levante_tasks.atomic import write_text\n    return docs.load(doc)\n")
    (package / "lmms" / "metrics.py").write_text("from levante_tasks.core import records\n")
    (package / "core" / "docs.py").write_text(
        "from levante_tasks.data import items\nfrom levante_tasks.errors import LevanteError\n"
        "from levante_tasks.summary import stats\n")
    texts = {"__init__.py": "__version__ = '1'\n", "errors.py": "class LevanteError(Exception): ...\n",
             "atomic.py": "def write_text(): ...\n", "core/records.py": "# records\n", "schema/tasks.py": "# rows\n",
             "lmms/patcher/__init__.py": "from .engine import installed_lmms_eval\n",
             "lmms/patcher/engine.py": "def installed_lmms_eval(): ...\n", "data/items.py": "# items\n",
             "summary/stats.py": "# stats\n", "tasks/t/items.py": "# item rules, beside the YAML\n"}
    for rel, text in texts.items():
        (package / rel).write_text(text)
    (tasks / "t" / "my_task.yaml").write_text("task: my_task\nclass: !function levante_tasks.lmms.task.f\n")
    files = {p.relative_to(package).as_posix() for p in task_source.source_files(tasks / "t" / "my_task.yaml", package)}
    assert files == {"tasks/t/my_task.yaml", "lmms/task.py", "lmms/metrics.py", "core/docs.py",
                     "core/records.py", "schema/tasks.py"}
    for rel in ("core/records.py", "core/docs.py", "schema/tasks.py", "lmms/metrics.py"):
        before = task_source.task_source_sha256("my_task", tasks, package)
        (package / rel).write_text((package / rel).read_text() + "# edited\n")
        assert task_source.task_source_sha256("my_task", tasks, package) != before, rel
    for rel in ("errors.py", "lmms/patcher/engine.py", "lmms/patcher/__init__.py", "atomic.py", "__init__.py",
                "data/items.py", "summary/stats.py", "tasks/t/items.py"):
        before = task_source.task_source_sha256("my_task", tasks, package)
        (package / rel).write_text((package / rel).read_text() + "# an error message reworded\n")
        assert task_source.task_source_sha256("my_task", tasks, package) == before, rel


def test_the_installed_task_source_hashes_leave_out_the_patcher_and_error_texts() -> None:
    from levante_tasks.inspect.task import source_files

    yaml = task_source.task_yamls(task_source.TASKS_DIR)["levante_trog"]
    lmms = {task_source.package_relative(p) for p in task_source.source_files(yaml)}
    inspect = set(source_files())
    for files, face in ((lmms, "lmms/"), (inspect, "inspect/")):
        assert {"core/hooks.py", "core/options.py", "core/parsing.py", "core/records.py"} <= files
        assert any(rel.startswith(face) for rel in files)
        outside = {rel for rel in files if not rel.startswith(("core/", "schema/", face))}
        rows = {f"tasks/{folder}/__init__.py" for folder in FOLDERS}  # the catalogue rows, one per task folder
        entry = {"_registry.py"} if face == "inspect/" else set()
        yamls = {"tasks/trog/levante_trog.yaml", "tasks/_levante_generate_until_template_yaml"}  # its YAML, template
        own = yamls if face == "lmms/" else set()
        assert outside == {*entry, "tasks/__init__.py", *rows, *own}, outside  # not a folder's items, synth, fixture
        assert not any(rel.startswith("lmms/patcher/") for rel in files)
    assert "lmms/task.py" in lmms and "_registry.py" in inspect and not any(r.startswith("lmms/") for r in inspect)


def test_task_source_hash_covers_yaml_includes_and_utils(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    (tasks / "t").mkdir(parents=True)
    (tasks / "_template_yaml").write_text("output_type: generate_until\n")
    (tasks / "t" / "utils.py").write_text("def f(doc):\n    return doc\n")
    (tasks / "t" / "my_task.yaml").write_text("task: my_task\ninclude: ../_template_yaml\n"
                                              "doc_to_text: !function utils.f\n")
    first = prov.task_source_sha256("my_task", tasks)
    assert first is not None and len(first) == 64
    assert prov.task_source_sha256("other_task", tasks) is None
    for path, text in ((tasks / "_template_yaml", "output_type: multiple_choice\n"),
                       (tasks / "t" / "utils.py", "def f(doc):\n    return None\n")):
        before = prov.task_source_sha256("my_task", tasks)
        path.write_text(text)
        task_source.task_yamls.cache_clear()
        assert prov.task_source_sha256("my_task", tasks) != before


def test_the_test_double_names_are_those_the_testing_package_registers() -> None:
    from levante_tasks.schema import markers
    from levante_tasks.testing import inspect_model, matrix_doubles, models

    assert set(markers.TEST_DOUBLE_ADAPTERS) == {m.model_id for m in [*models.MANIFESTS, *matrix_doubles.MANIFESTS]}
    from inspect_ai.model._model import get_model

    import levante_tasks._registry  # noqa: F401 (the inspect entry point registers the test model API)

    assert isinstance(get_model(f"{markers.TEST_INSPECT_PROVIDER}/reply", reply="B").api, inspect_model.LevanteTinyAPI)
