"""Recovery benchmark of `levante-tasks compare`: bias, RMSE and 95% coverage of every readout against known truth,
and how often null models are flagged better than the uniform model.

Simulation: `levante_tasks.compare.recovery` (children from the synthetic release's generator on its vocab items,
child-like models of known theta with true beta 1, four null models), each replicate a full `run_compare` on
files. Three designs: the release's 18 Rasch vocab items, a 2PL bank (the items 8 times, 144 items, lognormal
a1: `recovery.TWO_PL`), and the 2PL bank with models younger than the youngest child (true ages 2.5-11.8:
`recovery.YOUNGER`). Prints, per design, one JSON object of figures (docs/comparison.md quotes them) with the
wall time, then a table of the figures per 1-year band of true age. Then the by-age view's readouts on their own
(`compare.age_recovery`): the age interval per true-age band on a vocab-like curve (180 children, r = .49), the
curve's band, and the children's accuracy per age band.

Run: `.venv/bin/python benchmarks/compare_recovery.py` (about 3 minutes on 2 cores); `--replicates N` /
`--two-pl-replicates N` / `--younger-replicates N` / `--edge-replicates N` to change the sizes (`--tiny`: 1 / 1 / 0 /
2, the test suite runs it; 0 skips a
design), `--quick` for 5, 2, 2 and 20.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

from scipy import stats

from levante_tasks.compare import age_recovery
from levante_tasks.compare.recovery import TWO_PL, YOUNGER, Design, figures, run

NOMINAL = 0.95  # the intervals' nominal coverage: the anchor of each coverage figure


def study(name: str, design: Design) -> None:
    """Run one design and print its figures and its per-age-band table."""
    start = time.perf_counter()
    found = figures(run(design))
    seconds = time.perf_counter() - start
    n_null, flagged = found["n_null"], found["null_flag_count"]
    found["null_flag_rate_all"] = flagged / n_null
    found["null_flag_rate_all_95ci"] = [float(stats.beta.ppf(0.025, flagged, n_null - flagged + 1)) if flagged else 0.0,
                                        float(stats.beta.ppf(0.975, flagged + 1, n_null - flagged))]
    bands = found.pop("by_true_age")
    print(json.dumps({"study": name, "design": vars(design), "figures": found, "wall_seconds": round(seconds, 1)},
                     indent=1))
    columns = list(next(iter(bands.values())))
    print(f"{name}: " + "; ".join(f"{key.replace('_', ' ')} {found[key]:.3f} (anchor: nominal {NOMINAL:g}), ratio "
                                  f"{found[key] / NOMINAL:.2f}" for key in ("theta_coverage", "age_coverage")))
    print(f"{name}, by true age (age bias over numeric points; open = interval end below youngest / above oldest):")
    print("true age | " + " | ".join(columns))
    for band, row in bands.items():
        print(f"{band} | " + " | ".join(str(row[c]) for c in columns))
    print()


def main() -> None:
    """Run the studies and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=30, help="Rasch design (18 items)")
    parser.add_argument("--two-pl-replicates", type=int, default=10, help="2PL design (144 items)")
    parser.add_argument("--younger-replicates", type=int, default=10, help="2PL design, models from true age 2.5")
    parser.add_argument("--edge-replicates", type=int, default=100, help="the by-age readouts on their own")
    parser.add_argument("--quick", action="store_true", help="5 Rasch, 2 2PL, 2 younger and 20 edge replicates")
    parser.add_argument("--tiny", action="store_true", help="1 Rasch, 1 2PL, 0 younger and 2 edge replicates")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.tiny:
        args.replicates, args.two_pl_replicates, args.younger_replicates, args.edge_replicates = 1, 1, 0, 2
    rasch = Design(replicates=5 if args.quick else args.replicates, seed=args.seed)
    two_pl = replace(rasch, replicates=2 if args.quick else args.two_pl_replicates, **TWO_PL)
    younger = replace(two_pl, replicates=2 if args.quick else args.younger_replicates, **YOUNGER)
    for name, design in (("rasch_18_items", rasch), ("2pl_144_items", two_pl), ("2pl_younger_models", younger)):
        if design.replicates:
            study(name, design)
    edge = 20 if args.quick else args.edge_replicates
    if edge:
        by_age_view(age_recovery.EdgeDesign(replicates=edge, seed=args.seed), max(edge * 2 // 5, 1))


def by_age_view(design: age_recovery.EdgeDesign, accuracy_replicates: int) -> None:
    """Print the by-age view's readouts against their truth, per 1-year band (JSON objects)."""
    start = time.perf_counter()
    found = {"age_interval_coverage_by_true_age": age_recovery.coverage_by_band(age_recovery.run(design)),
             "curve_band_by_age": age_recovery.curve_band_coverage(design),
             "children_accuracy_by_age_band": age_recovery.accuracy_coverage(accuracy_replicates, seed=design.seed)}
    print(json.dumps({"study": "by_age_view", "design": vars(design), "accuracy_replicates": accuracy_replicates,
                      "figures": found, "wall_seconds": round(time.perf_counter() - start, 1)}, indent=1))


if __name__ == "__main__":
    main()
