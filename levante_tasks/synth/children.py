"""Simulated children and IRT truth for the synthetic release.

Generator (all draws from numpy `default_rng` streams seeded by the release seed):
- item truth: b = item difficulty centre + N(0, 0.35); a1 = 1 (Rasch) except mental-rotation and
  same-different-selection (2PL, a1 = exp(N(0.1, 0.25))); g = the item's chance level; d = -a1 * b.
- children: age ~ U(5, 12) years; site `synth_site_a` / `synth_site_b` (shift -0.2 / +0.2); per task
  theta = shift + 0.3 * (age - 8.5) + s * (sqrt(0.5) * general + sqrt(0.5) * specific), general and specific
  ~ N(0, 1), s^2 = 1 - 0.3^2 * 49/12, so theta has variance 1 + 0.04 around the site mean.
- each child takes each task with probability 0.5 (one run); scored items only (no practice, instruction,
  slider or hostile-attribution rows); P(correct) = g + (1 - g) / (1 + exp(-(a1 * theta + d)));
  a wrong response picks a distractor with weights 2:1:1 (the first listed is favoured).
- theta_estimate / theta_se: EAP (61 points on [-6, 6], normal prior of the run's group) with the true items.
Groups: scalar multigroup site models for trog, egma-math and matrix-reasoning (group = site);
single group `all` for vocab, theory-of-mind (by-language models) and the 2PL tasks (as in the fixture).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from levante_tasks.schema.crosswalk import redivis_uid
from levante_tasks.synth.items import Item
from levante_tasks.synth.registry import SYNTH_TASKS

# Which tasks are 2PL and which have site groups is part of each task's row in synth/registry.py.
TWO_PL_TASKS = tuple(name for name, task in SYNTH_TASKS.items() if task.two_pl)
SITE_TASKS = tuple(name for name, task in SYNTH_TASKS.items() if task.site_groups)
SITES = {"synth_site_a": -0.2, "synth_site_b": 0.2}
SLOPE = 0.3
RESIDUAL_SD = math.sqrt(1 - SLOPE**2 * 49 / 12)
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


def group_of(task: str, site: str) -> str:
    """The IRT group a run belongs to: its site for multigroup site models, else `all`."""
    return site if task in SITE_TASKS else "all"


def group_moments(task: str) -> dict[str, tuple[float, float]]:
    """True latent mean and variance per group of a task (the generator's population values)."""
    var_within = SLOPE**2 * 49 / 12 + RESIDUAL_SD**2
    if task in SITE_TASKS:
        return {site: (shift, var_within) for site, shift in sorted(SITES.items())}
    shifts = list(SITES.values())
    return {"all": (float(np.mean(shifts)), var_within + float(np.var(shifts)))}


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


@dataclass(frozen=True)
class Child:
    """One simulated child."""

    user_id: str
    site: str
    age: float
    general: float


def draw_children(n: int, rng: np.random.Generator) -> list[Child]:
    """n children with uniform ages 5-12 and alternating sites."""
    ages = rng.uniform(5, 12, size=n)
    general = rng.normal(size=n)
    sites = sorted(SITES)
    return [Child(f"synth_user_{k + 1:04d}", sites[k % 2], round(float(ages[k]), 2), float(general[k]))
            for k in range(n)]


def simulate(children: list[Child], truths_by_task: dict[str, list[ItemTruth]],
             rng: np.random.Generator) -> tuple[list[dict], list[dict]]:
    """Runs and trials (dicts keyed by the output column names), children in order, tasks alphabetical."""
    runs: list[dict] = []
    trials: list[dict] = []
    for child in children:
        for task in sorted(truths_by_task):
            specific = float(rng.normal())
            takes = rng.random() < TAKE_TASK
            if not takes:
                continue
            truths = truths_by_task[task]
            theta = (SITES[child.site] + SLOPE * (child.age - 8.5)
                     + RESIDUAL_SD * (math.sqrt(0.5) * child.general + math.sqrt(0.5) * specific))
            correct = rng.random(len(truths)) < p_correct(truths, np.array([theta]))[0]
            group = group_of(task, child.site)
            mean, var = group_moments(task)[group]
            estimate, se = eap(truths, correct.astype(float), mean, var)
            run_id = f"synth_run_{child.user_id.removeprefix('synth_user_')}_{truths[0].item.task_id}"
            runs.append({"run_id": run_id, "user_id": child.user_id, "site": group, "age": child.age,
                         "true_theta": round(theta, 6), "task": task})
            rts = np.exp(rng.normal(7.6 - 0.06 * (child.age - 8.5), 0.35, size=len(truths)))
            for k, (truth, ok) in enumerate(zip(truths, correct, strict=True), start=1):
                alts = truth.item.alternatives or ()
                weights = np.array([2.0] + [1.0] * (len(alts) - 1))
                response = truth.item.answer if ok else alts[int(rng.choice(len(alts), p=weights / weights.sum()))]
                trials.append({
                    "site": group, "dataset": "synthetic", "task_id": task, "user_id": child.user_id,
                    "run_id": run_id, "trial_id": f"{run_id}_t{k:03d}", "trial_number": k,
                    "item_uid": truth.item_uid, "item_task": task, "item_group": truth.item.trial_type,
                    "item": truth.item.item, "correct": bool(ok), "rt": int(rts[k - 1]), "response": response,
                    "answer": truth.item.answer, "distractors": ",".join(alts), "chance": truth.g,
                    "theta_estimate": estimate, "theta_se": se,
                })
    return runs, trials
