"""The synthetic release's translation table, in the layout of LEVANTE's `translations/item-bank-translations.csv`.

Columns exactly as the real table (levante_translations 1cb5bfc: `item_id, labels, en, es-CO, de, fr-CA, nl, de-CH,
es-AR, en-GH, isHidden`); the synthetic text fills `en`, `es-CO` and `de` and leaves the others empty, as the real
file does. Rows match items as the real ones do (../shared/levante-sample/translations/README.md): vocab by its
`en` "the <word>" (ids `vocab-item-NNN` in manifest order), trog by its sentence (one-word items: the prompt with
its "..." filled) and by the number in `answer` (`trog-item-N`), theory-of-mind by the corpus `item_id` (questions,
story sentences) and its option keys, the other tasks by the manifest prompt (same-different-selection: the item
text). Each task folder's `synth.py` makes its rows (`SynthTask.translate`).

A few cells are left untranslated on purpose (`GAPS`: empty, `NO APPROVED TRANSLATION`, a copy of the English),
so a reader's left-out counting is exercised. An item whose row is untranslated in a locale is not given to the
children of that language (synth/children.py) and is not in that language's by-language IRT record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from levante_tasks.data.translations import NOT_APPROVED, match_key
from levante_tasks.synth.items import Item
from levante_tasks.synth.items_language import TRANSLATED_LOCALES

COLUMNS = ("item_id", "labels", "en", "es-CO", "de", "fr-CA", "nl", "de-CH", "es-AR", "en-GH", "isHidden")
SAME_AS_ENGLISH = object()  # a gap whose cell repeats the English text (an untranslated fallback)
GAPS: dict[tuple[str, str], object] = {  # (item_id, locale) -> the cell written instead of the translation
    ("vocab-item-007", "de"): "",
    ("vocab-item-012", "es-CO"): NOT_APPROVED,
    ("trog-item-2", "de"): SAME_AS_ENGLISH,
    ("ToM-scene3-q3-reality_check", "es-CO"): "",  # the real table has this very gap
}


@dataclass(frozen=True)
class TranslationRow:
    """One table row: id, task label, English and the translated cells; `items` names the manifest items the
    row carries (not written: the children and records use it to leave untranslated items out)."""

    item_id: str
    label: str
    en: str
    texts: Mapping[str, str]
    items: tuple[str, ...] = field(default=())

    def cell(self, locale: str) -> str:
        """The cell written for a locale (a gap from `GAPS`, else the translation, else empty)."""
        gap = GAPS.get((self.item_id, locale))
        if gap is SAME_AS_ENGLISH:
            return self.en
        return str(gap) if gap is not None else self.texts.get(locale, "")

    def csv_row(self) -> list[str]:
        """The row's cells in `COLUMNS` order."""
        return [self.item_id, self.label, self.en, *(self.cell(locale) for locale in COLUMNS[3:])]


def is_translated(row: TranslationRow, locale: str) -> bool:
    """Whether the row's cell for `locale` is a translation: non-empty, not the not-approved marker, and not the
    English words again."""
    cell = row.cell(locale).strip()
    return bool(cell) and cell != NOT_APPROVED and match_key(cell) != match_key(row.en)


def untranslated_items(rows: Iterable[TranslationRow], locale: str) -> set[str]:
    """Manifest item_uids a locale leaves out: those carried by a row that is untranslated there."""
    return {uid for row in rows if not is_translated(row, locale) for uid in row.items}


def the_prompt(item: Item) -> str | None:
    """An item's language-bearing text for most tasks: its manifest prompt."""
    return item.prompt


def prompt_rows(items: list[Item], label: str, ids: str, texts: Mapping[str, Mapping[str, str]],
                text_of: Callable[[Item], str | None] = the_prompt) -> list[TranslationRow]:
    """One row per distinct language-bearing text of a task whose items share it (math, matrix, rotation,
    same-different), ids `<ids><k>` in order of first use; `texts` maps each English text to its translations
    (a text without one is an error naming it)."""
    rows: dict[str, list[str]] = {}
    for item in items:
        text = text_of(item)
        if text is not None:
            rows.setdefault(text, []).append(item.item_uid)
    missing = [text for text in rows if text not in texts]
    if missing:
        raise ValueError(f"{label}: no translation of {missing[0]!r}")
    return [TranslationRow(f"{ids}{k}", label, text, {loc: texts[text][loc] for loc in TRANSLATED_LOCALES},
                           tuple(uids)) for k, (text, uids) in enumerate(rows.items(), start=1)]
