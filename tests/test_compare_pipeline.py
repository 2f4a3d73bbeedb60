"""`levante-tasks compare` end to end on the IRT fixture, model-record readers, and counted exclusions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from compare_inputs import canonical, compared, trog_trials, write_items
from shared_paths import irt_fixture_dir

from levante_tasks.cli import main
from levante_tasks.compare.humans import parse_distractors
from levante_tasks.compare.records import read_records
from levante_tasks.compare.report import p_value_text
from levante_tasks.runs.model import model_label


def trog_inputs(tmp_path: Path) -> tuple[Path, Path]:
    """A trog-only trials CSV (one response made unmatchable) and simulated model records."""
    trials = pd.read_csv(irt_fixture_dir() / "trials.csv", dtype=str)
    trials = trials[trials["task_id"] == "trog"].copy()
    trials.iloc[0, trials.columns.get_loc("response")] = "no-such-option"
    trials_path = tmp_path / "trials.csv"
    trials.to_csv(trials_path, index=False)
    params = pd.read_csv(irt_fixture_dir() / "true_item_params.csv")
    trog = params[params["task"] == "trog"]
    rng = np.random.default_rng(0)
    rows = []
    for uid, b in zip(trog["item_uid"], trog["b"], strict=True):
        rows.append(
            {
                "model": "aligned",
                "task": "trog",
                "item_uid": uid,
                "correct": int(b < 0),
                "option_scores": json.dumps([2.0, 0.5, 0.0, -0.5]),
            }
        )
        rows.append(
            {
                "model": "noise",
                "task": "trog",
                "item_uid": uid,
                "correct": int(rng.random() < 0.5),
                "option_scores": ";".join(str(v) for v in rng.normal(0, 1, 4)),
            }
        )
    rows.append(
        {
            "model": "aligned",
            "task": "trog",
            "item_uid": "trog_not_an_item",
            "correct": 1,
            "option_scores": "",
        }
    )
    rows.append(
        {"model": "aligned", "task": "vocab", "item_uid": "vocab__acorn", "correct": 1, "option_scores": ""}
    )
    records = tmp_path / "records.csv"
    pd.DataFrame(rows).to_csv(records, index=False)
    return trials_path, records


def run_cli(tmp_path: Path, trials: Path, records: Path, *extra: str) -> int:
    """Run the compare subcommand on the trog fixture with a small bootstrap and its canonical options."""
    folder = irt_fixture_dir()
    items = write_items(canonical(trog_trials()), tmp_path / "items.csv")
    return main(
        [
            "compare",
            "--irt",
            str(folder / "trog_rasch_f1_scalar.rds"),
            "--trials",
            str(trials),
            "--runs",
            str(folder / "runs.csv"),
            "--models",
            str(records),
            "--out",
            str(tmp_path / "out"),
            "--items",
            str(items),
            "--n-boot",
            "100",
            "--n-perm",
            "200",
            *extra,
        ]
    )


def test_compare_end_to_end(tmp_path: Path) -> None:
    trials, records = trog_inputs(tmp_path)
    assert run_cli(tmp_path, trials, records) == 0
    out = tmp_path / "out"
    diff = pd.read_csv(out / "difficulty.csv").set_index("model")
    assert diff.loc["aligned", "pearson_r"] < -0.5 and diff.loc["aligned", "pearson_ci_high"] < 0
    assert diff["sign"].str.contains("NEGATIVE r").all()
    assert diff["b_definition"].str.contains("higher b = harder").all()
    theta = pd.read_csv(out / "model_theta.csv")
    assert set(theta["estimator"]) == {"EAP", "ML"}  # one EAP row per group prior, one ML row (no prior)
    theta = theta[theta["estimator"] == "EAP"]
    assert set(theta["group"]) == {"ca_pilot", "co_pilot"}
    assert theta.loc[theta["is_reference"], "group"].unique().tolist() == ["ca_pilot"]
    kl = pd.read_csv(out / "kl_summary.csv").set_index("model")
    assert (kl["beta"].between(0.025, 40)).all() and kl["closest_bin"].notna().all()
    bins = pd.read_csv(out / "kl_bins.csv")
    assert {"mean_kl", "n_children", "mean_child_age"} <= set(bins.columns)
    age = pd.read_csv(out / "age_equivalence.csv")
    numeric = age["age_ci_low"].notna() & age["age_ci_high"].notna()
    assert (age.loc[numeric, "age_ci_low"] <= age.loc[numeric, "age_ci_high"]).all()
    assert age.loc[age["age_ci_low"].isna(), "age_ci_low_flag"].eq("below_youngest").all()  # never a snapped age
    summary = json.loads((out / "comparison.json").read_text())
    assert "NEGATIVE" in summary["conventions"]["correlation_sign"].upper()
    assert "Fisher z" in summary["conventions"]["correlation_ci"]
    assert "n_boot_valid" not in diff.columns  # no item bootstrap
    assert "Spearman: Fisher z" in (out / "comparison.md").read_text()
    assert compared(summary)["calibration_rescore_max_abs_diff"]["ability"] < 1e-6
    excl = {(e["model"], e["reason"]): e["count"] for e in summary["exclusions"]}
    assert excl[("aligned", "model_items_not_in_irt")] == 1
    assert excl[("", "records_task_without_irt_model")] == 1
    assert excl[("", "trials_response_unmatched")] == 1
    pngs = sorted((out / "plots").glob("*.png"))
    assert len(pngs) == 4 and all(p.stat().st_size > 1000 for p in pngs)  # three plots and theta by age
    report = (out / "comparison.md").read_text()
    assert "negative = child-aligned" in report and "| aligned |" in report
    for unit, res in compared(summary)["models"].items():  # each p as the JSON says, never rounded to 0
        p, holm = res["kl"].get("uniform_test_p"), res["kl"].get("uniform_test_p_holm")
        if p is not None:
            row = report.split(f"| {unit} |", 1)[1].split("\n", 1)[0]
            assert p > 0 and f"({p_value_text(p)}; {p_value_text(holm)}) |" in row
            assert res["kl"]["uniform_test_family_size"] == 1 and holm == p  # one task: the family is one test
    for path in out.rglob("*"):
        if path.suffix in (".csv", ".json", ".md"):
            assert str(tmp_path) not in path.read_text(), path.name


def test_empty_bins_are_counted_not_fatal(tmp_path: Path) -> None:
    trials, records = trog_inputs(tmp_path)
    assert run_cli(tmp_path, trials, records, "--min-n", "100000", "--no-plots") == 0
    summary = json.loads((tmp_path / "out" / "comparison.json").read_text())
    assert compared(summary)["n_item_bins"] == 0
    assert "no children's" in compared(summary)["models"]["aligned"]["kl"]["note"]
    assert any(e["reason"] == "item_bins_below_min_n" and e["count"] > 100 for e in summary["exclusions"])


def test_cli_freezes_the_imports_only_while_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI keeps the objects alive before the run out of the collector's full collections during the run
    (a speed-up) and gives them back afterwards, also when the run fails."""
    import gc

    from levante_tasks.compare import pipeline

    trials, records = trog_inputs(tmp_path)
    real, frozen = pipeline.run_compare, []

    def watched(*args, **kwargs):
        frozen.append(gc.get_freeze_count())
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "run_compare", watched)
    assert run_cli(tmp_path, trials, records, "--no-plots") == 0
    assert frozen[0] > 1000 and gc.get_freeze_count() == 0
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"run_id": ["r"], "item_uid": ["x"]}).to_csv(bad, index=False)
    assert run_cli(tmp_path, bad, records) == 2
    assert frozen[1] > 1000 and gc.get_freeze_count() == 0


