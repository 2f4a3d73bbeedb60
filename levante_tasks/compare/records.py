"""Model per-item records: lmms-eval `samples_<task>.jsonl` (key `levante_item`), inspect_ai `.eval` logs (the
`levante_record` score's record, read by summary.inspect_logs) or tidy CSV/JSONL records.

Each record gives a model's 0/1 `correct` and, when the model exposes them, `option_scores` in canonical order
(higher = preferred). One scoring unit ("model") is one samples file (`<model name>/<lmms-eval task>`; an inspect
log's records are keyed as that task's lmms-eval records, an orders log's seeds as K runs of one seed each) or one
`model` value of a tidy file, in one locale: the lmms-eval task name's (`compare.languages.record_locale`) or a tidy
file's `locale` column (English when absent). A unit in a translated locale is named as its English unit
(`english_unit`) plus `/<locale code>` (`qwen/original/gen/seed0/de`), which pairs the two across locales.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from levante_tasks.compare.languages import english_name, record_locale
from levante_tasks.compare.tables import parse_correct, read_table
from levante_tasks.errors import LevanteError, display_path
from levante_tasks.runs.discover import EVAL_SUFFIX, folder_label
from levante_tasks.runs.inspect_log import levante_log
from levante_tasks.runs.lmms import FileProblem, SampleLine, read_json_object, read_samples, samples_name
from levante_tasks.runs.model import find_answer, local_name, model_identity, model_label, path_like
from levante_tasks.schema.crosswalk import canonical_uid
from levante_tasks.schema.locales import Locale, LocaleError, locale
from levante_tasks.schema.records import RECORD_KEY, ItemRecord
from levante_tasks.schema.seeds import MAX_ORDERS
from levante_tasks.schema.variant import Control, OutputType

T = TypeVar("T")
# the record fields that key a scoring unit, named by the schema (a renamed field fails here at import)
_FIELDS = {f.name: f.name for f in fields(ItemRecord)}
SEED, VARIANT, OUTPUT_TYPE = _FIELDS["seed"], _FIELDS["variant"], _FIELDS["output_type"]
COLUMNS = ["model", "task", "item_uid", "correct", "option_scores", "test_model", "locale", "english_unit", "control"]
# a samples record's replicate fields: the unit pooling its seeds ('' when it is no replicate), its seed, its parsed
# canonical choice (NaN = unparsed) and its option count
REPLICATE_FIELDS = ["orders_unit", "seed", "choice_index", "n_options"]
ORDERS = "orders"  # the pooled unit's last part instead of `seed<k>`
LOCALE = "locale"  # a tidy records file's optional column (and a bare JSONL record's key): the run's locale code


def parse_scores(value: object) -> list[float] | None:
    """Option scores from a list, a JSON list string or a ';'-separated string; None when absent.

    Raises ValueError/TypeError on non-numeric entries (reported by the caller with the file name)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text or text.lower() in ("na", "nan", "none", "null"):
            return None
        value = json.loads(text) if text.startswith("[") else text.split(";")
    scores = [float(v) if v is not None else math.nan for v in value]  # type: ignore[union-attr]
    return scores or None


def _model_identity(path: Path, lines: list[SampleLine]) -> tuple[str, bool]:
    """(the model's label as summary.md shows it, whether it is a test model), from the `<date>_results.json` next to
    a samples file and the file's first JSON answers, read as the summary reads them (runs.model: `model_identity`,
    `model_label`): one model has one name, and one test-model rule, in summary.md, comparison.md and the plots.
    Without a results file: lmms-eval's model name, else the folder (not a test model).

    A local checkpoint path is never used as a name (outputs carry no absolute paths): its public name (folder
    name or hub id) stands in for it.
    """
    date = (samples_name(path.name) or ("", ""))[0]
    for candidate in sorted(path.parent.glob(f"{date}*results.json")):
        try:
            results = read_json_object(candidate, candidate.name)
        except FileProblem:
            continue
        if isinstance(results.get("config"), dict):
            identity = model_identity(results, find_answer({path.name: lines}))
            return model_label({"model": identity["public_id"], "revision": identity["revision"],
                                "adapter": identity["adapter"]}), bool(identity["test_model"])
        name = str(results.get("model_name") or "")
        if path_like(name):
            name = local_name(name)[0]
        if name:
            return name, False
    return path.parent.name, False


def scoring_unit(model: str, record: dict, english_task: str) -> str:
    """Which records are scored together, named without the locale (the English unit): one model, one variant,
    one output type, one option-order seed.

    Records without these fields (older or hand-made files) fall back to one unit per lmms-eval task (its name
    without the locale: `english_task`, `english_name` of the file's task).
    """
    if SEED not in record or VARIANT not in record:
        return f"{model}/{english_task}"
    kind = "mc" if record.get(OUTPUT_TYPE) == OutputType.MULTIPLE_CHOICE.value else "gen"
    return f"{model}/{record[VARIANT]}/{kind}/seed{record[SEED]}"


