"""GPU benchmark of `levante_vlm_mc` against lmms-eval's own class for the same architecture, and the matrix's loads.

For each architecture, a random-init checkpoint of the real class and shapes (built offline by
`levante_tasks.testing.tiny_models`: SmolVLM-256M = Idefics3, 256M parameters; Qwen2-VL-2B, 2.2B; bfloat16 weights, as
published) runs the LEVANTE tasks of the synthetic release through the real lmms-eval CLI, all runs in one process
(lmms-eval's `--config` list of runs; each run loads its model):
- ours: `levante_vlm_mc` on the `_mc` variants (one forward pass per item) at each `--batches` size;
- anchor: lmms-eval's own class for the architecture (`huggingface` for SmolVLM, `qwen2_vl` for Qwen2-VL) at the
  same sizes. Neither class scores options (no loglikelihood: docs/compatibility.md), so it runs the generation
  variants with `max_new_tokens=2` (a letter and its end token: what a trained model spends; random weights never
  stop early).
Printed per run: items/s of the evaluation (after the model load: `load s`, the first run's with the start-up),
peak memory of the run (GPU: weights + torch.cuda.max_memory_allocated above what was allocated when the run began;
CPU: the process's peak RSS) and our ratio to the anchor at the same batch size. Then a small matrix (one model x
2 tasks x 2 seeds of `levante_vlm_mc`; `--tiny`: 1 task x 1 seed): its model loads, from matrix.json's `model_loads`
when it has one, else one per lmms-eval process in the cell logs, against its cell count (one load per cell); at
`--tiny` under the test suite's fork_stream dispatcher its lmms-eval run is forked (`matrix.lmms_module`), and so is
the process that measures the runs above (`matrix.script_command`).

Run (GPU, the figures to quote; about 5 minutes on one H100): `.venv/bin/python benchmarks/gpu.py --full --device
cuda --out gpu-bench`. `--tiny`: tiny shapes on CPU at batch 2 (the batched path; the suite's smoke run,
under a minute).
`--full` on CPU proves the real shapes load (add `--limit 1`). `--work DIR` keeps checkpoints and data for a rerun.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import yaml
from matrix import TASKS, lmms_module, prepared_demo, script_command, timed

from levante_tasks.matrix.plan import NO_PROGRESS_BARS
from levante_tasks.testing.tiny_models import build_tiny_qwen_vl, build_tiny_vlm

GEN_KWARGS = "max_new_tokens=2"
DTYPE = "bfloat16"


@dataclass(frozen=True)
class Arch:
    """One architecture: its checkpoint builder (real or tiny shapes) and lmms-eval's own class for it."""

    name: str
    build: Callable[[Path, bool], Path]
    anchor: str
    force_simple: bool = False
    tiny_anchor_args: str = ""


ARCHS = (
    Arch("SmolVLM-256M", lambda out, full: build_tiny_vlm(out, "smolvlm-256m" if full else "tiny",
                                                          dtype=torch.bfloat16), "huggingface"),
    # tiny: upstream's default min_pixels (256 x 28 x 28) would blow the pictures up past the tiny model's range
    Arch("Qwen2-VL-2B", lambda out, full: build_tiny_qwen_vl(out, "qwen2_vl", size="qwen2-vl-2b" if full else "tiny",
                                                             dtype=torch.bfloat16),
         "qwen2_vl", force_simple=True, tiny_anchor_args="min_pixels=3136,max_pixels=12544"),
)


def checkpoint(arch: Arch, work: Path, full: bool) -> Path:
    """The architecture's checkpoint under `work`, built on first use (a rerun with the same --work reuses it; a
    build cut short is never taken for one: it is renamed into place when complete)."""
    folder = work / f"{arch.name}-{'full' if full else 'tiny'}"
    if not folder.is_dir():
        partial = work / f"{folder.name}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        arch.build(partial, full).rename(folder)
    return folder


