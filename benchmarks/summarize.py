"""Benchmark of `levante-tasks summarize` and `levante-tasks verify`: time and peak memory for 1, 10 and 100 result
sets, and how the cost grows. Goal (issue 35): 100 result sets summarized and verified in under 3 s of CPU together.

A result set is one lmms-eval run as lmms-eval 0.7.x writes it: `<date>_results.json` plus one
`<date>_samples_<task>.jsonl` per task. Sets are synthetic and generated here: models x seeds (10 lmms-eval seeds
per model, so 100 sets = 10 models x 10 seeds), each over the 7 LEVANTE tasks with 128 items each (egma-math with
its 11 per-sub-type metrics), i.e. 896 samples lines per set, and the `levante` group's rows over them. Metrics
and stderrs are computed the way lmms-eval does, and every task records the provenance block of docs/summary.md
matching this installation and a data dir written here, so `verify` runs all of its checks and must report no
mismatch.

Each measurement is a fresh process; reported: wall seconds, CPU seconds (user + system of that process: what
to compare on a shared machine) and its peak resident memory (wait4 rusage, includes the interpreter and the
imported libraries). `summarize`, `verify` and `summarize --verify` (both in one pass, each file read once) are the
CLI (`python -m levante_tasks ...`, heatmap on; the CLI imports only the module of the command run); `library` is
one process that imports only `levante_tasks.summary` and calls `summarize_runs` then `verify_runs`, `library, one
pass` one that calls `summarize_runs` with a `Verifier`. The goal is judged on `summarize --verify`, the one command
that does both (interpreter start-up included).

Run: `.venv/bin/python benchmarks/summarize.py` (about two minutes on 2 cores); `--sets 100` for one size; `--tiny`
for 1 and 2 sets (a few seconds; the test suite runs it); `--keep DIR` writes the sets (`DIR/sets<N>`), the data dir
(`DIR/data`) and the outputs into DIR and leaves them there, to profile or diff the commands on the same inputs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from levante_tasks.core.parsing import PARSER_VERSION
from levante_tasks.lmms.metrics import subtype_accuracy, subtype_values
from levante_tasks.lmms.patcher import installed_lmms_eval
from levante_tasks.schema.dataset import SCHEMA_VERSION
from levante_tasks.schema.task_source import TaskSources
from levante_tasks.schema.tasks import task_info

source_sha256 = TaskSources().sha256  # once per task, not per result set: it hashes ~20 files

TASKS = (  # (lmms-eval task, family, option count)
    ("levante_vocab", "vocab", 4),
    ("levante_trog", "trog", 4),
    ("levante_egma_math", "egma-math", 4),
    ("levante_theory_of_mind", "theory-of-mind", 3),
    ("levante_matrix_reasoning", "matrix-reasoning", 4),
    ("levante_mental_rotation", "mental-rotation", 2),
    ("levante_same_different", "same-different-selection", 3),
)
MATH_SUBTYPES = task_info("egma-math").subtypes  # (name, trial types): every line carries every sub-type metric
ITEMS = 128
SEEDS_PER_MODEL = 10
GOAL_CPU = 3.0  # seconds of CPU for summarize + verify of 100 result sets (issue 35)
DATA_VERSION = "bench-v1"
LIBRARY = """import sys
from pathlib import Path
from levante_tasks.summary import summarize_runs, verify_runs
runs, out, data = map(Path, sys.argv[1:])
assert not summarize_runs([runs], out)["problems"]
report = verify_runs([runs], data)
assert not report.lines, report.lines[:5]
"""
ONE_PASS = """import sys
from pathlib import Path
from levante_tasks.summary import Verifier, summarize_runs
runs, out, data = map(Path, sys.argv[1:])
verifier = Verifier(data)
assert not summarize_runs([runs], out, data_dir=data, verifier=verifier)["problems"]
assert not verifier.report.lines, verifier.report.lines[:5]
"""
MEASURED = (("summarize", "summarize CLI"), ("verify", "verify CLI"), ("both", "summarize --verify CLI"),
            ("library", "library"), ("one_pass", "library, one pass"))


def _stderr(values: list[float]) -> float | str:
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else "N/A"


def _metric_block(name: str, values: list[float]) -> dict:
    err = _stderr(values)
    return {f"{name},none": sum(values) / len(values), f"{name}_stderr,none": err,
            f"{name}_stderr_clt,none": err, f"{name}_stderr_clustered,none": "N/A"}


def _task(task: str, family: str, n_options: int, skill: float, rng: random.Random, provenance: dict):
    """(results entry, config, samples lines) of one task in one run."""
    lines, metric_names = [], ["levante_acc", "levante_parse_rate"]
    subtype_names = [f"levante_acc_{name}" for name, _ in MATH_SUBTYPES] if family == "egma-math" else []
    for doc_id in range(ITEMS):
        order = list(range(n_options))
        rng.shuffle(order)
        parsed = rng.random() < 0.95
        correct = int(parsed and rng.random() < skill)
        letter = "ABCD"[order.index(0)] if correct else ("ABCD"[(order.index(0) + 1) % n_options] if parsed else None)
        record = {"output_type": "generate_until", "item_uid": f"{family}_{doc_id}", "task": family,
                  "trial_type": MATH_SUBTYPES[doc_id % len(MATH_SUBTYPES)][1][0] if subtype_names else "test",
                  "seed": 0, "variant": "original", "presented_order": order,
                  "choice_letter": letter, "choice_index": None if letter is None else order["ABCD".index(letter)],
                  "correct": correct, "parse_method": "lone_letter" if parsed else "none",
                  "parse_confidence": 0.8 if parsed else 0.0, "parser_version": PARSER_VERSION, "option_texts": [],
                  "option_scores": None, "option_scores_kind": None}
        line = {"doc_id": doc_id, "target": "ABCD"[order.index(0)], "filtered_resps": letter or "I am not sure",
                "token_counts": [None], "doc_hash": "0" * 64, "levante_acc": float(correct),
                "levante_parse_rate": float(parsed), "levante_item": record,
                "input": f"Choose the option for item {doc_id}. Answer with A, B, C, or D. A: <image 1>; B: <image 2>"}
        if subtype_names:
            line.update(subtype_values(record))
        lines.append(line)
    results = {"alias": task}
    for name in metric_names:
        values = [line[name] for line in lines if name in line]
        results.update(_metric_block(name, values))
    for name in subtype_names:  # lmms-eval: custom aggregation, so stderr "N/A"; CLT over the non-null values
        scored = [line[name] for line in lines if line[name] is not None]
        results.update({f"{name},none": subtype_accuracy(scored), f"{name}_stderr,none": "N/A",
                        f"{name}_stderr_clt,none": _stderr(scored), f"{name}_stderr_clustered,none": "N/A"})
    accuracy = sum(line["levante_acc"] for line in lines) / ITEMS
    results.update({"levante_item,none": accuracy, "levante_item_stderr,none": "N/A",
                    "levante_item_stderr_clt,none": "N/A", "levante_item_stderr_clustered,none": "N/A"})
    config = {
        "task": task, "test_split": "test", "output_type": "generate_until",
        "doc_to_text": "<function doc_to_text at 0x7f0000000000>",
        "metric_list": [{"metric": n, "aggregation": "mean", "higher_is_better": True} for n in metric_names]
        + [{"metric": "levante_item", "aggregation": "<function records_accuracy at 0x7f0000000001>",
            "higher_is_better": True}]
        + [{"metric": n, "aggregation": "<function subtype_accuracy at 0x7f0000000002>", "higher_is_better": True}
           for n in subtype_names],
        "generation_kwargs": {"max_new_tokens": 128, "do_sample": False, "until": ["\n\n"]},
        "metadata": {"version": task_info(family).version, "levante": {
            "task": family, "seed": 0, "variant": "original",
            "provenance": {**provenance, "task_version": task_info(family).version,
                           "task_source_sha256": source_sha256(task),
                           "dataset_fingerprint": f"{family:x<64}"[:64]}}},
    }
    return results, config, lines


def _group_row(group: str, entries: list[dict]) -> dict:
    """lmms-eval's row of a group over equal-size tasks (weight_by_size: true): per `levante_acc*` and
    `levante_parse_rate` key the size-weighted mean and the pooled stderr ("N/A" when a task has none)."""
    row: dict = {"alias": group}
    keys = {k for e in entries for k in e if k.startswith(("levante_acc", "levante_parse_rate")) and "_stderr" not in k}
    for key in sorted(keys):
        having = [e for e in entries if key in e]
        row[key] = sum(e[key] for e in having) / len(having)
        stderr = key.replace(",", "_stderr,")
        errs, total = [e[stderr] for e in having], ITEMS * len(having)
        row[stderr] = "N/A" if "N/A" in errs else math.sqrt(
            sum((ITEMS - 1) * se**2 * ITEMS for se in errs) / (total - len(having)) / total)
    return row


def write_set(folder: Path, model: int, seed: int, provenance: dict) -> int:
    """One lmms-eval run of model `model` with lmms-eval seed `seed`; returns its number of samples lines."""
    rng = random.Random(model * 1000 + seed)
    date = f"2026010{1 + model % 9}_{seed:06d}"
    out = folder / f"model{model:03d}"
    out.mkdir(parents=True, exist_ok=True)
    results = {"results": {}, "group_subtasks": {}, "configs": {}, "versions": {}, "n-shot": {},
               "higher_is_better": {}, "n-samples": {}}
    lines_total = 0
    for task, family, n_options in TASKS:
        entry, config, lines = _task(task, family, n_options, 0.3 + (0.05 * model) % 0.6, rng, provenance)
        results["results"][task], results["configs"][task] = entry, config
        results["group_subtasks"][task] = []
        results["n-samples"][task] = {"original": ITEMS, "effective": ITEMS}
        with open(out / f"{date}_samples_{task}.jsonl", "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        lines_total += len(lines)
    group = _group_row("levante", [results["results"][task] for task, _, _ in TASKS])
    results["results"]["levante"], results["groups"] = group, {"levante": dict(group)}
    results["group_subtasks"]["levante"] = [task for task, _, _ in TASKS]
    results.update({
        "config": {"model": "bench_model", "model_args": f"pretrained=org/bench-{model},revision={model:040x}",
                   "batch_size": 8, "device": "cuda:0", "limit": None, "offset": 0, "bootstrap_iters": 100000,
                   "gen_kwargs": "", "random_seed": seed, "numpy_seed": 1234, "torch_seed": 1234, "fewshot_seed": 1234},
        "git_hash": None, "lmms_eval_version": "unknown@unknown", "date": date,
        "model_name": f"org/bench-{model}", "model_name_sanitized": f"org__bench-{model}",
        "system_instruction_sha": None, "chat_template_sha": None, "fewshot_as_multiturn": False,
    })
    (out / f"{date}_results.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    return lines_total


def write_data_dir(root: Path) -> Path:
    """A data dir whose dataset.json fingerprints match what the synthetic runs record."""
    for _, family, _ in TASKS:
        folder = root / DATA_VERSION / "datasets" / family
        folder.mkdir(parents=True, exist_ok=True)
        info = {"schema_version": SCHEMA_VERSION, "task": family, "version": DATA_VERSION, "n_items": ITEMS,
                "fingerprint": f"{family:x<64}"[:64]}
        (folder / "dataset.json").write_text(json.dumps(info), encoding="utf-8")
    return root


def run(command: list[str]) -> dict:
    """Run one command in a fresh process: wall and CPU seconds and peak RSS (MB) from its own rusage (wait4)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = process.stderr.read().decode("utf-8", "replace") if process.stderr else ""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return {"wall": time.perf_counter() - start, "cpu": usage.ru_utime + usage.ru_stime,
            "rss_mb": usage.ru_maxrss / 1024, "status": process.returncode, "stderr": stderr.strip()[-600:]}


