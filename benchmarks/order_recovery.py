"""Recovery study of the order-replicate distribution (issue 30): a scripted greedy black box of known q* and known
position bias, asked under the project's balanced option orders, estimated by `compare.replicates`.

Items (`Study`): 2, 3 or 4 options (shares 0.2 / 0.3 / 0.5); children as the synthetic release answers
(`synth.children`): theta ~ N(0, 1), Rasch P(correct) = g + (1 - g) / (1 + exp(-(theta - b))) with g = 1/n and
b ~ N(0, 1), a wrong answer picks a distractor with weights 2:1:1 (the first favoured); cells = (item, 1-logit
bin) with >= 10 children, p their observed shares, weighted by n. The black box (`testing.black_box`): content
preference c* child-like at its own ability theta_m ~ U(-1, 2) (gold share as the children's curve, the rest a
Dirichlet(1) split), favourite position A answered with probability lambda = 0.3; greedy (one answer per
(item, presented order, salt)). A repetition is a new salt: new answers for every order.

Truths. `q*` (the design's): the box's answer shares over all n! orders, enumerated exactly, per salt; the study's
truth KL(human || q*) is then a per-repetition value. `q-bar` = lambda / n + (1 - lambda) c*: the distribution
each new order's answer is drawn from (the mean of q* over salts), fixed per item. Both are shown: a greedy box
has only n! distinct answers per item (2 for 2 options), so q* often puts 0 on an option and KL(human || q*)
is then bound by KL_EPSILON, which no smoothed estimate recovers.

Readouts per K in 4, 8, 16, 32 (seeds 0..K-1; per item whole blocks, at most its n! distinct orders, as the
estimator counts): bias, RMSE and coverage of the replicate-only interval (items fixed), and of the two-stage
interval for the population value (items redrawn every repetition; the population value by Monte Carlo over
`population_items` items); balanced (the project's `core.options.presented_orders`) vs random orders (a uniform
permutation per replicate, levante-bench style, counted the same way): the conditional position-bias error of q,
mean over items and options of |E[q | orders] - q-bar| = lambda |share of replicates showing the option at the
favourite position - 1/n| (raw shares), and the KL bias; the reported `kl` (bias-corrected with the replicate
bootstrap) against its alternatives: the plug-in `kl_plugin` and a delete-one-replicate jackknife (per item,
`jackknife_kl`); the stopping rule (`replicates.orders_enough`, tolerances 0.02 (the default) and 0.04, blocks of 4
up to 32) vs the K at which the true half-width (half the 2.5-97.5% spread of the estimate over repetitions) falls
under the tolerance.

Run: `.venv/bin/python benchmarks/order_recovery.py --figures docs/figures` (about 5 CPU-minutes);
`--tiny` (the test suite: 4 repetitions, 50 bootstrap draws), `--repetitions N`, `--n-boot N`.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass, replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from levante_tasks.atomic import atomic_path  # noqa: E402
from levante_tasks.compare.distributions import DIST_COLUMNS, Cells, bin_label  # noqa: E402
from levante_tasks.compare.replicates import (  # noqa: E402
    by_orders,
    counted_orders,
    dirichlet_q,
    item_terms,
    log_q,
    orders_enough,
    prefix,
    replicate_estimate,
    weighted_kl,
)
from levante_tasks.core.options import presented_orders  # noqa: E402
from levante_tasks.testing.black_box import BoxItem, answer, true_distribution  # noqa: E402

KS = (4, 8, 16, 32)
BLOCKS = tuple(range(4, 33, 4))  # the stopping rule's checks: blocks of the largest option count
NOMINAL = 0.95
MIN_N = 10


@dataclass(frozen=True)
class Study:
    """Sizes and truths of the study."""

    n_items: int = 60
    option_counts: tuple[int, ...] = (2, 3, 4)
    option_shares: tuple[float, ...] = (0.2, 0.3, 0.5)
    children: int = 300  # per item
    bias: float = 0.3  # lambda
    favourite: int = 0
    repetitions: int = 250  # fixed items: coverage read to +-3% (binomial 95% half-width at 0.95)
    population_repetitions: int = 250  # items redrawn
    population_items: int = 20000  # Monte Carlo items for the population value
    n_boot: int = 400
    tolerance: float = 0.02
    seed: int = 0


@dataclass(frozen=True)
class Item:
    """One study item: the black box's view and the children's cells (bin low, counts per option)."""

    box: BoxItem
    bins: tuple[int, ...]
    counts: np.ndarray  # bins x n

    @property
    def q_bar(self) -> np.ndarray:
        """The distribution each new order's answer is drawn from: lambda / n + (1 - lambda) c*."""
        n = self.box.n_options
        return self.box.bias / n + (1 - self.box.bias) * np.asarray(self.box.preference)


