"""`levante-tasks compare` reliability: the output folder is swapped in whole, impossible values never become
published numbers, and every unreadable or malformed input is one error line naming the file.

Inputs come from the synthetic release (trog only, small) so the CLI runs end to end in a few seconds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from faults import fill_disk, kill9_when, one_error_line, run_cli, small_tmpfs, tree_snapshot

from levante_tasks.cli import main
from levante_tasks.compare import report
from levante_tasks.compare.distributions import compare_model
from levante_tasks.synth import write_synthetic_release

TASK = "trog"


@dataclass
class Inputs:
    """Paths of one comparison's inputs (all inside the test's tmp folder, so tests may corrupt them)."""

    irt: Path
    trials: Path
    runs: Path
    records: Path
    items: Path

    def args(self, out: Path, *extra: str) -> list[str]:
        """`compare` arguments with a small bootstrap and small cells (fast, and KL pairs exist)."""
        return ["compare", "--irt", str(self.irt), "--trials", str(self.trials), "--runs", str(self.runs),
                "--models", str(self.records), "--items", str(self.items), "--out", str(out), "--n-boot", "20",
                "--n-perm", "50", "--min-n", "2", *extra]


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One small synthetic release (children/, irt/) shared by the module's tests (read-only)."""
    root = tmp_path_factory.mktemp("synthetic")
    write_synthetic_release(root, seed=3, n_children=60)
    return root


def records_table(params: pd.DataFrame, flip: bool = False) -> pd.DataFrame:
    """Two models on every trog item: one that follows difficulty (with option scores), one at random."""
    rng = np.random.default_rng(5)
    rows = []
    for uid, b in zip(params["item_uid"], params["b"], strict=True):
        aligned = int((b < 0) != flip)
        rows.append({"model": "aligned", "task": TASK, "item_uid": uid, "correct": aligned,
                     "option_scores": json.dumps([2.0, 0.5, 0.0, -0.5])})
        rows.append({"model": "noise", "task": TASK, "item_uid": uid, "correct": int(rng.random() < 0.5),
                     "option_scores": ";".join(repr(float(v)) for v in rng.normal(0, 1, 4))})
    return pd.DataFrame(rows)


@pytest.fixture
def inputs(release: Path, tmp_path: Path) -> Inputs:
    """Trog-only IRT parameters, trials, runs and model records written into this test's tmp folder."""
    params = pd.read_csv(release / "irt" / "item_params.csv")
    params = params[params["task"] == TASK]
    trials = pd.read_csv(release / "children" / "trials.csv", dtype=str)
    folder = tmp_path / "in"
    folder.mkdir()
    found = Inputs(folder / "item_params.csv", folder / "trials.csv", folder / "runs.csv", folder / "records.csv",
                   release / "synthetic" / "manifest.csv")
    params.to_csv(found.irt, index=False)
    trials[trials["task_id"] == TASK].to_csv(found.trials, index=False)
    found.runs.write_bytes((release / "children" / "runs.csv").read_bytes())
    records_table(params).to_csv(found.records, index=False)
    return found


def change_inputs(found: Inputs) -> None:
    """Different IRT parameters and model answers: every output table of the next run differs."""
    params = pd.read_csv(found.irt)
    params["d"] = params["d"] * 1.1 + 0.05
    params.to_csv(found.irt, index=False)
    records_table(params.assign(b=-params["d"] / params["a1"]), flip=True).to_csv(found.records, index=False)


def good_output(found: Inputs, out: Path, *extra: str) -> dict[str, bytes]:
    """Run compare in-process into `out` and return the snapshot of what it wrote."""
    assert main(found.args(out, *extra)) == 0
    return tree_snapshot(out)


def leftovers(folder: Path) -> list[str]:
    """Staging folders and temp files of the atomic writers left in `folder`."""
    return sorted(p.name for p in folder.iterdir() if re.search(r"\.(staging|old)-\d+\.|\.part$", p.name))


