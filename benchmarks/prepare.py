"""Benchmark of a first `levante-tasks prepare` (empty data dir) against its decode floor. Goal: floor / prepare >= 0.8.

The decode floor is the wall time of a bare script that imports only Pillow and opens and fully decodes (`load()`,
Pillow's truncated-image tolerance off: how prepare checks a picture) every picture the prepare run decodes (each
picture an option or a prompt of the manifest may show, once), keeping freed picture buffers for the next decode as
prepare does (without that, each decode maps fresh pages: ~0.4 s more system time, a weaker anchor), on the same
number of cores as prepare
(`--jobs`, default every core this process may use; a process pool when more than one). prepare does that and
more: start-up and imports, mirroring (copy + sha256 of every release file), the items, the parquet files, the
lock. Printed too: the floor on one core, and prepare on one core (`--jobs 1`, as prepare was before it used
every core), and the copy floor: the wall and CPU time of a bare script (standard library only) that creates and
writes each release file prepare mirrors once, in one process as prepare does (creating files does not get faster
over cores). It is no part of the goal's ratio; it shows what the mirror alone costs on this disk (creating a file is
the expensive step: ~0.03 ms of CPU a file on a quiet disk, up to ~1 ms on a busy one), and a ratio row adds its
CPU to the decode floor's. And the import floor: the wall and CPU time of a bare process that imports only pyarrow's
parquet writer (numpy with it), which prepare cannot write its datasets without, loaded as prepare loads it (OpenBLAS
without its worker threads: levante_tasks.blas). The ceiling row is the most the goal's CPU ratio could read for a
prepare that did nothing but decode, create the mirror's files and import the parquet writer: decode floor / (decode
floor + copy floor + import floor), CPU, the copy and import floors less the CPU of a bare interpreter's start and
exit (`python -c pass`, timed in each round too), which the decode floor already holds. A ceiling under 0.8 means
the goal is out of reach on this machine however lean the rest of prepare is.

Each figure is the median of fresh processes run in turn (prepare, prepare on one core, the floor, the floor on one
core, the copy floor, the import floor, a bare start, then again), so a drift of the machine's speed hits all alike;
ratios are taken within each round, then the median. Wall seconds, and CPU seconds (user + system of the process and its
workers: what to compare on a loaded machine). A picture's path is never printed.

Release: the synthetic one (`levante-tasks synth --seed 1`: 7 tasks, ~300 pictures); `--sample DIR` prepares the
real LEVANTE sample instead (`levante-tasks standins` draws its missing pictures: 853 rows, ~1,640 pictures, the
size of a real release). `--tiny`: the synthetic release, one round.
Run: `.venv/bin/python benchmarks/prepare.py --sample ../shared/levante-sample` (about a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from levante_tasks.data.decoding import available_cores
from levante_tasks.data.items import shown_pictures
from levante_tasks.data.manifest import load_manifest
from levante_tasks.data.problems import ProblemLog
from levante_tasks.data.sources import LocalSource
from levante_tasks.data.visuals import VisualIndex
from levante_tasks.schema import layout

CLI = [sys.executable, "-m", "levante_tasks"]
IMPORT_FLOOR = [sys.executable, "-c", "from levante_tasks.blas import loaded_without_workers\n"
                "with loaded_without_workers():\n    import pyarrow.parquet"]  # as prepare loads it
BARE_START = [sys.executable, "-c", "pass"]
SAMPLE_VERSION = "2026-03-24"
FLOOR = """import sys
from concurrent.futures import ProcessPoolExecutor
import multiprocessing
from PIL import Image, ImageFile

ImageFile.LOAD_TRUNCATED_IMAGES = False
Image.core.set_blocks_max(max(Image.core.get_blocks_max(), 8))


def decode(path):
    with open(path, "rb") as handle, Image.open(handle) as image:
        image.load()


paths, jobs = open(sys.argv[1]).read().splitlines(), int(sys.argv[2])
if jobs == 1:
    for path in paths:
        decode(path)
