"""Pillow drawing primitives for the synthetic release: coloured shapes, scenes, cards, number lines, text.

Everything is drawn from explicit coordinates (no randomness here) so that the same inputs give the same pixels;
callers pass positions drawn from their own seeded generator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont
from PIL.PngImagePlugin import PngInfo

SYNTHETIC_TAG = "levante-tasks synthetic"
WHITE = (255, 255, 255)
INK = (20, 20, 20)

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 38, 38),
    "blue": (37, 99, 235),
    "green": (22, 163, 74),
    "yellow": (234, 179, 8),
    "purple": (147, 51, 234),
    "orange": (249, 115, 22),
    "pink": (236, 72, 153),
    "brown": (120, 72, 32),
    "gray": (128, 128, 128),
    "teal": (13, 148, 136),
    "maroon": (128, 0, 32),
    "black": INK,
}

Point = tuple[float, float]


def canvas(width: int = 224, height: int = 224, colour: tuple[int, int, int] = WHITE) -> Image.Image:
    """A blank RGB image (white unless told otherwise)."""
    return Image.new("RGB", (width, height), colour)


def _regular(cx: float, cy: float, r: float, n: int, start_deg: float = -90.0) -> list[Point]:
    step = 2 * math.pi / n
    start = math.radians(start_deg)
    return [(cx + r * math.cos(start + k * step), cy + r * math.sin(start + k * step)) for k in range(n)]


def _star(cx: float, cy: float, r: float) -> list[Point]:
    points = []
    for k in range(10):
        radius = r if k % 2 == 0 else r * 0.45
        angle = math.radians(-90 + 36 * k)
        points.append((cx + radius * math.cos(angle), cy + radius * math.sin(angle)))
    return points


def _polygon(kind: str, cx: float, cy: float, r: float) -> list[Point]:
    if kind == "square":
        return [(cx - r * 0.85, cy - r * 0.85), (cx + r * 0.85, cy - r * 0.85),
                (cx + r * 0.85, cy + r * 0.85), (cx - r * 0.85, cy + r * 0.85)]
    if kind == "triangle":
        return _regular(cx, cy + r * 0.15, r * 1.05, 3)
    if kind == "star":
        return _star(cx, cy, r)
    if kind == "diamond":
        return [(cx, cy - r), (cx + r * 0.7, cy), (cx, cy + r), (cx - r * 0.7, cy)]
    if kind == "pentagon":
        return _regular(cx, cy, r, 5)
    if kind == "hexagon":
        return _regular(cx, cy, r, 6, start_deg=0.0)
    if kind == "cross":
        t = r * 0.33
        return [(cx - t, cy - r), (cx + t, cy - r), (cx + t, cy - t), (cx + r, cy - t), (cx + r, cy + t),
                (cx + t, cy + t), (cx + t, cy + r), (cx - t, cy + r), (cx - t, cy + t), (cx - r, cy + t),
                (cx - r, cy - t), (cx - t, cy - t)]
    if kind == "trapezoid":
        return [(cx - r * 0.5, cy - r * 0.6), (cx + r * 0.5, cy - r * 0.6),
                (cx + r, cy + r * 0.6), (cx - r, cy + r * 0.6)]
    if kind == "arrow":
        return [(cx - r, cy - r * 0.25), (cx + r * 0.2, cy - r * 0.25), (cx + r * 0.2, cy - r * 0.65),
                (cx + r, cy), (cx + r * 0.2, cy + r * 0.65), (cx + r * 0.2, cy + r * 0.25),
                (cx - r, cy + r * 0.25)]
    raise ValueError(f"unknown shape {kind!r}")


def draw_shape(img: Image.Image, kind: str, cx: float, cy: float, r: float,
               fill: tuple[int, int, int], background: tuple[int, int, int] = WHITE) -> None:
    """Draw one filled shape of radius ~r centred at (cx, cy)."""
    draw = ImageDraw.Draw(img)
    if kind == "circle":
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=fill)
    elif kind == "oval":
        draw.ellipse((cx - r, cy - r * 0.6, cx + r, cy + r * 0.6), fill=fill)
    elif kind == "crescent":
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=fill)
        draw.ellipse((cx - r * 0.45, cy - r * 1.05, cx + r * 1.35, cy + r * 0.8), fill=background)
    else:
        draw.polygon(_polygon(kind, cx, cy, r), fill=fill)


def shape_image(kind: str, colour: str, size: int = 224, radius: float = 70) -> Image.Image:
    """One coloured shape centred on a white square (vocabulary pictures)."""
    img = canvas(size, size)
    draw_shape(img, kind, size / 2, size / 2, radius, COLOURS[colour])
    return img


def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's bundled default font at `size` px (no system fonts: same glyphs everywhere)."""
    return ImageFont.load_default(size=size)


def text_image(text: str, size: int = 224, font_size: int = 30) -> Image.Image:
    """A word or short phrase in black, centred and wrapped on a white square (ToM option pictures)."""
    img = canvas(size, size)
    draw = ImageDraw.Draw(img)
    face = font(font_size)
    lines: list[str] = []
    for word in text.split():
        if lines and draw.textlength(f"{lines[-1]} {word}", font=face) <= size - 24:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    block = "\n".join(lines)
    draw.multiline_text((size / 2, size / 2), block, fill=INK, font=face, anchor="mm", align="center", spacing=6)
    draw.rectangle((4, 4, size - 5, size - 5), outline=(180, 180, 180), width=2)
    return img


def card_image(kind: str, colour: str, radius: float, size: int = 200) -> Image.Image:
    """A same-different card: a rounded light card with one shape of the given size."""
    img = canvas(size, size)
    draw = ImageDraw.Draw(img)
    draw.rounded_rectangle((6, 6, size - 7, size - 7), radius=18, fill=(248, 246, 240), outline=(90, 90, 90), width=3)
    draw_shape(img, kind, size / 2, size / 2, radius, COLOURS[colour], background=(248, 246, 240))
    return img