def assert_one_error(done, *needles: str) -> str:
    """Exit status 2 and exactly one `levante-tasks: error:` line containing every needle."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    line = one_error_line(done.stderr)
    assert sum(x.startswith("levante-tasks: error:") for x in done.stderr.splitlines()) == 1, done.stderr
    for needle in needles:
        assert needle.lower() in line.lower(), (needle, line)
    return line


# ---------------------------------------------------------------- 3. the output folder is swapped in whole


def test_failure_midway_leaves_the_earlier_output_byte_identical(
    inputs: Inputs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    before = good_output(inputs, out, "--no-plots")
    change_inputs(inputs)

    def broken(*_args: object, **_kwargs: object) -> str:
        raise RuntimeError("injected failure after the CSVs and comparison.json")

    monkeypatch.setattr(report, "section", broken)
    with pytest.raises(RuntimeError, match="injected"):
        main(inputs.args(out, "--no-plots"))
    assert tree_snapshot(out) == before
    assert leftovers(tmp_path) == []


def test_rerun_replaces_the_whole_folder(inputs: Inputs, tmp_path: Path) -> None:
    """Files of an earlier run that the new run does not write (here: its plots) are gone, not mixed in."""
    out = tmp_path / "out"
    before = good_output(inputs, out)
    assert any(name.startswith("plots/") for name in before)
    change_inputs(inputs)
    after = good_output(inputs, out, "--no-plots")
    assert not any(name.startswith("plots/") for name in after)
    assert after["items.csv"] != before["items.csv"]
    assert leftovers(tmp_path) == []


def test_disk_full_is_one_line_and_keeps_the_old_output(inputs: Inputs) -> None:
    with small_tmpfs("8m") as mount:
        out = mount / "out"
        before = good_output(inputs, out)
        change_inputs(inputs)
        fill_disk(mount, keep_free=48 * 1024)
        done = run_cli(inputs.args(out))
        assert_one_error(done, "no space left", "out")
        assert tree_snapshot(out) == before
        assert leftovers(mount) == []


def test_kill9_midway_keeps_the_old_output_and_the_next_run_cleans_up(inputs: Inputs, tmp_path: Path) -> None:
    out = tmp_path / "out"
    before = good_output(inputs, out)
    old_inode = (out / "difficulty.csv").stat().st_ino
    change_inputs(inputs)

    def new_difficulty_written() -> bool:
        """A new difficulty.csv exists somewhere (the plots, comparison.md and the swap are still to come)."""
        return any(p.stat().st_ino != old_inode for p in tmp_path.rglob("difficulty.csv"))

    status = kill9_when(inputs.args(out), new_difficulty_written)
    assert status == -9
    assert tree_snapshot(out) == before
    assert leftovers(tmp_path), "the killed run should have left its staging folder behind"
    done = run_cli(inputs.args(out))
    assert done.returncode == 0, done.stderr
    assert leftovers(tmp_path) == []
    after = tree_snapshot(out)
    assert after.keys() == before.keys() and after["difficulty.csv"] != before["difficulty.csv"]


def test_out_folder_that_is_not_a_compare_output_is_refused(inputs: Inputs, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my own notes\n")
    before = tree_snapshot(out)
    done = run_cli(inputs.args(out))
    assert_one_error(done, "mine", "comparison.json")
    assert tree_snapshot(out) == before


def test_out_that_is_a_file_is_refused(inputs: Inputs, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    out.write_text("a file\n")
    done = run_cli(inputs.args(out))
    assert_one_error(done, "out.txt", "not a folder")
    assert out.read_text() == "a file\n"


def test_empty_out_folder_is_used(inputs: Inputs, tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    assert "comparison.json" in good_output(inputs, out, "--no-plots")


def test_symlinked_out_is_replaced_at_its_target(inputs: Inputs, tmp_path: Path) -> None:
    """A link to an earlier output stays a link; the folder it points to is the one swapped."""
    real, link = tmp_path / "real", tmp_path / "link"
    before = good_output(inputs, real, "--no-plots")
    link.symlink_to(real, target_is_directory=True)
    change_inputs(inputs)
    after = good_output(inputs, link, "--no-plots")
    assert link.is_symlink() and tree_snapshot(real) == after and after["items.csv"] != before["items.csv"]
    assert leftovers(tmp_path) == []


# ---------------------------------------------------------------- 9. impossible values


def test_impossible_ages_are_counted_exclusions(inputs: Inputs, tmp_path: Path) -> None:
    runs = pd.read_csv(inputs.runs, dtype={"run_id": str})
    trials = pd.read_csv(inputs.trials, dtype=str)
    trog_runs = sorted(set(trials.loc[trials["language"] == "en-US", "run_id"]))  # children the English runs meet
    runs.loc[runs["run_id"] == trog_runs[0], "age"] = -2.0
    runs.loc[runs["run_id"] == trog_runs[1], "age"] = 40.0
    runs.loc[runs["run_id"] == trog_runs[2], "age"] = float("inf")
    runs.to_csv(inputs.runs, index=False)
    out = tmp_path / "out"
    good_output(inputs, out, "--no-plots")
    summary = json.loads((out / "comparison.json").read_text())
    excl = {(e["task"], e["reason"]): e["count"] for e in summary["exclusions"]}
    assert excl[("", "runs_impossible_age")] == 3
    assert excl[(TASK, "children_without_age")] == 3
    children = pd.read_csv(out / "children_theta.csv", dtype={"run_id": str}).set_index("run_id")
    assert children.loc[trog_runs[:3], "age"].isna().all()
    assert children["age"].dropna().between(0, 25).all()


def test_ages_all_out_of_range_are_an_error(inputs: Inputs, tmp_path: Path) -> None:
    """Ages in months (all > 25) are not silently dropped run by run: the whole file is refused."""
    runs = pd.read_csv(inputs.runs)
    runs["age"] = runs["age"] * 12
    runs.to_csv(inputs.runs, index=False)
    done = run_cli(inputs.args(tmp_path / "out"))
    assert_one_error(done, "runs.csv", "years")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("column", "value"), [("g", 1.2), ("g", -0.1), ("u", 0.2), ("u", 1.5)])
def test_guess_or_upper_asymptote_out_of_range_is_an_error(
    inputs: Inputs, tmp_path: Path, column: str, value: float
) -> None:
    params = pd.read_csv(inputs.irt)
    params["u"] = 1.0
    params.loc[3, column] = value
    params.to_csv(inputs.irt, index=False)
    done = run_cli(inputs.args(tmp_path / "out"))
    assert_one_error(done, "item_params.csv", params.loc[3, "item_uid"], "0 <= g < u <= 1")
    assert not (tmp_path / "out").exists()


def test_runs_sharing_no_run_with_trials_is_an_error(inputs: Inputs, tmp_path: Path) -> None:
    runs = pd.read_csv(inputs.runs, dtype={"run_id": str})
    runs["run_id"] = "other_" + runs["run_id"]
    runs.to_csv(inputs.runs, index=False)
    done = run_cli(inputs.args(tmp_path / "out"))
    assert_one_error(done, "runs.csv", "trials.csv", "run_id")
    assert not (tmp_path / "out").exists()


def distribution(n_items: int) -> pd.DataFrame:
    """Children's option proportions for `n_items` 4-option items in two ability bins."""
    rows = []
    for i in range(n_items):
        for low, p in ((-1, [0.4, 0.3, 0.2, 0.1]), (0, [0.7, 0.1, 0.1, 0.1])):
            for j, pj in enumerate(p):
                rows.append((f"it{i}", low, f"{low}_{low + 1}", 4, j, 20, pj))
    return pd.DataFrame(rows, columns=["item_uid", "bin_low", "ability_bin", "n_options", "option_index",
                                       "n_bin", "p"])


