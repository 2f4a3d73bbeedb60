"""The Slurm job this process runs in, as Slurm describes it: its name for lines saying where a cell runs, and
whether the SIGTERM it got is Slurm ending it at its time limit.

The time limit is recognised by the job's Reason, asked of slurmctld after the signal: when a job reaches its
time limit, slurmctld sets its reason to `TimeLimit` in the same locked step in which it orders the node to
signal it, so the query that follows the signal sees it; `scancel`, `scontrol requeue` and preemption leave
another reason. (While the job ends its state reads COMPLETING either way; elapsed time against the limit would
be wrong after `scontrol update EndTime=`, a suspension or OverTimeLimit; `sbatch --signal` comes up to a
minute early and would take a `scancel` in that minute for the time limit.)
"""

from __future__ import annotations

import os
import subprocess

SCONTROL_SECONDS = 5.0  # the query must end well within KillWait (30 s by default), when Slurm sends SIGKILL


def job_name(env: dict[str, str] | None = None) -> str | None:
    """This process's Slurm job as `squeue` shows it: `<array job>_<task>` for an array task, else the job id;
    None outside Slurm."""
    env = os.environ if env is None else env
    array, task = env.get("SLURM_ARRAY_JOB_ID"), env.get("SLURM_ARRAY_TASK_ID")
    return f"{array}_{task}" if array and task else env.get("SLURM_JOB_ID") or None


def _job_fields(job_id: str) -> dict[str, str]:
    """`scontrol -o show job JOB` as key -> value (empty when Slurm does not answer in time or at all)."""
    try:
        done = subprocess.run(["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True,
                              check=False, timeout=SCONTROL_SECONDS)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    lines = done.stdout.splitlines() if done.returncode == 0 else []
    return dict(word.partition("=")[::2] for word in lines[0].split()) if lines else {}


def time_limit_reached() -> str | None:
    """The job's time limit in Slurm's format (`01:00:00`, `1-00:00:00`) when Slurm is ending this job because
    it reached it, else None (not in a Slurm job, another reason, or no answer: then the SIGTERM is reported as
    it is)."""
    job_id = os.environ.get("SLURM_JOB_ID")
    if not job_id:
        return None
    fields = _job_fields(job_id)
    if fields.get("Reason") != "TimeLimit":
        return None
    return fields.get("TimeLimit") or "unknown"
