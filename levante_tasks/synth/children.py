"""Simulated children and IRT truth for the synthetic release.

Generator (all draws from numpy `default_rng` streams seeded by the release seed):
- item truth: b = item difficulty centre + N(0, 0.35); a1 = 1 (Rasch) except mental-rotation and
  same-different-selection (2PL, a1 = exp(N(0.1, 0.25))); g = the item's chance level; d = -a1 * b. Tasks
  calibrated by language (vocab, theory-of-mind) give each language its own item difficulties (synth/records.py).
- children (synth/populations.py): three sites modelled on LEVANTE 2026.1, in its proportions 1,020 : 339 : 188,
  each one dataset (the IRT group of its runs) and one language; age ~ U(5, 12); per task theta = site mean +
  site slope * (age - 8.5) + r * (sqrt(0.5) * general + sqrt(0.5) * specific), general (per child) and specific
  (per task) ~ N(0, 1), r^2 = SD^2 - slope^2 * 49/12, so theta has the site's SD around the site's mean:
  Colombia `synth_site_co`, dataset `synth_co_pilot`, es-CO: mean -0.3, SD 0.9, 0.25 logits a year;
  Germany `synth_site_de`, `synth_de_pilot`, de-DE: mean 0.25, SD 1.1, 0.35 a year;
  Canada `synth_site_ca`, `synth_ca_pilot`, en-US: mean 0, SD 1, 0.3 a year (the multigroup records' reference).
- each child takes each task with probability 0.5 (one run) and answers every scored item of it that its
  language has a translation of (no practice, instruction, slider or hostile-attribution rows; an item left
  untranslated in the translation table is not given in that language); P(correct) = g + (1 - g) /
  (1 + exp(-(a1 * theta + d))); a wrong response picks a distractor with weights 2:1:1 (the first is favoured).
- theta_estimate / theta_se: EAP (61 points on [-6, 6], normal prior of the run's IRT group) with the true items.
Records (synth/records.py): vocab and theory-of-mind are calibrated per language (one single-group record per
language, on which its children's mean theta is 0); every other task by one multigroup record whose groups are
the datasets (scalar invariance: shared item parameters, each group its own mean and variance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from levante_tasks.schema.crosswalk import redivis_uid
from levante_tasks.synth.items import Item
from levante_tasks.synth.populations import AGE_CENTRE, Child, Population
from levante_tasks.synth.registry import SYNTH_TASKS

# Which tasks are 2PL is part of each task's row in synth/registry.py.
TWO_PL_TASKS = tuple(name for name, task in SYNTH_TASKS.items() if task.two_pl)
TAKE_TASK = 0.5
GRID = np.linspace(-6, 6, 61)


@dataclass(frozen=True)
class ItemTruth:
    """True IRT parameters of one scored item (b = -d / a1, higher = harder; g = chance)."""

    task: str
    item_uid: str
    item: Item
    a1: float
    d: float
    g: float

    @property
    def b(self) -> float:
        """Traditional difficulty -d / a1."""
        return -self.d / self.a1


@dataclass(frozen=True)
class TaskPlan:
    """How one population's children take one task: the items they answer, with their parameters on the
    record's scale; their runs' IRT group and its prior (mean, var); `shift` from the common scale to the record's."""

    truths: list[ItemTruth]
    group: str
    mean: float
    var: float
    shift: float = 0.0


def irt_uid(item: Item) -> str:
    """The Redivis / IRT-registry spelling of a manifest item (`vocab__x` -> `vocab_word_x`; others unchanged)."""
    return redivis_uid(item.item_uid)


def scored(item: Item) -> bool:
    """Items children answer and IRT scores: not practice, instruction, slider or hostile-attribution rows."""
    return item.difficulty is not None


