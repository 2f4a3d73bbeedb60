"""Benchmark of `levante-tasks matrix`: what the runner costs on top of lmms-eval, and how it grows with the matrix.

Three measurements on the synthetic release (prepared here), each a fresh process, wall seconds:
1. planning: `--dry-run` of 1, 10, 100 and 1,000 models x 7 LEVANTE tasks x 3 seeds (21 to 21,000 cells): config
   check, every cell's canonical JSON and SHA-256, dataset fingerprints, the argv of each cell; against the
   CLI's own start-up (`levante-tasks matrix --help`), so the per-cell cost is what is left;
2. one cell against the strongest baseline, the same lmms-eval command run bare (the argv and environment the
   runner builds, `plan.cell_argv`/`plan.cell_env`): the runner's overhead is state files, the results check and
   the end step (summary of the finished cell, report);
3. resume: a 12-cell matrix (4 models x 1 task x 3 seeds) run once, then `--resume` with every cell finished:
   no lmms-eval process starts, only the checks and the end step;
4. model loads: one model x 2 tasks x 2 seeds run as one process per cell (`--cell K` each: the anchor, how the
   matrix ran before) against one process for the model (`--model 0`: a `--config` list of the 4 runs, one model
   load with lmms-eval patch 0019): model loads (from the cells' states) and CPU seconds per run.

Reported: wall and CPU seconds (user + system of the process tree; what to compare on a shared machine).
The model is the offline fixed-letter double (`levante_fixed` via `levante_tasks.testing.matrix_doubles`) on
`levante_trog` with --limit 8, so the figures are the harness's and the runner's, not a model's.
Run: `.venv/bin/python benchmarks/matrix.py` (about 4 minutes on 2 cores); `--tiny`: one repeat, planning at
1 model, resume at 1 cell (its first run is section 2's), model loads at 1 cell (about a minute: every lmms-eval
process costs its start-up). `$LEVANTE_BENCH_DEMO`, a `demo --prepare-only` folder, is read instead of preparing
the release (the test suite prepares one for every benchmark that needs it). Under the test suite (`--tiny` with its
fork_stream dispatcher named by $LEVANTE_FORK_STREAM) the lmms-eval runs are forked from a zygote that imported
lmms-eval once (`lmms_module`): the same runs and figure lines, without a start-up per run in the CPU figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from levante_tasks.testing.fork_stream import SOCKET_ENV

TASKS = ["levante_vocab", "levante_trog", "levante_egma_math", "levante_theory_of_mind",
         "levante_matrix_reasoning", "levante_mental_rotation", "levante_same_different"]
DOUBLES = "levante_tasks.testing.matrix_doubles"
# The forked client of each lmms-eval module (levante_tasks.testing.fork_stream), for --tiny under the test suite
FORKED = {DOUBLES: "levante_tasks.testing.forked_doubles", "lmms_eval": "levante_tasks.testing.forked_lmms_eval"}
CLI = [sys.executable, "-m", "levante_tasks"]
REPEATS = 3
LMMS_MODULE = DOUBLES  # the configs' lmms_eval_module (main: lmms_module's choice)
SHARED_DEMO = "LEVANTE_BENCH_DEMO"  # a `demo --prepare-only` folder to read instead (the test suite prepares one)
SIZES = {"full": {"plan_models": (1, 10, 100, 1000), "resume": (4, 3), "loads": (2, 2)},
         "tiny": {"plan_models": (1,), "resume": (1, 1), "loads": (1, 1)}}  # (models, seeds); loads: (tasks, seeds)


def write_config(folder: Path, data: Path, models: int, tasks: list[str], seeds: list[int]) -> Path:
    """A matrix config of `models` fixed-letter doubles (distinct model_args, so distinct cells)."""
    config = {
        "data": {"dir": str(data), "version": "synthetic"},
        "env": {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
        "lmms_eval_module": LMMS_MODULE,
        "models": [{"name": f"fixed{k}", "model": "levante_fixed", "model_args": f"letter={'ABCD'[k % 4]},tag={k}"}
                   for k in range(models)],
        "tasks": tasks, "seeds": seeds, "limit": 8, "batch_sizes": [8],
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "matrix.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def lmms_module(module: str, tiny: bool) -> str:
    """The `lmms_eval_module` of a benchmark's matrix: `module`, or at `--tiny` under the test suite's fork_stream
    dispatcher ($LEVANTE_FORK_STREAM: tests/conftest.py) its forked client, so that the smoke run pays lmms-eval's
    start-up once per test process, not once per run. What the runs do and print is the same; their start-up and
    work are then the zygote's, in no CPU figure (those count the client). Run by hand, `--tiny` starts the real
    module, as the full size does."""
    return FORKED[module] if tiny and os.environ.get(SOCKET_ENV) else module


def script_command(script: Path, tiny: bool) -> list[str]:
    """`python SCRIPT`, or at `--tiny` under the test suite's dispatcher (as `lmms_module`) its forked client: a
    benchmark's own process that runs lmms-eval in it (gpu's `--measure`) without lmms-eval's start-up."""
    forked = tiny and os.environ.get(SOCKET_ENV)
    return [sys.executable, *(["-m", "levante_tasks.testing.forked_script"] if forked else []), str(script)]


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (user + system of the process and the children it waited for) of one process; it
    must succeed. CPU time is what to compare on a shared machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command[:6])} ...\n{done.stderr[-2000:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def prepared_demo(folder: Path) -> Path:
    """The synthetic release's data folder: $LEVANTE_BENCH_DEMO's when it holds one (prepared once for the test
    suite's runs; only read), else `folder/demo`'s, prepared there on first use (`demo --prepare-only`)."""
    shared = Path(os.environ.get(SHARED_DEMO) or folder / "demo")
    demo = shared if (shared / "data").is_dir() else folder / "demo"
    if not (demo / "data").is_dir():
        timed([*CLI, "demo", "--prepare-only", "--out", str(demo)], folder)
    return demo / "data"


def median_of(make_command, cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Median wall and CPU seconds of REPEATS runs; `make_command(k)` gives the k-th command (fresh outputs)."""
    runs = [timed(make_command(k), cwd, env) for k in range(REPEATS)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def planning(tmp: Path, data: Path, sizes: tuple[int, ...]) -> None:
    startup = median_of(lambda k: [*CLI, "matrix", "--help"], tmp)[1]
    print(f"\n1. planning (--dry-run; CPU seconds; the CLI's start-up alone: {startup:.2f} s)")
    print(f"{'models':>7} {'cells':>7} {'wall s':>7} {'cpu s':>7} {'cpu - start-up':>15} {'per cell ms':>12}")
    for models in sizes:
        config = write_config(tmp / f"plan{models}", data, models, TASKS, [0, 1, 2])
        cells = models * len(TASKS) * 3
        wall, cpu = median_of(lambda k, c=config: [*CLI, "matrix", "--config", str(c), "--out",
                                                   str(tmp / "nowhere"), "--dry-run"], tmp)
        extra = max(cpu - startup, 0.0)
        print(f"{models:>7} {cells:>7} {wall:>7.2f} {cpu:>7.2f} {extra:>15.2f} {extra / cells * 1e3:>12.3f}")


def one_cell(tmp: Path, data: Path) -> tuple[Path, tuple[float, float]]:
    """Section 2; returns the runner's first output folder and its median wall / CPU seconds (a 1-cell resume
    section starts from them: the same command on the same config)."""
    from levante_tasks.matrix.config import load_config
    from levante_tasks.matrix.plan import cell_argv, cell_env, data_facts, plan

    config_path = write_config(tmp / "one", data, 1, ["levante_trog"], [0])
    config = load_config(config_path)
    (cell,) = plan(config)
    env = cell_env(config, data_facts(config))
    bare = median_of(lambda k: cell_argv(config, cell, 8, tmp / "one" / f"bare{k}"), config_path.parent, env)
    runner = median_of(lambda k: [*CLI, "matrix", "--config", str(config_path), "--out", str(tmp / "one" / f"m{k}")],
                       config_path.parent)
    print("\n2. one cell (levante_fixed, levante_trog, limit 8): wall / CPU seconds")
    print(f"bare lmms-eval {bare[0]:.2f} / {bare[1]:.2f}; levante-tasks matrix {runner[0]:.2f} / {runner[1]:.2f} "
          f"(cell + summary + report): CPU overhead {runner[1] - bare[1]:+.2f} s, ratio {runner[1] / bare[1]:.2f}x")
    return tmp / "one" / "m0", runner


def resume(tmp: Path, data: Path, models: int, seeds: int, one_cell_run: tuple[Path, tuple[float, float]]) -> None:
    """Section 3; a 1-model x 1-seed matrix is section 2's config, so its first run is section 2's runner run."""
    config = write_config(tmp / "resume", data, models, ["levante_trog"], list(range(seeds)))
    cells = models * seeds
    if cells == 1:
        out, first = one_cell_run
    else:
        out = tmp / "resume" / "out"
        first = timed([*CLI, "matrix", "--config", str(config), "--out", str(out)], config.parent)
    again = median_of(lambda k: [*CLI, "matrix", "--config", str(config), "--out", str(out), "--resume"],
                      config.parent)
    print(f"\n3. resume ({models} model(s) x levante_trog x {seeds} seeds = {cells} cells): wall / CPU seconds")
    print(f"first run {first[0]:.2f} / {first[1]:.2f} ({first[1] / cells:.2f} CPU s per cell); --resume with all "
          f"finished {again[0]:.2f} / {again[1]:.2f} ({first[1] / again[1]:.1f}x less CPU: checks and end step only)")


def loads_of(out: Path) -> int:
    """Model loads the cells' states record (attempts whose run built its model)."""
    states = [json.loads(p.read_text(encoding="utf-8")) for p in out.glob("cells/*/*/state.json")]
    if not states or any(s.get("status") != "done" for s in states):
        raise SystemExit(f"model loads: not every cell of {out.name} finished")
    return sum(a.get("model_load", True) for s in states for a in s["attempts"])


def model_loads(tmp: Path, data: Path, tasks: int, seeds: int) -> None:
    config = write_config(tmp / "loads", data, 1, TASKS[:tasks], list(range(seeds)))
    runs = tasks * seeds
    base = [*CLI, "matrix", "--config", str(config), "--out"]

    def per_cell(k: int) -> list[tuple[float, float]]:  # the anchor: one process per cell
        return [timed([*base, str(tmp / "loads" / f"cells{k}"), "--cell", str(i)], config.parent)
                for i in range(runs)]

    before_runs = [per_cell(k) for k in range(REPEATS)]
    before = statistics.median(sum(cpu for _, cpu in r) for r in before_runs)
    after = median_of(lambda k: [*base, str(tmp / "loads" / f"model{k}"), "--model", "0"], config.parent)[1]
    loads_before, loads_after = loads_of(tmp / "loads" / "cells0"), loads_of(tmp / "loads" / "model0")
    print(f"\n4. model loads (1 model x {tasks} task(s) x {seeds} seeds = {runs} runs; CPU seconds, no end step)")
    print(f"model loads: one process per cell (anchor) {loads_before}, one process per model {loads_after}")
    print(f"CPU per run: anchor {before / runs:.2f}, one process per model {after / runs:.2f} "
          f"(ratio {before / after:.2f}x; start-up saved per run {(before - after) / runs:.2f} s)")


def main() -> None:
    global REPEATS, LMMS_MODULE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="smallest sizes, one repeat (the test suite's run)")
    size = SIZES["tiny" if parser.parse_args().tiny else "full"]
    if size is SIZES["tiny"]:
        REPEATS = 1
    LMMS_MODULE = lmms_module(DOUBLES, size is SIZES["tiny"])
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with tempfile.TemporaryDirectory(prefix="matrix-bench-") as name:
        tmp = Path(name)
        data = prepared_demo(tmp)
        print(f"levante-tasks matrix benchmark; {os.cpu_count()} CPU(s); median of {REPEATS} fresh processes")
        planning(tmp, data, size["plan_models"])
        resume(tmp, data, *size["resume"], one_cell(tmp, data))
        model_loads(tmp, data, *size["loads"])


if __name__ == "__main__":
    main()
