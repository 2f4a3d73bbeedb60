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
`fixed_B` and `image_oracle` unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from golden_records import SUITES, run_suites, unit_hashes

from levante_tasks.data.prepare import prepare
from levante_tasks.lmms.tasks._generate_configs import TASKS_DIR
from levante_tasks.synth import write_synthetic_release
from levante_tasks.testing.models import FixedLetterModel, ImageIndexOracle
from levante_tasks.testing.scripted import ScriptedChatModel, ScriptedModel

GOLDEN = json.loads((Path(__file__).parent / "golden" / "records_synthetic_seed0.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("golden")
    write_synthetic_release(base / "release", seed=0, version="synthetic")
    prepare(str(base / "release"), "synthetic", str(base / "data"), strict=True, progress=False)
    return base / "data"


@pytest.fixture(autouse=True)
def _env(synthetic: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(synthetic))
    monkeypatch.setenv("LEVANTE_DATA_VERSION", "synthetic")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def assert_same(model: str, got: dict[str, dict]) -> None:
    want = GOLDEN[model]
    assert sorted(got) == sorted(want), model
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
