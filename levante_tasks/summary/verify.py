"""`verify`: recompute every metric a results file reports from its samples files, and check recorded provenance.

Per leaf task: `n-samples.effective` = the samples file's line count; each `<metric>,<filter>` = its aggregation
over the per-line values (`mean`, `records_accuracy` of the LEVANTE records, or `subtype_accuracy`: the mean of the
non-null values, NaN when all are null); `_stderr` = sample SD / sqrt(n) for a mean (lmms-eval's `mean_stderr`;
"N/A" for other aggregations, n < 2 or bootstrap_iters = 0); `_stderr_clt` = the same over numeric values (or dicts
with the score key); `_stderr_clustered` = "N/A" without a cluster key. LEVANTE lines (every line of a task read
as LEVANTE's, as summarize reads it: `summary.units.holds_records`, holds a record summarize accepts,
`checked_record`): `levante_acc` and `levante_parse_rate` per line agree with the record, each
`levante_acc_<sub>` is the record's correctness under its own sub-type and null under the others, and the record is
what its saved response (`filtered_resps`) re-parses to with today's parser and the record's presented order
(`core.reparse`, the code `rescore` uses). Groups: both rows of every group
(lmms-eval writes one under `results`, one under `groups`) hold the mean over the items of its leaves (LEVANTE
groups weight by size, never the plain mean over tasks), the stderr pooled as lmms-eval pools it.
Against the installation (unless skipped): lmms-eval version, commit and patch set; each task's version against
the installed catalogue's (`TaskInfo.version`; a run that recorded none reads "unknown"); each task's source hash
(its own code: schema.task_source); the dataset fingerprint of the recorded data version in the data dir.
inspect_ai `.eval` logs (summary.inspect_logs.verify_eval): the reported levante_record accuracy against the
records, each record against its response re-parsed, and (unless skipped) the recorded task version, inspect task
source hash, inspect_ai version and dataset fingerprint.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from levante_tasks.core.reparse import DECIDED, IDENTITY, NotReparsable, disagreement, not_reparsable_lines
from levante_tasks.errors import LevanteError
from levante_tasks.lmms import metrics
from levante_tasks.runs.discover import INSPECT_AI, RunFiles, discover, run_labels
from levante_tasks.runs.lmms import FileProblem, RunReader, SampleLine
from levante_tasks.runs.model import UNKNOWN
from levante_tasks.schema import layout, locales
from levante_tasks.schema.dataset import read_dataset_info
from levante_tasks.schema.items import LETTERS
from levante_tasks.schema.records import RECORD_KEY
from levante_tasks.schema.task_source import TaskSources
from levante_tasks.schema.tasks import find_task
from levante_tasks.summary import provenance as prov
from levante_tasks.summary import stats
from levante_tasks.summary.inspect_logs import installed_inspect, verify_eval
from levante_tasks.summary.units import (
    SUBTYPE_PREFIX,
    checked_record,
    group_names,
    group_rows,
    holds_records,
    leaf_tasks,
)

STDERR_SUFFIXES = ("_stderr_clustered", "_stderr_clt", "_stderr")
RECORD_METRICS: dict[str, Callable[[Mapping[str, Any]], float]] = {
    "levante_acc": lambda r: float(r["correct"]),
    "levante_parse_rate": lambda r: float(r["parse_method"] != "none"),
}  # and every per-sub-type accuracy `levante_acc_<sub>`: metrics.subtype_values


@dataclass
class Report:
    """Mismatch lines (one per problem) and what was checked."""

    lines: list[str] = field(default_factory=list)
    runs: int = 0
    tasks: int = 0


def _close(a: Any, b: Any) -> bool:
    if (type(a) is float and type(b) is float and a == b) or (a is None and b is None):
        return True  # the common cases, decided as below without the calls
    if isinstance(a, int | float) and isinstance(b, int | float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _show(value: Any) -> str:
    return "N/A" if value is None else repr(value) if not isinstance(value, float) else f"{value:.12g}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float)


def _mapping(value: Any) -> bool:
    """isinstance(value, Mapping), a parsed JSON object decided without the ABC's check (every line asks it)."""
    return type(value) is dict or isinstance(value, Mapping)


