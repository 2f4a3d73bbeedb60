"""The comparison's Markdown section (`comparison.md`), meant to be pasted into the summary report.

Per task, the children of each language side by side (a row per language: its children, IRT record and groups),
then one model table whose rows are grouped by the children's language (each row names the model run's locale);
then the cross-language item table's flagged items. Every number is read from comparison.json's summary or the
`cross_language_items` table, the same values the CSVs hold.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from levante_tasks.compare import age_view
from levante_tasks.compare.crosslanguage import cross_language_counts
from levante_tasks.compare.languages import language_name
from levante_tasks.markdown_table import markdown_table

MODEL_COLUMNS = ["children's language", "model locale", "model", "items", "theta (SE)", "ML theta",
                 "children below", "r_pb with b [CI] (negative = child-aligned)", "Spearman [CI]", "beta",
                 "mean KL (x uniform)", "beats uniform (p; Holm p)", "age equivalent [CI]"]
LANGUAGE_COLUMNS = ["children's language", "children", "IRT record", "reference group", "children per group (from)",
                    "options from", "uniform-model KL"]
ORDER_COLUMNS = ["children's language", "model locale", "model", "items", "orders (counted per item)", "unparsed",
                 "mean KL [CI] (x uniform)", "replicate half-width", "beats uniform (p; Holm p)",
                 "per-seed softmax KL (white box)", "orders enough"]
READOUT_COLUMNS = ["children's language", "model", "orders", "items", "mean KL [CI]", "replicate half-width"]
ITEM_COLUMNS = ["rank", "item", "model runs", "model acc. en -> locale", "model drop", "children p en -> locale",
                "children drop", "difference of the centred drops"]
FLAGGED_SHOWN = 15  # flagged items listed per task and locale; the rest are in cross_language_items.csv


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
    return [language_name(res["children_language"]), res["locale"],
            f"{unit} (random-init test model)" if unit in tests else unit, str(res["n_items"]),
            f"{_fmt(res['theta'], 2)} ({_fmt(res['se'], 2)})", _fmt(res.get("theta_ml"), 2),
            _fmt(res.get("children_below_theta"), 2),
            f"{_fmt(d['pearson_r'])} [{_fmt(d['pearson_ci_low'])}, {_fmt(d['pearson_ci_high'])}]",
            f"{_fmt(d['spearman_rho'])} [{_fmt(d['spearman_ci_low'])}, {_fmt(d['spearman_ci_high'])}]",
            _fmt(kl.get("beta")), f"{_fmt(kl.get('mean_kl'))} ({_fmt(kl.get('kl_ratio_to_uniform'), 2)})",
            f"{verdict} ({p_value_text(kl.get('uniform_test_p'))}; {p_value_text(kl.get('uniform_test_p_holm'))})",
            _age(age)]


def section(summary: dict, figures: list[Path], items: pd.DataFrame | None = None) -> str:
    """Markdown: conventions, then per task its languages side by side and a table of models (theta, r with b, KL,
    age) grouped by the children's language, the cross-language items (`items`: cross_language_items.csv's rows),
    exclusions and the plots."""
    conv = summary["conventions"]
    lines = ["## Comparison with children", "", *_warnings(summary), *_languages(summary)]
    lines += [
        f"- Difficulty: {conv['difficulty']}. **{conv['correlation_sign']}.**",
        f"- Distributions: {conv['kl']} (epsilon = {conv['kl_epsilon']}); beta fitted per model x task in "
        f"{conv['beta_bounds']}. {conv['kl_weighting']}.",
        f"- Beats uniform: {conv['uniform_test']}; {summary['settings'].get('n_perm', 'n/a')} permutations. "
        f"**Multiple testing**: {conv['uniform_test_family']}; yes when the Holm p <= "
        f"{1 - summary['settings']['ci_level']:.2f} and the KL is lower (the table gives p; Holm p)."
        f"{_too_few_permutations(summary)} The KL has no ability or age readout (the bin with the lowest KL is "
        "pulled to the middle bins: docs/comparison.md); read ability from theta and the age equivalent.",
        *([f"- Order replicates: {conv['order_replicates']}; prior alpha "
           f"{summary['settings']['orders_prior_alpha']}, tolerance {summary['settings']['orders_tolerance']} "
           "nats."] if "order_replicates" in conv else []),
        f"- Languages: {conv['languages']}.",
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
        lines += _task(task, info, tests) + age_view.report_lines(task, info, figures)
    lines += _cross_language(items, summary["settings"].get("flag_drop"))
    if summary["exclusions"]:
        lines += ["### Exclusions (counted)", "", markdown_table(
            ["task", "children's language", "model", "reason", "count"],
            [[e["task"] or "all", e.get("children_language") or "-", e["model"] or "-", e["reason"], e["count"]]
             for e in summary["exclusions"]]), ""]
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


def _too_few_permutations(summary: dict) -> str:
    """A bold sentence when the permutations cannot reach the level: the smallest Holm p of a family of m tests is
    m / (1 + n_perm), so with m above level x (1 + n_perm) no model of that family can beat uniform (else '')."""
    sizes = [res["kl"].get("uniform_test_family_size") for task in summary["tasks"].values()
             for language in task["languages"].values() for res in language["models"].values()]
    largest = max((int(size) for size in sizes if size), default=0)
    level, n_perm = 1 - summary["settings"]["ci_level"], summary["settings"].get("n_perm")
    if not largest or not n_perm or largest / (1 + n_perm) <= level:
        return ""
    needed = math.ceil(largest / level - 1)
    return (f" **{n_perm} permutations are too few for {largest} tests**: the smallest Holm p is "
            f"{largest}/(1 + {n_perm}) > {level:.2f}, so no such model can beat uniform; rerun with --n-perm "
            f"{needed} or more.")


def _calibration(info: dict) -> list[str]:
    """The IRT record's own scores against its data rescored here (refused above --calibration-tolerance)."""
    check = info.get("calibration_rescore_max_abs_diff")
    if not check:
        return []
    record = f"Record: `{info['irt_model']}`."
    if "ability" not in check:
        return [f"Calibration check: {check.get('note', 'n/a')}. {record}", ""]
    return [f"Calibration check: the record's scores reproduce from its data to {check['ability']:.2g} logits "
            f"(ability) and {check['se']:.2g} (SE) over {check['n_runs']} runs. {record}", ""]


