"""Benchmark of `levante-tasks compare`: wall time and peak memory for 1/10/100 models x 7 tasks on 10k/100k/1M
children's trials, and how time grows with models and with trials.

Inputs are synthetic and generated here (nothing is downloaded): 7 LEVANTE-like tasks of 100 items each (2-4
options), two calibration sites (mirt mod2values CSV with `est` flags), children whose distractors are listed in
a different order on every trial (comma lists and Python-dict strings), a canonical items CSV (`--items`), and
model records with option scores. Each configuration runs in a fresh Python process; the time reported is the
`run_compare` call (reading inputs, every comparison and writing the outputs, plots off) as wall and CPU seconds
(CPU time is what to compare on a shared machine: the wall time also counts other processes), and the peak
resident memory of that process (`resource.getrusage`, includes the interpreter and imported libraries). Inputs are
generated in a process of their own, so no measured process inherits the generator's memory as its peak.

Each configuration is also run as the whole command (`python -m levante_tasks compare ... --no-plots`, a fresh
process: start-up, imports and `run_compare`), its CPU seconds (user + system) and peak memory from its own rusage
(wait4). Goals (issue 35): the whole command under 5 CPU s at 100 models x 1M trials, under 2 GiB at 1,000 models;
the last lines print each goal's figure at the largest configuration run, with its anchor and the ratio.

Run: `.venv/bin/python benchmarks/compare.py` (about 2-3 minutes on 2 cores, most of it generating the 1M-trial
file); `--quick` for 10k/100k trials only; `--models 100 --trials 1000000` for one configuration (`--models 1000`
for the memory goal); `--tiny` (1 and 2 models, 1k trials: a few seconds, the test suite runs it).
`--inputs DIR` keeps the generated inputs in DIR (one folder per trials size and model counts, reused when complete),
so repeated runs (A/B timings) skip the minutes of generating the 1M-trial file.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

# (task, option counts of its 100 items, distractor format of the trials)
TASKS = (
    ("trog", (4,), "comma"),
    ("vocab", (4,), "dict"),
    ("egma-math", (2, 3, 4), "comma"),
    ("theory-of-mind", (2, 3), "dict"),
    ("matrix-reasoning", (4,), "comma"),
    ("mental-rotation", (2,), "dict"),
    ("same-different-selection", (2, 3, 4), "comma"),
)
ITEMS_PER_TASK = 100
SITES = (("site_a", 0.0, 1.3), ("site_b", 0.4, 1.1))  # (name, MEAN_1, COV_11); site_a is the reference


def item_bank(rng: np.random.Generator) -> pd.DataFrame:
    """Items of every task: uid, canonical options (answer first), a1, d, g = 1 / n_options."""
    rows = []
    for task, counts, style in TASKS:
        for i in range(ITEMS_PER_TASK):
            k = counts[i % len(counts)]
            uid = f"{task}_item{i:03d}"
            rows.append({"task": task, "item_uid": uid, "options": [f"{uid}-opt{j}" for j in range(k)],
                         "style": style, "a1": float(rng.uniform(0.8, 1.6)), "d": float(rng.normal(0, 1.5)),
                         "g": 1.0 / k})
    return pd.DataFrame(rows)


def write_irt(bank: pd.DataFrame, folder: Path) -> list[Path]:
    """One mod2values CSV per task: both sites share the item parameters; site_a's MEAN_1 is the fixed one."""
    paths = []
    for task, items in bank.groupby("task", sort=False):
        rows = []
        for name, mean, var in SITES:
            for item in items.itertuples():
                irt = f"{item.item_uid}-1"
                rows += [(name, irt, "a1", item.a1, True), (name, irt, "d", item.d, True),
                         (name, irt, "g", item.g, False), (name, irt, "u", 1.0, False)]
            rows += [(name, "GROUP", "MEAN_1", mean, name != SITES[0][0]), (name, "GROUP", "COV_11", var, True)]
        path = folder / f"irt_{task}.csv"
        pd.DataFrame(rows, columns=["group", "item", "name", "value", "est"]).to_csv(path, index=False)
        paths.append(path)
    return paths


