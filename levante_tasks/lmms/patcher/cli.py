"""`levante-tasks lmms-eval patch|check|revert|audit`: manage our patches to the pinned lmms-eval; `tasks-path`
prints the installed LEVANTE task folder for an unpatched lmms-eval's `--include_path`.

Also runnable without the rest of the package's dependencies: `python scripts/patch_lmms_eval.py patch`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from levante_tasks.errors import LevanteError, describe_os_error, display_path
from levante_tasks.lmms.patcher.audit import audit_tree
from levante_tasks.lmms.patcher.engine import (
    PATCHED,
    Outcome,
    apply_patch_set,
    expected_record,
    file_states,
    overall_state,
    read_record,
    record_path,
    revert_patch_set,
)
from levante_tasks.lmms.patcher.patchset import PatchSet
from levante_tasks.lmms.patcher.target import Target, resolve_target


def _load(args: argparse.Namespace) -> tuple[Target, PatchSet]:
    """The tree named by --target (default: the lmms_eval this Python imports) and the patch set its version needs."""
    return resolve_target(args.target)


def _header(target: Target, patch_set: PatchSet) -> str:
    return (
        f"lmms-eval {patch_set.version} {target.kind} at {target.shown()} "
        f"(pinned: {patch_set.upstream['repo']} {patch_set.label})"
    )


def _report(outcome: Outcome, verb: str, dry_run: bool) -> None:
    """One line per target file, then a summary naming the patch set."""
    for path, state in sorted(outcome.before.items()):
        action = ("would be " if dry_run else "") + verb if path in outcome.changed else f"already {state}"
        print(f"  {path}: {action}")
    if not outcome.changed:
        print(f"nothing to do: every target file is already {'patched' if verb == 'patched' else 'pristine'}")


def cmd_patch(args: argparse.Namespace) -> int:
    """Apply the series (idempotent); write the record the results cite."""
    target, patch_set = _load(args)
    print(_header(target, patch_set))
    outcome = apply_patch_set(target, patch_set, dry_run=args.dry_run)
    _report(outcome, "patched", args.dry_run)
    if not args.dry_run:
        print(f"patch set sha256 {patch_set.patch_set_sha256} recorded in {display_path(record_path(target))}")
    return 0


def cmd_revert(args: argparse.Namespace) -> int:
    """Undo the series exactly (every file back to its upstream hash); remove the record."""
    target, patch_set = _load(args)
    print(_header(target, patch_set))
    _report(revert_patch_set(target, patch_set, dry_run=args.dry_run), "reverted", args.dry_run)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Exit 0 only when every target file is patched and the record matches; print the record."""
    target, patch_set = _load(args)
    print(_header(target, patch_set))
    states = file_states(target, patch_set)
    for path, state in sorted(states.items()):
        print(f"  {path}: {state}")
    state = overall_state(states)
    record = read_record(target)
    record_ok = record == expected_record(target, patch_set)
    if state == PATCHED and record_ok:
        print(json.dumps(record, indent=2, sort_keys=True))
        return 0
    problem = "record missing or stale" if state == PATCHED else state
    print(f"not patched: {problem}; run `levante-tasks lmms-eval patch`")
    return 1


def cmd_audit(args: argparse.Namespace) -> int:
    """Compare the whole tree with the pinned upstream file hashes; exit 1 on differing or unexpected missing."""
    target, patch_set = _load(args)
    print(_header(target, patch_set))
    report = audit_tree(target, patch_set)
    print(f"  {len(patch_set.tree_pins)} files pinned; identical: {len(report.identical)}")
    print(f"  patched by our series: {len(report.patched)}")
    for title, paths, listed in (
        ("differ from the pinned upstream files", report.differ, True),
        ("missing", report.missing, True),
        (
            "missing but never shipped in the PyPI wheel (templates, READMEs, UI assets)",
            report.missing_expected,
            args.list_missing,
        ),
        ("extra (not in the pinned upstream files)", report.extra, True),
    ):
        print(f"  {title}: {len(paths)}")
        for path in paths if listed else ():
            print(f"    {path}")
    print("audit: OK" if report.ok else "audit: FAILED (files differ or are missing)")
    return 0 if report.ok else 1


def tasks_folder() -> Path:
    """The installed LEVANTE task folder (`levante_tasks/tasks/`, the YAMLs lmms-eval indexes), wherever the
    package lives (checkout, editable or wheel install)."""
    import levante_tasks.tasks

    folder = Path(levante_tasks.tasks.__file__).resolve().parent
    if not any(folder.rglob("levante_*.yaml")):
        raise LevanteError(f"{display_path(folder)}: holds no LEVANTE task YAML (reinstall levante-tasks)")
    return folder


def cmd_tasks_path(args: argparse.Namespace) -> int:
    """Print the task folder: `lmms-eval --include_path "$(levante-tasks lmms-eval tasks-path)"`."""
    print(tasks_folder())
    return 0


def _add_commands(sub: argparse._SubParsersAction) -> None:
    """The four actions, each taking --target."""
    for name, func, help_text in (
        ("patch", cmd_patch, "apply the patch series (idempotent) and write the applied-patch record"),
        ("check", cmd_check, "report each target file's state; exit 0 only if fully patched"),
        ("revert", cmd_revert, "restore every patched file to its exact upstream bytes"),
        ("audit", cmd_audit, "compare every file with the pinned upstream hashes (commit or wheel)"),
    ):
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument(
            "--target",
            default=os.environ.get("LEVANTE_LMMS_EVAL_TARGET"),
            help="folder holding lmms_eval/ (site-packages or a checkout such as third_party/lmms-eval), "
            "or lmms_eval/ itself; default: the lmms_eval this Python imports",
        )
        if name in ("patch", "revert"):
            p.add_argument("--dry-run", action="store_true", help="report what would change; write nothing")
        if name == "audit":
            p.add_argument("--list-missing", action="store_true", help="also list the expected-missing files")
        p.set_defaults(func=func)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `lmms-eval {patch,check,revert,audit}` to the levante-tasks command line."""
    parser = subparsers.add_parser(
        "lmms-eval", help="patch, check, revert or audit the installed lmms-eval; print the task folder",
        description="lmms-eval 0.7.2 and 0.7.3 have bugs that block the LEVANTE tasks; `patch` fixes them with "
                    "reviewed patches (once per environment; `make demo` and `make test` do it for you). "
                    "Details: docs/patcher.md.")
    sub = parser.add_subparsers(dest="lmms_eval_command", required=True, metavar="ACTION")
    _add_commands(sub)
    help_text = ("print the installed LEVANTE task folder, for an unpatched lmms-eval: "
                 'lmms-eval --include_path "$(levante-tasks lmms-eval tasks-path)" ...')
    sub.add_parser("tasks-path", help=help_text, description=help_text).set_defaults(func=cmd_tasks_path)


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry (scripts/patch_lmms_eval.py): the same four actions, errors as one line, exit 2."""
    parser = argparse.ArgumentParser(prog="patch_lmms_eval", description=__doc__)
    _add_commands(parser.add_subparsers(dest="lmms_eval_command", required=True, metavar="ACTION"))
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except LevanteError as exc:
        print(f"patch_lmms_eval: error: {exc}", file=sys.stderr)
    except OSError as exc:
        print(f"patch_lmms_eval: error: {describe_os_error(exc)}", file=sys.stderr)
    return 2
