"""Recovery of the comparison's readouts from known truth: simulated children and models, the real pipeline.

Children come from the synthetic release's generator (`levante_tasks.synth.children`: ages U(5, 12), per-task
theta = 0.3 * (age - 8.5) + N(0, ~0.9^2) around the group mean, 2PL/Rasch answers with g at chance, a wrong answer
picks a distractor with weights 2:1:1). Models: child-like ones of known ability theta_m, whose `correct` is drawn
from the same item response functions and whose option scores are the log of a child's response distribution at
theta_m (so their true beta is 1), and four null models whose scores carry nothing about children's choices:
uniform (equal scores), random choice (one option scored 1), random scores (N(0, 1)), and one fixed presented
position (the first letter, with the correct option placed at each letter equally often as the tasks' balanced
shuffle does). Every replicate runs `run_compare` on files, as a user would, with all models in one records file.

Estimands: theta_m on the IRT scale; the age equivalent's truth is the age where the children's mean true theta
equals theta_m (8.5 + (theta_m - group mean) / 0.3); the closest KL bin's truth is the bin holding theta_m.
"""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from levante_tasks.compare.distributions import bin_label
from levante_tasks.compare.results import Settings

TASK = "vocab"
NULL_KINDS = ("uniform", "random_choice", "random_scores", "fixed_position")
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Design:
    """Sizes of one recovery study (the test uses a small one, the benchmark a larger one)."""

    replicates: int = 10
    n_children: int = 800
    n_childlike: int = 40
    n_null_each: int = 10
    n_boot: int = 400
    n_perm: int = 400
    seed: int = 0


def _truths(seed: int) -> list:
    """The synthetic release's vocab items and their IRT truth (fixed across replicates)."""
    from levante_tasks.synth import children as kids
    from levante_tasks.synth.items import stream
    from levante_tasks.synth.release import BUILDERS

    return kids.item_truths(BUILDERS[TASK](stream(seed, TASK)).items, stream(seed, f"irt/{TASK}"))


def _child_distribution(truths: list, theta: float) -> tuple[np.ndarray, list[np.ndarray]]:
    """P(correct) per item and a child's response distribution over [answer] + distractors at `theta`."""
    from levante_tasks.synth.children import p_correct

    p = p_correct(truths, np.array([theta]))[0]
    out = []
    for truth, pk in zip(truths, p, strict=True):
        weights = np.array([2.0] + [1.0] * (len(truth.item.alternatives) - 1))
        out.append(np.r_[pk, (1 - pk) * weights / weights.sum()])
    return p, out


def _model_rows(truths: list, design: Design, rng: np.random.Generator) -> tuple[list[dict], pd.DataFrame]:
    """Records of every simulated model and the truth table (model, kind, true theta)."""
    rows, truth_rows = [], []
    for k, theta in enumerate(rng.uniform(-1.0, 1.0, design.n_childlike)):
        name = f"childlike_{k:03d}"
        p, dists = _child_distribution(truths, float(theta))
        correct = rng.random(len(truths)) < p
        for truth, ok, dist in zip(truths, correct, dists, strict=True):
            rows.append({"model": name, "item_uid": truth.item_uid, "correct": int(ok),
                         "option_scores": json.dumps(np.log(dist).tolist())})
        truth_rows.append({"model": name, "kind": "childlike", "true_theta": float(theta)})
    for kind in NULL_KINDS:
        for k in range(design.n_null_each):
            name = f"{kind}_{k:03d}"
            for i, truth in enumerate(truths):
                n_options = 1 + len(truth.item.alternatives)
                scores = _null_scores(kind, i, n_options, rng)
                best = np.flatnonzero(scores == scores.max())
                rows.append({"model": name, "item_uid": truth.item_uid, "correct": int(rng.choice(best) == 0),
                             "option_scores": json.dumps(scores.tolist())})
            truth_rows.append({"model": name, "kind": kind, "true_theta": math.nan})
    return [dict(r, task=TASK) for r in rows], pd.DataFrame(truth_rows)


def _null_scores(kind: str, item: int, n_options: int, rng: np.random.Generator) -> np.ndarray:
    """Option scores (canonical order) of a null model on the `item`-th item."""
    if kind == "uniform":
        return np.zeros(n_options)
    if kind == "random_choice":
        return np.eye(n_options)[rng.integers(n_options)]
    if kind == "random_scores":
        return rng.normal(0.0, 1.0, n_options)
    order = np.r_[0, 1 + rng.permutation(n_options - 1)]  # canonical options in presented order...
    order = np.roll(order, item % n_options)  # ...with the correct one at letter `item mod K` (balanced)
    return np.eye(n_options)[order[0]]


def _write_inputs(folder: Path, truths: list, runs: list[dict], trials: list[dict], records: list[dict]) -> dict:
    """The comparison's input files (trials, runs, IRT long CSV with its group prior, items, records)."""
    from levante_tasks.synth.children import group_moments

    mean, var = group_moments(TASK)["all"]
    irt = [{"group": "all", "item": f"{t.item_uid}-1", "name": name, "value": value, "est": name in ("a1", "d")}
           for t in truths for name, value in (("a1", t.a1), ("d", t.d), ("g", t.g), ("u", 1.0))]
    irt += [{"group": "all", "item": "GROUP", "name": "MEAN_1", "value": mean, "est": False},
            {"group": "all", "item": "GROUP", "name": "COV_11", "value": var, "est": False}]
    paths = {name: folder / f"{name}.csv" for name in ("trials", "runs", "irt", "items", "records")}
    pd.DataFrame(trials).to_csv(paths["trials"], index=False)
    pd.DataFrame(runs).to_csv(paths["runs"], index=False)
    pd.DataFrame(irt).to_csv(paths["irt"], index=False)
    pd.DataFrame({"item_uid": [t.item_uid for t in truths],
                  "options": [json.dumps([t.item.answer, *t.item.alternatives]) for t in truths]}).to_csv(
        paths["items"], index=False)
    pd.DataFrame(records).to_csv(paths["records"], index=False)
    return paths


