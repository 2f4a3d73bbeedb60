"""`levante-tasks demo`: the whole pipeline on the embedded synthetic release, offline, in a few minutes.

Steps: write the synthetic release (seeded) -> `prepare` it (the datasets and their Croissant data card) -> run
every LEVANTE task in lmms-eval with a random-init tiny CLIP through `levante_clip` (a pipeline check, not a
capability result) as a one-cell matrix (`levante-tasks matrix`: state file, resumable) -> whose end step compares
the model with the simulated children (`compare`) and summarizes the run into the model x task matrix (`summarize`)
with a report. Everything lands under `--out` (default `demo-out/`); a second demo keeps the finished cell.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
from pathlib import Path

from levante_tasks.atomic import write_text
from levante_tasks.data.cli import format_result
from levante_tasks.data.prepare import prepare
from levante_tasks.errors import LevanteError
from levante_tasks.schema import layout

SYNTHETIC_VERSION = "synthetic"
DEMO_TASKS = "levante"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `demo` subcommand."""
    parser = subparsers.add_parser(
        "demo", help="run the whole pipeline offline on synthetic data (start here)",
        description="Make a synthetic release with simulated children, prepare it, run every LEVANTE task in "
                    "lmms-eval with a tiny random-init CLIP, compare it with the children and summarize it, all "
                    "under --out, offline, in a few minutes. It checks the pipeline; its scores mean nothing. "
                    "Running it again keeps the finished run.")
    parser.add_argument("--out", default="demo-out", help="output folder (default: demo-out)")
    parser.add_argument("--seed", type=int, default=0, help="synthetic release seed (default: 0)")
    parser.add_argument("--prepare-only", action="store_true", help="stop after building the datasets")
    parser.set_defaults(func=run)


def matrix_config(seed: int) -> str:
    """The demo's matrix config (paths relative to it, in --out): one model x `levante` x seed 0, then the
    comparison with the simulated children and the summary as the matrix's end step."""
    return f"""# The demo's matrix (written by `levante-tasks demo`). Rerun or extend it with
#   levante-tasks matrix --config matrix.yaml --out matrix --resume
data: {{dir: data, version: {SYNTHETIC_VERSION}}}
env: {{HF_DATASETS_OFFLINE: "1", HF_HUB_OFFLINE: "1"}}
models:
  - name: tiny-clip
    model: levante_clip
    model_args: pretrained=models/tiny-clip
    public_id: tiny-clip
tasks: [{DEMO_TASKS}]
seeds: [0]
batch_sizes: [16]
compare:
  trials: release/children/trials.csv
  runs: release/children/runs.csv
  irt: [release/irt/item_params.csv]
  items: data/{SYNTHETIC_VERSION}/datasets
  min_n: 10
  n_boot: 500
  seed: {seed}
"""


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
    from levante_tasks.matrix.config import load_config
    from levante_tasks.matrix.run import run_matrix
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
    print(f"data card (Croissant): {out.name}/data/{SYNTHETIC_VERSION}/{layout.CARD_FILE}")
    if args.prepare_only:
        return 0
    build_tiny_clip(out / "models" / "tiny-clip", seed=args.seed)
    write_text(out / "matrix.yaml", matrix_config(args.seed))
    print(f"[3/5] matrix {out.name}/matrix.yaml: lmms-eval {importlib.metadata.version('lmms_eval')}, levante_clip on "
          "a random-init tiny CLIP (pipeline check, not a capability result), every LEVANTE task, seed 0")
    run = run_matrix(load_config(out / "matrix.yaml"), out / "matrix", resume=True, echo=lambda line: None)
    cell = run.cells[0]
    state = run.states[cell.cell_id]
    if state.get("status") != "done":
        raise LevanteError(f"{cell.rel_dir}: {state['error']['reason']}:\n" + "\n".join(state["error"]["tail"]))
    results = json.loads((out / "matrix" / cell.rel_dir / state["results"]).read_text(encoding="utf-8"))
    print(accuracy_table(results))
    group = run.document["groups"][cell.model.group]
    for line in group["problems"]:
        print(f"levante-tasks: warning: {line}")
    print(f"[4/5] compared with the simulated children: {out.name}/matrix/{group['comparison']} "
          "(plots and tidy CSV beside it)")
    print(f"[5/5] summary: {out.name}/matrix/{group['summary']} (matrix.csv, matrix.json, heatmap.png); "
          f"cell status and links: {out.name}/matrix/report.md")
    print(f"results card (Croissant): {out.name}/matrix/{layout.CARD_FILE}")
    return 1 if group["problems"] else 0