def draw_items(study: Study, rng: np.random.Generator, n_items: int, prefix_: str) -> list[Item]:
    """Items with children's cells and a child-like black box (module docstring)."""
    items = []
    for index in range(n_items):
        n = int(rng.choice(study.option_counts, p=study.option_shares))
        b, g = rng.normal(), 1.0 / n
        theta = rng.normal(size=study.children)
        correct = rng.random(study.children) < g + (1 - g) / (1 + np.exp(-(theta - b)))
        weights = np.array([2.0] + [1.0] * (n - 2))
        wrong = 1 + rng.choice(n - 1, size=study.children, p=weights / weights.sum())
        chosen = np.where(correct, 0, wrong)
        low = np.floor(theta).astype(int)
        bins = [int(v) for v in np.unique(low) if (low == v).sum() >= MIN_N]
        counts = np.array([np.bincount(chosen[low == v], minlength=n) for v in bins])
        theta_m = rng.uniform(-1, 2)
        gold = g + (1 - g) / (1 + np.exp(-(theta_m - b)))
        rest = rng.dirichlet(np.ones(n - 1)) * (1 - gold)
        box = BoxItem(f"{prefix_}{index:04d}", (float(gold), *map(float, rest)), study.favourite, study.bias)
        items.append(Item(box, tuple(bins), counts))
    return items


def cells_of(items: list[Item]) -> Cells:
    """The children's cells of `items` as the comparison builds them (`Cells.from_dist`)."""
    rows = []
    for item in items:
        for low, counts in zip(item.bins, item.counts, strict=True):
            total = int(counts.sum())
            rows += [{"item_uid": item.box.key, "bin_low": low, "ability_bin": bin_label(low),
                      "n_options": item.box.n_options, "option_index": k, "option": str(k), "n": int(c),
                      "n_bin": total, "p": c / total} for k, c in enumerate(counts)]
    return Cells.from_dist(pd.DataFrame(rows, columns=DIST_COLUMNS))


def in_cell_order(items: list[Item], cells: Cells) -> list[Item]:
    """The items that have cells, in the cells' item order (what the estimator's arrays are aligned to)."""
    by_key = {item.box.key: item for item in items}
    return [by_key[key] for key in cells.items]


def jackknife_kl(cells: Cells, choices: np.ndarray, n_opts: np.ndarray) -> float:
    """The alternative bias correction: per item, delete-one-replicate jackknife of its n-weighted KL sum
    S(q) = sum over its cells of n KL(p || q), S_jack = S - (m - 1) (mean over its m answers of S without that
    answer - S), summed and divided by the children's n (every counted answer parsed, as the box's are)."""
    width = cells.p.shape[1]
    counts = np.array([np.bincount(row[row >= 0], minlength=width) for row in choices])
    a, weight = item_terms(cells)

    def item_sums(c: np.ndarray) -> np.ndarray:
        return a - (cells.m * log_q(dirichlet_q(c, n_opts))).sum(axis=1)

    whole, total = item_sums(counts), counts.sum(axis=1)
    left_one = sum(counts[:, k] / np.maximum(total, 1) * item_sums(np.maximum(counts - np.eye(width, dtype=int)[k],
                                                                               0)) for k in range(width))
    return float((whole - (total - 1) * (left_one - whole)).sum() / weight.sum())


