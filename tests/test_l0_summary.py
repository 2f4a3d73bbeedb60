"""The L0 part of `levante-tasks summarize`: a per-bin table and plot, dropped programs counted, empty bins named."""

from __future__ import annotations

import json
from pathlib import Path

from levante_tasks.summary.cli import summarize_runs

NAN = float("nan")
EMPTY_BINS = (3, 5)


def _row(bin_number: int) -> dict[str, object]:
    """Bins 3 and 5 lost every program, bin 1 kept 2 of 20 (10% empty answers under profile upstream)."""
    dropped = 20 if bin_number in EMPTY_BINS else 18 if bin_number == 1 else 0
    acc = NAN if bin_number in EMPTY_BINS else bin_number / 10
    return {"alias": f"l0_trace_bin{bin_number}", "l0_trace_acc,none": acc, "l0_trace_acc_stderr,none": "N/A",
            "l0_steps,none": NAN if bin_number in EMPTY_BINS else 12.5, "l0_maj_at_5_acc,none": acc,
            "l0_pass_at_5,none": acc, "l0_programs,none": 20, "l0_programs_dropped,none": dropped}


def _results_file(folder: Path, bins: range = range(1, 8), profile: str = "upstream") -> None:
    results = {f"l0_trace_bin{b}": _row(b) for b in bins}
    results["l0_trace_paper"] = {"alias": "l0_trace_paper", "l0_trace_acc,none": NAN, "l0_steps,none": NAN}
    paper = {"split": "paper", "comparable_with_paper": profile == "upstream"}
    configs = {f"l0_trace_bin{b}": {"task": f"l0_trace_bin{b}", "metadata": {
                   "version": 1.0, "l0": {"bin": b, "profile": profile, **(paper if b in (1, 3, 5, 7) else {})}}}
               for b in bins}
    document = {"results": results, "groups": {"l0_trace_paper": results["l0_trace_paper"]},
                "group_subtasks": {"l0_trace_paper": [f"l0_trace_bin{b}" for b in (1, 3, 5, 7)]},
                "configs": configs, "config": {"model": "dummy", "model_args": ""}, "n-samples": {}}
    folder.mkdir(parents=True)
    (folder / "20260101_000000_results.json").write_text(json.dumps(document), encoding="utf-8")


def test_an_l0_run_gets_a_bin_table_and_plot_naming_dropped_programs_and_empty_bins(tmp_path: Path) -> None:
    _results_file(tmp_path / "runs" / "model")
    document = summarize_runs([tmp_path / "runs"], tmp_path / "out")
    text = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    table = text[text.index("## L0-Bench by trace-length bin"):]
    assert "![L0 accuracy by bin](l0_bins.png)" in table and "(profile upstream, prompt default)" in table
    assert "fewer than 30 scored" in table and "more than 10% dropped" in table  # the threshold is stated
    lines = {line.split(" | ")[0]: line for line in table.splitlines() if line.startswith("| ")}
    assert lines["| 1*"].startswith("| 1* | 2/20 | 0.100 | 12.5 |") and "rests on 2 of 20 programs" in lines["| 1*"]
    assert "| 3* | 0/20 | n/a |" in lines["| 3*"] and "no program scored (20 dropped)" in lines["| 3*"]
    assert lines["| 2"].startswith("| 2 | 20/20 | 0.200 |")  # not a paper split: no star
    assert "n/a: bins 3, 5 have no scored program" in lines["| paper (1, 3, 5, 7)"]
    assert "not comparable" not in lines["| paper (1, 3, 5, 7)"]
    (section,) = document["l0"]
    assert [r["scored"] for r in section["bins"]] == [2, 20, 0, 20, 0, 20, 20]
    assert section["paper"]["empty"] == [3, 5] and section["paper"]["acc"] is None  # NaN is null in matrix.json
    assert "NaN" not in (tmp_path / "out" / "matrix.json").read_text(encoding="utf-8")
    assert (tmp_path / "out" / "l0_bins.png").read_bytes().startswith(b"\x89PNG")
    assert not (tmp_path / "out" / "heatmap.png").exists()  # no LEVANTE cell: no heatmap


def test_a_paper_row_missing_a_bin_names_it(tmp_path: Path) -> None:
    _results_file(tmp_path / "runs" / "model", bins=range(1, 4))
    document = summarize_runs([tmp_path / "runs"], tmp_path / "out", plot=False)
    assert document["l0"][0]["paper"]["empty"] == [3, 5, 7]
    assert not (tmp_path / "out" / "l0_bins.png").exists()


def test_a_paper_row_from_default_profile_data_says_it_is_not_comparable(tmp_path: Path) -> None:
    _results_file(tmp_path / "runs" / "model", profile="default")
    summarize_runs([tmp_path / "runs"], tmp_path / "out", plot=False)
    text = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    (paper,) = [line for line in text.splitlines() if line.startswith("| paper (1, 3, 5, 7)")]
    assert "not comparable with L0-Bench's table" in paper
