"""A real single-node Slurm cluster for the tests: Debian's slurm-wlm (slurmctld, slurmd) and munge, started by
hand in a temp folder (private munge key and socket, private slurm.conf through SLURM_CONF, free ports, no
accounting database: job states come from `scontrol show job`), one node `localhost` with 2 CPUs.

`make test` installs the packages (scripts/ensure_slurm.sh); elsewhere the tests skip with the reason when they are
missing, and fail in CI (CI=true). Only the daemons started here are stopped, by their pid files.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

DAEMONS = ("munged", "slurmctld", "slurmd", "slurmstepd")
COMMANDS = ("sbatch", "scontrol", "squeue", "scancel", "sinfo")


def _binary(name: str) -> str | None:
    """A daemon or command (daemons live in /usr/sbin, which a user's PATH may lack)."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def require_slurm() -> None:
    """Skip (fail in CI) unless Slurm and munge are installed and we are root (slurmd must be)."""
    missing = [name for name in (*DAEMONS, *COMMANDS) if _binary(name) is None]
    reason = (f"Slurm not installed ({', '.join(missing)} missing: apt-get install slurm-wlm munge)" if missing
              else "starting slurmd needs root" if os.geteuid() != 0 else None)
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}: in CI `make test` installs them (scripts/ensure_slurm.sh)")
    print(f"skipping the Slurm tests: {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _conf(root: Path, max_array_size: int) -> str:
    return "\n".join([
        "ClusterName=levantetest", "SlurmctldHost=localhost(127.0.0.1)",
        f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
        "AuthType=auth/munge", f"AuthInfo=socket={root}/munge/socket", "CredType=cred/munge",
        "SlurmUser=root", "SlurmdUser=root",
        f"StateSaveLocation={root}/state", f"SlurmdSpoolDir={root}/spool",
        f"SlurmctldPidFile={root}/slurmctld.pid", f"SlurmdPidFile={root}/slurmd.pid",
        f"SlurmctldLogFile={root}/log/slurmctld.log", f"SlurmdLogFile={root}/log/slurmd.log",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "MpiDefault=none",
        "SchedulerType=sched/backfill", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
        "ReturnToService=2", "JobCompType=jobcomp/none", "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none", f"MaxArraySize={max_array_size}", "KillWait=10",
        "MinJobAge=3600", "SchedulerParameters=sched_interval=1", "SlurmdTimeout=30",
        "NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 State=UNKNOWN",
        "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


def _pid(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _stop(pid_file: Path) -> None:
    """SIGTERM the daemon named by `pid_file` and wait (SIGKILL after 15 s)."""
    pid = _pid(pid_file)
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            os.kill(pid, 0)
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)


def scontrol_job(env: dict[str, str], job: str) -> dict[str, str]:
    """`scontrol show job JOB` as key -> value (the first record: one array task or a plain job)."""
    done = subprocess.run(["scontrol", "-o", "show", "job", job], env=env, capture_output=True, text=True,
                          check=True)
    fields = {}
    for word in done.stdout.splitlines()[0].split():
        key, _, value = word.partition("=")
        fields[key] = value
    return fields


@contextlib.contextmanager
def slurm_cluster(root: Path, max_array_size: int) -> Iterator[dict[str, str]]:
    """Start munged, slurmctld and slurmd under `root`; yield the environment that talks to them (SLURM_CONF);
    afterwards cancel every job and stop exactly those daemons."""
    require_slurm()
    for sub in ("munge", "state", "spool", "log"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(root / "munge", 0o755)
    key = root / "munge" / "key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = root / "slurm.conf"
    conf.write_text(_conf(root, max_array_size), encoding="utf-8")
    env = {**os.environ, "SLURM_CONF": str(conf)}
    pid_files = [root / "munge" / "munged.pid", root / "slurmctld.pid", root / "slurmd.pid"]
    try:
        subprocess.run([_binary("munged"), "--force", f"--key-file={key}", f"--socket={root}/munge/socket",
                        f"--pid-file={pid_files[0]}", f"--log-file={root}/log/munged.log",
                        f"--seed-file={root}/munge/seed"], env=env, check=True, capture_output=True)
        subprocess.run([_binary("slurmctld"), "-i"], env=env, check=True, capture_output=True)
        subprocess.run([_binary("slurmd"), "-N", "localhost"], env=env, check=True, capture_output=True)
        deadline = time.monotonic() + 60
        while True:
            state = subprocess.run(["sinfo", "--noheader", "--format=%T"], env=env, capture_output=True,
                                   text=True, check=False).stdout.strip()
            if state == "idle":
                break
            if time.monotonic() > deadline:
                logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in (root / "log").glob("*.log"))
                pytest.fail(f"the test Slurm cluster did not come up (node state {state!r}):\n{logs}")
            time.sleep(0.2)
        yield env
    finally:
        if _pid(pid_files[1]) is not None:
            subprocess.run(["scancel", "--user=root"], env=env, capture_output=True, check=False)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and subprocess.run(
                    ["squeue", "--noheader"], env=env, capture_output=True, text=True, check=False).stdout.strip():
                time.sleep(0.2)
        for pid_file in reversed(pid_files):
            _stop(pid_file)
