"""The same-different-selection task's synthetic builder: same-different cards (docs/synth.md)."""

from __future__ import annotations

import numpy as np

from levante_tasks.synth import draw
from levante_tasks.synth.items import Item, TaskItems, answer_with
from levante_tasks.synth.items_language import ADJECTIVES, GERMAN, NOUNS, SPANISH, pick
from levante_tasks.synth.task import SynthTask
from levante_tasks.synth.translations import TranslationRow, prompt_rows

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


GERMAN_SIZES = {"small": "klein", "medium-sized": "mittelgroß", "large": "groß"}
SPANISH_SIZES = {"small": ("pequeña", "pequeños"), "medium-sized": ("mediana", "medianos"),
                 "large": ("grande", "grandes")}
SPANISH_PLURALS = {"red": "rojos", "blue": "azules", "green": "verdes", "yellow": "amarillos"}


def _texts() -> dict[str, dict[str, str]]:
    """Every instruction the builder can write, in German and Spanish (made up for the synthetic release)."""
    texts = {"Here is another picture. Which of these is the same as this one?": {
        GERMAN: "Hier ist noch ein Bild. Welches davon ist so wie dieses?",
        SPANISH: "Aquí hay otro dibujo. ¿Cuál de estos es igual a este?"}}
    both = ("Here are two pictures. Something's the same. They are both {}.",
            "Hier sind zwei Bilder. Etwas ist gleich. Beide sind {}.",
            "Aquí hay dos dibujos. Algo es igual. Los dos son {}.")
    for shape in SDS_SHAPES:
        de, es = NOUNS[GERMAN][shape], NOUNS[SPANISH][shape]
        texts[f"Choose the card with a {shape}."] = {
            GERMAN: f"Wähle die Karte mit {'einer' if de.gender == 'f' else 'einem'} {de.singular}.",
            SPANISH: f"Escoge la carta que tiene {'una' if es.gender == 'f' else 'un'} {es.singular}."}
        texts[both[0].format(f"{shape}s")] = {GERMAN: both[1].format(de.plural), SPANISH: both[2].format(es.plural)}
    for colour in SDS_COLOURS:
        de, es = ADJECTIVES[GERMAN][colour], ADJECTIVES[SPANISH][colour]
        texts[f"Choose the card with a {colour} shape."] = {
            GERMAN: f"Wähle die Karte mit einer {de.second}en Form.",
            SPANISH: f"Escoge la carta que tiene una figura {es.second}."}
        texts[both[0].format(colour)] = {GERMAN: both[1].format(de.first),
                                         SPANISH: both[2].format(SPANISH_PLURALS[colour])}
    for size in SIZE_WORDS.values():
        texts[f"Choose the card with a {size} shape."] = {
            GERMAN: f"Wähle die Karte mit einer {GERMAN_SIZES[size]}en Form.",
            SPANISH: f"Escoge la carta que tiene una figura {SPANISH_SIZES[size][0]}."}
        texts[both[0].format(size)] = {GERMAN: both[1].format(GERMAN_SIZES[size]),
                                       SPANISH: both[2].format(SPANISH_SIZES[size][1])}
    return texts


def translate_sds(task: TaskItems) -> list[TranslationRow]:
    """One row per distinct instruction (the manifest prompt is NA; the item column holds the text)."""
    return prompt_rows(task.items, "same-different-selection, Same & Different", "same-different-selection-item",
                       _texts(), text_of=lambda item: item.item)


SYNTH = SynthTask(build_sds, two_pl=True, translate=translate_sds)
