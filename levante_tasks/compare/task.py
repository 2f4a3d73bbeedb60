"""All comparisons of one task with one language's children: the children's side once (alignment, abilities,
distributions, age curves), then every model scoring unit compared with them at once (abilities, difficulty r, KL,
age equivalence). Every row it writes names the task, the children's language and, per unit, the unit's locale.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from levante_tasks.compare import age_view
from levante_tasks.compare import conventions as conv
from levante_tasks.compare.age import AgeCurves
from levante_tasks.compare.alignment import align, duplicate_option_items, unmatched_responses
from levante_tasks.compare.difficulty import correlate_many
from levante_tasks.compare.distributions import Cells, compare_units, human_distributions
from levante_tasks.compare.humans import GROUP_SOURCES, children_theta
from levante_tasks.compare.irt import IrtModel
from levante_tasks.compare.order_units import compare_orders
from levante_tasks.compare.results import Results, Settings
from levante_tasks.compare.scoring import calibration_check
from levante_tasks.compare.tables import rows_with_items
from levante_tasks.compare.unit_rows import by_unit, children_bins, front
from levante_tasks.compare.units import Units, share_below
from levante_tasks.errors import LevanteError

NO_ITEMS = "no items matched the IRT model"
NO_CELLS = "no children's (item, bin) pairs with n >= min_n"
NO_OPTION_TEXTS = "none (no --items: option texts unknown, so no KL)"
DIFFICULTY_KEYS = ("pearson_r", "pearson_ci_low", "pearson_ci_high", "spearman_rho", "spearman_ci_low",
                   "spearman_ci_high", "accuracy", "note")


def canonical_options(
    trials: pd.DataFrame, items_file: dict[str, list[str]] | None, uids: set[str], counts: Counter
) -> tuple[dict[str, list[str]], str]:
    """Canonical options of the task's items and where they come from; none without `--items` (no KL then).

    Items with two options of one loose key are excluded and counted (their responses cannot be told apart).
    """
    if items_file is None:
        counts["trials_without_option_texts"] += len(trials)
        return {}, NO_OPTION_TEXTS
    seen = {str(u) for u in trials["item_uid"].dropna().unique()}
    counts["items_not_in_items_file"] += len((seen & uids) - set(items_file))
    options = {uid: items_file[uid] for uid in uids if uid in items_file}
    duplicates = duplicate_option_items(options)
    counts["items_with_duplicate_options"] += len(duplicates)
    counts["trials_item_with_duplicate_options"] += int(trials["item_uid"].isin(duplicates).sum())
    return {uid: opts for uid, opts in options.items() if uid not in duplicates}, "items file"


def irt_summary(model: IrtModel, settings: Settings) -> dict[str, object]:
    """What comparison.json says of an IRT record, with its calibration check (refused above the tolerance)."""
    info: dict[str, object] = {
        "irt_model": model.name,
        "model_class": model.model_class,
        "itemtype": model.itemtype,
        "invariance": model.invariance,
        "groups": [{"name": g.name, "mean": g.mean, "var": g.var} for g in model.groups],
        "reference_group": model.reference.name,
        "prior_assumed": model.prior_assumed,
        "n_irt_items": int(len(model.items)),
    }
    check = calibration_check(model)
    if check is not None:
        if check.get("ability", 0.0) > settings.calibration_tolerance:
            raise LevanteError(
                f"{model.name}: its recorded scores disagree with its own data rescored (max |diff| "
                f"{check['ability']:.3g} logits over {check['n_runs']} runs > --calibration-tolerance "
                f"{settings.calibration_tolerance:g}): children's abilities would not be on the model's scale")
        info["calibration_rescore_max_abs_diff"] = check
    return info


def item_table(task: str, model: IrtModel) -> pd.DataFrame:
    """items.csv rows of one IRT record: each item's first instance with b and its convention."""
    items = model.first_instances().reset_index()
    return items.assign(task=task, irt_model=model.name, convention=conv.B_DEFINITION)[
        ["task", "irt_model", "item_uid", "irt_item", "a1", "d", "g", "u", "b", "convention"]]


@dataclass(frozen=True)
class Comparison:
    """One task's model runs (`records`) compared with one language's children (`trials`) on one IRT record."""

    task: str
    language: str  # the children's locale code, or languages.NOT_RECORDED (pooled)
    model: IrtModel
    irt_info: dict[str, object]  # irt_summary(model)


