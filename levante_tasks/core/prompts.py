"""The model-facing text of an item, in two parts kept apart: `prepare` stores the item's `question`, and
`compose` puts it before the answer clause made from the item's facts (option count and kind, context picture,
response format); every consumer composes, none cuts (`core.hooks.item_text` fills the presented options in).

Picture markers: `<image N>` is the N-th picture (1-based) of `doc_to_visual` (the context picture first, then
the option pictures as presented), the form upstream lmms-eval's interleaving classes read (`qwen2_5_vl`,
`qwen2_vl`, `qwen3_vl`, `llava_onevision1_5` with `interleave_visuals=True`). `IMAGE_MARKER` is the one pattern.

Choice items: the question is the manifest's `full_prompt` question (`<prompt_phrase>` filled, `<prompt_image>` ->
`<image 1>`); the answer clause is built from the real option count, e.g. `Answer with A or B. A: <image 2>;
B: <image 3>` after a context picture (`A: <image 1>; B: <image 2>` without one): the manifest's own clauses are
dropped, as some do not match the options ("Answer with A, B, or C" on 2-option items). `<optionK>` names the text
option at presented position K; `fill_options` writes the text options in at evaluation time (picture markers
stay: they say where each picture of `doc_to_visual` belongs).
Slider items: the question names the target number and the line's ends, never the target's position; the clause
asks for a position in [0, 1].
Locale: every word we add (the answer instruction, the listing, the slider question and clause) comes from
`core.locale_text` in the item's locale (`item_locale`: its `locale` code, English when it has none), e.g. German
`Antworte mit A oder B. A: <image 2>; B: <image 3>`; English reads as it always has.

The answer-clause pattern (`without_answer_clause`) reads only foreign text: manifest templates here, and the
lmms-eval context of a doc that is not a prepared LEVANTE item (levante_adapters.common.question).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from levante_tasks.core.locale_text import item_locale, text
from levante_tasks.schema.items import LETTERS
from levante_tasks.schema.locales import ENGLISH, Locale

_ANSWER_CLAUSE = re.compile(rf"\s*Answer (?:with )?(?:only )?(?:[{LETTERS[0]}-{LETTERS[-1]}]\b|a numeral).*$",
                            re.DOTALL)
_OPTION = re.compile(r"<option([1-9]\d*)>")
IMAGE_MARKER = re.compile(r"<image ([1-9]\d*)>")


def image_marker(position: int) -> str:
    """`<image N>`: the marker of picture N (1-based) of `doc_to_visual`."""
    return f"<image {position}>"


def letters_phrase(n: int, locale: Locale = ENGLISH) -> str:
    """'A or B', 'A, B, or C', 'A, B, C, or D' for n options (in the locale's words: 'A, B oder C')."""
    letters = list(LETTERS[:n])
    if n == 2:
        return text(locale, "two_letters", first=letters[0], last=letters[1])
    return text(locale, "many_letters", rest=", ".join(letters[:-1]), last=letters[-1])


def answer_clause(n: int, option_kind: str, has_context: bool = False, locale: Locale = ENGLISH) -> str:
    """`Answer with A or B. A: <image 1>; B: <image 2>` (picture markers after the context picture when there is
    one) or `A: <option1>; B: <option2>` for text options, in the locale's words."""
    first = 2 if has_context else 1
    entries = [text(locale, "option_entry", letter=LETTERS[k],
                    option=image_marker(first + k) if option_kind == "image" else f"<option{k + 1}>")
               for k in range(n)]
    listing = text(locale, "option_separator").join(entries)
    return f"{text(locale, 'answer_with', letters=letters_phrase(n, locale))} {listing}"


def without_answer_clause(prompt: str) -> str:
    """Foreign text (a manifest template, the context of a doc that is no prepared item) up to its answer clause
    (`Answer with A or B. ...`, `Answer with a numeral ...`), stripped; a prepared item's text is composed instead."""
    return _ANSWER_CLAUSE.sub("", prompt).strip()


def stem_from_template(full_prompt: str, prompt_phrase: str) -> str:
    """The question part of a manifest template: `<prompt_phrase>` filled, `<prompt_image>` -> `<image 1>`."""
    stem = without_answer_clause(full_prompt)
    stem = stem.replace("<prompt_image>", image_marker(1)).replace("<prompt_phrase>", prompt_phrase)
    return re.sub(r"\s+", " ", stem).strip()


def with_context_placeholder(stem: str, has_context: bool) -> str:
    """Ensure a stem with a context image starts with `<image 1>` exactly once, and one without has none."""
    stem = stem.replace(image_marker(1), "").strip()
    return f"{image_marker(1)} {stem}" if has_context else stem


def _number(value: float) -> str:
    """A line end without a trailing .0 (0, 10, 0.5)."""
    return str(int(value)) if float(value).is_integer() else str(value)


def slider_question(low: float, high: float, target: str, locale: Locale = ENGLISH) -> str:
    """The number-line slider question (its image, `<image 1>`, shows the bare line with its end labels)."""
    return text(locale, "slider_question", image=image_marker(1), low=_number(low), high=_number(high),
                target=str(target))


def item_answer_clause(item: Mapping[str, Any]) -> str:
    """The answer clause of a prepared item, made from its facts in its locale: the slider clause for a slider,
    else `answer_clause` for its option count and kind (picture markers after its context picture, if any)."""
    if item["response_format"] == "slider":
        return text(item_locale(item), "slider_clause")
    return answer_clause(int(item["n_options"]), item["option_kind"], bool(item.get("stimulus_image")),
                         item_locale(item))


def compose(item: Mapping[str, Any], with_clause: bool = True) -> str:
    """THE text of a prepared item (`<optionK>` unfilled): its question, then its answer clause unless the consumer
    lists or scores the options itself (inspect's multiple_choice, per-option scorers)."""
    return f"{item['question']} {item_answer_clause(item)}" if with_clause else item["question"]


def fill_options(text: str, shown: Sequence[str]) -> str:
    """`text` with each `<optionK>` replaced by the text option shown at position K (1-based)."""
    return _OPTION.sub(lambda match: str(shown[int(match.group(1)) - 1]), text)
