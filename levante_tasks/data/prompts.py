"""Model-facing prompt stems: LEVANTE's `full_prompt` templates with an answer clause that matches the options.

The manifest's answer clauses do not always match the item ("Answer with A, B, or C" on 2-option items), so the
stem is cut before "Answer ..." and one clause is rebuilt from the real option count (docs/levante.md §3).
"""

from __future__ import annotations

import re

from levante_tasks.schema.items import LETTERS

_ANSWER_CLAUSE = re.compile(r"\s*Answer (?:with )?(?:only )?(?:[A-H]\b|a numeral).*$", re.DOTALL)


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
