"""Issue 12.2-12.6: the reference group from the `est` flags, one ability scale for models and children (and
ML), the calibration check matched by run id, the uniform-model KL baseline with count-weighted cells, and age
intervals that say "below youngest" / "above oldest" instead of snapping.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from compare_inputs import compare, compared, exclusions, record_slots, records, trog_trials
from faults import one_error_line, run_cli
from scipy import optimize
from shared_paths import irt_fixture_dir

from levante_tasks.compare.age import age_equivalent
from levante_tasks.compare.distributions import compare_model
from levante_tasks.compare.eap import eap
from levante_tasks.compare.irt import read_irt
from levante_tasks.errors import LevanteError

TROG = "trog_rasch_f1_scalar.rds"


def long_csv(path: Path, order: list[str], est_co_pilot: bool | None = True) -> Path:
    """The trog record's model_vals as a mod2values CSV, groups in `order`; co_pilot's MEAN_1 est as given
    (None: no est column at all)."""
    vals = record_slots(TROG)["model_vals"]
    vals = pd.concat([vals[vals["group"] == g] for g in order])
    mean = (vals["group"] == "co_pilot") & (vals["name"] == "MEAN_1")
    if est_co_pilot is None:
        vals = vals.drop(columns="est")
    else:
        vals.loc[mean, "est"] = est_co_pilot
    vals.to_csv(path, index=False)
    return path


# ---------------------------------------------------------------- 2. reference group


def test_reference_group_comes_from_est_flags_not_group_order(tmp_path: Path) -> None:
    model = read_irt(long_csv(tmp_path / "vals.csv", ["co_pilot", "ca_pilot"]))[0]
    assert model.reference.name == "ca_pilot"  # the group whose MEAN_1 is fixed, though listed second
    assert [g.name for g in model.groups] == ["ca_pilot", "co_pilot"]
    assert model.reference.var == pytest.approx(1.6)


@pytest.mark.parametrize("est", [False, None])
def test_ambiguous_reference_group_is_one_line(tmp_path: Path, est: bool | None) -> None:
    """Both MEAN_1 fixed (e.g. a configural model), or no est column: never a guess from the order."""
    vals = long_csv(tmp_path / "vals.csv", ["ca_pilot", "co_pilot"], est_co_pilot=est)
    trials = tmp_path / "trials.csv"
    trog_trials().to_csv(trials, index=False)
    done = run_cli(["compare", "--irt", f"trog={vals}", "--trials", str(trials), "--runs",
                    str(irt_fixture_dir() / "runs.csv"), "--models", str(records(tmp_path / "r.csv")),
                    "--out", str(tmp_path / "out"), "--no-plots"])
    assert done.returncode == 2
    line = one_error_line(done.stderr)
    assert "vals.csv" in line and "reference group" in line
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- 3. one scale, and ML


def test_model_answering_like_a_child_sits_where_that_child_sits(tmp_path: Path) -> None:
    """A model giving a co_pilot child's answers gets that child's abilities: on the common (reference-prior)
    scale against every child, and under co_pilot's prior against co_pilot's children."""
    trials = trog_trials()
    child = trials[trials["site"] == "co_pilot"]["run_id"].iloc[0]
    answers = trials[trials["run_id"] == child]
    extra = [{"model": "copycat", "task": "trog", "item_uid": u, "correct": int(c == "TRUE"), "option_scores": ""}
             for u, c in zip(answers["item_uid"], answers["correct"], strict=True)]
    out, summary = compare(tmp_path, trials, records(tmp_path / "records.csv", extra))
    children = pd.read_csv(out / "children_theta.csv", dtype={"run_id": str}).set_index("run_id")
    unit = compared(summary)["models"]["copycat"]
    assert unit["theta"] == pytest.approx(children.loc[child, "theta_common"], abs=1e-12)
    assert unit["children_below_theta"] == pytest.approx(np.mean(children["theta_common"] < unit["theta"]))
    theta = pd.read_csv(out / "model_theta.csv").query("model == 'copycat' and estimator == 'EAP'").set_index("group")
    assert theta.loc["co_pilot", "theta"] == pytest.approx(children.loc[child, "theta"], abs=1e-12)
    co_children = children[children["group"] == "co_pilot"]["theta"]
    assert theta.loc["co_pilot", "children_below_theta_in_group"] == pytest.approx(
        np.mean(co_children < theta.loc["co_pilot", "theta"]))
    assert theta.loc["co_pilot", "n_children_in_group"] == len(co_children)
    # theta_common is the EAP of the child's own trials under the reference prior
    items = read_irt(irt_fixture_dir() / TROG)[0].first_instances().loc[answers["item_uid"]]
    params = [items[c].to_numpy() for c in ("a1", "d", "g", "u")]
    ref, _ = eap((answers["correct"] == "TRUE").to_numpy(float)[None, :], *params, 0.0, 1.6)
    assert children.loc[child, "theta_common"] == pytest.approx(ref[0], abs=1e-12)
    assert "reference group's prior" in summary["conventions"]["theta_scale"]
    age = pd.read_csv(out / "age_equivalence.csv")
    assert age["theta_scale"].str.contains("same prior").all()


def test_ml_estimate_for_models_that_answer_every_item(tmp_path: Path) -> None:
    mrot = read_irt(irt_fixture_dir() / "mrot_2pl_f1.rds")[0].first_instances()
    a1, d, g, u = (mrot[c].to_numpy() for c in ("a1", "d", "g", "u"))
    rng = np.random.default_rng(4)
    answers = {"complete": (rng.random(len(mrot)) < g + (u - g) / (1 + np.exp(-(a1 * 0.8 + d)))).astype(int),
               "all_right": np.ones(len(mrot), dtype=int)}
    rows = [{"model": m, "task": "mental-rotation", "item_uid": uid, "correct": int(c), "option_scores": ""}
            for m, x in answers.items() for uid, c in zip(mrot.index, x, strict=True)]
    rows += [r | {"model": "partial"} for r in rows if r["model"] == "complete"][:-5]
    pd.DataFrame(rows).to_csv(tmp_path / "records.csv", index=False)
    trials = pd.read_csv(irt_fixture_dir() / "trials.csv", dtype=str, keep_default_na=False)
    trials[trials["task_id"] == "mental-rotation"].to_csv(tmp_path / "trials.csv", index=False)
    out, _ = compare(tmp_path, tmp_path / "trials.csv", tmp_path / "records.csv",
                     irt=irt_fixture_dir() / "mrot_2pl_f1.rds")
    ml = pd.read_csv(out / "model_theta.csv").query("estimator == 'ML'").set_index("model")
    x = answers["complete"]

    def prob(theta: float) -> np.ndarray:
        return g + (u - g) / (1 + np.exp(-(a1 * theta + d)))

    def negloglik(theta: float) -> float:
        p = prob(theta)
        return -float(np.sum(x * np.log(p) + (1 - x) * np.log(1 - p)))

    best = optimize.minimize_scalar(negloglik, bounds=(-6, 6), method="bounded", options={"xatol": 1e-12})
    assert ml.loc["complete", "theta"] == pytest.approx(best.x, abs=1e-6)
    h = 1e-6
    slope = (prob(best.x + h) - prob(best.x - h)) / (2 * h)
    information = np.sum(slope**2 / (prob(best.x) * (1 - prob(best.x))))  # expected (Fisher) information
    assert ml.loc["complete", "se"] == pytest.approx(1 / np.sqrt(information), rel=1e-6)
    assert np.isnan(ml.loc["all_right", "theta"]) and "no maximum" in ml.loc["all_right", "note"]
    assert np.isnan(ml.loc["partial", "theta"]) and "every IRT item" in ml.loc["partial", "note"]


# ---------------------------------------------------------------- 4. calibration check by run id


def test_calibration_check_matches_scores_to_runs_by_id(tmp_path: Path) -> None:
    rdata = pytest.importorskip("rdata")
    slots = record_slots(TROG)
    slots["scores"] = slots["scores"].iloc[::-1].reset_index(drop=True)  # same runs, another row order
    rdata.write_rds(tmp_path / "record.rds", slots)
    out, summary = compare(tmp_path, trog_trials(), records(tmp_path / "records.csv"), irt=tmp_path / "record.rds")
    check = compared(summary)["calibration_rescore_max_abs_diff"]
    assert check["ability"] < 1e-6 and check["se"] < 1e-6
    assert check["n_runs"] == 300 and check["n_runs_unmatched"] == 0
    report = (out / "comparison.md").read_text(encoding="utf-8")
    line = f"Calibration check: the record's scores reproduce from its data to {check['ability']:.2g} logits"
    assert report.count(line) == 1 and "over 300 runs." in report


def test_record_whose_scores_contradict_its_data_is_refused(tmp_path: Path) -> None:
    rdata = pytest.importorskip("rdata")
    slots = record_slots(TROG)
    slots["scores"].loc[0, "ability"] += 5.6
    rdata.write_rds(tmp_path / "record.rds", slots)
    with pytest.raises(LevanteError, match=r"disagree with its own data rescored \(max \|diff\| 5\.6"):
        compare(tmp_path, trog_trials(), records(tmp_path / "records.csv"), irt=tmp_path / "record.rds")
    out, summary = compare(tmp_path, trog_trials(), records(tmp_path / "records.csv"), name="tolerant",
                           irt=tmp_path / "record.rds", calibration_tolerance=10.0)
    assert compared(summary)["calibration_rescore_max_abs_diff"]["ability"] == pytest.approx(5.6, abs=0.01)
    report = (out / "comparison.md").read_text(encoding="utf-8")  # the mismatch accepted on purpose is shown
    assert "Calibration check: the record's scores reproduce from its data to 5.6 logits (ability)" in report


def test_empty_or_na_correct_is_missing_not_wrong(tmp_path: Path) -> None:
    trials = trog_trials()
    run = trials["run_id"].iloc[0]
    rows = trials.index[(trials["run_id"] == run) & (trials["response"] == trials["answer"])][:3]
    assert len(rows) == 3
    dropped = trials.drop(index=rows)
    trials.loc[rows, "correct"] = ["", "NA", "NA"]
    out, summary = compare(tmp_path, trials, records(tmp_path / "records.csv"))
    ref, _ = compare(tmp_path, dropped, records(tmp_path / "records.csv"), name="dropped")
    got = pd.read_csv(out / "children_theta.csv", dtype={"run_id": str}).set_index("run_id")
    want = pd.read_csv(ref / "children_theta.csv", dtype={"run_id": str}).set_index("run_id")
    assert got.loc[run, "theta_common"] == pytest.approx(want.loc[run, "theta_common"], abs=1e-12)
    assert got.loc[run, "n_trials"] == want.loc[run, "n_trials"]
    overall = {e["reason"]: e["count"] for e in summary["exclusions"] if not e["task"]}
    assert overall["trials_correct_missing"] == 3


# ---------------------------------------------------------------- 5. uniform baseline, weighted cells


def test_uniform_baseline_and_count_weighted_kl(tmp_path: Path) -> None:
    trials = trog_trials()
    extra = [{"model": "flat", "task": "trog", "item_uid": u, "correct": 0, "option_scores": "[0, 0, 0, 0]"}
             for u in trials["item_uid"].unique()]
    out, _ = compare(tmp_path, trials, records(tmp_path / "records.csv", extra))
    kl = pd.read_csv(out / "kl_summary.csv").set_index("model")
    assert kl.loc["flat", "kl_ratio_to_uniform"] == pytest.approx(1.0, abs=1e-12)
    assert not kl.loc["flat", "better_than_uniform"] and kl.loc["flat", "uniform_test_p"] == 1.0  # S = 0 always
    assert kl.loc["aligned", "kl_ratio_to_uniform"] < 0.5 and kl.loc["aligned", "better_than_uniform"]
    assert kl.loc["aligned", "uniform_test_p"] == pytest.approx(1 / 201)  # none of the 200 permutations reaches it
    dist = pd.read_csv(out / "human_distributions.csv")
    dist["plogp"] = np.where(dist["p"] > 0, dist["p"] * np.log(dist["p"].where(dist["p"] > 0, 1.0)), 0.0)
    cells = dist.groupby(["item_uid", "bin_low"]).agg(n=("n_bin", "first"), k=("n_options", "first"),
                                                       plogp=("plogp", "sum"))
    uniform = float(np.sum(cells["n"] * (np.log(cells["k"]) + cells["plogp"])) / cells["n"].sum())
    assert kl.loc["flat", "uniform_mean_kl"] == pytest.approx(uniform, rel=1e-12)
    items = pd.read_csv(out / "kl_items.csv").query("model == 'aligned'")
    weighted = float(np.sum(items["kl"] * items["n_bin"]) / items["n_bin"].sum())
    assert kl.loc["aligned", "mean_kl"] == pytest.approx(weighted, rel=1e-12)
    # beta minimises the count-weighted mean KL, beta_unweighted the equal-weight mean (each at its own optimum)
    scores = {u: [2.0, 0.5, 0.0, -0.5] for u in trials["item_uid"].unique()}
    for beta_key, kl_key in (("beta", "mean_kl"), ("beta_unweighted", "mean_kl_unweighted")):
        beta = kl.loc["aligned", beta_key]
        at = {f: compare_model(dist, scores, Counter(), beta=beta * f)[1][kl_key] for f in (0.99, 1.0, 1.01)}
        assert at[1.0] < at[0.99] and at[1.0] < at[1.01], beta_key
        assert at[1.0] == pytest.approx(kl.loc["aligned", kl_key], rel=1e-9)
    unweighted = compare_model(dist, scores, Counter(), beta=kl.loc["aligned", "beta_unweighted"])[0]["kl"].mean()
    assert kl.loc["aligned", "mean_kl_unweighted"] == pytest.approx(unweighted, rel=1e-9)
    assert kl.loc["aligned", "beta_unweighted"] != pytest.approx(kl.loc["aligned", "beta"], rel=1e-3)


# ---------------------------------------------------------------- 6. age intervals


def test_age_interval_ends_outside_the_children_are_flagged_not_snapped() -> None:
    rng = np.random.default_rng(11)
    age = rng.uniform(5, 12, 600)
    theta = 0.5 * (age - 8.5) + rng.normal(0, 0.3, 600)
    top = age_equivalent(1.6, 0.4, age, theta, n_boot=400, seed=1)
    assert 10 < top["age_equivalent"] < 12 and top["age_flag"] == ""
    assert np.isnan(top["age_ci_high"]) and top["age_ci_high_flag"] == "above_oldest"
    assert top["age_ci_low"] < top["age_equivalent"] and top["age_ci_low_flag"] == ""
    bottom = age_equivalent(-1.6, 0.4, age, theta, n_boot=400, seed=1)
    assert np.isnan(bottom["age_ci_low"]) and bottom["age_ci_low_flag"] == "below_youngest"
    beyond = age_equivalent(5.0, 0.2, age, theta, n_boot=50)
    assert np.isnan(beyond["age_equivalent"]) and beyond["age_flag"] == "above_oldest"  # never the oldest age
    assert beyond["child_age_max"] == pytest.approx(age.max())


def test_age_flags_reach_the_outputs(tmp_path: Path) -> None:
    out, _ = compare(tmp_path, trog_trials(), records(tmp_path / "records.csv"))
    age = pd.read_csv(out / "age_equivalence.csv", keep_default_na=False, na_values=[""])
    flagged = age[age["age_ci_low_flag"].fillna("") != ""]
    assert len(flagged) and flagged["age_ci_low"].isna().all()
    report = (out / "comparison.md").read_text()
    assert "below youngest" in report


# ---------------------------------------------------------------- progress output


def test_no_progress_lines_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    trials = tmp_path / "trials.csv"
    trog_trials().to_csv(trials, index=False)
    extra = [{"model": f"m{k}", "task": "trog", "item_uid": "trog_noun_shoe", "correct": 1, "option_scores": ""}
             for k in range(5)]
    folder = irt_fixture_dir()
    done = subprocess.run(
        [sys.executable, "-m", "levante_tasks", "compare", "--irt", str(folder / TROG), "--trials", str(trials),
         "--runs", str(folder / "runs.csv"), "--models", str(records(tmp_path / "r.csv", extra)), "--out",
         str(tmp_path / "out"), "--no-plots", "--n-boot", "50"],
        capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert compared(json.loads((tmp_path / "out" / "comparison.json").read_text()))["models"].keys() >= {
        f"m{k}" for k in range(5)}
    assert exclusions(json.loads((tmp_path / "out" / "comparison.json").read_text()), "m0")[
        "irt_items_not_answered"] == 98


def test_many_models_get_summary_plots(tmp_path: Path) -> None:
    """Past 12 models a task's plots summarise (r with CI per model, thin lines, no per-model legend) instead of
    one panel per model, whose figure height and drawing time grew with the number of models."""
    uids = trog_trials()["item_uid"].unique()
    rng = np.random.default_rng(1)
    extra = [{"model": f"m{k:02d}", "task": "trog", "item_uid": u, "correct": int(rng.random() < 0.6),
              "option_scores": json.dumps(rng.normal(0, 1, 4).tolist())} for k in range(13) for u in uids]
    out, _ = compare(tmp_path, trog_trials(), records(tmp_path / "records.csv", extra), plots=True)
    from PIL import Image

    sizes = {p.name: Image.open(p).size for p in (out / "plots").glob("*.png")}
    assert set(sizes) == {"accuracy_vs_difficulty_trog.png", "kl_by_bin_trog.png", "theta_on_children_trog.png",
                          "theta_by_age_trog.png"}
    assert sizes["accuracy_vs_difficulty_trog.png"][1] < 600  # 15 rows of 0.14 in, not 15 panels of 2.4 in


def test_plots_without_any_kl_are_written(tmp_path: Path) -> None:
    """No unit with option scores: kl_summary has no beta columns, and the plots still draw (no KL plot)."""
    recs = pd.read_csv(records(tmp_path / "records.csv")).assign(option_scores="")
    recs.to_csv(tmp_path / "records.csv", index=False)
    out, _ = compare(tmp_path, trog_trials(), tmp_path / "records.csv", plots=True)
    assert "beta_at_bound" not in pd.read_csv(out / "kl_summary.csv").columns
    assert sorted(p.name for p in (out / "plots").iterdir()) == ["accuracy_vs_difficulty_trog.png",
                                                                "theta_by_age_trog.png",
                                                                "theta_on_children_trog.png"]