def test_infinite_option_scores_are_excluded_never_a_nan_kl() -> None:
    dist = distribution(4)
    scores = {"it0": [2.0, 1.0, 0.0, -1.0], "it1": [0.0, -np.inf, -1.0, -2.0],  # -inf = probability 0: kept
              "it2": [np.inf, 0.0, 0.0, 0.0], "it3": [-np.inf] * 4}
    counts: Counter = Counter()
    pairs, summary = compare_model(dist, scores, counts)
    assert counts["items_with_infinite_scores"] == 2
    assert sorted(pairs["item_uid"].unique()) == ["it0", "it1"]
    assert np.isfinite(pairs["kl"]).all() and np.isfinite(summary["mean_kl"]) and np.isfinite(summary["beta"])
    assert summary["closest_bin"] in {"-1_0", "0_1"}


def test_overflowing_option_scores_are_excluded() -> None:
    """Finite scores so large that beta * score overflows would also give NaN KLs."""
    counts: Counter = Counter()
    pairs, summary = compare_model(distribution(2), {"it0": [1e307, 0.0, 0.0, 0.0], "it1": [1.0, 0, 0, 0]}, counts)
    assert counts["items_with_infinite_scores"] == 1 and pairs["item_uid"].unique().tolist() == ["it1"]
    assert np.isfinite(summary["mean_kl"])