def orders_unit(model: str, record: dict) -> str:
    """The unit pooling one model's option-order seeds (its replicates) of one output type, English name:
    `<model>/original/<gen|mc>/orders`; '' for a record that is no replicate (another variant, no seed, fewer
    than two presented options: a slider; a record naming its own `model`, whose unit is that name)."""
    order = record.get("presented_order")
    if (record.get(VARIANT) != Control.ORIGINAL.value or SEED not in record or record.get("model")
            or not isinstance(order, list) or len(order) < 2):
        return ""
    return scoring_unit(model, record, "").rsplit("/", 1)[0] + f"/{ORDERS}"


def _replicate_fields(record: dict, unit: str, where: str, place: Locale) -> dict:
    """A samples record's REPLICATE_FIELDS (`unit`: its English orders unit, '' for none); a choice_index that is
    not one of its options is a user error naming the line."""
    if not unit:
        return {"orders_unit": "", "seed": -1, "choice_index": math.nan, "n_options": 0}
    n_options, choice = len(record["presented_order"]), record.get("choice_index")
    if choice is not None and (isinstance(choice, bool) or not isinstance(choice, int) or not 0 <= choice < n_options):
        raise LevanteError(f"{where}: choice_index {choice!r} is not one of the record's {n_options} options")
    seed = record[SEED]
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < MAX_ORDERS:
        raise LevanteError(f"{where}: seed {seed!r} is not an option-order seed (a whole number 0..{MAX_ORDERS - 1})")
    return {"orders_unit": localized_unit(unit, place), "seed": seed,
            "choice_index": math.nan if choice is None else float(choice), "n_options": n_options}


def localized_unit(english_unit: str, where: Locale) -> str:
    """A unit's name in a locale: its English name, plus `/<locale code>` in a translated locale."""
    return english_unit if where.is_source else f"{english_unit}/{where.code}"


def _locale_of(value: object, where: str) -> Locale:
    """The locale a records file names (`de`, `es-CO`, empty = English); an unknown code is one line naming it."""
    text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value).strip()
    try:
        return locale(text)
    except LocaleError as exc:
        raise LevanteError(f"{where}: {exc}") from None


def _record_row(record: dict, model: str, where: str, place: Locale) -> dict:
    """One tidy row from a record dict of a run in locale `place`; a record without item_uid/task is a user error
    naming the file."""
    missing = [k for k in ("item_uid", "task") if record.get(k) in (None, "")]
    if missing:
        raise LevanteError(f"{where}: record lacks {missing}")
    try:
        correct = parse_correct(record.get("correct"))
    except ValueError as exc:
        raise LevanteError(f"{where}: {exc}") from None
    try:
        scores = parse_scores(record.get("option_scores"))
    except (TypeError, ValueError) as exc:
        raise LevanteError(f"{where}: option_scores are not numbers ({exc})") from exc
    english_unit = str(record.get("model") or model)
    return {
        "model": localized_unit(english_unit, place),
        "task": str(record["task"]),
        "item_uid": canonical_uid(str(record["item_uid"])),
        "correct": correct,
        "option_scores": scores,
        "locale": place.code,
        "english_unit": english_unit,
        "control": str(record.get(VARIANT) or Control.ORIGINAL.value),
    }


def _rows(records: Iterable[tuple[str, Any]], model_name: str, test_model: bool, lmms_task: str,
          named: Locale | None, counts: Counter) -> list[dict]:
    """Rows of one run's records ((where, record) pairs) of `model_name` on lmms-eval task `lmms_task` in locale
    `named`, each keyed by its scoring unit and orders unit; `named` None: a bare records file, whose unit is
    `model_name` (no replicates)."""
    english_task = english_name(lmms_task)
    rows = []
    for where, record in records:
        if not isinstance(record, dict) or "item_uid" not in record:
            counts["lines_without_levante_item"] += 1
            continue
        place = _locale_of(record.get(LOCALE), where)
        if named is not None and LOCALE in record and place != named:
            raise LevanteError(f"{where}: record locale {place.code!r} is not the locale of task "
                               f"{lmms_task!r} ({named.code})")
        unit = scoring_unit(model_name, record, english_task) if named is not None else model_name
        pooled = orders_unit(model_name, record) if named is not None else ""
        rows.append({**_record_row(record, unit, where, named or place), "test_model": test_model,
                     **_replicate_fields(record, pooled, where, named or place)})
    return rows


