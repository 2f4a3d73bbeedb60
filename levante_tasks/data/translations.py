"""Read LEVANTE's item-bank translation table: one row per string, its English text and one column per locale.

The layouts LEVANTE uses: an id column `item_id` (or `identifier`), `labels` (the task, as `trog` or `trog,
Sentence Understanding`: the part before the first comma), the English source `en` (or `text`), and one column
per locale code (`de`, `es-CO`, ...); RFC-4180 CSV with multi-line cells, UTF-8. Columns of locales the registry
(`schema.locales`) does not know are ignored.

A cell is translated when it holds text that is neither `NO APPROVED TRANSLATION` nor the English again (after
`match_key`); numbers and symbols alone are language-neutral, and a cell that repeats an English yes/no word is
translated when it is also the locale's own word for it (our `core.locale_text`: Spanish "no").
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from levante_tasks.core.locale_text import text as locale_text
from levante_tasks.data.csvfile import unreadable
from levante_tasks.data.tom import clean_text
from levante_tasks.errors import LevanteError
from levante_tasks.schema.locales import ENGLISH, TRANSLATED, Locale
from levante_tasks.textfile import decode_text

ID_COLUMNS = ("item_id", "identifier")
EN_COLUMNS = ("en", "text")
LABELS_COLUMN = "labels"
NOT_APPROVED = "NO APPROVED TRANSLATION"  # LEVANTE's marker for a string without an approved translation
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})
_TRAILING = re.compile(r"[\s.?!\u2026:]+$")
_TIMES = re.compile(r"(?<=\d)\s*[x\u00d7]\s*(?=\d)")  # `1x5`: a multiplication sign, not a letter
_OUR_WORDS = ("yes", "no")  # core.locale_text keys whose words may equal the English (es-CO "no")


def match_key(text: str) -> str:
    """`text` as the table is matched: curly quotes straight, whitespace collapsed, case folded, trailing
    `. ? ! … :` dropped (LEVANTE's English drifts in exactly these ways)."""
    folded = clean_text(text.translate(_QUOTES)).casefold()
    return _TRAILING.sub("", folded)


def language_neutral(text: str) -> bool:
    """Whether `text` has no letters (numbers, symbols, `x` between digits as in `1x5`): the same in every
    language."""
    return not any(char.isalpha() for char in _TIMES.sub("*", text))


@dataclass(frozen=True)
class TableRow:
    """One string of the table: its id, task label, English text and locale cells (code -> cell)."""

    item_id: str
    label: str
    en: str
    cells: dict[str, str]


@dataclass(frozen=True)
class Translation:
    """A row's text in one locale: `text` when translated, else "" and why not (`empty`, `not_approved`,
    `same_as_english`)."""

    text: str = ""
    missing: str = ""


@dataclass
class TranslationTable:
    """A read translation table: its name for messages, the sha256 of its bytes, the registry locales it has a
    column for, and its rows by id and by English text."""

    name: str
    sha256: str
    locales: tuple[Locale, ...]
    by_id: dict[str, TableRow] = field(default_factory=dict)
    by_en: dict[str, list[TableRow]] = field(default_factory=lambda: defaultdict(list))

    def find_text(self, english: str, labels: tuple[str, ...]) -> TableRow | None:
        """The first row of one of `labels` whose English text matches `english` (match_key), else None."""
        if not english:
            return None
        return next((row for row in self.by_en.get(match_key(english), []) if row.label in labels), None)

    def translation(self, row: TableRow, locale: Locale) -> Translation:
        """The row's text in `locale`, or why it has none."""
        cell = row.cells.get(locale.code, "").strip()
        if not cell:
            return Translation(missing="empty")
        if cell == NOT_APPROVED:
            return Translation(missing="not_approved")
        if match_key(cell) == match_key(row.en) and not language_neutral(cell) and not _our_word(row.en, locale):
            return Translation(missing="same_as_english")
        return Translation(text=cell)


def _our_word(english: str, locale: Locale) -> bool:
    """Whether `english` is one of our English answer words whose word in `locale` is spelled the same."""
    return any(match_key(english) == match_key(locale_text(ENGLISH, key))
               and match_key(locale_text(locale, key)) == match_key(english) for key in _OUR_WORDS)


def _column(header: list[str], names: tuple[str, ...], shown: str) -> int:
    for name in names:
        if name in header:
            return header.index(name)
    raise LevanteError(f"{shown}: missing column {' or '.join(names)} (not a LEVANTE translation table)")


def read_translations(path: Path, shown: str) -> TranslationTable:
    """The table at `path`, called `shown` in messages. Raises LevanteError with one line naming it and the
    problem: unreadable, not UTF-8, broken CSV, no header, a missing id/labels/English column, a row whose cell
    count differs from the header, an empty or repeated id."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LevanteError(unreadable(path, shown, exc)) from None
    reader = csv.reader(io.StringIO(decode_text(data, shown), newline=""))
    try:
        header = [name.strip() for name in next(reader, [])]
        if not header:
            raise LevanteError(f"{shown}: empty file")
        id_col, en_col = _column(header, ID_COLUMNS, shown), _column(header, EN_COLUMNS, shown)
        label_col = _column(header, (LABELS_COLUMN,), shown)
        locales = tuple(loc for loc in TRANSLATED if loc.code in header)
        table = TranslationTable(shown, hashlib.sha256(data).hexdigest(), locales)
        first_line: dict[str, int] = {}
        for cells in reader:
            if not cells:
                continue
            line = reader.line_num
            if len(cells) != len(header):
                raise LevanteError(f"{shown}:{line}: row has {len(cells)} cells, the header has {len(header)}")
            item_id = cells[id_col].strip()
            if not item_id:
                raise LevanteError(f"{shown}:{line}: empty {header[id_col]}")
            if item_id in first_line:
                raise LevanteError(f"{shown}:{line}: duplicate {header[id_col]} {item_id!r} (first at line "
                                   f"{first_line[item_id]})")
            first_line[item_id] = line
            row = TableRow(item_id, cells[label_col].split(",")[0].strip(), cells[en_col],
                           {loc.code: cells[header.index(loc.code)] for loc in locales})
            table.by_id[item_id] = row
            table.by_en[match_key(row.en)].append(row)
    except csv.Error as exc:
        raise LevanteError(f"{shown}:{reader.line_num}: not a readable CSV ({exc})") from None
    return table