def test_infinite_option_scores_end_to_end(inputs: Inputs, tmp_path: Path) -> None:
    records = pd.read_csv(inputs.records)
    aligned = records["model"] == "aligned"
    records.loc[records.index[aligned][:3], "option_scores"] = "inf;0;0;0"
    records.to_csv(inputs.records, index=False)
    out = tmp_path / "out"
    good_output(inputs, out, "--no-plots")
    kl = pd.read_csv(out / "kl_summary.csv").set_index("model")
    assert np.isfinite(kl.loc["aligned", ["beta", "mean_kl"]].astype(float)).all()
    assert pd.read_csv(out / "kl_items.csv")["kl"].notna().all()
    summary = json.loads((out / "comparison.json").read_text())
    excl = {(e["model"], e["reason"]): e["count"] for e in summary["exclusions"]}
    assert excl[("aligned", "items_with_infinite_scores")] >= 1


def test_model_without_matched_items_publishes_no_number(inputs: Inputs, tmp_path: Path) -> None:
    records = pd.read_csv(inputs.records)
    lost = records[records["model"] == "noise"].assign(model="lost", item_uid=lambda t: "zz_" + t["item_uid"])
    pd.concat([records, lost]).to_csv(inputs.records, index=False)
    out = tmp_path / "out"
    good_output(inputs, out)
    theta = pd.read_csv(out / "model_theta.csv")
    lost_theta = theta[theta["model"] == "lost"]
    assert len(lost_theta) and lost_theta[["theta", "se"]].isna().all().all()
    assert (lost_theta["n_items"] == 0).all()
    age = pd.read_csv(out / "age_equivalence.csv").set_index("model")
    assert age.loc["lost", ["age_equivalent", "age_ci_low", "age_ci_high"]].isna().all()
    summary = json.loads((out / "comparison.json").read_text())
    [comparison] = summary["tasks"][TASK]["languages"].values()
    unit = comparison["models"]["lost"]
    assert unit["theta"] is None and unit["se"] is None and unit["children_below_theta"] is None
    assert unit["age"]["age_equivalent"] is None and unit["note"] == "no items matched the IRT model"
    excl = {(e["model"], e["reason"]): e["count"] for e in summary["exclusions"]}
    assert excl[("lost", "models_without_matched_items")] == 1
    assert comparison["models"]["aligned"]["theta"] is not None


# ---------------------------------------------------------------- 5. readers: one line naming the file


def corrupt_bytes(path: Path, kind: str) -> None:
    """Put a non-UTF-8 byte or a NUL byte into the 4th line of a text file, or empty it."""
    if kind == "empty":
        path.write_bytes(b"")
        return
    lines = path.read_bytes().split(b"\n")
    bad = b"\xff\xfe" if kind == "latin" else b"\x00"
    lines[3] = lines[3][:5] + bad + lines[3][5:]
    path.write_bytes(b"\n".join(lines))


@pytest.mark.parametrize("which", ["trials", "runs", "records", "irt"])
@pytest.mark.parametrize(("kind", "needle"), [("latin", ":4: not UTF-8"), ("nul", ":4: NUL byte"),
                                              ("empty", ": empty")])
