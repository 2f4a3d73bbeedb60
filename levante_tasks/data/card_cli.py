"""`levante-tasks card`: write the Croissant data card of a prepared version, or check any card of the package."""

from __future__ import annotations

import argparse
from pathlib import Path

from levante_tasks.cards.croissant import CardCheck, check_card
from levante_tasks.data.card import write_data_card
from levante_tasks.errors import LevanteError, display_path
from levante_tasks.schema import layout

IN_PLACE = True  # `--check` without a CARD (a non-string const: argparse passes strings through `type`)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `card` subcommand."""
    parser = subparsers.add_parser(
        "card", help="write or check the Croissant card of a prepared version (cite and share)",
        description="Write the Croissant 1.1 data card of a prepared version (made from its release.lock.json: "
                    "every release and prepared file with its sha256, one record set per task keyed by item_uid, "
                    "licences and responsible-AI fields); `prepare` writes it too. With --check, check a card "
                    "instead: its metadata (no Croissant error or warning), the sha256 of every file it lists, every "
                    "parquet column a declared field, and the records of every record set, each key unique. "
                    "Checking needs the `croissant` extra.")
    parser.add_argument("--version", default=None,
                        help=f"prepared version (default: ${layout.VERSION_ENV} or the version prepare built last)")
    parser.add_argument("--data-dir", default=None, help=f"prepared data dir (default: ${layout.DATA_DIR_ENV} or "
                                                         "the cache)")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"card file (default: <data-dir>/<version>/{layout.CARD_FILE}); its paths stay relative "
                             "to the version folder")
    parser.add_argument("--check", nargs="?", type=Path, const=IN_PLACE, default=None, metavar="CARD",
                        help="check a card instead of writing one: CARD (a data or a results card), or without it "
                             "the version's own card")
    parser.add_argument("--root", type=Path, default=None, metavar="DIR",
                        help="with --check CARD: the folder the card's file paths are relative to (default: the "
                             "card's folder; for a data card written with --out: its version folder)")
    parser.set_defaults(func=run)


def check_summary(card: Path, checked: CardCheck) -> str:
    """One line: what a passing check confirmed."""
    return (f"{display_path(card)}: valid Croissant; {checked.files} file(s) match their sha256; "
            f"{len(checked.records)} record set(s), {sum(checked.records.values())} records, every key unique")


def _version_dir(args: argparse.Namespace) -> Path:
    """The version folder `--version` (default: the prepared version) names in the data dir."""
    version = args.version or layout.prepared_version(args.data_dir)
    if not version:
        raise LevanteError(f"card: no prepared version (no --version, {layout.VERSION_ENV} or "
                           f"{layout.DEFAULT_VERSION_FILE}): {layout.PREPARE_HINT}")
    if not layout.is_version_name(version):
        raise LevanteError(f"card: --version {version!r} is not a version folder name")
    return layout.version_dir(version, args.data_dir)


def run(args: argparse.Namespace) -> int:
    """Write the data card, or check a card; print one line saying what was done."""
    if args.check is not None:
        if args.out is not None:
            raise LevanteError("card: --check reads a card; it takes no --out")
        if args.check is IN_PLACE:
            if args.root is not None:
                raise LevanteError("card: --root goes with --check CARD")
            card = _version_dir(args) / layout.CARD_FILE
        elif args.version is not None or args.data_dir is not None:
            raise LevanteError("card: --check CARD names its card; it takes no --version or --data-dir")
        else:
            card = args.check
        print(check_summary(card, check_card(card, args.root)))
        return 0
    if args.root is not None:
        raise LevanteError("card: --root goes with --check CARD")
    version_root = _version_dir(args)
    card = write_data_card(version_root, args.out)
    print(f"{display_path(card)}: the data card of {version_root.name}")
    return 0
