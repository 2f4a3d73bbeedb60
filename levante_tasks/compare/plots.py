"""PNG plots (matplotlib, Agg): accuracy vs difficulty, KL by ability bin, model theta among children.

Every title carries its sign convention (b higher = harder; negative r = child-aligned; KL(human || model)). One
plot per task and children's language (`<kind>_<task>.png` when the language was not recorded, else
`<kind>_<task>_<locale>.png`), its title naming the language. A figure of synthetic children, or one drawing a
random-init test model, carries a red note under its bottom-left corner saying so (comparison.json `data`), so a
PNG shown on its own cannot pass for a result.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from levante_tasks.atomic import atomic_path  # noqa: E402
from levante_tasks.compare.languages import NOT_RECORDED, language_name  # noqa: E402
from levante_tasks.compare.report import p_value_text  # noqa: E402

MAX_DETAILED = 12  # beyond this many models a task's plots summarise (no panel, legend or band per model)

if TYPE_CHECKING:
    from levante_tasks.compare.results import Results


def slug(text: str) -> str:
    """File-name-safe version of a model or task label."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


def _comparisons(table: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(task, children's language, rows) of a table per comparison (a table without the language column: one
    comparison per task, language not recorded)."""
    if not len(table):
        return []
    if "children_language" not in table.columns:
        table = table.assign(children_language=NOT_RECORDED)
    return [(task, language, part) for (task, language), part in table.groupby(["task", "children_language"])]


def _name(kind: str, task: str, language: str) -> str:
    """A plot's file name (module docstring)."""
    return f"{kind}_{slug(task)}.png" if language == NOT_RECORDED else f"{kind}_{slug(task)}_{slug(language)}.png"


def _title(task: str, language: str) -> str:
    """The task and, when recorded, the children's language, for a plot title."""
    return task if language == NOT_RECORDED else f"{task}, {language_name(language)} children"


def marks(data: Mapping[str, object], models: Iterable[str]) -> list[str]:
    """The notes a figure must carry: synthetic children (any evidence in comparison.json `data`), and random-init
    test models among the `models` it draws (`data.test_models`)."""
    drawn = sorted(set(models))
    tests = [m for m in drawn if m in set(data.get("test_models") or [])]
    notes = ["SYNTHETIC CHILDREN: simulated data, not LEVANTE's"] if data.get("synthetic_evidence") else []
    if tests and len(tests) == len(drawn):
        notes.append("TEST MODEL (random-init): a pipeline check, not a capability result")
    elif tests:
        notes.append(f"{len(tests)} of {len(drawn)} models are random-init TEST MODELS (not a capability result): "
                     f"{', '.join(tests[:2])}{', ...' if len(tests) > 2 else ''}")
    return notes


def _save(fig: plt.Figure, path: Path, notes: list[str]) -> None:
    """Save a figure atomically as PNG (its `notes` in red under its bottom-left corner) and close it."""
    if notes:
        fig.text(0.0, 0.0, "\n".join(notes), ha="left", va="top", fontsize=8, fontweight="bold", color="#c00000")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def accuracy_vs_difficulty(results: Results, folder: Path, data: Mapping[str, object]) -> list[Path]:
    """One scatter per task and children's language: item b (x) vs model correctness (y, jittered), a panel row
    per model; `data`: comparison.json's (`marks`)."""
    items, diff = results.table("model_items"), results.table("difficulty")
    paths = []
    for task, language, part in _comparisons(items):
        models = sorted(part["model"].unique())
        same = _rows_of(diff, task, language)
        path = folder / _name("accuracy_vs_difficulty", task, language)
        if len(models) > MAX_DETAILED:
            _save(_r_forest(_title(task, language), same), path, marks(data, models))
            paths.append(path)
            continue
        fig, axes = plt.subplots(len(models), 1, figsize=(6.5, 2.4 * len(models)), squeeze=False, layout="constrained")
        rng = np.random.default_rng(0)
        for ax, unit in zip(axes[:, 0], models, strict=True):
            rows = part[part["model"] == unit]
            ax.scatter(rows["b"], rows["correct"] + rng.uniform(-0.06, 0.06, len(rows)), s=12, alpha=0.6)
            stats = same[same["model"] == unit].iloc[0]
            ax.set_title(
                f"{unit}: r_pb = {stats['pearson_r']:.3f} "
                f"[{stats['pearson_ci_low']:.3f}, {stats['pearson_ci_high']:.3f}] (negative = child-aligned)",
                fontsize=8,
            )
            ax.set_yticks([0, 1], ["wrong", "right"])
        axes[-1, 0].set_xlabel("item difficulty b = -d/a1 (higher = harder for children)")
        fig.suptitle(f"{_title(task, language)}: model correctness vs children's item difficulty", fontsize=10)
        _save(fig, path, marks(data, models))
        paths.append(path)
    return paths


def _rows_of(table: pd.DataFrame, task: str, language: str) -> pd.DataFrame:
    """A table's rows of one comparison (all of the task's when the table has no language column)."""
    rows = table["task"] == task
    if "children_language" in table.columns:
        rows &= table["children_language"] == language
    return table[rows]


def _r_forest(task: str, diff: pd.DataFrame) -> plt.Figure:
    """Many models: r_pb with its CI per model (one row each), sorted by r; negative = child-aligned."""
    rows = diff.sort_values("pearson_r", na_position="first").reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(6.5, 1.2 + 0.14 * len(rows)), layout="constrained")
    y = np.arange(len(rows))
    low = (rows["pearson_r"] - rows["pearson_ci_low"]).to_numpy(float)
    high = (rows["pearson_ci_high"] - rows["pearson_r"]).to_numpy(float)
    ax.errorbar(rows["pearson_r"], y, xerr=[low, high], fmt="o", ms=3, lw=0.8)
    ax.axvline(0, color="0.5", lw=0.8)
    ax.set_yticks(y, rows["model"], fontsize=5)
    ax.set_xlabel("r_pb(correct, b) with CI; b = -d/a1 (higher = harder); negative = child-aligned")
    ax.set_title(f"{task}: accuracy vs children's item difficulty, {len(rows)} models", fontsize=10)
    return fig


