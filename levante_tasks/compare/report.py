"""The comparison's Markdown section (`comparison.md`), meant to be pasted into the summary report."""

from __future__ import annotations

import math
from pathlib import Path


def _fmt(value: object, digits: int = 3) -> str:
    """A number for a table cell ('n/a' for missing)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def section(summary: dict, figures: list[Path]) -> str:
    """Markdown: conventions, then per task a table of models (theta, r with b, KL, age) and the plots."""
    conv = summary["conventions"]
    lines = [
        "## Comparison with children",
        "",
        f"- Difficulty: {conv['difficulty']}. **{conv['correlation_sign']}.**",
        f"- Distributions: {conv['kl']} (epsilon = {conv['kl_epsilon']}); beta fitted per model x task in "
        f"{conv['beta_bounds']}.",
        f"- Ability: {conv['eap']}; models use the reference group's prior.",
        f"- {conv['ability_bins']}; (item, bin) cells need n >= {summary['settings']['min_n']} children.",
        f"- CIs: {summary['settings']['ci_level']:.0%} percentile bootstrap, {summary['settings']['n_boot']} "
        f"resamples, seed {summary['settings']['seed']}.",
        "",
    ]
    for task, info in summary["tasks"].items():
        lines += [
            f"### {task} (IRT model `{info['irt_model']}`, reference group `{info['reference_group']}`, "
            f"{info['n_children']} children)",
            "",
            "| model | items | theta (SE) | r_pb with b [CI] (negative = child-aligned) | Spearman [CI] | "
            "beta | mean KL | closest bin | age equivalent [CI] |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for unit, res in info["models"].items():
            d, kl, age = res["difficulty"], res["kl"], res["age"]
            lines.append(
                f"| {unit} | {res['n_items']} | {_fmt(res['theta'], 2)} ({_fmt(res['se'], 2)}) | "
                f"{_fmt(d['pearson_r'])} [{_fmt(d['pearson_ci_low'])}, {_fmt(d['pearson_ci_high'])}] | "
                f"{_fmt(d['spearman_rho'])} [{_fmt(d['spearman_ci_low'])}, {_fmt(d['spearman_ci_high'])}] | "
                f"{_fmt(kl.get('beta'))} | {_fmt(kl.get('mean_kl'))} | {kl.get('closest_bin', 'n/a')} | "
                f"{_fmt(age.get('age_equivalent'), 1)} [{_fmt(age.get('age_ci_low'), 1)}, "
                f"{_fmt(age.get('age_ci_high'), 1)}] {age.get('age_flag', '')} |"
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
