"""Recovery of the comparison's readouts from known truth: simulated children and models, the real pipeline.

Children come from the synthetic release's generator (`levante_tasks.synth.children`) with two sites of one
language (`POPULATIONS`: ages U(5, 12), per-task theta = 0.3 * (age - 8.5) + N(0, ~0.9^2) around the site means
-0.2 / +0.2, one IRT group `all`; 2PL/Rasch answers with g at chance, a wrong answer picks a distractor with
weights 2:1:1). Models: child-like ones of known ability theta_m ~ U(`Design.model_theta_range`), whose
`correct` is drawn from the same item response functions and whose option scores are the log of a child's
response distribution at theta_m (so their true beta is 1), and four null models whose scores carry nothing
about children's choices:
uniform (equal scores), random choice (one option scored 1), random scores (N(0, 1)), and one fixed presented
position (the first letter, with the correct option placed at each letter equally often as the tasks' balanced
shuffle does). Every replicate runs `run_compare` on files, as a user would, with all models in one records file.

Item bank: the synthetic vocab's 18 Rasch items (a1 = 1) by default; `Design.bank_copies` / `Design.a1_sdlog`
give a 2PL bank instead: the 18 items repeated `bank_copies` times under new uids, each copy with fresh
b = difficulty centre + N(0, 0.35) and a1 = exp(N(0, a1_sdlog)) (lognormal discriminations).

Estimands: theta_m on the IRT scale; the age equivalent's truth is the age where the children's mean true theta
equals theta_m (8.5 + (theta_m - group mean) / 0.3); the closest KL bin's truth is the bin holding theta_m; a
child-like model's accuracy (the by-age table's) has the truth mean_i P_i(correct | theta_m).
The difficulty correlations (r_pb = Pearson r(correct, b) and Spearman rho, with their Fisher-z CIs) are
statistics of one draw of the model's 0/1 answers on a fixed bank; their truth is the model's expected
correlation over its answer draws given its true theta (`E[r | answers not constant]`, the same for rho: the
report's r is undefined when every answer is alike), by Monte Carlo (`CORRELATION_DRAWS` draws, Monte Carlo SD
< 0.005). For uniform, random-choice and random-score null models every item is right with probability 1/K
independently of b, so both truths are exactly 0; the fixed-letter null's answers are fixed by item order, so
its correlations are constants with no sampling truth (NaN, not scored).
"""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from levante_tasks.compare.distributions import bin_label
from levante_tasks.compare.results import Settings
from levante_tasks.schema.tasks import task_info
from levante_tasks.synth.populations import AGE_CENTRE, Population

TASK = "vocab"
NULL_KINDS = ("uniform", "random_choice", "random_scores", "fixed_position")
Z95 = 1.959963984540054
CORRELATION_DRAWS = 4000
ZERO_CORRELATION_NULLS = ("uniform", "random_choice", "random_scores")
AGE_BANDS = tuple(float(age) for age in range(2, 14))  # 1-year bands of true age (a design's models may be younger
# than its youngest child)
AGE_COLUMNS = ["model", "theta", "se", "age_equivalent", "age_flag", "age_ci_low", "age_ci_high", "age_ci_low_flag",
               "age_ci_high_flag", "youngest_edge_age", "oldest_edge_age"]  # age_equivalence.csv's, read back


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
    bank_copies: int = 1  # > 1: the vocab items repeated under new uids, each copy with its own parameters
    a1_sdlog: float = 0.0  # > 0: a1 = exp(N(0, a1_sdlog)) per item (2PL); 0 with one copy: the release's Rasch truth
    model_theta_range: tuple[float, float] = (-1.0, 1.0)  # child-like models' true theta ~ U(range): true ages
    # 5.2-11.8 by default; (-1.8, 1.0) reaches true age 2.5, below the youngest child (5)


TWO_PL = {"bank_copies": 8, "a1_sdlog": 0.4}  # 144 items, a1 roughly 0.45-2.2 (5-95%)
YOUNGER = {"model_theta_range": (-1.8, 1.0)}  # models' true ages 2.5-11.8: some younger than every child
SLOPE = 0.3  # logits a year
POPULATIONS = tuple(Population(f"synth_site_{name}", "synthetic", "en-US", 1, mean, 1.0, SLOPE)
                    for name, mean in (("a", -0.2), ("b", 0.2)))


