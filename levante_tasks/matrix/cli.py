"""`levante-tasks matrix --config matrix.yaml --out DIR [--resume] [--dry-run] [--shard i/n | --cell K | --model K]
[--submit] [--report-only]`: model x task x seed evaluations through lmms-eval, resumable (docs/matrix.md)."""

from __future__ import annotations

import argparse
import re
import signal
import sys
from pathlib import Path
from typing import Any

from levante_tasks.errors import LevanteError, display_path

_SHARD = re.compile(r"^(\d+)/(\d+)$")


def shard_arg(text: str) -> tuple[int, int]:
    """`i/n` with 0 <= i < n: run the cells whose index is i modulo n."""
    match = _SHARD.fullmatch(text.strip())
    if not match or not 0 <= int(match[1]) < int(match[2]):
        raise argparse.ArgumentTypeError(f"{text!r}: expected i/n with 0 <= i < n (e.g. 0/4)")
    return int(match[1]), int(match[2])


class Removed(argparse.Action):
    """A removed option: one line naming what replaced it, exit 2, before any other argument is checked."""

    def __init__(self, *args: Any, replaced_by: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.replaced_by = replaced_by

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser.exit(2, f"levante-tasks: error: {option_string} was removed; use {self.replaced_by}\n")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `matrix` subcommand."""
    parser = subparsers.add_parser(
        "matrix", help="run a resumable model x task x seed matrix through lmms-eval",
        description="Run every (model, task, seed) cell of --config through lmms-eval into --out (one folder and "
        "state file per cell), then summarize, compare with children and write report.md. Finished cells whose "
        "config is unchanged are kept on --resume; everything else runs again. --report-only runs no cell: it writes "
        "the end step from the cells that finished (the Slurm end step).")
    parser.add_argument("--config", required=True, type=Path, help="matrix YAML file (docs/matrix.md)")
    parser.add_argument("--out", required=True, type=Path, help="matrix folder")
    parser.add_argument("--resume", action="store_true",
                        help="continue the matrix in --out: keep finished, unchanged cells; run the rest")
    parser.add_argument("--dry-run", action="store_true", help="print each selected cell's command; run nothing")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--shard", type=shard_arg, metavar="I/N",
                       help="run only the cells whose index is I modulo N (no end step)")
    which.add_argument("--cell", type=int, metavar="K", help="run only cell K (0-based; no end step)")
    which.add_argument("--model", type=int, metavar="K", dest="model_index",
                       help="run only the cells of model K (0-based, config order; one process; no end step)")
    parser.add_argument("--submit", action="store_true",
                        help="submit the unfinished cells to Slurm as job arrays, and the end step after them (with "
                        "--dry-run: write the job scripts and print them and the sbatch commands; queue nothing)")
    parser.add_argument("--emit-slurm", nargs="?", action=Removed, help=argparse.SUPPRESS,
                        replaced_by="--submit --dry-run (writes the job scripts under OUT/slurm/ and prints them and "
                        "the sbatch commands; --submit queues them)")
    parser.add_argument("--report-only", action="store_true",
                        help="only the end step of the matrix in --out: summaries, comparisons and report.md from "
                        "the cells that finished; runs no cell (the Slurm end step); exit 1 if any did not finish")
    parser.add_argument("--plan-sha256", metavar="HASH",
                        help="run only if the plan still has this SHA-256 (set by the --submit jobs)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """CLI: exit 0 when every selected cell finished (and the end step had no problem), else 1 (all is in the
    report)."""
    from levante_tasks.matrix.config import load_config
    from levante_tasks.matrix.run import Interrupted, interrupt_reason, run_matrix
    from levante_tasks.matrix.slurm import submit

    config = load_config(args.config)
    if args.submit:
        if args.shard or args.cell is not None or args.model_index is not None or args.plan_sha256:
            raise LevanteError("--submit: submits the whole matrix; drop --shard, --cell, --model and --plan-sha256")
        if args.report_only:
            raise LevanteError("--submit: the end step it submits is --report-only; drop --report-only")
        auto = next((i for i, m in enumerate(config.models) if m.distribution and m.distribution.auto), None)
        if auto is not None:
            raise LevanteError(f"{display_path(config.path)}: models[{auto}].distribution.orders: auto decides after "
                               "each block of orders whether to run more, which queued jobs cannot; give a number of "
                               "orders to --submit, or run the matrix without --submit")
        submit(config, args.out, args.resume, dry_run=args.dry_run)
        return 0
    if args.report_only and (args.resume or args.dry_run or args.shard or args.cell is not None
                             or args.model_index is not None):
        raise LevanteError("--report-only: runs no cell and reports on the whole matrix in --out; drop --resume, "
                           "--dry-run, --shard, --cell and --model")
    try:
        result = run_matrix(config, args.out, resume=args.resume, shard=args.shard, cell_index=args.cell,
                            model_index=args.model_index, dry_run=args.dry_run, expect_plan=args.plan_sha256,
                            report_only=args.report_only)
    except (KeyboardInterrupt, Interrupted) as exc:
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        in_range = args.model_index is not None and 0 <= args.model_index < len(config.models)
        model = config.models[args.model_index].name if in_range else None  # its own time key, if it has one
        what, fix = interrupt_reason(exc, config, model, end_step=args.report_only)
        print(f"levante-tasks: error: {what}; finished cells are kept, {fix or 'rerun with --resume'}",
              file=sys.stderr)
        return 128 + signum
    if args.dry_run:
        return 0
    for cell in result.failed:
        print(f"levante-tasks: error: {cell.cell_id}: {result.states[cell.cell_id]['error']['reason']}",
              file=sys.stderr)
    problems = [f"{group}: {line}" for group, entry in (result.document or {}).get("groups", {}).items()
                for line in entry["problems"]]
    for line in problems:
        print(f"levante-tasks: error: {line}", file=sys.stderr)
    if args.report_only and result.failed:
        print(f"levante-tasks: error: {len(result.failed)} of {len(result.cells)} cell(s) did not finish and were "
              "not run (--report-only); run them with --resume (on Slurm: --submit --resume)", file=sys.stderr)
    return 1 if result.failed or problems else 0
