"""heatmap.png: accuracy of each model (rows) on each task column (original images), chance marked.

Each column's label carries its chance level (a slider column's: a uniformly random position's hit rate); a cell
whose 95% interval over items reaches down to chance is hatched and its value shown in parentheses (not above
chance). Every cell prints its number of items; a cell of fewer than MIN_ITEMS items (a sub-type of 2 or 3 items,
where one item moves the accuracy by a third or more) is drawn faded, so it does not read as boldly as a whole
task. A cell in which no response was parsed (a scorer gives no answer to slider items) reads n/a on the
background grey, not 0.00. Flagged (not comparable) cells show a "!". The title is the figure's (centred on the
whole figure, which is made at least as wide as the title) and names synthetic data or test models when the matrix
holds any.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from levante_tasks.atomic import atomic_path
from levante_tasks.runs.model import model_label
from levante_tasks.summary.writers import reader_notes

MIN_ITEMS = 10  # fewer items than this: the cell is drawn faded
FADE = 0.65  # share of the background grey mixed into a faded cell's colour
BACKGROUND = "#dddddd"


def _answered(cell: dict[str, Any]) -> bool:
    """Whether any response of the cell was parsed: without one its accuracy of 0 is no score (n/a)."""
    return bool(cell["parse_rate"])


def _pick(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """The cell shown when a model has several for one column (mismatches kept apart): unflagged, most seeds."""
    return min(cells, key=lambda c: (bool(c["flags"]), -c["n_replicates"], c["comparison_sig"]))


def write_heatmap(path: Path, matrix: dict[str, Any]) -> None:
    """Draw the heatmap with matplotlib's Agg canvas (no display, no pyplot state) and write it atomically."""
    from matplotlib import colormaps
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize, to_rgba
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    columns = matrix["columns"]
    models = [model_label(m) for m in matrix["models"]]
    keys = [(m["model"], m["revision"], m["adapter"]) for m in matrix["models"]]
    # margins in inches for the rotated column labels and the model labels (7 pt: ~0.06 inch a character)
    left = 0.3 + 0.06 * max((len(m) for m in models), default=1)
    bottom = 0.5 + 0.045 * max((len(c["task"]) for c in columns), default=1)
    title = "accuracy (original images); hatched = 95% CI over items reaches chance"
    key = f"n = items; faded = fewer than {MIN_ITEMS} items; n/a = no response parsed (e.g. a scorer on sliders)"
    notes = reader_notes(matrix)
    lines = [title, key, *notes]
    # 9 pt title: ~0.075 inch a character; the figure is at least as wide as its longest title line
    width = max(left + 1.2 + 0.75 * len(columns), 0.4 + 0.075 * max(len(line) for line in lines))
    top = 0.25 + 0.18 * len(lines)
    height = bottom + top + 0.1 + 0.45 * len(models)
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=left / width, right=1 - 1.0 / width, bottom=bottom / height, top=1 - top / height)
    ax = fig.add_subplot()
    cmap, background = colormaps["viridis"], to_rgba(BACKGROUND)
    grid = [[background] * len(columns) for _ in models]
    originals: dict[tuple[str, ...], list[dict[str, Any]]] = {}  # each grid square's cells, in matrix order
    for c in matrix["cells"]:
        if c["variant"] == "original":
            square = (c["model"], c["revision"], c["adapter"], c["family"], c["task"], c["output_type"])
            originals.setdefault(square, []).append(c)
    for j, column in enumerate(columns):
        for i, row in enumerate(keys):
            found = originals.get((*row, column["family"], column["task"], column["output_type"]))
            if not found:
                continue
            cell = _pick(found)
            count = f"\nn={cell['n_items']}"
            if not _answered(cell):
                ax.text(j, i, "n/a" + count, ha="center", va="center", fontsize=7, color="black")
                continue
            faded = cell["n_items"] < MIN_ITEMS
            colour = cmap(cell["accuracy"])
            if faded:
                colour = tuple(FADE * b + (1 - FADE) * c for b, c in zip(background, colour, strict=True))
            grid[i][j] = colour
            dark = not faded and cell["accuracy"] < 0.6
            chance, low = column["chance"], cell["ci95_low"]
            text = f"{cell['accuracy']:.2f}"
            if chance is not None and low is not None and low <= chance:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="//", lw=0,
                                       edgecolor="white" if dark else "0.55"))
                text = f"({text})"
            ax.text(j, i, text + ("!" if cell["flags"] else "") + count, ha="center", va="center", fontsize=7,
                    color="white" if dark else "black")
    ax.imshow(grid, aspect="auto")
    labels = [f"{c['task']}\nchance {c['chance']:.2f}" if c["chance"] is not None else f"{c['task']}\nchance n/a"
              for c in columns]
    ax.set_xticks(range(len(columns)), labels, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(models)), models, fontsize=7)
    fig.suptitle("\n".join(lines), fontsize=9, y=1 - 0.1 / height, va="top")
    fig.colorbar(ScalarMappable(Normalize(0.0, 1.0), cmap), ax=ax, fraction=0.03, pad=0.02)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})
