"""Benchmark of an lmms-eval run's fixed cost with our start-up patches (0020: the task index parsed by libyaml;
0021: the CHAIR task module and nltk imported only for their metrics; 0022: the punctuation table built on first use)
against the same lmms-eval without them.

The anchor is the installed, patched lmms-eval with 0020-0022 taken back out: a mirror of its package folder
(symlinks) whose touched files carry every other patch of the set; the patched side is the same mirror with those
files as installed (so both sides compile them afresh). Both sides run the same command in fresh
processes, in turn (anchor then patched, then patched then anchor, ...): `python -m lmms_eval --model dummy --tasks
levante_vocab --limit 2` on a small fixture data dir, and `import lmms_eval.__main__` plus building the task index
(what every start-up pays before any item). Figures are CPU seconds (user + system of the process: what to compare
on a shared machine), medians over the rounds, with the ratio patched / anchor.

Needs the installed lmms-eval patched with the current set (`levante-tasks lmms-eval patch`).
Run: `.venv/bin/python benchmarks/startup.py` (about a minute on 2 cores; `--rounds N`); `--tiny` is one round (the
test suite runs it, the whole-process run only).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from levante_tasks.lmms.patcher.engine import read_record
from levante_tasks.lmms.patcher.target import installed_root, resolve_target
from levante_tasks.lmms.patcher.unidiff import apply_hunks
from levante_tasks.testing.fixture_data import write_fixture

PATCHES = ("0020", "0021", "0022")  # the start-up patches measured here, by number
RUN = [sys.executable, "-m", "lmms_eval", "--model", "dummy", "--tasks", "levante_vocab", "--limit", "2",
       "--output_path", "out", "--verbosity", "WARNING"]
INDEX = [sys.executable, "-c", "import lmms_eval.__main__\nfrom lmms_eval.tasks import TaskManager\nTaskManager()"]


def mirror(root: Path, without_patches: bool) -> Path:
    """A mirror of the installed lmms_eval (symlinks) with the files PATCHES touch copied, those patches reversed in
    them when `without_patches`."""
    target, patch_set = resolve_target(installed_root())
    record = read_record(target) or {}
    if record.get("patch_set_sha256") != patch_set.patch_set_sha256:
        raise SystemExit("startup.py: the installed lmms-eval is not patched with the current set "
                         "(run `levante-tasks lmms-eval patch`)")
    copied: dict[str, str] = {}
    for name in (n for n in reversed(patch_set.series) if n.startswith(PATCHES)):
        file_patch = patch_set.file_patch(name)
        text = copied.get(file_patch.path) or (installed_root() / file_patch.path).read_text(encoding="utf-8")
        copied[file_patch.path] = apply_hunks(text, file_patch, reverse=True) if without_patches else text
    source = installed_root() / "lmms_eval"
    for folder, _dirs, files in os.walk(source):
        relative = Path(folder).relative_to(source.parent)
        (root / relative).mkdir(parents=True, exist_ok=True)
        for name in files:
            path = (relative / name).as_posix()
            if path in copied:
                (root / relative / name).write_text(copied[path], encoding="utf-8")
            elif name != ".levante_patches.json":
                (root / relative / name).symlink_to(Path(folder) / name)
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="one round of the run only (the test suite runs this)")
    args = parser.parse_args()
    rounds = 1 if args.tiny else args.rounds
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        write_fixture(work / "data")
        base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        base.update(LEVANTE_DATA_DIR=str(work / "data"), HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1",
                    TRANSFORMERS_OFFLINE="1")
        here = os.environ.get("PYTHONPATH")
        sides = {side: {**base, "PYTHONPATH": os.pathsep.join(filter(None, [str(mirror(work / side, side == "anchor")),
                                                                             here]))}
                 for side in ("anchor", "patched")}
        figures: dict[tuple[str, str], list[float]] = {}
        measures = (("run", RUN),) if args.tiny else (("run", RUN), ("index", INDEX))
        for round_number in range(rounds):
            for what, command in measures:
                for side, env in sorted(sides.items(), reverse=round_number % 2 == 1):  # each side first in turn
                    folder = work / f"{side}-{what}"
                    folder.mkdir(exist_ok=True)
                    figures.setdefault((what, side), []).append(measured(command, env, folder))
    print(f"lmms-eval start-up benchmark; {rounds} round(s), CPU s (user + system), medians")
    labels = {"run": "a `--limit 2` levante_vocab run (dummy model), whole process",
              "index": "import lmms_eval.__main__ + the task index"}
    for what, label in labels.items():
        if (what, "anchor") not in figures:
            continue
        anchor_s, patched_s = (statistics.median(figures[(what, side)]) for side in ("anchor", "patched"))
        print(f"{label}: {patched_s:.2f} s with 0020-0022 vs {anchor_s:.2f} s without (anchor), "
              f"ratio {patched_s / anchor_s:.2f}")


def measured(command: list[str], env: dict[str, str], cwd: Path) -> float:
    """User + system CPU seconds of one fresh process running `command` (which must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"startup.py: a run failed in {cwd.name}:\n{done.stderr.decode()[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


if __name__ == "__main__":
    main()
