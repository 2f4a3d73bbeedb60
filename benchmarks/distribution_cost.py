"""Benchmark of the matrix's distribution mode: what K replicate orders (x temperature samples) cost a chat model.

lmms-eval's own `openai` class against the local fake OpenAI-compatible server (levante_tasks.testing.fake_openai,
which answers at once: the figures are the harness's and the runner's, not an API's latency), on the synthetic
release's `levante_trog` (4 options), one model per matrix, each matrix a fresh `levante-tasks matrix` process:
1. requests per item: the server's request count / items, for the anchor (no `distribution:`, seed 0: K = 1),
   `distribution: {orders: 4}`, `{orders: 8}` and `{orders: 8, samples: 2, temperature: 0.7}` (expected K x
   samples);
2. wall time per item: the cells' own seconds (their lmms-eval runs, from matrix.json) / items, and per request;
3. the share of the matrix's wall time the replicates take: 1 - T(K = 1) / T(K), the whole run (cells, summary,
   comparison-free end step) against the anchor.
A model's cells run in one lmms-eval process (one start-up), so replicates add requests, not start-ups; against a
real API each request adds its latency, and the share tends to (K x samples - 1) / (K x samples).
Run: `.venv/bin/python benchmarks/distribution_cost.py` (about 6 minutes on 2 cores); `--tiny`: 2 items, the
anchor and K = 2 x 2 samples only (about 2 minutes: each matrix costs its lmms-eval start-up and end step); under the
test suite's fork_stream dispatcher their lmms-eval runs are forked (`matrix.lmms_module`: no start-up per run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from matrix import lmms_module, prepared_demo

CLI = [sys.executable, "-m", "levante_tasks"]
TASK = "levante_trog"
SIZES = {"full": {"items": 16, "orders": (4, 8), "sampled": 8},  # sampled: K of the 2-samples case
         "tiny": {"items": 2, "orders": (), "sampled": 2}}


def run_matrix(folder: Path, data: Path, url: str, items: int, distribution: dict[str, Any] | None,
               module: str) -> float:
    """One matrix of the openai class on TASK, its lmms-eval runs by `module`; returns its wall seconds (it must
    succeed)."""
    model: dict[str, Any] = {"name": "api", "model": "openai",
                             "model_args": f"model_version=fake-gpt,base_url={url},api_key=fake,max_retries=1"}
    if distribution:
        model["distribution"] = distribution
    config = {"data": {"dir": str(data), "version": "synthetic"}, "models": [model], "tasks": [TASK],
              "limit": items, "env": {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}, "lmms_eval_module": module}
    folder.mkdir(parents=True)
    (folder / "matrix.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    start = time.perf_counter()
    done = subprocess.run([*CLI, "matrix", "--config", "matrix.yaml", "--out", "out"], cwd=folder,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"matrix in {folder.name} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def cell_seconds(out: Path) -> float:
    """The cells' own seconds (their lmms-eval runs), from matrix.json."""
    return sum(json.loads((out / "matrix.json").read_text(encoding="utf-8"))["timing"]["cell_seconds"].values())


def count_lines(path: Path) -> int:
    """Requests the server has logged so far."""
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="2 items, K = 2 x 2 samples (the test suite's run)")
    tiny = parser.parse_args().tiny
    size, module = SIZES["tiny" if tiny else "full"], lmms_module("lmms_eval", tiny)
    items = size["items"]
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from levante_tasks.testing.fake_openai import serve

    with tempfile.TemporaryDirectory(prefix="distribution-bench-") as name:
        tmp = Path(name)
        data, log = prepared_demo(tmp), tmp / "server.jsonl"
        print(f"distribution-mode cost benchmark; {os.cpu_count()} CPU(s); openai class on the local fake server, "
              f"{TASK}, {items} items, one fresh matrix process each")
        cases: dict[str, dict[str, Any] | None] = {"anchor (K = 1)": None}
        cases.update({f"orders: {k}": {"orders": k} for k in size["orders"]})
        cases[f"orders: {size['sampled']}, samples: 2"] = {"orders": size["sampled"], "samples": 2, "temperature": 0.7}
        rows = []
        with serve(log) as url:
            for index, (label, distribution) in enumerate(cases.items()):
                before = count_lines(log)
                wall = run_matrix(tmp / f"m{index}", data, url, items, distribution, module)
                requests = count_lines(log) - before
                rows.append((label, requests / items, wall, cell_seconds(tmp / f"m{index}" / "out")))
        anchor_wall, anchor_cells = rows[0][2], rows[0][3]
        print("\n1. requests per item (K x samples)")
        for label, per_item, _, _ in rows:
            print(f"{label:<28} {per_item:5.1f} requests per item (ratio {per_item / rows[0][1]:.1f}x the anchor)")
        print("\n2. wall time per item (the cells' own lmms-eval seconds / items; the anchor's include the one "
              "lmms-eval start-up; added: per request beyond the anchor's one)")
        for label, per_item, _, cells in rows:
            added = (f", added {(cells - anchor_cells) / (items * (per_item - 1)):.3f} s per further request"
                     if per_item > 1 else "")
            print(f"{label:<28} {cells / items:6.3f} s per item (ratio {cells / anchor_cells:.2f}x the anchor's)"
                  f"{added}")
        print("\n3. share of the matrix's wall time the replicates take: 1 - T(anchor) / T")
        for label, _, wall, _ in rows[1:]:
            print(f"{label:<28} matrix {wall:6.1f} s vs anchor {anchor_wall:6.1f} s: x{wall / anchor_wall:.2f}, "
                  f"replicates' share {1 - anchor_wall / wall:.0%}")


if __name__ == "__main__":
    main()