else:
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        list(pool.map(decode, paths, chunksize=max(1, len(paths) // (jobs * 8))))
"""
COPY_FLOOR = """import os, sys

source, out = sys.argv[2], sys.argv[3]
relpaths = open(sys.argv[1]).read().splitlines()
for folder in sorted({os.path.dirname(rel) for rel in relpaths}):
    os.makedirs(os.path.join(out, folder), exist_ok=True)
for rel in relpaths:
    with open(os.path.join(source, rel), "rb", buffering=0) as src:
        data = src.read()
    with open(os.path.join(out, rel), "wb", buffering=0) as dest:
        dest.write(data)
"""


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system of the process and the workers it waited for) of one process, which
    must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"benchmark: `{' '.join(command[1:4])} ...` failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def make_release(work: Path, sample: Path | None) -> tuple[Path, str]:
    """(release base, version): the real sample with stand-ins drawn, or the synthetic release."""
    if sample is not None:
        timed([*CLI, "standins", "--release", str(sample), "--version", SAMPLE_VERSION, "--out", "release"], work)
        return work / "release", SAMPLE_VERSION
    timed([*CLI, "synth", "--out", "synth", "--seed", "1", "--children", "10"], work)
    return work / "synth", "synthetic"


def picture_list(version_root: Path, out: Path) -> int:
    """Write the pictures prepare decodes (absolute paths, one a line) to `out`; returns how many."""
    visuals = VisualIndex(version_root)
    rows = load_manifest(version_root / layout.MANIFEST_FILE, ProblemLog()).rows
    paths = [str(visuals.absolute(rel)) for rel in shown_pictures(visuals, rows)]
    out.write_text("\n".join(paths) + "\n", encoding="utf-8")
    return len(paths)


def release_list(base: Path, version: str, out: Path) -> int:
    """Write the release files prepare mirrors (relative to the version folder, one a line) to `out`; returns how
    many."""
    relpaths = [remote.relpath for remote in LocalSource(base).files(version)]
    out.write_text("\n".join(relpaths) + "\n", encoding="utf-8")
    return len(relpaths)


def median_row(label: str, runs: list[tuple[float, float]]) -> str:
    wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
    return f"{label:<44} wall {wall:7.3f} s   CPU {cpu:7.3f} s"


def ratio_row(label: str, tops: list[tuple[float, float]], bottoms: list[tuple[float, float]]) -> str:
    wall = statistics.median(t[0] / b[0] for t, b in zip(tops, bottoms, strict=True))
    cpu = statistics.median(t[1] / b[1] for t, b in zip(tops, bottoms, strict=True))
    return f"{label:<44} ratio wall {wall:5.2f}   CPU {cpu:5.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=Path, default=None, metavar="DIR",
                        help=f"the real LEVANTE sample (holding {SAMPLE_VERSION}/) instead of the synthetic release")
    parser.add_argument("--jobs", type=int, default=available_cores(), help="cores for prepare and the floor")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the seven measurements (median)")
    parser.add_argument("--tiny", action="store_true", help="synthetic release, one round (a smoke test)")
    args = parser.parse_args()
    sample, rounds = (None, 1) if args.tiny else (args.sample and args.sample.resolve(), args.rounds)
    with tempfile.TemporaryDirectory(prefix="bench-prepare-") as folder:
        work = Path(folder)
        base, version = make_release(work, sample)
        count = picture_list(base / version, work / "pictures.txt")
        files = release_list(base, version, work / "files.txt")
        floor_script, copy_script = work / "floor.py", work / "copy_floor.py"
        floor_script.write_text(FLOOR, encoding="utf-8")
        copy_script.write_text(COPY_FLOOR, encoding="utf-8")
        runs: dict[str, list[tuple[float, float]]] = {"prepare": [], "prepare1": [], "floor": [], "floor1": [],
                                                      "copy": [], "imports": [], "start": []}
        for index in range(rounds):
            for name, jobs in (("prepare", args.jobs), ("prepare1", 1)):
                data = work / f"data-{name}-{index}"
                runs[name].append(timed([*CLI, "prepare", "--release", str(base), "--version", version,
                                         "--data-dir", str(data), "--lenient", "--quiet", "--jobs", str(jobs)], work))
            runs["floor"].append(timed([sys.executable, str(floor_script), "pictures.txt", str(args.jobs)], work))
            runs["floor1"].append(timed([sys.executable, str(floor_script), "pictures.txt", "1"], work))
            runs["copy"].append(timed([sys.executable, str(copy_script), "files.txt", str(base / version),
                                       str(work / f"copy-{index}")], work))
            runs["imports"].append(timed(IMPORT_FLOOR, work))
            runs["start"].append(timed(BARE_START, work))
    release = "the LEVANTE sample with stand-ins" if sample else "the synthetic release"
    print(f"levante-tasks prepare, first run, on {release}: {count} pictures decoded; median of {rounds} round(s); "
          f"{args.jobs} core(s) of {available_cores()} available")
    print(median_row(f"prepare --jobs {args.jobs}", runs["prepare"]))
    print(median_row("prepare --jobs 1 (one core)", runs["prepare1"]))
    print(median_row(f"decode floor, {args.jobs} core(s) (anchor)", runs["floor"]))
    print(median_row("decode floor, one core", runs["floor1"]))
    print(median_row(f"copy floor, one core ({files} files)", runs["copy"]))
    print(median_row("import floor (pyarrow.parquet, numpy)", runs["imports"]))
    print(median_row("bare start (python -c pass)", runs["start"]))
    print(ratio_row(f"floor / prepare, {args.jobs} core(s) (goal >= 0.8)", runs["floor"], runs["prepare"]))
    print(ratio_row("floor / prepare, one core", runs["floor1"], runs["prepare1"]))
    print(ratio_row(f"one-core floor / prepare --jobs {args.jobs}", runs["floor1"], runs["prepare"]))
    print(ratio_row(f"prepare --jobs {args.jobs} / prepare --jobs 1", runs["prepare"], runs["prepare1"]))
    both = statistics.median((f[1] + c[1]) / p[1] for f, c, p in zip(runs["floor"], runs["copy"], runs["prepare"],
                                                                     strict=True))
    print(f"{'(floor + copy floor) / prepare, CPU':<44} ratio CPU {both:5.2f}")
    ceiling = statistics.median(f[1] / (f[1] + c[1] + i[1] - 2 * s[1]) for f, c, i, s in zip(
        runs["floor"], runs["copy"], runs["imports"], runs["start"], strict=True))
    print(f"{'ceiling: floor/(floor+copy+imports-2 starts)':<44} ratio CPU {ceiling:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