def kl_by_bin(results: Results, folder: Path, data: Mapping[str, object]) -> list[Path]:
    """Per task and children's language: mean KL(human || model) per children's ability bin (top) and its
    difference from the uniform model's (bottom), a line per model. The baseline is drawn first and under the
    models, and the difference panel keeps a model at beta's bound (q close to uniform) visible as a line on zero
    instead of hidden. `data`: comparison.json's (`marks`)."""
    bins = results.table("kl_bins")
    summary = results.table("kl_summary")
    paths = []
    for task, language, part in _comparisons(bins):
        fits = _rows_of(summary, task, language).set_index("model")  # one row per model of this comparison
        fig, (ax, diff) = plt.subplots(2, 1, figsize=(6.5, 5.2), sharex=True, height_ratios=(3, 2),
                                       layout="constrained")
        uniform = part.drop_duplicates("bin_low").sort_values("bin_low")
        ax.plot(uniform["bin_low"] + 0.5, uniform["uniform_kl"], color="0.6", ls="--", lw=3.5, zorder=1,
                label="uniform model (baseline)")
        diff.axhline(0.0, color="0.6", ls="--", lw=3.5, zorder=1, label="uniform model")
        detailed = part["model"].nunique() <= MAX_DETAILED
        for i, (unit, rows) in enumerate(part.groupby("model")):
            rows = rows.sort_values("bin_low")
            label = _kl_label(unit, fits.loc[unit])
            style = {"color": f"C{i % 10}", "zorder": 3, "lw": 1.5 if detailed else 0.6,
                     "alpha": 1.0 if detailed else 0.4, "marker": "o" if detailed else None, "ms": 4}
            x = rows["bin_low"] + 0.5
            ax.plot(x, rows["mean_kl"], label=label if detailed else None, **style)
            diff.plot(x, rows["mean_kl"] - rows["uniform_kl"], **style)
        ax.set_ylabel("mean KL(human || model), nats")
        ax.set_title(f"{_title(task, language)}: response-distribution distance by ability\n(lower = closer; "
                     "count-weighted; descriptive, not an ability readout)", fontsize=10)
        ax.legend(fontsize=7)
        diff.set_ylabel("model - uniform KL, nats\n(< 0: closer than uniform)", fontsize=8)
        diff.set_xlabel("children's ability bin (theta, 1-logit bins; point at bin centre)")
        path = folder / _name("kl_by_bin", task, language)
        _save(fig, path, marks(data, part["model"]))
        paths.append(path)
    return paths


