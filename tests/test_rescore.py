"""`verify` re-parses saved responses and `rescore` re-scores saved runs, on real lmms-eval output and a real
inspect_ai log: a record flipped without its response is found; an unchanged parser reproduces every record byte
for byte; records of an older parser are re-read, reported and summarized; the inputs are never touched."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from summary_runs import copy_runs, real_runs, results_file

from levante_tasks.cli import main
from levante_tasks.schema.records import RECORD_KEY


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return real_runs(tmp_path_factory)


def _stderr(values: list[float]) -> float:
    """Sample SD / sqrt(n) (what lmms-eval reports for a mean), computed here independently."""
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))


def _edit_samples(folder: Path, task: str, change) -> Path:
    """Apply `change(lines)` to the parsed lines of a samples file and write them back as lmms-eval does."""
    (path,) = folder.glob(f"*_samples_{task}.jsonl")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    change(lines)
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


def _flip_a_wrong_item(folder: Path, task: str) -> int:
    """Make one wrong item correct in its record, its line metrics and results.json; the response stays. Returns
    the line number."""
    flipped = {}

    def flip(lines: list[dict]) -> None:
        number, line = next((i, line) for i, line in enumerate(lines) if line[RECORD_KEY]["correct"] == 0
                            and line[RECORD_KEY]["choice_letter"] is not None)
        record = line[RECORD_KEY]
        record.update(choice_letter=line["target"], choice_index=0, correct=1)
        line["levante_acc"] = 1.0
        flipped["number"], flipped["acc"] = number + 1, [float(x[RECORD_KEY]["correct"]) for x in lines]

    _edit_samples(folder, task, flip)
    path = results_file(folder)
    data = json.loads(path.read_text(encoding="utf-8"))
    acc = flipped["acc"]
    row = data["results"][task]
    row["levante_acc,none"] = row["levante_item,none"] = sum(acc) / len(acc)
    row["levante_acc_stderr,none"] = row["levante_acc_stderr_clt,none"] = _stderr(acc)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return flipped["number"]


def test_verify_finds_a_record_flipped_to_correct_whose_response_says_otherwise(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    number = _flip_a_wrong_item(runs / "fixed", "levante_vocab")
    assert main(["verify", str(runs / "fixed"), "--skip-installation"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err
    assert f"levante_vocab: line {number}: record says " in err[0] and "re-parses to 'B' by lone_letter" in err[0]
