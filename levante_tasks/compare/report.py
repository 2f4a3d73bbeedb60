"""The comparison's Markdown section (`comparison.md`), meant to be pasted into the summary report."""

from __future__ import annotations

import math
from pathlib import Path


def _fmt(value: object, digits: int = 3) -> str:
    """A number for a table cell ('n/a' for missing)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


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


def section(summary: dict, figures: list[Path]) -> str:
    """Markdown: conventions, then per task a table of models (theta, r with b, KL, age) and the plots."""
    conv = summary["conventions"]
    lines = [
        "## Comparison with children",
        "",
        f"- Difficulty: {conv['difficulty']}. **{conv['correlation_sign']}.**",
        f"- Distributions: {conv['kl']} (epsilon = {conv['kl_epsilon']}); beta fitted per model x task in "
        f"{conv['beta_bounds']}. {conv['kl_weighting']}.",
        f"- Options: {conv['option_order']}.",
        f"- Ability: {conv['eap']}. Scale: {conv['theta_scale']}. {conv['ml']}.",
        f"- {conv['ability_bins']}; (item, bin) cells need n >= {summary['settings']['min_n']} children.",
        f"- CIs: {summary['settings']['ci_level']:.0%} percentile bootstrap, {summary['settings']['n_boot']} "
        f"resamples, seed {summary['settings']['seed']}; an age outside the children's ages reads below youngest / "
        "above oldest.",
        "",
    ]
    for task, info in summary["tasks"].items():
        uniform = info.get("uniform_mean_kl")
        lines += [
            f"### {task} (IRT model `{info['irt_model']}`, reference group `{info['reference_group']}`, "
            f"{info['n_children']} children; options from {info.get('option_source', 'n/a')}; "
            f"uniform-model KL {_fmt(uniform)})",
            "",
            "| model | items | theta (SE) | ML theta | children below | r_pb with b [CI] (negative = child-aligned) "
            "| Spearman [CI] | beta | mean KL (x uniform) | closest bin (beats uniform?) | age equivalent [CI] |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for unit, res in info["models"].items():
            d, kl, age = res["difficulty"], res["kl"], res["age"]
            better = kl.get("closest_bin_better_than_uniform")
            closest = f"{kl.get('closest_bin', 'n/a')} ({'yes' if better else 'no' if better is False else 'n/a'})"
            lines.append(
                f"| {unit} | {res['n_items']} | {_fmt(res['theta'], 2)} ({_fmt(res['se'], 2)}) | "
                f"{_fmt(res.get('theta_ml'), 2)} | {_fmt(res.get('children_below_theta'), 2)} | "
                f"{_fmt(d['pearson_r'])} [{_fmt(d['pearson_ci_low'])}, {_fmt(d['pearson_ci_high'])}] | "
                f"{_fmt(d['spearman_rho'])} [{_fmt(d['spearman_ci_low'])}, {_fmt(d['spearman_ci_high'])}] | "
                f"{_fmt(kl.get('beta'))} | {_fmt(kl.get('mean_kl'))} ({_fmt(kl.get('kl_ratio_to_uniform'), 2)}) | "
                f"{closest} | {_age(age)} |"
            )
        lines.append("")
    if summary["exclusions"]:
        lines += ["### Exclusions (counted)", "", "| task | model | reason | count |", "|---|---|---|---|"]
        lines += [
            f"| {e['task'] or 'all'} | {e['model'] or '-'} | {e['reason']} | {e['count']} |"
            for e in summary["exclusions"]
        ]
        lines.append("")
    if figures:
        lines += ["### Plots", ""] + [f"![{p.stem}](plots/{p.name})" for p in figures] + [""]
    return "\n".join(lines)
