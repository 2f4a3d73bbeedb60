"""Benchmark of `levante-tasks matrix`: what the runner costs on top of lmms-eval, and how it grows with the matrix.

Three measurements on the synthetic release (prepared here), each a fresh process, wall seconds:
1. planning: `--dry-run` of 1, 10, 100 and 1,000 models x 7 LEVANTE tasks x 3 seeds (21 to 21,000 cells): config
   check, every cell's canonical JSON and SHA-256, dataset fingerprints, the argv of each cell; against the
   CLI's own start-up (`levante-tasks matrix --help`), so the per-cell cost is what is left;
2. one cell against the strongest baseline, the same lmms-eval command run bare (the argv and environment the
   runner builds, `plan.cell_argv`/`plan.cell_env`): the runner's overhead is state files, the results check and
   the end step (summary of the finished cell, report);
3. resume: a 12-cell matrix (4 models x 1 task x 3 seeds) run once, then `--resume` with every cell finished:
   no lmms-eval process starts, only the checks and the end step.

Reported: wall and CPU seconds (user + system of the process tree; what to compare on a shared machine).
The model is the offline fixed-letter double (`levante_fixed` via `levante_tasks.testing.matrix_doubles`) on
`levante_trog` with --limit 8, so the figures are the harness's and the runner's, not a model's.
Run: `.venv/bin/python benchmarks/matrix.py` (about 3 minutes on 2 cores); `--tiny`: one repeat, 1 and 10 models
planned, part 2's 1-cell matrix resumed (the test suite runs it).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

TASKS = ["levante_vocab", "levante_trog", "levante_egma_math", "levante_theory_of_mind",
         "levante_matrix_reasoning", "levante_mental_rotation", "levante_same_different"]
DOUBLES = "levante_tasks.testing.matrix_doubles"
CLI = [sys.executable, "-m", "levante_tasks"]
REPEATS = 3  # --tiny: 1
PLAN_MODELS = (1, 10, 100, 1000)  # --tiny: 1 and 10
RESUME_MODELS, RESUME_SEEDS = 4, [0, 1, 2]  # --tiny: 1 model x 1 seed


def write_config(folder: Path, data: Path, models: int, tasks: list[str], seeds: list[int]) -> Path:
    """A matrix config of `models` fixed-letter doubles (distinct model_args, so distinct cells)."""
    config = {
        "data": {"dir": str(data), "version": "synthetic"},
        "env": {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
        "lmms_eval_module": DOUBLES,
        "models": [{"name": f"fixed{k}", "model": "levante_fixed", "model_args": f"letter={'ABCD'[k % 4]},tag={k}"}
                   for k in range(models)],
        "tasks": tasks, "seeds": seeds, "limit": 8, "batch_sizes": [8],
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "matrix.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


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


def median_of(make_command, cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Median wall and CPU seconds of REPEATS runs; `make_command(k)` gives the k-th command (fresh outputs)."""
    runs = [timed(make_command(k), cwd, env) for k in range(REPEATS)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def planning(tmp: Path, data: Path) -> None:
    startup = median_of(lambda k: [*CLI, "matrix", "--help"], tmp)[1]
    print(f"\n1. planning (--dry-run; CPU seconds; the CLI's start-up alone: {startup:.2f} s)")
    print(f"{'models':>7} {'cells':>7} {'wall s':>7} {'cpu s':>7} {'cpu - start-up':>15} {'per cell ms':>12}")
    for models in PLAN_MODELS:
        config = write_config(tmp / f"plan{models}", data, models, TASKS, [0, 1, 2])
        cells = models * len(TASKS) * 3
        wall, cpu = median_of(lambda k, c=config: [*CLI, "matrix", "--config", str(c), "--out",
                                                   str(tmp / "nowhere"), "--dry-run"], tmp)
        extra = max(cpu - startup, 0.0)
        print(f"{models:>7} {cells:>7} {wall:>7.2f} {cpu:>7.2f} {extra:>15.2f} {extra / cells * 1e3:>12.3f}")


def one_cell(tmp: Path, data: Path) -> tuple[Path, Path, tuple[float, float]]:
    """Print part 2; returns the 1-cell matrix's config, its first output folder and the runner's seconds."""
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
    return config_path, tmp / "one" / "m0", runner


def resume(tmp: Path, data: Path, done: tuple[Path, Path, tuple[float, float]] | None = None) -> None:
    """Print part 3; `done` (--tiny): part 2's finished 1-cell matrix (config, output, seconds) is the first run."""
    cells = RESUME_MODELS * len(RESUME_SEEDS)
    if done:
        config, out, first = done
    else:
        config = write_config(tmp / "resume", data, RESUME_MODELS, ["levante_trog"], RESUME_SEEDS)
        out = tmp / "resume" / "out"
        first = timed([*CLI, "matrix", "--config", str(config), "--out", str(out)], config.parent)
    again = median_of(lambda k: [*CLI, "matrix", "--config", str(config), "--out", str(out), "--resume"],
                      config.parent)
    print(f"\n3. resume ({RESUME_MODELS} models x levante_trog x {len(RESUME_SEEDS)} seeds = {cells} cells): "
          "wall / CPU seconds")
    print(f"first run {first[0]:.2f} / {first[1]:.2f} ({first[1] / cells:.2f} CPU s per cell); --resume with all "
          f"finished {again[0]:.2f} / {again[1]:.2f} ({first[1] / again[1]:.1f}x less CPU: checks and end step only)")


def main() -> None:
    global REPEATS, PLAN_MODELS, RESUME_MODELS, RESUME_SEEDS
    if sys.argv[1:] == ["--tiny"]:  # a few lmms-eval start-ups: the test suite runs it
        REPEATS, PLAN_MODELS, RESUME_MODELS, RESUME_SEEDS = 1, (1, 10), 1, [0]
    elif sys.argv[1:]:
        raise SystemExit("usage: benchmarks/matrix.py [--tiny]")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with tempfile.TemporaryDirectory(prefix="matrix-bench-") as name:
        tmp = Path(name)
        timed([*CLI, "demo", "--prepare-only", "--out", str(tmp / "demo")], tmp)
        data = tmp / "demo" / "data"
        print(f"levante-tasks matrix benchmark; {os.cpu_count()} CPU(s); median of {REPEATS} fresh processes")
        planning(tmp, data)
        done = one_cell(tmp, data)
        resume(tmp, data, done if REPEATS == 1 and RESUME_MODELS * len(RESUME_SEEDS) == 1 else None)


if __name__ == "__main__":
    main()
