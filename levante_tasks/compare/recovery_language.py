"""Recovery by language: each language's model theta and age equivalent against their truth, through the real
comparison, with the synthetic release's three sites and languages (`levante_tasks.synth`).

Children: the release's generator (synth/populations.py: Colombia es-CO, Germany de-DE, Canada en-US, each its own
mean, SD and age slope), `n_children` per replicate in LEVANTE 2026.1's proportions, each taking the task with
probability 0.5 and answering the items its language translates, on the item truth the release draws for `seed`.
The task's records are the release's: vocab's (and theory-of-mind's) `by_language/<language>` records, each
language with its own item difficulties and scale (children's mean 0), or a multigroup-by-dataset record (trog,
...: shared items, each dataset its own prior).

Models: per language, `n_models` child-like models whose true theta on that language's record is drawn for that
language alone (so one model has a different theta in each language): mean + 3.3 * slope * U(-1, 1), the mean
on the record's scale, i.e. true ages about 5.2-11.8 on that language's own curve. Their `correct` is drawn
from that language's item response functions and their option scores are the log of its children's response
distribution at that theta; they answer the items that language's dataset holds.

Each replicate runs `run_compare` once, as a user would: every language's children (their `language` in the trials
and runs), every language's model answers (records with their `locale`), the task's records (`vocab@es=...` per
language for a by-language task, one multigroup record otherwise). The comparison itself pairs each locale's runs
with the children of that language and picks each child's group by its dataset. Truths: theta, and the age at which
that language's children's mean true theta equals it (8.5 + (theta - mean) / slope).

`swap_records` gives two languages each other's by-language record and `swap_children` swaps the two populations'
language labels (each language's models then meet the other population's children; answers unchanged): what
recovery must not survive, so the tests can fail.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from levante_tasks.compare.recovery import AGE_COLUMNS, child_distribution, theta_age_figures
from levante_tasks.compare.results import Settings
from levante_tasks.synth.populations import AGE_CENTRE, POPULATIONS, Population
from levante_tasks.synth.records import language_of, locale_code

THETA_HALF_RANGE_YEARS = 3.3  # models' true theta: the language's mean +- this many years of its slope


@dataclass(frozen=True)
class LanguageDesign:
    """Sizes of one recovery-by-language study."""

    task: str = "vocab"
    replicates: int = 10
    n_children: int = 3094  # 2 x 1,547: each language's runs about its LEVANTE 2026.1 children (1,020 / 339 / 188)
    n_models: int = 30  # child-like models per language
    n_boot: int = 300
    n_perm: int = 20  # the permutation test is not studied here; its cost is kept low
    seed: int = 0
    swap_records: tuple[str, str] | None = None  # two language tags scored with each other's record
    swap_children: tuple[str, str] | None = None  # two language tags compared with each other's children


def _population(language: str) -> Population:
    return next(p for p in POPULATIONS if p.language == language)


def _swapped(pair: tuple[str, str] | None) -> dict[str, str]:
    """language -> the language whose record (or children) it is given."""
    return {pair[0]: pair[1], pair[1]: pair[0]} if pair else {}


def task_setup(design: LanguageDesign) -> tuple[list, dict, dict[str, list[dict]]]:
    """The release's truth for the design's task and seed: items, each population's plan, the records by path."""
    from levante_tasks.schema.tasks import task_info
    from levante_tasks.synth import records
    from levante_tasks.synth.items import stream
    from levante_tasks.synth.registry import synth_task

    task = synth_task(task_info(design.task)).build(stream(design.seed, design.task))
    truths, plans = records.task_truth(task, design.seed)
    return truths, plans, records.records(design.task, truths, plans)


def _record_of(design: LanguageDesign, population: Population) -> str:
    from levante_tasks.synth import records

    return records.record_path(design.task, population if records.by_language(design.task) else None)


def _models(design: LanguageDesign, plans: dict, rng: np.random.Generator) -> tuple[dict[str, list[dict]],
                                                                                      pd.DataFrame]:
    """Per language, the models' records (in that locale) and the truth table (language, model, true theta, age)."""
    answers, truth = {}, []
    for population in POPULATIONS:
        plan = plans[population]
        rows = []
        half = THETA_HALF_RANGE_YEARS * population.slope
        for k, theta in enumerate(plan.mean + rng.uniform(-half, half, design.n_models)):
            name = f"childlike_{k:03d}"
            p, dists = child_distribution(plan.truths, float(theta))
            correct = rng.random(len(plan.truths)) < p
            rows += [{"model": name, "task": design.task, "item_uid": t.item_uid, "correct": int(ok),
                      "option_scores": json.dumps(np.log(dist).tolist()), "locale": locale_code(population)}
                     for t, ok, dist in zip(plan.truths, correct, dists, strict=True)]
            truth.append({"language": population.language, "model": name, "true_theta": float(theta),
                          "true_age": AGE_CENTRE + (float(theta) - plan.mean) / population.slope})
        answers[population.language] = rows
    return answers, pd.DataFrame(truth)


