"""`levante-tasks` command line: each subcommand lives in its own module and registers itself here."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from levante_tasks import __version__
from levante_tasks.errors import LevanteError, describe_os_error

# Modules that define `register(subparsers)`; each adds one or more subcommands with `func` set.
COMMAND_MODULES = [
    "levante_tasks.data.cli",
    "levante_tasks.data.standins",
    "levante_tasks.compare.cli",
    "levante_tasks.lmms.patcher.cli",
    "levante_tasks.synth.cli",
    "levante_tasks.demo",
    "levante_tasks.l0.cli",
    "levante_tasks.summary.cli",
    "levante_tasks.summary.rescore",
    "levante_tasks.matrix.cli",
]


def build_parser() -> argparse.ArgumentParser:
    """Assemble the top-level parser from every command module."""
    parser = argparse.ArgumentParser(prog="levante-tasks", description=__doc__)
    parser.add_argument("--version", action="version", version=f"levante-tasks {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def _report(message: str) -> int:
    """Print an error message (one line per problem) and return the exit status for user-facing failures."""
    for line in message.splitlines() or ["unknown error"]:
        print(f"levante-tasks: error: {line}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; user-facing failures become one line on stderr and exit status 2.

    The one error path: LevanteError (bad input, named by the code that read it), and OSError from any file
    operation (disk full, read-only, permission denied, not a directory), which names its file.
    """
    args = build_parser().parse_args(argv)
    try:
        status = args.func(args)
    except LevanteError as exc:
        return _report(str(exc) or exc.__class__.__name__)
    except BrokenPipeError:  # stdout closed early (`| head`): stop quietly, as the Python docs recommend
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:
        return _report(describe_os_error(exc))
    except KeyboardInterrupt:
        print("levante-tasks: interrupted", file=sys.stderr)
        return 130
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
