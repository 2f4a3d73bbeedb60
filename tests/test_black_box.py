"""The scripted black box (`levante_tasks.testing.black_box`): its exact q*, and the same answers through lmms-eval's
`openai` class against the fake OpenAI-compatible server as in process, for every (item, presented order) of
order replicates 0-3 of a picture task (one Latin block of the fixture's 4-option vocab items).

The server reads each request's presented order from its option pictures' colours (the colour-coded fixture) and
keys the item by its prompt phrase; the test keys each record's item by its fixture row's phrase, so the two paths
share nothing but the black box itself.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from built_once import built_once
from compat_checks import fixture_rows, item_records

from levante_tasks.schema import task_source
from levante_tasks.testing.black_box import BoxItem, answer, scripted_item, true_distribution
from levante_tasks.testing.fake_openai import black_box_reply, serve
from levante_tasks.testing.fixture_data import write_fixture
from levante_tasks.testing.lmms_fork import run_cli

SEED_TASKS = ["levante_vocab", "levante_vocab_seed1", "levante_vocab_seed2", "levante_vocab_seed3"]  # replicates 0-3
PHRASE = re.compile(r"phrase \d+")
BIAS = 0.4


def test_true_distribution_is_the_exact_share_over_all_orders() -> None:
    item = scripted_item("phrase 7", 4, favourite=1, bias=BIAS)
    answers = [answer(item, order) for order in itertools.permutations(range(4))]
    q = true_distribution(item)
    assert np.allclose(q * math.factorial(4), np.bincount(answers, minlength=4)) and math.isclose(q.sum(), 1.0)
    # only the favourite position answered: every option sits there in (n-1)! of the n! orders
    assert np.allclose(true_distribution(BoxItem("x", (0.7, 0.2, 0.1), favourite=2, bias=1.0)), 1 / 3)
    assert np.allclose(true_distribution(BoxItem("x", (0.0, 1.0, 0.0), bias=0.0)), [0.0, 1.0, 0.0])
    assert answer(item, [3, 2, 1, 0]) == answer(item, [3, 2, 1, 0])  # greedy: one answer per order
    with pytest.raises(ValueError, match="not a permutation"):
        answer(item, [0, 0, 1, 2])


def _phrase(line: dict[str, Any]) -> str:
    """The item key the server sees: the prompt phrase in the request's text."""
    found = PHRASE.search(line["texts"][0])
    assert found, line["texts"]
    return found.group()


def test_openai_class_on_the_fake_server_answers_as_the_black_box_in_process(tmp_path_factory: pytest.TempPathFactory,
                                                                            tmp_path: Path) -> None:
    data = built_once(tmp_path_factory, "compat-data", write_fixture)
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("LEVANTE_DATA_VERSION", None)
    out = tmp_path / "out"
    with serve(tmp_path / "server.jsonl", black_box_reply(_phrase, favourite=1, bias=BIAS)) as url:
        done = run_cli(["--model", "openai", "--model_args", f"model_version=fake,api_key=fake,base_url={url}",
                        "--tasks", ",".join(SEED_TASKS), "--include_path", str(task_source.TASKS_DIR),
                        "--gen_kwargs", "max_new_tokens=2", "--output_path", str(out), "--log_samples",
                        "--verbosity", "WARNING"], cwd=tmp_path, env=env, timeout=600, entry="lmms_eval",
                       models=["openai"])
    assert done.returncode == 0, done.stderr[-3000:]
    records = [r for task in SEED_TASKS for r in item_records(out)[task]]
    rows = fixture_rows(data)
    assert {r["seed"] for r in records} == {0, 1, 2, 3} and len(records) == 4 * 9
    expected = [answer(scripted_item(rows[r["item_uid"]]["prompt_phrase"], len(r["presented_order"]), favourite=1,
                                     bias=BIAS), r["presented_order"]) for r in records]
    assert [r["choice_index"] for r in records] == expected
    assert len(set(expected)) > 1 and len({tuple(r["presented_order"]) for r in records}) > 1  # not one constant