def _languages(summary: dict) -> list[str]:
    """Where the children's languages came from, or the plain note that none was recorded (children pooled)."""
    found = summary.get("languages", {})
    across = summary.get("settings", {}).get("across_languages")
    if not found.get("recorded"):
        return ["**Children's language not recorded** (no `language` in the trials or runs): all children are "
                "pooled, labelled \"language not recorded\", and compared with every model run whatever its "
                "locale.", ""]
    unknown = found.get("unknown_tags") or {}
    tags = f" Tags no locale lists (runs, not compared): {_tag_list(unknown)}." if unknown else ""
    pairing = ("**Across languages** (`--across-languages`): every model run is also compared with the children of "
               "every other language; each row names both." if across else
               "A model run in locale L is compared with the children of language L only.")
    return [f"Children's language: the `language` column of the {found.get('source')} (a run's trials first, "
            f"else the runs file by run_id).{tags} {pairing}", ""]


def _tag_list(tags: dict[str, int]) -> str:
    """`pt-BR` (40 runs), ... for the note on unknown tags."""
    return ", ".join(f"`{tag}` ({n} runs)" for tag, n in tags.items())


def _task(task: str, info: dict, tests: set[str]) -> list[str]:
    """One task: its languages side by side, each IRT record's calibration check, the models grouped by the
    children's language, and what met no counterpart."""
    languages = info["languages"]
    lines = [f"### {task}", ""]
    if languages:
        lines += [markdown_table(LANGUAGE_COLUMNS, [_language_row(lang) for lang in languages.values()]), ""]
        checked = {lang["irt_model"]: lang for lang in languages.values()}
        for lang in checked.values():
            lines += _calibration(lang)
        rows = [_model_row(unit, res, tests) for lang in languages.values() for unit, res in lang["models"].items()]
        lines += [markdown_table(MODEL_COLUMNS, rows), ""]
        lines += _orders([(unit, res) for lang in languages.values() for unit, res in lang.get("orders", {}).items()],
                         tests)
    lonely = info.get("not_compared", {}).get("model_runs", {})
    unmet = info.get("not_compared", {}).get("children_runs", {})
    if lonely:
        lines += [f"Not compared (no children of their language; `--across-languages` compares across): "
                  f"{', '.join(f'{unit} ({loc})' for unit, loc in lonely.items())}.", ""]
    if unmet:
        lines += [f"Children not compared (no model run in their language): "
                  f"{', '.join(f'{language_name(lang)} {n} runs' for lang, n in unmet.items())}.", ""]
    return lines


