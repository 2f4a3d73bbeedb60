"""Recovery by language of `levante-tasks compare`: per language (es-CO, de-DE, en-US), bias, RMSE and 95% coverage of a
model's theta and age equivalent against their truth, on the synthetic release's three sites.

Simulation: `levante_tasks.compare.recovery_language` (the release's children and records; child-like models with
a different true theta in each language; one `run_compare` per replicate, every language at once). Designs: vocab (its
by_language records) and trog (its multigroup-by-dataset record), then the two failure checks: vocab scored with
Colombia's and Germany's records swapped, and trog compared with their children swapped. Prints one JSON object
per design: the design, the figures per language and the wall time (docs/comparison.md quotes them).

Run: `.venv/bin/python benchmarks/compare_recovery_language.py` (about 3 minutes on the loaded 2-core machine);
`--replicates N` for the two main designs (default 10), `--swap-replicates N` for the failure checks (default 2),
`--quick` for 2 and 1, `--tiny` for 1 and 0 (the test suite runs it).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict

from levante_tasks.compare.recovery_language import LanguageDesign, figures, run

SWAP = ("es-CO", "de-DE")
NOMINAL = 0.95  # the intervals' nominal coverage: the anchor of each coverage figure


def study(name: str, design: LanguageDesign) -> None:
    """Run one design and print its figures per language."""
    start = time.perf_counter()
    found = figures(run(design))
    seconds = time.perf_counter() - start
    rounded = {language: {k: round(v, 3) for k, v in values.items()} for language, values in found.items()}
    print(json.dumps({"study": name, "design": asdict(design), "figures": rounded, "wall_seconds": round(seconds, 1)},
                     indent=1))
    for language, values in found.items():
        print(f"{name}, {language}: " + "; ".join(
            f"{key.replace('_', ' ')} {values[key]:.3f} (anchor: nominal {NOMINAL:g}), ratio "
            f"{values[key] / NOMINAL:.2f}" for key in ("theta_coverage", "age_coverage")))


def main() -> None:
    """Run the designs and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--swap-replicates", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="2 replicates, 1 for the failure checks")
    parser.add_argument("--tiny", action="store_true", help="1 replicate of vocab and trog, no failure checks")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.tiny:
        args.replicates, args.swap_replicates = 1, 0
    main_n, swap_n = (2, 1) if args.quick else (args.replicates, args.swap_replicates)
    designs = [
        ("vocab_by_language", LanguageDesign(task="vocab", replicates=main_n, seed=args.seed)),
        ("trog_multigroup", LanguageDesign(task="trog", replicates=main_n, seed=args.seed)),
        ("vocab_records_swapped", LanguageDesign(task="vocab", replicates=swap_n, seed=args.seed, swap_records=SWAP)),
        ("trog_children_swapped", LanguageDesign(task="trog", replicates=swap_n, seed=args.seed, swap_children=SWAP)),
    ]
    for name, design in designs:
        if design.replicates:
            study(name, design)


if __name__ == "__main__":
    main()
