"""The view by age (issue 31.6): the children's ages in comparison.md, children's accuracy per 1-year age band
beside each model's, the theta-by-age plot, and their recovery from known truth (compare.age_recovery)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from compare_inputs import compare, compared, records
from matplotlib.figure import Figure
from scipy import stats
from shared_paths import irt_fixture_dir
from test_plot_figures import saved  # noqa: F401  (the fixture: figures saved while a test runs)

from levante_tasks.compare.age_plot import theta_by_age
from levante_tasks.compare.age_recovery import EdgeDesign, accuracy_coverage, curve_band_coverage
from levante_tasks.compare.age_view import BAND_SHARE, accuracy_by_age, child_accuracy, curve_table
from levante_tasks.compare.results import Results


def test_child_accuracy_skips_missing_answers() -> None:
    trials = pd.DataFrame({"run_id": pd.Categorical(["a", "a", "a", "b", "b", "c"]),
                           "correct": [1.0, 0.0, np.nan, 1.0, 1.0, np.nan]})
    found = child_accuracy(trials).set_index("run_id")
    assert found.loc["a", "accuracy"] == 0.5 and found.loc["a", "n_answered"] == 2
    assert found.loc["b", "accuracy"] == 1.0
    assert "c" not in found.index  # no answered trial: no accuracy (not 0)


def test_accuracy_bands_are_one_year_with_a_t_interval() -> None:
    rng = np.random.default_rng(3)
    children = pd.DataFrame({"age": np.r_[rng.uniform(5, 7, 40), 9.5, np.nan, 11.2, 11.7],
                             "accuracy": np.r_[rng.uniform(0, 1, 42), 0.83, 0.83]})
    bands = accuracy_by_age(children, 0.95).set_index("age_band")
    assert list(bands.index) == ["5-6", "6-7", "9-10", "11-12"]  # [a, a + 1); a child without an age is left out
    assert bands.loc["11-12", "mean_accuracy"] == pytest.approx(0.83)
    assert math.isnan(bands.loc["11-12", "ci_low"]) and math.isnan(bands.loc["11-12", "ci_high"])  # not [0.83, 0.83]
    for band, low in (("5-6", 5), ("6-7", 6)):
        values = children.loc[(children["age"] >= low) & (children["age"] < low + 1), "accuracy"]
        ci = stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=stats.sem(values))
        assert bands.loc[band, "n_children"] == len(values)
        assert bands.loc[band, "mean_accuracy"] == pytest.approx(values.mean())
        assert (bands.loc[band, "ci_low"], bands.loc[band, "ci_high"]) == pytest.approx(ci)
    assert bands.loc["9-10", "n_children"] == 1 and math.isnan(bands.loc["9-10", "ci_low"])  # one child: no interval


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The trog fixture compared with two models, plots drawn."""
    tmp = tmp_path_factory.mktemp("age_view")
    return compare(tmp, irt_fixture_dir() / "trials.csv", records(tmp / "records.csv"), plots=True)


def test_report_gives_ages_plot_and_accuracy_by_age_band(outputs: tuple[Path, dict]) -> None:
    out, summary = outputs
    runs = pd.read_csv(irt_fixture_dir() / "runs.csv")
    trials = pd.read_csv(irt_fixture_dir() / "trials.csv")
    trog = trials[trials["task_id"] == "trog"]
    ages = runs.set_index("run_id").loc[trog["run_id"].unique(), "age"]
    found = compared(summary)["children_ages"]
    assert (found["min"], found["max"], found["n_with_age"]) == (ages.min(), ages.max(), len(ages))
    report = (out / "comparison.md").read_text()
    assert f"children aged {ages.min():.1f}-{ages.max():.1f} years" in report
    assert "![theta_by_age_trog](plots/theta_by_age_trog.png)" in report
    assert (out / "plots" / "theta_by_age_trog.png").stat().st_size > 1000
    # children per 1-year band from the trials, computed here without the package
    per_child = trog.assign(correct=trog["correct"].astype(str).str.lower().eq("true")).groupby("run_id")[
        "correct"].mean()
    band = np.floor(runs.set_index("run_id").loc[per_child.index, "age"])
    table = pd.read_csv(out / "accuracy_by_age.csv")
    assert list(table["band_low"]) == sorted(band.unique())
    for row in table.itertuples():
        values = per_child[band.to_numpy() == row.band_low]
        assert row.n_children == len(values) and row.mean_accuracy == pytest.approx(values.mean())
        assert f"| children {row.age_band} | {row.n_children} | {row.mean_accuracy:.2f} [" in report
    accuracy = pd.read_csv(out / "difficulty.csv").set_index("model")["accuracy"]
    for model in ("aligned", "noise"):
        assert f"| {model} (en) | 99 items | {accuracy[model]:.2f} |" in report


