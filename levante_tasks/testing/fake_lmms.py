"""`python -m levante_tasks.testing.fake_lmms ARGS`: a fast stand-in for lmms-eval in the matrix runner's fault
tests (config key `lmms_eval_module`), so that concurrency and signal tests need no model.

It copies the results and samples files of an earlier real lmms-eval run of the same model (`template=<folder>`
in --model_args, that run's output folder; relative to the working folder) into --output_path, and fails like a
LEVANTE task when LEVANTE_DATA_DIR/LEVANTE_DATA_VERSION name no prepared version. Environment: FAKE_LMMS_LOG
(a file: one line `<pid> <tasks>` is appended when each run starts), FAKE_LMMS_GATE (a file: it waits until that file
exists before writing anything, so a test can act while it runs).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path


def _flag(argv: list[str], name: str) -> str:
    """The value after flag `name`."""
    return argv[argv.index(name) + 1]


def main(argv: list[str]) -> int:
    """Log the start, wait for the gate, copy the template's files for each run (one, or each of a `--config`
    list, announced by lmms-eval's per-run line that names its output path) when the cell's data version is
    prepared, as the real tasks need; exit 0, as lmms-eval does."""
    args = dict(part.split("=", 1) for part in _flag(argv, "--model_args").split(",") if "=" in part)
    runs = (json.loads(Path(_flag(argv, "--config")).read_text(encoding="utf-8")) if "--config" in argv
            else [{"tasks": _flag(argv, "--tasks"), "output_path": _flag(argv, "--output_path")}])
    for run in runs:
        if os.environ.get("FAKE_LMMS_LOG"):
            with open(os.environ["FAKE_LMMS_LOG"], "a", encoding="utf-8") as log:
                log.write(f"{os.getpid()} {run['tasks']}\n")
        print(f"Evaluation tracker args: {{'output_path': {run['output_path']!r}}}", flush=True)
        gate = os.environ.get("FAKE_LMMS_GATE")
        while gate and not Path(gate).exists():
            time.sleep(0.02)
        data = Path(os.environ.get("LEVANTE_DATA_DIR", "."), os.environ.get("LEVANTE_DATA_VERSION", "-"))
        if not data.is_dir():  # as the real tasks would: no prepared data, no results
            print(f"fake lmms-eval: no prepared data at {data}", flush=True)
            return 1
        out = Path(run["output_path"])
        out.mkdir(parents=True, exist_ok=True)
        for source in sorted(Path(args["template"]).iterdir()):
            shutil.copyfile(source, out / source.name)
        print("fake lmms-eval: copied the template run", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