def test_bad_bytes_are_one_line_naming_file_and_line(
    inputs: Inputs, tmp_path: Path, which: str, kind: str, needle: str
) -> None:
    path = getattr(inputs, which)
    corrupt_bytes(path, kind)
    done = run_cli(inputs.args(tmp_path / "out"))
    assert_one_error(done, path.name + needle)
    assert not (tmp_path / "out").exists()


def samples_folder(inputs: Inputs, tmp_path: Path, prefix: bytes = b"") -> Path:
    """An lmms-eval output folder with one samples file holding the `aligned` records (optional prefix bytes)."""
    folder = tmp_path / "lmms" / "org__m"
    folder.mkdir(parents=True)
    (folder / "20260101_000000_results.json").write_text(json.dumps({"model_name": "org/m"}))
    records = pd.read_csv(inputs.records)
    lines = [json.dumps({"doc_id": i, "levante_item": {"item_uid": r.item_uid, "task": r.task,
                                                       "correct": int(r.correct),
                                                       "option_scores": json.loads(r.option_scores)}})
             for i, r in enumerate(records[records["model"] == "aligned"].itertuples())]
    (folder / "20260101_000000_samples_levante_trog.jsonl").write_bytes(prefix + "\n".join(lines).encode())
    return folder


@pytest.mark.parametrize(("kind", "needle"), [("latin", ":4: not UTF-8"), ("nul", ":4: NUL byte")])
def test_bad_bytes_in_samples_jsonl(inputs: Inputs, tmp_path: Path, kind: str, needle: str) -> None:
    folder = samples_folder(inputs, tmp_path)
    samples = next(folder.glob("*samples*.jsonl"))
    corrupt_bytes(samples, kind)
    inputs.records = folder.parent
    done = run_cli(inputs.args(tmp_path / "out"))
    assert_one_error(done, samples.name + needle)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("which", ["samples", "trials", "runs", "records", "irt"])
def test_utf8_bom_is_accepted(inputs: Inputs, tmp_path: Path, which: str) -> None:
    if which == "samples":
        inputs.records = samples_folder(inputs, tmp_path, prefix=b"\xef\xbb\xbf").parent
    else:
        path = getattr(inputs, which)
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    out = tmp_path / "out"
    good_output(inputs, out, "--no-plots")
    assert len(pd.read_csv(out / "model_theta.csv")) >= 1


@pytest.mark.parametrize(
    ("which", "column", "value", "needles"),
    [
        ("irt", "a1", "abc", ("item_params.csv", "a1", "abc")),
        ("irt", "d", "high", ("item_params.csv", "d", "high")),
        ("irt", "g", "chance", ("item_params.csv", "g", "chance")),
        ("irt", "u", "one", ("item_params.csv", "u", "one")),
        ("runs", "age", "seven", ("runs.csv", "age", "seven")),
        ("trials", "correct", "maybe", ("trials.csv", "correct", "maybe")),
        ("records", "correct", "right", ("records.csv", "correct", "right")),
        ("records", "correct", "2", ("records.csv", "correct", "2")),
    ],
)
def test_text_where_numbers_are_expected_is_one_line(
    inputs: Inputs, tmp_path: Path, which: str, column: str, value: str, needles: tuple[str, ...]
) -> None:
    path = getattr(inputs, which)
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    if column not in table.columns:
        table[column] = "1"
    table.loc[2, column] = value
    table.to_csv(path, index=False)
    done = run_cli(inputs.args(tmp_path / "out"))
    line = assert_one_error(done, *needles)
    assert "row 3" in line, line
    assert not (tmp_path / "out").exists()


def test_text_in_mod2values_value_column_is_one_line(inputs: Inputs, tmp_path: Path) -> None:
    long = pd.DataFrame({"group": ["all"] * 4, "item": ["x-1", "x-1", "GROUP", "GROUP"],
                         "name": ["a1", "d", "MEAN_1", "COV_11"], "value": ["1", "oops", "0", "1"]})
    long.to_csv(inputs.irt, index=False)
    done = run_cli(inputs.args(tmp_path / "out"))
    assert_one_error(done, "item_params.csv", "value", "oops")


