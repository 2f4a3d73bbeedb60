"""Visual reasoning tasks: pattern matrices, mental rotation of an asymmetric silhouette, same-different cards.

Matrices follow row/column rules (shape by row, colour by column, count by a diagonal rule on the hardest ones);
each distractor breaks exactly one rule. Mental-rotation options are the unrotated shape and its mirror image,
which no rotation can match (the shapes have no mirror symmetry).
"""

from __future__ import annotations

import numpy as np

from levante_tasks.synth import draw
from levante_tasks.synth.items import Item, TaskItems, answer_with
from levante_tasks.synth.items_language import pick

MATRIX_SHAPES = ("circle", "square", "triangle", "star", "diamond", "cross")
MATRIX_COLOURS = ("red", "blue", "green", "yellow", "purple", "orange")
MATRIX_PROMPT = f"<prompt_image> Choose the best option to fill in the blank. {answer_with(4, 'image')}"


def _matrix_item(rng: np.random.Generator, out: TaskItems, k: int, size: int, count_rule: bool) -> Item:
    shapes = pick(rng, MATRIX_SHAPES, size + 1)
    colours = pick(rng, MATRIX_COLOURS, size + 1)

    def count(i: int, j: int) -> int:
        return (i + j) % 3 + 1 if count_rule else 1

    last = size - 1
    grid = [[draw.matrix_cell(shapes[i], colours[j], count(i, j)) for j in range(size)] for i in range(size)]
    grid[last][last] = None
    stem = f"sm{k}"
    out.images[f"{stem}_M"] = draw.matrix_image(grid)
    right = (shapes[last], colours[last], count(last, last))
    wrong_count = count(last, last) % 3 + 1
    distractors = {
        "T2": (shapes[last - 1], colours[last], count(last, last)),  # breaks the row (shape) rule
        "T3": (shapes[last], colours[last - 1], count(last, last)),  # breaks the column (colour) rule
        # breaks the count rule when there is one, otherwise both rules with an unseen shape and colour
        "T4": (shapes[last], colours[last], wrong_count) if count_rule else (shapes[size], colours[size], 1),
    }
    out.images[f"{stem}_T1_md"] = draw.matrix_cell(*right, size=128)
    for tag, cell in distractors.items():
        out.images[f"{stem}_{tag}_md"] = draw.matrix_cell(*cell, size=128)
    practice = k == 0
    return Item(
        task="matrix-reasoning", item_uid=f"{stem}_M" if practice else f"matrix_synth_mat{k}",
        trial_type="practice" if practice else "Matrix Reasoning",
        prompt="See this big puzzle? It's missing a piece! Which piece goes in the puzzle?" if practice
        else "Choose the best pattern to fill in the blank.",
        item=f"{stem}_M", answer=f"{stem}_T1_md", alternatives=(f"{stem}_T4_md", f"{stem}_T2_md", f"{stem}_T3_md"),
        chance=0.25, prompt_phrase=None, prompt_image=f"{stem}_M", full_prompt=MATRIX_PROMPT,
        difficulty=None if practice else -1.2 + 1.0 * (size == 3) + 1.3 * count_rule,
    )


def build_matrix(rng: np.random.Generator) -> TaskItems:
    """1 practice + 15 test matrices: 2x2 (6), 3x3 (5), 3x3 with a count rule (4); answers are `*_T1_*`."""
    out = TaskItems("matrix-reasoning", [])
    plan = [(2, False)] * 7 + [(3, False)] * 5 + [(3, True)] * 4
    out.items = [_matrix_item(rng, out, k, size, rule) for k, (size, rule) in enumerate(plan)]
    return out


# Silhouettes in unit coordinates, centred near the origin; neither has an axis of mirror symmetry.
FLAG = [(-0.5, -1.0), (-0.1, -1.0), (-0.1, -0.1), (0.4, -0.1), (0.4, 0.25), (-0.1, 0.25), (-0.1, 0.6),
        (0.8, 0.6), (0.8, 1.0), (-0.5, 1.0)]
BOOT = [(-0.6, 1.0), (-0.1, 1.0), (-0.1, -0.3), (0.9, -0.3), (0.9, -0.8), (0.3, -1.0), (-0.6, -1.0)]
MROT_SHAPES = {"flag": ("F", FLAG), "boot": ("B", BOOT)}
MROT_PROMPT = f"<prompt_image> Choose the option that matches this image. {answer_with(2, 'image')}"


