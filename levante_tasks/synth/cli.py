"""`levante-tasks synth`: write a synthetic release (real layout), simulated children and IRT truth."""

from __future__ import annotations

import argparse
from pathlib import Path

from levante_tasks.synth.release import write_synthetic_release


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `synth` subcommand."""
    parser = subparsers.add_parser(
        "synth", help="write a synthetic LEVANTE release with simulated children (deterministic in --seed)",
        description="Write DIR/<version>/ (manifest, corpus, visual), DIR/children/ and DIR/irt/ from a seed.",
    )
    parser.add_argument("--out", required=True, type=Path, metavar="DIR", help="output folder")
    parser.add_argument("--seed", required=True, type=int, help="random seed (>= 0); same seed, same bytes")
    parser.add_argument("--version", dest="release_version", default="synthetic",
                        help="version folder name (default: synthetic)")
    parser.add_argument("--children", type=int, default=300, help="number of simulated children (default: 300)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Generate the release and print a short summary."""
    summary = write_synthetic_release(args.out, args.seed, args.release_version, args.children)
    items = ", ".join(f"{task} {n}" for task, n in summary["items_per_task"].items())
    print(f"wrote {len(summary['files'])} files to {args.out} (version {summary['version']}, seed {args.seed})")
    print(f"manifest rows: {items}")
    print(f"children: {summary['n_children']}, runs: {summary['n_runs']}, trials: {summary['n_trials']}")
    return 0
