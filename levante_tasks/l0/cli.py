"""`levante-tasks l0 generate|augment`: an L0 dataset folder for the `l0_trace` tasks ($LEVANTE_L0_DATA)."""

from __future__ import annotations

import argparse
from pathlib import Path

from levante_tasks.errors import LevanteError, display_path
from levante_tasks.l0 import dataset, store
from levante_tasks.l0.config_file import DEFAULT_CONFIG, load_config
from levante_tasks.l0.tracer import ProgramError
from levante_tasks.l0.upstream import UpstreamGenerationError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `l0` subcommand with its `generate` and `augment` steps."""
    parser = subparsers.add_parser(
        "l0", help="generate L0-Bench trace datasets (programs, traces, demonstrations)",
        description="Synthetic programs and their execution traces for the l0_trace lmms-eval tasks (docs/l0.md).",
    )
    steps = parser.add_subparsers(dest="l0_command", required=True, metavar="STEP")
    gen = steps.add_parser("generate", help="draw programs, trace them, bin them by trace length",
                           description="Write DIR/manifest.json and DIR/programs.jsonl (DIR is replaced whole).")
    gen.add_argument("--config", type=Path, default=DEFAULT_CONFIG, metavar="YAML",
                     help="generator config (default: the shipped configs/default.yaml)")
    gen.add_argument("--out", required=True, type=Path, metavar="DIR", help="dataset folder to write")
    gen.set_defaults(func=run_generate)
    aug = steps.add_parser("augment", help="add in-context demonstrations for each generated program",
                           description="Add DIR/fewshots.jsonl: demonstration (input, trace) pools per program.")
    aug.add_argument("--data", required=True, type=Path, metavar="DIR", help="folder written by `l0 generate`")
    aug.set_defaults(func=run_augment)


def run_generate(args: argparse.Namespace) -> int:
    """Generate programs into a fresh dataset folder and print the bin counts."""
    config = load_config(args.config)
    try:
        generated = dataset.generate(config)
    except UpstreamGenerationError as exc:
        raise LevanteError(f"{display_path(args.config)}: {exc} (nothing was written)") from None
    empty = [b for b, n in generated.stats["selected_per_bin"].items() if n == 0]
    if empty:
        raise LevanteError(f"{display_path(args.config)}: no program fell in bin {', '.join(empty)} after "
                           f"{generated.stats['attempts']} draws (nothing was written; widen the bins, raise "
                           f"num_programs or max_attempts)")
    store.write_generated(args.out, config, generated)
    counts = ", ".join(f"bin {b}: {n}" for b, n in generated.stats["selected_per_bin"].items())
    print(f"wrote {len(generated.items)} programs to {display_path(args.out)} ({counts}; "
          f"{generated.stats['attempts']} draws)")
    if config.upstream is not None and "augment" in config.upstream["actions"]:  # L0-Bench's third action
        return run_augment(argparse.Namespace(data=args.out))
    return 0


def run_augment(args: argparse.Namespace) -> int:
    """Add demonstration pools to a generated dataset folder."""
    manifest = store.read_manifest(args.data)
    config = store.manifest_config(args.data, manifest)
    items = store.read_rows(args.data, manifest, store.PROGRAMS)
    if not items:
        raise LevanteError(f"{display_path(args.data / store.PROGRAMS)}: holds no programs (regenerate it)")
    try:
        pools, dropped = dataset.augment(items, config)
    except ProgramError as exc:
        raise LevanteError(f"{display_path(args.data / store.PROGRAMS)}: {exc}") from None
    kept = {pool["id"] for pool in pools}
    empty = sorted({item["bin"] for item in items} - {item["bin"] for item in items if item["id"] in kept})
    if empty:
        raise LevanteError(f"{display_path(args.data)}: no program of bin {', '.join(map(str, empty))} has "
                           f"{config.fewshot_pool_size} executable demonstration inputs (nothing was replaced)")
    store.write_augmented(args.data, manifest, pools, dropped)
    print(f"wrote demonstrations for {len(pools)} programs to {display_path(args.data)} "
          f"({len(dropped)} dropped: fewer than {config.fewshot_pool_size} executable inputs found)")
    return 0
