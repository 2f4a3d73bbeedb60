"""L0 datasets at the paper's scale stay in bounded memory: generate and augment stream to disk, and a task
builds only its own bin's documents (issue 33; benchmarks/l0_scale.py measures the paper config itself)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest
from test_matrix_faults import wait_for

from levante_tasks.cli import main
from levante_tasks.errors import LevanteError
from levante_tasks.l0 import prompt, task
from levante_tasks.l0.workers import ordered_map

CONFIGS = Path(task.__file__).resolve().parent / "configs" / "upstream"
SMALL, LARGE = 40, 160  # programs drawn; every one becomes a test item with its demonstrations
# What the spool's bookkeeping may hold per program (id, bin key, offset): measured 0.9-1.25 kB after the warm-up
# (without it, what earlier tests left imported moved one loaded run to 1.7 kB); a generate that held its programs in
# memory costs ~20 kB each
MAX_BYTES_PER_PROGRAM = 2500
WARM_UP = 8  # programs of a first, unmeasured generate: lazy imports and caches filled before both measures
WORKERS = 4  # L0-Bench workers (seeds); a small grammar makes later workers redraw programs earlier ones hold


def easy_config(folder: Path, programs: int) -> Path:
    """L0-Bench's example_easy with `programs` draws, all kept as test items, 4 demonstrations each, 1 process,
    its grammar and a shorter minimum (fast draws)."""
    text = (CONFIGS / "example_easy.yaml").read_text(encoding="utf-8")
    grammar = next(line for line in text.splitlines() if line.startswith("overwritten_grammar:"))
    for old, new in (("generate_limit: 2000", f"generate_limit: {programs}"), (grammar, ""),
                     ("min_code_lines: 10", "min_code_lines: 4"),
                     ("sample_bin_limit: 500", "sample_bin_limit: 100000"),
                     ("num_aug_inputs_per_program: 32", "num_aug_inputs_per_program: 4"),
                     ("num_processes: 32", "num_processes: 1")):
        assert old in text
        text = text.replace(old, new)
    path = folder / f"easy-{programs}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def generate_peak(folder: Path, programs: int) -> int:
    """Peak bytes Python allocated while `l0 generate` (with its augment action) made the dataset."""
    config = easy_config(folder, programs)
    tracemalloc.start()
    try:
        assert main(["l0", "generate", "--config", str(config), "--out", str(folder / f"data-{programs}")]) == 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, int]:
    """The folder holding both datasets (`data-<programs>`), and the peaks of making each."""
    folder = tmp_path_factory.mktemp("l0mem")
    generate_peak(folder, WARM_UP)
    return folder, generate_peak(folder, SMALL), generate_peak(folder, LARGE)


def test_generate_and_augment_memory_does_not_grow_with_the_programs(generated: tuple[Path, int, int]) -> None:
    _, small, large = generated  # held in memory, 4x the programs cost ~20 kB more per program
    assert large - small < (LARGE - SMALL) * MAX_BYTES_PER_PROGRAM, (small, large)


def test_a_task_renders_only_its_own_bins_documents(generated: tuple[Path, int, int],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    rendered = []
    real = prompt.render_prompt
    monkeypatch.setattr(prompt, "render_prompt", lambda *args: rendered.append(1) or real(*args))
    monkeypatch.setenv(task.DATA_ENV, str(generated[0] / f"data-{SMALL}"))
    docs = task.load_bin_docs(2)
    assert docs and {doc["bin"] for doc in docs} == {2} and len(rendered) == len(docs)


def test_worker_processes_give_the_same_bytes(tmp_path: Path) -> None:
    config = tmp_path / "easy.yaml"  # L0-Bench's own easy grammar: few distinct programs
    text = (CONFIGS / "example_easy.yaml").read_text(encoding="utf-8")
    for old, new in (("generate_limit: 2000", "generate_limit: 200"), ("sample_bin_limit: 500", "sample_bin_limit: 20"),
                     ("num_aug_inputs_per_program: 32", "num_aug_inputs_per_program: 4"),
                     ("num_processes: 32", f"num_processes: {WORKERS}")):
        text = text.replace(old, new)
    config.write_text(text, encoding="utf-8")
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs-{jobs}"
        assert main(["l0", "generate", "--config", str(config), "--out", str(out), "--jobs", jobs]) == 0
        outputs.append([(out / name).read_bytes() for name in ("programs.jsonl", "fewshots.jsonl")])
    assert outputs[0] == outputs[1]


def test_a_worker_left_short_by_earlier_workers_draws_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from levante_tasks.l0 import upstream
    from levante_tasks.l0.config_file import load_config

    one, half = load_config(easy_config(tmp_path, SMALL)), load_config(easy_config(tmp_path, SMALL // 2))
    path = easy_config(tmp_path, SMALL)
    path.write_text(path.read_text(encoding="utf-8").replace("num_processes: 1", "num_processes: 2"), encoding="utf-8")
    two = load_config(path)
    for name in ("one", "half", "two"):
        (tmp_path / name).mkdir()
    single = upstream.draw_pool(one, tmp_path / "one")
    expected = [row["id"] for row in single.rows()]
    first_share = upstream.draw_pool(half, tmp_path / "half").stats["attempts"]
    real = upstream.UpstreamSampler
    monkeypatch.setattr(upstream, "UpstreamSampler", lambda settings, seed: real(settings, one.seed))
    # both workers draw worker 0's stream: every program of worker 1's own share repeats one of worker 0's, so
    # it draws on from where its log ended, which makes the pool a single worker's, after redrawing the first share
    pool = upstream.draw_pool(two, tmp_path / "two")
    assert [row["id"] for row in pool.rows()] == expected
    assert pool.stats["attempts"] == first_share + single.stats["attempts"]


def children(pid: int) -> list[int]:
    """The pids of `pid`'s child processes (Linux /proc)."""
    return [int(child) for listing in Path(f"/proc/{pid}/task").glob("*/children")
            for child in listing.read_text(encoding="utf-8").split()]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the worker processes through Linux /proc")
