"""The view by age: the children's ages, their accuracy per 1-year age band beside each model's, and their
theta-by-age curve with its band (age_curve.csv, the theta-by-age plot), per task and children's language.

- Children's accuracy: each child's proportion correct over the trials of the IRT items it answered (a missing
  `correct` skipped); per band [a, a + 1) of age, the mean over its children with a t interval (recovery: the
  band's population mean accuracy, docs/comparison.md). A model's accuracy is difficulty.csv's (its proportion
  correct over the items it answered). Children of an adaptive run answer items chosen for them, so accuracies
  compare only on the same items; theta and the age equivalent compare across item sets.
- Curve: the age-equivalence curve (`compare.age`) on a grid of ages, with its pointwise percentile band over the
  bootstrap curves, the band kept only between the `BAND_SHARE` and 1 - `BAND_SHARE` quantiles of the children's
  ages (isotonic end levels are biased outward: recovery measured 0.65-0.89 coverage within the youngest and
  oldest 10% of ages, 0.93-0.98 between them).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import stdtrit  # what scipy.stats.t.ppf evaluates, without scipy.stats' ~1 s import

from levante_tasks.compare.age import AgeCurves
from levante_tasks.compare.languages import language_name
from levante_tasks.markdown_table import markdown_table

BAND_SHARE = 0.10  # the curve's band is drawn between these quantiles of the children's ages (module docstring)
CURVE_POINTS = 71
PLOT_KIND = "theta_by_age"
BAND_COLUMNS = ["age_band", "band_low", "band_high", "n_children", "mean_accuracy", "ci_low", "ci_high"]
TABLE_COLUMNS = ["children's language", "children (age band) or model", "n", "accuracy [CI]"]


def child_accuracy(trials: pd.DataFrame) -> pd.DataFrame:
    """run_id, accuracy (proportion correct over its answered trials) and n_answered, per run of `trials`."""
    answered = trials[["run_id", "correct"]].dropna(subset=["correct"])
    grouped = answered.groupby("run_id", observed=True)["correct"]
    out = pd.DataFrame({"accuracy": grouped.mean(), "n_answered": grouped.size()}).reset_index()
    out["run_id"] = out["run_id"].astype(str)
    return out


def accuracy_by_age(children: pd.DataFrame, level: float) -> pd.DataFrame:
    """BAND_COLUMNS per 1-year band [a, a + 1) of `children`'s age (columns age, accuracy): the children's mean
    accuracy with its t interval (NaN for a band of one child, or of children who all scored alike: there the t
    interval is a point, a certainty two children at 0.83 do not give)."""
    rows = []
    valid = children.dropna(subset=["age", "accuracy"])
    for low, part in valid.groupby(np.floor(valid["age"].to_numpy(float))):
        n, values = len(part), part["accuracy"].to_numpy(float)
        mean, spread = float(values.mean()), float(values.std(ddof=1)) if n > 1 else 0.0
        half = float(stdtrit(n - 1, (1 + level) / 2) * spread / math.sqrt(n)) if spread > 0 else math.nan
        rows.append({"age_band": f"{low:g}-{low + 1:g}", "band_low": float(low), "band_high": float(low) + 1.0,
                     "n_children": int(n), "mean_accuracy": mean, "ci_low": max(mean - half, 0.0),
                     "ci_high": min(mean + half, 1.0)})
    return pd.DataFrame(rows, columns=BAND_COLUMNS)


def curve_table(curves: AgeCurves, age: np.ndarray, level: float) -> pd.DataFrame:
    """age, theta (the curve) and band_low / band_high on a grid over the children's ages (the band NaN outside
    its trimmed range)."""
    grid = np.linspace(curves.age_min, curves.age_max, CURVE_POINTS)
    theta, low, high = curves.band(grid, level)
    lo_age, hi_age = np.quantile(age, [BAND_SHARE, 1.0 - BAND_SHARE])
    shown = (grid >= lo_age) & (grid <= hi_age)
    return pd.DataFrame({"age": grid, "theta": theta, "band_low": np.where(shown, low, np.nan),
                         "band_high": np.where(shown, high, np.nan)})


def age_summary(ages: pd.Series, curves: AgeCurves | None) -> dict[str, object]:
    """The children's ages for comparison.json: range, median, how many have one, and the age curve's edges."""
    known = ages.dropna().to_numpy(float)
    out: dict[str, object] = {"n_with_age": int(len(known)), "n_without_age": int(ages.isna().sum()),
                              "min": float(known.min()) if len(known) else None,
                              "median": float(np.median(known)) if len(known) else None,
                              "max": float(known.max()) if len(known) else None}
    if curves is not None:
        out.update(youngest_edge_age=curves.youngest_edge_age, oldest_edge_age=curves.oldest_edge_age)
    return out


def add_children(task_trials: pd.DataFrame, children: pd.DataFrame, curves: AgeCurves | None, level: float,
                 front: dict[str, str]) -> tuple[dict[str, object], pd.DataFrame, pd.DataFrame]:
    """The by-age readouts of one comparison's children (`children`: run_id, age, theta_common): the summary for
    comparison.json and the accuracy_by_age / age_curve rows (`front`: task and children_language)."""
    with_accuracy = children[["run_id", "age"]].astype({"run_id": str}).merge(
        child_accuracy(task_trials), on="run_id", how="left")
    bands = accuracy_by_age(with_accuracy, level)
    with_age = children.dropna(subset=["age", "theta_common"])
    curve = (curve_table(curves, with_age["age"].to_numpy(float), level) if curves is not None
             else pd.DataFrame(columns=["age", "theta", "band_low", "band_high"]))
    summary = {"children_ages": age_summary(children["age"], curves),
               "accuracy_by_age": bands.to_dict(orient="records")}
    return summary, bands.assign(**front)[[*front, *BAND_COLUMNS]], curve.assign(**front)[[*front, *curve.columns]]


def figure_name(task: str, language: str) -> str:
    """The theta-by-age plot's file name (the plots' naming: `theta_by_age_<task>[_<locale>].png`)."""
    from levante_tasks.compare.plots import _name  # matplotlib is loaded only where plots are drawn

    return _name(PLOT_KIND, task, language)


def _fmt(value: object, digits: int = 2) -> str:
    """A number for a table cell ('n/a' for missing)."""
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def report_lines(task: str, info: dict, figures: list[Path]) -> list[str]:
    """comparison.md's by-age block of one task: the children's ages per language, the age intervals' edges and
    measured coverage, the theta-by-age plots, and children's accuracy per 1-year age band beside each model's."""
    languages = info.get("languages", {})
    if not languages:
        return []
    lines = [f"#### {task} by age", ""]
    for lang in languages.values():
        ages = lang.get("children_ages", {})
        if not ages:
            continue
        edges = (f"; an age-interval end reads below youngest up to {_fmt(ages['youngest_edge_age'], 1)} years and "
                 f"above oldest from {_fmt(ages['oldest_edge_age'], 1)}" if "youngest_edge_age" in ages else "")
        lines.append(f"- {language_name(lang['children_language'])}: children aged {_fmt(ages['min'], 1)}-"
                     f"{_fmt(ages['max'], 1)} years (median {_fmt(ages['median'], 1)}; {ages['n_with_age']} with an "
                     f"age, {ages['n_without_age']} without){edges}.")
    lines += ["", "Where the age interval is valid, measured by recovery (95% intervals, children aged 5-12; "
              "docs/comparison.md section 4): coverage 0.91-0.99 per 1-year band of true age from the youngest to the "
              "oldest child (0.95-0.99 in the youngest and oldest years), 0.99-1.00 for models up to 2.5 years "
              "younger than the youngest child; not measured further out. A high end \"below youngest\" bounds the "
              "age at the edge above, a low end \"below youngest\" is open (likewise above oldest). A numeric age "
              "within a year of the youngest or oldest child is biased inward.", ""]
    names = {p.name for p in figures}
    shown = [figure_name(task, code) for code in languages if figures and figure_name(task, code) in names]
    lines += [f"![{Path(name).stem}](plots/{name})" for name in shown] + ([""] if shown else [])
    rows = []
    for lang in languages.values():
        where = language_name(lang["children_language"])
        rows += [[where, f"children {band['age_band']}", str(band["n_children"]),
                  f"{_fmt(band['mean_accuracy'])} [{_fmt(band['ci_low'])}, {_fmt(band['ci_high'])}]"]
                 for band in lang.get("accuracy_by_age", [])]
        rows += [[where, f"{unit} ({res['locale']})", f"{res['n_items']} items",
                  _fmt(res["difficulty"].get("accuracy"))] for unit, res in lang["models"].items()]
    if rows:
        lines += ["Accuracy by 1-year age band (children: mean of each child's proportion correct over the items it "
                  "answered, t interval; models: proportion correct over the items answered; compare accuracies "
                  "only on the same items: accuracy_by_age.csv, difficulty.csv):", "",
                  markdown_table(TABLE_COLUMNS, rows), ""]
    return lines
