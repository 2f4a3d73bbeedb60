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

Each replicate runs `run_compare` once per language on that language's children, its record and its models'
answers: the comparison of today, with the records and children chosen per language here. Truths: theta, and
the age at which that language's children's mean true theta equals it (8.5 + (theta - mean) / slope).

`swap_records` scores two languages with each other's record and `swap_children` with each other's children
(answers unchanged): what recovery must not survive, so the tests can fail.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from levante_tasks.compare.recovery import child_distribution, theta_age_figures
from levante_tasks.compare.results import Settings
from levante_tasks.synth.populations import AGE_CENTRE, POPULATIONS, Population

THETA_HALF_RANGE_YEARS = 3.3  # models' true theta: the language's mean +- this many years of its slope
MODEL_COLUMNS = ["model", "theta", "se", "age_equivalent", "age_flag", "age_ci_low", "age_ci_high",
                 "age_ci_low_flag", "age_ci_high_flag"]


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
                      "option_scores": json.dumps(np.log(dist).tolist())}
                     for t, ok, dist in zip(plan.truths, correct, dists, strict=True)]
            truth.append({"language": population.language, "model": name, "true_theta": float(theta),
                          "true_age": AGE_CENTRE + (float(theta) - plan.mean) / population.slope})
        answers[population.language] = rows
    return answers, pd.DataFrame(truth)


def _compare_one(design: LanguageDesign, folder: Path, record: list[dict], truths: list, runs: pd.DataFrame,
                 trials: pd.DataFrame, answers: list[dict], index: int) -> pd.DataFrame:
    """One language's comparison on files; its age_equivalence.csv rows."""
    from levante_tasks.compare.pipeline import run_compare

    paths = {name: folder / f"{name}.csv" for name in ("trials", "runs", "irt", "items", "records")}
    trials.to_csv(paths["trials"], index=False)
    runs.to_csv(paths["runs"], index=False)
    pd.DataFrame(record).to_csv(paths["irt"], index=False)
    pd.DataFrame({"item_uid": [t.item_uid for t in truths],
                  "options": [json.dumps([t.item.answer, *t.item.alternatives]) for t in truths]}).to_csv(
        paths["items"], index=False)
    pd.DataFrame(answers).to_csv(paths["records"], index=False)
    settings = Settings(n_boot=design.n_boot, n_perm=design.n_perm, seed=index, plots=False)
    run_compare([(design.task, paths["irt"])], paths["trials"], paths["runs"], paths["records"], folder / "out",
                settings, items_path=paths["items"])
    return pd.read_csv(folder / "out" / "age_equivalence.csv")[MODEL_COLUMNS]


def replicate(design: LanguageDesign, setup: tuple[list, dict, dict[str, list[dict]]], index: int) -> pd.DataFrame:
    """One replicate: fresh children and models, one comparison per language; one row per (language, model)."""
    from levante_tasks.synth import children as kids
    from levante_tasks.synth.populations import draw_children

    truths, plans, records = setup
    rng = np.random.default_rng([design.seed, index, 29])
    runs, trials = (pd.DataFrame(rows) for rows in kids.simulate(draw_children(design.n_children, rng),
                                                                   {design.task: plans}, rng))
    answers, truth = _models(design, plans, rng)
    record_for, children_for = _swapped(design.swap_records), _swapped(design.swap_children)
    found = []
    with tempfile.TemporaryDirectory(prefix="recovery-language-") as tmp:
        for population in POPULATIONS:
            language = population.language
            record = records[_record_of(design, _population(record_for.get(language, language)))]
            dataset = _population(children_for.get(language, language)).dataset
            folder = Path(tmp) / language
            folder.mkdir()
            table = _compare_one(design, folder, record, truths, runs[runs["dataset"] == dataset],
                                 trials[trials["dataset"] == dataset], answers[language], index)
            found.append(table.assign(language=language))
    return truth.merge(pd.concat(found), on=["language", "model"]).assign(replicate=index)


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
