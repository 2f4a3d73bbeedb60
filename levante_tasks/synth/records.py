"""The synthetic release's IRT truth as LEVANTE's model registry holds it: how each population takes each task
(`task_plans`) and the records it writes (mirt `mod2values` long CSV, which `levante-tasks compare --irt` reads).

Paths follow the registry's `{item_task}/{model_set}/{subset}/{item_task}_{itemtype}_f{nfact}[_{invariance}]`
(docs: ../shared/docs/levante.md section 7), with `.csv` for `.rds`, under `irt/registry/`:
- every task but vocab and theory-of-mind: `<task_id>/multigroup_site/all_items/<task_id>_<rasch|2pl>_f1_scalar.csv`,
  one group per dataset (scalar invariance: the same item rows in every group; MEAN_1 and COV_11 per group, the
  reference group's MEAN_1 fixed, `est` FALSE, as mirt identifies it);
- vocab and theory-of-mind (configural only, as in LEVANTE): `<task_id>/by_language/<language>/<task_id>_rasch_f1.csv`,
  one single-group record (`all`) per language, holding the items given in that language with that language's
  difficulties b_L = b + N(0, LANGUAGE_ITEM_SD) - (the language's mean on the common scale), so its children have
  mean theta 0 on it: MEAN_1 = 0 fixed, COV_11 = the children's variance.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from levante_tasks.schema.locales import Locale, of_language_tag
from levante_tasks.schema.tasks import task_info
from levante_tasks.synth.children import TWO_PL_TASKS, ItemTruth, TaskPlan, item_truths
from levante_tasks.synth.items import TaskItems, stream
from levante_tasks.synth.items_language import TRANSLATED_LOCALES
from levante_tasks.synth.populations import POPULATIONS, REFERENCE, Population
from levante_tasks.synth.registry import SYNTH_TASKS
from levante_tasks.synth.translations import untranslated_items

REGISTRY_DIR = "registry"  # under irt/
LANGUAGE_ITEM_SD = 0.4  # SD of a language's own shift of each item's difficulty (configural records)
SINGLE_GROUP = "all"  # mirt's group name of a single-group model
COLUMNS = ("group", "item", "class", "name", "parnum", "value", "est")


def by_language(task: str) -> bool:
    """Whether a task is calibrated per language (one record per language) rather than by dataset."""
    return SYNTH_TASKS[task].by_language


def _locale(population: Population) -> Locale:
    found = of_language_tag(population.language)
    if found is None:
        raise ValueError(f"{population.site}: language {population.language!r} names no known locale")
    return found


def locale_code(population: Population) -> str:
    """The translation-table column of a population's language (`de-DE` -> `de`; English: `en`)."""
    return _locale(population).code


def language_of(population: Population) -> str:
    """The `by_language/<language>` folder of a population's records (ISO 639-1: `de`, `es`, `en`)."""
    return _locale(population).language


def language_truths(truths: list[ItemTruth], population: Population, seed: int) -> list[ItemTruth]:
    """The task's items as its by-language record for this population's language holds them: each difficulty
    moved by the language's own N(0, LANGUAGE_ITEM_SD) draw and by minus the population's mean (drawn for every
    item, so leaving an item out changes no other item's value)."""
    task = truths[0].task
    rng = stream(seed, f"irt/{task}/{language_of(population)}")
    moved = zip(truths, rng.normal(0.0, LANGUAGE_ITEM_SD, size=len(truths)), strict=True)
    return [replace(t, d=round(-t.a1 * (t.b + float(e) - population.mean), 4)) for t, e in moved]


def task_plans(task: str, truths: list[ItemTruth], left_out: Mapping[str, set[str]], seed: int,
               populations: tuple[Population, ...] = POPULATIONS) -> dict[Population, TaskPlan]:
    """How each population takes a task: the items its language translates (`left_out`: locale code -> manifest
    item_uids without a translation there), on its record's scale, with its group's prior."""
    plans = {}
    for population in populations:
        skip = left_out.get(locale_code(population), set())
        if by_language(task):
            own = [t for t in language_truths(truths, population, seed) if t.item.item_uid not in skip]
            plans[population] = TaskPlan(own, SINGLE_GROUP, 0.0, population.var, shift=-population.mean)
        else:
            own = [t for t in truths if t.item.item_uid not in skip]
            plans[population] = TaskPlan(own, population.dataset, population.mean, population.var)
    return plans


