"""Every benchmark under benchmarks/ runs at HEAD at its `--tiny` size and prints its figures, so none can rot.

Each `benchmarks/*.py --tiny` (found by glob: a new benchmark is included without editing this file) runs as
`python benchmarks/X.py --tiny` does, in a fork of a server that imported torch, transformers and lmms-eval once, not
once per script (`lmms_fork.run_cli`, entry `script`); the processes a script starts are new ones, but for the
lmms-eval runs named below.
It must exit 0 and print at least one figure line: a figure with its ratio (`ratio 0.54`, `x2.1`, `3.94x`). The
synthetic release those that run lmms-eval read is the suite's one `demo --prepare-only` (as each would prepare it;
data_helpers.prepared_demo), named to them by $LEVANTE_BENCH_DEMO. Their environment names this process's
fork_stream dispatcher (tests/conftest.py): the benchmarks whose matrices run lmms-eval (matrix, distribution_cost,
gpu) fork those runs from its zygotes at `--tiny` (benchmarks/matrix.py `lmms_module`), and so does gpu its measured
lmms-eval process (`script_command`), so lmms-eval is imported once, not once per run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from data_helpers import prepared_demo

from levante_tasks.testing.lmms_fork import run_cli

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = sorted((ROOT / "benchmarks").glob("*.py"))
RATIO = re.compile(r"\bratio\b[^\n]*?\d|\bx\d+(\.\d+)?\b|\b\d+(\.\d+)?x\b")
TIMEOUT_S = 600  # a loaded 2-core machine; --tiny takes seconds to a few tens of seconds


def printed_figures(output: str) -> list[str]:
    """The lines of a benchmark's output that state a figure with its ratio."""
    return [line for line in output.splitlines() if RATIO.search(line)]


def test_figure_lines_are_recognised_and_other_lines_are_not() -> None:
    assert printed_figures("goal, CPU 2.72 s (anchor 5 s), ratio 0.54\nload average 8.98\n  ratio: 3.94x fewer") == [
        "goal, CPU 2.72 s (anchor 5 s), ratio 0.54", "  ratio: 3.94x fewer"]
    assert printed_figures("1 -> 2 models x2: time x0.96") and not printed_figures("matrix benchmark; 2 CPU(s)")


def test_there_are_benchmarks() -> None:
    assert len(BENCHMARKS) >= 6, [path.name for path in BENCHMARKS]


def child_env(**extra: str) -> dict[str, str]:
    """This environment with this tree first on PYTHONPATH, plus `extra`."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            **extra}


@pytest.fixture(scope="module")
def shared_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One `demo --prepare-only` folder for every benchmark of this module (each reads it, none writes it): the
    suite's one (data_helpers.prepared_demo)."""
    return prepared_demo(tmp_path_factory)


@pytest.mark.parametrize("script", BENCHMARKS, ids=[path.stem for path in BENCHMARKS])
def test_benchmark_runs_at_its_tiny_size_and_prints_figures(script: Path, tmp_path: Path, shared_demo: Path) -> None:
    env = child_env(TMPDIR=str(tmp_path), LEVANTE_BENCH_DEMO=str(shared_demo))
    done = run_cli([str(script), "--tiny"], entry="script", cwd=tmp_path, env=env, timeout=TIMEOUT_S)
    assert done.returncode == 0, f"{script.name} --tiny exited {done.returncode}:\n{done.stderr[-3000:]}"
    assert printed_figures(done.stdout), f"{script.name} --tiny printed no figure with a ratio:\n{done.stdout[-3000:]}"