def build_mrot(rng: np.random.Generator) -> TaskItems:
    """20 two-dimensional items (2 shapes x normal/mirror x 5 angles <= 160 deg); 2PL, harder at larger angles."""
    out = TaskItems("mental-rotation", [])
    for code, points in MROT_SHAPES.values():
        for hand in ("n", "p"):
            out.images[f"{code}{hand}-000-silh"] = draw.rotated_polygon_image(points, 0, mirror=hand == "p")
    plan = [(name, hand, angle) for name in MROT_SHAPES for angle in (0, 40, 80, 120, 160) for hand in "np"]
    for idx in rng.permutation(len(plan)):
        name, hand, angle = plan[idx]
        code, points = MROT_SHAPES[name]
        other = "p" if hand == "n" else "n"
        prompt_stem = f"{code}{hand}-{angle:03d}"
        out.images[prompt_stem] = draw.rotated_polygon_image(points, angle, mirror=hand == "p")
        uid = f"{prompt_stem}_{prompt_stem}" if angle == 0 else f"mrot_2d_{name}_{angle:03d}_{prompt_stem}"
        out.items.append(Item(
            task="mental-rotation", item_uid=uid, trial_type="2", prompt="Choose the matching picture.",
            item=prompt_stem, answer=f"{code}{hand}-000-silh", alternatives=(f"{code}{other}-000-silh",),
            chance=0.5, prompt_phrase=None, prompt_image=prompt_stem, full_prompt=MROT_PROMPT,
            difficulty=-1.4 + angle / 80,
        ))
    return out


SDS_SIZES = {"sm": 28, "med": 48, "lg": 72}
SDS_SHAPES = ("circle", "square", "triangle", "star")
SDS_COLOURS = ("red", "blue", "green", "yellow")
SIZE_WORDS = {"sm": "small", "med": "medium-sized", "lg": "large"}


def _card(out: TaskItems, size: str, colour: str, shape: str) -> str:
    stem = f"{size}-{colour}-{shape}"
    out.images.setdefault(stem, draw.card_image(shape, colour, SDS_SIZES[size]))
    return stem


def _sds(uid: str, trial_type: str, text: str, answer: str | None, alts: list[str] | None,
         difficulty: float | None, image: str | None = None, full: str | None = None) -> Item:
    chance = None if alts is None else {2: 0.5, 3: 0.33, 4: 0.25}[len(alts) + 1]
    return Item(task="same-different-selection", item_uid=uid, trial_type=trial_type, prompt=None, item=text,
                answer=answer, alternatives=None if alts is None else tuple(alts), chance=chance,
                prompt_phrase=None, prompt_image=image, full_prompt=full, difficulty=difficulty)


def build_sds(rng: np.random.Generator) -> TaskItems:
    """test-dimensions (shape 4, colour 4, size 3) and 4 something-same pairs (instruction row + test row)."""
    out = TaskItems("same-different-selection", [])
    for shape, colour in zip(SDS_SHAPES, pick(rng, SDS_COLOURS, 4), strict=True):
        alts = [_card(out, "med", colour, s) for s in pick(rng, SDS_SHAPES, 3, exclude=[shape])]
        article = "an" if shape[0] in "aeiou" else "a"
        out.items.append(_sds(f"sds_dimensions_shape_{shape}", "test-dimensions",
                              f"Choose the card with {article} {shape}.", _card(out, "med", colour, shape), alts,
                              -1.8))
    for colour, shape in zip(SDS_COLOURS, pick(rng, SDS_SHAPES, 4), strict=True):
        alts = [_card(out, "med", c, shape) for c in pick(rng, SDS_COLOURS, 3, exclude=[colour])]
        out.items.append(_sds(f"sds_dimensions_color_{colour}", "test-dimensions",
                              f"Choose the card with a {colour} shape.", _card(out, "med", colour, shape), alts,
                              -1.5))
    for size in SDS_SIZES:
        (shape,), (colour,) = pick(rng, SDS_SHAPES, 1), pick(rng, SDS_COLOURS, 1)
        alts = [_card(out, s, colour, shape) for s in pick(rng, list(SDS_SIZES), 2, exclude=[size])]
        out.items.append(_sds(f"sds_dimensions_size_{size}", "test-dimensions",
                              f"Choose the card with a {SIZE_WORDS[size]} shape.", _card(out, size, colour, shape),
                              alts, -0.6 + 0.3 * (size == "med")))
    full = f"<prompt_image> Here is another picture. Which of these is the same as this one? {answer_with(2, 'image')}"
    for k, feature in enumerate(("colour", "shape", "size", "colour"), start=1):
        ref_size, ans_size, far_size = pick(rng, list(SDS_SIZES), 3)
        ref_colour, ans_colour, far_colour = pick(rng, SDS_COLOURS, 3)
        ref_shape, ans_shape, far_shape = pick(rng, SDS_SHAPES, 3)
        # The answer shares exactly one feature with the reference card; the distractor shares none.
        ans_colour = ref_colour if feature == "colour" else ans_colour
        ans_shape = ref_shape if feature == "shape" else ans_shape
        ans_size = ref_size if feature == "size" else ans_size
        shared = {"colour": ref_colour, "shape": f"{ref_shape}s", "size": SIZE_WORDS[ref_size]}[feature]
        out.items.append(_sds(f"sds-something-same-{k}-instr", "something-same-1",
                              f"Here are two pictures. Something's the same. They are both {shared}.", None, None,
                              None))
        out.items.append(_sds(f"sds_same_{k}", "something-same-2",
                              "Here is another picture. Which of these is the same as this one?",
                              _card(out, ans_size, ans_colour, ans_shape),
                              [_card(out, far_size, far_colour, far_shape)], 0.2 + 0.2 * k,
                              image=_card(out, ref_size, ref_colour, ref_shape), full=full))
    return out
