"""A generic synthetic picture-option task, for a new task folder until it has a builder of its own.

Each item names a coloured shape (`<colour> <shape>`) and offers its picture among three distractors (another
colour, another shape, both), so it is solvable by looking; difficulty grows with rarer colours and shapes. A task
folder names it in one line: `SYNTH = SynthTask(picture_choice("<task name>"))` (docs/new_task.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from levante_tasks.synth import draw
from levante_tasks.synth.items import Item, TaskItems, picture_choice_prompt
from levante_tasks.synth.items_language import COMMON_COLOURS, COMMON_SHAPES, RARE_COLOURS, RARE_SHAPES, pick


def picture_choice(task: str, n_items: int = 12) -> Callable[[np.random.Generator], TaskItems]:
    """The builder of `n_items` picture-choice items (trial type `test`) of the task named `task`."""

    def build(rng: np.random.Generator) -> TaskItems:
        out = TaskItems(task, [])
        colours, shapes = COMMON_COLOURS + RARE_COLOURS, COMMON_SHAPES + RARE_SHAPES
        pairs = [(c, s) for c in colours for s in shapes]
        for index in sorted(rng.choice(len(pairs), size=n_items, replace=False)):
            colour, shape = pairs[index]
            other_colour, far_colour = pick(rng, colours, 2, exclude=[colour])
            other_shape, far_shape = pick(rng, shapes, 2, exclude=[shape])
            shown = [(colour, shape), (other_colour, shape), (colour, other_shape), (far_colour, far_shape)]
            stems = [f"{c}_{s}" for c, s in shown]
            for (c, s), stem in zip(shown, stems, strict=True):
                out.images.setdefault(stem, draw.shape_image(s, c))
            out.items.append(Item(
                task=task, item_uid=f"{task}_{colour}_{shape}", trial_type="test", prompt=None,
                item=f"{colour} {shape}", answer=stems[0], alternatives=tuple(stems[1:]), chance=0.25,
                prompt_phrase=f"{colour} {shape}", prompt_image=None, full_prompt=picture_choice_prompt(4),
                difficulty=-1.0 + 1.0 * (colour in RARE_COLOURS) + 1.2 * (shape in RARE_SHAPES),
            ))
        return out

    return build
