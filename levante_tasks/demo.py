"""`levante-tasks demo`: the whole pipeline on the embedded synthetic release, offline, in a few minutes.

Steps: write the synthetic release (seeded) -> `prepare` it -> run every LEVANTE task in lmms-eval with a
random-init tiny CLIP through `levante_clip` (a pipeline check, not a capability result) -> compare the model
with the simulated children (`compare`) -> summarize the run into the model x task matrix (`summarize`).
Everything lands under `--out` (default `demo-out/`).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

from levante_tasks.data.cli import format_result
from levante_tasks.data.prepare import prepare
from levante_tasks.errors import LevanteError

SYNTHETIC_VERSION = "synthetic"
DEMO_TASKS = "levante"
TASKS_DIR = Path(__file__).resolve().parent / "tasks"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `demo` subcommand."""
    parser = subparsers.add_parser("demo", help="run the pipeline on the embedded synthetic release",
                                   description=__doc__)
    parser.add_argument("--out", default="demo-out", help="output folder (default: demo-out)")
    parser.add_argument("--seed", type=int, default=0, help="synthetic release seed (default: 0)")
    parser.add_argument("--prepare-only", action="store_true", help="stop after building the datasets")
    parser.set_defaults(func=run)


def lmms_eval_command(model_dir: Path, output: Path) -> list[str]:
    """The lmms-eval invocation (an argv list, never a shell string)."""
    return [sys.executable, "-m", "lmms_eval", "--model", "levante_clip", "--model_args",
            f"pretrained={model_dir}", "--tasks", DEMO_TASKS, "--include_path", str(TASKS_DIR),
            "--batch_size", "16", "--output_path", str(output), "--log_samples", "--seed", "0,1234,1234,1234"]


def run_lmms_eval(model_dir: Path, output: Path, data_dir: Path) -> dict:
    """Run lmms-eval; it exits 0 even on failure, so success means a results file was written and parses."""
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data_dir), "LEVANTE_DATA_VERSION": SYNTHETIC_VERSION,
           "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(lmms_eval_command(model_dir, output), env=env, capture_output=True, text=True)
    results = sorted(output.rglob("*_results.json"), key=lambda p: p.stat().st_mtime)
    if done.returncode != 0 or not results:
        tail = (done.stdout + done.stderr)[-2000:]
        raise LevanteError(f"lmms-eval did not write a results file (exit {done.returncode}):\n{tail}")
    return json.loads(results[-1].read_text(encoding="utf-8"))


def accuracy_table(results: dict) -> str:
    """Accuracy and parse rate per leaf task, from lmms-eval's results.json."""
    lines = [f"{'task':<44} {'n':>4} {'acc':>6} {'parsed':>7}"]
    groups = results.get("group_subtasks", {})
    leaves = [t for t in results["results"] if not groups.get(t)]
    for task in sorted(leaves):
        metrics = results["results"][task]
        n = results["n-samples"][task]["effective"]
        acc, parsed = metrics["levante_acc,none"], metrics["levante_parse_rate,none"]
        lines.append(f"{task:<44} {n:>4} {acc:>6.3f} {parsed:>7.3f}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Synthesize, prepare, evaluate and compare; print what each step produced."""
    from levante_tasks.compare.pipeline import Settings, run_compare
    from levante_tasks.summary import summarize_runs
    from levante_tasks.synth import write_synthetic_release
    from levante_tasks.testing.tiny_models import build_tiny_clip

    out = Path(args.out)
    base, data = out / "release", out / "data"
    summary = write_synthetic_release(base, seed=args.seed, version=SYNTHETIC_VERSION)
    print(f"[1/5] synthetic release (seed {args.seed}) in {out.name}/release/: "
          f"{sum(summary['items_per_task'].values())} manifest rows, simulated children and IRT truth")
    result = prepare(str(base), SYNTHETIC_VERSION, str(data), strict=True, progress=False)
    print("[2/5] prepared datasets:")
    print(format_result(result))
    if args.prepare_only:
        return 0
    model_dir = build_tiny_clip(out / "models" / "tiny-clip", seed=args.seed)
    results = run_lmms_eval(model_dir, out / "runs", data)
    print(f"[3/5] lmms-eval {importlib.metadata.version('lmms_eval')}: levante_clip on a random-init tiny CLIP "
          "(pipeline check, not a capability result)")
    print(accuracy_table(results))
    comparison = run_compare([(None, base / "irt" / "item_params.csv")], base / "children" / "trials.csv",
                             base / "children" / "runs.csv", out / "runs", out / "comparison",
                             Settings(min_n=10, n_boot=500, seed=args.seed, plots=True),
                             items_path=data / SYNTHETIC_VERSION / "datasets")
    print(f"[4/5] compared with the simulated children on {len(comparison['tasks'])} task(s): "
          f"{out.name}/comparison/comparison.md (plots and tidy CSV beside it)")
    matrix = summarize_runs([out / "runs"], out / "summary")
    print(f"[5/5] summary: {out.name}/summary/summary.md ({len(matrix['cells'])} cells; matrix.csv, matrix.json, "
          "heatmap.png)")
    return 0
