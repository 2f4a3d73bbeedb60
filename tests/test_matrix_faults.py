"""`levante-tasks matrix` under faults, with real concurrent processes: two whole runs, a shard and a single cell
on one --out (a lock: the later one waits, every cell runs once), the same cell twice (refused), SIGTERM and
Ctrl-C (lmms-eval stopped, the cell recorded as interrupted, exit 128 + signal), kill -9 leftovers, a damaged
state (rerun with a note), a full disk, read-only and unreadable folders, bad config input.

lmms-eval runs once for real (the fixed-letter double, limit 4); the other cells use
`levante_tasks.testing.fake_lmms`, which copies that run's files, so these tests need no model."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from faults import cli_command, fill_disk, kill9_when, one_error_line, run_cli, small_tmpfs, tree_snapshot
from matrix_runs import fixed_letter_matrix

from levante_tasks.matrix.config import load_config
from levante_tasks.matrix.plan import plan, plan_sha256
from levante_tasks.matrix.state import process_start

FAKE = "levante_tasks.testing.fake_lmms"
TEMP_NAME = re.compile(r"^\..+\.(\d+\.[^.]+\.part|(staging|old)-\d+\.[^.]+)$")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The prepared synthetic release and the output folder of one real lmms-eval cell of model `levante_fixed`
    letter B (the fake copies it), from the local matrix test_matrix_slurm also reads."""
    return fixed_letter_matrix(tmp_path_factory)


def write_config(folder: Path, template: dict[str, Path], module: str = FAKE,
                 models: list[dict[str, str]] | None = None, **overrides: Any) -> Path:
    """matrix.yaml in `folder`: two fake models (cells 0 and 1) on levante_trog, limit 4."""
    args = f"letter=B,template={template.get('lmms')}"
    config = {"data": {"dir": str(template["data"]), "version": "synthetic"},
              "env": {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}, "lmms_eval_module": module,
              "models": models or [{"name": "a", "model": "levante_fixed", "model_args": args},
                                   {"name": "b", "model": "levante_fixed", "model_args": args}],
              "tasks": ["levante_trog"], "limit": 4, "batch_sizes": [4], **overrides}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "matrix.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


class Fake:
    """The fake lmms-eval's log and gate for one test (environment of the matrix processes, with `more`)."""

    def __init__(self, folder: Path, more: dict[str, str] | None = None) -> None:
        self.log, self.gate = folder / "fake.log", folder / "gate"
        self.env = {"FAKE_LMMS_LOG": str(self.log), "FAKE_LMMS_GATE": str(self.gate), **(more or {})}

    def starts(self) -> list[tuple[int, str]]:
        """(pid, task) of every fake lmms-eval started so far."""
        text = self.log.read_text(encoding="utf-8") if self.log.exists() else ""
        return [(int(pid), task) for pid, task in (line.split() for line in text.splitlines())]

    def open(self) -> None:
        self.gate.touch()


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[Fake]:
    fake = Fake(tmp_path)
    yield fake
    fake.open()  # never leave a gated fake waiting


def start(args: list[Any], fake: Fake, folder: Path, name: str, session: bool = False) -> subprocess.Popen[bytes]:
    """`levante-tasks ARGS` in the background, stdout/stderr to `<name>.out` / `<name>.err` in `folder` (in a
    session of its own, as a terminal's foreground job, when `session`). SIGINT is reset to its default in the
    child: a suite started in the background of a non-interactive shell inherits it ignored, which no terminal
    user's command has."""
    return subprocess.Popen(cli_command(args), cwd=folder, env={**os.environ, **fake.env},
                            stdout=open(folder / f"{name}.out", "wb"), stderr=open(folder / f"{name}.err", "wb"),
                            start_new_session=session, preexec_fn=_default_sigint)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120) -> None:
    """Poll until `condition()`; fail the test naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def states(out: Path) -> dict[str, dict[str, Any]]:
    """Every cell's state by model name."""
    return {p.parent.name.split("__")[0]: json.loads(p.read_text(encoding="utf-8"))
            for p in (out / "cells").glob("*/*/state.json")}


def leftovers(out: Path) -> list[str]:
    """Temp files and staging folders of killed writers anywhere under `out`."""
    return sorted(p.relative_to(out).as_posix() for p in out.rglob(".*") if TEMP_NAME.match(p.name))