def _distractor_texts(options: list[str], style: str) -> list[str]:
    """Every listed order of an item's distractors, written as a comma list or a Python-dict string."""
    texts = []
    for perm in itertools.permutations(options[1:]):
        if style == "dict":
            texts.append("{" + ", ".join(f"'{j}': '{v}'" for j, v in enumerate(perm)) + "}")
        else:
            texts.append(",".join(perm))
    return texts


def write_children(bank: pd.DataFrame, n_trials: int, folder: Path, rng: np.random.Generator) -> None:
    """trials.csv (Redivis columns compare reads) and runs.csv: every child takes every task, one run per task."""
    n_children = max(2, round(n_trials / len(bank)))
    age = np.round(rng.uniform(5, 12, n_children), 2)
    site = np.arange(n_children) % 2
    ability = np.array([m for _, m, _ in SITES])[site] + 0.45 * (age - 8.5) + rng.normal(0, 0.8, n_children)
    items = bank.reset_index(drop=True)
    n_items = len(items)
    child = np.repeat(np.arange(n_children), n_items)
    item = np.tile(np.arange(n_items), n_children)
    a1, d, g = (items[c].to_numpy()[item] for c in ("a1", "d", "g"))
    p = g + (1 - g) / (1 + np.exp(-(a1 * ability[child] + d)))
    correct = rng.random(len(item)) < p
    k = items["options"].map(len).to_numpy()[item]
    wrong = 1 + (rng.random(len(item)) * (k - 1)).astype(int)
    choice = np.where(correct, 0, wrong)
    options = items["options"].to_numpy()
    texts = [_distractor_texts(o, s) for o, s in zip(items["options"], items["style"], strict=True)]
    n_texts = np.array([len(t) for t in texts])[item]
    order = (rng.random(len(item)) * n_texts).astype(int)
    offsets = np.cumsum([0] + [len(t) for t in texts])[:-1]
    flat = np.array([t for ts in texts for t in ts], dtype=object)
    all_options = np.array([o for opts in options for o in opts], dtype=object)
    option_offsets = np.cumsum([0] + [len(o) for o in options])[:-1]
    tasks = items["task"].to_numpy()
    task_code = pd.factorize(tasks)[0][item]
    run_id = np.char.add(np.char.add("run_", child.astype(str)), np.char.add("_", task_code.astype(str)))
    trials = pd.DataFrame({
        "site": np.array([s for s, _, _ in SITES])[site][child],
        "task_id": tasks[item],
        "run_id": run_id,
        "item_uid": items["item_uid"].to_numpy()[item],
        "correct": np.where(correct, "TRUE", "FALSE"),
        "response": all_options[option_offsets[item] + choice],
        "answer": all_options[option_offsets[item]],
        "distractors": flat[offsets[item] + order],
    })
    trials.to_csv(folder / "trials.csv", index=False)
    runs = trials.drop_duplicates("run_id")[["run_id", "site"]]
    runs["age"] = age[np.array([int(r.split("_")[1]) for r in runs["run_id"]])]
    runs.to_csv(folder / "runs.csv", index=False)


def write_items(bank: pd.DataFrame, folder: Path) -> Path:
    """The canonical option list of every item (what `prepare` writes into test.parquet as `options`)."""
    path = folder / "items.csv"
    bank.assign(options=bank["options"].map(json.dumps))[["task", "item_uid", "options"]].to_csv(path, index=False)
    return path


