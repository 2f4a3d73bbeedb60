"""compare reads inspect_ai logs: an inspect run of trog with `-T orders=4` (real sample items, inspect's mockllm)
gives the orders row that the same records give as four lmms-eval seed runs, number for number; a plain log gives
its per-seed unit; a damaged or unreadable log is the line summarize gives."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pandas as pd
import pytest
from compare_inputs import compare, compared, trog_trials
from shared_paths import irt_fixture_dir
from test_replicate_audit import _drop_seed3_of_first_item

from levante_tasks.cli import main
from levante_tasks.compare.records import read_model_records
from levante_tasks.schema.records import RECORD_KEY

ORDERS = 4
ITEMS = 40  # the first 40 trog items (inspect's --limit counts samples: item-major, ORDERS per item)
UNPARSED_EVERY = 13  # one answer in 13 names no option


def _answer(messages, tools, tool_choice, config):
    """`ANSWER: X` with a letter drawn from the item and its seed (so the replicates disagree), or no answer."""
    from inspect_ai.model import ModelOutput, ModelUsage

    from levante_tasks.inspect.samples import ITEM_KEY

    ref = next(m.metadata[ITEM_KEY] for m in messages if ITEM_KEY in (m.metadata or {}))
    k = int(hashlib.sha256(f"{ref['item_uid']}@{ref['seed']}".encode()).hexdigest(), 16)
    text = "I cannot tell." if k % UNPARSED_EVERY == 0 else f"ANSWER: {'ABCD'[k % 4]}"
    output = ModelOutput.from_content(model="mockllm/model", content=text)
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # no tokenizer download (offline)
    return output


def _inspect_run(data: Path, folder: Path, limit: int, **task_args: int) -> Path:
    """One inspect_ai log of levante_trog's first `limit` samples on the prepared real sample, answered by
    `_answer`; its folder."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    os.environ["LEVANTE_DATA_DIR"] = str(data)
    try:
        (log,) = inspect_eval("levante_tasks/levante_trog", model=get_model("mockllm/model", custom_outputs=_answer),
                              task_args=task_args, limit=limit, log_dir=str(folder),
                              display="none")
    finally:
        del os.environ["LEVANTE_DATA_DIR"]
    assert log.status == "success", log.error
    return folder