def _config(results: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """A task's config in a results file; {} when it has none or a damaged one (not an object): its metrics then
    cannot be recomputed, which is reported, not a crash."""
    config = results["configs"].get(name)
    return config if isinstance(config, Mapping) else {}


def _aggregations(config: Mapping[str, Any]) -> dict[str, str]:
    entries = config.get("metric_list") or []
    return {str(e.get("metric")): str(e.get("aggregation")) for e in entries if isinstance(e, Mapping)}


def _recompute(aggregation: str | None, values: list[Any]) -> tuple[float | None, list[float]]:
    """(value, per-line numbers) of one metric from the values of the lines that carry it (lmms-eval aggregates
    the docs that returned the metric); ValueError when it cannot be recomputed."""
    if aggregation == "mean":
        if not set(map(type, values)) <= {float} and not all(_number(v) for v in values):
            raise ValueError("per-line values are not all numbers")
        numbers = [float(v) for v in values]
        return (sum(numbers) / len(numbers) if numbers else None), numbers
    if aggregation and "records_accuracy" in aggregation:
        if not all((type(v) is dict or _mapping(v)) and v.get("correct") in (0, 1) for v in values):  # no call per dict
            raise ValueError("per-line values are not LEVANTE records")
        numbers = [float(v["correct"]) for v in values]
        return (sum(numbers) / len(numbers) if numbers else None), []
    if aggregation and "subtype_accuracy" in aggregation:
        scored = [v for v in values if v is not None]
        if not set(map(type, scored)) <= {float} and not all(_number(v) for v in scored):
            raise ValueError("per-line values are not numbers or null")
        return metrics.subtype_accuracy(scored), []
    raise ValueError(f"aggregation {aggregation or 'unknown'} is not one verify can recompute")


def _clt_numbers(values: list[Any], score_key: str) -> list[float]:
    """The values lmms-eval's CLT stderr uses: numbers, or dicts' `score_key` numbers."""
    types = set(map(type, values))
    if types <= {float, type(None)}:
        return [v for v in values if v is not None]  # the common cases: what the comprehension below gives
    if types == {dict}:  # LEVANTE records (records_accuracy): the same, without asking each whether it is a number
        return [float(v[score_key]) for v in values if _number(v.get(score_key))]
    return [float(v) if _number(v) else float(v[score_key]) for v in values
            if _number(v) or (isinstance(v, Mapping) and _number(v.get(score_key)))]


WANTED_INPUTS = ("correct", "parse_method", "task", "trial_type", "output_type")  # all that _record_values reads
_WANTED_KEYS = frozenset(WANTED_INPUTS)


def _wanted(record: Mapping[str, Any]) -> dict[str, Any]:
    """`_record_values(record)`, looked up once per distinct value of what it reads (verify checks every line); a
    record lacking one of them, holding an unhashable one or raising is computed as it is. Shared: read only."""
    if record.keys() >= _WANTED_KEYS:
        key = tuple(map(record.__getitem__, WANTED_INPUTS))
        try:
            return _memo_wanted(key, tuple(map(type, key)))
        except TypeError:
            pass  # unhashable, or the values raise it: raised again below, as without the memo
    return _record_values(record)


def _record_values(record: Mapping[str, Any]) -> dict[str, Any]:
    """The per-line metric values a record makes: RECORD_METRICS and `metrics.subtype_values` (KeyError, TypeError
    or ValueError when it cannot)."""
    wanted = {name: check(record) for name, check in RECORD_METRICS.items()}
    wanted.update(metrics.subtype_values(record))
    return wanted


@functools.lru_cache(maxsize=1024)
def _memo_wanted(key: tuple[Any, ...], _types: tuple[type, ...]) -> dict[str, Any]:
    """`_record_values` of a record made of `key` (`_types` keeps 1, 1.0 and True apart)."""
    return _record_values(dict(zip(WANTED_INPUTS, key, strict=True)))


@functools.lru_cache(maxsize=256)
def _line_metrics(keys: tuple[str, ...]) -> tuple[str, ...]:
    """The keys of a samples line (in its order) that `_record_disagreement` checks: the record's metrics, every
    `levante_acc_<sub>` (RECORD_METRICS' names and the sub-type prefix cover all `_wanted` gives)."""
    return tuple(key for key in keys if key in RECORD_METRICS or key.startswith(SUBTYPE_PREFIX))


MEMO_NEEDS = frozenset((*IDENTITY, "parser_version", "option_texts"))  # keys whose absence the re-parse reports
# what the re-parse of a choice record's text answer reads besides the order and option texts, and what it compares
REPARSE_INPUTS = ("output_type", "parser_version", "seed", *DECIDED)


class _Agreements:
    """`core.reparse.disagreement`, remembering the (response, parser inputs, decided values) whose saved record
    stands: a lone-letter answer to an item shown in one order repeats across items, seeds and models. Only
    agreement (None) is remembered, and only for text answers to choice items whose record has every identity key:
    the key (`_reparse_key`) holds all else the re-parse and its comparison read, so a record it matches agrees
    too; an error is never remembered (the same record raises it again)."""

    def __init__(self, limit: int = 1 << 17) -> None:
        self.agreed: set[tuple[Any, ...]] = set()
        self.lines: set[tuple[Any, ...]] = set()  # samples lines every check passed, by `_line_key`
        self.limit = limit

    def check_line(self, line: Mapping[str, Any]) -> str | None:
        """The first problem of a samples line: a per-line metric against its record (`_record_disagreement`), its
        target against the record's order (`_order_disagreement`), the record against its response's re-parse
        (NotReparsable raised as the re-parse raises it). A line that passes all three is remembered by all they
        read (`_line_key`), so a line with the same key passes without them."""
        record = line.get(RECORD_KEY)
        known, key = _lookup(self.lines, _line_key(line, record) if type(record) is dict else None)
        if known:
            return None
        problem = _record_disagreement(line) or _order_disagreement(line)
        if problem is None and isinstance(record, dict):
            problem = self.disagreement(record, line.get("filtered_resps"))
        if problem is None and key is not None:
            self._remember(self.lines, key)
        return problem

    def _remember(self, memo: set[tuple[Any, ...]], key: tuple[Any, ...]) -> None:
        if len(memo) >= self.limit:
            memo.clear()
        memo.add(key)

    def disagreement(self, record: Mapping[str, Any], response: Any) -> str | None:
        """What `disagreement(record, response)` returns (NotReparsable raised as it raises it)."""
        known, key = _lookup(self.agreed, _reparse_key(record, response))
        if known:
            return None
        problem = disagreement(record, response)
        if problem is None and key is not None:
            self._remember(self.agreed, key)
        return problem


def _lookup(memo: set[tuple[Any, ...]], key: tuple[Any, ...] | None) -> tuple[bool, tuple[Any, ...] | None]:
    """Whether `key` is in `memo`, and the key to remember if its check passes: None for no key or one holding an
    unhashable value (a list as a metric value or a decided value: not memoized)."""
    if key is None:
        return False, None
    try:
        return key in memo, key
    except TypeError:
        return False, None


_NO_TARGET = object()  # a line without lmms-eval's `target` (kept apart from any value it could hold)
LINE_INPUTS = (*REPARSE_INPUTS, "task", "trial_type")  # the record values a line's checks read besides its lists
_LINE_NEEDS = MEMO_NEEDS | _WANTED_KEYS


def _line_key(line: Mapping[str, Any], record: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """All that `_Agreements.check_line` reads of a samples line, each value followed by its type (1, 1.0 and True
    apart), in one flat tuple (one hash): what `_reparse_key` holds (the text response, the parser inputs and
    decided values, the presented order and option texts, each list's length first), the record's task and trial
    type (with its `correct`, `parse_method` and `output_type`: all `_wanted` reads), the line's per-line metric
    keys and values, and its target. None: not memoized (what `_reparse_key` leaves out, or a record lacking a key
    `_wanted` reads). It may hold an unhashable value (the caller does not memoize it then)."""
    text = _keyed_text(record, line.get("filtered_resps"), _LINE_NEEDS)
    if text is None:
        return None
    order, options = record["presented_order"], record["option_texts"]
    metrics = _line_metrics(tuple(line))
    values = (text, *map(record.get, LINE_INPUTS), len(order), *order, len(options), *options, *metrics,
              *map(line.__getitem__, metrics), line.get("target", _NO_TARGET))
    return (*values, *map(type, values))


def _keyed_text(record: Mapping[str, Any], response: Any, needs: frozenset[str]) -> str | None:
    """The text response a memo key holds (a one-item list read as its item, as the re-parse reads it); None when
    no key may hold it: not a text, a slider record, a multiple_choice one (its response is one pair per option:
    `["B"]` and `"B"` re-parse differently there), a record lacking one of `needs`, or a presented order or option
    texts that are not lists."""
    text = response[0] if isinstance(response, list) and len(response) == 1 else response
    if type(text) is not str or "target_value" in record or record.get("output_type") == "multiple_choice" \
            or not record.keys() >= needs:
        return None
    if type(record["presented_order"]) is not list or type(record["option_texts"]) is not list:
        return None
    return text


def _reparse_key(record: Mapping[str, Any], response: Any) -> tuple[Any, ...] | None:
    """All that decides whether a choice record agrees with its text response's re-parse, each value with its type
    (1, 1.0 and True apart); None: not memoized (a slider, multiple_choice, a record lacking an identity key). It
    may hold an unhashable value (the caller does not memoize it then)."""
    text = _keyed_text(record, response, MEMO_NEEDS)
    if text is None:
        return None
    order, options = record["presented_order"], record["option_texts"]
    values, order, options = tuple(map(record.get, REPARSE_INPUTS)), tuple(order), tuple(options)
    return text, values, order, options, tuple(map(type, values + order + options))  # values: fixed length


def _record_disagreement(line: Mapping[str, Any]) -> str | None:
    """`<metric> <value> ... (<from record>)` when a per-line LEVANTE metric disagrees with the line's record."""
    record = line.get(RECORD_KEY)
    if not _mapping(record):
        return None
    try:
        wanted = _wanted(record)
    except (KeyError, TypeError, ValueError):
        return None
    for metric in _line_metrics(tuple(line)):
        value, want = line[metric], wanted.get(metric)
        if not _close(value, want):
            return f"{metric} {value!r} disagrees with its {RECORD_KEY} record ({want!r})"
    return None


def _order_disagreement(line: Mapping[str, Any]) -> str | None:
    """When the record's presented order puts the correct option elsewhere than lmms-eval's own `target` of the line
    (the gold letter, or its index for multiple_choice, written by lmms-eval from the doc): the order re-parsing
    relies on was edited, so the record cannot be trusted. Slider lines (a number target) are not checked."""
    record = line.get(RECORD_KEY)
    if not _mapping(record) or "target" not in line or "target_value" in record:
        return None  # not a choice record (slider records hold their target value)
    try:
        gold = list(record["presented_order"]).index(0)
    except (KeyError, TypeError, ValueError):
        return f"{RECORD_KEY} has no presented_order holding option 0"
    target = line["target"]
    multiple_choice = record.get("output_type") == "multiple_choice"
    expected = gold if multiple_choice else LETTERS[gold]
    shown = int(target) if multiple_choice and str(target).lstrip("-").isdigit() else target
    if shown != expected:
        return (f"{RECORD_KEY} presented_order {list(record['presented_order'])} puts the answer at {expected!r}, "
                f"lmms-eval's target of the line is {target!r}")
    return None


def leaf_expected(name: str, results: dict[str, Any], lines: list[SampleLine]) -> tuple[dict, dict, list[str]]:
    """What a leaf task's reported metrics should be, from its samples lines: (`{key: value}` for every reported
    `<metric>,<filter>` and stderr key that can be recomputed (None = "N/A"), what groups need
    (`{metric_key: (value, n lines), ..., "lmms_size"}`), and `<key>: cannot recompute (...)` lines)."""
    reported = results["results"].get(name) or {}
    config = _config(results, name)
    aggregations = _aggregations(config)
    datas = [line.data for line in lines]
    values = {metric: [data[metric] for data in datas if metric in data] for metric in aggregations}
    iters = results["config"].get("bootstrap_iters", 100000)
    score_key = str(config.get("score_key") or "score")
    keys = [k for k in reported if _metric_key(k)]
    filters = {k.rsplit(",", 1)[1] for k in keys}
    recomputed: dict[str, Any] = {"lmms_size": _lmms_sample_len(lines, aggregations)}
    expected: dict[str, Any] = {}
    failed: list[str] = []
    for key in sorted(keys):
        metric, filt = key.rsplit(",", 1)
        if reported[key] == [] and metric not in aggregations:
            continue  # an undeclared key lmms-eval lists without a value
        try:
            if len(filters) > 1:
                raise ValueError("several filters (samples lines do not say which filter they belong to)")
            value, numbers = _recompute(aggregations.get(metric), values.get(metric, []))
        except ValueError as exc:
            failed.append(f"{key}: cannot recompute ({exc})")
            continue
        mean_like = aggregations.get(metric) == "mean"
        mine = {key: value,
                f"{metric}_stderr,{filt}": stats.mean_stderr(numbers) if mean_like and iters > 0 else None,
                f"{metric}_stderr_clt,{filt}": stats.clt_stderr(_clt_numbers(values[metric], score_key))}
        if not config.get("cluster_key"):
            mine[f"{metric}_stderr_clustered,{filt}"] = None
        expected.update((k, v) for k, v in mine.items() if k in reported)
        scored = values.get(metric, [])
        recomputed[key] = (value, len(scored) - scored.count(None))
        recomputed[f"{metric}_stderr,{filt}"] = mine[f"{metric}_stderr,{filt}"]
    return expected, recomputed, failed


def _check_leaf(name: str, results: dict[str, Any], lines: list[SampleLine], where: str,
                agreements: _Agreements) -> tuple[list[str], dict]:
    """Mismatch lines of one leaf task, and what groups need: `{metric_key: (value, n lines), ..., "lmms_size"}`."""
    out: list[str] = []
    reported = results["results"].get(name) or {}
    effective = (results["n-samples"].get(name) or {}).get("effective")
    if effective != len(lines):
        out.append(f"{where}: {name}: n-samples effective {effective!r}, samples file has {len(lines)} lines")
    if len({line.data.get("doc_id") for line in lines}) < len(lines):
        out.append(f"{where}: {name}: samples file repeats doc_ids (two runs appended to one file?)")
    expected, recomputed, failed = leaf_expected(name, results, lines)
    out += [f"{where}: {name}: {line}" for line in failed]
    for check, want in expected.items():
        got = None if reported[check] == "N/A" else reported[check]
        if not _close(got, want):
            out.append(f"{where}: {name}: {check}: reported {_show(got)}, recomputed {_show(want)}")
    failures: list[tuple[str, str]] = []
    levante = holds_records(results["configs"].get(name), lines)  # as summarize reads it: every line a record
    for line in lines:
        if levante:
            try:
                checked_record(line.data, f"line {line.number}")
            except FileProblem as exc:
                out.append(f"{where}: {name}: {exc} (a LEVANTE task writes one per item; summarize refuses the "
                           "line)")
                continue
        try:
            problem = agreements.check_line(line.data)
        except NotReparsable as exc:
            failures.append((f"line {line.number}", str(exc)))
            continue
        if problem:
            out.append(f"{where}: {name}: line {line.number}: {problem}")
    return out + not_reparsable_lines(f"{where}: {name}", failures), recomputed


def _group_leaves(group: str, children: Mapping[str, list[str]]) -> list[str]:
    out: list[str] = []
    for child in children.get(group) or []:
        out += _group_leaves(child, children) if children.get(child) else [child]
    return out


def _lmms_sample_len(lines: list[SampleLine], aggregations: Mapping[str, str]) -> int:
    """The size lmms-eval 0.7.x gives a task in group averages: the item count of the last metric it aggregated.

    (`TaskOutput.sample_len` is overwritten per metric; metrics come in the order docs first returned them.)
    For a task whose docs return different metrics (per-sub-type accuracies) it is not the task's size.
    """
    order: dict[str, None] = {}
    for keys in dict.fromkeys(tuple(line.data) for line in lines):  # each distinct key order once, first seen first
        order.update(dict.fromkeys(k for k in keys if k in aggregations))
    last = next(reversed(order), None)
    return sum(last in line.data for line in lines) if last else len(lines)


def _metric_key(key: str) -> bool:
    """Whether a results-row key is a `<metric>,<filter>` value (not its stderr, not `alias`)."""
    return "," in key and not key.rsplit(",", 1)[0].endswith(STDERR_SUFFIXES)


def _group_metrics(results: dict[str, Any], recomputed: Mapping[str, dict]
                   ) -> Iterator[tuple[str, dict[str, dict[str, Any]], dict[str, tuple[list[str], list[tuple]]]]]:
    """Per group whose leaves were all recomputed: (group, its rows by section, `{metric key: (leaves that scored
    it, their (value, n))}` for every metric key a row reports). Groups nest: a group's leaves are its tasks'."""
    children = results.get("group_subtasks") or {}
    for group in group_names(results):
        leaves = _group_leaves(group, children)
        if not leaves or any(leaf not in recomputed for leaf in leaves):
            continue  # a leaf without samples is a mismatch line of its own
        rows = group_rows(results, group)
        keys = sorted({key for row in rows.values() for key in row if _metric_key(key)})
        yield group, rows, {key: _group_parts(key, leaves, recomputed) for key in keys}


def _check_groups(results: dict[str, Any], recomputed: dict[str, dict], where: str) -> list[str]:
    """Every group row (lmms-eval writes one under `results` and one under `groups`): each metric is the mean over
    the items of the leaves that scored it (every LEVANTE group weights by size), its stderr pooled as lmms-eval
    pools it ("N/A" when a leaf has none)."""
    out = []
    for group, rows, parts_by_key in _group_metrics(results, recomputed):
        for key, (having, parts) in parts_by_key.items():
            reported = {section: row[key] for section, row in rows.items() if key in row}
            if not having:  # a sub-type none of the leaves scored (a --limit run): NaN in lmms-eval as here
                if any(_number(v) and not math.isnan(v) for v in reported.values()):
                    out.append(f"{where}: {group}: {key}: cannot recompute (no subtask reports it)")
                continue
            pooled = _pooled_mean(parts)
            stderr_key, stderr = _pooled_stderr(key, having, parts, recomputed)
            for section, value in reported.items():
                if not (_number(value) and _close(value, pooled)):
                    out.append(f"{where}: {group}: {key} ({section} row): reported {_show(value)}, pooled over the "
                               f"items of {len(having)} subtask(s) {_show(pooled)}"
                               f"{_why_not_pooled(value, having, parts, recomputed)}")
                    continue
                got = rows[section].get(stderr_key)  # absent from a hand-made row: nothing to check
                if stderr_key in rows[section] and not _close(None if got == "N/A" else got, stderr):
                    out.append(f"{where}: {group}: {stderr_key} ({section} row): reported {_show(got)}, "
                               f"pooled {_show(stderr)}")
    return out


def _why_not_pooled(value: Any, having: list[str], parts: list[tuple], recomputed: Mapping[str, dict]) -> str:
    """What a group value that is not the pooled mean is, when it is a known other weighting (else "")."""
    if not _number(value):
        return ""
    sizes = [recomputed[leaf]["lmms_size"] for leaf in having]
    if _close(value, _pooled_mean([(v, size) for (v, _), size in zip(parts, sizes, strict=True)])):
        return (" (lmms-eval weighted each task by the item count of its last metric, not of this one: "
                f"{', '.join(f'{leaf} {n}' for leaf, n in zip(having, sizes, strict=True))})")
    if _close(value, _pooled_mean([(v, 1) for v, _ in parts])):
        return " (the unweighted mean over the subtasks; a LEVANTE group weights each task by its items)"
    return ""


def _group_parts(key: str, leaves: list[str], recomputed: Mapping[str, dict]) -> tuple[list[str], list[tuple]]:
    """The leaves of a group that report `key`, and their (value, n lines)."""
    having = [leaf for leaf in leaves if recomputed[leaf].get(key, (None, 0))[1]]  # leaves that scored an item
    return having, [recomputed[leaf][key] for leaf in having]


def _pooled_mean(parts: list[tuple]) -> float:
    """The mean over the leaves' (value, n) weighted by n: the pooled item mean."""
    return sum(v * n for v, n in parts) / sum(n for _, n in parts)


def _pooled_stderr(key: str, having: list[str], parts: list[tuple],
                   recomputed: Mapping[str, dict]) -> tuple[str, float | None]:
    """(the stderr key of a group metric, its pooled value, None ("N/A") when a leaf has no number for it)."""
    metric, filt = key.rsplit(",", 1)
    stderr_key = f"{metric}_stderr,{filt}"
    errs = [recomputed[leaf].get(stderr_key) for leaf in having]
    if not all(_number(e) for e in errs):
        return stderr_key, None
    return stderr_key, stats.pooled_sample_stderr(errs, [n for _, n in parts])  # type: ignore[arg-type]


def group_expected(results: dict[str, Any], recomputed: Mapping[str, dict]) -> dict[str, dict[str, float | None]]:
    """Group -> {key: pooled value} of every group metric (and its pooled stderr, None = "N/A") that the leaves'
    `leaf_expected` values make (what `rescore` writes into the group's rows)."""
    out: dict[str, dict[str, float | None]] = {}
    for group, rows, parts_by_key in _group_metrics(results, recomputed):
        for key, (having, parts) in parts_by_key.items():
            if having:
                out.setdefault(group, {})[key] = _pooled_mean(parts)
                stderr_key, want = _pooled_stderr(key, having, parts, recomputed)
                if any(stderr_key in row for row in rows.values()):
                    out[group][stderr_key] = want
    return out


def _dataset_fingerprint(data_dir: Path, version: str, family: str, locale_code: str | None = None) -> str:
    """The fingerprint `prepare` recorded for a task's dataset (in the run's recorded locale), or what stands in its
    way (in words)."""
    try:
        locale = locales.locale(locale_code)
    except LevanteError as exc:
        return f"unusable {exc}"
    where = f"{version}/{layout.dataset_relpath(family, locale)}/{layout.DATASET_INFO_FILE}"
    path = layout.dataset_dir(version, family, data_dir, locale) / layout.DATASET_INFO_FILE
    if not path.exists():
        return f"no {where} (not prepared here)"
    try:
        found = read_dataset_info(path, where).fingerprint
    except LevanteError as exc:
        return f"unusable {exc}"
    return found or f"no fingerprint in {where}"


def installed_task_version(task: str) -> str:
    """The installed catalogue's version of a task (any spelling), as text; "not installed" for an unknown task."""
    info = find_task(task)
    return str(info.version) if info else "not installed"


def _fingerprints(data_dir: Path) -> Callable[[str, str, Any], str]:
    """`_dataset_fingerprint` in `data_dir`, each (data version, task, locale) read once, not once per run; a
    recorded locale that is not a string (a damaged record: unhashable, so uncacheable) is looked up every time."""
    cached = functools.cache(functools.partial(_dataset_fingerprint, data_dir))

    def fingerprint(version: str, family: str, locale_code: Any) -> str:
        if locale_code is None or isinstance(locale_code, str):
            return cached(version, family, locale_code)
        return _dataset_fingerprint(data_dir, version, family, locale_code)

    return fingerprint


def _check_installation(run: RunFiles, results: dict[str, Any], leaves: list[str],
                        fingerprint: Callable[[str, str, str | None], str], installed: Mapping[str, Any],
                        source_sha256: Callable[[str], str | None]) -> list[str]:
    """Mismatch lines of one run's recorded provenance against this installation; `fingerprint(version, family,
    locale)`: `_dataset_fingerprint` in the data dir."""
    where = run.file_label(run.results or Path())
    out: list[str] = []
    run_level: Counter[str] = Counter()
    for name in leaves:
        config = _config(results, name)
        spec = prov.levante_spec(config)
        if not spec:
            continue
        mine = prov.recorded(config)
        lmms = mine.get("lmms_eval") if isinstance(mine.get("lmms_eval"), Mapping) else {}
        for key in ("version", "commit", "patch_set_sha256"):
            have, want = str(lmms.get(key) or UNKNOWN), str(installed.get(key) or UNKNOWN)
            if have != want:
                run_level[f"lmms_eval {key}: recorded {have}, installed {want}"] += 1
        family = str(spec.get("task") or name)
        have, want = str(prov.recorded_task_version(mine)), installed_task_version(family)
        if have != want:
            out.append(f"{where}: {name}: task_version: recorded {have}, installed {want}")
        have = str(mine.get("task_source_sha256") or UNKNOWN)
        want = source_sha256(name) or "not installed"
        if have != want:
            out.append(f"{where}: {name}: task_source_sha256: recorded {have}, installed {want}")
        have = str(mine.get("dataset_fingerprint") or UNKNOWN)
        version = str(mine.get("data_version") or "")
        want = (fingerprint(version, family, spec.get("locale")) if version
                else "? (data_version not recorded)")
        if have != want:
            out.append(f"{where}: {name}: dataset_fingerprint: recorded {have}, data dir has {want}")
    out += [f"{where}: {line} ({count} task(s))" for line, count in sorted(run_level.items())]
    return out


class Verifier:
    """verify's checks, one run at a time, with what they share across runs: the re-parse memo, each task's source
    hash and dataset fingerprint read once, the installation read once. `report` gathers the mismatch lines."""

    def __init__(self, data_dir: Path | None = None, installation: bool = True) -> None:
        self.report = Report()
        self.agreements = _Agreements()
        self.installed: Mapping[str, Any] = {}
        # once per task (and once for the inspect tasks), not per run: each hashes ~20 source files
        self.source_sha256 = TaskSources().sha256
        self.inspect_installed = functools.cache(installed_inspect)
        self.fingerprint: Callable[[str, str, str | None], str] | None = None  # None: provenance is not checked
        if installation:
            from levante_tasks.lmms.patcher import installed_lmms_eval

            try:
                self.installed = installed_lmms_eval()
            except LevanteError as exc:
                self.report.lines.append(f"installed lmms-eval: {exc}")
            self.fingerprint = _fingerprints(layout.data_dir(data_dir))

    def check_run(self, run: RunFiles, reader: RunReader | None = None) -> None:
        """Check one run, its files read through `reader` (a new one when None: a pass of its own)."""
        assert run.results is not None
        report, reader = self.report, reader or RunReader()
        where = run.file_label(run.results)
        if run.kind == INSPECT_AI:
            report.lines += verify_eval(run, self.fingerprint,
                                        self.inspect_installed() if self.fingerprint is not None else None)
            report.runs, report.tasks = report.runs + 1, report.tasks + 1
            return
        try:
            results = reader.results(run.results, where)
        except FileProblem as exc:
            report.lines.append(str(exc))
            return
        report.runs += 1
        recomputed: dict[str, dict] = {}
        leaves = leaf_tasks(results)
        for name in leaves:
            path = run.samples.get(name)
            if path is None:
                report.lines.append(f"{where}: {name}: no samples file: its metrics cannot be recomputed "
                                    "(run lmms-eval with --log_samples)")
                continue
            try:
                lines = reader.samples(path, run.file_label(path))
            except FileProblem as exc:
                report.lines.append(str(exc))
                continue
            report.tasks += 1
            problems, recomputed[name] = _check_leaf(name, results, lines, where, self.agreements)
            report.lines += problems
        report.lines += _check_groups(results, recomputed, where)
        if self.fingerprint is not None:
            report.lines += _check_installation(run, results, leaves, self.fingerprint, self.installed,
                                                self.source_sha256)


def verify_runs(run_dirs: list[Path], data_dir: Path | None = None, installation: bool = True) -> Report:
    """Check every run under `run_dirs`; the report's lines are the mismatches (empty = all verified)."""
    verifier = Verifier(data_dir, installation)
    for run_dir, label in zip(run_dirs, run_labels(run_dirs), strict=True):
        runs, problems = discover(run_dir, label)
        verifier.report.lines += problems
        for run in runs:
            verifier.check_run(run)
    return verifier.report