def lmms_env(data: Path) -> dict[str, str]:
    """The environment of an offline lmms-eval run on the prepared data, progress bars off as the matrix has its
    cells (so that at `--tiny` the measured process shares the cells' zygote)."""
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", **NO_PROGRESS_BARS}
    env.pop("LEVANTE_DATA_VERSION", None)
    return env


def arch_runs(arch: Arch, path: Path, args: argparse.Namespace, out: Path) -> list[dict[str, Any]]:
    """lmms-eval's run list: ours on the `_mc` variants, then the anchor class on the generation variants, at each
    batch size (labels ride along in `_label`, stripped before lmms-eval sees them)."""
    device_map = "cpu" if args.device == "cpu" else "cuda:0"
    anchor_args = ",".join(filter(None, [f"pretrained={path}", f"device_map={device_map}",
                                         "" if args.full else arch.tiny_anchor_args]))
    common = {"limit": args.limit, "device": args.device, "verbosity": "WARNING"}
    runs = []
    for size in args.batches:
        runs.append({**common, "_label": "levante_vlm_mc", "model": "levante_vlm_mc", "batch_size": size,
                     "model_args": f"pretrained={path},dtype={DTYPE}", "tasks": ",".join(f"{t}_mc" for t in args.tasks),
                     "output_path": str(out / f"ours-{size}")})
        runs.append({**common, "_label": arch.anchor, "model": arch.anchor, "batch_size": size,
                     "model_args": anchor_args, "tasks": ",".join(args.tasks), "gen_kwargs": GEN_KWARGS,
                     "force_simple": arch.force_simple, "output_path": str(out / f"anchor-{size}")})
    return runs


def run_all(archs: list[Arch], paths: dict[str, Path], data: Path, args: argparse.Namespace,
            out: Path) -> dict[str, list[dict[str, Any]]]:
    """Every run of every architecture in ONE lmms-eval process (one start-up), measured in it (`--measure`): one
    figure set per run, by architecture."""
    runs = [(arch, run) for arch in archs for run in arch_runs(arch, paths[arch.name], args, out / arch.name)]
    out.mkdir(parents=True, exist_ok=True)
    config, stats = out / "runs.yaml", out / "stats.jsonl"
    config.write_text(json.dumps([{k: v for k, v in r.items() if k != "_label"} for _, r in runs], indent=1),
                      encoding="utf-8")  # JSON is YAML
    stats.unlink(missing_ok=True)
    command = [*script_command(Path(__file__), args.tiny), "--device", args.device, "--measure", str(stats), "--",
               "--config", str(config)]
    done = subprocess.run(command, env=lmms_env(data), cwd=out, capture_output=True, text=True)
    figures = [json.loads(line) for line in stats.read_text(encoding="utf-8").splitlines()] if stats.exists() else []
    if done.returncode != 0 or len(figures) != len(runs):
        raise SystemExit(f"lmms-eval: {len(figures)} of {len(runs)} runs measured, exit {done.returncode}\n"
                         f"{done.stderr[-3000:]}")
    by_arch: dict[str, list[dict[str, Any]]] = {arch.name: [] for arch in archs}
    for (arch, run), figure in zip(runs, figures, strict=True):
        by_arch[arch.name].append({"run": run["_label"], "batch_size": run["batch_size"], **figure})
    return by_arch


def print_arch(arch: Arch, figures: list[dict[str, Any]], full: bool, device: str) -> None:
    """Items/s and peak memory per run, ours against the anchor class at the same batch size."""
    memory = "peak GPU MiB" if device != "cpu" else "peak RSS MiB"
    print(f"\n{arch.name} [{'real size' if full else 'tiny'}, random-init, {DTYPE}, {device}, "
          f"{figures[0]['items']} items per run]; anchor: lmms-eval's `{arch.anchor}` (generation variants, "
          f"{GEN_KWARGS})")
    print(f"  {'run':<16} {'batch':>5} {'items/s':>9} {memory:>13} {'load s':>7} {'items/s vs anchor':>18} "
          f"{'memory vs anchor':>17}")
    anchors = {f["batch_size"]: f for f in figures if f["run"] == arch.anchor}
    for f in figures:
        anchor = anchors[f["batch_size"]]
        ratio = f"{f['items_per_s'] / anchor['items_per_s']:.2f}x" if f is not anchor else "(anchor)"
        mem_ratio = f"{f['peak_mib'] / anchor['peak_mib']:.2f}x" if f is not anchor else "(anchor)"
        print(f"  {f['run']:<16} {f['batch_size']:>5} {f['items_per_s']:>9.2f} {f['peak_mib']:>13.0f} "
              f"{f['before_s']:>7.1f} {ratio:>18} {mem_ratio:>17}")


