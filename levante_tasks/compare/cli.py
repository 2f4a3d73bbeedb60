"""`levante-tasks compare`: score models on children's IRT scale and compare them with children."""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
from collections.abc import Iterator
from pathlib import Path

from levante_tasks import blas
from levante_tasks.compare.conventions import CALIBRATION_TOLERANCE, ORDERS_TOLERANCE
from levante_tasks.errors import LevanteError, display_path


def _irt_arg(value: str) -> tuple[str | None, Path]:
    """`PATH`, `TASK=PATH` or `TASK@LANGUAGE=PATH` (TASK: any spelling of a LEVANTE task; LANGUAGE: the language of
    a by_language record; both checked by `_check_task_names`)."""
    task, sep, path = value.partition("=")
    return (task, Path(path)) if sep and task and not Path(value).exists() else (None, Path(value))


def _check_task_names(irt: list[tuple[str | None, Path]]) -> None:
    """Each `--irt` TASK= must be a spelling the catalogue knows (internal name, manifest task_id, lmms-eval name,
    e.g. `mrot`; run_compare maps it to the internal name) and each @LANGUAGE a known language: else a one-line
    error listing the names."""
    from levante_tasks.compare.languages import irt_task

    for spec, path in irt:
        if spec is not None:
            irt_task(spec, f"--irt {spec}={display_path(path)}")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `compare` subcommand."""
    parser = subparsers.add_parser(
        "compare",
        help="compare models with children (IRT ability, difficulty r, response KL, age)",
        description="Compare model per-item records with LEVANTE children. Conventions: b = -d/a1 (higher = "
        "harder); negative r(correct, b) = child-aligned; KL(human || model), natural log; children's responses are "
        "mapped to the canonical options by text (--items). A model run in locale L (its task name, or a records "
        "file's locale column) meets the children of language L (trials' or runs' language); a child's IRT group is "
        "its dataset, else its site, else the reference group.",
    )
    parser.add_argument(
        "--irt",
        action="append",
        required=True,
        type=_irt_arg,
        metavar="[TASK[@LANGUAGE]=]PATH",
        help="IRT model record (.rds ModelRecord) or item-parameter CSV; repeat per task. TASK: the LEVANTE task "
        "of the model, any spelling (e.g. mental-rotation, mrot or levante_mental_rotation); @LANGUAGE: the record "
        "of one language's children (LEVANTE's by_language/<language>, e.g. vocab@de=PATH; needed for vocab and "
        "theory-of-mind in every language but English, whose record is TASK=PATH)",
    )
    parser.add_argument("--trials", required=True, type=Path, help="children's trials CSV (Redivis layout)")
    parser.add_argument("--runs", required=True, type=Path,
                        help="runs CSV with run_id and age (years), and language when the trials have none")
    parser.add_argument(
        "--models",
        required=True,
        type=Path,
        help="lmms-eval output folder (samples_<task>.jsonl) and/or inspect_ai .eval logs, or a records CSV/JSONL",
    )
    parser.add_argument(
        "--items",
        type=Path,
        help="canonical options per item: a prepared datasets folder (test.parquet), a manifest.csv, or a CSV "
        "with item_uid and options (JSON list); without it an item's order is read from its trials only when "
        "every trial lists the same order",
    )
    parser.add_argument("--out", required=True, type=Path, help="output folder")
    parser.add_argument("--min-n", type=int, default=10, help="children needed per (item, ability bin)")
    parser.add_argument("--n-boot", type=int, default=2000,
                        help="bootstrap resamples of the age-equivalent interval (r_pb and Spearman: Fisher z)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the age bootstrap and the permutation test")
    parser.add_argument("--n-perm", type=int, default=2000, help="permutations of the better-than-uniform test")
    parser.add_argument("--calibration-tolerance", type=float, default=CALIBRATION_TOLERANCE,
                        help="largest |rescored - recorded| calibration ability accepted, logits "
                             f"(default {CALIBRATION_TOLERANCE:g})")
    parser.add_argument("--across-languages", action="store_true",
                        help="also compare each model run with the children of every other language (each row "
                             "names the run's locale and the children's language); default: a run in locale L "
                             "meets the children of L only")
    parser.add_argument("--orders-tolerance", type=float, default=ORDERS_TOLERANCE,
                        help="replicate half-width (nats) at which a model run under several option-order seeds has "
                             f"enough orders (orders_enough; default {ORDERS_TOLERANCE:g})")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the comparison and print where the outputs went."""
    if args.min_n < 1 or args.n_boot < 1 or args.n_perm < 1:
        raise LevanteError("--min-n, --n-boot and --n-perm must be positive")
    if not args.calibration_tolerance >= 0:
        raise LevanteError("--calibration-tolerance must be a number >= 0 (logits)")
    if not args.orders_tolerance > 0:
        raise LevanteError("--orders-tolerance must be a number > 0 (nats)")
    with blas.loaded_without_workers():  # no BLAS workers: its products run on one thread (levante_tasks.blas)
        from levante_tasks.compare.pipeline import Settings, run_compare  # heavy (pandas, scipy): only when run

    _check_task_names(args.irt)
    settings = Settings(min_n=args.min_n, n_boot=args.n_boot, n_perm=args.n_perm, seed=args.seed,
                        plots=not args.no_plots, calibration_tolerance=args.calibration_tolerance,
                        across_languages=args.across_languages, orders_tolerance=args.orders_tolerance)
    with _imports_frozen():
        summary = run_compare(args.irt, args.trials, args.runs, args.models, args.out, settings,
                              items_path=args.items)
    from levante_tasks.compare.report import command_notes, outcome_lines

    for line in outcome_lines(summary, display_path(args.out)):
        print(line)
    for line in command_notes(summary):
        print(f"levante-tasks: note: {line}", file=sys.stderr)
    return 0


@contextlib.contextmanager
def _imports_frozen() -> Iterator[None]:
    """The objects alive before the run (the imported libraries: ~90k) kept out of the cyclic collector's full
    collections, which would walk them each time (~0.1 s of CPU at 100 models); given back to it afterwards."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