def scene_image(objects: Sequence[tuple[str, str, float, float, float]], size: int = 224) -> Image.Image:
    """Several shapes: each object is (shape, colour, cx, cy, radius) in pixels; 'box' draws an open box."""
    img = canvas(size, size)
    for kind, colour, cx, cy, r in objects:
        if kind == "box":
            ImageDraw.Draw(img).rectangle((cx - r, cy - r * 0.7, cx + r, cy + r * 0.7),
                                          outline=COLOURS[colour], width=5)
        else:
            draw_shape(img, kind, cx, cy, r, COLOURS[colour])
    return img


def dots_image(centres: Sequence[Point], kind: str = "circle", colour: str = "black",
               radius: float = 14, size: int = 224) -> Image.Image:
    """Countable objects at the given centres (dot cards, counting pictures); 'apple' adds a stem."""
    img = canvas(size, size)
    draw = ImageDraw.Draw(img)
    for cx, cy in centres:
        if kind == "apple":
            draw.ellipse((cx - radius, cy - radius * 0.9, cx + radius, cy + radius), fill=COLOURS["red"])
            draw.line((cx, cy - radius * 0.8, cx + 3, cy - radius * 1.4), fill=COLOURS["brown"], width=3)
            draw.ellipse((cx + 3, cy - radius * 1.5, cx + 11, cy - radius * 1.1), fill=COLOURS["green"])
        else:
            draw_shape(img, kind, cx, cy, radius, COLOURS[colour])
    return img


def number_line_image(target: float, low: float, high: float, width: int = 800, height: int = 160) -> Image.Image:
    """A number line from `low` to `high` with labelled ends, ten even ticks, and a red marker at `target`."""
    img = canvas(width, height)
    draw = ImageDraw.Draw(img)
    left, right, y = 60, width - 60, height // 2
    draw.line((left, y, right, y), fill=INK, width=4)
    for k in range(11):
        x = left + (right - left) * k / 10
        tall = 18 if k in (0, 10) else 10
        draw.line((x, y - tall, x, y + tall), fill=INK, width=3)
    face = font(28)
    draw.text((left, y + 24), _fmt(low), fill=INK, font=face, anchor="mt")
    draw.text((right, y + 24), _fmt(high), fill=INK, font=face, anchor="mt")
    x = left + (right - left) * (target - low) / (high - low)
    draw.polygon([(x, y - 8), (x - 14, y - 40), (x + 14, y - 40)], fill=COLOURS["red"])
    draw.ellipse((x - 9, y - 9, x + 9, y + 9), fill=COLOURS["red"])
    return img


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def matrix_cell(shape: str, colour: str, count: int, size: int = 96) -> Image.Image:
    """One matrix cell: `count` copies of a coloured shape in a row (also used for answer options)."""
    img = canvas(size, size)
    r = size * (0.3 if count == 1 else 0.17)
    for k in range(count):
        cx = size * (k + 1) / (count + 1)
        draw_shape(img, shape, cx, size / 2, r, COLOURS[colour])
    ImageDraw.Draw(img).rectangle((0, 0, size - 1, size - 1), outline=(150, 150, 150), width=2)
    return img


def matrix_image(cells: Sequence[Sequence[Image.Image | None]], cell: int = 96, gap: int = 8) -> Image.Image:
    """A grid of cells; a `None` cell is drawn as the grey missing piece with a question mark."""
    n_rows, n_cols = len(cells), len(cells[0])
    img = canvas(n_cols * cell + (n_cols + 1) * gap, n_rows * cell + (n_rows + 1) * gap, (235, 235, 235))
    draw = ImageDraw.Draw(img)
    for i, row in enumerate(cells):
        for j, content in enumerate(row):
            x, y = gap + j * (cell + gap), gap + i * (cell + gap)
            if content is None:
                draw.rectangle((x, y, x + cell - 1, y + cell - 1), fill=(200, 200, 200), outline=INK, width=2)
                draw.text((x + cell / 2, y + cell / 2), "?", fill=INK, font=font(48), anchor="mm")
            else:
                img.paste(content, (x, y))
    return img


def rotated_polygon_image(points: Sequence[Point], angle_deg: float, mirror: bool, size: int = 200,
                          scale: float = 70) -> Image.Image:
    """A black silhouette of `points` (unit coordinates, centred on 0), mirrored then rotated counter-clockwise."""
    theta = math.radians(angle_deg)
    cos, sin = math.cos(theta), math.sin(theta)
    placed = []
    for x, y in points:
        x = -x if mirror else x
        # Image y grows downward: rotate in the math frame (y up) so positive angles turn counter-clockwise.
        xr, yr = x * cos - y * sin, x * sin + y * cos
        placed.append((size / 2 + scale * xr, size / 2 - scale * yr))
    img = canvas(size, size)
    ImageDraw.Draw(img).polygon(placed, fill=INK)
    return img


def save_png(img: Image.Image, path: Path) -> None:
    """Write a PNG with a tEXt chunk tagging it synthetic; Pillow adds no timestamp, so bytes are stable."""
    info = PngInfo()
    info.add_text("Comment", SYNTHETIC_TAG)
    img.save(path, format="PNG", pnginfo=info)


def save_webp(img: Image.Image, path: Path) -> None:
    """Write a lossless WebP whose EXIF ImageDescription (0x010E) tags it synthetic."""
    exif = Image.Exif()
    exif[0x010E] = SYNTHETIC_TAG
    img.save(path, format="WEBP", lossless=True, exif=exif.tobytes())