def compare_task(
    comparison: Comparison,
    records: pd.DataFrame,
    trials: pd.DataFrame,
    runs: pd.DataFrame,
    items_file: dict[str, list[str]] | None,
    settings: Settings,
    results: Results,
    replicates: pd.DataFrame | None = None,
) -> None:
    """The children's side once, then all model scoring units of `records` and the orders units of `replicates`
    (records.read_model_records; compare.order_units) (see the module docstring); the summary goes to
    `results.tasks[task]["languages"][language]`."""
    task, language, model = comparison.task, comparison.language, comparison.model
    counts: Counter = Counter()
    items = model.first_instances()
    uids = set(items.index)
    info: dict[str, object] = {"children_language": language, **comparison.irt_info}
    task_trials = trials[rows_with_items(trials, uids)]
    canonical, source = canonical_options(task_trials, items_file, uids, counts)
    aligned = align(task_trials, canonical, counts)
    unmatched = unmatched_responses(aligned)
    results.add("unmatched_responses", unmatched.assign(task=task, children_language=language))
    children = children_theta(model, task_trials, counts).merge(runs[["run_id", "age"]], on="run_id", how="left")
    results.add("children_theta", children.assign(task=task, children_language=language))
    with_age = children.dropna(subset=["age", "theta_common"])
    counts["children_without_age"] += int(children["age"].isna().sum())
    dist = human_distributions(aligned, children, uids, settings.min_n, counts, options=canonical)
    results.add("human_distributions", dist.assign(task=task, children_language=language,
                                                   convention=conv.OPTION_ORDER))
    cells = Cells.from_dist(dist) if len(dist) else None
    results.count(counts, task=task, language=language)
    info.update(
        option_source=source,
        n_children=int(len(children)),
        n_children_with_age=int(len(with_age)),
        n_children_by_group={g.name: int((children["group"] == g.name).sum()) for g in model.groups},
        n_children_by_group_source={k: int((children["group_source"] == k).sum()) for k in GROUP_SOURCES
                                    if (children["group_source"] == k).any()},
        n_item_bins=int(len(cells.n)) if cells else 0,
        uniform_mean_kl=float(np.sum(cells.uniform_kl() * cells.n) / cells.n.sum()) if cells else None,
    )
    curves = (AgeCurves(with_age["age"].to_numpy(float), with_age["theta_common"].to_numpy(float),
                        settings.n_boot, settings.seed) if len(with_age) >= 2 else None)
    by_age, bands, curve = age_view.add_children(task_trials, children, curves, settings.level,
                                                 {"task": task, "children_language": language})
    info.update(by_age)
    results.add("accuracy_by_age", bands)
    results.add("age_curve", curve)
    units = Units.build(records, items)
    no_kl = "no option texts (pass --items): KL not computed" if items_file is None else NO_CELLS
    info["models"] = compare_units_of_task(comparison, units, children, cells, curves, settings, results, no_kl)
    if replicates is not None and len(replicates):
        info["orders"] = compare_orders(task, language, replicates, cells, children, info["models"], settings,
                                        results, no_kl)
    results.tasks.setdefault(task, {"languages": {}})["languages"][language] = info


def _frame(units: Units, comparison: Comparison, rows: list[dict[str, object]], **columns: object) -> pd.DataFrame:
    """One row per unit: `front` first, then `rows` (dicts), then extra constant or per-unit columns."""
    head = front(units, comparison.task, comparison.language)
    return pd.concat([head, pd.DataFrame(rows)], axis=1).assign(**columns)


def _group_shares(model: IrtModel, children: pd.DataFrame,
                  thetas: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, tuple[int, np.ndarray]]:
    """Per group: (its children, share of them below each unit's EAP under that group's prior)."""
    out = {}
    for prior in model.groups:
        group_theta = children.loc[children["group"] == prior.name, "theta"].to_numpy(float)
        out[prior.name] = (len(group_theta), share_below(group_theta, thetas[prior.name][0]))
    return out


def _theta_table(comparison: Comparison, units: Units, shares: dict[str, tuple[int, np.ndarray]],
                 thetas: dict[str, tuple[np.ndarray, np.ndarray]], ml: tuple) -> pd.DataFrame:
    """model_theta.csv rows: EAP under each group's prior beside that group's children, then the ML estimate."""
    model = comparison.model
    n_items = units.answered().sum(axis=1)
    frames = []
    for prior in model.groups:
        theta, se = thetas[prior.name]
        n_children, share = shares[prior.name]
        frames.append(front(units, comparison.task, comparison.language).assign(**{
            "estimator": "EAP", "group": prior.name,
            "is_reference": prior is model.reference, "prior_mean": prior.mean, "prior_var": prior.var,
            "n_items": n_items, "theta": theta, "se": se, "n_children_in_group": n_children,
            "children_below_theta_in_group": share, "note": "",
        }))
    theta_ml, se_ml, notes = ml
    frames.append(front(units, comparison.task, comparison.language).assign(**{
        "estimator": "ML", "group": "", "is_reference": False,
        "prior_mean": np.nan, "prior_var": np.nan, "n_items": n_items, "theta": theta_ml, "se": se_ml,
        "n_children_in_group": np.nan, "children_below_theta_in_group": np.nan, "note": notes,
        "convention": conv.ML_DEFINITION,
    }))
    order = {name: k for k, name in enumerate(units.names)}
    table = pd.concat(frames, ignore_index=True)
    table = table.sort_values("model", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)
    return table.assign(convention=table["convention"].fillna(conv.EAP_DEFINITION))


