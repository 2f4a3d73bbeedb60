"""The trog task's synthetic builder: relational sentences about shapes (docs/synth.md), and their translations.

Every answer picture differs from each distractor in the way the words state (another colour, another shape,
the relation reversed, ...), so the items are solvable by looking. Each sentence pattern has its German and
Spanish form (`SENTENCES`), built from the shape and colour words of synth/items_language.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from levante_tasks.synth import draw
from levante_tasks.synth.items import Item, TaskItems, picture_choice_prompt
from levante_tasks.synth.items_language import GERMAN, NOUNS, TRANSLATED_LOCALES, noun_phrase, pick, predicate
from levante_tasks.synth.task import SynthTask
from levante_tasks.synth.translations import TranslationRow

TROG_COLOURS = ("red", "blue", "green", "yellow", "purple", "orange")
TROG_SHAPES = ("circle", "square", "triangle", "star", "diamond", "cross")

Obj = tuple[str, str, float, float, float]  # shape, colour, cx, cy, radius


# --- trog -----------------------------------------------------------------------------------------------------
# Each maker returns (uid tag, sentence, [(stem tag, objects) for answer + 3 distractors]).
Scene = tuple[str, list[Obj]]
Made = tuple[str, str, list[Scene]]
TOP, BOTTOM, LEFT, RIGHT, MID = (112, 60), (112, 164), (60, 112), (164, 112), (112, 112)


def _pair(a: tuple[str, str], b: tuple[str, str], pa: tuple[int, int], pb: tuple[int, int],
          ra: float = 36, rb: float = 36) -> list[Obj]:
    return [(a[1], a[0], *pa, ra), (b[1], b[0], *pb, rb)]


def _noun(rng: np.random.Generator) -> Made:
    shapes = pick(rng, TROG_SHAPES, 4)
    return shapes[0], shapes[0], [(s, [(s, "black", *MID, 64)]) for s in shapes]


def _plural(rng: np.random.Generator, plural: bool) -> Made:
    s, s2 = pick(rng, TROG_SHAPES, 2)
    many = [(112 + dx, 112 + dy) for dx, dy in ((-55, -40), (55, -40), (0, 50))]

    def scene(shape: str, n: int) -> Scene:
        centres = many if n == 3 else [MID]
        return f"{n}-{shape}{'s' if n == 3 else ''}", [(shape, "blue", x, y, 32 if n == 3 else 50)
                                                      for x, y in centres]

    word = f"{s}s" if plural else s
    first, second = (3, 1) if plural else (1, 3)
    return word, f"the {word}", [scene(s, first), scene(s, second), scene(s2, first), scene(s2, second)]


def _adjective(rng: np.random.Generator, big: bool) -> Made:
    s, s2 = pick(rng, TROG_SHAPES, 2)
    (c,) = pick(rng, TROG_COLOURS, 1)
    adj, other = ("big", "small") if big else ("small", "big")
    radius = {"big": 80, "small": 30}

    def scene(size: str, shape: str) -> Scene:
        return f"{size}-{shape}", [(shape, c, *MID, radius[size])]

    return f"{adj}_{s}", f"the {adj} {s}", [scene(adj, s), scene(other, s), scene(adj, s2), scene(other, s2)]


def _above_below(rng: np.random.Generator, above: bool) -> Made:
    s1, s2 = pick(rng, TROG_SHAPES, 2)
    c1, c2, c3 = pick(rng, TROG_COLOURS, 3)
    rel = "above" if above else "below"
    first, second = (TOP, BOTTOM) if above else (BOTTOM, TOP)
    a, b, b_alt = (c1, s1), (c2, s2), (c3, s2)
    scenes = [
        (f"{c1}-{s1}-{rel}-{c2}-{s2}", _pair(a, b, first, second)),
        (f"{c2}-{s2}-{rel}-{c1}-{s1}", _pair(a, b, second, first)),
        (f"{c1}-{s1}-beside-{c2}-{s2}", _pair(a, b, LEFT, RIGHT)),
        (f"{c1}-{s1}-{rel}-{c3}-{s2}", _pair(a, b_alt, first, second)),
    ]
    return f"{s1}_{rel}_{s2}", f"the {c1} {s1} is {rel} the {c2} {s2}", scenes


def _in_on(rng: np.random.Generator, inside: bool) -> Made:
    (s,) = pick(rng, TROG_SHAPES, 1)
    (c,) = pick(rng, TROG_COLOURS, 1)
    box: Obj = ("box", "brown", 112, 130, 60)
    where = {"in": (112, 130, 24), "on": (112, 62, 24), "beside": (196, 130, 22), "under": (112, 198, 22)}
    rel = "in" if inside else "on"
    order = [rel, "on" if inside else "in", "beside", "under"]
    scenes = [(f"{s}-{w}-box", [box, (s, c, *where[w])]) for w in order]
    return f"{s}_{rel}_box", f"the {s} is {rel} the box", scenes


def _negative(rng: np.random.Generator) -> Made:
    s, s2 = pick(rng, TROG_SHAPES, 2)
    c, c2 = pick(rng, TROG_COLOURS, 2)
    combos = [(c2, s), (c, s), (c2, s2), (c, s2)]
    return f"{s}_not_{c}", f"the {s} is not {c}", [(f"{x}-{y}", [(y, x, *MID, 64)]) for x, y in combos]


def _comparative(rng: np.random.Generator) -> Made:
    s1, s2, s3 = pick(rng, TROG_SHAPES, 3)
    (c,) = pick(rng, TROG_COLOURS, 1)
    scenes = [
        (f"big-{s1}-small-{s2}", _pair((c, s1), (c, s2), LEFT, RIGHT, 46, 20)),
        (f"small-{s1}-big-{s2}", _pair((c, s1), (c, s2), LEFT, RIGHT, 20, 46)),
        (f"same-{s1}-{s2}", _pair((c, s1), (c, s2), LEFT, RIGHT, 32, 32)),
        (f"big-{s1}-small-{s3}", _pair((c, s1), (c, s3), LEFT, RIGHT, 46, 20)),
    ]
    return f"{s1}_bigger_{s2}", f"the {s1} is bigger than the {s2}", scenes


def _two_element(rng: np.random.Generator) -> Made:
    s1, s2, s3 = pick(rng, TROG_SHAPES, 3)
    c1, c2, c3 = pick(rng, TROG_COLOURS, 3)
    combos = [((c1, s1), (c2, s2)), ((c1, s1), (c3, s2)), ((c3, s1), (c2, s2)), ((c1, s3), (c2, s2))]
    scenes = [(f"{a[0]}-{a[1]}-{b[0]}-{b[1]}", _pair(a, b, LEFT, RIGHT)) for a, b in combos]
    return f"{c1}_{s1}_{c2}_{s2}", f"the {c1} {s1} and the {c2} {s2}", scenes


def _but_not(rng: np.random.Generator) -> Made:
    s1, s2 = pick(rng, TROG_SHAPES, 2)
    c, c2 = pick(rng, TROG_COLOURS, 2)
    combos = [(c, c2), (c, c), (c2, c), (c2, c2)]
    scenes = [(f"{x}-{s1}-{y}-{s2}", _pair((x, s1), (y, s2), LEFT, RIGHT)) for x, y in combos]
    return f"{s1}_not_{s2}_{c}", f"the {s1} but not the {s2} is {c}", scenes


def _neither(rng: np.random.Generator) -> Made:
    s, s2 = pick(rng, TROG_SHAPES, 2)
    c1, c2, c3 = pick(rng, TROG_COLOURS, 3)
    combos = [(c3, s), (c1, s), (c2, s), (c3, s2)]
    return (f"{s}_neither_{c1}_{c2}", f"the {s} is neither {c1} nor {c2}",
            [(f"{x}-{y}", [(y, x, *MID, 64)]) for x, y in combos])


# (trial_type, uid abbreviation, maker, b centre); order = manifest order.
TROG_PLAN: list[tuple[str, str, Callable[[np.random.Generator], Made], float]] = [
    ("noun", "noun", _noun, -2.0),
    ("noun", "noun", _noun, -2.0),
    ("noun", "noun", _noun, -1.8),
    ("singular/plural noun inflection", "plural", lambda r: _plural(r, True), -0.8),
    ("singular/plural noun inflection", "plural", lambda r: _plural(r, False), -0.6),
    ("adjective", "adj", lambda r: _adjective(r, True), -1.3),
    ("adjective", "adj", lambda r: _adjective(r, False), -1.1),
    ("in and on", "inon", lambda r: _in_on(r, True), -1.0),
    ("in and on", "inon", lambda r: _in_on(r, False), -0.8),
    ("two element combination", "twoelem", _two_element, -0.4),
    ("two element combination", "twoelem", _two_element, -0.3),
    ("above and below", "abovebelow", lambda r: _above_below(r, True), -0.2),
    ("above and below", "abovebelow", lambda r: _above_below(r, False), 0.1),
    ("above and below", "abovebelow", lambda r: _above_below(r, True), -0.1),
    ("negative", "neg", _negative, 0.2),
    ("negative", "neg", _negative, 0.4),
    ("comparative/absolute", "comp", _comparative, 0.3),
    ("comparative/absolute", "comp", _comparative, 0.5),
    ("X but not Y", "butnot", _but_not, 1.0),
    ("X but not Y", "butnot", _but_not, 1.2),
    ("neither X nor Y", "neither", _neither, 1.3),
    ("neither X nor Y", "neither", _neither, 1.5),
]


def build_trog(rng: np.random.Generator) -> TaskItems:
    """22 sentence items over 10 grammatical types; picture stems are `<n>-<description>` like the real ones."""
    out = TaskItems("trog", [])
    for n, (trial_type, abbr, maker, difficulty) in enumerate(TROG_PLAN, start=1):
        tag, sentence, scenes = maker(rng)
        uid = f"trog_{abbr}_{tag}"
        if any(item.item_uid == uid for item in out.items):
            uid = f"{uid}_{n}"
        stems = [f"{n}-{scene_tag}" for scene_tag, _ in scenes]
        for stem, (_, objects) in zip(stems, scenes, strict=True):
            out.images[stem] = draw.scene_image(objects)
        order = rng.permutation(3)
        out.items.append(Item(
            task="trog", item_uid=uid, trial_type=trial_type,
            prompt="Choose the picture of the..." if abbr == "noun" else "Touch the picture that shows...",
            item=sentence, answer=stems[0], alternatives=tuple(stems[1 + i] for i in order), chance=0.25,
            prompt_phrase=sentence, prompt_image=None, full_prompt=picture_choice_prompt(4), difficulty=difficulty,
        ))
    return out


# --- translations -----------------------------------------------------------------------------------------------
def _the(locale: str, *words: str, case: str = "nominative") -> str:
    """`the [colour|size] <shape>` from English words in their order (`red`, `circle`)."""
    *adjectives, shape = words
    return noun_phrase(locale, shape, *adjectives, case=case)


def _of(phrase: str) -> str:
    """Spanish `de` + a noun phrase, with `de el` contracted to `del`."""
    return "del " + phrase[3:] if phrase.startswith("el ") else "de " + phrase


def _say_noun(locale: str, shape: str) -> str:
    if locale == GERMAN:
        return f"Wähle das Bild mit {_the(locale, shape, case='dative')}."
    return f"Escoge el dibujo {_of(_the(locale, shape))}."


def _say_plural(locale: str, word: str) -> str:
    plural = word not in NOUNS[locale]
    return noun_phrase(locale, word[:-1] if plural else word, plural=plural)


def _say_in_on(locale: str, shape: str, where: str) -> str:
    german = {"in": "in der Kiste", "on": "auf der Kiste"}
    spanish = {"in": "en la caja", "on": "sobre la caja"}
    if locale == GERMAN:
        return f"{_the(locale, shape)} ist {german[where]}"
    return f"{_the(locale, shape)} está {spanish[where]}"


def _say_above_below(locale: str, c1: str, s1: str, where: str, c2: str, s2: str) -> str:
    if locale == GERMAN:
        place = "über" if where == "above" else "unter"
        return f"{_the(locale, c1, s1)} ist {place} {_the(locale, c2, s2, case='dative')}"
    place = "encima" if where == "above" else "debajo"
    return f"{_the(locale, c1, s1)} está {place} {_of(_the(locale, c2, s2))}"


def _say_negative(locale: str, shape: str, colour: str) -> str:
    if locale == GERMAN:
        return f"{_the(locale, shape)} ist nicht {predicate(locale, shape, colour)}"
    return f"{_the(locale, shape)} no es {predicate(locale, shape, colour)}"


def _say_bigger(locale: str, s1: str, s2: str) -> str:
    if locale == GERMAN:
        return f"{_the(locale, s1)} ist größer als {_the(locale, s2)}"
    return f"{_the(locale, s1)} es más grande que {_the(locale, s2)}"


def _say_but_not(locale: str, s1: str, s2: str, colour: str) -> str:
    if locale == GERMAN:
        return f"{_the(locale, s1)}, aber nicht {_the(locale, s2)}, ist {predicate(locale, s1, colour)}"
    return f"{_the(locale, s1)}, pero no {_the(locale, s2)}, es {predicate(locale, s1, colour)}"


def _say_neither(locale: str, shape: str, c1: str, c2: str) -> str:
    p1, p2 = predicate(locale, shape, c1), predicate(locale, shape, c2)
    if locale == GERMAN:
        return f"{_the(locale, shape)} ist weder {p1} noch {p2}"
    return f"{_the(locale, shape)} no es ni {p1} ni {p2}"


def _say_and(locale: str, c1: str, s1: str, c2: str, s2: str) -> str:
    return f"{_the(locale, c1, s1)} {'und' if locale == GERMAN else 'y'} {_the(locale, c2, s2)}"


# (English sentence pattern, its translation from the pattern's words); a one-word item is a noun.
SENTENCES: list[tuple[str, Callable[..., str]]] = [
    (r"(\w+)", _say_noun),
    (r"the (\w+)", _say_plural),
    (r"the (big|small) (\w+)", lambda loc, size, shape: _the(loc, size, shape)),
    (r"the (\w+) is (in|on) the box", _say_in_on),
    (r"the (\w+) (\w+) and the (\w+) (\w+)", _say_and),
    (r"the (\w+) (\w+) is (above|below) the (\w+) (\w+)", _say_above_below),
    (r"the (\w+) is not (\w+)", _say_negative),
    (r"the (\w+) is bigger than the (\w+)", _say_bigger),
    (r"the (\w+) but not the (\w+) is (\w+)", _say_but_not),
    (r"the (\w+) is neither (\w+) nor (\w+)", _say_neither),
]


def translate_sentence(sentence: str, locale: str) -> str:
    """A trog sentence in a translated locale (an unknown pattern is an error naming it)."""
    for pattern, make in SENTENCES:
        match = re.fullmatch(pattern, sentence)
        if match:
            return make(locale, *match.groups())
    raise ValueError(f"trog: no translation pattern for {sentence!r}")


def translate_trog(task: TaskItems) -> list[TranslationRow]:
    """One row per item, `trog-item-N` with N the number its answer picture starts with; `en` = the sentence,
    or for a one-word item its prompt with the "..." filled, as LEVANTE's table has them."""
    rows = []
    for item in task.items:
        number = int(item.answer.split("-", 1)[0])
        en = item.item if " " in item.item else f"{item.prompt.removesuffix('...')} {item.item}."
        texts = {locale: translate_sentence(item.item, locale) for locale in TRANSLATED_LOCALES}
        rows.append(TranslationRow(f"trog-item-{number}", "trog, Sentence Understanding", en, texts,
                                   (item.item_uid,)))
    return rows


SYNTH = SynthTask(build_trog, translate=translate_trog)