def test_age_curve_band_is_drawn_between_the_age_quantiles(outputs: tuple[Path, dict]) -> None:
    out, _ = outputs
    curve = pd.read_csv(out / "age_curve.csv")
    children = pd.read_csv(out / "children_theta.csv").dropna(subset=["age", "theta_common"])
    low, high = np.quantile(children["age"], [BAND_SHARE, 1 - BAND_SHARE])
    drawn = curve["band_low"].notna()
    assert drawn.any() and (curve.loc[drawn, "age"].between(low, high)).all()
    assert (curve.loc[drawn, "band_low"] <= curve.loc[drawn, "theta"] + 1e-12).all()
    assert (curve.loc[drawn, "theta"] <= curve.loc[drawn, "band_high"] + 1e-12).all()
    assert curve["theta"].is_monotonic_increasing  # the isotonic curve


def plot_results() -> Results:
    """Children on a rising curve and three models: a numeric age, one below youngest, one wholly below."""
    rng = np.random.default_rng(0)
    age = rng.uniform(5, 12, 300)
    theta = 0.4 * (age - 8.5) + rng.normal(0, 0.5, 300)
    results = Results()
    results.add("children_theta", pd.DataFrame({"task": "vocab", "children_language": "de", "run_id": range(300),
                                                "age": age, "theta_common": theta}))
    from levante_tasks.compare.age import AgeCurves

    curves = AgeCurves(age, theta, 200, 0)
    results.add("age_curve", curve_table(curves, age, 0.95).assign(task="vocab", children_language="de"))
    found = curves.equivalents(np.array([0.2, -1.6, -3.0]), np.array([0.2, 0.3, 0.2]))
    results.add("age_equivalence", pd.DataFrame(found).assign(
        task="vocab", children_language="de", model=["mid", "young", "younger"], theta=[0.2, -1.6, -3.0],
        se=[0.2, 0.3, 0.2]))
    return results


def test_plot_places_each_model_at_its_theta_and_age(tmp_path: Path, saved: list[Figure]) -> None:  # noqa: F811
    results = plot_results()
    [path] = theta_by_age(results, tmp_path, {"synthetic_evidence": ["x"], "test_models": ["younger"]})
    assert path.name == "theta_by_age_vocab_de.png" and path.stat().st_size > 1000
    notes = [text.get_text() for text in saved[-1].texts if text is not saved[-1]._suptitle]
    assert notes == ["SYNTHETIC CHILDREN: simulated data, not LEVANTE's\n1 of 3 models are random-init TEST MODELS "
                     "(not a capability result): younger"]  # marked as every comparison figure (plots.marks)
    ax = saved[-1].axes[0]
    ages = results.table("age_equivalence").set_index("model")
    markers = {line.get_label().split(":")[0]: line for line in ax.lines if line.get_marker() == "o"}
    mid = markers["mid"]
    assert (mid.get_xdata()[0], mid.get_ydata()[0]) == pytest.approx((ages.loc["mid", "age_equivalent"], 0.2))
    left, right = ax.get_xlim()
    assert left < 5 - 1 and right > 12 + 1  # room for models outside the children's ages
    young = markers["younger"]
    assert young.get_xdata()[0] < 5 and young.get_markerfacecolor() == "white"  # below youngest: open, at the edge
    assert ages.loc["younger", "age_ci_high_flag"] == "below_youngest"
    spans = [line for line in ax.lines if len(line.get_xdata()) == 2 and line.get_ydata()[0] == -3.0
             and line.get_ydata()[1] == -3.0]
    assert [max(line.get_xdata()) for line in spans] == pytest.approx([ages.loc["younger", "youngest_edge_age"]])
    assert any(text.arrow_patch is not None for text in ax.texts)  # open interval ends are arrows
    assert len(ax.collections) >= 2  # the children's points and the curve's band
    assert "EAP" in ax.get_ylabel() and "age" in ax.get_xlabel()


def test_curve_band_and_accuracy_intervals_recover_their_truth() -> None:
    """Recovery of the by-age readouts (compare.age_recovery): the curve's band covers the true curve where it is
    drawn (measured 0.90-0.99 per 1-year band of age, 100 replicates), and the children's accuracy per 1-year age
    band covers its population truth (measured 0.95 pooled over 280 bands, bias within 0.01)."""
    bands = curve_band_coverage(EdgeDesign(replicates=25))
    assert all(row["coverage"] >= 0.85 for row in bands.values()), bands
    assert bands["5-6"]["drawn"] < 0.5 and bands["8-9"]["drawn"] == 1.0  # not drawn at the edges
    found = accuracy_coverage(8)
    covered = sum(row["coverage"] * row["n"] for row in found.values()) / sum(row["n"] for row in found.values())
    assert covered >= 0.88 and all(abs(row["bias"]) < 0.03 for row in found.values()), found
