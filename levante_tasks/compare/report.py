"""The comparison's Markdown section (`comparison.md`), meant to be pasted into the summary report."""

from __future__ import annotations

import math
from pathlib import Path

from levante_tasks.markdown_table import markdown_table

MODEL_COLUMNS = ["model", "items", "theta (SE)", "ML theta", "children below",
                 "r_pb with b [CI] (negative = child-aligned)", "Spearman [CI]", "beta", "mean KL (x uniform)",
                 "beats uniform (p)", "age equivalent [CI]"]


def _fmt(value: object, digits: int = 3) -> str:
    """A number for a table cell ('n/a' for missing)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def p_value_text(value: object) -> str:
    """A permutation p-value as every output shows it (3 significant digits: the smallest, 1/(1 + n_perm), is never
    rounded to 0), 'n/a' for missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{float(value):.3g}"


def _age(age: dict) -> str:
    """Age equivalent with its interval; ends outside the children's ages read "below youngest"/"above oldest"."""
    words = {"below_youngest": "below youngest", "above_oldest": "above oldest"}

    def one(value: object, flag: str) -> str:
        return words.get(flag, "") or _fmt(value, 1)

    point = one(age.get("age_equivalent"), age.get("age_flag", ""))
    if age.get("age_flag") and age.get("age_flag") not in words:
        return f"n/a ({age['age_flag']})"
    low = one(age.get("age_ci_low"), age.get("age_ci_low_flag", ""))
    high = one(age.get("age_ci_high"), age.get("age_ci_high_flag", ""))
    return f"{point} [{low}, {high}]"


def _model_row(unit: str, res: dict, tests: set[str]) -> list[str]:
    """One model's cells of a task's table (MODEL_COLUMNS)."""
    d, kl, age = res["difficulty"], res["kl"], res["age"]
    better = kl.get("better_than_uniform")
    verdict = "yes" if better else "no" if better is False else "n/a"
    return [f"{unit} (random-init test model)" if unit in tests else unit, str(res["n_items"]),
            f"{_fmt(res['theta'], 2)} ({_fmt(res['se'], 2)})", _fmt(res.get("theta_ml"), 2),
            _fmt(res.get("children_below_theta"), 2),
            f"{_fmt(d['pearson_r'])} [{_fmt(d['pearson_ci_low'])}, {_fmt(d['pearson_ci_high'])}]",
            f"{_fmt(d['spearman_rho'])} [{_fmt(d['spearman_ci_low'])}, {_fmt(d['spearman_ci_high'])}]",
            _fmt(kl.get("beta")), f"{_fmt(kl.get('mean_kl'))} ({_fmt(kl.get('kl_ratio_to_uniform'), 2)})",
            f"{verdict} ({p_value_text(kl.get('uniform_test_p'))})", _age(age)]


def section(summary: dict, figures: list[Path]) -> str:
    """Markdown: conventions, then per task a table of models (theta, r with b, KL, age) and the plots."""
    conv = summary["conventions"]
    lines = ["## Comparison with children", "", *_warnings(summary)]
    lines += [
        f"- Difficulty: {conv['difficulty']}. **{conv['correlation_sign']}.**",
        f"- Distributions: {conv['kl']} (epsilon = {conv['kl_epsilon']}); beta fitted per model x task in "
        f"{conv['beta_bounds']}. {conv['kl_weighting']}.",
        f"- Beats uniform: {conv['uniform_test']}; {summary['settings'].get('n_perm', 'n/a')} permutations, "
        f"yes when p <= {1 - summary['settings']['ci_level']:.2f} and the KL is lower. The KL has no ability or "
        "age readout (the bin with the lowest KL is pulled to the middle bins: docs/comparison.md); read ability "
        "from theta and the age equivalent.",
        f"- Options: {conv['option_order']}.",
        f"- Ability: {conv['eap']}. Scale: {conv['theta_scale']}. {conv['ml']}.",
        f"- {conv['ability_bins']}; (item, bin) cells need n >= {summary['settings']['min_n']} children.",
        f"- CIs: {summary['settings']['ci_level']:.0%}. r_pb and Spearman: {conv['correlation_ci']}. Age: percentile "
        f"bootstrap, {summary['settings']['n_boot']} resamples, seed {summary['settings']['seed']}; an age outside "
        "the children's ages reads below youngest / above oldest.",
        "",
    ]
    tests = set(summary.get("data", {}).get("test_models", []))
    for task, info in summary["tasks"].items():
        uniform = info.get("uniform_mean_kl")
        lines += [
            f"### {task} (IRT model `{info['irt_model']}`, reference group `{info['reference_group']}`, "
            f"{info['n_children']} children; options from {info.get('option_source', 'n/a')}; "
            f"uniform-model KL {_fmt(uniform)})",
            "",
            *_calibration(info),
            markdown_table(MODEL_COLUMNS, [_model_row(unit, res, tests) for unit, res in info["models"].items()]),
            "",
        ]
    if summary["exclusions"]:
        lines += ["### Exclusions (counted)", "", markdown_table(
            ["task", "model", "reason", "count"],
            [[e["task"] or "all", e["model"] or "-", e["reason"], e["count"]] for e in summary["exclusions"]]), ""]
    if figures:
        lines += ["### Plots", ""] + [f"![{p.stem}](plots/{p.name})" for p in figures] + [""]
    return "\n".join(lines)


def _warnings(summary: dict) -> list[str]:
    """Bold lines saying that the data is synthetic or that a model is a random-init test model (or nothing)."""
    data = summary.get("data", {})
    lines = []
    if data.get("synthetic_evidence"):
        lines.append(f"**Synthetic data** ({'; '.join(data['synthetic_evidence'])}): the children, their answers "
                     "and the IRT parameters are simulated; nothing here describes real children.")
    if data.get("test_models"):
        lines.append(f"**Random-init test model(s)**: {', '.join(data['test_models'])}: a pipeline check, not a "
                     "capability result.")
    return [*lines, ""] if lines else []


def _calibration(info: dict) -> list[str]:
    """The IRT record's own scores against its data rescored here (refused above --calibration-tolerance)."""
    check = info.get("calibration_rescore_max_abs_diff")
    if not check:
        return []
    if "ability" not in check:
        return [f"Calibration check: {check.get('note', 'n/a')}.", ""]
    return [f"Calibration check: the record's scores reproduce from its data to {check['ability']:.2g} logits "
            f"(ability) and {check['se']:.2g} (SE) over {check['n_runs']} runs.", ""]