def write_records(bank: pd.DataFrame, n_models: int, path: Path, rng: np.random.Generator) -> None:
    """Tidy records: every model answers every item, with option scores (canonical order) for the KL."""
    frames = []
    for m in range(n_models):
        ability = rng.normal(0, 1.5)
        p = bank["g"] + (1 - bank["g"]) / (1 + np.exp(-(bank["a1"] * ability + bank["d"])))
        scores = [np.round(rng.normal(0, 1, len(o)) + np.eye(len(o))[0], 6).tolist() for o in bank["options"]]
        frames.append(pd.DataFrame({"model": f"model{m:03d}", "task": bank["task"], "item_uid": bank["item_uid"],
                                    "correct": (rng.random(len(bank)) < p).astype(int),
                                    "option_scores": [json.dumps(s) for s in scores]}))
    pd.concat(frames, ignore_index=True).to_csv(path, index=False)


def generate(folder: Path, n_trials: int, model_counts: list[int], seed: int = 0) -> None:
    """All inputs of one trials size (and one records file per model count) under `folder`."""
    rng = np.random.default_rng(seed)
    bank = item_bank(rng)
    write_irt(bank, folder)
    write_items(bank, folder)
    write_children(bank, n_trials, folder, rng)
    for n in model_counts:
        write_records(bank, n, folder / f"records_{n}.csv", rng)


def run_once(folder: Path, n_models: int, n_boot: int) -> dict[str, float]:
    """Time one `run_compare` call in this process; returns seconds and peak RSS in MiB."""
    from levante_tasks.compare.pipeline import Settings, run_compare

    irt = [(None, p) for p in sorted(folder.glob("irt_*.csv"))]
    settings = Settings(n_boot=n_boot, plots=False)
    with tempfile.TemporaryDirectory(dir=folder) as out:
        cpu_start = time.process_time()
        start = time.perf_counter()
        run_compare(irt, folder / "trials.csv", folder / "runs.csv", folder / f"records_{n_models}.csv",
                    Path(out) / "out", settings, items_path=folder / "items.csv")
        seconds = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": seconds, "cpu_seconds": cpu, "peak_mib": peak}


def whole_command(folder: Path, n_models: int, n_boot: int) -> dict[str, float]:
    """CPU seconds (user + system) and peak RSS (MiB) of `python -m levante_tasks compare` in a fresh process."""
    irt = [arg for path in sorted(folder.glob("irt_*.csv")) for arg in ("--irt", str(path))]
    with tempfile.TemporaryDirectory(dir=folder) as out:
        command = [sys.executable, "-m", "levante_tasks", "compare", *irt, "--trials", str(folder / "trials.csv"),
                   "--runs", str(folder / "runs.csv"), "--models", str(folder / f"records_{n_models}.csv"),
                   "--items", str(folder / "items.csv"), "--out", str(Path(out) / "out"), "--n-boot", str(n_boot),
                   "--no-plots"]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        stderr = process.stderr.read().decode("utf-8", "replace") if process.stderr else ""
        _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"levante-tasks compare failed:\n{stderr[-2000:]}")
    return {"command_cpu_seconds": usage.ru_utime + usage.ru_stime, "command_peak_mib": usage.ru_maxrss / 1024}


