"""LEVANTE lmms-eval tasks end to end on a tiny fixture: balanced orders, image alignment, records, controls."""

from __future__ import annotations

import functools
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from levante_tasks.core import docs, hooks
from levante_tasks.core.locale_text import text as locale_text
from levante_tasks.core.prompts import letters_phrase
from levante_tasks.lmms import generate as generator
from levante_tasks.lmms import task as lmms_task
from levante_tasks.schema import layout
from levante_tasks.schema.locales import TRANSLATED
from levante_tasks.schema.tasks import TASKS, task_info
from levante_tasks.schema.variant import OutputType, Variant
from levante_tasks.testing.fixture_data import MATH_TYPES, SPECS, decode_colour, write_fixture
from levante_tasks.testing.lmms_fork import run_cli
from levante_tasks.testing.models import FixedLetterModel, ImageIndexOracle

TASKS_DIR = generator.TASKS_DIR
SEED_GROUPS = ["levante", "levante_seed1", "levante_seed2", "levante_mc", "levante_mc_seed1", "levante_mc_seed2"]


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("levante-data")


@pytest.fixture(autouse=True)
def _data_env(fixture_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not (fixture_dir / "default_version").is_file():
        write_fixture(fixture_dir)
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(fixture_dir))
    monkeypatch.delenv("LEVANTE_DATA_VERSION", raising=False)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def evaluate(model: Any, tasks: list[str]) -> dict[str, Any]:
    """One in-process lmms-eval run over our tasks only (a model instance: no entry-point lookup needed)."""
    from lmms_eval import evaluator
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
    return evaluator.simple_evaluate(model=model, tasks=tasks, task_manager=manager, log_samples=True)