def padded(rows: list[np.ndarray], width: int) -> np.ndarray:
    """Rows of different lengths as one zero-padded array."""
    out = np.zeros((len(rows), width))
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def latin_orders(items: list[Item], ks: int) -> list[list[list[int]]]:
    """items x seeds presented orders from the project's order rule (`core.options.presented_orders`)."""
    pairs = [(item.box.key, item.box.n_options) for item in items]
    by_seed = [presented_orders(pairs, seed) for seed in range(ks)]
    return [[by_seed[seed][item.box.key] for seed in range(ks)] for item in items]


def random_orders(items: list[Item], ks: int, rng: np.random.Generator) -> list[list[list[int]]]:
    """items x replicates uniform random permutations (levante-bench style)."""
    return [[list(rng.permutation(item.box.n_options)) for _ in range(ks)] for item in items]


def choices_of(items: list[Item], orders: list[list[list[int]]], salt: str) -> np.ndarray:
    """items x replicates canonical answers of the black box."""
    return np.array([[answer(item.box, order, salt) for order in row] for item, row in zip(items, orders,
                                                                                            strict=True)])


def position_error(items: list[Item], orders: list[list[list[int]]], k: int) -> float:
    """Mean over items and options of |E[raw q | orders] - q-bar| over the item's counted replicates."""
    errors = []
    for item, row in zip(items, orders, strict=True):
        n = item.box.n_options
        counted = row[: int(counted_orders(np.array([n]), k)[0])]
        shown = np.bincount([order[item.box.favourite] for order in counted], minlength=n) / len(counted)
        errors += list(item.box.bias * np.abs(shown - 1 / n))
    return float(np.mean(errors))


def fixed_items(study: Study, rng: np.random.Generator) -> dict[str, object]:
    """Fixed items, one new salt per repetition: balanced and random orders, the stopping rule."""
    items = draw_items(study, rng, study.n_items, "item-")
    cells = cells_of(items)
    items = in_cell_order(items, cells)
    n_opts = np.array([item.box.n_options for item in items])
    width = int(n_opts.max())
    latin = latin_orders(items, max(BLOCKS))
    truth_bar = weighted_kl(cells, padded([item.q_bar for item in items], width))
    rows: list[dict[str, object]] = []
    for rep in range(study.repetitions):
        salt = f"rep{rep}"
        truth_star = weighted_kl(cells, padded([true_distribution(item.box, salt) for item in items], width))
        latin_choices = choices_of(items, latin, salt)
        balanced = by_orders(cells, latin_choices, n_opts, list(BLOCKS), study.tolerance, n_boot=study.n_boot,
                             seed=rep)
        shuffled = random_orders(items, max(KS), rng)
        random_choices = choices_of(items, shuffled, salt)
        for found in balanced["rows"]:
            rows.append({"scheme": "balanced", "rep": rep, "truth_star": truth_star, "truth_bar": truth_bar,
                         **found, "kl_jackknife": jackknife_kl(cells, prefix(latin_choices, n_opts,
                                                                             int(found["orders"])), n_opts),
                         "position_error": position_error(items, latin, int(found["orders"]))})
        for k in KS:
            found = replicate_estimate(cells, prefix(random_choices, n_opts, k), n_opts, n_boot=study.n_boot,
                                       seed=rep)
            rows.append({"scheme": "random", "rep": rep, "truth_star": truth_star, "truth_bar": truth_bar,
                         "orders": k, **found, "position_error": position_error(items, shuffled, k)})
    return {"frame": pd.DataFrame(rows), "truth_bar": truth_bar, "options": np.bincount(n_opts).tolist()}


def population_value(study: Study, rng: np.random.Generator) -> tuple[float, float]:
    """The population's weighted KL against q* (a new salt per item) and against q-bar, by Monte Carlo."""
    items = draw_items(study, rng, study.population_items, "pop-")
    cells = cells_of(items)
    ordered = in_cell_order(items, cells)
    width = max(study.option_counts)
    star = padded([true_distribution(item.box, f"pop{i}") for i, item in enumerate(ordered)], width)
    return weighted_kl(cells, star), weighted_kl(cells, padded([item.q_bar for item in ordered], width))


