"""Items keep the question and the answer clause apart; every consumer composes (core.prompts.compose), none cuts.

A question that itself ends with the clause's wording must reach every consumer whole, the answer-clause pattern
may read only foreign text, and data prepared under another dataset schema is refused in one line that says to
re-run `prepare` (and re-running it rebuilds).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from data_helpers import write_release

from levante_tasks.core import docs, hooks, prompts
from levante_tasks.data.prepare import prepare
from levante_tasks.errors import LevanteError
from levante_tasks.schema import layout
from levante_tasks.testing.fixture_data import write_fixture

ROOT = Path(__file__).resolve().parent.parent
PRE, POST = "PRE ", " POST"


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("levante-data")
    write_fixture(root)
    return root


@pytest.fixture(autouse=True)
def _data_env(fixture_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(fixture_dir))
    monkeypatch.delenv("LEVANTE_DATA_VERSION", raising=False)


def shown_clause(doc: dict[str, Any]) -> str:
    """The answer clause the doc shows, presented options filled in (built, not cut from a prompt)."""
    return prompts.fill_options(prompts.item_answer_clause(doc), hooks.option_texts(doc))


def trap_docs() -> list[dict[str, Any]]:
    """A text-option item without a picture and a picture-option item with a context picture, each with a question
    that ends with the very clause the item shows (and so also with `Answer with ...` wording)."""
    picked = []
    for task, wanted in (("egma-math", "text"), ("matrix-reasoning", "image")):
        doc = next(d for d in docs.task_docs(task, seed=1, variant="original", choice_only=True)
                   if d["option_kind"] == wanted)
        doc["question"] = f"{doc['question']} Say this back: {shown_clause(doc)}"
        picked.append(doc)
    assert bool(picked[1]["stimulus_image"]) and not picked[0]["stimulus_image"]
    return picked


def test_lmms_text_is_question_then_clause() -> None:
    for doc in trap_docs():
        kwargs = {"pre_prompt": PRE, "post_prompt": POST}
        assert hooks.doc_to_text(doc, kwargs) == f"{PRE}{doc['question']} {shown_clause(doc)}{POST}"
        assert hooks.item_text(doc, with_clause=False) == doc["question"]


def test_inspect_sample_shows_the_whole_question() -> None:
    from levante_tasks.inspect.samples import doc_sample

    for doc in trap_docs():
        text = doc_sample(doc).input[0].content[0].text
        assert text.split("\n(Pictures attached")[0] == doc["question"]


def test_adapters_keep_the_whole_question() -> None:
    pytest.importorskip("torch")
    from levante_adapters.common import query_text, question

    for doc in trap_docs():
        ctx = hooks.doc_to_text(doc, {"pre_prompt": PRE})
        assert question(doc, ctx) == PRE + doc["question"]
        assert "Say this back: Answer with" in query_text({**doc, "prompt": "", "prompt_phrase": ""}, ctx)


def test_a_foreign_context_is_read_up_to_its_answer_clause() -> None:
    pytest.importorskip("torch")
    from levante_adapters.common import question

    foreign = {"question": "", "options": ["x", "y"]}  # not a prepared item: lmms-eval's context is all there is
    assert question(foreign, "Which one? Answer with A or B. A: x; B: y") == "Which one?"


def _names_used(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add(node.name)
    return names


def test_the_answer_clause_pattern_reads_only_foreign_text() -> None:
    """Manifest templates (core/prompts.py) and the context of a doc that is no prepared item (the adapters'
    common.py); a consumer of prepared items that cut text would use it and fail here."""
    users = {str(path.relative_to(ROOT)) for folder in ("levante_tasks", "adapters")
             for path in sorted((ROOT / folder).rglob("*.py"))
             if {"without_answer_clause", "_ANSWER_CLAUSE"} & _names_used(path)}
    assert users == {"levante_tasks/core/prompts.py", "adapters/levante_adapters/common.py"}


def test_data_of_another_schema_is_refused_until_prepare_reruns(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    write_release(tmp_path / "rel")
    data, version = tmp_path / "data", "2026-01-01"
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(data))
    with monkeypatch.context() as older:  # what an older levante-tasks (dataset schema 1) wrote
        older.setattr("levante_tasks.data.prepare.SCHEMA_VERSION", 1)
        older.setattr("levante_tasks.schema.dataset.SCHEMA_VERSION", 1)
        prepare(str(tmp_path / "rel"), version, str(data), strict=True, progress=False)
    info = json.loads((layout.dataset_dir(version, "vocab", data) / layout.DATASET_INFO_FILE).read_text("utf-8"))
    assert info["schema_version"] == 1
    with pytest.raises(LevanteError) as refused:
        docs.load_rows("vocab", version)
    message = str(refused.value)
    assert "\n" not in message and str(tmp_path) not in message
    assert message == (f"vocab: {version}/datasets/vocab was prepared by another levante-tasks version (dataset "
                       f"schema 1, this one reads 2): re-run `levante-tasks prepare --release BASE --version "
                       f"{version}`")
    assert prepare(str(tmp_path / "rel"), version, str(data), strict=True, progress=False).rebuilt
    assert [row["question"] for row in docs.load_rows("egma-math", version)] == [
        "Add the numbers and choose the correct answer: 1+1.", "Add the numbers and choose the correct answer: 2+2."]