def _verdict(kl: dict) -> str:
    """Beats uniform: yes / no / n/a with its p-value and Holm p."""
    better = kl.get("better_than_uniform")
    verdict = "yes" if better else "no" if better is False else "n/a"
    return f"{verdict} ({p_value_text(kl.get('uniform_test_p'))}; {p_value_text(kl.get('uniform_test_p_holm'))})"


def _interval(row: dict, key: str = "mean_kl") -> str:
    """A KL with its two-stage interval."""
    return f"{_fmt(row.get(key))} [{_fmt(row.get('kl_ci_low'))}, {_fmt(row.get('kl_ci_high'))}]"


def _orders(units: list[tuple[str, dict]], tests: set[str]) -> list[str]:
    """The orders units of a task (compare.order_units): the distribution from option-order replicates with its
    intervals, beside a white-box model's per-seed softmax KLs; then the KL at K/4, K/2 and K orders."""
    if not units:
        return []
    rows, readout = [], []
    for unit, res in units:
        kl = res["kl"]
        softmax = list(res.get("per_seed_softmax_kl", {}).values())
        enough = kl.get("orders_enough")
        counted = (f"{kl['replicates']} ({kl['replicates_min']}-{kl['replicates_max']})" if "replicates" in kl
                   else "n/a")
        rows.append([language_name(res["children_language"]), res["locale"],
                     f"{unit} (random-init test model)" if unit in tests else unit, str(kl.get("n_items", "n/a")),
                     counted, _fmt(kl.get("unparsed_share"), 2),
                     f"{_interval(kl)} ({_fmt(kl.get('kl_ratio_to_uniform'), 2)})" if "mean_kl" in kl
                     else f"n/a ({kl.get('note', '')})",
                     _fmt(kl.get("kl_replicate_halfwidth")), _verdict(kl),
                     f"{_fmt(min(softmax))}-{_fmt(max(softmax))} ({len(softmax)} seeds)" if softmax else "-",
                     f"{enough} (<= {_fmt(kl.get('orders_tolerance'))})" if enough is not None
                     else f"not yet (> {_fmt(kl.get('orders_tolerance'))})" if "orders_tolerance" in kl else "n/a"])
        readout += [[language_name(res["children_language"]), unit, str(r["orders"]), str(r["n_items"]),
                     _interval(r, "kl") if r["n_items"] else "n/a (no whole block)",
                     _fmt(r["kl_replicate_halfwidth"])] for r in res.get("by_orders", [])]
    lines = ["Model distributions from option-order replicates (one row per model and output type, its seeds "
             "pooled; conventions above):", "", markdown_table(ORDER_COLUMNS, rows), ""]
    if readout:
        lines += ["How many orders are enough: the KL on the first K/4, K/2 and K seeds (whole blocks of each "
                  "item's option count):", "", markdown_table(READOUT_COLUMNS, readout), ""]
    return lines


def _language_row(lang: dict) -> list[str]:
    """One language's children (LANGUAGE_COLUMNS)."""
    groups = lang.get("n_children_by_group", {})
    sources = lang.get("n_children_by_group_source", {})
    per_group = "; ".join(f"{name} {n}" for name, n in groups.items())
    per_source = ", ".join(f"{source} {n}" for source, n in sources.items())
    return [language_name(lang["children_language"]), str(lang["n_children"]), f"`{lang['irt_model']}`",
            f"`{lang['reference_group']}`", f"{per_group} ({per_source})" if per_group else "-",
            lang.get("option_source", "n/a"), _fmt(lang.get("uniform_mean_kl"))]


