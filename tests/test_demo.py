"""`levante-tasks demo` (what `make demo` runs): the whole pipeline on the synthetic release, its lmms-eval step
as a one-cell matrix; a second demo keeps the finished cell instead of refusing or rerunning it.

The first demo is the command as README runs it (its own process; the lmms-eval step a new interpreter). The second
runs in this process with the matrix's end step left out (it returns the first run's matrix.json): what it checks
is that the demo writes the same release, data and config again and resumes, keeping the cell; the end step over
an earlier matrix is the matrix tests' (the comparison plots and summary not made twice)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from faults import run_cli

from levante_tasks import cli
from levante_tasks.cards.croissant import check_card
from levante_tasks.filehash import sha256_file
from levante_tasks.matrix import report as matrix_report
from levante_tasks.schema.layout import CARD_FILE
from levante_tasks.schema.tasks import TASKS

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_demo_output() -> list[str]:
    """The output lines README.md shows under `$ make demo` (its `...` elisions left out)."""
    block = README.read_text(encoding="utf-8").split("$ make demo\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() != "..."]


def steady(text: str) -> str:
    """Text less what changes from run to run or with the task registry: a cell's hash, its wall time, and the
    synthetic release's row and file counts (a new task adds rows and files; its table rows are elided)."""
    for pattern, mask in ((r"__[0-9a-f]{12}\b", "__<hash>"), (r"\b\d+ s\)", "<n> s)"),
                          (r"\b\d+ manifest rows\b", "<n> manifest rows"), (r"fetched \d+ file", "fetched <n> file")):
        text = re.sub(pattern, mask, text)
    return text


def test_demo_runs_its_lmms_eval_step_through_the_matrix_runner_and_resumes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    first = run_cli(["demo", "--out", "demo-out"], cwd=tmp_path, timeout=600)
    assert first.returncode == 0, first.stdout + first.stderr
    out = tmp_path / "demo-out"
    for step in range(1, 6):
        assert f"[{step}/5]" in first.stdout
    assert "tiny-clip__levante__s0__" in first.stdout and ": done (batch size 16" in first.stdout
    assert "levante_trog " in first.stdout  # the accuracy table of the cell's results
    shown = readme_demo_output()
    assert len(shown) > 5 and [line for line in shown if steady(line) not in steady(first.stdout)] == []
    document = json.loads((out / "matrix" / "matrix.json").read_text(encoding="utf-8"))
    [cell] = document["cells"]
    assert (cell["model"], cell["task"], cell["seed"], cell["status"]) == ("tiny-clip", "levante", 0, "done")
    assert document["groups"]["all"]["problems"] == []
    summary = json.loads((out / "matrix" / "summary" / "all" / "matrix.json").read_text(encoding="utf-8"))
    assert len({c["family"] for c in summary["cells"] if not c["parent"]}) == len(TASKS)  # every LEVANTE task
    comparison = json.loads((out / "matrix" / "comparison" / "all" / "comparison.json").read_text(encoding="utf-8"))
    assert len(comparison["tasks"]) == len(TASKS)
    report = (out / "matrix" / "report.md").read_text(encoding="utf-8")
    assert "comparison/all/comparison.md" in report
    leaks = [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl",
             ".md", ".log") and str(tmp_path) in p.read_text(encoding="utf-8", errors="replace")]
    assert leaks == []  # lmms-eval's results record its argv: the runner passes no absolute path
    # synthetic data and the random-init test model are said in summary.md and report.md; one model label
    text = (out / "matrix" / "summary" / "all" / "summary.md").read_text(encoding="utf-8")
    [model] = summary["models"]
    label = f"{model['model']} @ {model['revision'][:12]} ({model['adapter']})"
    assert model["test_model"] and label == "tiny-clip @ unknown (levante_clip)"
    for page in (text, report):
        assert "SYNTHETIC DATA (all cells)" in page and "TEST MODEL (random-init" in page and label in page
    # the comparison names the model alike and knows it for a test model from the run, as the summary does
    compared = (out / "matrix" / "comparison" / "all" / "comparison.md").read_text(encoding="utf-8")
    assert f"| {label}/original/gen/seed0 (random-init test model) |" in compared
    assert comparison["data"]["test_models"] and all(u.startswith(label) for u in comparison["data"]["test_models"])
    assert f"| {label} | levante | 0 | done |" in report and document["cells"][0]["model_label"] == label
    pooled = [c for c in summary["cells"] if c["variant"] == "original" and not c["parent"]]
    [overall] = summary["overall"]
    pooled_accuracy = sum(c["n_correct"] for c in pooled) / sum(c["n_responses"] for c in pooled)
    assert overall["accuracy"] == pytest.approx(pooled_accuracy)

    # the matrix's results card validates down to its records and points to the demo's data card by sha256
    assert check_card(out / "matrix" / CARD_FILE).records == {"results_all": len(summary["cells"]), "data_cards": 1}
    card = json.loads((out / "matrix" / CARD_FILE).read_text(encoding="utf-8"))
    [cards] = [rs["data"] for rs in card["recordSet"] if rs["@id"] == "data_cards"]
    assert cards == [{"data_cards/data_version": "synthetic", "data_cards/card": f"synthetic/{CARD_FILE}",
                      "data_cards/sha256": sha256_file(out / "data" / "synthetic" / CARD_FILE)}]

    checked = run_cli(["verify", "demo-out/matrix/cells", "--data-dir", "demo-out/data"], cwd=tmp_path, timeout=600)
    assert checked.returncode == 0 and "no mismatches" in checked.stdout, checked.stdout + checked.stderr

    monkeypatch.setattr(matrix_report, "write_report", lambda run, echo=print: document)  # the first run's (above)
    monkeypatch.chdir(tmp_path)
    status = cli.main(["demo", "--out", "demo-out"])
    second = capsys.readouterr()
    assert status == 0, second.out + second.err
    assert "kept (finished earlier)" in second.out
    assert list((out / "matrix" / "cells" / "all").iterdir()) == [out / "matrix" / cell["dir"]]
