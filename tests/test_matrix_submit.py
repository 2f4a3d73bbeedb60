"""`levante-tasks matrix --submit` against fake Slurm commands on PATH (sbatch, scontrol, squeue, scancel: shell
scripts that log what they are asked and keep a queue file): no sbatch while a whole run or an end step holds
--out, `--submit --dry-run` shows exactly the commands `--submit` runs, an sbatch that fails mid-submission leaves
every queued array in jobs.json and names the command that continues it, and the lock-wait line names its holder.

The real cluster runs the end-to-end case (tests/test_matrix_slurm.py)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from data_helpers import prepared_release
from faults import one_error_line, run_cli
from test_matrix_faults import Fake, start, wait_for, write_config

from levante_tasks import folder_lock
from levante_tasks.matrix.run import LOCK_NAME, lock_role

FAKE_SLURM = {
    "sbatch": r"""#!/bin/bash
# Logs its arguments; refuses (as Slurm does) when they hold $FAKE_SLURM/refuse's text; else a job id, queued.
echo "$*" >> "$FAKE_SLURM/sbatch.log"
if [ -s "$FAKE_SLURM/refuse" ] && [[ "$*" == *"$(cat "$FAKE_SLURM/refuse")"* ]]; then
  echo "sbatch: error: Batch job submission failed: Requested node configuration is not available" >&2
  exit 1
fi
id=$(( $(cat "$FAKE_SLURM/next" 2>/dev/null || echo 1000) + 1 ))
echo "$id" > "$FAKE_SLURM/next"
echo "$id PENDING" >> "$FAKE_SLURM/queue"
echo "$id"
""",
    "scontrol": "#!/bin/bash\necho 'MaxArraySize            = 1001'\n",
    "squeue": "#!/bin/bash\ncat \"$FAKE_SLURM/queue\" 2>/dev/null || true\n",
    "scancel": r"""#!/bin/bash
for id in "$@"; do sed -i "/^$id /d" "$FAKE_SLURM/queue"; done
""",
}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A prepared synthetic release (shared by the run's workers)."""
    return prepared_release(tmp_path_factory) / "data"


