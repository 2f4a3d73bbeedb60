"""The per-item records (and what each model was shown) on the synthetic release are byte-identical to those of
the tree before the task layer was rewritten (thin YAMLs, one egma-math task, one class for simple and chat
models, the prompt built once): every task, output type, option-order seed and image variant.

tests/golden/records_synthetic_seed0.json was written by the tree at commit fb5901a (before the rewrite), with
the synthetic release of seed 0 prepared by that tree, running `tests/golden_records.py` with that tree's
FixedLetterModel(letter="B") and ImageIndexOracle and with `levante_tasks/testing/scripted.py` (the same code
as here; it only needs lmms-eval). Regenerate it only for an intended change of records or prompts, and say so
(tests/golden_records.py). Regenerated since: egma-math's option orders balanced over the whole task and each
sub-type at once (issue 18.2: egma-math units changed); parser version 2 added the record keys parser_version,
option_texts, range_min and range_max, and slider records gained chance_level; parser version 3 changed
parser_version and left a tie of scores unparsed (checked: with parser_version "2" and each tie record put back to
its first top-scoring letter by `scores`, every unit hashes as before; 635 image_oracle multiple_choice records on
text-only egma-math items, where the oracle gives every option the same loss, 2 scripted and 1 scripted_chat
`scores` JSON ties); then for the `<image N>` picture markers (prompts changed, so every `inputs` hash with a
picture marker changed, and the scripted models' records, which hash the prompt): the records and counts of
`fixed_B` and `image_oracle` unchanged; parser version 4 (issue 31.3: new answer forms, negations and
ruled-out letters) changed only parser_version (checked: with parser_version "3" put back every unit hashes as
before, so no golden response is read differently); order replicates (issue 30: each block of n seeds a Latin
square per item) changed the option orders of egma-math's seeds 1 and 2, the synthetic release's one task with mixed
option counts whose earlier rule repeated a gold position over seeds 0-2 (the records and inputs of its 14 seed 1
and 2 units over the four models; every other unit, seed 0 included, hashes as before).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from data_helpers import prepared_release
from golden_records import SUITES, run_suites, unit_hashes

from levante_tasks.schema.task_source import TASKS_DIR
from levante_tasks.schema.tasks import TASKS
from levante_tasks.testing.models import FixedLetterModel, ImageIndexOracle
from levante_tasks.testing.scripted import ScriptedChatModel, ScriptedModel

GOLDEN = json.loads((Path(__file__).parent / "golden" / "records_synthetic_seed0.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic release of seed 0, prepared strictly: the suite's one preparation of it (only read here)."""
    return prepared_release(tmp_path_factory) / "data"


@pytest.fixture(autouse=True)
def _env(synthetic: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(synthetic))
    monkeypatch.setenv("LEVANTE_DATA_VERSION", "synthetic")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def unit_problems(got: dict[str, dict], want: dict[str, dict]) -> list[str]:
    """What is wrong with the units of a run against the golden ones: a golden unit missing or one more of a golden
    task, or a catalogue task without units. A task added since the golden file was written has units of its own
    (one registry line and one folder add it; its records are new, not golden)."""
    def task(unit: str) -> str:
        return unit.split("/")[0]

    golden_tasks = {task(unit) for unit in want}
    problems = [f"golden unit missing: {unit}" for unit in sorted(set(want) - set(got))]
    problems += [f"unit not in golden: {unit}" for unit in sorted(set(got) - set(want)) if task(unit) in golden_tasks]
    missing_tasks = sorted({info.name for info in TASKS} - {task(unit) for unit in got})
    problems += [f"catalogue task without units: {name}" for name in missing_tasks]
    return problems


def assert_same(model: str, got: dict[str, dict]) -> None:
    want = GOLDEN[model]
    assert not unit_problems(got, want), (model, unit_problems(got, want)[:10])
    changed = [f"{unit}: {part}" for unit in want for part in ("n", "records", "inputs")
               if got[unit][part] != want[unit][part]]
    assert not changed, f"{model}: {changed[:10]}"


@pytest.mark.parametrize("model", ["fixed_B", "image_oracle", "scripted"])
def test_simple_models_give_the_golden_records(model: str) -> None:
    instance = {"fixed_B": lambda: FixedLetterModel(letter="B"), "image_oracle": ImageIndexOracle,
                "scripted": ScriptedModel}[model]()
    assert_same(model, unit_hashes(run_suites(instance, str(TASKS_DIR), SUITES)))


def test_chat_model_gives_the_golden_records() -> None:
    chat = ScriptedChatModel()
    assert_same("scripted_chat", unit_hashes(run_suites(chat, str(TASKS_DIR), [s for s in SUITES if "_mc" not in s]),
                                             chat.seen))


def test_the_unit_check_takes_a_new_catalogue_task_and_no_other_change() -> None:
    """Units of every golden unit plus a unit per output type of each catalogue task the golden file lacks pass; a
    missing golden unit, an extra unit of a golden task and a catalogue task without units fail."""
    want = GOLDEN["fixed_B"]
    new = {f"{info.name}/{kind}/seed0/original": {} for info in TASKS for kind in ("generate_until", "multiple_choice")
           if not any(unit.startswith(f"{info.name}/") for unit in want)}
    assert unit_problems({**want, **new}, want) == []
    # A golden file made before a task existed (here: without trog) takes that task's units as new, not as changes.
    before_trog = {unit: value for unit, value in want.items() if not unit.startswith("trog/")}
    assert len(before_trog) < len(want) and unit_problems({**want, **new}, before_trog) == []
    dropped = {**want, **new}
    first = dropped.pop(sorted(want)[0])
    assert unit_problems(dropped, want) == [f"golden unit missing: {sorted(want)[0]}"]
    assert unit_problems({**want, **new, "vocab/generate_until/seed9/original": first}, want) == [
        "unit not in golden: vocab/generate_until/seed9/original"]
    without_vocab = {unit: value for unit, value in {**want, **new}.items() if not unit.startswith("vocab/")}
    assert "catalogue task without units: vocab" in unit_problems(without_vocab, want)