def matrix_loads(path: Path, data: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Run a 1-model x (up to) 2-task x 2-seed matrix of `levante_vlm_mc` (`--tiny`: 1 seed, the least that runs
    the matrix); its model loads against its cells."""
    tasks, seeds = [f"{t}_mc" for t in args.tasks[:2]], [0] if args.tiny else [0, 1]
    config = {"data": {"dir": str(data), "version": "synthetic"},
              "env": {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
              "models": [{"name": "vlm", "model": "levante_vlm_mc", "model_args": f"pretrained={path},dtype={DTYPE}"}],
              "tasks": tasks, "seeds": seeds, "limit": args.limit or 8, "batch_sizes": [max(args.batches)],
              "device": args.device}
    config["lmms_eval_module"] = lmms_module("lmms_eval", args.tiny)  # the config's default unless forked
    out.mkdir(parents=True, exist_ok=True)
    (out / "matrix.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    wall, cpu = timed([sys.executable, "-m", "levante_tasks", "matrix", "--config", "matrix.yaml", "--out", "m"], out)
    document = json.loads((out / "m" / "matrix.json").read_text(encoding="utf-8"))
    loads = document["model_loads"]["total"]
    cells = len(tasks) * len(seeds)
    print(f"\nmatrix [1 model x {len(tasks)} tasks x {len(seeds)} seeds = {cells} cells, limit {config['limit']}]: "
          f"{loads} model loads (matrix.json); anchor one load per cell = {cells}: {cells / loads:.2f}x fewer loads; "
          f"wall {wall:.1f} s, CPU {cpu:.1f} s")
    return {"cells": cells, "model_loads": loads, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


def _reset_peak_rss() -> None:
    """Start a new peak-RSS window (Linux: VmHWM := VmRSS); a no-op elsewhere (the peak is then the process's)."""
    try:
        Path("/proc/self/clear_refs").write_text("5", encoding="ascii")
    except OSError:
        pass


def _peak_rss_bytes() -> int:
    """The process's peak RSS since the last reset (VmHWM), else since it started (ru_maxrss)."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _weights_bytes(lm: Any) -> int:
    """Bytes of the run's model parameters and buffers (the module behind an lmms-eval model class)."""
    module = next((m for m in (getattr(lm, "model", None), getattr(lm, "_model", None))
                   if isinstance(m, torch.nn.Module)), None)
    if module is None:
        return 0
    tensors = [*module.parameters(), *module.buffers()]
    return sum(t.numel() * t.element_size() for t in {id(t): t for t in tensors}.values())


def measure(stats: Path, device: str, lmms_args: list[str]) -> None:
    """In the lmms-eval process: time each run's evaluation (after its model load) and its peak memory, one JSON
    line per run in `stats`, then run lmms-eval's CLI unchanged."""
    import lmms_eval.evaluator as evaluator
    from lmms_eval.__main__ import cli_evaluate

    inner, cuda = evaluator.evaluate, device != "cpu"
    last_end = [time.perf_counter()]  # the start-up, or the previous run's end: before_s is this run's load

    def evaluate(lm: Any, *args: Any, **kwargs: Any) -> Any:
        gc.collect()  # the previous run's model, if nothing holds it
        weights = _weights_bytes(lm)
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            start_bytes = torch.cuda.memory_allocated()
        else:
            _reset_peak_rss()
        before_s = time.perf_counter() - last_end[0]
        wall, cpu = time.perf_counter(), time.process_time()
        result = inner(lm, *args, **kwargs)
        if cuda:
            torch.cuda.synchronize()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        peak = (torch.cuda.max_memory_allocated() - start_bytes + weights) if cuda else _peak_rss_bytes()
        items = sum(n["effective"] for n in (result or {}).get("n-samples", {}).values())
        line = {"items": items, "seconds": round(wall, 3), "cpu_s": round(cpu, 3),
                "items_per_s": round(items / wall, 4), "peak_mib": round(peak / 2**20, 1),
                "weights_mib": round(weights / 2**20, 1), "before_s": round(before_s, 1)}
        with stats.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")
        last_end[0] = time.perf_counter()
        return result

    evaluator.evaluate = evaluate
    sys.argv = ["lmms_eval", *lmms_args]
    cli_evaluate()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--tiny", action="store_true",
                      help="tiny shapes, batch 2, 1 task, limit 2, 1 matrix seed (CPU smoke)")
    size.add_argument("--full", action="store_true", help="real sizes (SmolVLM-256M, Qwen2-VL-2B)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--batches", help="batch sizes, comma-separated (default: 1,8,32; --tiny: 2)")
    parser.add_argument("--limit", type=int, help="items per task (default: all; --tiny: 2)")
    parser.add_argument("--tasks", help=f"LEVANTE tasks, comma-separated (default: all {len(TASKS)}; --tiny: 1)")
    parser.add_argument("--archs", help=f"architectures (default: {','.join(a.name for a in ARCHS)})")
    parser.add_argument("--no-matrix", action="store_true", help="skip the matrix's model loads")
    parser.add_argument("--work", type=Path, help="keep checkpoints and data here for reruns (default: a temp folder)")
    parser.add_argument("--out", type=Path, help="write the figures to OUT/gpu.json")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("lmms_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.tiny and args.device != "cpu":
        parser.error("--tiny runs on cpu")
    args.batches = [int(b) for b in (args.batches or ("2" if args.tiny else "1,8,32")).split(",")]
    args.tasks = args.tasks.split(",") if args.tasks else TASKS[:1] if args.tiny else TASKS
    args.limit = args.limit or (2 if args.tiny else None)
    names = args.archs.split(",") if args.archs else [a.name for a in ARCHS]
    unknown = sorted(set(names) - {a.name for a in ARCHS})
    if unknown:
        parser.error(f"unknown architecture(s): {', '.join(unknown)}")
    args.archs = [a for a in ARCHS if a.name in names]
    return args


def device_line(device: str) -> str:
    """What ran the benchmark: the GPU's name or the CPU count, torch's version."""
    what = torch.cuda.get_device_name(0) if device != "cpu" else f"{os.cpu_count()} CPU(s), {platform.machine()}"
    return f"{what}; torch {torch.__version__}"


def main() -> None:
    args = parse_args()
    if args.measure:
        measure(args.measure, args.device, [a for a in args.lmms_args if a != "--"])
        return
    if args.device != "cpu" and not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device}: no CUDA device visible to torch")
    report: dict[str, Any] = {"device": device_line(args.device), "full": args.full, "batches": args.batches,
                              "tasks": args.tasks, "limit": args.limit, "architectures": {}}
    print(f"levante_vlm_mc vs lmms-eval's own classes; {report['device']}")
    with tempfile.TemporaryDirectory(prefix="gpu-bench-") as tmp:
        work = (args.work or Path(tmp)).absolute()
        work.mkdir(parents=True, exist_ok=True)
        data = prepared_demo(work)
        start = time.perf_counter()
        paths = {arch.name: checkpoint(arch, work, args.full) for arch in args.archs}
        report["build_s"] = round(time.perf_counter() - start, 1)
        for arch, figures in zip(args.archs, run_all(args.archs, paths, data, args, Path(tmp) / "runs").values(),
                                 strict=True):
            print_arch(arch, figures, args.full, args.device)
            report["architectures"][arch.name] = {"anchor": arch.anchor, "runs": figures}
        if not args.no_matrix:
            report["matrix"] = matrix_loads(paths[args.archs[0].name], data, args, Path(tmp) / "matrix")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gpu.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