def _kl_label(unit: str, fit: pd.Series) -> str:
    """A KL legend entry read from the model's own kl_summary row of this task and language: its beta, whether
    that beta is at a bound of its range (an orders unit: its replicate count), and its permutation p-value with
    its Holm-adjusted value (compare.family)."""
    bound = " at its bound" if _true(fit.get("beta_at_bound")) else ""
    how = (f"q from {int(fit['replicates'])} orders" if pd.isna(fit.get("beta")) and pd.notna(fit.get("replicates"))
           else f"beta={fit['beta']:.3g}{bound}")  # an orders unit (compare.order_units) fits no beta
    return (f"{unit} ({how}; vs uniform p={p_value_text(fit.get('uniform_test_p'))}, "
            f"Holm p={p_value_text(fit.get('uniform_test_p_holm'))})")


def _true(value: object) -> bool:
    """A flag cell of a concatenated table (bool, or NaN where a comparison has none) read as a bool."""
    return bool(pd.notna(value) and value)


def theta_on_children(results: Results, folder: Path, data: Mapping[str, object]) -> list[Path]:
    """One histogram per task and children's language of children's theta with each model's theta, both EAP under
    the reference prior; `data`: comparison.json's (`marks`)."""
    children, thetas = results.table("children_theta"), results.table("model_theta")
    paths = []
    for task, language, part in _comparisons(children):
        fig, ax = plt.subplots(figsize=(6.5, 3.5), layout="constrained")
        ax.hist(part["theta_common"].dropna(), bins=30, color="0.75", label="children (EAP, reference prior)")
        models = _rows_of(thetas, task, language) if len(thetas) else thetas
        models = models[models["is_reference"].astype(bool)] if len(models) else models
        models = models[np.isfinite(models["theta"].astype(float))] if len(models) else models  # unscored: no line
        detailed = len(models) <= MAX_DETAILED
        for i, row in enumerate(models.itertuples()):
            color = f"C{i % 10}"
            if detailed:
                ax.axvline(row.theta, color=color, label=f"{row.model}: {row.theta:.2f} (SE {row.se:.2f})")
                ax.axvspan(row.theta - 1.96 * row.se, row.theta + 1.96 * row.se, color=color, alpha=0.12)
            else:
                ax.axvline(row.theta, color=color, lw=0.6, alpha=0.6)
        if not detailed:
            ax.plot([], [], color="C0", lw=0.6, label=f"{len(models)} models (one line each)")
        ax.set_xlabel("ability theta (EAP, reference group's prior, for children and models); bands = +- 1.96 SE")
        ax.set_ylabel("children")
        ax.set_title(f"{_title(task, language)}: model ability on the children's distribution", fontsize=10)
        ax.legend(fontsize=7)
        path = folder / _name("theta_on_children", task, language)
        _save(fig, path, marks(data, models["model"] if len(models) else []))
        paths.append(path)
    return paths


def write_all(results: Results, folder: Path, data: Mapping[str, object]) -> list[Path]:
    """All plots, marked by comparison.json's `data` (synthetic children, test models); returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    return (
        accuracy_vs_difficulty(results, folder, data)
        + kl_by_bin(results, folder, data)
        + theta_on_children(results, folder, data)
    )