def test_bad_trials_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, records = trog_inputs(tmp_path)
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"run_id": ["r"], "item_uid": ["x"]}).to_csv(bad, index=False)
    assert run_cli(tmp_path, bad, records) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "bad.csv" in err and "distractors" in err


def test_lmms_eval_samples_folder(tmp_path: Path) -> None:
    folder = tmp_path / "org__model-x"
    folder.mkdir()
    (folder / "20260101_120000_results.json").write_text(json.dumps({"model_name": "org/model-x"}))
    lines = [
        {
            "doc_id": 0,
            "levante_item": {
                "item_uid": "trog_a",
                "task": "trog",
                "correct": 1,
                "option_scores": [0.1, -1.0],
                "presented_order": [1, 0],
            },
        },
        {
            "doc_id": 1,
            "levante_item": {"item_uid": "trog_b", "task": "trog", "correct": 0, "option_scores": None},
        },
        {"doc_id": 2, "other_metric": 1},
    ]
    (folder / "20260101_120000_samples_levante_trog.jsonl").write_text(
        "\n".join(json.dumps(x) for x in lines)
    )
    table, counts = read_records(tmp_path)
    assert table["model"].unique().tolist() == ["org/model-x/levante_trog"]
    assert table.set_index("item_uid").loc["trog_a", "option_scores"] == [0.1, -1.0]
    assert table.set_index("item_uid").loc["trog_b", "option_scores"] is None
    assert counts["lines_without_levante_item"] == 1
    # `only` (a matrix's finished cells): another folder's samples, e.g. an unfinished cell's partial output, unread
    partial = tmp_path / "unfinished"
    partial.mkdir()
    (partial / "20260101_130000_samples_levante_trog.jsonl").write_text(json.dumps(
        {"doc_id": 0, "levante_item": {"item_uid": "trog_c", "task": "trog", "correct": 1}}) + "\n")
    assert sorted(read_records(tmp_path)[0]["item_uid"]) == ["trog_a", "trog_b", "trog_c"]
    assert sorted(read_records(tmp_path, only=[folder])[0]["item_uid"]) == ["trog_a", "trog_b"]


