"""The model-facing prompt of an item, built once: `prepare` stores it as `prompt_text`, the task layer only
puts the presented option texts in.

Picture markers: `<image N>` is the N-th picture (1-based) of `doc_to_visual` (the context picture first, then
the option pictures as presented), the form upstream lmms-eval's interleaving classes read (`qwen2_5_vl`,
`qwen2_vl`, `qwen3_vl`, `llava_onevision1_5` with `interleave_visuals=True`). `IMAGE_MARKER` is the one pattern.

Choice items: the manifest's `full_prompt` question (`<prompt_phrase>` filled, `<prompt_image>` -> `<image 1>`)
plus ONE answer clause built from the real option count, e.g. `Answer with A or B. A: <image 2>; B: <image 3>`
after a context picture (`A: <image 1>; B: <image 2>` without one): the manifest's own clauses are dropped, as
some do not match the options ("Answer with A, B, or C" on 2-option items). `<optionK>` names the text option at
presented position K; `fill_options` writes the text options in at evaluation time (picture markers stay: they
say where each picture of `doc_to_visual` belongs).
Slider items: the target number and the line's ends, never the target's position.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from levante_tasks.schema.items import LETTERS

_ANSWER_CLAUSE = re.compile(rf"\s*Answer (?:with )?(?:only )?(?:[{LETTERS[0]}-{LETTERS[-1]}]\b|a numeral).*$",
                            re.DOTALL)
_OPTION = re.compile(r"<option([1-9]\d*)>")
IMAGE_MARKER = re.compile(r"<image ([1-9]\d*)>")


def image_marker(position: int) -> str:
    """`<image N>`: the marker of picture N (1-based) of `doc_to_visual`."""
    return f"<image {position}>"


def letters_phrase(n: int) -> str:
    """'A or B', 'A, B, or C', 'A, B, C, or D' for n options."""
    letters = list(LETTERS[:n])
    if n == 2:
        return "A or B"
    return ", ".join(letters[:-1]) + f", or {letters[-1]}"


def answer_clause(n: int, option_kind: str, has_context: bool = False) -> str:
    """`Answer with A or B. A: <image 1>; B: <image 2>` (picture markers after the context picture when there is
    one) or `A: <option1>; B: <option2>` for text options."""
    first = 2 if has_context else 1
    listing = "; ".join(f"{LETTERS[k]}: " + (image_marker(first + k) if option_kind == "image" else f"<option{k + 1}>")
                        for k in range(n))
    return f"Answer with {letters_phrase(n)}. {listing}"


def without_answer_clause(prompt: str) -> str:
    """A prompt up to its answer clause (`Answer with A or B. ...`, `Answer with a numeral ...`), stripped."""
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


def slider_prompt(low: float, high: float, target: str) -> str:
    """The number-line slider question (its image, `<image 1>`, shows the bare line with its end labels)."""
    return (f"{image_marker(1)} This number line goes from {_number(low)} on the left to {_number(high)} on the right. "
            f"Where does the number {target} go? Answer with a single number between 0 and 1: "
            "0 means the left end and 1 means the right end.")


def fill_options(prompt_text: str, shown: Sequence[str]) -> str:
    """`prompt_text` with each `<optionK>` replaced by the text option shown at position K (1-based)."""
    return _OPTION.sub(lambda match: str(shown[int(match.group(1)) - 1]), prompt_text)