def group_prior() -> tuple[float, float]:
    """The one group's true mean and variance: the two sites' mixture (what its record's GROUP rows hold)."""
    means = [p.mean for p in POPULATIONS]
    return float(np.mean(means)), POPULATIONS[0].var + float(np.var(means))


def true_age(theta: float | np.ndarray) -> float | np.ndarray:
    """The age at which the children's mean true theta equals `theta`."""
    return AGE_CENTRE + (theta - group_prior()[0]) / SLOPE


def _truths(design: Design) -> list:
    """The synthetic release's vocab items and their IRT truth (fixed across replicates); a 2PL bank when the
    design asks for one."""
    from levante_tasks.synth import children as kids
    from levante_tasks.synth.items import stream
    from levante_tasks.synth.registry import synth_task

    items = synth_task(task_info(TASK)).build(stream(design.seed, TASK)).items
    if design.bank_copies == 1 and design.a1_sdlog == 0.0:
        return kids.item_truths(items, stream(design.seed, f"irt/{TASK}"))
    rng = stream(design.seed, f"irt/{TASK}/2pl")
    truths = []
    for copy in range(design.bank_copies):
        for item in filter(kids.scored, items):
            b = float(item.difficulty) + float(rng.normal(0, 0.35))
            a1 = round(float(np.exp(rng.normal(0, design.a1_sdlog))), 4)
            uid = f"{item.item_uid}_c{copy}" if design.bank_copies > 1 else item.item_uid
            item = replace(item, item_uid=uid)
            truths.append(kids.ItemTruth(TASK, kids.irt_uid(item), item, a1, round(-a1 * b, 4), item.chance or 0.0))
    return truths


def expected_correlations(truths: list, theta: float, rng: np.random.Generator,
                          n_draws: int = CORRELATION_DRAWS) -> tuple[float, float]:
    """The estimands of r_pb and Spearman rho for a model of ability `theta`: their means over its answer draws
    on the fixed bank (draws with every answer alike left out, as the report leaves r undefined there)."""
    from levante_tasks.compare.difficulty import row_pearson
    from levante_tasks.synth.children import p_correct

    b = np.array([t.b for t in truths])
    x = (rng.random((n_draws, len(truths))) < p_correct(truths, np.array([theta]))[0]).astype(float)
    x = x[np.ptp(x, axis=1) > 0]
    return float(row_pearson(x, b).mean()), float(row_pearson(x, stats.rankdata(b)).mean())


def child_distribution(truths: list, theta: float) -> tuple[np.ndarray, list[np.ndarray]]:
    """P(correct) per item and a child's response distribution over [answer] + distractors at `theta`."""
    from levante_tasks.synth.children import p_correct

    p = p_correct(truths, np.array([theta]))[0]
    out = []
    for truth, pk in zip(truths, p, strict=True):
        weights = np.array([2.0] + [1.0] * (len(truth.item.alternatives) - 1))
        out.append(np.r_[pk, (1 - pk) * weights / weights.sum()])
    return p, out