def test_parse_distractors_forms() -> None:
    assert parse_distractors("{'0': 'coconut', '2': 'clothesline', '1': 'key'}") == [
        "coconut",
        "key",
        "clothesline",
    ]
    assert parse_distractors("1-fork, 1-boy,1-tree") == ["1-fork", "1-boy", "1-tree"]
    assert parse_distractors("NA") == [] and parse_distractors(float("nan")) == []


def test_samples_of_math_subtasks_pool_into_one_unit_without_paths(tmp_path) -> None:
    """Records from several subtask files of one run form one scoring unit; a local model path is not a name."""
    import json

    from levante_tasks.compare.records import read_records

    run = tmp_path / "run"
    run.mkdir()
    (run / "20260101_000000_results.json").write_text(json.dumps(
        {"model_name": "/home/someone/ckpt/tiny-clip", "model_name_sanitized": "ckpt__tiny-clip"}))
    for subtask, uid in (("addition", "math_add_1_1"), ("subtraction", "math_subtract_2_1")):
        for output_type, suffix in (("generate_until", ""), ("multiple_choice", "_mc")):
            record = {"item_uid": uid, "task": "egma-math", "seed": 0, "variant": "original",
                      "output_type": output_type, "correct": 1, "option_scores": [0.5, 0.1]}
            name = f"20260101_000000_samples_levante_egma_math_{subtask}{suffix}.jsonl"
            (run / name).write_text(json.dumps({"doc_id": 0, "levante_item": record}) + "\n")
    table, counts = read_records(run)
    units = sorted(table["model"].unique())
    assert units == ["tiny-clip/original/gen/seed0", "tiny-clip/original/mc/seed0"]
    assert len(table) == 4 and counts["duplicate_records_dropped"] == 0
    assert not any("/home/" in name for name in table["model"])
    # a full lmms-eval results.json: the model's label is summary.md's (runs.model.model_label)
    (run / "20260101_000000_results.json").write_text(json.dumps({
        "model_name": "/home/someone/ckpt/tiny-clip", "config": {
            "model": "levante_clip", "model_args": f"pretrained=/home/someone/ckpt/tiny-clip,revision={'a' * 40}"}}))
    label = model_label({"model": "tiny-clip", "revision": "a" * 40, "adapter": "levante_clip"})
    assert sorted(read_records(run)[0]["model"].unique()) == [f"{label}/original/gen/seed0",
                                                              f"{label}/original/mc/seed0"]