def test_concurrent_runs_on_one_out_wait_for_the_lock_and_run_every_cell_once(template: dict[str, Path],
                                                                               tmp_path: Path, fake: Fake) -> None:
    config = write_config(tmp_path, template)
    whole = start(["matrix", "--config", config, "--out", "out"], fake, tmp_path, "whole")
    wait_for(lambda: len(fake.starts()) == 1, "the whole run's first cell")
    second = start(["matrix", "--config", config, "--out", "out", "--resume"], fake, tmp_path, "second")
    cell = start(["matrix", "--config", config, "--out", "out", "--cell", "1"], fake, tmp_path, "cell")
    for name in ("second", "cell"):
        wait_for(lambda name=name: "waiting" in (tmp_path / f"{name}.err").read_text(encoding="utf-8"),
                 f"{name} to wait for the lock")
    fake.open()
    codes = {name: p.wait(120) for name, p in (("whole", whole), ("second", second), ("cell", cell))}
    errors = {name: (tmp_path / f"{name}.err").read_text(encoding="utf-8") for name in codes}
    assert codes == {"whole": 0, "second": 0, "cell": 0}, errors
    assert "whole matrix run is using out (pid" in errors["cell"]
    assert len(fake.starts()) == 2  # each cell ran once, in the whole run
    assert all(s["status"] == "done" and len(s["attempts"]) == 1 for s in states(tmp_path / "out").values())
    assert "kept (finished earlier)" in (tmp_path / "second.out").read_text(encoding="utf-8")
    assert (tmp_path / "out" / "report.md").is_file() and not leftovers(tmp_path / "out")


@pytest.mark.parametrize(("slurm", "where"), [({}, "process {pid}"), (
    {"SLURM_JOB_ID": "42", "SLURM_ARRAY_JOB_ID": "41", "SLURM_ARRAY_TASK_ID": "0"}, "Slurm job 41_0, process {pid}")])