def bench(n_sets: int, tmp: Path, provenance: dict, data_dir: Path) -> dict:
    runs = tmp / f"sets{n_sets}"
    lines = sum(write_set(runs, i // SEEDS_PER_MODEL, i % SEEDS_PER_MODEL, provenance) for i in range(n_sets))
    cli = [sys.executable, "-m", "levante_tasks"]
    row = {"sets": n_sets, "lines": lines,
           "summarize": run([*cli, "summarize", str(runs), "--out", str(tmp / f"out{n_sets}")]),
           "verify": run([*cli, "verify", str(runs), "--data-dir", str(data_dir)]),
           "both": run([*cli, "summarize", str(runs), "--out", str(tmp / f"both{n_sets}"), "--verify",
                        "--data-dir", str(data_dir)]),
           "library": run([sys.executable, "-c", LIBRARY, str(runs), str(tmp / f"lib{n_sets}"), str(data_dir)]),
           "one_pass": run([sys.executable, "-c", ONE_PASS, str(runs), str(tmp / f"once{n_sets}"), str(data_dir)])}
    for name, title in MEASURED:
        if row[name]["status"] != 0:
            raise SystemExit(f"{title} of {n_sets} sets failed ({row[name]['status']}):\n{row[name]['stderr']}")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, nargs="*", default=[1, 10, 100], help="result-set counts to run")
    parser.add_argument("--tiny", action="store_true", help="1 and 2 result sets")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="write the sets, data dir and outputs into DIR (a new or empty folder) and keep them")
    args = parser.parse_args()
    if args.tiny:
        args.sets = [1, 2]
    provenance = {"lmms_eval": installed_lmms_eval(), "data_version": DATA_VERSION,
                  "levante_tasks_version": "bench", "device_class": "cuda"}
    if args.keep is not None and args.keep.exists() and any(args.keep.iterdir()):
        raise SystemExit(f"--keep {args.keep}: not an empty folder")
    with contextlib.nullcontext(str(args.keep)) if args.keep else \
            tempfile.TemporaryDirectory(prefix="summary-bench-") as tmp_name:
        tmp = Path(tmp_name)
        data_dir = write_data_dir(tmp / "data")
        rows = [bench(n, tmp, provenance, data_dir) for n in args.sets]
    print(f"{'sets':>5} {'lines':>7} | " + " | ".join(f"{title:>22}" for _, title in MEASURED))
    units = f"{'wall s   cpu s  RSS MB':>22}"
    print(f"{'':>13} | " + " | ".join([units] * len(MEASURED)))
    for row in rows:
        cells = [f"{row[name]['wall']:>6.2f}  {row[name]['cpu']:>6.2f}  {row[name]['rss_mb']:>6.0f}"
                 for name, _ in MEASURED]
        print(f"{row['sets']:>5} {row['lines']:>7} | " + " | ".join(f"{c:>22}" for c in cells))
    if len(rows) > 1:
        first, last = rows[0]["both"], rows[-1]["both"]
        per_set = (last["cpu"] - first["cpu"]) / (rows[-1]["sets"] - rows[0]["sets"]) * 1000
        print(f"summarize --verify CPU x{last['cpu'] / first['cpu']:.1f} for x{rows[-1]['sets'] / rows[0]['sets']:.0f} "
              f"result sets: a fixed start-up (imports, heatmap) + {per_set:.0f} ms per result set (linear)")
    last = rows[-1]
    both = last["both"]["cpu"]
    verdict = ("met" if both < GOAL_CPU else "NOT met") if last["sets"] == 100 else "the goal is at 100 sets"
    two = last["summarize"]["cpu"] + last["verify"]["cpu"]
    print(f"goal, {last['sets']} result sets summarized and verified, `summarize --verify` CPU: {both:.2f} s (anchor: "
          f"the goal, under {GOAL_CPU:g} s), ratio {both / GOAL_CPU:.2f} ({verdict}); the library in one pass "
          f"{last['one_pass']['cpu']:.2f} s, ratio {last['one_pass']['cpu'] / GOAL_CPU:.2f}; the two CLI commands "
          f"{two:.2f} s, ratio {two / GOAL_CPU:.2f}; the library calling both {last['library']['cpu']:.2f} s, ratio "
          f"{last['library']['cpu'] / GOAL_CPU:.2f}")


if __name__ == "__main__":
    main()