def mrot_records(tmp_path: Path, task: str = "mental-rotation") -> Path:
    """The trog records of `trog_inputs` plus a model's answers to every mental-rotation item of the fixture
    (its `task` column spelled `task`)."""
    _, records = trog_inputs(tmp_path)
    params = pd.read_csv(irt_fixture_dir() / "true_item_params.csv")
    mrot = params[params["task"] == "mental-rotation"]
    rows = [{"model": "aligned", "task": task, "item_uid": uid, "correct": int(b < 0),
             "option_scores": ""} for uid, b in zip(mrot["item_uid"], mrot["b"], strict=True)]
    pd.concat([pd.read_csv(records), pd.DataFrame(rows)]).to_csv(records, index=False)
    return records


def compare_cli(tmp_path: Path, records: Path, *irt: str) -> int:
    """`levante-tasks compare` on the whole fixture (trog and mental-rotation children) with these `--irt`s."""
    folder = irt_fixture_dir()
    return main(["compare", *(arg for value in irt for arg in ("--irt", value)), "--trials",
                 str(folder / "trials.csv"), "--runs", str(folder / "runs.csv"), "--models", str(records),
                 "--out", str(tmp_path / "out"), "--n-boot", "20", "--n-perm", "20", "--no-plots"])


@pytest.mark.parametrize(("spelling", "records_task"), [("mrot", "mental-rotation"),
                                                        ("mental-rotation", "mental-rotation"),
                                                        ("levante_mental_rotation", "mental-rotation"),
                                                        ("MROT", "mental-rotation"), ("mrot", "mrot"),
                                                        ("mental-rotation", "levante_mental_rotation")])
def test_irt_task_takes_any_catalogue_spelling(tmp_path: Path, spelling: str, records_task: str) -> None:
    """README's `--irt trog_rasch_f1_scalar.rds --irt mrot=mrot_2pl_f1.rds`: the manifest task_id (mrot), the
    internal name and the lmms-eval name all name the task the trials call mental-rotation, in `--irt` and in a
    records CSV's `task` column alike."""
    folder = irt_fixture_dir()
    records = mrot_records(tmp_path, records_task)
    assert compare_cli(tmp_path, records, str(folder / "trog_rasch_f1_scalar.rds"),
                       f"{spelling}={folder / 'mrot_2pl_f1.rds'}") == 0
    summary = json.loads((tmp_path / "out" / "comparison.json").read_text())
    assert sorted(summary["tasks"]) == ["mental-rotation", "trog"]
    assert compared(summary, "mental-rotation")["models"]["aligned"]["n_items"] > 0


def test_unknown_irt_task_is_one_line_listing_the_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = mrot_records(tmp_path)
    assert compare_cli(tmp_path, records, f"mrto={irt_fixture_dir() / 'mrot_2pl_f1.rds'}") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--irt mrto=" in err and "unknown LEVANTE task 'mrto'" in err
    assert "mental-rotation (mrot, levante_mental_rotation" in err and "trog" in err
    assert not (tmp_path / "out").exists()


def test_nothing_compared_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An IRT model whose task no record names (trog records, a mental-rotation model): exit 2, nothing written."""
    _, records = trog_inputs(tmp_path)
    assert compare_cli(tmp_path, records, f"mrot={irt_fixture_dir() / 'mrot_2pl_f1.rds'}") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "records.csv: nothing compared" in err
    assert "records' tasks: trog, vocab; IRT models' tasks: mental-rotation" in err
    assert not (tmp_path / "out").exists()


def test_task_without_records_is_noted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Something compared (trog), but no record for the mental-rotation model: exit 0, one note naming the task."""
    folder = irt_fixture_dir()
    _, records = trog_inputs(tmp_path)
    assert compare_cli(tmp_path, records, str(folder / "trog_rasch_f1_scalar.rds"),
                       f"mrot={folder / 'mrot_2pl_f1.rds'}") == 0
    err = capsys.readouterr().err.strip()
    assert err == "levante-tasks: note: no model records for task(s) mental-rotation: nothing compared there"