def measure(folder: Path, n_models: int, n_boot: int) -> dict[str, float]:
    """Run one configuration in a fresh interpreter (so peak memory is its own) and read its figures, then the
    whole command."""
    done = subprocess.run([sys.executable, __file__, "--_once", str(folder), str(n_models), str(n_boot)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"benchmark run failed:\n{done.stderr}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), **whole_command(folder, n_models, n_boot)}


def print_goals(results: dict[tuple[int, int], dict[str, float]]) -> None:
    """Each goal's figure at the largest configuration run, with its anchor (the goal) and the ratio."""
    n_trials, n_models = max(results, key=lambda key: (key[1], key[0]))
    res = results[(n_trials, n_models)]
    at = f"{n_models} models x {n_trials} trials"
    for figure, value, anchor, unit, goal_at in (
        ("whole-command CPU", res["command_cpu_seconds"], 5.0, "s", "100 models x 1000000 trials"),
        ("whole-command peak memory", res["command_peak_mib"], 2048.0, "MiB", "1000 models x 1000000 trials"),
    ):
        verdict = ("met" if value < anchor else "NOT met") if at == goal_at else f"the goal is at {goal_at}"
        print(f"goal, {figure} at {at}: {value:.2f} {unit} (anchor: the goal, under {anchor:g} {unit}), ratio "
              f"{value / anchor:.2f} ({verdict})")


def inputs_folder(root: Path, n_trials: int, model_counts: list[int]) -> Path:
    """The folder of one trials size's inputs under `root`, generated unless an earlier run completed it (the
    records depend on every model count generated before them, so the folder is named by all of them)."""
    folder = root / f"t{n_trials}_m{'-'.join(map(str, model_counts))}"
    done = folder / "complete"
    if not done.exists():
        folder.mkdir(parents=True, exist_ok=True)
        # in a child process: a process started from this one inherits its peak RSS as its own floor (Linux
        # keeps ru_maxrss across fork and exec), so the generator's ~1 GiB would read as compare's peak
        subprocess.run([sys.executable, __file__, "--_generate", str(folder), str(n_trials),
                        *map(str, model_counts)], check=True)
        done.touch()
    return folder


def main() -> None:
    """Generate inputs per trials size, time every (models, trials) configuration, print the table and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--trials", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--n-boot", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="10k and 100k trials only")
    parser.add_argument("--tiny", action="store_true", help="1 and 2 models, 1k trials, n_boot 100")
    parser.add_argument("--inputs", type=Path, help="keep the generated inputs here and reuse them when present")
    parser.add_argument("--_once", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--_generate", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._generate:
        folder, n_trials, *model_counts = args._generate
        generate(Path(folder), int(n_trials), [int(n) for n in model_counts])
        return
    if args._once:
        folder, n_models, n_boot = args._once
        print(json.dumps(run_once(Path(folder), int(n_models), int(n_boot))))
        return
    if args.tiny:
        args.models, args.trials, args.n_boot = [1, 2], [1_000], 100
    trials_sizes = [t for t in args.trials if t <= 100_000] if args.quick else args.trials
    results: dict[tuple[int, int], dict[str, float]] = {}
    print(f"levante-tasks compare: {len(TASKS)} tasks x {ITEMS_PER_TASK} items, n_boot {args.n_boot}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (other processes make wall > CPU)")
    print(f"{'':>17} | {'run_compare':>27} | {'whole command':>19}")
    print(f"{'trials':>9} {'models':>7} | {'wall s':>8} {'CPU s':>8} {'peak MiB':>9} | {'CPU s':>8} {'peak MiB':>9}")
    with contextlib.ExitStack() as stack:
        root = args.inputs or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        for n_trials in trials_sizes:
            folder = inputs_folder(root, n_trials, args.models)
            for n_models in args.models:
                res = results[(n_trials, n_models)] = measure(folder, n_models, args.n_boot)
                print(f"{n_trials:>9} {n_models:>7} | {res['seconds']:>8.2f} {res['cpu_seconds']:>8.2f} "
                      f"{res['peak_mib']:>9.0f} | {res['command_cpu_seconds']:>8.2f} {res['command_peak_mib']:>9.0f}",
                      flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    print("growth with models (CPU time at the most models / at the fewest, same trials):")
    low, high = min(args.models), max(args.models)
    for n_trials in trials_sizes:
        ratio = results[(n_trials, high)]["cpu_seconds"] / results[(n_trials, low)]["cpu_seconds"]
        print(f"  {n_trials:>9} trials: {low} -> {high} models x{high / low:g}: time x{ratio:.2f}")
    first, last = trials_sizes[0], trials_sizes[-1]
    if first != last:
        print("growth with trials (CPU time, same models):")
    for n_models in args.models if first != last else []:
        ratio = results[(last, n_models)]["cpu_seconds"] / results[(first, n_models)]["cpu_seconds"]
        print(f"  {n_models:>3} models: {first} -> {last} trials x{last / first:g}: time x{ratio:.2f}")
    print_goals(results)


if __name__ == "__main__":
    main()