def leaf_records(out: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {task: [s["levante_item"] for s in samples] for task, samples in out["samples"].items()}


def task_docs(task: str, seed: int = 0, variant: str = "original", trial_types: tuple[str, ...] = ()) -> list[dict]:
    """The docs lmms-eval gets for one generate_until variant, optionally only some trial types."""
    found = docs.task_docs(task, seed=seed, variant=variant, choice_only=False)
    return [d for d in found if not trial_types or d["trial_type"] in trial_types]


def test_yaml_tree_is_generated_and_in_sync() -> None:
    rendered = generator.render_tree()
    # l0_trace/ holds the hand-written L0-Bench task YAMLs (docs/l0.md), not generated here.
    assert generator.generated_files() == set(rendered)
    for rel, text in rendered.items():
        assert (TASKS_DIR / rel).read_text(encoding="utf-8") == text, rel
    docs_text = generator.DOCS_TASKS.read_text(encoding="utf-8")
    assert generator.with_docs_table(docs_text, generator.docs_table()) == docs_text  # docs/tasks.md's task table


class _HookLoader(yaml.SafeLoader):
    """Reads lmms-eval's `!function` tags as their dotted names."""


_HookLoader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


LEAF_LINES = 8  # at most, for every variant leaf of every task (issue 28)


def test_yaml_tree_is_thin() -> None:
    """Templates hold every setting; a leaf names its variant only (at most LEAF_LINES lines); a task with sub-types
    lists their metrics once, in its own template per output type; the tree is small.

    The bounds are computed from the catalogue (files and lines per task x tasks), so a new row is no failure here.
    """
    files = generator.generated_files()
    n_variants = len(generator.all_task_groups()) + len(generator.locale_groups())
    per_task = n_variants + 2 + 1  # variant leaves, two seed groups, README.md
    own_templates = {generator.task_template_file(info, kind) for info in TASKS if info.subtypes
                     for kind in generator.TEMPLATES}
    assert len(files) == (len(generator.TEMPLATES) + n_variants + per_task * len(TASKS)  # + one levante group a suffix
                          + len(own_templates))
    assert {rel for rel in files if rel.endswith(".md")} == {f"{info.folder}/README.md" for info in TASKS}
    group_lines, template_lines = 6, 20
    bound = (len(generator.TEMPLATES) * template_lines + n_variants * group_lines
             + sum(n_variants * 3 + len(TRANSLATED) + 2 * group_lines for info in TASKS)
             + sum(6 + len(info.subtypes) for info in TASKS if info.subtypes) * len(generator.TEMPLATES))
    assert sum(len((TASKS_DIR / rel).read_text().splitlines()) for rel in files if not rel.endswith(".md")) <= bound
    assert not list(TASKS_DIR.glob("*/utils.py"))  # no per-folder !function shims
    leaves = {rel: yaml.load((TASKS_DIR / rel).read_text(), Loader=_HookLoader) for rel in files
              if rel.endswith(".yaml")}
    tasks = {rel: leaf for rel, leaf in leaves.items() if "task" in leaf and "group" not in leaf}
    assert len(tasks) == (10 + 2 * len(TRANSLATED) + len(generator.REPLICATE_SEEDS)) * len(TASKS)
    for rel, leaf in tasks.items():
        assert len((TASKS_DIR / rel).read_text().splitlines()) <= LEAF_LINES, rel
        info = task_info(leaf["metadata"]["levante"]["task"])
        variant = Variant.parse(leaf["task"])
        translated_mc = not variant.locale.is_source and variant.output_type is OutputType.MULTIPLE_CHOICE
        cue = {"lmms_eval_specific_kwargs"} if translated_mc else set()  # its locale's post_prompt
        assert set(leaf) == {"task", "include", "metadata"} | cue, leaf
        locale = {} if variant.locale.is_source else {"locale": variant.locale.code}
        assert leaf["metadata"]["levante"] == {"task": info.name, "seed": variant.seed,
                                               "variant": variant.control.value, **locale}, leaf
        kind = generator.KINDS[variant.output_type]
        template = ((TASKS_DIR / rel).parent / leaf["include"]).resolve()
        assert template == (TASKS_DIR / generator.task_template_file(info, kind)).resolve(), rel
    for info in TASKS:  # only a task with sub-types carries their metrics, each aggregated over every doc
        for kind in generator.TEMPLATES if info.subtypes else ():
            own = yaml.load((TASKS_DIR / generator.task_template_file(info, kind)).read_text(), Loader=_HookLoader)
            assert own["include"] == f"../{generator.TEMPLATES[kind]}"
            subtypes = [m["metric"].removeprefix("levante_acc_") for m in own["metric_list"][3:]]
            assert subtypes == info.reported_subtypes(multiple_choice=kind == "mc"), info.name
            assert all(m["aggregation"].endswith("metrics.subtype_accuracy") for m in own["metric_list"][3:])
    for name in generator.TEMPLATES.values():  # no sub-type metric in a template every task shares
        assert "levante_acc_" not in (TASKS_DIR / name).read_text()
    for name in generator.TEMPLATES.values():  # hooks named absolutely, so no shim module is needed
        text = (TASKS_DIR / name).read_text()
        assert text.count("!function levante_tasks.") == text.count("!function")


def test_each_yaml_carries_its_catalogue_task_version_as_lmms_evals_metadata_version() -> None:
    """lmms-eval's own `metadata.version` (its results `versions`, its table's Version column) is the catalogue's
    `TaskInfo.version`, for every leaf and every per-task seed group; run provenance records the same number."""
    seen = set()
    for rel in generator.generated_files():
        if not rel.endswith(".yaml") or rel.startswith("_groups/"):
            continue
        doc = yaml.load((TASKS_DIR / rel).read_text(), Loader=_HookLoader)
        name = doc.get("task") if "group" not in doc else doc["group"]
        info = next(i for i in TASKS if rel.startswith(f"{i.folder}/"))
        assert doc["metadata"]["version"] == info.version and isinstance(doc["metadata"]["version"], int), rel
        seen.add(name)
    # 10 variants, 2 seed groups, 2 per locale, the order replicates
    assert len(seen) == (12 + 2 * len(TRANSLATED) + len(generator.REPLICATE_SEEDS)) * len(TASKS)
    bumped = generator.leaf(Variant("trog"), replace(task_info("trog"), version=7))
    assert yaml.load(bumped, Loader=_HookLoader)["metadata"]["version"] == 7


@pytest.mark.parametrize("letter", ["A", "B", "C", "D"])
def test_fixed_letter_scores_chance_on_every_task_seed_and_output_type(letter: str) -> None:
    out = evaluate(FixedLetterModel(letter=letter), SEED_GROUPS)
    records = leaf_records(out)
    assert len(records) == 6 * len(TASKS)  # six groups of one leaf per task
    position = "ABCD".index(letter)
    groups = {}  # option orders are balanced within each math sub-type and the task: a fixed letter is at chance
    for task, recs in records.items():
        for r in recs:
            groups.setdefault((task, task_info(r["task"]).subtype_of(r["trial_type"])), []).append(r)
            if "tolerance" not in r and len(r["presented_order"]) > position:  # the task's items offering it
                groups.setdefault((task, "(whole task)"), []).append(r)
    for (task, subtype), recs in groups.items():
        if subtype == "number_line_slider":
            assert all(r["parse_method"] == "none" and r["correct"] == 0 for r in recs)  # a letter is no position
            continue
        hits = sum(r["correct"] for r in recs)
        # an item that lacks the letter: unparsed (multiple_choice: every option the same loss, a tie)
        lacking = [r for r in recs if len(r["presented_order"]) <= position]
        assert all(r["parse_method"] == "none" and r["correct"] == 0 for r in lacking)
        expected = sum(1 / len(r["presented_order"]) for r in recs if len(r["presented_order"]) > position)
        assert abs(hits - expected) <= 1, (task, subtype, hits, expected)
        if subtype != "(whole task)":
            metric = f"levante_acc_{subtype}" if subtype else "levante_acc"
            assert out["results"][task][f"{metric},none"] == pytest.approx(hits / len(recs))
    for task, recs in records.items():
        hits = sum(r["correct"] for r in recs)
        assert out["results"][task]["levante_acc,none"] == pytest.approx(hits / len(recs))
        assert out["results"][task]["levante_item,none"] == pytest.approx(hits / len(recs))
    for group in SEED_GROUPS:  # lmms-eval's group row is the accuracy pooled over the items of its tasks
        leaves = out["group_subtasks"][group]
        pooled = sum(r["correct"] for t in leaves for r in records[t]) / sum(len(records[t]) for t in leaves)
        assert out["groups"][group]["levante_acc,none"] == pytest.approx(pooled), group


def test_math_is_one_task_reporting_every_sub_type() -> None:
    out = evaluate(FixedLetterModel(letter="B"), ["levante_egma_math", "levante_egma_math_mc_seed1"])
    gen, mc = (leaf_records(out)[t] for t in ("levante_egma_math", "levante_egma_math_mc_seed1"))
    assert {r["trial_type"] for r in gen} == {*MATH_TYPES, "Number Line Slider"}
    assert {r["trial_type"] for r in mc} == set(MATH_TYPES)  # multiple_choice has no slider form
    for name, _ in task_info("egma-math").subtypes:
        key = f"levante_acc_{name},none"
        assert key in out["results"]["levante_egma_math"], key
        assert (key in out["results"]["levante_egma_math_mc_seed1"]) == (name != "number_line_slider"), key


def test_image_oracle_proves_option_image_alignment_for_every_image_task() -> None:
    image_tasks = [
        "levante_vocab",
        "levante_trog",
        "levante_theory_of_mind",
        "levante_matrix_reasoning",
        "levante_mental_rotation",
        "levante_same_different",
    ]
    # _seed5: an order replicate, block 1 of a 4-option item (a rotation of another base order than the canonical)
    variants = [f"{t}{s}" for t in image_tasks for s in ("", "_seed1", "_mc_seed2", "_seed5", "_blank", "_shuffled")]
    out = evaluate(ImageIndexOracle(), variants)
    assert {r["seed"] for t in image_tasks for r in leaf_records(out)[f"{t}_seed5"]} == {5}
    for task, recs in leaf_records(out).items():
        acc = sum(r["correct"] for r in recs) / len(recs)
        if task.endswith("_blank"):
            assert all(r["parse_method"] == "none" for r in recs), task
        elif task.endswith("_shuffled"):
            assert acc < 1.0, task
        else:
            assert acc == 1.0, task
            assert all(
                r["choice_index"] == 0 and r["option_scores"] is None or r["option_scores"][0] == 0.0 for r in recs
            ), task


def test_context_image_comes_first_for_math_and_matrix() -> None:
    for task, types in (("egma-math", ("Number Line 4afc",)), ("matrix-reasoning", ())):
        for doc in task_docs(task, seed=1, trial_types=types):
            images = hooks.doc_to_visual(doc)
            assert decode_colour(images[0]) == -1
            text = hooks.doc_to_text(doc)
            assert text.startswith("<image 1> ")
            if doc["option_kind"] == "image":
                assert text.endswith("; ".join(f"{x}: <image {k + 2}>" for k, x in enumerate(doc["letters"])))
            if doc["option_kind"] == "image":
                assert [decode_colour(im) for im in images[1:]] == doc["presented_order"]


def test_records_and_prompts_follow_the_presented_order() -> None:
    for doc in task_docs("theory-of-mind", seed=2):
        text = hooks.doc_to_text(doc)
        assert f"Answer with {letters_phrase(len(doc['letters']))}." in text
        assert text.startswith(SPECS["theory-of-mind"].story)
        result = lmms_task.process_results(doc, [doc["target_letter"]])
        record = result["levante_item"]
        assert record["correct"] == 1 and record["choice_index"] == 0 and record["seed"] == 2
        assert record["presented_order"] == doc["presented_order"]
    for doc in task_docs("egma-math", trial_types=("Addition",)):
        shown = [doc["options"][i] for i in doc["presented_order"]]
        listing = "; ".join(f"{letter}: {o}" for letter, o in zip(doc["letters"], shown, strict=True))
        assert listing in hooks.doc_to_text(doc)
        wrong = next(p for p, i in enumerate(doc["presented_order"]) if i != 0)
        record = lmms_task.process_results(doc, [shown[wrong]])["levante_item"]
        assert record["parse_method"] == "option_text" and record["correct"] == 0
        assert record["choice_index"] == doc["presented_order"][wrong]


def test_scores_json_are_stored_in_canonical_order() -> None:
    doc = task_docs("trog", seed=1)[0]
    scores = {letter: -float(p) for p, letter in enumerate(doc["letters"])}
    record = lmms_task.process_results(doc, [str(scores).replace("'", '"').join(['{"scores": ', "}"])])
    item = record["levante_item"]
    assert item["parse_method"] == "scores" and item["choice_letter"] == "A"
    assert item["option_scores"] == [-float(doc["presented_order"].index(i)) for i in range(len(doc["letters"]))]


def test_slider_uses_stated_tolerance() -> None:
    doc = next(d for d in task_docs("egma-math", trial_types=("Number Line Slider",)) if d["range_max"] == 100.0)
    assert "Where does the number 40 go?" in hooks.doc_to_text(doc)
    inside = lmms_task.process_results(doc, ["0.54"])["levante_item"]
    outside = lmms_task.process_results(doc, ["0.56"])["levante_item"]
    assert (inside["correct"], outside["correct"], inside["tolerance"]) == (1, 0, 15.0)


def test_shuffled_control_is_a_derangement() -> None:
    original = {d["item_uid"]: d["visual_paths"] for d in task_docs("vocab")}
    shuffled = task_docs("vocab", variant="shuffled")
    assert all(d["visual_paths"] != original[d["item_uid"]] for d in shuffled)
    assert {d["visual_donor"] for d in shuffled} == set(original)


def test_missing_data_fails_with_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(tmp_path))
    with pytest.raises(SystemExit) as info:
        evaluate(FixedLetterModel(), ["levante_trog"])
    message = str(info.value)
    assert "\n" not in message and "levante-tasks prepare" in message and "levante_trog" in message
    monkeypatch.setenv("LEVANTE_DATA_VERSION", "v9")
    with pytest.raises(Exception, match="version v9"):
        docs.load_rows("trog", layout.data_version())