def test_text_in_rds_model_vals_is_one_line(inputs: Inputs, tmp_path: Path) -> None:
    """An rds whose model_vals `value` column holds text (written by R itself)."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        pytest.skip("Rscript not installed: cannot write an rds with a text value column")
    rds = tmp_path / "record.rds"
    code = ('saveRDS(list(model_vals = data.frame(group = "all", item = c("x-1", "x-1", "GROUP", "GROUP"), '
            'name = c("a1", "d", "MEAN_1", "COV_11"), value = c("1", "oops", "0", "1"))), commandArgs(TRUE)[1])')
    subprocess.run([rscript, "-e", code, str(rds)], check=True, capture_output=True)
    inputs.irt = rds
    done = run_cli(inputs.args(tmp_path / "out"))
    assert_one_error(done, "record.rds", "value", "oops")


def test_samples_line_with_text_correct_is_one_line(inputs: Inputs, tmp_path: Path) -> None:
    folder = samples_folder(inputs, tmp_path)
    samples = next(folder.glob("*samples*.jsonl"))
    lines = samples.read_text().splitlines()
    record = json.loads(lines[1])
    record["levante_item"]["correct"] = "right"
    lines[1] = json.dumps(record)
    samples.write_text("\n".join(lines))
    inputs.records = folder.parent
    done = run_cli(inputs.args(tmp_path / "out"))
    assert_one_error(done, samples.name + ":2", "correct", "right")


@pytest.mark.parametrize("which", ["trials", "runs", "records", "irt"])
def test_unreadable_input_is_one_line(inputs: Inputs, tmp_path: Path, which: str) -> None:
    path = getattr(inputs, which)
    os.chmod(path, 0)
    done = run_cli(inputs.args(tmp_path / "out"), drop_dac=True)
    assert_one_error(done, path.name, "permission denied")
    assert not (tmp_path / "out").exists()


def test_unwritable_out_parent_is_one_line(inputs: Inputs, tmp_path: Path) -> None:
    parent = tmp_path / "ro"
    parent.mkdir()
    os.chmod(parent, 0o555)
    done = run_cli(inputs.args(parent / "out"), drop_dac=True)
    assert_one_error(done, "ro", "permission denied")
    assert list(parent.iterdir()) == []


def test_synthetic_data_is_labelled_in_comparison_md(inputs: Inputs, tmp_path: Path) -> None:
    """The synthetic release's trials say dataset = synth_*. A records table's model name alone never makes a test
    model (a user's model may be called `tiny-clip`): that comes from the run's identity (tests/test_demo.py)."""
    records = pd.read_csv(inputs.records)
    records.loc[records["model"] == "noise", "model"] = "tiny-clip @ unknown (levante_clip)/original/mc/seed0"
    records.to_csv(inputs.records, index=False)
    (inputs.irt.parent / "SYNTHETIC.md").write_text("synthetic\n")
    out = tmp_path / "out"
    good_output(inputs, out, "--no-plots")
    text = (out / "comparison.md").read_text()
    assert "**Synthetic data** (SYNTHETIC.md beside trials.csv, runs.csv, item_params.csv; " in text
    assert "trials with dataset = synthetic or synth_*)" in text
    assert "| tiny-clip @ unknown (levante_clip)/original/mc/seed0 |" in text and "random-init" not in text
    assert json.loads((out / "comparison.json").read_text())["data"]["test_models"] == []


def test_real_like_data_and_models_carry_no_label(inputs: Inputs, tmp_path: Path) -> None:
    trials = pd.read_csv(inputs.trials, dtype=str)
    trials.drop(columns="dataset").to_csv(inputs.trials, index=False)
    out = tmp_path / "out"
    good_output(inputs, out, "--no-plots")
    text = (out / "comparison.md").read_text()
    assert "Synthetic data" not in text and "random-init" not in text
