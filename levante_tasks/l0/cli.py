"""`levante-tasks l0 generate|augment`: an L0 dataset folder for the `l0_trace` tasks ($LEVANTE_L0_DATA)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from levante_tasks.data.decoding import available_cores
from levante_tasks.errors import LevanteError, display_path
from levante_tasks.l0 import dataset, store
from levante_tasks.l0.config import GenConfig
from levante_tasks.l0.config_file import DEFAULT_CONFIG, load_config
from levante_tasks.l0.tracer import ProgramError
from levante_tasks.l0.upstream import UpstreamGenerationError
from levante_tasks.l0.workers import WorkerDied

JOBS_HELP = ("worker processes (default: the config's num_processes, at most the CPUs; default profile: 1); "
             "the data are the same for every N")


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return int(text)


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
    gen.add_argument("--jobs", type=_positive_int, metavar="N", help=JOBS_HELP)
    gen.set_defaults(func=run_generate)
    aug = steps.add_parser("augment", help="add in-context demonstrations for each generated program",
                           description="Add DIR/fewshots.jsonl: demonstration (input, trace) pools per program.")
    aug.add_argument("--data", required=True, type=Path, metavar="DIR", help="folder written by `l0 generate`")
    aug.add_argument("--jobs", type=_positive_int, metavar="N", help=JOBS_HELP)
    aug.set_defaults(func=run_augment)


def run_generate(args: argparse.Namespace) -> int:
    """Generate programs into a fresh dataset folder and print the bin counts."""
    config = load_config(args.config)
    jobs = worker_processes(config, getattr(args, "jobs", None))

    def produce(scratch: Path) -> dataset.Generated:
        try:
            generated = dataset.generate_into(config, scratch, jobs)
        except UpstreamGenerationError as exc:
            raise LevanteError(f"{display_path(args.config)}: {exc} (nothing was written)") from None
        except WorkerDied as exc:
            raise LevanteError(f"l0 generate: {exc}; nothing was written") from None
        empty = [b for b, n in generated.stats["selected_per_bin"].items() if n == 0]
        if empty:
            raise LevanteError(f"{display_path(args.config)}: no program fell in bin {', '.join(empty)} after "
                               f"{generated.stats['attempts']} draws (nothing was written; widen the bins, raise "
                               f"num_programs or max_attempts)")
        return generated

    stats = store.write_generated(args.out, config, produce).stats
    counts = ", ".join(f"bin {b}: {n}" for b, n in stats["selected_per_bin"].items())
    print(f"wrote {sum(stats['selected_per_bin'].values())} programs to {display_path(args.out)} ({counts}; "
          f"{stats['attempts']} draws)")
    if config.upstream is not None and "augment" in config.upstream["actions"]:  # L0-Bench's third action
        return run_augment(argparse.Namespace(data=args.out, jobs=getattr(args, "jobs", None)))
    return 0


def run_augment(args: argparse.Namespace) -> int:
    """Add demonstration pools to a generated dataset folder."""
    manifest = store.read_manifest(args.data)
    config = store.manifest_config(args.data, manifest)
    programs = args.data / store.PROGRAMS
    dropped: list[str] = []

    def pools() -> Iterator[dict[str, Any]]:
        bins, kept = set(), set()
        stream = dataset.augment_stream(store.iter_rows(args.data, manifest, store.PROGRAMS), config,
                                        worker_processes(config, getattr(args, "jobs", None)))
        try:
            for item, pool in stream:
                bins.add(item["bin"])
                if pool is None:
                    dropped.append(item["id"])
                    continue
                kept.add(item["bin"])
                yield pool
        except ProgramError as exc:
            raise LevanteError(f"{display_path(programs)}: {exc}") from None
        except WorkerDied as exc:
            raise LevanteError(f"l0 augment: {exc}; nothing was replaced") from None
        if not bins:
            raise LevanteError(f"{display_path(programs)}: holds no programs (regenerate it)")
        if bins - kept:
            empty = ", ".join(map(str, sorted(bins - kept)))
            raise LevanteError(f"{display_path(args.data)}: no program of bin {empty} has "
                               f"{config.fewshot_pool_size} executable demonstration inputs (nothing was replaced)")

    written = store.write_augmented(args.data, manifest, pools(), dropped)
    print(f"wrote demonstrations for {written} programs to {display_path(args.data)} "
          f"({len(dropped)} dropped: fewer than {config.fewshot_pool_size} executable inputs found)")
    return 0


def worker_processes(config: GenConfig, asked: int | None) -> int:
    """Processes to draw and augment with: `--jobs`, else profile upstream's `num_processes`, at most the CPUs
    this process may use (the data do not depend on it)."""
    if asked is not None:
        return asked
    configured = int(config.upstream["num_processes"]) if config.upstream is not None else 1
    return max(1, min(configured, available_cores()))