def _model_rows(truths: list, design: Design, rng: np.random.Generator,
                truth_rng: np.random.Generator) -> tuple[list[dict], pd.DataFrame]:
    """Records of every simulated model and the truth table (model, kind, true theta, true correlations, expected
    accuracy)."""
    rows, truth_rows = [], []
    for k, theta in enumerate(rng.uniform(*design.model_theta_range, design.n_childlike)):
        name = f"childlike_{k:03d}"
        p, dists = child_distribution(truths, float(theta))
        correct = rng.random(len(truths)) < p
        for truth, ok, dist in zip(truths, correct, dists, strict=True):
            rows.append({"model": name, "item_uid": truth.item_uid, "correct": int(ok),
                         "option_scores": json.dumps(np.log(dist).tolist())})
        true_r, true_rho = expected_correlations(truths, float(theta), truth_rng)
        truth_rows.append({"model": name, "kind": "childlike", "true_theta": float(theta), "true_pearson_r": true_r,
                           "true_spearman_rho": true_rho, "true_accuracy": float(p.mean())})
    for kind in NULL_KINDS:
        for k in range(design.n_null_each):
            name = f"{kind}_{k:03d}"
            for i, truth in enumerate(truths):
                n_options = 1 + len(truth.item.alternatives)
                scores = _null_scores(kind, i, n_options, rng)
                best = np.flatnonzero(scores == scores.max())
                rows.append({"model": name, "item_uid": truth.item_uid, "correct": int(rng.choice(best) == 0),
                             "option_scores": json.dumps(scores.tolist())})
            zero = 0.0 if kind in ZERO_CORRELATION_NULLS else math.nan
            truth_rows.append({"model": name, "kind": kind, "true_theta": math.nan, "true_pearson_r": zero,
                               "true_spearman_rho": zero, "true_accuracy": math.nan})
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
    mean, var = group_prior()
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
    readouts (theta, SE, age and its interval, the difficulty correlations and their CIs, KL readouts)."""
    from levante_tasks.compare.pipeline import run_compare
    from levante_tasks.synth import children as kids
    from levante_tasks.synth.populations import draw_children

    rng = np.random.default_rng([design.seed, index])
    mean, var = group_prior()
    plans = {TASK: {population: kids.TaskPlan(truths, "all", mean, var) for population in POPULATIONS}}
    runs, trials = kids.simulate(draw_children(design.n_children, rng, POPULATIONS), plans, rng)
    records, truth = _model_rows(truths, design, rng, np.random.default_rng([design.seed, index, 7]))
    with tempfile.TemporaryDirectory(prefix="recovery-") as tmp:
        paths = _write_inputs(Path(tmp), truths, runs, trials, records)
        settings = Settings(n_boot=design.n_boot, n_perm=design.n_perm, seed=index, plots=False)
        run_compare([(TASK, paths["irt"])], paths["trials"], paths["runs"], paths["records"], Path(tmp) / "out",
                    settings, items_path=paths["items"])
        out = Path(tmp) / "out"
        age = pd.read_csv(out / "age_equivalence.csv")
        kl = pd.read_csv(out / "kl_summary.csv")
        difficulty = pd.read_csv(out / "difficulty.csv")
    table = truth.merge(age[AGE_COLUMNS], on="model")
    table = table.merge(difficulty[["model", "accuracy", "pearson_r", "pearson_ci_low", "pearson_ci_high",
                                    "spearman_rho", "spearman_ci_low", "spearman_ci_high"]], on="model")
    table = table.merge(kl[["model", "beta", "closest_bin", "closest_bin_mean_kl", "closest_bin_uniform_kl",
                            "better_than_uniform", "uniform_test_p"]], on="model")
    return table.assign(replicate=index, true_age=true_age(table["true_theta"]),
                        true_bin=[bin_label(int(np.floor(t))) if np.isfinite(t) else "" for t in table["true_theta"]])


def run(design: Design) -> pd.DataFrame:
    """Every replicate of a design, one table."""
    truths = _truths(design)
    return pd.concat([replicate(truths, design, r) for r in range(design.replicates)], ignore_index=True)


def _interval_figures(table: pd.DataFrame, name: str) -> dict[str, float]:
    """Bias, RMSE and 95% coverage of one difficulty correlation (`pearson_r` or `spearman_rho`) against its truth
    (`true_<name>`), over the rows whose truth and interval are defined; `defined`: share of rows with an interval."""
    prefix = name.split("_")[0]
    low, high, truth = table[f"{prefix}_ci_low"], table[f"{prefix}_ci_high"], table[f"true_{name}"]
    rows = truth.notna() & low.notna() & high.notna()
    err = (table[name] - truth)[rows]
    return {"bias": float(err.mean()), "rmse": float(np.sqrt((err**2).mean())),
            "coverage": float(((low <= truth) & (truth <= high))[rows].mean()),
            "defined": float(rows[truth.notna()].mean()), "n": int(rows.sum())}


def by_true_age(child: pd.DataFrame, low: pd.Series, high: pd.Series, covered: pd.Series) -> dict[str, dict]:
    """Per 1-year band of true age: theta's and the age's bias (the age over numeric points only), coverage, and
    how often the point and the interval's ends are "below youngest" / "above oldest" (open)."""
    bands = pd.cut(child["true_age"], AGE_BANDS, right=False)
    flag = child["age_flag"].fillna("")
    frame = pd.DataFrame({
        "n": 1, "theta_err": child["theta"] - child["true_theta"],
        "theta_covered": (child["theta"] - child["true_theta"]).abs() <= Z95 * child["se"],
        "age_err": child["age_equivalent"] - child["true_age"], "age_covered": covered,
        "point_below_youngest": flag == "below_youngest", "point_above_oldest": flag == "above_oldest",
        "ci_low_open": np.isinf(low), "ci_high_open": np.isinf(high)}, index=child.index)
    out = {}
    for band, part in frame.groupby(bands, observed=True):
        out[f"{band.left:g}-{band.right:g}"] = {
            "n": int(part["n"].sum()), "theta_bias": round(float(part["theta_err"].mean()), 3),
            "theta_coverage": round(float(part["theta_covered"].mean()), 3),
            "age_bias": round(float(part["age_err"].mean()), 2),
            "age_coverage": round(float(part["age_covered"].mean()), 3),
            "age_numeric": round(float(part["age_err"].notna().mean()), 3),
            **{k: round(float(part[k].mean()), 3) for k in ("point_below_youngest", "point_above_oldest",
                                                             "ci_low_open", "ci_high_open")}}
    return out


