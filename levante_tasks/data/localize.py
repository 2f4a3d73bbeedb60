"""The items of a translated locale, made from the English items `prepare` built and LEVANTE's translation table.

Each English item is found in the table (data.translations) by, in order: its manifest `item_uid` as an item_id,
its theory-of-mind corpus question's item_id (tasks with `stories`), then its task's `ItemRules.table_keys` among
the rows of its task's labels (an English text, or an id bridge such as trog's `trog-item-N`). The locale item
keeps the item's uid, pictures, option keys and answer; its text is the locale's:

- a word or phrase cell (vocab, trog sentences) goes into our frame, `core.locale_text` `match_text`;
- a whole-instruction cell (trog one-word items, matrix, mental rotation, math prompts, same-different) is the
  question itself, after the translated context sentence where English has one, and followed by the English
  `prompt_phrase` when that is language-neutral (`1+1`, `1, 2, _, 4`) and the cell does not already hold it;
- a story (theory-of-mind) is its translated sentences in corpus order before the translated question;
- text options are translated through their item_ids (theory-of-mind's `chair` -> "Hinter dem Stuhl"), in the
  same canonical order (so `answer` is the translated first option); numbers and symbols stay as they are.

An item any of whose texts (question, context, story sentence, text option) has no row, no approved text, or only
the English again is left out and counted (`untranslated:<why>`): never shown in English. A number-line slider's
question is ours, not LEVANTE's, and has no locale form yet (`not_localized:slider_question`).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from levante_tasks.core import prompts
from levante_tasks.core.locale_text import text as locale_text
from levante_tasks.data.items import ItemSource, ReleaseItems, item_rules
from levante_tasks.data.rules import TableKey
from levante_tasks.data.tom import clean_text
from levante_tasks.data.translations import TableRow, TranslationTable, language_neutral
from levante_tasks.schema.locales import Locale
from levante_tasks.schema.tasks import task_info

LOCALIZER_VERSION = 1  # bump whenever locale items are made differently, so `prepare` rebuilds


class _LeftOut(Exception):
    """An item that cannot be given in the locale; the message is its `excluded` key."""


@dataclass
class LocaleItems:
    """The items of one locale per task, and per task the English items left out (`untranslated:<why>`: count)."""

    items: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    left_out: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))


def localize(english: ReleaseItems, table: TranslationTable, locale: Locale) -> LocaleItems:
    """The items of `english` that `table` translates into `locale`, each counted when left out."""
    result = LocaleItems()
    for task, items in english.items.items():
        for item in items:
            try:
                result.items[task].append(_localized(item, english.sources[item["manifest_row"]], table, locale))
            except _LeftOut as why:
                result.left_out[task][str(why)] += 1
    return result


def _row(table: TranslationTable, key: TableKey, labels: tuple[str, ...]) -> TableRow | None:
    return table.by_id.get(key.item_id) if key.item_id else table.find_text(key.text, labels)


def _main_row(source: ItemSource, table: TranslationTable, labels: tuple[str, ...]) -> tuple[TableRow, bool]:
    """The table row of the item's own text and whether its cell is a phrase (TableKey.phrase)."""
    keys = item_rules(task_info(source.row.task)).table_keys(source.row)
    first = [TableKey(item_id=source.row.item_uid, phrase=bool(keys) and keys[0].phrase)]
    if source.story is not None:
        first.append(TableKey(item_id=source.story.item_id))
    for key in [*first, *keys]:
        row = _row(table, key, labels)
        if row is not None:
            return row, key.phrase
    raise _LeftOut("untranslated:no_row")


def _text(table: TranslationTable, row: TableRow | None, locale: Locale) -> str:
    """The row's translated text, whitespace collapsed; _LeftOut when there is no row or no translation."""
    if row is None:
        raise _LeftOut("untranslated:no_row")
    found = table.translation(row, locale)
    if not found.text:
        raise _LeftOut(f"untranslated:{found.missing}")
    return clean_text(found.text)


def _options(item: dict[str, Any], table: TranslationTable, locale: Locale) -> list[str]:
    """The options in canonical order: text options through their item_ids, pictures and numbers as they are."""
    if item["option_kind"] != "text":
        return list(item["options"])
    options = [option if language_neutral(option) else _text(table, table.by_id.get(option), locale)
               for option in item["options"]]
    if len(set(options)) != len(options):
        raise _LeftOut("untranslated:options_alike")
    return options


def _neutral_part(item: dict[str, Any], cell: str) -> list[str]:
    """The English `prompt_phrase` when it is language-neutral and `cell` does not already hold it, else []."""
    phrase = item["prompt_phrase"]
    if not phrase or not language_neutral(phrase) or re.search(rf"(?<!\d){re.escape(phrase)}(?!\d)", cell):
        return []
    return [phrase]


def _localized(item: dict[str, Any], source: ItemSource, table: TranslationTable, locale: Locale) -> dict[str, Any]:
    """One English item in `locale` (module docstring); _LeftOut names why it cannot be."""
    if item["response_format"] == "slider":
        raise _LeftOut("not_localized:slider_question")
    labels = item_rules(task_info(item["task"])).table_labels or (item["task"],)
    row, phrase = _main_row(source, table, labels)
    cell = _text(table, row, locale)
    context = [_text(table, table.find_text(source.context, labels), locale)] if source.context else []
    story = " ".join(_text(table, table.by_id.get(sid), locale) for sid in source.story.story_ids) \
        if source.story is not None else ""
    options = _options(item, table, locale)
    if phrase:
        phrase_text = cell.rstrip(".").rstrip()
        stem, prompt = locale_text(locale, "match_text", phrase=phrase_text), ""
    else:
        neutral = _neutral_part(item, cell)
        phrase_text = " ".join(neutral)
        stem, prompt = " ".join([*context, cell, *neutral]), cell
    stem = f"{story} {stem}".strip()
    return {**item, "question": prompts.with_context_placeholder(stem, bool(item["stimulus_image"])),
            "prompt": prompt, "prompt_phrase": phrase_text, "story": story, "options": options,
            "answer": options[0]}