def redrawn_items(study: Study, rng: np.random.Generator) -> pd.DataFrame:
    """Items redrawn every repetition: the two-stage interval against the population value."""
    rows = []
    for rep in range(study.population_repetitions):
        items = draw_items(study, rng, study.n_items, f"r{rep}-")
        cells = cells_of(items)
        items = in_cell_order(items, cells)
        n_opts = np.array([item.box.n_options for item in items])
        choices = choices_of(items, latin_orders(items, max(KS)), f"pop-rep{rep}")
        for k in KS:
            found = replicate_estimate(cells, prefix(choices, n_opts, k), n_opts, n_boot=study.n_boot, seed=rep)
            rows.append({"rep": rep, "orders": k, **found})
    return pd.DataFrame(rows)


def covered(frame: pd.DataFrame, low: str, high: str, truth: str | pd.Series) -> pd.Series:
    """Whether each row's interval [low, high] holds the truth."""
    value = frame[truth] if isinstance(truth, str) else truth
    return (frame[low] <= value) & (value <= frame[high])


def summary_table(fixed: pd.DataFrame, redrawn: pd.DataFrame, population: tuple[float, float]) -> pd.DataFrame:
    """One row per K: the figures the docs quote."""
    rows = []
    for k in KS:
        bal = fixed[(fixed["scheme"] == "balanced") & (fixed["orders"] == k)]
        ran = fixed[(fixed["scheme"] == "random") & (fixed["orders"] == k)]
        pop = redrawn[redrawn["orders"] == k]
        row = {"K": k}
        for name, truth in (("q*", "truth_star"), ("q-bar", "truth_bar")):
            error = bal["kl"] - bal[truth]
            row[f"bias {name}"] = error.mean()
            row[f"RMSE {name}"] = math.sqrt((error ** 2).mean())
            row[f"cover {name}"] = covered(bal, "kl_replicate_ci_low", "kl_replicate_ci_high", truth).mean()
        for name, column in (("plug-in", "kl_plugin"), ("jackknife", "kl_jackknife")):
            row[f"bias q-bar {name}"] = (bal[column] - bal["truth_bar"]).mean()
            row[f"RMSE q-bar {name}"] = math.sqrt(((bal[column] - bal["truth_bar"]) ** 2).mean())
        row["two-stage cover pop q*"] = covered(pop, "kl_ci_low", "kl_ci_high", pd.Series(population[0],
                                                                                         pop.index)).mean()
        row["two-stage cover pop q-bar"] = covered(pop, "kl_ci_low", "kl_ci_high", pd.Series(population[1],
                                                                                            pop.index)).mean()
        row["pos err balanced"] = bal["position_error"].mean()
        row["pos err random"] = ran["position_error"].mean()
        row["bias q-bar random"] = (ran["kl"] - ran["truth_bar"]).mean()
        row["RMSE q-bar random"] = math.sqrt(((ran["kl"] - ran["truth_bar"]) ** 2).mean())
        row["half-width est"] = bal["kl_replicate_halfwidth"].mean()
        lower, upper = np.percentile(bal["kl"], [2.5, 97.5])
        row["half-width true"] = (upper - lower) / 2
        rows.append(row)
    return pd.DataFrame(rows)


NOT_STOPPED = max(BLOCKS) + 4  # where a repetition the rule never stopped is drawn and counted


def rule_stops(fixed: pd.DataFrame, tolerance: float) -> pd.Series:
    """Per repetition, the K where the stopping rule (`replicates.orders_enough` over the blocks) stops;
    NOT_STOPPED when its half-width never falls under the tolerance by K = 32."""
    bal = fixed[fixed["scheme"] == "balanced"]
    return bal.groupby("rep").apply(lambda part: orders_enough(part.to_dict("records"), tolerance) or NOT_STOPPED)


def stopping(fixed: pd.DataFrame, tolerance: float) -> dict[str, object]:
    """Where the rule stops (share of repetitions per K) vs where the true half-width falls under the tolerance."""
    bal = fixed[fixed["scheme"] == "balanced"]
    true_half = {int(k): float(np.subtract(*np.percentile(part["kl"], [97.5, 2.5])) / 2)
                 for k, part in bal.groupby("orders")}
    stops = rule_stops(fixed, tolerance)
    shares = stops.value_counts(normalize=True).sort_index()
    return {"tolerance": tolerance, "true_halfwidth": true_half,
            "true_stop": next((k for k in BLOCKS if true_half[k] <= tolerance), None),
            "rule_stops": {("not by 32" if k == NOT_STOPPED else int(k)): round(float(v), 3)
                           for k, v in shares.items()},
            "rule_median": float(stops.median())}