def read_jsonl(path: Path, label: str, counts: Counter) -> list[dict]:
    """Rows of one JSONL file called `label` in messages: lmms-eval samples lines (record under `levante_item`) or
    bare records, read by runs.lmms.read_samples (the summary's reader: one wording for a damaged line)."""
    name = samples_name(path.name)
    lines = read_samples(path, label)
    model_name, test_model = _model_identity(path, lines) if name else (path.stem, False)
    lmms_task = name[1] if name else path.stem
    records = ((f"{label}:{line.number}", line.data.get(RECORD_KEY, line.data)) for line in lines)
    return _rows(records, model_name, test_model, lmms_task, record_locale(lmms_task) if name else None, counts)


def read_eval(path: Path, label: str, counts: Counter) -> list[dict]:
    """Rows of one inspect_ai `.eval` log called `label`, read as summarize reads it (summary.inspect_logs: one
    replicate per seed of an orders log, a bad log refused in the same line), each keyed as the same records of an
    lmms-eval run are: the model as summary.md names the log's row, the task's lmms-eval name and locale. Another
    task's log has no rows (counted)."""
    from levante_tasks.summary.inspect_logs import log_records, model_row, spec_variant  # with .eval logs only

    log, spec = levante_log(path, label)
    if spec is None:
        counts["logs_of_other_tasks"] += 1
        return []
    records = log_records(log, label, spec)
    row = model_row(log)
    ran = spec_variant(spec, label)
    model_name = model_label({"model": row["public_id"], "revision": row["revision"], "adapter": row["adapter"]})
    where = (f"{label}: sample {sample.id!r}" for sample in log.samples)
    return _rows(zip(where, records, strict=True), model_name, bool(row["test_model"]), ran.format(), ran.locale,
                 counts)


def _first_bad_row(path: Path, mask: np.ndarray, problem: str) -> LevanteError:
    """The error naming the first row (1-based) where `mask` is true."""
    return LevanteError(f"{path.name}: row {int(np.flatnonzero(mask)[0]) + 1}: {problem}")


def _each_distinct(values: pd.Series, parse: Callable[[Any], T], path: Path) -> dict[Any, T]:
    """`parse` of each distinct value, once; a value it refuses (ValueError) is named at its first row."""
    parsed: dict[Any, T] = {}
    for value in values.unique():
        try:
            parsed[value] = parse(value)
        except ValueError as exc:
            raise _first_bad_row(path, (values == value).to_numpy(), str(exc)) from None
    return parsed