def test_the_same_cell_from_two_processes_runs_once_and_the_second_leaves_it_to_the_first(
        template: dict[str, Path], tmp_path: Path, fake: Fake, slurm: dict[str, str], where: str) -> None:
    config = write_config(tmp_path, template)
    first = start(["matrix", "--config", config, "--out", "out", "--model", "0"], Fake(tmp_path, slurm), tmp_path,
                  "first")  # as a Slurm array task when `slurm` (no scontrol is asked: nothing is interrupted)
    wait_for(lambda: states(tmp_path / "out").get("a", {}).get("status") == "running", "the first process's cell")
    # a duplicate array task: exit 0, not FAILED (an afterok chain would never start), saying where the cell runs
    done = run_cli(["matrix", "--config", config, "--out", "out", "--model", "0"], cwd=tmp_path, env=fake.env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("levante-tasks: error:") == 0 and "running it again" not in done.stdout
    held = f"another matrix process is running it ({where.format(pid=fake.starts()[0][0])}); left to it, not run here"
    assert re.search(rf"^\[1/1\] a__levante_trog__s0__\w+: {re.escape(held)}$", done.stdout, re.MULTILINE), done.stdout
    fake.open()
    assert first.wait(60) == 0 and len(fake.starts()) == 1 and states(tmp_path / "out")["a"]["status"] == "done"
    assert "slurm_job" not in states(tmp_path / "out")["a"]  # only the running state names the job


@pytest.mark.parametrize(("signum", "code", "target"), [
    (signal.SIGTERM, 143, "runner"), (signal.SIGINT, 130, "runner"), (signal.SIGINT, 130, "group"),
    (signal.SIGTERM, 143, "lmms-eval"), (signal.SIGINT, 130, "lmms-eval")])
def test_sigterm_and_sigint_stop_lmms_eval_record_the_cell_and_resume_reruns_it(
        template: dict[str, Path], tmp_path: Path, fake: Fake, signum: int, code: int, target: str) -> None:
    config = write_config(tmp_path, template)
    runner = start(["matrix", "--config", config, "--out", "out"], fake, tmp_path, "run", session=target == "group")
    wait_for(lambda: len(fake.starts()) == 1, "the first cell")
    wait_for(lambda: states(tmp_path / "out").get("a", {}).get("status") == "running", "the running state")
    if target == "group":  # Ctrl-C in a terminal: the whole foreground process group, lmms-eval included
        os.killpg(runner.pid, signum)
    elif target == "runner":  # the runner only, as `kill` does
        runner.send_signal(signum)
    else:  # lmms-eval first: Slurm's preemption signals every process of the step, in no set order
        os.kill(fake.starts()[0][0], signum)
    assert runner.wait(60) == code
    child = fake.starts()[0][0]
    wait_for(lambda: process_start(child) is None, "lmms-eval to be stopped", timeout=30)
    error = one_error_line((tmp_path / "run.err").read_text(encoding="utf-8"))
    assert error == (f"levante-tasks: error: interrupted by {signal.Signals(signum).name}; finished cells are kept, "
                     "rerun with --resume")
    state = states(tmp_path / "out")["a"]
    assert state["status"] == "failed" and state["error"]["reason"] == f"interrupted by {signal.Signals(signum).name}"
    assert not (tmp_path / "out" / state_dir(tmp_path / "out", "a") / "lmms").exists()
    assert not (tmp_path / "out" / "matrix.json").exists()  # no end step after an interrupt
    fake.open()
    done = run_cli(["matrix", "--config", config, "--out", "out", "--resume"], cwd=tmp_path, env=fake.env)
    assert done.returncode == 0, done.stderr
    assert "a__levante_trog__s0__" in done.stdout and "failed earlier; running it again" in done.stdout
    assert len(fake.starts()) == 3 and all(s["status"] == "done" for s in states(tmp_path / "out").values())


def test_a_slurm_time_limit_is_reported_as_such_with_the_setting_to_raise(template: dict[str, Path],
                                                                          tmp_path: Path, fake: Fake) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()  # scontrol as Slurm answers after ending a job at its time limit (tests/test_matrix_slurm.py)
    (bin_dir / "scontrol").write_text('#!/bin/sh\necho "$@" >> "$SCONTROL_LOG"\necho "JobId=42 JobName=m1-a '
                                      'JobState=COMPLETING Reason=TimeLimit Dependency=(null) RunTime=00:01:12 '
                                      'TimeLimit=00:01:00 TimeMin=N/A"\n', encoding="utf-8")
    (bin_dir / "scontrol").chmod(0o755)
    job = Fake(tmp_path, {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "42",
                          "SCONTROL_LOG": str(tmp_path / "scontrol.log")})
    config = write_config(tmp_path, template, slurm={"time": "04:00:00", "models": {"a": {"time": "00:01:00"}}})
    runner = start(["matrix", "--config", config, "--out", "out", "--model", "0"], job, tmp_path, "run")
    wait_for(lambda: states(tmp_path / "out").get("a", {}).get("status") == "running", "the running state")
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(60) == 143
    what, fix = "hit its time limit (00:01:00)", "raise slurm.models.a.time in matrix.yaml, then --submit --resume"
    assert one_error_line((tmp_path / "run.err").read_text(encoding="utf-8")) == (
        f"levante-tasks: error: {what}; finished cells are kept, {fix}")
    state = states(tmp_path / "out")["a"]
    assert state["status"] == "failed" and state["error"]["reason"] == f"{what}; {fix}"
    log = (tmp_path / "out" / state_dir(tmp_path / "out", "a") / "cell.log").read_text(encoding="utf-8")
    assert log.endswith(f"=== batch size 4: {what}; {fix} ===")
    assert (tmp_path / "scontrol.log").read_text(encoding="utf-8") == "-o show job 42\n"  # once, for its own job


def state_dir(out: Path, model: str) -> str:
    """The folder of a model's cell relative to `out`."""
    return next((out / "cells" / "all").glob(f"{model}__*")).relative_to(out).as_posix()


def finished_matrix(template: dict[str, Path], folder: Path, fake: Fake) -> Path:
    """A finished two-cell fake matrix in `folder/out`; returns its config."""
    config = write_config(folder, template)
    fake.open()
    done = run_cli(["matrix", "--config", config, "--out", folder / "out"], cwd=folder, env=fake.env)
    assert done.returncode == 0, done.stderr
    return config


def test_kill9_leftovers_are_cleaned_and_a_kill_in_the_end_step_resumes(template: dict[str, Path], tmp_path: Path,
                                                                        fake: Fake) -> None:
    config = finished_matrix(template, tmp_path, fake)
    out = tmp_path / "out"
    (out / "matrix.json").unlink()
    shutil.rmtree(out / "summary")
    kill9_when(["matrix", "--config", config, "--out", out, "--resume"], lambda: (out / "summary").exists(),
               env=fake.env)
    dead = 2 ** 22 + 7  # above the default pid_max: no live writer has it
    cell = out / state_dir(out, "a")
    (cell / f".state.json.{dead}.x1.part").write_text('{"status": "do', encoding="utf-8")
    (out / f".matrix.json.{dead}.x2.part").write_text("{", encoding="utf-8")
    (out / "summary" / f".all.staging-{dead}.x3").mkdir(parents=True, exist_ok=True)
    done = run_cli(["matrix", "--config", config, "--out", out, "--resume"], cwd=tmp_path, env=fake.env)
    assert done.returncode == 0, done.stderr
    assert leftovers(out) == [] and len(fake.starts()) == 2
    assert json.loads((out / "matrix.json").read_text(encoding="utf-8"))["groups"]["all"]["problems"] == []


@pytest.mark.parametrize(("damage", "note"), [
    (lambda text: text[: len(text) // 2], "state.json is damaged or unreadable; running it again"),
    (lambda text: re.sub(r'("sha256": "[0-9a-f]{5})([0-9a-f])', lambda m: m[1] + ("0" if m[2] != "0" else "1"),
                         text, count=1), "state.json names another hash (damaged or edited); running it again"),
    (lambda text: "\ufeff[]", "state.json is damaged or unreadable; running it again"),
])
def test_a_damaged_state_is_never_trusted_the_cell_reruns_with_a_note(template: dict[str, Path], tmp_path: Path,
                                                                      fake: Fake, damage: Callable[[str], str],
                                                                      note: str) -> None:
    config = finished_matrix(template, tmp_path, fake)
    out = tmp_path / "out"
    path = out / state_dir(out, "a") / "state.json"
    before = path.read_text(encoding="utf-8")
    path.write_text(damage(before), encoding="utf-8")
    assert path.read_text(encoding="utf-8") != before
    kept = tree_snapshot(out / state_dir(out, "b"))
    done = run_cli(["matrix", "--config", config, "--out", out, "--resume"], cwd=tmp_path, env=fake.env)
    assert done.returncode == 0, done.stderr
    assert f"{state_dir(out, 'a')}: {note}" in done.stdout.splitlines()
    assert len(fake.starts()) == 3 and states(out)["a"]["status"] == "done"
    assert tree_snapshot(out / state_dir(out, "b")) == kept


def test_a_full_disk_in_a_cell_and_in_the_end_step_is_one_line_and_resume_completes(
        template: dict[str, Path], tmp_path: Path, fake: Fake) -> None:
    config = write_config(tmp_path, template)
    with small_tmpfs("1m") as disk:
        out = disk / "out"
        runner = start(["matrix", "--config", config, "--out", out], fake, tmp_path, "run")
        wait_for(lambda: len(fake.starts()) == 1, "the first cell")
        wait_for(lambda: states(out).get("a", {}).get("status") == "running", "the running state")
        fill_disk(disk)
        fake.open()
        assert runner.wait(60) == 2
        error = one_error_line((tmp_path / "run.err").read_text(encoding="utf-8"))
        assert error == (f"levante-tasks: error: {state_dir(out, 'a')}: no space left on the device (nothing was "
                         "replaced; free space and rerun)")
        assert process_start(fake.starts()[0][0]) is None and leftovers(out) == []
        (disk / ".filler").unlink()
        done = run_cli(["matrix", "--config", config, "--out", out, "--shard", "0/1"], cwd=tmp_path, env=fake.env)
        assert done.returncode == 0, done.stderr
        cells = tree_snapshot(out / "cells")
        fill_disk(disk, keep_free=16 * 1024)
        done = run_cli(["matrix", "--config", config, "--out", out, "--resume"], cwd=tmp_path, env=fake.env)
        assert done.returncode != 0, done.stderr
        assert re.search(r"out/(summary/all|comparison/all|matrix\.json|report\.md): no space left on the device",
                         done.stderr), done.stderr
        assert "Traceback" not in done.stderr and leftovers(out) == [] and tree_snapshot(out / "cells") == cells
        (disk / ".filler").unlink()
        done = run_cli(["matrix", "--config", config, "--out", out, "--resume"], cwd=tmp_path, env=fake.env)
        assert done.returncode == 0, done.stderr
        assert (out / "report.md").is_file() and len(fake.starts()) == 3


def test_read_only_out_and_an_unreadable_cell_are_one_line_and_change_nothing(template: dict[str, Path],
                                                                             tmp_path: Path, fake: Fake) -> None:
    config = finished_matrix(template, tmp_path, fake)
    out = tmp_path / "out"
    before = tree_snapshot(out)
    os.chmod(out, 0o555)
    try:
        done = run_cli(["matrix", "--config", config, "--out", out, "--resume"], cwd=tmp_path, env=fake.env,
                       drop_dac=True)
    finally:
        os.chmod(out, 0o755)
    assert done.returncode == 2 and "out: permission denied" in one_error_line(done.stderr)
    cell = out / state_dir(out, "a")
    os.chmod(cell, 0)
    try:
        done = run_cli(["matrix", "--config", config, "--out", out, "--resume"], cwd=tmp_path, env=fake.env,
                       drop_dac=True)
    finally:
        os.chmod(cell, 0o755)
    assert done.returncode == 2, done.stderr
    expected = f"levante-tasks: error: out/{state_dir(out, 'a')}/state.json: permission denied"
    assert one_error_line(done.stderr) == expected
    assert unlocked(tree_snapshot(out)) == unlocked(before)
    assert len(fake.starts()) == 2


def unlocked(snapshot: dict[str, bytes]) -> dict[str, bytes]:
    """A tree snapshot without the lock file (it holds the last holder's pid)."""
    return {k: v for k, v in snapshot.items() if k != ".matrix.lock"}


def test_dry_run_prints_commands_that_run_as_the_matrix_runs_them(template: dict[str, Path], tmp_path: Path,
                                                                    fake: Fake) -> None:
    relative = {**template, "lmms": Path(os.path.relpath(template["lmms"], tmp_path / "conf"))}
    config = write_config(tmp_path / "conf", relative, env={"HF_HUB_OFFLINE": "1", "ODD": "a b'c $HOME"})
    done = run_cli(["matrix", "--config", config, "--out", "out", "--dry-run"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "out").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["conf"]
    commands = [line for line in done.stdout.splitlines() if not line.startswith("#")]
    assert len(commands) == 2
    fake.open()
    pasted = subprocess.run(["bash", "-c", commands[0]], cwd=tmp_path, env={**os.environ, **fake.env,
                            "LEVANTE_DATA_DIR": "/nonexistent", "LEVANTE_DATA_VERSION": "other"},
                            capture_output=True, text=True, check=False)
    assert pasted.returncode == 0, pasted.stderr
    assert list((tmp_path / "out").glob("cells/all/a__*/lmms/*_results.json"))


@pytest.mark.parametrize(("text", "message"), [
    ("tasks: [levante_trog]\ntasks: [levante_vocab]\n", "matrix.yaml: invalid YAML at line 2: duplicate key 'tasks'"),
    ("tasks: [levante_trgo]\n", "matrix.yaml: tasks: 'levante_trgo' is not an lmms-eval task or group (did you mean "
     "'levante_trog'?)"),
])
def test_config_input_problems_are_one_line_before_any_cell_runs(template: dict[str, Path], tmp_path: Path,
                                                                 text: str, message: str) -> None:
    base = write_config(tmp_path, template).read_text(encoding="utf-8")
    base = "\n".join(line for line in base.splitlines() if not line.startswith("tasks:") and line != "- levante_trog")
    (tmp_path / "matrix.yaml").write_text(text + base + "\n", encoding="utf-8")
    done = run_cli(["matrix", "--config", "matrix.yaml", "--out", "out"], cwd=tmp_path)
    assert done.returncode == 2 and one_error_line(done.stderr) == f"levante-tasks: error: {message}"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("shard", ["3/2", "a/b", "0/0", "-1/2"])
def test_bad_shards_are_refused_before_anything_is_written(template: dict[str, Path], tmp_path: Path,
                                                           shard: str) -> None:
    config = write_config(tmp_path, template)
    done = run_cli(["matrix", "--config", config, "--out", "out", f"--shard={shard}"], cwd=tmp_path)
    assert done.returncode == 2 and f"{shard!r}: expected i/n with 0 <= i < n" in done.stderr
    done = run_cli(["matrix", "--config", config, "--out", "out", "--cell", "2"], cwd=tmp_path)
    assert done.returncode == 2 and one_error_line(done.stderr).endswith("--cell 2: the matrix has cells 0..1")
    assert not (tmp_path / "out").exists()


def test_results_for_another_task_never_count_as_the_cells(template: dict[str, Path], tmp_path: Path,
                                                            fake: Fake) -> None:
    config = write_config(tmp_path, template, tasks=["levante_vocab"], seeds=[0])  # the fake writes levante_trog's
    fake.open()
    done = run_cli(["matrix", "--config", config, "--out", "out"], cwd=tmp_path, env=fake.env)
    assert done.returncode == 1
    state = states(tmp_path / "out")["a"]
    assert state["status"] == "failed" and state["error"]["reason"] == ("lmms-eval exit 0, its results file holds "
                                                                        "levante_trog, not levante_vocab")
    assert not (tmp_path / "out" / state_dir(tmp_path / "out", "a") / "lmms").exists()
    document = json.loads((tmp_path / "out" / "matrix.json").read_text(encoding="utf-8"))
    assert [c["status"] for c in document["cells"]] == ["failed", "failed"]
    assert document["groups"]["all"]["summary"] is None


def test_kill9_of_the_runner_stops_its_lmms_eval_and_resume_reruns_the_cell(template: dict[str, Path],
                                                                             tmp_path: Path, fake: Fake) -> None:
    config = write_config(tmp_path, template)
    out = tmp_path / "out"
    kill9_when(["matrix", "--config", config, "--out", out],
               lambda: fake.starts() != [] and states(out).get("a", {}).get("status") == "running", env=fake.env)
    child = fake.starts()[0][0]
    wait_for(lambda: process_start(child) is None, "the orphaned lmms-eval to be stopped", timeout=30)
    fake.open()
    done = run_cli(["matrix", "--config", config, "--out", out, "--resume"], cwd=tmp_path, env=fake.env)
    assert done.returncode == 0, done.stderr
    assert f"{state_dir(out, 'a')}: interrupted earlier; running it again" in done.stdout.splitlines()
    assert len(fake.starts()) == 3 and leftovers(out) == []


def test_a_config_changed_back_restores_its_superseded_cells_instead_of_rerunning_them(
        template: dict[str, Path], tmp_path: Path, fake: Fake) -> None:
    config = finished_matrix(template, tmp_path, fake)
    original = config.read_text(encoding="utf-8")
    out = tmp_path / "out"
    b_cell = state_dir(out, "b")
    b_files = tree_snapshot(out / b_cell)
    without_b = yaml.safe_load(original)
    without_b["models"] = without_b["models"][:1]
    config.write_text(yaml.safe_dump(without_b), encoding="utf-8")
    done = run_cli(["matrix", "--config", config, "--out", out, "--resume"], cwd=tmp_path, env=fake.env)
    assert done.returncode == 0 and not (out / b_cell).exists(), done.stderr
    config.write_text(original, encoding="utf-8")
    done = run_cli(["matrix", "--config", config, "--out", out, "--resume"], cwd=tmp_path, env=fake.env)
    assert done.returncode == 0, done.stderr
    assert f"restored from superseded/ (same config again): {b_cell}" in done.stdout.splitlines()
    assert len(fake.starts()) == 2 and tree_snapshot(out / b_cell) == b_files
    assert not list((out / "superseded").rglob("state.json"))


def test_report_only_runs_no_cell_records_the_unfinished_ones_as_they_are_and_resume_reruns_them(
        template: dict[str, Path], tmp_path: Path, fake: Fake) -> None:
    args = f"letter=B,template={template['lmms']}"
    config = write_config(tmp_path, template, models=[{"name": m, "model": "levante_fixed", "model_args": args}
                                                      for m in "abc"])
    out = tmp_path / "out"
    runner = start(["matrix", "--config", config, "--out", out, "--cell", "1"], fake, tmp_path, "b")
    wait_for(lambda: fake.starts() != [] and states(out).get("b", {}).get("status") == "running", "cell 1 to run")
    runner.send_signal(signal.SIGTERM)  # as scancel does: b is recorded as interrupted
    assert runner.wait(60) == 143
    fake.open()
    done = run_cli(["matrix", "--config", config, "--out", out, "--cell", "0"], cwd=tmp_path, env=fake.env)
    assert done.returncode == 0, done.stderr
    c_plan = json.loads((out / "matrix-plan.json").read_text(encoding="utf-8"))["cells"][2]
    c_dir = out / c_plan["dir"]  # c: a runner killed with -9 left `running`, a dead pid and partial output
    (c_dir / "lmms" / "partial").mkdir(parents=True)
    (c_dir / "lmms" / "partial" / "x_samples_levante_trog.jsonl").write_text("{}\n", encoding="utf-8")
    (c_dir / "state.json").write_text(json.dumps({
        "cell_id": c_plan["cell_id"], "sha256": c_plan["sha256"], "status": "running", "batch_size": 4,
        "attempts": [], "pid": 2 ** 22 + 7, "pid_start": "1"}), encoding="utf-8")
    b_state = (out / state_dir(out, "b") / "state.json").read_bytes()
    digest = plan_sha256(plan(load_config(config)))

    done = run_cli(["matrix", "--config", config, "--out", out, "--report-only", "--plan-sha256", digest],
                   cwd=tmp_path, env=fake.env)
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("levante-tasks: error:")]
    assert errors == [f"levante-tasks: error: {Path(state_dir(out, 'b')).name}: interrupted by SIGTERM",
                      f"levante-tasks: error: {c_plan['cell_id']}: interrupted earlier",
                      "levante-tasks: error: 2 of 3 cell(s) did not finish and were not run (--report-only); run "
                      "them with --resume (on Slurm: --submit --resume)"]
    assert len(fake.starts()) == 2  # b's interrupted start and a's: nothing ran
    assert (out / state_dir(out, "b") / "state.json").read_bytes() == b_state
    assert states(out)["c"]["status"] == "running"  # its files are left as they are (the report reads done cells)
    assert (c_dir / "lmms" / "partial" / "x_samples_levante_trog.jsonl").read_text(encoding="utf-8") == "{}\n"
    document = json.loads((out / "matrix.json").read_text(encoding="utf-8"))
    assert [(c["model"], c["status"], (c["error"] or {}).get("reason")) for c in document["cells"]] == [
        ("a", "done", None), ("b", "failed", "interrupted by SIGTERM"), ("c", "not finished", "interrupted earlier")]
    assert document["groups"]["all"]["problems"] == [] and document["groups"]["all"]["cells_done"] == 1
    assert (out / "summary" / "all" / "summary.md").is_file()
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "3 cell(s), 1 done." in report and "interrupted by SIGTERM" in report and "interrupted earlier" in report

    for extra in (["--resume"], ["--dry-run"], ["--cell", "0"], ["--submit"]):
        refused = run_cli(["matrix", "--config", config, "--out", out, "--report-only", *extra], cwd=tmp_path)
        assert refused.returncode == 2 and "drop" in one_error_line(refused.stderr), refused.stderr
    refused = run_cli(["matrix", "--config", config, "--out", "none", "--report-only"], cwd=tmp_path)
    assert refused.returncode == 2 and not (tmp_path / "none").exists()
    assert one_error_line(refused.stderr) == ("levante-tasks: error: none: holds no matrix-plan.json: no matrix to "
                                              "report on (run it first)")

    done = run_cli(["matrix", "--config", config, "--out", out, "--resume"], cwd=tmp_path, env=fake.env)
    assert done.returncode == 0, done.stderr
    assert f"{state_dir(out, 'b')}: failed earlier; running it again" in done.stdout.splitlines()
    assert f"{c_plan['dir']}: interrupted earlier; running it again" in done.stdout.splitlines()
    assert len(fake.starts()) == 4 and all(s["status"] == "done" for s in states(out).values())