@pytest.fixture
def slurm(tmp_path: Path) -> dict[str, str]:
    """The environment of a fake Slurm: its commands first on PATH, its logs and queue in FAKE_SLURM."""
    state, bin_dir = tmp_path / "fake-slurm", tmp_path / "fake-slurm-bin"
    state.mkdir()
    bin_dir.mkdir()
    for name, text in FAKE_SLURM.items():
        (bin_dir / name).write_text(text, encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_SLURM": str(state)}


def sbatch_calls(env: dict[str, str]) -> list[str]:
    log = Path(env["FAKE_SLURM"]) / "sbatch.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def config_of(tmp_path: Path, data: Path, names: str = "ab", fake: Fake | None = None) -> Path:
    """matrix.yaml in tmp_path: fake models (one per letter; gated by `fake` when given)."""
    args = "letter=B,template=missing"
    return write_config(tmp_path, {"data": data}, models=[{"name": m, "model": "levante_fixed", "model_args": args}
                                                          for m in names],
                        env={"HF_HUB_OFFLINE": "1", **(fake.env if fake else {})})


def submit_cli(env: dict[str, str], cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["matrix", "--config", "matrix.yaml", "--out", "out", "--submit", *extra], cwd=cwd, env=env)


def jobs(out: Path) -> list[dict[str, Any]]:
    return json.loads((out / "slurm" / "jobs.json").read_text(encoding="utf-8"))["submissions"]


def test_submit_queues_nothing_while_a_whole_run_or_an_end_step_holds_out(
        data: Path, tmp_path: Path, slurm: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    fake = Fake(tmp_path)
    config_of(tmp_path, data, fake=fake)
    whole = start(["matrix", "--config", "matrix.yaml", "--out", "out"], fake, tmp_path, "whole")
    try:
        wait_for(lambda: fake.starts(), "the whole run's first cell")
        refused = submit_cli(slurm, tmp_path, "--resume")
        assert refused.returncode == 2 and refused.stdout == ""
        assert one_error_line(refused.stderr) == (
            f"levante-tasks: error: out: a whole matrix run (pid {whole.pid}) is using it; nothing was submitted "
            "(its array tasks would wait for it on their allocations): submit when it has ended")
        assert submit_cli(slurm, tmp_path, "--resume", "--dry-run").returncode == 2  # the preview says so too
    finally:
        fake.open()
        whole.wait(120)
    assert sbatch_calls(slurm) == [] and not (tmp_path / "out" / "slurm").exists()
    # the end step (--report-only) of a Slurm job holding OUT's lock on this host
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    with folder_lock.hold(tmp_path / "out", LOCK_NAME, who="?", what="the matrix lock",
                          role=lock_role(None, None, None, True)):
        refused = submit_cli(slurm, tmp_path, "--resume")
    assert one_error_line(refused.stderr).startswith(
        f"levante-tasks: error: out: the end step (--report-only, Slurm job 77, pid {os.getpid()}) is using it; "
        "nothing was submitted")
    # an earlier submission's end step running on another node (its lock is not seen here): Slurm says so
    (tmp_path / "out" / "slurm").mkdir()
    (tmp_path / "out" / "slurm" / "jobs.json").write_text(json.dumps({"schema": 1, "submissions": [
        {"plan_sha256": "x", "arrays": ["70"], "end_step": "71", "cells": [0, 1], "models": ["a", "b"]}]}))
    (Path(slurm["FAKE_SLURM"]) / "queue").write_text("71 RUNNING\n")
    refused = submit_cli(slurm, tmp_path, "--resume")
    assert one_error_line(refused.stderr).startswith(
        "levante-tasks: error: out: the end step of an earlier --submit (Slurm job 71) is running on it; nothing was "
        "submitted")
    assert sbatch_calls(slurm) == []
    (Path(slurm["FAKE_SLURM"]) / "queue").write_text("71 PENDING\n")  # still waiting for its arrays: no refusal
    assert submit_cli(slurm, tmp_path, "--resume").returncode == 0
    assert "--dependency=afterany:1001:1002:71 " in sbatch_calls(slurm)[-1]  # and its end step waits for that one


def test_the_lock_wait_line_names_the_holder(data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config_of(tmp_path, data)
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    with folder_lock.hold(tmp_path / "out", LOCK_NAME, who="?", what="the matrix lock",
                          role=lock_role(None, None, None, True)):
        waited = run_cli(["matrix", "--config", "matrix.yaml", "--out", "out", "--cell", "0"], cwd=tmp_path,
                         env={"LEVANTE_MATRIX_LOCK_WAIT": "0.3", "SLURM_JOB_ID": ""})
    assert waited.stderr.splitlines()[0] == (
        f"levante-tasks: the end step (--report-only, Slurm job 77) is using out (pid {os.getpid()}); waiting")
    assert one_error_line(waited.stderr) == (
        f"levante-tasks: error: out: the end step (--report-only, Slurm job 77, pid {os.getpid()}) still holds it "
        "after 0.3 s; try again later")


def test_submit_dry_run_writes_and_prints_exactly_what_submit_runs_and_queues_nothing(
        data: Path, tmp_path: Path, slurm: dict[str, str]) -> None:
    config_of(tmp_path, data, names="abc")
    preview = submit_cli(slurm, tmp_path, "--dry-run")
    assert preview.returncode == 0, preview.stderr
    assert sbatch_calls(slurm) == [] and not (Path(slurm["FAKE_SLURM"]) / "queue").exists()
    out = tmp_path / "out"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [
        ".matrix.lock", "slurm", "slurm/cells.sbatch", "slurm/end.sbatch"]  # no plan, logs or jobs.json
    scripts = {name: (out / "slurm" / name).read_text(encoding="utf-8") for name in ("cells.sbatch", "end.sbatch")}
    assert all(text.rstrip("\n") in preview.stdout for text in scripts.values())
    assert all("# It names this machine's absolute paths" in text for text in scripts.values())
    commands = [line for line in preview.stdout.splitlines() if re.match(r"^(array\d=\$\()?sbatch ", line)]
    assert len(commands) == 4 and commands[-1].startswith('sbatch --parsable') and '"--dependency=afterany:$array1:' \
        '$array2:$array3"' in commands[-1]
    # the printed commands, pasted into bash, call sbatch exactly as --submit does
    pasted = subprocess.run(["bash", "-euc", "\n".join(commands)], cwd=tmp_path, env={**os.environ, **slurm},
                            capture_output=True, text=True, check=False)
    assert pasted.returncode == 0, pasted.stderr
    printed = sbatch_calls(slurm)
    (Path(slurm["FAKE_SLURM"]) / "sbatch.log").unlink()
    (Path(slurm["FAKE_SLURM"]) / "next").unlink()
    done = submit_cli(slurm, tmp_path)  # the preview left OUT a folder a matrix may start in: no --resume needed
    assert done.returncode == 0, done.stderr
    assert sbatch_calls(slurm) == printed and len(printed) == 4
    assert [(s["arrays"], s["end_step"]) for s in jobs(out)] == [(["1001", "1002", "1003"], "1004")]
    assert {name: (out / "slurm" / name).read_text(encoding="utf-8") for name in scripts} == scripts


def test_the_removed_emit_slurm_says_what_replaced_it_in_one_line(tmp_path: Path) -> None:
    done = run_cli(["matrix", "--emit-slurm", "job.sh"], cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("levante-tasks: error: --emit-slurm was removed; use --submit --dry-run (writes the job "
                           "scripts under OUT/slurm/ and prints them and the sbatch commands; --submit queues them)\n")


def test_a_failed_sbatch_records_what_is_queued_and_names_the_command_that_continues(
        data: Path, tmp_path: Path, slurm: dict[str, str]) -> None:
    config_of(tmp_path, data, names="abc")
    (Path(slurm["FAKE_SLURM"]) / "refuse").write_text("--job-name=out-b")  # the second model's resources
    failed = submit_cli(slurm, tmp_path)
    assert failed.returncode == 2
    line = one_error_line(failed.stderr)
    again = "levante-tasks matrix --config matrix.yaml --out out --submit --resume"
    assert line == ("levante-tasks: error: sbatch failed (exit 1): sbatch: error: Batch job submission failed: "
                    "Requested node configuration is not available; this --submit queued array(s) 1001 (in "
                    f"out/slurm/jobs.json) and no end step: fix what sbatch refused, then `{again}` queues the "
                    "other models' arrays and the end step after them (or `scancel 1001` cancels them)")
    assert [(s["arrays"], s["array_models"], s["end_step"]) for s in jobs(tmp_path / "out")] == [
        (["1001"], {"1001": ["a"]}, None)]
    (Path(slurm["FAKE_SLURM"]) / "refuse").unlink()
    command = shlex.split(re.search(r"then `([^`]+)`", line)[1])
    assert command[0] == "levante-tasks"
    continued = subprocess.run([sys.executable, "-m", "levante_tasks", *command[1:]], cwd=tmp_path,
                               env={**os.environ, **slurm}, capture_output=True, text=True, check=False)
    assert continued.returncode == 0, continued.stderr
    calls = sbatch_calls(slurm)[2:]  # a, the refused b; then b, c and the end step after all three
    assert [re.search(r"--array=(\S+)", c)[1] if "--array" in c else None for c in calls] == ["0", "0", None]
    assert [c.split()[-1] for c in calls[:2]] == ["1", "2"]  # offsets: models 1 and 2
    assert "--dependency=afterany:1002:1003:1001 " in calls[2]
    assert "submitted array 1002: 1 cell(s), one task per model (--array=0: model 1 (b); " in continued.stdout
    assert [(s["arrays"], s["end_step"], s["cells"]) for s in jobs(tmp_path / "out")] == [
        (["1001"], None, [0, 1, 2]), (["1002", "1003"], "1004", [1, 2])]
    # or cancel what it queued: the other command the line names
    subprocess.run(shlex.split(re.search(r"or `([^`]+)`", line)[1]), env={**os.environ, **slurm}, check=True)
    assert "1001" not in (Path(slurm["FAKE_SLURM"]) / "queue").read_text(encoding="utf-8")


def test_a_shard_on_out_does_not_stop_a_submit(data: Path, tmp_path: Path, slurm: dict[str, str]) -> None:
    """A shard holds OUT's lock shared, as the array tasks do: they run side by side (a cell both would run is
    refused by the second), so --submit goes on."""
    fake = Fake(tmp_path)
    config_of(tmp_path, data, fake=fake)
    shard = start(["matrix", "--config", "matrix.yaml", "--out", "out", "--shard", "0/2"], fake, tmp_path, "shard")
    try:
        wait_for(lambda: fake.starts(), "the shard's cell")
        done = submit_cli(slurm, tmp_path, "--resume")
        assert done.returncode == 0, done.stderr
    finally:
        fake.open()
        shard.wait(120)
    assert len(sbatch_calls(slurm)) == 3


def test_the_command_that_continues_runs_from_where_it_is_printed_with_config_and_out_elsewhere(
        data: Path, tmp_path: Path, slurm: dict[str, str]) -> None:
    """The printed --resume names the config and OUT as paths the shell can use from the working folder (never
    `.../` nor an absolute path), also when both lie outside it."""
    config_of(tmp_path, data, names="ab")
    here = tmp_path / "elsewhere" / "deeper"
    here.mkdir(parents=True)
    (Path(slurm["FAKE_SLURM"]) / "refuse").write_text("--job-name=out-b")
    failed = run_cli(["matrix", "--config", str(tmp_path / "matrix.yaml"), "--out", str(tmp_path / "out"),
                      "--submit"], cwd=here, env=slurm)
    line = one_error_line(failed.stderr)
    assert failed.returncode == 2 and str(tmp_path) not in line and ".../" not in line, line
    (Path(slurm["FAKE_SLURM"]) / "refuse").unlink()
    command = shlex.split(re.search(r"then `([^`]+)`", line)[1])
    continued = subprocess.run([sys.executable, "-m", "levante_tasks", *command[1:]], cwd=here,
                               env={**os.environ, **slurm}, capture_output=True, text=True, check=False)
    assert continued.returncode == 0, continued.stderr
    assert [(s["arrays"], s["end_step"]) for s in jobs(tmp_path / "out")] == [(["1001"], None), (["1002"], "1003")]


def test_a_resume_after_a_refused_end_step_does_not_call_the_queued_cells_finished(
        data: Path, tmp_path: Path, slurm: dict[str, str]) -> None:
    config_of(tmp_path, data, names="ab")
    (Path(slurm["FAKE_SLURM"]) / "refuse").write_text("--job-name=out-end")
    failed = submit_cli(slurm, tmp_path)
    assert failed.returncode == 2 and "queues the end step after them" in one_error_line(failed.stderr)
    (Path(slurm["FAKE_SLURM"]) / "refuse").unlink()
    continued = submit_cli(slurm, tmp_path, "--resume")
    assert continued.returncode == 0, continued.stderr
    assert "every cell is finished" not in continued.stdout
    assert continued.stdout.splitlines()[0] == (
        "every unfinished cell is in an array an earlier --submit queued; only the end step was submitted")
    assert len(sbatch_calls(slurm)) == 4 and "--dependency=afterany:1001:1002 " in sbatch_calls(slurm)[-1]


def test_a_users_folder_holding_a_slurm_script_of_its_own_is_refused(
        data: Path, tmp_path: Path, slurm: dict[str, str]) -> None:
    """Only the scripts a --submit --dry-run wrote (by their first lines) leave OUT a folder a matrix may start in;
    a user's own slurm/cells.sbatch is not overwritten."""
    config_of(tmp_path, data, names="a")
    own = tmp_path / "out" / "slurm" / "cells.sbatch"
    own.parent.mkdir(parents=True)
    own.write_text("#!/bin/bash\n# my own job\n", encoding="utf-8")
    refused = submit_cli(slurm, tmp_path)
    assert refused.returncode == 2 and one_error_line(refused.stderr) == (
        "levante-tasks: error: out: not empty and holds no matrix-plan.json (not an earlier matrix); it is not "
        "replaced: choose another --out")
    assert own.read_text(encoding="utf-8") == "#!/bin/bash\n# my own job\n" and sbatch_calls(slurm) == []


def test_two_submits_at_once_on_one_out_queue_each_model_once(
        data: Path, tmp_path: Path, slurm: dict[str, str]) -> None:
    """A second --submit while one is submitting is refused in one line: they would both queue every model, and
    the later jobs.json would drop the other's arrays (orphans)."""
    config_of(tmp_path, data, names="ab")
    sbatch = Path(slurm["PATH"].split(":")[0]) / "sbatch"
    gate = Path(slurm["FAKE_SLURM"]) / "gate"
    sbatch.write_text(sbatch.read_text(encoding="utf-8").replace(
        "#!/bin/bash\n", '#!/bin/bash\nif mkdir "$FAKE_SLURM/first" 2>/dev/null; then\n'
        '  while [ -e "$FAKE_SLURM/gate" ]; do sleep 0.05; done\nfi\n', 1), encoding="utf-8")
    gate.touch()
    first = subprocess.Popen([sys.executable, "-m", "levante_tasks", "matrix", "--config", "matrix.yaml", "--out",
                              "out", "--submit"], cwd=tmp_path, env={**os.environ, **slurm}, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: (Path(slurm["FAKE_SLURM"]) / "first").exists(), "the first --submit's first sbatch")
        second = submit_cli(slurm, tmp_path, "--resume")
    finally:
        gate.unlink()
        first.communicate(timeout=120)
    assert first.returncode == 0
    assert second.returncode == 2 and one_error_line(second.stderr) == (
        "levante-tasks: error: out: another --submit is submitting to it; nothing was submitted (it queues what this "
        "one would)")
    assert len(sbatch_calls(slurm)) == 3 and [s["arrays"] for s in jobs(tmp_path / "out")] == [["1001", "1002"]]


def test_a_jobs_json_that_cannot_be_written_is_not_reported_as_sbatch_refusing(
        data: Path, tmp_path: Path, slurm: dict[str, str]) -> None:
    """jobs.json not written after sbatch accepted an array: the one line says so and names what is queued; it
    does not claim the array is in jobs.json nor that sbatch refused something."""
    config_of(tmp_path, data, names="ab")
    sbatch = Path(slurm["PATH"].split(":")[0]) / "sbatch"
    sbatch.write_text(sbatch.read_text(encoding="utf-8").replace(
        "#!/bin/bash\n", '#!/bin/bash\nmkdir -p out/slurm/jobs.json\n', 1), encoding="utf-8")
    failed = submit_cli(slurm, tmp_path)
    assert failed.returncode == 2 and one_error_line(failed.stderr) == (
        "levante-tasks: error: out/slurm/jobs.json: is a folder, expected a file (queued all the same: 1001; nothing "
        "more was queued: `scancel 1001`, then submit again with --resume)")
    assert len(sbatch_calls(slurm)) == 1