def age_interval(child: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """The age intervals' ends as the report reads them: a low end "below youngest" is -inf and a high end "above
    oldest" +inf (open: it covers every younger / older age); a high end "below youngest" is the youngest edge
    (`youngest_edge_age`: the whole interval lies at or below it) and a low end "above oldest" the oldest edge."""
    low_flag, high_flag = child["age_ci_low_flag"].fillna(""), child["age_ci_high_flag"].fillna("")
    low = pd.Series(np.where(low_flag == "below_youngest", -np.inf,
                             np.where(low_flag == "above_oldest", child["oldest_edge_age"], child["age_ci_low"])),
                    index=child.index)
    high = pd.Series(np.where(high_flag == "above_oldest", np.inf,
                              np.where(high_flag == "below_youngest", child["youngest_edge_age"],
                                       child["age_ci_high"])), index=child.index)
    return low, high


def theta_age_figures(child: pd.DataFrame) -> dict[str, float]:
    """Bias, RMSE and 95% coverage of theta (theta +- 1.96 SE) and of the age equivalent (over numeric points;
    coverage of its interval, open ends included) against `true_theta` / `true_age`, one row per model."""
    err = child["theta"] - child["true_theta"]
    low, high = age_interval(child)
    age_err = (child["age_equivalent"] - child["true_age"]).dropna()
    return {
        "theta_bias": float(err.mean()),
        "theta_rmse": float(np.sqrt((err**2).mean())),
        "theta_coverage": float((err.abs() <= Z95 * child["se"]).mean()),
        "age_bias": float(age_err.mean()),
        "age_rmse": float(np.sqrt((age_err**2).mean())),
        "age_point_defined": float(child["age_equivalent"].notna().mean()),
        "age_coverage": float(((low <= child["true_age"]) & (child["true_age"] <= high)).mean()),
        "age_ci_low_open": float(np.isinf(low).mean()),
        "age_ci_high_open": float(np.isinf(high).mean()),
    }


def figures(table: pd.DataFrame) -> dict[str, object]:
    """Bias, RMSE and 95% coverage of theta, the age equivalent (also per true-age band) and the difficulty
    correlations (child-like models; null models whose true correlation is 0 separately), closest-bin hit rates,
    null flag rates."""
    child = table[table["kind"] == "childlike"]
    low, high = age_interval(child)
    covered = (low <= child["true_age"]) & (child["true_age"] <= high)
    nulls = table[table["kind"] != "childlike"]
    old_flag = nulls["closest_bin_mean_kl"] < nulls["closest_bin_uniform_kl"] * (1 - 1e-9)
    strong = child["true_theta"] > 0
    return {
        "n_childlike": int(len(child)),
        **theta_age_figures(child),
        "by_true_age": by_true_age(child, low, high, covered),
        "accuracy_bias": float((child["accuracy"] - child["true_accuracy"]).mean()),  # the by-age table's models
        "pearson_r": _interval_figures(child, "pearson_r"),
        "spearman_rho": _interval_figures(child, "spearman_rho"),
        "null_pearson_r": _interval_figures(nulls, "pearson_r"),
        "null_spearman_rho": _interval_figures(nulls, "spearman_rho"),
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
