"""The theta-by-age plot (matplotlib, Agg): per task and children's language, the children's theta by age with
their age curve and its band, and each model placed on it at its theta and age equivalent, with both intervals.

Read from the output tables (children_theta, age_curve, age_equivalence), so the plot shows what the CSVs hold.
A model whose age equivalent is below youngest / above oldest is drawn at that edge of the axis with an open
marker; an interval end that reads below youngest / above oldest is drawn as an arrow to the axis edge.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from levante_tasks.compare.age import ABOVE, BELOW  # noqa: E402
from levante_tasks.compare.age_view import BAND_SHARE, figure_name  # noqa: E402
from levante_tasks.compare.plots import MAX_DETAILED, _comparisons, _rows_of, _save, _title, marks  # noqa: E402

if TYPE_CHECKING:
    from levante_tasks.compare.results import Results

MARGIN = 1.5  # years shown beyond the children's youngest and oldest ages (for models outside them)
Z95 = 1.959963984540054


def theta_by_age(results: Results, folder: Path, data: Mapping[str, object]) -> list[Path]:
    """One plot per task and children's language that has children with an age, marked by comparison.json's `data`
    (plots.marks); returns their paths."""
    children, curves, ages = (results.table(name) for name in ("children_theta", "age_curve", "age_equivalence"))
    paths = []
    for task, language, part in _comparisons(children):
        part = part.dropna(subset=["age", "theta_common"])
        curve = _rows_of(curves, task, language) if len(curves) else curves
        if len(part) < 2 or not len(curve):
            continue
        models = _rows_of(ages, task, language) if len(ages) else ages
        models = models[np.isfinite(models["theta"].astype(float))] if len(models) else models
        path = folder / figure_name(task, language)
        drawn = models["model"] if len(models) else []
        _save(_figure(_title(task, language), part, curve, models), path, marks(data, drawn))
        paths.append(path)
    return paths


def _figure(title: str, children: pd.DataFrame, curve: pd.DataFrame, models: pd.DataFrame) -> plt.Figure:
    """The children's points, curve and band, and the models with their intervals."""
    fig, ax = plt.subplots(figsize=(11, 5), layout="constrained")
    young, old = float(children["age"].min()), float(children["age"].max())
    left, right = young - MARGIN, old + MARGIN
    for start, end in ((left, young), (old, right)):
        ax.axvspan(start, end, color="0.93", zorder=0)
    ax.scatter(children["age"], children["theta_common"], s=6, color="0.55", alpha=min(1.0, 60 / len(children) ** 0.5),
               lw=0, zorder=1, label=f"children ({len(children)}; EAP theta, reference prior)")
    ax.plot(curve["age"], curve["theta"], color="k", lw=2, zorder=3, label="children's curve (isotonic, used for the "
            "age equivalent)")
    ax.fill_between(curve["age"], curve["band_low"], curve["band_high"], color="k", alpha=0.18, lw=0, zorder=2,
                    label=f"curve's 95% band (bootstrap; shown between the {BAND_SHARE:.0%} and "
                          f"{1 - BAND_SHARE:.0%} age quantiles)")
    detailed = len(models) <= MAX_DETAILED
    for i, row in enumerate(models.itertuples()):
        _model(ax, row, f"C{i % 10}", (left, young, old, right), detailed)
    if not detailed:
        ax.plot([], [], "o", color="C0", ms=3, label=f"{len(models)} models (theta +- 1.96 SE, age interval)")
    ax.set_xlim(left, right)
    ax.set_xlabel(f"age (years); shaded: outside the children's ages ({young:.1f}-{old:.1f})")
    ax.set_ylabel("ability theta (EAP, reference group's prior)")
    ax.set_title(f"{title}: children's ability by age, models at their theta and age equivalent\n(model: theta +- "
                 "1.96 SE vertically, 95% age interval horizontally; arrow: interval open at that edge)", fontsize=9)
    ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return fig


def _model(ax: plt.Axes, row: object, color: str, edges: tuple[float, float, float, float], detailed: bool) -> None:
    """One model: its marker at (age equivalent, theta), the theta interval and the age interval (arrows at open
    ends; a point below youngest / above oldest sits on that axis edge with an open marker)."""
    left, _, _, right = edges
    get = row.__getattribute__
    theta, se = float(get("theta")), float(get("se"))
    flag = _flag(get("age_flag"))
    if flag and flag not in (BELOW, ABOVE):
        return  # no age equivalent (e.g. fewer than 2 children with an age)
    x = {BELOW: left + 0.15, ABOVE: right - 0.15}.get(flag, float(get("age_equivalent")))
    low_flag, high_flag = _flag(get("age_ci_low_flag")), _flag(get("age_ci_high_flag"))
    low = {BELOW: left, ABOVE: float(get("oldest_edge_age"))}.get(low_flag, float(get("age_ci_low")))
    high = {ABOVE: right, BELOW: float(get("youngest_edge_age"))}.get(high_flag, float(get("age_ci_high")))
    ax.errorbar(x, theta, yerr=Z95 * se, color=color, lw=1, capsize=2 if detailed else 0, zorder=4)
    ax.plot([low, high], [theta, theta], color=color, lw=1.2, zorder=4)
    for end, is_open, direction in ((low, low_flag == BELOW, -1), (high, high_flag == ABOVE, 1)):
        if is_open:
            ax.annotate("", xy=(end, theta), xytext=(end - direction * 0.35, theta), zorder=4,
                        arrowprops={"arrowstyle": "->", "color": color, "lw": 1.2})
    label = f"{get('model')}: theta {theta:.2f} (SE {se:.2f}), age {_age_text(row)}" if detailed else None
    ax.plot(x, theta, "o", ms=5 if detailed else 3, color=color, mfc="white" if flag else color, zorder=5,
            label=label)


def _flag(value: object) -> str:
    """A flag cell as text ('' for an empty cell, which reads back as NaN)."""
    return value if isinstance(value, str) else ""


def _age_text(row: object) -> str:
    """The age equivalent and its interval as comparison.md shows them, shortened."""
    get = row.__getattribute__

    def one(value: object, flag: object) -> str:
        return {BELOW: "<youngest", ABOVE: ">oldest"}.get(_flag(flag), f"{float(value):.1f}")

    return (f"{one(get('age_equivalent'), get('age_flag'))} "
            f"[{one(get('age_ci_low'), get('age_ci_low_flag'))}, {one(get('age_ci_high'), get('age_ci_high_flag'))}]")
