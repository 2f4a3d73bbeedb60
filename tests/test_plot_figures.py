"""Issue 18.7: the heatmap's and the KL plot's fixes, checked on what each figure shows: the heatmap's squares and
its pixels (Pillow), the KL plot's matplotlib figure objects.

summary heatmap: the figure is widened so a long title fits; a slider column shows its chance (from the slider
records' chance_level) instead of "chance ?". compare KL plot: the uniform baseline is drawn under the model lines
and a difference panel keeps a model at beta's bound (KL equal to the baseline's) visible.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import compare_inputs
import pandas as pd
import pytest
from matplotlib import colormaps
from matplotlib.figure import Figure
from PIL import Image

from levante_tasks.compare import plots
from levante_tasks.compare.results import Results
from levante_tasks.core import records
from levante_tasks.core.parsing import Parsed
from levante_tasks.summary import matrix as matrix_mod
from levante_tasks.summary import plot as heatmap_plot
from levante_tasks.summary import viridis
from levante_tasks.summary.plot import write_heatmap
from levante_tasks.summary.units import Unit, record_counts

LONG_ID = "an-organisation-with-a-long-name/a-vision-language-model-checkpoint-with-a-very-long-public-id"


@pytest.fixture
def saved(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    """The figures saved while the test runs (the real savefig still writes the file, after the draw)."""
    figures: list[Figure] = []
    real = Figure.savefig

    def keep(self: Figure, *args: Any, **kwargs: Any) -> None:
        figures.append(self)
        real(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    return figures


def unit(task: str, recs: list[dict[str, Any]], parent: str = "") -> Unit:
    seeds = {"random": 0, "numpy": 0, "torch": 0, "fewshot": 0}
    return Unit(source="run/results.json", date="2026-01-01", leaf=f"levante_{task}",
                row=(LONG_ID, "0123456789abcdef", "levante_fixed"), family=recs[0]["task"], task=task, parent=parent,
                output_type="generate_until", variant="original", replicate=(0, 0, 0, 0, 0),
                provenance={"seeds": seeds}, comparison={}, signature="s", test_model=True, **record_counts(recs))


def heatmap_matrix() -> dict[str, Any]:
    """One model (a test model with a long id: a long title line) on a slider task and a 3-option task."""
    sliders = [records.slider_record({"item_uid": f"s{k}", "task": "egma-math", "trial_type": "Number Line Slider",
                                      "seed": 0, "variant": "original", "presented_order": [0], "range_min": 0.0,
                                      "range_max": 10.0, "answer": "3"}, 0.1 * k, "lone_number") for k in range(6)]
    choices = [records.choice_record({"item_uid": f"t{k}", "task": "trog", "trial_type": "noun", "seed": 0,
                                      "variant": "original", "presented_order": [2, 0, 1], "letters": ["A", "B", "C"]},
                                     Parsed("AB"[k % 2], "lone_letter")) for k in range(6)]
    built = matrix_mod.build([unit("egma_math_slider", sliders), unit("trog", choices)])
    return {"models": built.models, "columns": built.columns, "cells": built.cells}


def inked_span(image: Any, top: int, bottom: int) -> tuple[int, int]:
    """The first and last pixel column holding ink (a pixel darker than mid-grey) between rows top and bottom."""
    ink = image.convert("L").crop((0, top, image.width, bottom)).point(lambda v: 255 if v < 128 else 0)
    left, _, right, _ = ink.getbbox()
    return left, right - 1


def test_heatmap_title_fits_and_the_slider_column_shows_its_chance(tmp_path: Path) -> None:
    figure = heatmap_plot.heatmap(heatmap_matrix())
    assert any(LONG_ID in line for line in figure.title)  # the test-model note names the model
    assert figure.columns == ["egma_math_slider\nchance 0.30", "trog\nchance 0.33"]
    write_heatmap(tmp_path / "heatmap.png", heatmap_matrix())
    image = Image.open(tmp_path / "heatmap.png")
    assert image.format == "PNG" and image.size == heatmap_plot.render(figure).size
    band = heatmap_plot.PAD + round(heatmap_plot.LARGE * 1.4 * len(figure.title))  # the title lines' rows
    first, last = inked_span(image, 0, band)
    assert last - first > 0.5 * image.width  # a title long enough to be cut by an image sized for the grid
    assert 0 < first and last < image.width - 1, (first, last, image.width)  # and it is not cut


def item_count_matrix() -> dict[str, Any]:
    """A slider column no response of which was parsed (a scorer's empty answer), a 12-item task and a 2-item
    sub-type of it."""
    sliders = [records.slider_record({"item_uid": f"s{k}", "task": "egma-math", "trial_type": "Number Line Slider",
                                      "seed": 0, "variant": "original", "presented_order": [0], "range_min": 0.0,
                                      "range_max": 10.0, "answer": "3"}, None, "none") for k in range(3)]
    choices = [records.choice_record({"item_uid": f"t{k}", "task": "trog", "trial_type": "noun", "seed": 0,
                                      "variant": "original", "presented_order": [2, 0, 1], "letters": ["A", "B", "C"]},
                                     Parsed("AB"[k % 2], "lone_letter")) for k in range(12)]
    built = matrix_mod.build([unit("egma_math_slider", sliders), unit("trog", choices),
                              unit("trog/noun", choices[:2], parent="levante_trog")])
    return {"models": built.models, "columns": built.columns, "cells": built.cells}


def test_heatmap_greys_out_few_items_and_shows_an_unanswered_slider_as_na(tmp_path: Path) -> None:
    """Issue 31.5: a 2-item sub-type cell is drawn faded (a whole task at full colour), every cell prints its item
    count, and a slider column without a parsed response reads n/a on the background, not 0.00."""
    matrix = item_count_matrix()
    figure = heatmap_plot.heatmap(matrix)
    columns = [c["task"] for c in matrix["columns"]]
    cells = {c["task"]: c for c in matrix["cells"]}
    squares = {columns[s.column]: s for s in figure.squares}
    assert squares["egma_math_slider"].text == "n/a\nn=3" and cells["egma_math_slider"]["accuracy"] == 0.0
    assert squares["egma_math_slider"].fill == heatmap_plot.BACKGROUND
    whole, part = cells["trog"], cells["trog/noun"]
    assert squares["trog"].text.endswith("\nn=12") and squares["trog/noun"].text.endswith("\nn=2")
    assert squares["trog"].fill == matplotlib_viridis(whole["accuracy"])
    full, grey = matplotlib_viridis(part["accuracy"]), heatmap_plot.BACKGROUND
    assert squares["trog/noun"].fill != full  # faded toward the background grey
    assert all(min(f, g) <= d <= max(f, g) for d, f, g in zip(squares["trog/noun"].fill, full, grey, strict=True))
    assert any("faded = fewer than 10 items" in line for line in figure.title)
    write_heatmap(tmp_path / "heatmap.png", matrix)
    counts = dict((colour, n) for n, colour in Image.open(tmp_path / "heatmap.png").getcolors(1 << 20))
    area = heatmap_plot.CELL_W * heatmap_plot.CELL_H
    for square in squares.values():  # each square's colour fills most of a square's pixels (the text takes the rest)
        assert counts.get(square.fill, 0) > 0.6 * area, (square, counts.get(square.fill))


def matplotlib_viridis(value: float) -> tuple[int, ...]:
    """matplotlib's own viridis colour of `value`, as the 8 bits an image holds."""
    return tuple(round(255 * v) for v in colormaps["viridis"](value)[:3])


def test_the_heatmap_viridis_is_matplotlibs() -> None:
    """The table the heatmap draws with holds matplotlib's 256 viridis colours, and picks them as matplotlib does."""
    assert [matplotlib_viridis(k / 256) for k in range(256)] == [viridis.viridis(k / 256) for k in range(256)]
    for value in (0.0, 0.2999, 0.3, 0.5, 0.99, 0.999999, 1.0):
        assert viridis.viridis(value) == matplotlib_viridis(value), value


def kl_results() -> Results:
    """Two models on one task: `bounded` at beta's bound (its KL is the uniform model's in every bin)."""
    results = Results()
    uniform = [0.9, 0.7, 0.5]
    rows = [{"task": "trog", "model": model, "bin_low": b, "uniform_kl": u, "mean_kl": kl, "beta": beta}
            for model, beta, kls in (("bounded", 0.0, uniform), ("aligned", 1.5, [0.6, 0.4, 0.45]))
            for b, u, kl in zip((-2, -1, 0), uniform, kls, strict=True)]
    results.add("kl_bins", pd.DataFrame(rows))
    results.add("kl_summary", pd.DataFrame([{"model": "bounded", "task": "trog", "beta": 0.0, "beta_at_bound": True,
                                             "uniform_test_p": 1.0},
                                            {"model": "aligned", "task": "trog", "beta": 1.5,
                                             "beta_at_bound": False, "uniform_test_p": 0.01}]))
    return results


def test_kl_plot_keeps_a_model_at_beta_bound_above_the_baseline(tmp_path: Path, saved: list[Figure]) -> None:
    assert plots.kl_by_bin(kl_results(), tmp_path, {}) == [tmp_path / "kl_by_bin_trog.png"]
    (fig,) = saved
    assert len(fig.axes) == 2  # the KL panel and the difference panel
    top, diff = fig.axes
    baseline = next(line for line in top.get_lines() if line.get_label() == "uniform model (baseline)")
    bounded = next(line for line in top.get_lines() if line.get_label().startswith("bounded"))
    assert "at its bound" in bounded.get_label()
    assert list(bounded.get_ydata()) == list(baseline.get_ydata())  # same points: only the order shows the model
    assert bounded.get_zorder() > baseline.get_zorder()
    zero = next(line for line in diff.get_lines() if line.get_label() == "uniform model")
    drawn = [line for line in diff.get_lines() if line is not zero]
    assert len(drawn) == 2 and all(line.get_zorder() > zero.get_zorder() for line in drawn)
    on_zero = [line for line in drawn if line.get_color() == bounded.get_color()]
    assert len(on_zero) == 1 and list(on_zero[0].get_ydata()) == [0.0, 0.0, 0.0]
    assert "model - uniform KL" in diff.get_ylabel()


def test_kl_plot_says_at_its_bound_per_model_task_and_language(tmp_path: Path, saved: list[Figure]) -> None:
    """Issue 31.5: one model at beta's bound in one comparison only; every other plot gives its own beta unflagged
    (a flag kept per model over all tasks marked all of them)."""
    fits = {("trog", "en"): {"m1": 1.5, "m2": 0.025}, ("trog", "de"): {"m1": 0.025, "m2": 2.0},
            ("vocab", "en"): {"m1": 0.7, "m2": 3.0}}
    bins, summary = [], []
    for (task, language), betas in fits.items():
        for model, beta in betas.items():
            bins += [{"task": task, "children_language": language, "model": model, "bin_low": b, "uniform_kl": 0.8,
                      "mean_kl": 0.7, "beta": beta} for b in (-1, 0)]
            summary.append({"task": task, "children_language": language, "model": model, "beta": beta,
                            "beta_at_bound": beta == 0.025, "uniform_test_p": 0.5})
    results = Results()
    results.add("kl_bins", pd.DataFrame(bins))
    results.add("kl_summary", pd.DataFrame(summary))
    paths = plots.kl_by_bin(results, tmp_path, {})
    assert [p.name for p in paths] == ["kl_by_bin_trog_de.png", "kl_by_bin_trog_en.png", "kl_by_bin_vocab_en.png"]
    labels = {}
    for path, fig in zip(paths, saved, strict=True):
        for line in fig.axes[0].get_lines():
            if line.get_label().startswith("m"):
                labels[path.stem.removeprefix("kl_by_bin_"), line.get_label().split(" ")[0]] = line.get_label()
    assert len(labels) == 6
    for (comparison, model), label in labels.items():
        task, language = comparison.split("_")
        beta = fits[task, language][model]
        assert f"beta={beta:.3g}" in label
        assert ("at its bound" in label) == (beta == 0.025), (comparison, model, label)


def all_plot_results(models: list[str]) -> Results:
    """One task (language not recorded), `models` on three items: every table the three plot kinds read."""
    results = Results()
    results.add("model_items", pd.DataFrame([{"task": "trog", "model": m, "b": b, "correct": int(b < 0)}
                                             for m in models for b in (-1.0, 0.0, 1.0)]))
    results.add("difficulty", pd.DataFrame([{"task": "trog", "model": m, "pearson_r": -0.5, "pearson_ci_low": -0.9,
                                             "pearson_ci_high": 0.2} for m in models]))
    results.add("kl_bins", pd.DataFrame([{"task": "trog", "model": m, "bin_low": b, "uniform_kl": 0.8,
                                          "mean_kl": 0.7, "beta": 1.0} for m in models for b in (-1, 0)]))
    results.add("kl_summary", pd.DataFrame([{"task": "trog", "model": m, "beta": 1.0, "beta_at_bound": False,
                                             "uniform_test_p": 0.5, "uniform_test_p_holm": 1.0} for m in models]))
    results.add("children_theta", pd.DataFrame({"task": "trog", "theta_common": [-1.0, 0.0, 0.5, 1.0]}))
    results.add("model_theta", pd.DataFrame([{"task": "trog", "model": m, "is_reference": True, "theta": 0.2,
                                              "se": 0.4} for m in models]))
    return results


def figure_notes(fig: Figure) -> list[str]:
    """The figure-level texts other than its title (the marks)."""
    return [text.get_text() for text in fig.texts if text is not fig._suptitle]


SYNTHETIC = "SYNTHETIC CHILDREN: simulated data, not LEVANTE's"
TEST_MODEL = "TEST MODEL (random-init): a pipeline check, not a capability result"


@pytest.mark.parametrize(("data", "models", "notes"), [
    ({"synthetic_evidence": ["SYNTHETIC.md beside trials.csv"], "test_models": ["tiny"]}, ["tiny"],
     [SYNTHETIC, TEST_MODEL]),
    ({"synthetic_evidence": [], "test_models": ["tiny", "other run's"]}, ["tiny", "real"],
     ["1 of 2 models are random-init TEST MODELS (not a capability result): tiny"]),
    ({"synthetic_evidence": [], "test_models": []}, ["tiny", "real"], []),
    ({"synthetic_evidence": ["x"], "test_models": [f"m{k:02d}" for k in range(13)]},
     [f"m{k:02d}" for k in range(13)], [SYNTHETIC, TEST_MODEL]),  # past MAX_DETAILED: the summarised plots too
])
def test_every_comparison_figure_is_marked(tmp_path: Path, saved: list[Figure], data: dict, models: list[str],
                                           notes: list[str]) -> None:
    """Issue 31.5: each PNG says, on itself, that its children are synthetic or its model a random-init test
    model (comparison.json `data`), and says nothing when neither holds."""
    paths = plots.write_all(all_plot_results(models), tmp_path, data)
    assert [p.name for p in paths] == ["accuracy_vs_difficulty_trog.png", "kl_by_bin_trog.png",
                                       "theta_on_children_trog.png"]
    assert len(saved) == 3
    for fig in saved:
        assert figure_notes(fig) == (["\n".join(notes)] if notes else [])


def test_compare_marks_the_plots_of_synthetic_children(tmp_path: Path, saved: list[Figure]) -> None:
    """The compare run hands its `data` to the plots: trials whose dataset is synthetic mark every figure."""
    trials = compare_inputs.trog_trials().assign(dataset="synthetic")
    out, summary = compare_inputs.compare(tmp_path, trials, compare_inputs.records(tmp_path / "records.csv"),
                                          plots=True)
    assert summary["data"]["synthetic_evidence"] and len(saved) == 4  # the three of write_all, the theta by age
    assert all(len(figure_notes(fig)) == 1 and SYNTHETIC in figure_notes(fig)[0] for fig in saved)
    assert len(list((out / "plots").glob("*.png"))) == 4
