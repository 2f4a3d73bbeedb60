"""Children's responses mapped to each item's canonical options by content (option text or image key).

The canonical order is `[answer] + response_alternatives as listed` (docs/design.md §5), the order of the models'
`option_scores`. Its only source is `--items` (a prepared dataset's test.parquet `options`, a manifest.csv's
`answer` + `response_alternatives`, or a CSV with `item_uid` and a JSON-list `options` column): the trials list
options in the export's order, which need not be the models' (and the model records carry no option texts), so
without `--items` there is no KL. A trial's position in its own answer-plus-distractors list is never used: the
response is looked up by its text, and the trial's `answer` must be the canonical option 0.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from levante_tasks.compare.tables import read_table, rows_with_items
from levante_tasks.errors import LevanteError, display_path, os_error
from levante_tasks.schema import layout
from levante_tasks.schema.crosswalk import canonical_uid

IMAGE_SUFFIXES = (".webp", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".bmp")
MISSING = ("", "na", "nan", "none", "null")


def loose_key(text: str) -> str:
    """Case- and spacing-insensitive form of an option; image paths and file names reduce to their stem."""
    lower = " ".join(str(text).split()).casefold()
    if lower.endswith(IMAGE_SUFFIXES):
        lower = lower.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return lower


def split_alternatives(value: object) -> list[str]:
    """Distractors in listed order from a comma list or a Python-dict string (`{'0': 'x', ...}`, by key)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    text = str(value).strip()
    if text.lower() in MISSING:
        return []
    if text.startswith("{"):
        import ast

        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, dict):
            keys = sorted(parsed, key=lambda k: (0, int(k)) if str(k).isdigit() else (1, str(k)))
            return [str(parsed[k]).strip() for k in keys]
    return [part.strip() for part in text.split(",") if part.strip()]


class OptionIndex:
    """Lookup of one item's canonical options: exact text first, then the loose key when it is unambiguous."""

    def __init__(self, options: list[str]) -> None:
        self.options = list(options)
        self.exact = {opt: k for k, opt in reversed(list(enumerate(self.options)))}
        keys = [loose_key(opt) for opt in self.options]
        counts = Counter(keys)
        self.loose = {key: k for k, key in enumerate(keys) if counts[key] == 1}
        self.key_set = frozenset(keys)

    def index(self, response: object) -> int:
        """Canonical index of a response, -1 when it names no option of the item."""
        if response is None or (isinstance(response, float) and np.isnan(response)):
            return -1
        text = str(response).strip()
        found = self.exact.get(text)
        return found if found is not None else self.loose.get(loose_key(text), -1)


def _options_cell(value: object, where: str) -> list[str]:
    """An `options` cell: a list (parquet) or a JSON list string (CSV)."""
    if isinstance(value, list | tuple | np.ndarray):
        return [str(v).strip() for v in value]
    try:
        parsed = json.loads(str(value))
    except ValueError:
        parsed = None
    if not isinstance(parsed, list):
        raise LevanteError(f"{where}: options is not a JSON list ({str(value)[:40]!r})")
    return [str(v).strip() for v in parsed]


def _read_parquet(paths: list[Path], root: Path) -> pd.DataFrame:
    """item_uid and options columns of prepared test.parquet files; a damaged file is one line naming it
    (relative to the `--items` argument, never an absolute path)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    frames = []
    for path in paths:
        shown = root.name if path == root else f"{root.name}/{path.relative_to(root).as_posix()}"
        try:
            table = pq.read_table(path, columns=["item_uid", "options"]).to_pandas()
        except OSError as exc:
            if exc.errno is not None:
                raise os_error(exc, "reading the items file") from None
            raise LevanteError(f"{shown}: not a readable prepared dataset (not Parquet, or damaged)") from None
        except (pa.ArrowException, KeyError, ValueError) as exc:
            reason = str(exc).splitlines()[0].replace(str(path), path.name) if str(exc) else type(exc).__name__
            raise LevanteError(f"{shown}: not a prepared dataset with item_uid and options ({reason})") from None
        frames.append(table)
    return pd.concat(frames, ignore_index=True)


def read_items(path: Path) -> tuple[dict[str, list[str]], Counter]:
    """Canonical options per item uid from `--items`; conflicting duplicates and non-choice items are counted.

    Accepts a prepared dataset (a `datasets/` folder: its English datasets; one task folder or a test.parquet
    file), a manifest.csv (`answer` + `response_alternatives`, comma list) or a CSV with `item_uid` and `options`
    (JSON list).
    """
    counts: Counter = Counter()
    if path.is_dir():  # a translated locale's copies (datasets/locales/) share uids but not option texts: skipped
        files = sorted(f for f in path.rglob(layout.DATASET_FILE)
                       if layout.LOCALES_DIR not in f.relative_to(path).parts[:-1])
        if not files:
            raise LevanteError(f"{path.name}: no test.parquet below it (expected a prepared datasets folder)")
        table = _read_parquet(files, path)
        rows = [(str(u), _options_cell(o, path.name)) for u, o in zip(table["item_uid"], table["options"], strict=True)]
    elif path.suffix.lower() == ".parquet":
        if not path.is_file():
            raise LevanteError(f"{display_path(path)}: items file not found")
        table = _read_parquet([path], path)
        rows = [(str(u), _options_cell(o, path.name)) for u, o in zip(table["item_uid"], table["options"], strict=True)]
    else:
        table = read_table(path, "items", dtype=str)
        if "item_uid" not in table.columns:
            raise LevanteError(f"{path.name}: items file lacks column item_uid")
        if "options" in table.columns:
            rows = [(u, _options_cell(o, f"{path.name}: row {pos}"))
                    for pos, (u, o) in enumerate(zip(table["item_uid"], table["options"], strict=True), start=1)]
        elif {"answer", "response_alternatives"} <= set(table.columns):
            rows = [(u, [str(a).strip()] + split_alternatives(alts) if isinstance(a, str) and a.strip() else [])
                    for u, a, alts in zip(table["item_uid"], table["answer"], table["response_alternatives"],
                                          strict=True)]
        else:
            raise LevanteError(f"{path.name}: items file needs options, or answer and response_alternatives")
    found: dict[str, list[str]] = {}
    conflicting: set[str] = set()
    for uid, options in rows:
        if not isinstance(uid, str) or not uid.strip():
            continue
        uid = canonical_uid(uid)
        if len(options) < 2:
            counts["items_not_multiple_choice"] += 1
        elif uid in found and found[uid] != options:
            conflicting.add(uid)
        else:
            found[uid] = options
    for uid in conflicting:
        del found[uid]
    counts["items_with_conflicting_options"] += len(conflicting)
    return found, counts


def duplicate_option_items(options: dict[str, list[str]]) -> set[str]:
    """Items listing two options with the same loose key: a response naming either cannot be told apart."""
    return {uid for uid, opts in options.items() if len({loose_key(o) for o in opts}) < len(opts)}


def _codes(column: pd.Series) -> tuple[np.ndarray, int]:
    """Integer codes of a column (categorical codes, else factorized) shifted so missing = 0, and their count."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy().astype(np.int64) + 1, len(column.cat.categories) + 1
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    return codes.astype(np.int64) + 1, len(uniques) + 1


