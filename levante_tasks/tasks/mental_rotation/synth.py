"""The mental-rotation task's synthetic builder: an asymmetric silhouette, rotated (docs/synth.md).

Options are the unrotated shape and its mirror image, which no rotation can match (the shapes have no mirror
symmetry).
"""

from __future__ import annotations

import numpy as np

from levante_tasks.synth import draw
from levante_tasks.synth.items import Item, TaskItems, answer_with
from levante_tasks.synth.task import SynthTask
from levante_tasks.synth.translations import TranslationRow, prompt_rows

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


PROMPTS = {"Choose the matching picture.": {"de": "Wähle das Bild, das dazu passt.",
                                           "es-CO": "Escoge el dibujo que es igual."}}


def translate_mrot(task: TaskItems) -> list[TranslationRow]:
    """The one prompt's row."""
    return prompt_rows(task.items, "mental-rotation, Shape Rotation", "mental-rotation-prompt", PROMPTS)


SYNTH = SynthTask(build_mrot, two_pl=True, translate=translate_mrot)
