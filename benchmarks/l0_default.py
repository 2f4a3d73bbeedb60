"""Benchmark of the default L0 tasks' documents at load time: the shipped programs against drawing them.

A process that loads a default `l0_trace` task (no $LEVANTE_L0_DATA) builds the default dataset once: its 200
programs and their demonstration pools. It reads the programs from `levante_tasks/l0/configs/default_programs.jsonl`
and draws only the pools (`task._default_rows`); the anchor is the path before the file shipped, the one the file
stands for: the programs drawn from `configs/default.yaml` (`dataset.generate`: thousands of programs parsed,
compiled and traced), then the same pools. Each side runs in fresh processes, in turn (shipped, anchor, shipped,
...); the figure is the CPU seconds (user + system) of that step alone, after the imports both sides share, medians
over the rounds, with the ratio shipped / anchor. Both sides must give the same programs and pools (checked on the
first round by a hash of their JSON).

Run: `.venv/bin/python benchmarks/l0_default.py` (about a minute on 2 cores; `--rounds N`); `--tiny` is one round
whose anchor draws 2 programs a bin instead of 50 (the test suite runs it; its hashes differ, so it compares none).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

STEP = """
import hashlib, json, resource, sys
from levante_tasks.l0 import dataset, task
from levante_tasks.l0.config import from_mapping
from levante_tasks.l0.config_file import DEFAULT_CONFIG, load_config
from levante_tasks.yaml_file import read_yaml

side, per_bin = sys.argv[1], int(sys.argv[2])
before = resource.getrusage(resource.RUSAGE_SELF)
if side == "shipped":
    _, items, pools = task._default_rows()
else:
    config = (from_mapping({**read_yaml(DEFAULT_CONFIG), "per_bin": per_bin}) if per_bin
              else load_config(DEFAULT_CONFIG))
    items = list(dataset.generate(config).items)
    pools, _ = dataset.augment(items, config)
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
digest = hashlib.sha256(json.dumps([items, pools]).encode()).hexdigest()
print(json.dumps({"cpu": cpu, "programs": len(items), "sha256": digest}))
"""


def measure(side: str, per_bin: int) -> dict[str, object]:
    """One fresh process building the default documents the `side` way; its figures."""
    done = subprocess.run([sys.executable, "-c", STEP, side, str(per_bin)], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"benchmark: the {side} side failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the two measurements (median)")
    parser.add_argument("--tiny", action="store_true", help="one round, the anchor drawing 2 programs a bin")
    args = parser.parse_args()
    rounds, per_bin = (1, 2) if args.tiny else (args.rounds, 0)
    runs: dict[str, list[dict[str, object]]] = {"shipped": [], "drawn": []}
    for _ in range(rounds):
        for side in runs:
            runs[side].append(measure(side, per_bin))
    shipped, drawn = runs["shipped"][0], runs["drawn"][0]
    if not args.tiny and shipped["sha256"] != drawn["sha256"]:
        sys.exit("benchmark: the shipped programs and the drawn ones differ (python -m levante_tasks.l0.default_data "
                 "rewrites the file)")
    median = {side: statistics.median(float(run["cpu"]) for run in rows) for side, rows in runs.items()}
    ratio = statistics.median(float(s["cpu"]) / float(d["cpu"]) for s, d in zip(*runs.values(), strict=True))
    print(f"default L0 documents (4 bins; {shipped['programs']} programs and their pools), CPU seconds after the "
          f"imports, median of {rounds} round(s)" + (" (tiny: the anchor draws 2 programs a bin)" if args.tiny else
                                                     "; both sides give the same documents"))
    print(f"shipped programs, pools drawn          {median['shipped']:7.3f} s")
    print(f"programs drawn too (anchor)            {median['drawn']:7.3f} s   ({drawn['programs']} programs)")
    print(f"shipped / drawn                        ratio {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