def figures(name: str, table: pd.DataFrame, stops: list[dict[str, object]], fixed: pd.DataFrame,
            folder: Path) -> list[Path]:
    """Two PNGs of design `name`: bias, coverage and position-bias error by K (balanced vs random orders); the
    stopping rule's stops vs the true half-width, per tolerance."""
    folder.mkdir(parents=True, exist_ok=True)
    title = f"SIMULATED ({name}): scripted greedy black box, lambda = 0.3, synthetic children"
    ticks = {"xticks": list(KS), "xlabel": "replicates K"}
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    axes[0].plot(table["K"], table["bias q-bar"], "s-", label="balanced, truth q-bar")
    axes[0].plot(table["K"], table["bias q-bar random"], "^--", label="random orders, truth q-bar")
    axes[0].plot(table["K"], table["bias q-bar plug-in"], "x-", label="balanced, plug-in kl_plugin, truth q-bar")
    axes[0].plot(table["K"], table["bias q-bar jackknife"], "+-", label="balanced, jackknife, truth q-bar")
    axes[0].plot(table["K"], table["bias q*"], "o:", label="balanced, truth q* (exact over n! orders)")
    axes[0].axhline(0, color="grey", lw=0.8)
    axes[0].set(ylabel="KL bias (nats)", title="bias of the estimated KL", **ticks)
    axes[0].legend(fontsize=7)
    axes[1].plot(table["K"], table["cover q-bar"], "s-", label="replicate interval, truth q-bar")
    axes[1].plot(table["K"], table["cover q*"], "o:", label="replicate interval, truth q*")
    axes[1].plot(table["K"], table["two-stage cover pop q-bar"], "d-", label="two-stage, population (q-bar)")
    axes[1].axhline(NOMINAL, color="grey", lw=0.8, ls=":")
    axes[1].set(ylabel="coverage", title="95% interval coverage", ylim=(0, 1.02), **ticks)
    axes[1].legend(fontsize=7)
    axes[2].plot(table["K"], table["pos err balanced"], "o-", label="balanced (Latin) orders")
    axes[2].plot(table["K"], table["pos err random"], "^--", label="random orders")
    axes[2].set(ylabel="mean |E[q | orders] - q-bar|", title="position-bias error of q", **ticks)
    axes[2].legend(fontsize=7)
    fig.suptitle(title, color="#c00000", fontsize=9)
    paths = [folder / f"order_recovery_{name}.png"]
    _save(fig, paths[0])
    bal = fixed[fixed["scheme"] == "balanced"]
    fig, axes = plt.subplots(1, 1 + len(stops), figsize=(5 * (1 + len(stops)), 3.6))
    true_half = stops[0]["true_halfwidth"]
    axes[0].plot(list(true_half), list(true_half.values()), "o-", label="true half-width (spread over reps)")
    axes[0].plot(list(true_half), bal.groupby("orders")["kl_replicate_halfwidth"].mean(), "s-",
                 label="mean estimated half-width")
    for stop in stops:
        axes[0].axhline(stop["tolerance"], color="grey", lw=0.8, ls=":")
    axes[0].set(xlabel="replicates K", ylabel="half-width (nats)", title="replicate interval half-width",
                xticks=list(BLOCKS))
    axes[0].legend(fontsize=7)
    for axis, stop in zip(axes[1:], stops, strict=True):
        values = rule_stops(fixed, float(stop["tolerance"]))
        shares = values.value_counts(normalize=True).sort_index()
        axis.bar(shares.index, shares.to_numpy(), width=3, label="where the rule stops")
        if stop["true_stop"] is not None:
            axis.axvline(stop["true_stop"], color="#c00000", ls="--", label="true half-width <= tolerance")
        axis.set(xlabel=f"K where the rule stops ({NOT_STOPPED} = not by 32)", ylabel="share of repetitions",
                 title=f"stopping rule, tolerance {stop['tolerance']:g}", xticks=[*BLOCKS, NOT_STOPPED], ylim=(0, 1))
        axis.legend(fontsize=7)
    fig.suptitle(title, color="#c00000", fontsize=9)
    paths.append(folder / f"order_recovery_{name}_stopping.png")
    _save(fig, paths[1])
    return paths


