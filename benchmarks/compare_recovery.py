"""Recovery benchmark of `levante-tasks compare`: bias, RMSE and 95% coverage of every readout against known truth,
and how often null models are flagged better than the uniform model.

Simulation: `levante_tasks.compare.recovery` (children from the synthetic release's generator on its vocab items,
child-like models of known theta with true beta 1, four null models), each replicate a full `run_compare` on
files. Prints one JSON object of figures (docs/comparison.md quotes them) and the wall time.

Run: `.venv/bin/python benchmarks/compare_recovery.py` (about 2 minutes on 2 cores); `--replicates N` to change
the size, `--quick` for 5 replicates.
"""

from __future__ import annotations

import argparse
import json
import time

from scipy import stats

from levante_tasks.compare.recovery import Design, figures, run


def main() -> None:
    """Run the study and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="5 replicates")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    design = Design(replicates=5 if args.quick else args.replicates, seed=args.seed)
    start = time.perf_counter()
    found = figures(run(design))
    seconds = time.perf_counter() - start
    n_null, flagged = found["n_null"], found["null_flag_count"]
    found["null_flag_rate_all"] = flagged / n_null
    found["null_flag_rate_all_95ci"] = [float(stats.beta.ppf(0.025, flagged, n_null - flagged + 1)) if flagged else 0.0,
                                        float(stats.beta.ppf(0.975, flagged + 1, n_null - flagged))]
    print(json.dumps({"design": vars(design), "figures": found, "wall_seconds": round(seconds, 1)}, indent=1))


if __name__ == "__main__":
    main()
