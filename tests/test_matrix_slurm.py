"""`levante-tasks matrix --submit` against a real Slurm 22.05 cluster (slurmctld + slurmd + munged started by
tests/slurm_cluster.py; MaxArraySize 3): the whole matrix through Slurm equals a local run; scancel of a running
task records `interrupted by SIGTERM`, the end step reports it (runs no cell, exits 1) and a second
`--submit --resume` reruns only that cell, to a local run's result; a time limit is reported as such, with the
setting to raise; a requeued task runs its cell again; two submits on one --out run every cell once (the second
array's task leaves the cell to the first and completes); a plan above MaxArraySize is split, with per-model
resources; a --submit while a local whole run holds --out queues nothing. The jobs run under --export=NONE,
submitted from another folder.

Real lmms-eval runs only for the equality with a local run; the rest uses the fast fake of test_matrix_faults.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from data_helpers import prepared_release
from faults import one_error_line, run_cli
from matrix_runs import fixed_letter_matrix, real_config
from slurm_cluster import scontrol_job, slurm_cluster
from test_matrix import matrix_view
from test_matrix_faults import Fake, start, states, wait_for
from test_matrix_faults import write_config as write_fake_config

from levante_tasks.matrix.config import load_config
from levante_tasks.matrix.plan import plan, plan_sha256

MAX_ARRAY_SIZE = 3
DONE_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}
# An absolute path in text (not part of a URL), as in levante_tasks.matrix.state.
ABSOLUTE = re.compile(r"(?<![\w.:/~-])/(?:tmp|work|root|home|usr|opt|var)/[^\s'\"]+")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment (SLURM_CONF) of a running single-node test cluster."""
    with slurm_cluster(tmp_path_factory.mktemp("slurm"), MAX_ARRAY_SIZE) as env:
        yield env


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The prepared synthetic release and a local two-cell matrix run through real lmms-eval (shared with the
    fault tests): the reference of the submitted one, and its cell b's output is what the fake copies."""
    return fixed_letter_matrix(tmp_path_factory)


def fake_config(folder: Path, template: dict[str, Path], fake: Fake, names: str = "ab", **slurm: Any) -> Path:
    """matrix.yaml: fake models (one per letter of `names`); the fake's log and gate reach the jobs through
    the config's env (they run under --export=NONE)."""
    args = f"letter=B,template={template['lmms']}"
    return write_fake_config(folder, template, models=[{"name": m, "model": "levante_fixed", "model_args": args}
                                                       for m in names],
                             env={"FAKE_LMMS_LOG": str(fake.log), "FAKE_LMMS_GATE": str(fake.gate)},
                             slurm={"options": ["--export=NONE"], **slurm})


