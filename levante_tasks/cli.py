"""`levante-tasks` command line: the top-level help and the subcommands, registered in pipeline order.

A run imports only the module of the command it names (`levante-tasks prepare` never loads compare's or the
harnesses' libraries); `--help`, a missing or an unknown command imports them all to list them.
"""

from __future__ import annotations

import argparse
import importlib
import os
import select
import sys
from collections.abc import Sequence
from types import ModuleType

from levante_tasks import __version__
from levante_tasks.errors import LevanteError, describe_os_error

# Each command and the module whose `register(subparsers)` adds it; the help lists them in this order.
COMMANDS = {
    "demo": "levante_tasks.demo",
    "synth": "levante_tasks.synth.cli",
    "prepare": "levante_tasks.data.cli",
    "standins": "levante_tasks.data.standins",
    "card": "levante_tasks.data.card_cli",
    "lmms-eval": "levante_tasks.lmms.patcher.cli",
    "matrix": "levante_tasks.matrix.cli",
    "summarize": "levante_tasks.summary.cli",
    "verify": "levante_tasks.summary.cli",
    "rescore": "levante_tasks.summary.rescore",
    "compare": "levante_tasks.compare.cli",
    "l0": "levante_tasks.l0.cli",
}

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


def command_modules(command: str | None = None) -> list[ModuleType]:
    """The module that registers `command`, or (None or unknown) every command module, in help order."""
    names = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    return [importlib.import_module(name) for name in names]


def named_command(argv: Sequence[str]) -> str | None:
    """The command `argv` starts with; None when it starts with a top-level option (`--help`, `--version`: both
    exit before any command runs, the help listing every command)."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser with `command`'s subcommands, or (None) every command module's."""
    parser = argparse.ArgumentParser(prog="levante-tasks", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"levante-tasks {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    for module in command_modules(command):
        module.register(subparsers)
    return parser


def _report(message: str) -> int:
    """Print an error message (one line per problem) and return the exit status for user-facing failures."""
    for line in message.splitlines() or ["unknown error"]:
        print(f"levante-tasks: error: {line}", file=sys.stderr)
    return 2


def _stdout_closed() -> bool:
    """Whether stdout's reader has gone (`| head` ended): polling a pipe's end then reports an error (Linux) or a
    hang-up (macOS, sockets); a file or terminal reports neither."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # stdout is no file (captured in memory): it cannot break
        return False
    if not hasattr(select, "poll"):  # Windows: assume the broken pipe was stdout, as before
        return True
    poller = select.poll()
    poller.register(descriptor, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; user-facing failures become one line on stderr and exit status 2.

    The one error path: LevanteError (bad input, named by the code that read it), and OSError from any file
    operation (disk full, read-only, permission denied, not a directory), which names its file.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(named_command(argv)).parse_args(argv)
    try:
        status = args.func(args)
    except LevanteError as exc:
        return _report(str(exc) or exc.__class__.__name__)
    except BrokenPipeError as exc:
        if not _stdout_closed():  # another pipe broke (a child process died): an error like any other
            return _report(describe_os_error(exc))
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # `| head`: stop quietly (Python docs)
        return 1
    except OSError as exc:
        return _report(describe_os_error(exc))
    except KeyboardInterrupt:
        print("levante-tasks: interrupted", file=sys.stderr)
        return 130
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
