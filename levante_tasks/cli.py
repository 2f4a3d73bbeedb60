"""`levante-tasks` command line: the top-level help and the subcommands, registered in pipeline order."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from levante_tasks import __version__, demo
from levante_tasks.compare import cli as compare_cli
from levante_tasks.data import cli as prepare_cli
from levante_tasks.data import standins
from levante_tasks.errors import LevanteError, describe_os_error
from levante_tasks.l0 import cli as l0_cli
from levante_tasks.lmms.patcher import cli as patcher_cli
from levante_tasks.matrix import cli as matrix_cli
from levante_tasks.summary import cli as summary_cli
from levante_tasks.summary import rescore
from levante_tasks.synth import cli as synth_cli

# Each module's `register(subparsers)` adds its subcommands; the help lists them in this order.
COMMAND_MODULES = (demo, synth_cli, prepare_cli, standins, patcher_cli, matrix_cli, summary_cli, rescore,
                   compare_cli, l0_cli)

DESCRIPTION = """\
Evaluate vision-language models on the LEVANTE developmental tasks with lmms-eval or
inspect_ai, and compare them with children on LEVANTE's IRT scales.

New here? `levante-tasks demo` runs the whole pipeline offline on
synthetic data. The usual path: prepare the data, run a model (lmms-eval or
`levante-tasks matrix`), summarize the runs, compare them with children."""

EPILOG = """\
Run `levante-tasks COMMAND --help` for a command's options.
Models run in lmms-eval (`lmms-eval --model levante_clip --tasks levante ...`) or
inspect_ai (`inspect eval levante_tasks/levante_trog ...`).
Manual: README.md and docs/ in the levante-tasks source."""


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every command module's subcommands."""
    parser = argparse.ArgumentParser(prog="levante-tasks", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"levante-tasks {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    for module in COMMAND_MODULES:
        module.register(subparsers)
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