def test_a_killed_worker_ends_generate_with_one_line_and_keeps_the_earlier_output(tmp_path: Path) -> None:
    out = tmp_path / "data"
    assert main(["l0", "generate", "--config", str(easy_config(tmp_path, SMALL)), "--out", str(out)]) == 0
    earlier = {path.name: path.read_bytes() for path in out.iterdir()}
    config = tmp_path / "long.yaml"  # L0-Bench's example_easy as shipped, in 2 workers: each draws for seconds
    config.write_text((CONFIGS / "example_easy.yaml").read_text(encoding="utf-8")
                      .replace("num_processes: 32", "num_processes: 2"), encoding="utf-8")
    command = subprocess.Popen([sys.executable, "-m", "levante_tasks", "l0", "generate", "--config", str(config),
                                "--out", str(out), "--jobs", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        wait_for(lambda: len(children(command.pid)) == 2 or command.poll() is not None, "2 worker processes")
        os.kill(children(command.pid)[0], signal.SIGKILL)
        _, stderr = command.communicate(timeout=120)  # a lost task used to leave it waiting forever
    finally:
        command.kill()
        command.wait()
    assert command.returncode != 0
    assert stderr.splitlines() == ["levante-tasks: error: l0 generate: a worker process died (killed, e.g. out of "
                                   "memory); nothing was written"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data", "easy-40.yaml", "long.yaml"]
    assert {path.name: path.read_bytes() for path in out.iterdir()} == earlier


def sleep_or_refuse(seconds: float) -> float:
    """`seconds` after sleeping that long; a negative number is refused at once (a worker's one-line error)."""
    if seconds < 0:
        raise LevanteError("refused")
    time.sleep(seconds)
    return seconds


def test_worker_results_come_in_order_and_an_error_stops_the_other_workers() -> None:
    outcome: list[object] = []

    def run_both() -> None:
        with ordered_map(2) as run:
            outcome.append(list(run(sleep_or_refuse, [0.3, 0, 0.1, 0])))
            try:
                list(run(sleep_or_refuse, [600, -1]))  # the refusal must not wait for the 600 s task
            except LevanteError as exc:
                outcome.append(str(exc))

    thread = threading.Thread(target=run_both, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "the other worker finished its task instead of being stopped"
    assert outcome == [[0.3, 0, 0.1, 0], "refused"]


def test_a_worker_killed_while_idle_ends_the_next_map_with_worker_died() -> None:
    earlier = set(children(os.getpid()))  # e.g. a test server an earlier test of this process started
    with ordered_map(2) as run:
        assert list(run(sleep_or_refuse, [0, 0])) == [0, 0]
        idle_workers = [pid for pid in children(os.getpid()) if pid not in earlier]
        assert len(idle_workers) == 2
        os.kill(idle_workers[0], signal.SIGKILL)
        wait_for(lambda: idle_workers[0] not in children(os.getpid()) or _is_zombie(idle_workers[0]),
                 "the worker's death")
        with pytest.raises(LevanteError, match="a worker process died"):  # not a BrokenPipeError on sending
            list(run(sleep_or_refuse, [0, 0, 0, 0]))


def _is_zombie(pid: int) -> bool:
    """Whether `pid` has died and waits to be reaped (Linux /proc)."""
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0] == "Z"
