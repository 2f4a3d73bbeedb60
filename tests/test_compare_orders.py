"""Order replicates in the comparison (compare.order_units): a model asked every trog item under 8 option-order
seeds, drawn from a known q, gets an orders row whose interval holds the exact KL(p || q), the K/4, K/2, K table,
and a white-box model's per-seed softmax KLs beside its orders row."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from compare_inputs import canonical, compare, compared, exclusions, replicate_q, replicate_samples, trog_trials

from levante_tasks.compare.records import read_model_records
from levante_tasks.errors import LevanteError

CHAT, WHITE, SIX = "org/chat/original/gen/orders", "org/white/original/gen/orders", "org/six/original/gen/orders"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """One comparison: a chat model and a white-box model (option scores) under 8 seeds, a third under 6."""
    tmp = tmp_path_factory.mktemp("orders")
    replicate_samples(tmp / "models" / "chat", seeds=8)
    replicate_samples(tmp / "models" / "white", seeds=8, model="org/white", scores=True)
    replicate_samples(tmp / "models" / "six", seeds=6, model="org/six")
    return compare(tmp, trog_trials(), tmp / "models", n_boot=200)


def exact_kl(out: Path) -> float:
    """KL(p || q) with the known q, weighted by the cells' children (from human_distributions.csv)."""
    dist = pd.read_csv(out / "human_distributions.csv")
    rank = {uid: r for r, uid in enumerate(sorted(canonical(trog_trials())))}
    q = np.array([replicate_q(rank[u])[k] for u, k in zip(dist["item_uid"], dist["option_index"], strict=True)])
    p = dist["p"].to_numpy(float)
    term = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0) / q), 0.0)
    cells = dist.assign(term=term).groupby(["item_uid", "bin_low"]).agg(kl=("term", "sum"), n=("n_bin", "first"))
    return float((cells["kl"] * cells["n"]).sum() / cells["n"].sum())


def test_eight_seeds_give_an_orders_row_whose_interval_holds_the_exact_kl(run) -> None:
    out, summary = run
    kl = compared(summary)["orders"][CHAT]["kl"]
    assert (kl["replicates"], kl["replicates_min"], kl["replicates_max"], kl["n_items"]) == (8, 8, 8, 99)
    assert kl["kl_ci_low"] <= exact_kl(out) <= kl["kl_ci_high"]
    assert kl["kl_replicate_halfwidth"] > 0 and kl["unparsed_share"] == 0 and kl["prior_alpha"] == 0.5
    assert kl["uniform_test_family_size"] == 1 and "better_than_uniform" in kl  # Holm over the orders unit's tests
    assert "beta" not in kl  # q is a distribution: nothing fitted
    assert summary["settings"]["orders_prior_alpha"] == 0.5
    assert "Jeffreys" in summary["conventions"]["order_replicates"]
    table = pd.read_csv(out / "kl_summary.csv").set_index("model")
    assert table.loc[CHAT, "kl_ci_low"] == pytest.approx(kl["kl_ci_low"])
    assert np.isnan(table.loc[CHAT, "beta"]) and table.loc["org/white/original/gen/seed0", "beta"] > 0
    assert CHAT in set(pd.read_csv(out / "kl_items.csv")["model"])
    assert CHAT in set(pd.read_csv(out / "kl_bins.csv")["model"])
    report = (out / "comparison.md").read_text()
    assert f"| {CHAT} | 99 | 8 (8-8) |" in report


def test_the_readout_at_k_over_4_k_over_2_and_k(run) -> None:
    out, summary = run
    readout = pd.read_csv(out / "kl_orders.csv")
    chat = readout[readout["model"] == CHAT]
    assert chat["orders"].tolist() == [2, 4, 8]
    assert chat["n_items"].tolist() == [0, 99, 99]  # 2 seeds hold no whole block of 4 options
    assert chat["kl"].iloc[-1] == pytest.approx(compared(summary)["orders"][CHAT]["kl"]["mean_kl"])
    six = compared(summary)["orders"][SIX]
    assert [r["orders"] for r in six["by_orders"]] == [1, 3, 6]
    assert (six["kl"]["replicates"], six["kl"]["replicates_min"], six["kl"]["replicates_max"]) == (6, 4, 4)
    assert exclusions(summary, SIX)["replicate_records_outside_whole_blocks"] == 2 * 99  # seeds 4, 5
    assert six["kl"]["orders_enough"] is None and six["kl"]["orders_tolerance"] == 0.02
    assert "How many orders are enough" in (out / "comparison.md").read_text()


def test_a_white_box_model_shows_both_estimates(run) -> None:
    out, summary = run
    white = compared(summary)["orders"][WHITE]
    assert sorted(white["per_seed_softmax_kl"]) == [f"org/white/original/gen/seed{k}" for k in range(8)]
    assert compared(summary)["orders"][CHAT]["per_seed_softmax_kl"] == {}
    seed0 = compared(summary)["models"]["org/white/original/gen/seed0"]["kl"]["mean_kl"]
    assert white["per_seed_softmax_kl"]["org/white/original/gen/seed0"] == seed0
    row = next(line for line in (out / "comparison.md").read_text().splitlines() if f"| {WHITE} |" in line)
    assert "(8 seeds)" in row


def test_one_seed_per_unit_adds_nothing(tmp_path: Path) -> None:
    replicate_samples(tmp_path / "models", seeds=1)
    out, summary = compare(tmp_path, trog_trials(), tmp_path / "models")
    assert "orders" not in compared(summary) and "order_replicates" not in summary["conventions"]
    assert "orders_tolerance" not in summary["settings"] and not (out / "kl_orders.csv").exists()
    assert "option-order replicates" not in (out / "comparison.md").read_text()


def test_replicate_records_keep_every_run_of_a_seed_and_refuse_a_foreign_choice(tmp_path: Path) -> None:
    replicate_samples(tmp_path / "a", seeds=2)
    replicate_samples(tmp_path / "b", seeds=1)  # a second run of seed 0
    line = json.loads((tmp_path / "a" / "seed1" / "20260101_000000_samples_levante_trog_seed1.jsonl")
                      .read_text().splitlines()[0])
    line["levante_item"]["choice_index"] = None  # unparsed
    path = tmp_path / "a" / "seed1" / "20260101_000000_samples_levante_trog_seed1.jsonl"
    path.write_text("\n".join([json.dumps(line), *path.read_text().splitlines()[1:]]) + "\n")
    records, replicates, counts = read_model_records(tmp_path)
    assert counts["duplicate_records_dropped"] == 99 and len(records) == 2 * 99
    assert len(replicates) == 3 * 99 and set(replicates["orders_unit"]) == {CHAT}
    assert replicates["choice_index"].isna().sum() == 1
    line["levante_item"]["choice_index"] = 4
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(LevanteError, match=r"seed1\.jsonl:1: choice_index 4 is not one of the record's 4 options"):
        read_model_records(tmp_path)


def test_orders_tolerance_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from levante_tasks.cli import main
    from levante_tasks.compare import pipeline

    given = []
    monkeypatch.setattr(pipeline, "run_compare", lambda *args, **kwargs: given.append(args[5]) or {"tasks": {}})
    base = ["compare", "--irt", "x.rds", "--trials", "t.csv", "--runs", "r.csv", "--models", "m", "--out", "o"]
    assert main([*base, "--orders-tolerance", "0.05"]) == 0
    assert given[0].orders_tolerance == 0.05
    assert main([*base, "--orders-tolerance", "0"]) == 2
    assert capsys.readouterr().err.strip().endswith("--orders-tolerance must be a number > 0 (nats)")