@pytest.fixture(scope="module")
def orders_logs(real_sample_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _inspect_run(real_sample_data, tmp_path_factory.mktemp("inspect-orders") / "logs", ORDERS * ITEMS,
                        orders=ORDERS)


@pytest.fixture(scope="module")
def compared_logs(orders_logs: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    tmp = tmp_path_factory.mktemp("compare-inspect")
    return compare(tmp, trog_trials(), orders_logs, n_boot=100)


def _log_records(folder: Path) -> list[dict]:
    from inspect_ai.log import read_eval_log

    (path,) = folder.glob("*.eval")
    return [s.scores["levante_record"].metadata[RECORD_KEY] for s in read_eval_log(str(path)).samples]


def _as_lmms_runs(records: list[dict], model: str, root: Path) -> Path:
    """The same records as lmms-eval would write them for seeds 0 .. K-1: a run folder per seed, its samples file
    and a results file naming `model`."""
    for seed in range(ORDERS):
        run = root / f"seed{seed}"
        run.mkdir(parents=True)
        (run / "20260101_000000_results.json").write_text(json.dumps({"model_name": model}))
        lines = [json.dumps({"doc_id": k, RECORD_KEY: r}) for k, r in enumerate(records) if r["seed"] == seed]
        name = "levante_trog" + (f"_seed{seed}" if seed else "")
        (run / f"20260101_000000_samples_{name}.jsonl").write_text("\n".join(lines) + "\n")
    return root


def test_an_orders_log_gives_the_orders_row_of_the_same_records_as_lmms_eval_seeds(
    orders_logs: Path, compared_logs: tuple[Path, dict], tmp_path: Path
) -> None:
    out, summary = compared_logs
    (unit,) = compared(summary)["orders"]
    assert unit == "model @ unknown (inspect_ai:mockllm/model)/original/gen/orders"
    kl = compared(summary)["orders"][unit]["kl"]
    assert (kl["replicates"], kl["replicates_min"], kl["replicates_max"], kl["n_items"]) == (ORDERS, 4, 4, ITEMS)
    assert 0 < kl["unparsed_share"] < 0.2
    assert sorted(m for m in compared(summary)["models"] if "/seed" in m) == [
        f"model @ unknown (inspect_ai:mockllm/model)/original/gen/seed{k}" for k in range(ORDERS)]

    lmms = _as_lmms_runs(_log_records(orders_logs), unit.removesuffix("/original/gen/orders"), tmp_path / "lmms")
    same, same_summary = compare(tmp_path, trog_trials(), lmms, n_boot=100)
    assert compared(same_summary)["orders"][unit]["kl"] == kl
    for table in ("kl_orders.csv", "kl_summary.csv", "kl_items.csv", "kl_bins.csv", "model_theta.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(out / table), pd.read_csv(same / table), obj=table)


def test_a_plain_log_gives_its_seed_unit_and_no_orders_row(
    real_sample_data: Path, orders_logs: Path, tmp_path: Path
) -> None:
    plain = _inspect_run(real_sample_data, tmp_path / "logs", ITEMS, seed=1)
    out, summary = compare(tmp_path, trog_trials(), plain)
    assert "orders" not in compared(summary)
    assert list(compared(summary)["models"]) == ["model @ unknown (inspect_ai:mockllm/model)/original/gen/seed1"]
    seed1 = [r for r in _log_records(orders_logs) if r["seed"] == 1]
    assert sorted(map(json.dumps, _log_records(plain))) == sorted(map(json.dumps, seed1))  # the same replicate


def _truncated(log_path: Path) -> str:
    """Cut the log in half; the line every reader gives."""
    log_path.write_bytes(log_path.read_bytes()[: log_path.stat().st_size // 2])
    return "not a readable inspect_ai .eval log"


@pytest.mark.parametrize("damage", ["replicate dropped", "truncated"])
def test_a_damaged_or_unreadable_log_is_the_line_summarize_gives(
    orders_logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log

    (path,) = orders_logs.glob("*.eval")
    folder = tmp_path / "damaged"
    folder.mkdir()
    if damage == "truncated":
        (folder / path.name).write_bytes(path.read_bytes())
        expected = _truncated(folder / path.name)
    else:
        log = read_eval_log(str(path))
        expected = _drop_seed3_of_first_item(log)
        write_eval_log(log, str(folder / path.name))
    assert main(["summarize", str(folder), "--out", str(tmp_path / "summary")]) == 2
    line = capsys.readouterr().err.splitlines()[0]
    assert line.startswith(f"levante-tasks: error: damaged/{path.name}: {expected}"), line
    trials = tmp_path / "trials.csv"
    trog_trials().to_csv(trials, index=False)
    args = ["compare", "--irt", f"trog={irt_fixture_dir() / 'trog_rasch_f1_scalar.rds'}", "--trials", str(trials),
            "--runs", str(irt_fixture_dir() / "runs.csv"), "--models", str(folder), "--out", str(tmp_path / "out")]
    assert main(args) == 2
    assert capsys.readouterr().err.splitlines() == [line]
    assert not (tmp_path / "out").exists()


def test_a_log_of_another_task_is_counted_and_read_no_further(orders_logs: Path, tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log

    (path,) = orders_logs.glob("*.eval")
    log = read_eval_log(str(path))
    log.eval.metadata = {}  # what a task that is not LEVANTE's writes
    write_eval_log(log, str(tmp_path / "other.eval"))
    (tmp_path / path.name).write_bytes(path.read_bytes())
    records, replicates, counts = read_model_records(tmp_path)
    assert counts["logs_of_other_tasks"] == 1
    assert len(replicates) == ORDERS * ITEMS and len(records) == ORDERS * ITEMS