def test_cli_run_writes_results_and_samples_and_lists_tasks(fixture_dir: Path, tmp_path: Path) -> None:
    """`python -m lmms_eval` (run in a fork of a server that imported it: `lmms_fork`) writes the results and
    samples of our tasks, and its `--tasks list` names our groups and variants."""
    cli = functools.partial(run_cli, cwd=tmp_path, env=dict(os.environ), timeout=300, entry="lmms_eval")
    run = cli(["--model", "dummy", "--tasks", "levante_vocab,levante_egma_math_mc", "--include_path", str(TASKS_DIR),
               "--output_path", str(tmp_path), "--log_samples"])
    results = list(tmp_path.rglob("*_results.json"))
    assert len(results) == 1, run.stderr[-2000:]
    import json

    summary = json.loads(results[0].read_text())
    for task in ("levante_vocab", "levante_egma_math_mc"):
        (samples,) = tmp_path.rglob(f"*_samples_{task}.jsonl")
        recs = [json.loads(line)["levante_item"] for line in samples.read_text().splitlines()]
        assert summary["results"][task]["levante_acc,none"] == pytest.approx(
            sum(r["correct"] for r in recs) / len(recs)
        )
    listing = cli(["--tasks", "list", "--include_path", str(TASKS_DIR)])
    text = listing.stdout + listing.stderr
    for name in [
        "levante",
        "levante_egma_math",
        "levante_egma_math_mc_seeds",
        "levante_trog_mc_shuffled",
        "levante_same_different_blank",
        "levante_vocab_seeds",
    ]:
        assert f" {name} " in text or f"|{name}|" in text.replace(" ", "") or name in text.split(), name


def test_a_translated_multiple_choice_context_ends_in_its_locale_cue() -> None:
    """lmms-eval appends the `post_prompt` to every multiple_choice context before the scored letter: a translated
    leaf replaces the template's English `Answer:` with its locale's cue, so no English word ends a German prompt."""
    for locale in TRANSLATED:
        for info in TASKS:
            name = Variant(info.name, OutputType.MULTIPLE_CHOICE, locale=locale).format()
            leaf = yaml.load((TASKS_DIR / info.folder / f"{name}.yaml").read_text(), Loader=_HookLoader)
            post = leaf["lmms_eval_specific_kwargs"]["default"]["post_prompt"]
            assert post == "\n" + locale_text(locale, "answer_cue") and "Answer" not in post, name