def _irt(design: LanguageDesign, records: dict[str, list[dict]], folder: Path) -> list[tuple[str, Path]]:
    """The `--irt` pairs of the design's task, written under `folder`: one `<task>@<language>` record per language
    for a by-language task (each language's own, or its swap partner's), else the one multigroup record."""
    from levante_tasks.synth import records as synth_records

    if not synth_records.by_language(design.task):
        pairs = [(design.task, records[_record_of(design, POPULATIONS[0])])]
    else:
        record_for = _swapped(design.swap_records)
        pairs = [(f"{design.task}@{language_of(p)}",
                  records[_record_of(design, _population(record_for.get(p.language, p.language)))])
                 for p in POPULATIONS]
    found = []
    for k, (spec, rows) in enumerate(pairs):
        path = folder / f"irt_{k}.csv"
        pd.DataFrame(rows).to_csv(path, index=False)
        found.append((spec, path))
    return found


def _relabel(table: pd.DataFrame, design: LanguageDesign) -> pd.DataFrame:
    """Children's tables with the two swapped populations' language tags exchanged (`swap_children`)."""
    swap = _swapped(design.swap_children)
    return table.assign(language=table["language"].map(lambda tag: swap.get(tag, tag)))


def _compare_all(design: LanguageDesign, folder: Path, records: dict[str, list[dict]], truths: list,
                 runs: pd.DataFrame, trials: pd.DataFrame, answers: list[dict], index: int) -> pd.DataFrame:
    """One comparison of every language's models with every language's children; age_equivalence.csv's model
    rows, with the language tag of the children each row was compared with."""
    from levante_tasks.compare.pipeline import run_compare

    paths = {name: folder / f"{name}.csv" for name in ("trials", "runs", "items", "records")}
    _relabel(trials, design).to_csv(paths["trials"], index=False)
    _relabel(runs, design).to_csv(paths["runs"], index=False)
    pd.DataFrame({"item_uid": [t.item_uid for t in truths],
                  "options": [json.dumps([t.item.answer, *t.item.alternatives]) for t in truths]}).to_csv(
        paths["items"], index=False)
    pd.DataFrame(answers).to_csv(paths["records"], index=False)
    settings = Settings(n_boot=design.n_boot, n_perm=design.n_perm, seed=index, plots=False)
    run_compare(_irt(design, records, folder), paths["trials"], paths["runs"], paths["records"], folder / "out",
                settings, items_path=paths["items"])
    table = pd.read_csv(folder / "out" / "age_equivalence.csv")
    language = {locale_code(p): p.language for p in POPULATIONS}
    unit = table["model"].str.split("/").str[0]  # a translated run's unit is `<model>/<locale code>`
    return table.assign(model=unit, language=table["children_language"].map(language))[[*AGE_COLUMNS, "language"]]


def replicate(design: LanguageDesign, setup: tuple[list, dict, dict[str, list[dict]]], index: int) -> pd.DataFrame:
    """One replicate: fresh children and models, one comparison; one row per (language, model)."""
    from levante_tasks.synth import children as kids
    from levante_tasks.synth.populations import draw_children

    truths, plans, records = setup
    rng = np.random.default_rng([design.seed, index, 29])
    runs, trials = (pd.DataFrame(rows) for rows in kids.simulate(draw_children(design.n_children, rng),
                                                                   {design.task: plans}, rng))
    answers, truth = _models(design, plans, rng)
    with tempfile.TemporaryDirectory(prefix="recovery-language-") as tmp:
        found = _compare_all(design, Path(tmp), records, truths, runs, trials,
                             [row for rows in answers.values() for row in rows], index)
    return truth.merge(found, on=["language", "model"]).assign(replicate=index)


def run(design: LanguageDesign) -> pd.DataFrame:
    """Every replicate of a design, one table."""
    setup = task_setup(design)
    return pd.concat([replicate(design, setup, r) for r in range(design.replicates)], ignore_index=True)


def figures(table: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per language (in the populations' order): the number of models, and bias, RMSE and 95% coverage of theta
    and of the age equivalent."""
    return {population.language: {"n_models": int((table["language"] == population.language).sum()),
                                  **theta_age_figures(table[table["language"] == population.language])}
            for population in POPULATIONS}