def _cross_language(items: pd.DataFrame | None, flag_drop: object) -> list[str]:
    """The cross-language item table: per task and locale how many items were compared and the flagged ones."""
    if items is None or items.empty:
        return []
    lines = ["### Cross-language items (model drop vs children's drop, locale vs English)", "",
             "drop = accuracy in English - accuracy in the locale (model runs paired with the same run in English; "
             "children with >= min_n trials of the item in both languages); each drop is centred on its mean over "
             "the task's items in that locale (a gap between whole populations moves no item); flagged when "
             f"|centred model drop - centred children drop| >= {_fmt(flag_drop, 2)}, ranked largest first; all rows "
             "in `cross_language_items.csv`.", ""]
    parts = dict(iter(items.groupby(["task", "locale"], sort=False)))
    for entry in cross_language_counts(items):
        part = parts[entry["task"], entry["locale"]]
        flagged = part[part["flagged"].astype(bool)].sort_values("rank")
        lines += [f"{entry['task']}, {language_name(entry['locale'])}: {entry['items']} items with paired model "
                  f"runs, {entry['with_children']} with children of both languages, {entry['flagged']} flagged.", ""]
        if len(flagged):
            lines += [markdown_table(ITEM_COLUMNS, [_item_row(row) for row in flagged.head(FLAGGED_SHOWN)
                                                    .itertuples()]), ""]
        if len(flagged) > FLAGGED_SHOWN:
            lines += [f"... and {len(flagged) - FLAGGED_SHOWN} more flagged in cross_language_items.csv.", ""]
    return lines


def _item_row(row: object) -> list[str]:
    """One flagged item (ITEM_COLUMNS)."""
    get = row.__getattribute__
    return [str(get("rank")), get("item_uid"), str(get("n_model_runs")),
            f"{_fmt(get('model_accuracy_en'), 2)} -> {_fmt(get('model_accuracy'), 2)}", _fmt(get("model_drop"), 2),
            f"{_fmt(get('children_p_correct_en'), 2)} -> {_fmt(get('children_p_correct'), 2)}",
            _fmt(get("children_drop"), 2), _fmt(get("drop_difference"), 2)]


def outcome_lines(summary: dict, out: str) -> list[str]:
    """What `compare` prints: the comparisons made, the children per language (or that none was recorded) and
    the flagged cross-language items, read from the summary comparison.json holds."""
    tasks = summary["tasks"]
    pairs = sum(len(lang["models"]) for info in tasks.values() for lang in info["languages"].values())
    lines = [f"compared {pairs} model x task pair(s) on {len(tasks)} task(s); outputs in {out}"]
    found = summary.get("languages", {})
    if not found.get("recorded"):
        lines.append("children's language not recorded (no language column in the trials or runs): all children "
                     "pooled, labelled \"language not recorded\", and compared with every model run")
    else:
        for task, info in tasks.items():
            runs = info.get("children_runs_by_language", {})
            met = {code: len(lang["models"]) for code, lang in info["languages"].items()}
            lines.append(f"{task}: children by language: " + (", ".join(
                f"{code} {n} runs ({met.get(code, 0)} model run(s))" for code, n in runs.items()) or "none"))
        if found.get("unknown_tags"):
            lines.append(f"children's language tags no locale lists (not compared): "
                         f"{', '.join(f'{tag} {n} runs' for tag, n in found['unknown_tags'].items())}")
    cross = summary.get("cross_language_items", [])
    if cross:
        lines.append(f"cross-language items: {sum(e['flagged'] for e in cross)} flagged of "
                     f"{sum(e['with_children'] for e in cross)} item x locale rows with children of both languages "
                     f"({sum(e['items'] for e in cross)} with paired model runs; flagged when |centred model drop - "
                     f"centred children drop| >= {summary['settings']['flag_drop']:g}): cross_language_items.csv")
    return lines


def command_notes(summary: dict) -> list[str]:
    """Notes for stderr: tasks without model records, model runs that met no children of their language."""
    tasks = summary["tasks"]
    idle = sorted(task for task, info in tasks.items()
                  if not info["languages"] and not info["not_compared"]["model_runs"])
    notes = [f"no model records for task(s) {', '.join(idle)}: nothing compared there"] if idle else []
    for task, info in tasks.items():
        lonely = info["not_compared"]["model_runs"]
        if lonely:
            notes.append(f"{task}: not compared (no children of their language; --across-languages compares "
                         f"across): {', '.join(f'{unit} ({code})' for unit, code in lonely.items())}")
    return notes