def replicate(truths: list, design: Design, index: int) -> pd.DataFrame:
    """One replicate: fresh children and models, the whole `run_compare`; one row per model with truth and
    readouts (theta, SE, age and its interval, KL readouts)."""
    from levante_tasks.compare.pipeline import run_compare
    from levante_tasks.synth import children as kids

    rng = np.random.default_rng([design.seed, index])
    runs, trials = kids.simulate(kids.draw_children(design.n_children, rng), {TASK: truths}, rng)
    records, truth = _model_rows(truths, design, rng)
    with tempfile.TemporaryDirectory(prefix="recovery-") as tmp:
        paths = _write_inputs(Path(tmp), truths, runs, trials, records)
        settings = Settings(n_boot=design.n_boot, n_perm=design.n_perm, seed=index, plots=False)
        run_compare([(TASK, paths["irt"])], paths["trials"], paths["runs"], paths["records"], Path(tmp) / "out",
                    settings, items_path=paths["items"])
        out = Path(tmp) / "out"
        age = pd.read_csv(out / "age_equivalence.csv")
        kl = pd.read_csv(out / "kl_summary.csv")
    table = truth.merge(age[["model", "theta", "se", "age_equivalent", "age_ci_low", "age_ci_high",
                             "age_ci_low_flag", "age_ci_high_flag"]], on="model")
    table = table.merge(kl[["model", "beta", "closest_bin", "closest_bin_mean_kl", "closest_bin_uniform_kl",
                            "better_than_uniform", "uniform_test_p"]], on="model")
    mean = kids.group_moments(TASK)["all"][0]
    return table.assign(replicate=index, true_age=8.5 + (table["true_theta"] - mean) / kids.SLOPE,
                        true_bin=[bin_label(int(np.floor(t))) if np.isfinite(t) else "" for t in table["true_theta"]])


def run(design: Design) -> pd.DataFrame:
    """Every replicate of a design, one table."""
    truths = _truths(design.seed)
    return pd.concat([replicate(truths, design, r) for r in range(design.replicates)], ignore_index=True)


def figures(table: pd.DataFrame) -> dict[str, object]:
    """Bias, RMSE and 95% coverage of theta and the age equivalent, closest-bin hit rates, null flag rates."""
    child = table[table["kind"] == "childlike"]
    err = child["theta"] - child["true_theta"]
    low = pd.Series(np.where(child["age_ci_low_flag"].fillna("") == "below_youngest", -np.inf, child["age_ci_low"]),
                    index=child.index)  # an end "below youngest" is open: it covers every younger age
    high = pd.Series(np.where(child["age_ci_high_flag"].fillna("") == "above_oldest", np.inf, child["age_ci_high"]),
                     index=child.index)
    covered = (low <= child["true_age"]) & (child["true_age"] <= high)
    age_err = (child["age_equivalent"] - child["true_age"]).dropna()
    bands = pd.cut(child["true_age"], [5.0, 6.5, 8.0, 10.0, 12.0], right=False)
    nulls = table[table["kind"] != "childlike"]
    old_flag = nulls["closest_bin_mean_kl"] < nulls["closest_bin_uniform_kl"] * (1 - 1e-9)
    strong = child["true_theta"] > 0
    return {
        "n_childlike": int(len(child)),
        "theta_bias": float(err.mean()),
        "theta_rmse": float(np.sqrt((err**2).mean())),
        "theta_coverage": float((err.abs() <= Z95 * child["se"]).mean()),
        "age_bias": float(age_err.mean()),
        "age_rmse": float(np.sqrt((age_err**2).mean())),
        "age_point_defined": float(child["age_equivalent"].notna().mean()),
        "age_coverage": float(covered.mean()),
        "age_coverage_by_true_age": {str(k): float(v) for k, v in covered.groupby(bands, observed=True).mean().items()},
        "age_ci_low_below_youngest_by_true_age": {
            str(k): float(v) for k, v in np.isinf(low).astype(float).groupby(bands, observed=True).mean().items()},
        "closest_bin_hit_rate": float((child["closest_bin"] == child["true_bin"]).mean()),
        "beta_median_weak_strong": [float(child.loc[~strong, "beta"].median()),
                                    float(child.loc[strong, "beta"].median())],
        "childlike_better_than_uniform": float(child["better_than_uniform"].astype(bool).mean()),
        "null_flag_rate": {k: float(g["better_than_uniform"].astype(bool).mean()) for k, g in nulls.groupby("kind")},
        "null_flag_count": int(nulls["better_than_uniform"].astype(bool).sum()),
        "null_p_at_most_0.2": {k: float((g["uniform_test_p"] <= 0.2).mean()) for k, g in nulls.groupby("kind")},
        "n_null": int(len(nulls)),
        "null_old_closest_bin_rule_rate": {k: float(v) for k, v in old_flag.groupby(nulls["kind"]).mean().items()},
    }
