"""The vocab task's synthetic builder: colour+shape words, one picture each (docs/synth.md).

Every answer picture differs from each distractor in colour, shape or both, so the items are solvable by looking.
"""

from __future__ import annotations

import numpy as np

from levante_tasks.synth import draw
from levante_tasks.synth.items import Item, TaskItems, picture_choice_prompt
from levante_tasks.synth.items_language import (
    COMMON_COLOURS,
    COMMON_SHAPES,
    RARE_COLOURS,
    RARE_SHAPES,
    TRANSLATED_LOCALES,
    noun_phrase,
    pick,
)
from levante_tasks.synth.task import SynthTask
from levante_tasks.synth.translations import TranslationRow


def build_vocab(rng: np.random.Generator) -> TaskItems:
    """2 practice + 18 test items: the word is `<colour> <shape>`; rarer words are harder for children."""
    out = TaskItems("vocab", [], ext="webp")
    pairs = [(c, s) for c in COMMON_COLOURS + RARE_COLOURS for s in COMMON_SHAPES + RARE_SHAPES]
    practice = [("red", "circle"), ("blue", "square")]
    rest = [p for p in pairs if p not in practice]
    chosen = [rest[i] for i in sorted(rng.choice(len(rest), size=18, replace=False))]
    colours, shapes = COMMON_COLOURS + RARE_COLOURS, COMMON_SHAPES + RARE_SHAPES
    for k, (colour, shape) in enumerate(practice + chosen):
        other_colour, far_colour = pick(rng, colours, 2, exclude=[colour])
        other_shape, far_shape = pick(rng, shapes, 2, exclude=[shape])
        distractors = [(other_colour, shape), (colour, other_shape), (far_colour, far_shape)]
        distractors = [distractors[i] for i in rng.permutation(3)]
        stems = [f"{c}_{s}" for c, s in [(colour, shape), *distractors]]
        for (c, s), stem in zip([(colour, shape), *distractors], stems, strict=True):
            out.images.setdefault(stem, draw.shape_image(s, c))
        difficulty = -1.6 + 1.1 * (colour in RARE_COLOURS) + 1.4 * (shape in RARE_SHAPES)
        out.items.append(Item(
            task="vocab", item_uid=f"vocab__{colour}_{shape}", trial_type="practice" if k < 2 else "test",
            prompt=None, item=f"{colour} {shape}", answer=stems[0], alternatives=tuple(stems[1:]), chance=0.25,
            prompt_phrase=f"{colour} {shape}", prompt_image=None, full_prompt=picture_choice_prompt(4),
            difficulty=None if k < 2 else difficulty,
        ))
    return out


def translate_vocab(task: TaskItems) -> list[TranslationRow]:
    """One row per manifest row, `vocab-item-NNN` in manifest order, `en` = "the <colour> <shape>" as LEVANTE's
    "the <word>"."""
    rows = []
    for k, item in enumerate(task.items, start=1):
        colour, shape = item.item.split()
        texts = {locale: noun_phrase(locale, shape, colour) for locale in TRANSLATED_LOCALES}
        rows.append(TranslationRow(f"vocab-item-{k:03d}", "vocab, Vocabulary", f"the {item.item}", texts,
                                   (item.item_uid,)))
    return rows


SYNTH = SynthTask(build_vocab, by_language=True, translate=translate_vocab)