def task_truth(task: TaskItems, seed: int) -> tuple[list[ItemTruth], dict[Population, TaskPlan]]:
    """A task's item truth and how each population takes it, as the synthetic release of `seed` draws them (the
    items each language leaves out come from the task's rows of the translation table)."""
    truths = item_truths(task.items, stream(seed, f"irt/{task.task}"))
    translate = SYNTH_TASKS[task.task].translate
    rows = translate(task) if translate else []
    left_out = {locale: untranslated_items(rows, locale) for locale in TRANSLATED_LOCALES}
    return truths, task_plans(task.task, truths, left_out, seed)


def record_path(task: str, population: Population | None = None) -> str:
    """A record's path under `irt/`: the multigroup record of a task, or its by-language record for the
    population's language."""
    item_task = task_info(task).task_id
    itemtype = "2pl" if task in TWO_PL_TASKS else "rasch"
    if population is None:
        return f"{REGISTRY_DIR}/{item_task}/multigroup_site/all_items/{item_task}_{itemtype}_f1_scalar.csv"
    return f"{REGISTRY_DIR}/{item_task}/by_language/{language_of(population)}/{item_task}_{itemtype}_f1.csv"


def _group_rows(group: str, truths: list[ItemTruth], mean: float, var: float, reference: bool,
                two_pl: bool) -> list[dict]:
    """The mod2values rows of one group: a1, d, g, u per item (`<uid>-1`), then MEAN_1 and COV_11."""
    rows = [{"group": group, "item": f"{t.item_uid}-1", "class": "dich", "name": name, "value": value, "est": est}
            for t in truths for name, value, est in (("a1", t.a1, two_pl), ("d", t.d, True), ("g", t.g, False),
                                                     ("u", 1.0, False))]
    rows += [{"group": group, "item": "GROUP", "class": "GroupPars", "name": "MEAN_1", "value": round(mean, 6),
              "est": not reference},
             {"group": group, "item": "GROUP", "class": "GroupPars", "name": "COV_11", "value": round(var, 6),
              "est": not (reference and two_pl)}]
    return rows


def _numbered(rows: list[dict]) -> list[dict]:
    return [dict(row, parnum=k) for k, row in enumerate(rows, start=1)]


def multigroup_record(task: str, truths: list[ItemTruth],
                      populations: tuple[Population, ...] = POPULATIONS) -> list[dict]:
    """The scalar multigroup record of a task: groups (datasets) in name order, every scored item in each."""
    rows = []
    for population in sorted(populations, key=lambda p: p.dataset):
        rows += _group_rows(population.dataset, truths, population.mean, population.var, population is REFERENCE,
                            task in TWO_PL_TASKS)
    return _numbered(rows)


def language_record(task: str, plan: TaskPlan) -> list[dict]:
    """The single-group by-language record holding a population's plan (its items and prior)."""
    return _numbered(_group_rows(SINGLE_GROUP, plan.truths, plan.mean, plan.var, True, task in TWO_PL_TASKS))


def records(task: str, truths: list[ItemTruth], plans: Mapping[Population, TaskPlan]) -> dict[str, list[dict]]:
    """Every record of a task: path under `irt/` -> mod2values rows."""
    if not by_language(task):
        return {record_path(task): multigroup_record(task, truths, tuple(plans))}
    return {record_path(task, population): language_record(task, plan) for population, plan in plans.items()}


def group_table(task: str, plans: Mapping[Population, TaskPlan]) -> list[dict]:
    """The true population behind each group of each record of a task (rows of irt/groups.csv)."""
    return [{"task": task, "record": record_path(task, population if by_language(task) else None),
             "group": plan.group, "dataset": population.dataset, "language": population.language,
             "mean": round(plan.mean, 6), "var": round(plan.var, 6), "age_slope": population.slope}
            for population, plan in sorted(plans.items(), key=lambda kv: kv[0].dataset)]

