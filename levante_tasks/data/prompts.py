"""The model-facing prompt of an item, built once: `prepare` stores it as `prompt_text`, the task layer only
puts the presented option texts in.

Choice items: the manifest's `full_prompt` question (`<prompt_phrase>` filled, `<prompt_image>` -> `<image0>`)
plus ONE answer clause built from the real option count, e.g. `Answer with A or B. A: <image1>; B: <image2>`:
the manifest's own clauses are dropped, as some do not match the options ("Answer with A, B, or C" on 2-option
items). `<imageK>` / `<optionK>` name the option at presented position K; `fill_options` writes the text options
in at evaluation time (image markers stay: they say where the K-th image of `doc_to_visual` belongs).
Slider items: the target number and the line's ends, never the target's position.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from levante_tasks.schema.items import LETTERS

_ANSWER_CLAUSE = re.compile(rf"\s*Answer (?:with )?(?:only )?(?:[{LETTERS[0]}-{LETTERS[-1]}]\b|a numeral).*$",
                            re.DOTALL)
_OPTION = re.compile(r"<option([1-9]\d*)>")


def letters_phrase(n: int) -> str:
    """'A or B', 'A, B, or C', 'A, B, C, or D' for n options."""
    letters = list(LETTERS[:n])
    if n == 2:
        return "A or B"
    return ", ".join(letters[:-1]) + f", or {letters[-1]}"


def answer_clause(n: int, option_kind: str) -> str:
    """`Answer with A or B. A: <image1>; B: <image2>` with `<imageK>` or `<optionK>` placeholders."""
    placeholder = "image" if option_kind == "image" else "option"
    listing = "; ".join(f"{LETTERS[k]}: <{placeholder}{k + 1}>" for k in range(n))
    return f"Answer with {letters_phrase(n)}. {listing}"


def stem_from_template(full_prompt: str, prompt_phrase: str) -> str:
    """The question part of a manifest template: `<prompt_phrase>` filled, `<prompt_image>` -> `<image0>`."""
    stem = _ANSWER_CLAUSE.sub("", full_prompt).strip()
    stem = stem.replace("<prompt_image>", "<image0>").replace("<prompt_phrase>", prompt_phrase)
    return re.sub(r"\s+", " ", stem).strip()


def with_context_placeholder(stem: str, has_context: bool) -> str:
    """Ensure a stem with a context image starts with `<image0>` exactly once, and one without has none."""
    stem = stem.replace("<image0>", "").strip()
    return f"<image0> {stem}" if has_context else stem


def _number(value: float) -> str:
    """A line end without a trailing .0 (0, 10, 0.5)."""
    return str(int(value)) if float(value).is_integer() else str(value)


def slider_prompt(low: float, high: float, target: str) -> str:
    """The number-line slider question (its image, `<image0>`, shows the bare line with its end labels)."""
    return (f"<image0> This number line goes from {_number(low)} on the left to {_number(high)} on the right. "
            f"Where does the number {target} go? Answer with a single number between 0 and 1: "
            "0 means the left end and 1 means the right end.")


def fill_options(prompt_text: str, shown: Sequence[str]) -> str:
    """`prompt_text` with each `<optionK>` replaced by the text option shown at position K (1-based)."""
    return _OPTION.sub(lambda match: str(shown[int(match.group(1)) - 1]), prompt_text)
