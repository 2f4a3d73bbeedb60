"""Number-line stimuli drawn for releases that list none (egma-math `prompt_image` = TODO).

The 4-AFC image marks the answer with a dot (the child's task: read the marked number). The slider image is the
bare line with its end labels only: it must never show where the target is.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw, ImageFont, PngImagePlugin

from levante_tasks.atomic import atomic_path
from levante_tasks.schema import layout

WIDTH, HEIGHT = 800, 160
MARGIN = 60


def _label(value: float) -> str:
    return f"{value:g}"


def draw_number_line(low: float, high: float, marked: float | None) -> Image.Image:
    """An 800x160 number line from `low` to `high`, with a dot at `marked` (None = no dot)."""
    image = Image.new("RGB", (WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=24)
    y = HEIGHT // 2
    draw.line([(MARGIN, y), (WIDTH - MARGIN, y)], fill="black", width=4)
    for x, value in ((MARGIN, low), (WIDTH - MARGIN, high)):
        draw.line([(x, y - 18), (x, y + 18)], fill="black", width=4)
        draw.text((x, y + 28), _label(value), fill="black", font=font, anchor="mt")
    if marked is not None:
        x = MARGIN + (marked - low) / (high - low) * (WIDTH - 2 * MARGIN)
        draw.ellipse([(x - 11, y - 11), (x + 11, y + 11)], fill=(220, 30, 30))
    return image


def save_number_line(path: Path, low: float, high: float, marked: float | None) -> None:
    """Write the number line as PNG with no timestamp, so the bytes depend only on the arguments."""
    info = PngImagePlugin.PngInfo()
    info.add_text("Source", "levante-tasks generated number line")
    with atomic_path(path) as tmp:  # the writers' one temp-name scheme (pid-tagged; parallel writers never collide)
        draw_number_line(low, high, marked).save(tmp, format="PNG", pnginfo=info, optimize=False)


def number_line_relpath(low: float, high: float, marked: float | None) -> str:
    """Where a generated number line lives, relative to the version dir."""
    mark = "blank" if marked is None else _label(marked)
    return f"{layout.GENERATED_DIR}/egma-math/number-line-{mark}-{_label(low)}-{_label(high)}.png"
