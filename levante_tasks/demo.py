"""`levante-tasks demo`: the whole pipeline on the embedded synthetic release, offline, in a few minutes.

Steps: write the synthetic release (seeded) -> `prepare` it into a data dir -> print items and fingerprints per
task. Everything lands under `--out` (default `demo-out/`); nothing outside it is touched.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from levante_tasks.data.cli import format_result
from levante_tasks.data.prepare import prepare

SYNTHETIC_VERSION = "synthetic"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `demo` subcommand."""
    parser = subparsers.add_parser("demo", help="run the pipeline on the embedded synthetic release",
                                   description=__doc__)
    parser.add_argument("--out", default="demo-out", help="output folder (default: demo-out)")
    parser.add_argument("--seed", type=int, default=0, help="synthetic release seed (default: 0)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Synthesize, prepare and report."""
    from levante_tasks.synth import write_synthetic_release

    out = Path(args.out)
    base = out / "release"
    summary = write_synthetic_release(base, seed=args.seed, version=SYNTHETIC_VERSION)
    print(f"[1/2] synthetic release (seed {args.seed}) written to {out.name}/release/{SYNTHETIC_VERSION}/: "
          f"{sum(summary['items_per_task'].values())} items")
    result = prepare(str(base), SYNTHETIC_VERSION, str(out / "data"), strict=True, progress=False)
    print("[2/2] prepared datasets:")
    print(format_result(result))
    return 0
