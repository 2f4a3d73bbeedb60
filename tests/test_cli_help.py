"""`levante-tasks --help` is written for users: every registered command, one line each, in pipeline order."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import levante_tasks
from levante_tasks import cli

PACKAGE = Path(levante_tasks.__file__).parent
PIPELINE = ["demo", "synth", "prepare", "standins", "card", "lmms-eval", "matrix", "summarize", "verify", "rescore",
            "compare", "l0"]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Name -> parser of each subcommand, in registration order."""
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def _one_line_helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {choice.dest: choice.help or "" for choice in action._choices_actions}


def test_every_module_with_a_register_function_is_a_command_module() -> None:
    defining = {".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
                for path in PACKAGE.rglob("*.py") if re.search(r"^def register\(subparsers", path.read_text(), re.M)}
    assert defining == set(cli.COMMANDS.values())


def test_each_command_is_registered_by_the_module_the_table_names() -> None:
    """`levante-tasks CMD` imports only COMMANDS[CMD]: that module must be the one adding CMD."""
    for module in cli.command_modules():
        parser = argparse.ArgumentParser()
        module.register(parser.add_subparsers())
        assert {name: cli.COMMANDS.get(name) for name in _subcommands(parser)} == \
            dict.fromkeys(_subcommands(parser), module.__name__)
    for name in cli.COMMANDS:
        assert list(_subcommands(cli.build_parser(name))) == [n for n, m in cli.COMMANDS.items()
                                                              if m == cli.COMMANDS[name]]


def test_top_level_help_lists_every_registered_command_with_its_line_in_pipeline_order() -> None:
    parser = cli.build_parser()
    text = " ".join(parser.format_help().split())
    helps = _one_line_helps(parser)
    assert list(_subcommands(parser)) == PIPELINE
    for name, line in helps.items():
        assert line and len(line) < 100, f"{name}: one short line of help"
        assert " ".join(line.split()) in text, f"{name}'s line is not in the top-level help"
    listing = text[text.index("commands:"):]
    positions = [listing.index(f" {name} ") for name in PIPELINE]
    assert positions == sorted(positions)
    assert "levante-tasks demo" in text and "README.md and docs/" in text and "COMMAND --help" in text


def test_help_texts_are_for_users_not_module_docstrings() -> None:
    parser = cli.build_parser()
    assert parser.description == cli.DESCRIPTION and cli.__doc__ not in parser.format_help()
    docstrings = {module.__doc__.strip() for module in cli.command_modules() if module.__doc__}
    for name, sub in _subcommands(parser).items():
        assert sub.description, f"levante-tasks {name} --help has no description"
        assert sub.description.strip() not in docstrings, f"levante-tasks {name} --help shows its module docstring"