def submit(config: Path, out: Path, cwd: Path, env: dict[str, str], *extra: str) -> dict[str, Any]:
    """`matrix --submit` from `cwd`; returns the submission recorded in jobs.json."""
    done = run_cli(["matrix", "--config", os.path.relpath(config, cwd), "--out", os.path.relpath(out, cwd),
                    "--submit", *extra], cwd=cwd, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((out / "slurm" / "jobs.json").read_text(encoding="utf-8"))["submissions"][-1]


def job_state(env: dict[str, str], job: str) -> str:
    return scontrol_job(env, job)["JobState"]


def wait_job(env: dict[str, str], job: str, timeout: float = 240) -> str:
    """Wait until Slurm says `job` ended; its final state."""
    wait_for(lambda: job_state(env, job) in DONE_STATES, f"Slurm job {job} to end", timeout=timeout)
    return job_state(env, job)


def cell_log(out: Path, index: int) -> str:
    """The array task log of model `index` (these matrices have one cell per model: the same index)."""
    return (out / "slurm" / "logs" / f"model-{index}.log").read_text(encoding="utf-8")


def test_a_submitted_matrix_equals_a_local_run_and_its_outputs_name_no_absolute_path(
        template: dict[str, Path], cluster: dict[str, str], tmp_path: Path) -> None:
    config = real_config(tmp_path / "conf", template["data"], ["A", "B"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "runs" / "m1"
    jobs = submit(config, out, elsewhere, cluster)
    assert len(jobs["arrays"]) == 2 and jobs["cells"] == [0, 1]  # one array per model (its own job name)
    assert wait_job(cluster, jobs["end_step"]) == "COMPLETED"
    assert all(job_state(cluster, f"{job}_0") == "COMPLETED" for job in jobs["arrays"])
    view, reference = matrix_view(out), matrix_view(template["local"])
    assert view.pop("top") == sorted([*reference.pop("top"), "slurm"])
    assert view == reference  # matrix.json minus timing, every cell's files, state and records, summaries
    for index in (0, 1):
        log = cell_log(out, index)
        assert re.search(rf"=== model {index}: job \d+_0, restart 0, ", log)
        assert re.search(r"^\[1/1\] [ab]__levante_trog__s0__\w+: done \(batch size 4", log, re.MULTILINE)
    cell_logs = [p.read_text(encoding="utf-8") for p in out.rglob("cell.log")]
    assert cell_logs and not any("\x1b[" in text or "it/s]" in text for text in cell_logs)  # no colours or bars
    scripts = {out / "slurm" / "cells.sbatch", out / "slurm" / "end.sbatch"}  # they must name absolute paths
    leaks = {p.relative_to(out).as_posix(): ABSOLUTE.findall(p.read_text(encoding="utf-8", errors="replace"))
             for p in out.rglob("*") if p.is_file() and p not in scripts}
    assert {k: v for k, v in leaks.items() if v} == {}


def test_scancel_of_a_running_task_records_sigterm_the_end_step_reports_it_and_submit_resume_reruns_only_it(
        template: dict[str, Path], cluster: dict[str, str], tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    out = tmp_path / "out"
    config = fake_config(tmp_path, template, fake)
    jobs = submit(config, out, tmp_path, cluster)
    wait_for(lambda: len(fake.starts()) == 2, "both cells to start")
    wait_for(lambda: states(out).get("a", {}).get("status") == "running", "cell 0's running state")
    task = f"{jobs['arrays'][0]}_0"
    subprocess.run(["scancel", task], env=cluster, check=True)
    assert wait_job(cluster, task) == "CANCELLED"  # said as soon as Slurm signals the task: its runner may still be
    wait_for(lambda: states(out)["a"]["status"] != "running", "cell 0's runner to record the interruption")
    assert states(out)["a"]["error"]["reason"] == "interrupted by SIGTERM"
    assert ("levante-tasks: error: interrupted by SIGTERM; finished cells are kept, rerun with --resume"
            in cell_log(out, 0))
    fake.open()
    # the end step runs to its end: the report of the finished cell, the cancelled one recorded as it is, exit 1
    assert wait_job(cluster, jobs["end_step"]) == "FAILED"
    assert scontrol_job(cluster, jobs["end_step"])["ExitCode"] == "1:0"
    assert len(fake.starts()) == 2 and states(out)["a"]["error"]["reason"] == "interrupted by SIGTERM"
    document = json.loads((out / "matrix.json").read_text(encoding="utf-8"))
    assert [(c["model"], c["status"], (c["error"] or {}).get("reason")) for c in document["cells"]] == [
        ("a", "failed", "interrupted by SIGTERM"), ("b", "done", None)]
    assert document["groups"]["all"]["cells_done"] == 1 and (out / "summary" / "all" / "summary.md").is_file()
    assert "2 cell(s), 1 done." in (out / "report.md").read_text(encoding="utf-8")
    end_log = (out / "slurm" / "logs" / "end.log").read_text(encoding="utf-8")
    assert re.search(r"^levante-tasks: error: a__levante_trog__s0__\w+: interrupted by SIGTERM$", end_log, re.MULTILINE)
    assert ("levante-tasks: error: 1 of 2 cell(s) did not finish and were not run (--report-only); run them with "
            "--resume (on Slurm: --submit --resume)") in end_log
    assert "running it again" not in end_log and "report: out/report.md (1/2 cell(s) done)" in end_log
    # a second --submit --resume submits only the cancelled cell; the result is the local run's
    again = submit(config, out, tmp_path, cluster, "--resume")
    assert again["cells"] == [0] and len(again["arrays"]) == 1
    assert wait_job(cluster, again["end_step"]) == "COMPLETED"
    assert job_state(cluster, f"{again['arrays'][0]}_0") == "COMPLETED"
    assert len(fake.starts()) == 3 and [entry["cells"] for entry in json.loads(
        (out / "slurm" / "jobs.json").read_text(encoding="utf-8"))["submissions"]] == [[0, 1], [0]]
    done = run_cli(["matrix", "--config", config, "--out", tmp_path / "local"], cwd=tmp_path, env=fake.env)
    assert done.returncode == 0, done.stdout + done.stderr
    view, reference = matrix_view(out), matrix_view(tmp_path / "local")
    assert view.pop("top") == sorted([*reference.pop("top"), "slurm"])
    assert view == reference


def test_a_time_limit_is_reported_as_such_and_names_the_setting_to_raise(
        template: dict[str, Path], cluster: dict[str, str], tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    out = tmp_path / "out"
    jobs = submit(fake_config(tmp_path, template, fake, names="a", time="00:10:00"), out, tmp_path, cluster)
    task = f"{jobs['arrays'][0]}_0"
    wait_for(lambda: states(out).get("a", {}).get("status") == "running" and fake.starts(), "the cell to run")
    # a time limit as soon as Slurm allows: --time counts whole minutes, so the end time (root may set it) is moved
    # to 2 s ahead; slurmctld checks time limits every 30 s and ends the job as it ends one at its --time
    subprocess.run(["scontrol", "update", f"JobId={task}", "EndTime=now+2"], env=cluster, check=True)
    assert wait_job(cluster, task) == "TIMEOUT"
    wait_for(lambda: states(out)["a"]["status"] != "running", "cell 0's runner to record the time limit")
    limit = scontrol_job(cluster, task)["TimeLimit"]  # what is left of the 10 minutes, in whole minutes
    assert re.fullmatch(r"\d\d:\d\d:00", limit)
    what, fix = f"hit its time limit ({limit})", "raise slurm.time in matrix.yaml, then --submit --resume"
    assert states(out)["a"]["error"]["reason"] == f"{what}; {fix}"
    assert f"levante-tasks: error: {what}; finished cells are kept, {fix}" in cell_log(out, 0)
    cell = next((out / "cells" / "all").glob("a__*"))
    assert (cell / "cell.log").read_text(encoding="utf-8").endswith(f"=== batch size 4: {what}; {fix} ===")
    assert wait_job(cluster, jobs["end_step"]) == "FAILED"  # the end step reports it (exit 1)
    end_log = (out / "slurm" / "logs" / "end.log").read_text(encoding="utf-8")
    assert f"levante-tasks: error: {cell.name}: {what}; {fix}" in end_log.splitlines()
    assert f"{what}; {fix}" in (out / "report.md").read_text(encoding="utf-8")
    assert "SIGTERM" not in cell_log(out, 0) + end_log and len(fake.starts()) == 1


def test_a_requeued_task_runs_its_cell_again_and_its_log_keeps_both_attempts(
        template: dict[str, Path], cluster: dict[str, str], tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    out = tmp_path / "out"
    jobs = submit(fake_config(tmp_path, template, fake, names="a"), out, tmp_path, cluster)
    task = f"{jobs['arrays'][0]}_0"
    wait_for(lambda: states(out).get("a", {}).get("status") == "running" and fake.starts(), "the cell to run")
    subprocess.run(["scontrol", "requeue", task], env=cluster, check=True)
    wait_for(lambda: states(out)["a"]["status"] == "failed", "the interrupt to be recorded")
    assert states(out)["a"]["error"]["reason"] == "interrupted by SIGTERM"
    wait_for(lambda: job_state(cluster, task) == "PENDING", "the requeued task to be pending")
    # slurmd revokes the killed instance's credential with a time stamp in whole seconds and refuses a launch whose
    # credential is not newer ("Job credential revoked": the task then FAILED without running): start a second later
    time.sleep(2)
    fake.open()
    subprocess.run(["scontrol", "update", f"JobId={task}", "StartTime=now"], env=cluster, check=True)  # no 2-min wait
    assert wait_job(cluster, jobs["end_step"]) == "COMPLETED"
    assert scontrol_job(cluster, task)["Restarts"] == "1" and job_state(cluster, task) == "COMPLETED"
    assert states(out)["a"]["status"] == "done" and len(fake.starts()) == 2
    log = cell_log(out, 0)
    assert log.index("restart 0") < log.index("interrupted by SIGTERM") < log.index("restart 1") < log.index(
        "failed earlier; running it again") < log.index(": done (batch size 4")


def test_two_submits_on_one_out_run_every_cell_once(template: dict[str, Path], cluster: dict[str, str],
                                                   tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    out = tmp_path / "out"
    config = fake_config(tmp_path, template, fake, names="a")
    first = submit(config, out, tmp_path, cluster)
    wait_for(lambda: len(fake.starts()) == 1, "the first array's cell")
    refused = run_cli(["matrix", "--config", config, "--out", out, "--submit"], cwd=tmp_path, env=cluster)
    assert refused.returncode == 2 and "pass --resume to continue it" in one_error_line(refused.stderr)
    second = submit(config, out, tmp_path, cluster, "--resume")
    assert second["cells"] == [0]  # running, not finished: submitted again
    task = f"{second['arrays'][0]}_0"
    assert wait_job(cluster, task) == "COMPLETED"  # the first array's task holds the cell: left to it, no failure
    log = cell_log(out, 0)
    assert re.search(rf"^\[1/1\] a__levante_trog__s0__\w+: another matrix process is running it \(Slurm job "
                     rf"{first['arrays'][0]}_0, process \d+\); left to it, not run here$", log, re.MULTILINE), log
    assert "interrupted earlier" not in log and "levante-tasks: error" not in log
    fake.open()
    assert wait_job(cluster, second["end_step"]) == "COMPLETED"
    assert wait_job(cluster, first["end_step"]) == "COMPLETED"  # the second end step waited for it
    assert scontrol_job(cluster, second["end_step"])["StartTime"] >= scontrol_job(cluster, first["end_step"])["EndTime"]
    assert len(fake.starts()) == 1 and states(out)["a"]["status"] == "done"
    assert [c["status"] for c in json.loads((out / "matrix.json").read_text(encoding="utf-8"))["cells"]] == ["done"]


def test_a_plan_above_max_array_size_is_split_with_per_model_resources(
        template: dict[str, Path], cluster: dict[str, str], tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    fake.open()
    out = tmp_path / "out"
    config = fake_config(tmp_path, template, fake, names="abcde", time="00:30:00", job_name="grid", throttle=2,
                         models={"e": {"time": "00:10:00", "job_name": "big"}},
                         end_step={"time": "00:05:00"})
    jobs = submit(config, out, tmp_path, cluster)
    assert jobs["cells"] == [0, 1, 2, 3, 4] and len(jobs["arrays"]) == 3  # 0-2 | 3 (MaxArraySize 3) | 4 (model e)
    assert wait_job(cluster, jobs["end_step"]) == "COMPLETED"
    tasks = [(a, t) for a, n in zip(jobs["arrays"], (3, 1, 1), strict=True) for t in range(n)]
    found = {f"{a}_{t}": scontrol_job(cluster, f"{a}_{t}") for a, t in tasks}
    assert {k: (v["JobState"], v["JobName"], v["TimeLimit"]) for k, v in found.items()} == {
        f"{a}_{t}": ("COMPLETED", "big" if a == jobs["arrays"][2] else "grid",
                     "00:10:00" if a == jobs["arrays"][2] else "00:30:00") for a, t in tasks}
    assert scontrol_job(cluster, f"{jobs['arrays'][0]}_0")["ArrayTaskThrottle"] == "2"
    end = scontrol_job(cluster, jobs["end_step"])
    assert (end["JobName"], end["TimeLimit"]) == ("grid", "00:05:00")
    assert len(fake.starts()) == 5 and all(s["status"] == "done" for s in states(out).values())
    assert [cell_log(out, i).count(": done (batch size 4") for i in range(5)] == [1] * 5


def test_a_job_of_a_changed_plan_is_refused_before_it_runs(template: dict[str, Path], tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    config = fake_config(tmp_path, template, fake)
    submitted = plan_sha256(plan(load_config(config)))
    changed = fake_config(tmp_path, template, fake, names="abc")  # two more cells after the submission
    done = run_cli(["matrix", "--config", changed, "--out", "out", "--cell", "2", "--plan-sha256", submitted],
                   cwd=tmp_path)
    assert done.returncode == 2
    assert one_error_line(done.stderr) == (
        f"levante-tasks: error: matrix.yaml: the plan changed after it was submitted to Slurm (plan "
        f"{submitted[:12]} then, {plan_sha256(plan(load_config(changed)))[:12]} now: the config, the prepared data "
        "or the software changed); nothing was run: submit again")
    assert not (tmp_path / "out").exists() and not fake.starts()


def test_a_submit_while_a_local_whole_run_holds_out_is_refused_and_queues_nothing(
        cluster: dict[str, str], tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    fake = Fake(tmp_path)
    data = prepared_release(tmp_path_factory) / "data"
    config = fake_config(tmp_path, {"data": data, "lmms": tmp_path / "never-copied"}, fake)
    whole = start(["matrix", "--config", config, "--out", "busy"], fake, tmp_path, "whole")
    try:
        wait_for(lambda: fake.starts(), "the local run's first cell")
        refused = run_cli(["matrix", "--config", config, "--out", "busy", "--submit", "--resume"], cwd=tmp_path,
                          env=cluster)
        queued = subprocess.run(["squeue", "--noheader", "--format=%j"], env=cluster, capture_output=True,
                                text=True, check=True).stdout.split()
    finally:
        fake.open()
        whole.wait(120)
    assert refused.returncode == 2 and one_error_line(refused.stderr) == (
        f"levante-tasks: error: busy: a whole matrix run (pid {whole.pid}) is using it; nothing was submitted (its "
        "array tasks would wait for it on their allocations): submit when it has ended")
    assert not [name for name in queued if name.startswith("busy-")] and not (tmp_path / "busy" / "slurm").exists()
