"""Which children a model run is compared with: the children's language, a model run's locale, the IRT record of
each (task, language) and the (children's language, model runs) pairs compared (docs/comparison.md, "Languages").

A child's language is its run's language tag (the trials' `language` column, else the runs file's, joined on
run_id) mapped to a locale by `schema.locales.of_language_tag`; a tag no locale lists, a run without a tag and a
run whose trials name two locales are counted, never guessed. When no run has a tag at all (an older export), the
children are pooled under `NOT_RECORDED` and compared with every model run. A model run's locale is read from its
lmms-eval task name (`Variant.parse`, as every command reads it) or a tidy records file's `locale` column.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from levante_tasks.errors import LevanteError
from levante_tasks.schema.locales import ENGLISH, LOCALES, Locale, locale, of_language_tag
from levante_tasks.schema.tasks import accepted_spellings, find_task
from levante_tasks.schema.variant import Variant, VariantNameError

NOT_RECORDED = "not recorded"  # the children's language label when no run carries a language tag
LANGUAGE_COLUMN = "language"
ACROSS_FLAG = "--across-languages"
_CONFLICTING = "\0conflicting"  # a run whose trials name two locales (never a tag: tags hold no NUL)


def record_locale(lmms_task: str) -> Locale:
    """The locale of an lmms-eval task name; a name that is no LEVANTE variant name (a hand-named samples file, an
    older math sub-task file) is English, the locale every task had before translations."""
    try:
        return Variant.parse(lmms_task).locale
    except VariantNameError:
        return ENGLISH


def english_name(lmms_task: str) -> str:
    """The lmms-eval task name with its locale removed (`levante_trog_de_mc` -> `levante_trog_mc`): the key that
    pairs a model run in one locale with the same run in English."""
    try:
        variant = Variant.parse(lmms_task)
    except VariantNameError:
        return lmms_task
    return Variant(variant.task, variant.output_type, variant.seed, variant.control).format()


def locale_rank(code: str) -> int:
    """Report order of a language label: the registry's locale order, `NOT_RECORDED` last."""
    codes = [loc.code for loc in LOCALES]
    return codes.index(code) if code in codes else len(codes)


def language_name(code: str) -> str:
    """A language label for reports: `German (Germany) (de)`, or `language not recorded`."""
    if code == NOT_RECORDED:
        return "language not recorded"
    return f"{locale(code).name} ({code})"


def irt_language(text: str, where: str) -> str:
    """The language of a `--irt TASK@LANGUAGE=PATH` qualifier: a by_language language (`de`, `es`), a locale code or
    a children's language tag (`es-CO`, `de-DE`: read as its language); anything else (an empty one too) is a
    one-line error naming `where`."""
    languages = sorted({loc.language for loc in LOCALES})
    found = of_language_tag(text)  # each by_language code (de, es, ...) is also a tag of its locale
    if found is None:
        raise LevanteError(f"{where}: unknown language {text!r}; accepted: {', '.join(languages)} "
                           f"(or a locale code or language tag: {', '.join(loc.code for loc in LOCALES)}, de-DE, "
                           "en-US, ...)")
    return found.language


def split_irt_task(spec: str | None, where: str) -> tuple[str | None, str | None]:
    """(task as written, language or None) of an `--irt` TASK part (`vocab`, `vocab@de`); None stays None."""
    if spec is None:
        return None, None
    task, sep, language = spec.partition("@")
    return task, irt_language(language, where) if sep else None


def irt_task(spec: str, where: str) -> tuple[str, str | None]:
    """(task as written, language or None) of an `--irt` TASK[@LANGUAGE] part, the task a catalogue spelling and
    the language a known one; else a one-line error naming `where`."""
    task, language = split_irt_task(spec, where)
    if find_task(task) is None:
        raise LevanteError(f"{where}: unknown LEVANTE task {task!r}; accepted: {accepted_spellings()}")
    return task, language


def by_language(task: str) -> bool:
    """Whether LEVANTE calibrates the task per language (vocab, theory-of-mind: `by_language/<language>`)."""
    info = find_task(task)
    return bool(info and info.irt_by_language)


@dataclass
class ChildLanguages:
    """The children's language per run (locale codes), whether any run carries a tag, and the tags no locale
    lists (tag -> runs)."""

    by_run: pd.Series  # run_id -> locale code; runs without a usable tag are absent
    recorded: bool
    source: str  # which files gave tags: "trials", "runs", "trials and runs", "" (none)
    unknown_tags: dict[str, int] = field(default_factory=dict)

    def label(self, run_ids: pd.Index) -> np.ndarray:
        """The language label of each run: its locale code, None when it has none, `NOT_RECORDED` when pooled."""
        if not self.recorded:
            return np.full(len(run_ids), NOT_RECORDED, dtype=object)
        found = self.by_run.reindex(run_ids).to_numpy(dtype=object)
        return np.where(pd.isna(found), None, found)