def _score_column(column: pd.Series, path: Path) -> list[list[float] | None]:
    """Option scores of every row. JSON lists of numbers are converted in one pass over all rows; any other
    form (or a value the pass cannot read) goes through `parse_scores` row by row, which names the bad row."""
    text = column.astype(object).where(column.notna(), None).to_numpy()  # plain Python values: no pandas per row
    stripped = [v.strip() if isinstance(v, str) else v for v in text]
    out: list[list[float] | None] = [None] * len(text)
    if all(isinstance(v, str) and len(v) > 2 and v[0] == "[" and v[-1] == "]" for v in stripped):
        inner = [v[1:-1] for v in stripped]
        try:
            flat = np.array(",".join(inner).split(","), dtype=float)
        except ValueError:
            flat = None
        sizes = np.array([v.count(",") + 1 for v in inner])
        if flat is not None and len(flat) == sizes.sum():
            values, ends = flat.tolist(), np.cumsum(sizes).tolist()
            return [values[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]
    for pos, value in enumerate(text, start=1):
        try:
            out[pos - 1] = parse_scores(value)
        except (TypeError, ValueError) as exc:
            raise LevanteError(f"{path.name}: row {pos}: option_scores are not numbers ({exc})") from None
    return out


def read_csv(path: Path) -> pd.DataFrame:
    """Tidy records CSV (model?, task, item_uid, correct, option_scores?, locale?), column by column; errors name
    the row. A translated locale's unit is `<model>/<locale code>` (`localized_unit`).

    Values are parsed once per distinct text (correct, item uids); option scores once per row.
    """
    text_columns = ("model", "task", "item_uid", "correct", "option_scores", LOCALE)
    table = read_table(path, "model records", dtype=dict.fromkeys(text_columns, str))
    missing = [c for c in ("task", "item_uid", "correct") if c not in table.columns]
    if missing:
        raise LevanteError(f"{path.name}: records CSV lacks columns {missing}")
    for column in ("item_uid", "task"):
        codes, uniques = pd.factorize(table[column], use_na_sentinel=True)  # checked per distinct value, not row
        empty = np.array([not str(u).strip() for u in uniques] + [True])[codes]  # code -1 (missing): the last
        if empty.any():
            raise _first_bad_row(path, empty, f"record lacks ['{column}']")
    correct_text = table["correct"].astype(object).where(table["correct"].notna(), None)
    parsed = _each_distinct(correct_text, parse_correct, path)
    scores = _score_column(table["option_scores"], path) if "option_scores" in table.columns else [None] * len(table)
    model = table["model"].astype(object).fillna("") if "model" in table.columns else pd.Series([""] * len(table))
    uids = {uid: canonical_uid(str(uid)) for uid in table["item_uid"].unique()}
    codes = (table[LOCALE].fillna("").astype(str).str.strip() if LOCALE in table.columns
             else pd.Series([""] * len(table), dtype=object))
    places = _each_distinct(codes, locale, path)
    english = np.where(model.to_numpy() == "", path.stem, model.to_numpy()).astype(str)
    suffix = codes.map({code: localized_unit("", place) for code, place in places.items()})  # "" or "/<code>"
    return pd.DataFrame({
        "model": (english.astype(object) + suffix.to_numpy(dtype=object)),
        "task": table["task"].astype(str).to_numpy(),
        "item_uid": table["item_uid"].map(uids).to_numpy(dtype=object),
        "correct": correct_text.map(parsed).to_numpy(dtype=float),
        "option_scores": pd.Series(scores, dtype=object).to_numpy(),
        "test_model": False,  # a hand-made records table says nothing of its model's checkpoint
        "locale": codes.map({code: place.code for code, place in places.items()}).to_numpy(dtype=object),
        "english_unit": english,
        "control": Control.ORIGINAL.value,
    })


def _run_file(path: Path) -> bool:
    """Whether a file in a models folder holds model records: an lmms-eval samples file or an inspect_ai log (named
    as runs.discover finds them)."""
    if path.name.endswith(EVAL_SUFFIX):
        return len(path.name) > len(EVAL_SUFFIX) and path.is_file()
    return path.suffix == ".jsonl" and samples_name(path.name) is not None


def read_records(path: Path, only: list[Path] | None = None) -> tuple[pd.DataFrame, Counter]:
    """All model records under `path` (see `read_model_records`), de-duplicated; drops counted."""
    table, _, counts = read_model_records(path, only)
    return table, counts


def read_model_records(path: Path, only: list[Path] | None = None) -> tuple[pd.DataFrame, pd.DataFrame, Counter]:
    """(records, replicates, counts) of all model records under `path` (folder: every `*samples_*.jsonl` and every
    inspect_ai `*.eval` log; `only`: just these folders in it, e.g. a matrix's finished cells, each then a run
    folder as summarize reads it).

    `records` (COLUMNS) holds one record per (unit, task, item): later duplicates are dropped and counted.
    `replicates` holds every scored record of an orders unit with at least two seeds (COLUMNS' model, task,
    item_uid, locale plus REPLICATE_FIELDS), duplicates kept: several runs of one seed all count.
    """
    counts: Counter = Counter()
    if path.is_dir():
        # a samples file is named as summarize names it: `<run folder name>/<path inside it>`
        labels = {p: f"{folder_label(folder)}/{p.relative_to(folder).as_posix()}"
                  for folder in (only if only is not None else [path]) for p in folder.rglob("*") if _run_file(p)}
        if not labels:
            raise LevanteError(f"{display_path(path)}: no lmms-eval samples_<task>.jsonl files (run with "
                               f"--log_samples) and no inspect_ai *{EVAL_SUFFIX} logs found")
    elif path.is_file():
        labels = {path: path.name}
    else:
        raise LevanteError(f"{display_path(path)}: model records not found")
    frames = [
        read_csv(file).assign(orders_unit="", seed=-1, choice_index=math.nan, n_options=0)
        if file.suffix.lower() == ".csv"
        else pd.DataFrame((read_eval if file.suffix == EVAL_SUFFIX else read_jsonl)(file, labels[file], counts),
                          columns=COLUMNS + REPLICATE_FIELDS)
        for file in sorted(labels)
    ]
    table = (pd.concat(frames, ignore_index=True) if frames
             else pd.DataFrame(columns=COLUMNS + REPLICATE_FIELDS))
    if table.empty:
        raise LevanteError(f"{path.name}: no model records (no lines with '{RECORD_KEY}')")
    unscored = table["correct"].isna()
    counts["records_without_correct"] += int(unscored.sum())
    table = table[~unscored]
    replicates = _replicates(table)
    table = table[COLUMNS]
    duplicated = table.duplicated(["model", "task", "item_uid"])
    counts["duplicate_records_dropped"] += int(duplicated.sum())
    return table[~duplicated].reset_index(drop=True), replicates, counts


def _replicates(table: pd.DataFrame) -> pd.DataFrame:
    """The records of orders units that hold at least two seeds of one task (one seed is no replicate)."""
    rows = table[table["orders_unit"] != ""]
    seeds = rows.groupby(["orders_unit", "task"])["seed"].transform("nunique")
    columns = ["model", "task", "item_uid", "locale", *REPLICATE_FIELDS]
    return rows.loc[seeds >= 2, columns].astype({"seed": int, "n_options": int}).reset_index(drop=True)