def _difficulty(units: Units, settings: Settings) -> list[dict[str, object]]:
    """correlate_many per set of answered items (n = the items a unit answered)."""
    answered = units.answered()
    b = units.items["b"].to_numpy(float)
    out: list[dict[str, object]] = [{} for _ in units.names]
    groups: dict[bytes, list[int]] = {}
    for u, row in enumerate(answered):
        groups.setdefault(row.tobytes(), []).append(u)
    for members in groups.values():
        cols = answered[members[0]]
        found = correlate_many(units.correct[np.ix_(members, np.flatnonzero(cols))], b[cols], settings.level)
        for u, res in zip(members, found, strict=True):
            out[u] = res
    return out


def compare_units_of_task(
    comparison: Comparison,
    units: Units,
    children: pd.DataFrame,
    cells: Cells | None,
    curves: AgeCurves | None,
    settings: Settings,
    results: Results,
    no_kl: str = "",
) -> dict[str, dict[str, object]]:
    """Every scoring unit compared with one language's children at once; returns the per-unit summaries of
    comparison.json."""
    if not units.names:
        return {}
    task, model = comparison.task, comparison.model
    thetas = units.thetas(model)
    theta, se = thetas[model.reference.name]
    ml = units.ml()
    shares = _group_shares(model, children, thetas)
    results.add("model_theta", _theta_table(comparison, units, shares, thetas, ml))
    scored = np.isfinite(theta)
    below = share_below(children["theta_common"].to_numpy(float), theta)
    answered = units.answered()
    u_idx, i_idx = np.nonzero(answered)
    results.add("model_items", front(units, task, comparison.language, u_idx).assign(
        item_uid=units.items.index.to_numpy()[i_idx], correct=units.correct[u_idx, i_idx],
        b=units.items["b"].to_numpy(float)[i_idx]))
    difficulty = _difficulty(units, settings)
    results.add("difficulty", _frame(units, comparison, difficulty, b_definition=conv.B_DEFINITION,
                                     sign=conv.R_SIGN))
    kl_counts = [Counter() for _ in units.names]
    if cells is not None:
        pairs, bins, kl, kl_counts = compare_units(cells, units.scores, n_perm=settings.n_perm, seed=settings.seed)
        results.add("kl_items", by_unit(pairs, units, task, comparison.language))
        bins = bins.merge(children_bins(children), on="bin_low", how="left")
        results.add("kl_bins", by_unit(bins, units, task, comparison.language))
    else:
        kl = [{"note": no_kl or NO_CELLS} for _ in units.names]
    results.add("kl_summary", _frame(units, comparison, kl, kl_definition=conv.KL_DEFINITION))
    ages_out: list[dict[str, object]] = []
    equivalents = iter(curves.equivalents(theta[scored], se[scored], settings.level) if curves and scored.any()
                       else [])
    for ok in scored:
        if not ok:
            ages_out.append({"age_equivalent": np.nan, "age_ci_low": np.nan, "age_ci_high": np.nan,
                             "age_flag": NO_ITEMS})
        elif curves is None:
            ages_out.append({"age_equivalent": np.nan, "age_flag": "fewer than 2 children with age"})
        else:
            ages_out.append(next(equivalents))
    results.add("age_equivalence", _frame(units, comparison, ages_out, theta=theta, se=se,
                                          theta_scale=conv.COMMON_SCALE))
    out = {}
    for u, name in enumerate(units.names):
        counts = units.counts[u] + kl_counts[u]
        counts["models_without_matched_items"] += int(not scored[u])
        results.count(counts, task=task, model=name, language=comparison.language)
        out[name] = {
            "locale": units.locales[u],
            "children_language": comparison.language,
            "theta": float(theta[u]),
            "se": float(se[u]),
            "theta_ml": float(ml[0][u]),
            "se_ml": float(ml[1][u]),
            "ml_note": ml[2][u],
            "n_items": int(answered[u].sum()),
            "children_below_theta": float(below[u]),
            "children_below_theta_by_group": {g: float(share[u]) for g, (_, share) in shares.items()},
            "note": "" if scored[u] else NO_ITEMS,
            "difficulty": {k: difficulty[u][k] for k in DIFFICULTY_KEYS},
            "kl": kl[u],
            "age": ages_out[u],
        }
    return out
