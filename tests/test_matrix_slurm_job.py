"""What the matrix asks Slurm about the job it runs in (levante_tasks.matrix.slurm_job), against a fake scontrol
on PATH: a SIGTERM is a time limit only when Slurm gives the job's reason as TimeLimit (not scancel, requeue or
preemption, nor a Slurm that does not answer); the config key that sets the time of a model's or the end step's
jobs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from levante_tasks.errors import LevanteError
from levante_tasks.matrix import slurm_job
from levante_tasks.matrix.slurm_options import parse_slurm

# `scontrol -o show job` while a job ends (JobState reads COMPLETING for a time limit and a scancel alike)
ENDING = "JobId=42 JobName=m1-a JobState=COMPLETING Reason={reason} RunTime=00:01:12 TimeLimit={limit} TimeMin=N/A"


def fake_scontrol(folder: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> Path:
    """A `scontrol` running `script` first on PATH; returns the file its arguments are appended to."""
    (folder / "scontrol").write_text(f'#!/bin/sh\necho "$@" >> {folder}/calls\n{script}\n', encoding="utf-8")
    (folder / "scontrol").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    return folder / "calls"


@pytest.mark.parametrize(("script", "expected"), [
    (f"echo '{ENDING.format(reason='TimeLimit', limit='00:01:00')}'", "00:01:00"),
    (f"echo '{ENDING.format(reason='TimeLimit', limit='1-00:00:00')}'", "1-00:00:00"),
    (f"echo '{ENDING.format(reason='None', limit='00:01:00')}'", None),  # scancel, scontrol requeue
    (f"echo '{ENDING.format(reason='Preempted', limit='00:01:00')}'", None),
    ("echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1", None),
    ("sleep 30", None),  # no answer in time: the SIGTERM is reported as it is, before Slurm's SIGKILL
])
def test_a_sigterm_is_a_time_limit_only_when_slurm_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          script: str, expected: str | None) -> None:
    calls = fake_scontrol(tmp_path, monkeypatch, script)
    monkeypatch.setattr(slurm_job, "SCONTROL_SECONDS", 1.0)
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    assert slurm_job.time_limit_reached() == expected
    assert calls.read_text(encoding="utf-8") == "-o show job 42\n"
    monkeypatch.delenv("SLURM_JOB_ID")
    assert slurm_job.time_limit_reached() is None  # outside Slurm nothing is asked
    assert calls.read_text(encoding="utf-8") == "-o show job 42\n"


def test_a_job_is_named_as_squeue_shows_it() -> None:
    assert slurm_job.job_name({"SLURM_JOB_ID": "42", "SLURM_ARRAY_JOB_ID": "41", "SLURM_ARRAY_TASK_ID": "1"}) == "41_1"
    assert slurm_job.job_name({"SLURM_JOB_ID": "42"}) == "42"
    assert slurm_job.job_name({}) is None


def test_the_time_key_is_the_one_that_sets_the_jobs_time() -> None:
    def fail(key: str, problem: str) -> Exception:
        return LevanteError(f"{key}: {problem}")

    spec = parse_slurm({"time": "04:00:00", "models": {"a": {"time": "08:00:00"}, "b": {"mem": "8G"}},
                        "end_step": {"time": "00:30:00"}}, ["a", "b"], fail)
    assert [spec.time_key("a"), spec.time_key("b"), spec.time_key(), spec.time_key(end_step=True)] == [
        "slurm.models.a.time", "slurm.time", "slurm.time", "slurm.end_step.time"]
    assert parse_slurm(None, ["a"], fail).time_key("a", end_step=True) == "slurm.time"  # none set: set one there
