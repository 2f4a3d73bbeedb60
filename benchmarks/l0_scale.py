"""L0-Bench's paper config (`configs/upstream/example.yaml`) at a fraction of its size: peak memory and time.

Each step runs in a child process of its own, which reports its peak resident set (ru_maxrss of itself and of
its worker processes, the larger; not their sum):
- generate: `levante-tasks l0 generate` on a copy of example.yaml with generate_limit and sample_bin_limit
  scaled (everything else unchanged; its actions include augment), with `--jobs`;
- load: the `l0_trace_paper` bins (1, 3, 5, 7) as the lmms-eval task loads them (budgets, Arrow file);
- anchor (unless --no-anchor): the in-memory path the project had before streaming: every drawn program, the
  test items, every demonstration pool and every bin's documents held as Python objects, in one process.

    .venv/bin/python benchmarks/l0_scale.py --scale 0.1 --scale 0.333   # docs/l0.md has the measured figures
    .venv/bin/python benchmarks/l0_scale.py --tiny                      # seconds: the test suite runs this
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT / "levante_tasks" / "l0" / "configs" / "upstream" / "example.yaml"
PAPER_BINS = (1, 3, 5, 7)
GOAL_MB = 8 * 1024  # the paper config must run under 8 GiB
TINY_SCALE = 0.0008  # 64 programs: generate_limit's floor in scaled_config


def scaled_config(scale: float, folder: Path) -> tuple[Path, int]:
    """A copy of example.yaml with its two size settings scaled; its path and generate_limit."""
    lines, programs = [], 0
    for line in PAPER.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition(":")
        if key == "generate_limit":
            programs = max(64, round(int(value) * scale))
            line = f"generate_limit: {programs}"
        elif key == "sample_bin_limit":
            line = f"sample_bin_limit: {max(1, round(int(value) * scale))}"
        lines.append(line)
    path = folder / f"example-{scale:g}.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, programs


def peak_mb() -> float:
    """This process's or its waited-for children's peak resident set, the larger, in MB (ru_maxrss is KiB)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


def step_generate(config: Path, out: Path, jobs: int) -> None:
    from levante_tasks.cli import main

    if main(["l0", "generate", "--config", str(config), "--out", str(out), "--jobs", str(jobs)]) != 0:
        raise SystemExit("l0 generate failed")


def step_load(data: Path) -> None:
    from levante_tasks.l0 import task

    for number in PAPER_BINS:
        _, docs = task.bin_docs(str(data), number)
        task.arrow_docs(task.budgeted(docs))


def step_anchor(config_path: Path, scratch: Path) -> None:
    from levante_tasks.l0 import dataset, prompt, store, task, upstream  # task: lmms-eval's imports, as in load
    from levante_tasks.l0.config_file import load_config

    config = load_config(config_path)
    pool = upstream.draw_pool(config, scratch, 1)
    programs = list(pool.rows())  # the old generate held every drawn program
    items = list(upstream.select(pool, config)[0])
    pools, _ = dataset.augment(items, config)
    text = store.jsonl_text(pools)  # the old writers built each file's text whole
    docs = prompt.build_docs(items, pools, config)  # the old task built every bin's documents
    splits = [task.datasets.Dataset.from_list([d for d in docs if d["bin"] == b]) for b in PAPER_BINS]
    del programs, text, splits


def run_step(*args: str) -> dict[str, float]:
    """Run one step in a child process; its seconds and peak MB."""
    done = subprocess.run([sys.executable, __file__, "--step", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"step {args[0]} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(scale: float, jobs: int, anchor: bool, folder: Path) -> None:
    config, programs = scaled_config(scale, folder)
    data = folder / f"data-{scale:g}"
    per_thousand = 1000 / programs
    gen = run_step("generate", str(config), str(data), str(jobs))
    load = run_step("load", str(data))
    print(f"scale {scale:g} ({programs} programs drawn, jobs {jobs}): generate+augment {gen['seconds']:.1f} s "
          f"({gen['seconds'] * per_thousand:.1f} s per 1,000 programs), peak RSS {gen['peak_mb']:.0f} MB "
          f"(8 GiB goal: ratio {gen['peak_mb'] / GOAL_MB:.3f})")
    print(f"scale {scale:g}: load bins {','.join(map(str, PAPER_BINS))} {load['seconds']:.1f} s, "
          f"peak RSS {load['peak_mb']:.0f} MB (8 GiB goal: ratio {load['peak_mb'] / GOAL_MB:.3f})")
    if anchor:
        scratch = folder / f"anchor-{scale:g}"
        scratch.mkdir()
        old = run_step("anchor", str(config), str(scratch))
        streamed = max(gen["peak_mb"], load["peak_mb"])
        print(f"scale {scale:g}: anchor (in-memory path, 1 process) {old['seconds']:.1f} s "
              f"({old['seconds'] * per_thousand:.1f} s per 1,000 programs), peak RSS {old['peak_mb']:.0f} MB; "
              f"streamed/anchor peak ratio {streamed / old['peak_mb']:.2f}, time ratio "
              f"{(gen['seconds'] + load['seconds']) / old['seconds']:.2f}")


def child(args: list[str]) -> None:
    """`--step NAME ARGS...`: run one step here and print its seconds and peak MB as JSON."""
    start = time.perf_counter()
    name, rest = args[0], args[1:]
    if name == "generate":
        step_generate(Path(rest[0]), Path(rest[1]), int(rest[2]))
    elif name == "load":
        step_load(Path(rest[0]))
    else:
        step_anchor(Path(rest[0]), Path(rest[1]))
    print(json.dumps({"seconds": time.perf_counter() - start, "peak_mb": peak_mb()}))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--step":
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help=f"one run at scale {TINY_SCALE} (seconds)")
    parser.add_argument("--scale", type=float, action="append", help="fraction of the paper size (repeatable)")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="worker processes")
    parser.add_argument("--no-anchor", action="store_true", help="skip the in-memory anchor run")
    args = parser.parse_args()
    scales = [TINY_SCALE] if args.tiny else (args.scale or [0.1, 1 / 3])
    print(f"L0 paper-config benchmark; {os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="l0-scale-") as folder:
        for scale in scales:
            measure(scale, args.jobs, not args.no_anchor, Path(folder))


if __name__ == "__main__":
    main()
