"""heatmap.png: accuracy of each model (rows) on each task column (original images), chance marked.

Each column's label carries its chance level (a slider column's: a uniformly random position's hit rate); a cell
whose 95% interval over items reaches down to chance is hatched and its value shown in parentheses (not above
chance). Every cell prints its number of items; a cell of fewer than MIN_ITEMS items (a sub-type of 2 or 3 items,
where one item moves the accuracy by a third or more) is drawn faded, so it does not read as boldly as a whole
task. A cell in which no response was parsed (a scorer gives no answer to slider items) reads n/a on the
background grey, not 0.00. Flagged (not comparable) cells show a "!". The title is the figure's (centred on the
whole figure, which is made at least as wide as the title) and names synthetic data or test models when the matrix
holds any.

Drawn with Pillow, not matplotlib: matplotlib's import and its Agg text rendering were two thirds of `summarize`'s
CPU at 100 result sets. `heatmap` decides what each square shows (colour, text, hatching); `render` only draws it.
Colours are matplotlib's viridis (`viridis`), the font Pillow's own scalable default; sizes are in pixels of the
figure's former 100 dpi.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from levante_tasks.atomic import atomic_path
from levante_tasks.runs.model import model_label
from levante_tasks.summary.viridis import viridis
from levante_tasks.summary.writers import reader_notes

MIN_ITEMS = 10  # fewer items than this: the cell is drawn faded
FADE = 0.65  # share of the background grey mixed into a faded cell's colour
BACKGROUND = (0xDD, 0xDD, 0xDD)  # a square without a score (no cell, or no response parsed)
BLACK, WHITE, HATCH_GREY = (0, 0, 0), (255, 255, 255), (140, 140, 140)
CELL_W, CELL_H = 75, 45  # a square's least size in pixels (0.75 x 0.45 inch at 100 dpi)
SMALL, LARGE = 10, 13  # font sizes in pixels: cells and labels (7 pt at 100 dpi), the title (9 pt)
PAD = 8  # pixels between the parts (labels, grid, colour bar, edges)
HATCH_STEP = 12  # pixels between the hatching's diagonals
LABEL_ANGLE = 60  # degrees the column labels are turned (anticlockwise), ending under their column
PNG_LEVEL = 3  # zlib level: at 100 result sets half the encoding time of Pillow's default (6), and 2% smaller
BAR_W, BAR_TICKS = 16, (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)  # the colour bar's width and its labelled values

RGB = tuple[int, int, int]


@dataclass(frozen=True)
class Square:
    """One grid square: where it is (row = model, column = task column), its colour, its text (lines) and ink, and
    the colour of its hatching (None: not hatched)."""

    row: int
    column: int
    fill: RGB
    text: str
    ink: RGB
    hatch: RGB | None


@dataclass(frozen=True)
class Heatmap:
    """What the figure shows: title lines, model (row) and column labels, and the squares that hold a cell."""

    title: list[str]
    rows: list[str]
    columns: list[str]
    squares: list[Square]


def _answered(cell: dict[str, Any]) -> bool:
    """Whether any response of the cell was parsed: without one its accuracy of 0 is no score (n/a)."""
    return bool(cell["parse_rate"])


def _pick(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """The cell shown when a model has several for one column (mismatches kept apart): unflagged, most seeds."""
    return min(cells, key=lambda c: (bool(c["flags"]), -c["n_replicates"], c["comparison_sig"]))


def _faded(colour: RGB) -> RGB:
    """`colour` mixed with the background grey (FADE of the grey)."""
    return tuple(round(FADE * b + (1 - FADE) * c) for b, c in zip(BACKGROUND, colour, strict=True))  # type: ignore


def _square(i: int, j: int, cell: dict[str, Any], chance: float | None) -> Square:
    """The square of one cell (its model's row i, column j): module docstring."""
    count = f"\nn={cell['n_items']}"
    if not _answered(cell):
        return Square(i, j, BACKGROUND, "n/a" + count, BLACK, None)
    faded = cell["n_items"] < MIN_ITEMS
    dark = not faded and cell["accuracy"] < 0.6
    colour = viridis(cell["accuracy"])
    text, low, hatch = f"{cell['accuracy']:.2f}", cell["ci95_low"], None
    if chance is not None and low is not None and low <= chance:
        text, hatch = f"({text})", WHITE if dark else HATCH_GREY
    return Square(i, j, _faded(colour) if faded else colour, text + ("!" if cell["flags"] else "") + count,
                  WHITE if dark else BLACK, hatch)


def heatmap(matrix: dict[str, Any]) -> Heatmap:
    """What the heatmap of a matrix (matrix.json's content) shows: the original-image cells, one per square."""
    columns = matrix["columns"]
    keys = [(m["model"], m["revision"], m["adapter"]) for m in matrix["models"]]
    originals: dict[tuple[str, ...], list[dict[str, Any]]] = {}  # each grid square's cells, in matrix order
    for c in matrix["cells"]:
        if c["variant"] == "original":
            square = (c["model"], c["revision"], c["adapter"], c["family"], c["task"], c["output_type"])
            originals.setdefault(square, []).append(c)
    squares = [_square(i, j, _pick(found), column["chance"])
               for j, column in enumerate(columns) for i, row in enumerate(keys)
               if (found := originals.get((*row, column["family"], column["task"], column["output_type"])))]
    title = ["accuracy (original images); hatched = 95% CI over items reaches chance",
             f"n = items; faded = fewer than {MIN_ITEMS} items; n/a = no response parsed (e.g. a scorer on sliders)",
             *reader_notes(matrix)]
    labels = [f"{c['task']}\nchance {c['chance']:.2f}" if c["chance"] is not None else f"{c['task']}\nchance n/a"
              for c in columns]
    return Heatmap(title, [model_label(m) for m in matrix["models"]], labels, squares)


def render(figure: Heatmap) -> Any:
    """The heatmap drawn as a Pillow RGB image: title on top (centred on the whole image, which is made at least as
    wide as its longest line), model labels left, column labels under their columns turned LABEL_ANGLE degrees,
    the viridis colour bar right."""
    from PIL import Image, ImageDraw, ImageFont

    small, large = ImageFont.load_default(SMALL), ImageFont.load_default(LARGE)
    labels = [_turned_label(text, small) for text in figure.columns]
    left = PAD + max((small.getlength(row) for row in figure.rows), default=0) + PAD
    bar_labels = [f"{value:.1f}" for value in BAR_TICKS]
    right = 2 * PAD + BAR_W + 4 + max(small.getlength(text) for text in bar_labels) + PAD
    top = PAD + LARGE * 1.4 * len(figure.title) + PAD
    bottom = PAD + max((label.height for label in labels), default=0) + PAD
    title_width = max(large.getlength(line) for line in figure.title) + 2 * PAD
    width = round(max(left + CELL_W * len(figure.columns) + right, title_width))
    cell_w = (width - left - right) / max(len(figure.columns), 1)  # the grid takes what the title widened
    height = round(top + CELL_H * len(figure.rows) + bottom)
    image = Image.new("RGB", (width, height), WHITE)
    draw = ImageDraw.Draw(image)
    for k, line in enumerate(figure.title):
        draw.text((width / 2, PAD + LARGE * 1.4 * k), line, font=large, fill=BLACK, anchor="ma")
    grid_x1, grid_y1 = left + cell_w * len(figure.columns), top + CELL_H * len(figure.rows)
    draw.rectangle((left, top, grid_x1, grid_y1), fill=BACKGROUND)
    for square in figure.squares:
        box = (round(left + cell_w * square.column), round(top + CELL_H * square.row),
               round(left + cell_w * (square.column + 1)), round(top + CELL_H * (square.row + 1)))
        draw.rectangle((box[0], box[1], box[2] - 1, box[3] - 1), fill=square.fill)
        if square.hatch is not None:
            image.paste(square.hatch, box, _hatching(box[2] - box[0], box[3] - box[1]))
        draw.multiline_text(((box[0] + box[2]) / 2, (box[1] + box[3]) / 2), square.text, font=small,
                            fill=square.ink, anchor="mm", align="center", spacing=2)
    draw.rectangle((left, top, grid_x1, grid_y1), outline=BLACK)
    for i, row in enumerate(figure.rows):
        y = top + CELL_H * (i + 0.5)
        draw.line((left - 4, y, left, y), fill=BLACK)
        draw.text((left - PAD, y), row, font=small, fill=BLACK, anchor="rm")
    for j, label in enumerate(labels):
        x = left + cell_w * (j + 0.5)
        draw.line((x, grid_y1, x, grid_y1 + 4), fill=BLACK)
        image.paste(BLACK, (round(x - label.width), round(grid_y1 + PAD)), label)
    _colour_bar(draw, (round(grid_x1 + PAD), round(top), round(grid_x1 + PAD + BAR_W), round(grid_y1)), small,
                bar_labels)
    return image


def _turned_label(text: str, font: Any) -> Any:
    """A column label as a mask ("L" image) turned LABEL_ANGLE degrees anticlockwise; its lines end flush right,
    so the turned label ends at its upper right corner, which goes under its column."""
    from PIL import Image, ImageDraw

    box = ImageDraw.Draw(Image.new("L", (1, 1))).multiline_textbbox((0, 0), text, font=font, spacing=2)
    mask = Image.new("L", (int(box[2]) + 2, int(box[3]) + 2), 0)
    ImageDraw.Draw(mask).multiline_text((0, 0), text, font=font, fill=255, align="right", spacing=2)
    return mask.rotate(LABEL_ANGLE, resample=Image.Resampling.BICUBIC, expand=True)


def _hatching(width: int, height: int) -> Any:
    """A mask of diagonals (lower left to upper right, HATCH_STEP apart) the size of a square."""
    from PIL import Image, ImageDraw

    mask = Image.new("L", (width, height), 0)
    draw = ImageDraw.Draw(mask)
    for x in range(-height, width, HATCH_STEP):
        draw.line((x, height, x + height, 0), fill=255, width=1)
    return mask


def _colour_bar(draw: Any, box: tuple[int, int, int, int], font: Any, labels: list[str]) -> None:
    """The viridis bar in `box` (1.0 at the top, 0.0 at the bottom), its values labelled right of it."""
    x0, y0, x1, y1 = box
    for y in range(y0, y1):
        draw.line((x0, y, x1, y), fill=viridis(1 - (y - y0 + 0.5) / (y1 - y0)))
    draw.rectangle(box, outline=BLACK)
    for value, text in zip(BAR_TICKS, labels, strict=True):
        y = y1 - value * (y1 - y0)
        draw.line((x1, y, x1 + 4, y), fill=BLACK)
        draw.text((x1 + 6, y), text, font=font, fill=BLACK, anchor="lm")


def write_heatmap(path: Path, matrix: dict[str, Any]) -> None:
    """Draw the heatmap of `matrix` and write it as a PNG, atomically."""
    image = render(heatmap(matrix))
    with atomic_path(path) as tmp:
        image.save(tmp, format="PNG", compress_level=PNG_LEVEL)