def _per_distinct(frame: pd.DataFrame, columns: list[str], func) -> np.ndarray:
    """func(*values) evaluated once per distinct combination of `columns` and spread back to every row."""
    if frame.empty:
        return np.array([], dtype=object)
    key = np.zeros(len(frame), dtype=np.int64)
    for column in columns:
        codes, size = _codes(frame[column])
        key = key * size + codes
    inverse, distinct = pd.factorize(key)  # hashed, not sorted: any row of a combination stands for it
    first = np.empty(len(distinct), dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(key) - 1, -1, -1)  # each combination's first row
    rows = frame[columns].iloc[first].astype(object).itertuples(index=False)
    values = np.asarray([func(*row) for row in rows], dtype=object)
    return values[inverse]


def align(trials: pd.DataFrame, canonical: dict[str, list[str]], counts: Counter) -> pd.DataFrame:
    """Trials of items with canonical options, with `option_index` (canonical, by text) and `n_options`.

    Trials that list a different option set than the canonical one (the child saw another version of the
    item) are dropped and counted; trials without a distractor list cannot be checked and are kept, counted.
    A trial whose `answer` is not the canonical option 0 (a miscoded answer column, or another item's options)
    is dropped and counted. Responses that name no canonical option get option_index -1 (counted by the
    caller, kept for reporting).
    """
    known = trials[rows_with_items(trials, canonical)]
    if known.empty:
        return known.assign(option_index=np.array([], dtype=int), n_options=np.array([], dtype=int))
    lookup = {uid: OptionIndex(opts) for uid, opts in canonical.items()}

    def listed(uid: str, answer: object, distractors: object) -> str:
        if lookup[uid].index(answer) != 0:
            return "answer_differs"
        alternatives = split_alternatives(distractors)
        if not alternatives:
            return "not_listed"
        keys = frozenset(loose_key(o) for o in [str(answer), *alternatives])
        return "same" if keys == lookup[uid].key_set else "differs"

    status = _per_distinct(known, ["item_uid", "answer", "distractors"], listed)
    counts["trials_answer_not_canonical_answer"] += int((status == "answer_differs").sum())
    counts["trials_option_set_differs"] += int((status == "differs").sum())
    counts["trials_options_not_listed"] += int((status == "not_listed").sum())
    kept = known[(status != "differs") & (status != "answer_differs")]
    index = _per_distinct(kept, ["item_uid", "response"], lambda uid, r: lookup[uid].index(r)).astype(int)
    n_options = _per_distinct(kept, ["item_uid"], lambda uid: len(canonical[uid])).astype(int)
    return kept.assign(option_index=index, n_options=n_options)


def unmatched_responses(aligned: pd.DataFrame) -> pd.DataFrame:
    """Responses naming no canonical option, counted per (item_uid, response), most frequent first."""
    bad = aligned[aligned["option_index"] < 0]
    if bad.empty:
        return pd.DataFrame(columns=["item_uid", "response", "n"])
    table = bad.groupby(["item_uid", "response"], dropna=False).size().rename("n").reset_index()
    return table.sort_values(["n", "item_uid"], ascending=[False, True], kind="stable").reset_index(drop=True)