def item_truths(items: list[Item], rng: np.random.Generator) -> list[ItemTruth]:
    """Draw a1, d for every scored item, in manifest order."""
    truths = []
    for item in items:
        if not scored(item):
            continue
        b = float(item.difficulty) + float(rng.normal(0, 0.35))
        a1 = float(np.exp(rng.normal(0.1, 0.25))) if item.task in TWO_PL_TASKS else 1.0
        truths.append(ItemTruth(item.task, irt_uid(item), item, round(a1, 4), round(-a1 * b, 4), item.chance or 0.0))
    return truths


def p_correct(truths: list[ItemTruth], theta: np.ndarray) -> np.ndarray:
    """P(correct) for every theta (rows) and item (columns) under the 3PL with fixed g, u = 1."""
    a1 = np.array([t.a1 for t in truths])
    d = np.array([t.d for t in truths])
    g = np.array([t.g for t in truths])
    return g + (1 - g) / (1 + np.exp(-(np.outer(theta, a1) + d)))


def eap(truths: list[ItemTruth], responses: np.ndarray, mean: float, var: float) -> tuple[float, float]:
    """mirt-default EAP: 61-point grid on [-6, 6], normal prior (mean, var); returns (theta, se)."""
    p = np.clip(p_correct(truths, GRID), 1e-12, 1 - 1e-12)
    loglik = (responses * np.log(p) + (1 - responses) * np.log(1 - p)).sum(axis=1)
    logpost = loglik - (GRID - mean) ** 2 / (2 * var)
    w = np.exp(logpost - logpost.max())
    w /= w.sum()
    theta = float((w * GRID).sum())
    return theta, float(math.sqrt((w * (GRID - theta) ** 2).sum()))


def simulate(children: list[Child], plans: dict[str, dict[Population, TaskPlan]],
             rng: np.random.Generator) -> tuple[list[dict], list[dict]]:
    """Runs and trials (dicts keyed by the output column names), children in order, tasks alphabetical; `plans`
    says per task how each population takes it. A run's `true_theta` is on its record's scale."""
    runs: list[dict] = []
    trials: list[dict] = []
    for child in children:
        population = child.population
        where = {"site": population.site, "dataset": population.dataset, "language": population.language}
        for task in sorted(plans):
            specific = float(rng.normal())
            takes = rng.random() < TAKE_TASK
            if not takes:
                continue
            plan = plans[task][population]
            truths = plan.truths
            theta = (population.mean + population.slope * (child.age - AGE_CENTRE)
                     + population.residual_sd * (math.sqrt(0.5) * child.general + math.sqrt(0.5) * specific))
            theta += plan.shift
            correct = rng.random(len(truths)) < p_correct(truths, np.array([theta]))[0]
            estimate, se = eap(truths, correct.astype(float), plan.mean, plan.var)
            run_id = f"synth_run_{child.user_id.removeprefix('synth_user_')}_{truths[0].item.task_id}"
            runs.append({"run_id": run_id, "user_id": child.user_id, **where, "age": child.age,
                         "true_theta": round(theta, 6), "task": task})
            rts = np.exp(rng.normal(7.6 - 0.06 * (child.age - 8.5), 0.35, size=len(truths)))
            for k, (truth, ok) in enumerate(zip(truths, correct, strict=True), start=1):
                alts = truth.item.alternatives or ()
                weights = np.array([2.0] + [1.0] * (len(alts) - 1))
                response = truth.item.answer if ok else alts[int(rng.choice(len(alts), p=weights / weights.sum()))]
                trials.append({
                    **where, "task_id": task, "user_id": child.user_id,
                    "run_id": run_id, "trial_id": f"{run_id}_t{k:03d}", "trial_number": k,
                    "item_uid": truth.item_uid, "item_task": task, "item_group": truth.item.trial_type,
                    "item": truth.item.item, "correct": bool(ok), "rt": int(rts[k - 1]), "response": response,
                    "answer": truth.item.answer, "distractors": ",".join(alts), "chance": truth.g,
                    "theta_estimate": estimate, "theta_se": se,
                })
    return runs, trials