def _save(fig: plt.Figure, path: Path) -> None:
    """Save a figure atomically as PNG and close it."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def markdown(table: pd.DataFrame) -> str:
    """The table as markdown, three decimals."""
    head = "| " + " | ".join(table.columns) + " |"
    rule = "|" + "---|" * len(table.columns)
    body = ["| " + " | ".join(str(int(v)) if c == "K" else f"{v:.3f}" for c, v in row.items()) + " |"
            for _, row in table.iterrows()]
    return "\n".join([head, rule, *body])


DESIGNS = {"four_options": {"option_counts": (4,), "option_shares": (1.0,)},  # vocab-like
           "mixed_2_to_4": {}}  # the Study default: 2, 3 and 4 options
TOLERANCES = (0.02, 0.04)  # the default, and one the study's sizes reach


def run_design(name: str, study: Study, figure_folder: Path | None) -> None:
    """Run one design; print its table, stopping rule and figure lines."""
    start, cpu = time.perf_counter(), time.process_time()
    rng = np.random.default_rng(study.seed)
    fixed = fixed_items(study, rng)
    population = population_value(study, rng)
    redrawn = redrawn_items(study, rng)
    table = summary_table(fixed["frame"], redrawn, population)
    stops = [stopping(fixed["frame"], tolerance) for tolerance in TOLERANCES]
    print(f"## {name}: {study.n_items} items (items per option count {fixed['options']}), lambda {study.bias}, "
          f"{study.repetitions} repetitions (items fixed) and {study.population_repetitions} (items redrawn), "
          f"n_boot {study.n_boot}; truth KL(human || q-bar) {fixed['truth_bar']:.4f}, mean KL(human || q*) "
          f"{fixed['frame']['truth_star'].mean():.4f}; population value q* {population[0]:.4f}, "
          f"q-bar {population[1]:.4f}")
    print(markdown(table))
    for stop in stops:
        print(f"stopping rule, tolerance {stop['tolerance']:g}: true half-width by K "
              f"{ {k: round(v, 4) for k, v in stop['true_halfwidth'].items()} }, true stop K = {stop['true_stop']}; "
              f"rule stops {stop['rule_stops']}, median {stop['rule_median']:g}")
    for _, row in table.iterrows():
        print(f"{name} K={int(row['K'])}: replicate interval coverage (truth q-bar) {row['cover q-bar']:.3f} "
              f"(anchor: nominal {NOMINAL:g}), ratio {row['cover q-bar'] / NOMINAL:.2f}; position-bias error "
              f"balanced {row['pos err balanced']:.4f} / random {row['pos err random']:.4f}")
    if figure_folder:
        for path in figures(name, table, stops, fixed["frame"], figure_folder):
            print(f"figure: {path}")
    print(f"{name}: wall {time.perf_counter() - start:.1f} s, CPU {time.process_time() - cpu:.1f} s\n")


def main() -> None:
    """Run the study's designs and print their tables and figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=Study.repetitions)
    parser.add_argument("--n-boot", type=int, default=Study.n_boot)
    parser.add_argument("--figures", type=Path, help="folder for the PNG figures (none written without it)")
    parser.add_argument("--tiny", action="store_true", help="4 repetitions, 50 bootstrap draws (the test suite)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    study = replace(Study(), repetitions=args.repetitions, population_repetitions=args.repetitions,
                    n_boot=args.n_boot, seed=args.seed)
    if args.tiny:
        study = replace(study, repetitions=4, population_repetitions=4, n_boot=50, population_items=500)
    for name, sizes in DESIGNS.items():
        run_design(name, replace(study, **sizes), args.figures)


if __name__ == "__main__":
    main()
