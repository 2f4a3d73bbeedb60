"""`levante-tasks prepare`: turn a LEVANTE release into evaluation-ready datasets."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from levante_tasks import blas
from levante_tasks.data.prepare import PrepareResult, prepare
from levante_tasks.schema import layout

if TYPE_CHECKING:
    from levante_tasks.data.build import TaskSummary

PUBLIC_BUCKET = "https://storage.googleapis.com/levante-bench/corpus_data"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `prepare` subcommand."""
    parser = subparsers.add_parser(
        "prepare", help="mirror, validate and build the per-task datasets of a release",
        description="Download (or copy) a LEVANTE release, check every item and picture, and build the datasets "
                    "the tasks read into the data dir. Run it once per release version; a rerun of an unchanged "
                    "release does no work. Details: docs/prepare.md.")
    parser.add_argument("--release", default=PUBLIC_BUCKET,
                        help="release base: a local folder holding <version>/ or the bucket URL (default: public)")
    parser.add_argument("--version", default=None,
                        help="release version (default: the newest dated YYYY-MM-DD version)")
    parser.add_argument("--data-dir", default=None, help=f"output root (default: ${layout.DATA_DIR_ENV} or cache)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--strict", dest="strict", action="store_true", default=True,
                      help="any bad item is fatal (default)")
    mode.add_argument("--lenient", dest="strict", action="store_false",
                      help="drop bad items and count them in dataset.json")
    parser.add_argument("--allow-empty-tasks", action="store_true",
                        help="keep going when all manifest rows of a task were dropped or excluded (that task gets "
                             "no dataset); without it that is an error")
    parser.add_argument("--verify", action="store_true",
                        help="re-hash every mirror, dataset (and local release) file instead of trusting size and "
                             "modification time; rebuild what does not match")
    parser.add_argument("--translations", default=None, metavar="FILE",
                        help="LEVANTE's translation table (CSV) to build the tasks in every locale it translates "
                             f"(default: the release's own {layout.TRANSLATIONS_FILE}, if it has one)")
    parser.add_argument("--locales", default=None, metavar="CODES",
                        help="only these translated locales, comma-separated (e.g. de,es-CO; default: every locale "
                             "the table translates at least one item into)")
    parser.add_argument("--jobs", type=_positive, default=None, metavar="N",
                        help="decode the pictures on N processes (default: every core this process may use); the "
                             "output is the same for every N")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def _positive(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return int(text)


def _task_lines(tasks: list[TaskSummary]) -> list[str]:
    lines = []
    for task in tasks:
        excluded = ", ".join(f"{k}={v}" for k, v in task.excluded.items()) or "-"
        lines.append(f"{task.task:<26} {task.n_items:>5}  {task.fingerprint[:16]:<16} {excluded}")
    return lines


def format_result(result: PrepareResult) -> str:
    """A small table: items, exclusions and fingerprint per task (then per task of each translated locale)."""
    state = "built" if result.rebuilt else "up to date (nothing rebuilt)"
    lines = [f"LEVANTE {result.version}: fetched {result.fetched} file(s); datasets {state}",
             f"{'task':<26} {'items':>5}  {'fingerprint':<16} excluded / dropped", *_task_lines(result.tasks)]
    for code, tasks in result.locales.items():
        lines += [f"locale {code}:", *_task_lines(tasks)]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run `prepare` and print what was built."""
    locales = [code.strip() for code in args.locales.split(",") if code.strip()] if args.locales else None
    with blas.loaded_without_workers():  # numpy comes with pyarrow; prepare multiplies no matrices
        result = prepare(args.release, args.version, args.data_dir, args.strict, progress=not args.quiet,
                         verify=args.verify, allow_empty_tasks=args.allow_empty_tasks,
                         translations=args.translations, locales=locales, jobs=args.jobs)
    print(format_result(result))
    return 0