def _code(tag: object) -> str | None:
    """Locale code of one tag, the tag prefixed by NUL when no locale lists it, None for an empty tag."""
    text = str(tag).strip()
    if not text:
        return None
    found = of_language_tag(text)
    return found.code if found is not None else f"\0{text}"


def _mapped(tags: pd.Series) -> pd.Series:
    """`_code` of each tag (a categorical is mapped once per category); missing stays None."""
    if isinstance(tags.dtype, pd.CategoricalDtype):
        values = np.array([_code(c) for c in tags.cat.categories] + [None], dtype=object)
        return pd.Series(values[tags.cat.codes.to_numpy()], index=tags.index, dtype=object)
    return tags.map(_code, na_action="ignore").astype(object)


def _trials_languages(trials: pd.DataFrame) -> pd.Series:
    """Per run with a tag in the trials: its locale code, `\\0<tag>` for an unlisted tag, or `_CONFLICTING`."""
    if LANGUAGE_COLUMN not in trials.columns:
        return pd.Series(dtype=object)
    frame = pd.DataFrame({"run_id": trials["run_id"].astype(object), "code": _mapped(trials[LANGUAGE_COLUMN])})
    pairs = frame.dropna().drop_duplicates()
    several = pairs["run_id"].duplicated(keep=False)
    per_run = pairs[~several].set_index("run_id")["code"]
    conflicting = pd.Series(_CONFLICTING, index=pd.Index(pairs.loc[several, "run_id"].unique()), dtype=object)
    return pd.concat([per_run, conflicting]).rename(index=str)


def _runs_languages(runs: pd.DataFrame) -> pd.Series:
    """Per run with a tag in the runs file: its locale code or `\\0<tag>` for an unlisted tag."""
    if LANGUAGE_COLUMN not in runs.columns:
        return pd.Series(dtype=object)
    return _mapped(runs.set_index("run_id")[LANGUAGE_COLUMN].astype(object)).dropna()


def child_languages(trials: pd.DataFrame, runs: pd.DataFrame, counts: Counter) -> ChildLanguages:
    """Each run's language: the trials' tag when its trials carry one, else the runs file's (joined on run_id).

    Counted (`counts`): runs without a tag while others have one (`runs_language_not_recorded`), runs whose tag
    no locale lists (`runs_language_unknown_tag`), runs whose trials name two locales (`runs_language_conflicting`).
    """
    from_trials, from_runs = _trials_languages(trials), _runs_languages(runs)
    source = " and ".join(name for name, found in (("trials", from_trials), ("runs", from_runs)) if len(found))
    if not source:
        return ChildLanguages(pd.Series(dtype=object), recorded=False, source="")
    run_ids = pd.Index(trials["run_id"].astype(object).dropna().unique()).astype(str)
    code = from_trials.reindex(run_ids)
    code = code.fillna(from_runs[~from_runs.index.duplicated()].reindex(run_ids))
    conflicting = code == _CONFLICTING
    unknown = code.astype(str).str.startswith("\0") & ~conflicting & code.notna()
    counts["runs_language_not_recorded"] += int(code.isna().sum())
    counts["runs_language_conflicting"] += int(conflicting.sum())
    counts["runs_language_unknown_tag"] += int(unknown.sum())
    tags = Counter(str(tag)[1:] for tag in code[unknown])
    known = code[code.notna() & ~conflicting & ~unknown]
    return ChildLanguages(known, recorded=True, source=source, unknown_tags=dict(sorted(tags.items())))


@dataclass(frozen=True)
class Pairing:
    """The model runs compared with one language's children (`language`: a locale code or `NOT_RECORDED`)."""

    language: str
    units: list[str]


def pairings(unit_locales: dict[str, str], child_labels: Iterable[str], recorded: bool, across: bool) -> list[Pairing]:
    """Which runs meet which children: each run the children of its own locale (`across`: of every language);
    pooled children (language not recorded) meet every run. Languages in report order; runs sorted."""
    units = sorted(unit_locales)
    if not recorded:
        return [Pairing(NOT_RECORDED, units)] if units else []
    found = []
    for language in sorted(set(child_labels), key=locale_rank):
        members = units if across else [u for u in units if unit_locales[u] == language]
        if members:
            found.append(Pairing(language, members))
    return found
