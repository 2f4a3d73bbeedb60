"""`lmms_fork.run_cli` stands for `python -m levante_tasks.testing.lmms_cli`: the same command through both gives the
same results file (less its clock readings and object addresses), the same exit status and the same last error line,
for a good run and for bad ones; and for `python -m lmms_eval` with a run's own sitecustomize and its own lmms_eval
tree on PYTHONPATH, as a new interpreter has them. For `python -m levante_tasks` (entry `levante_tasks`): the same
files, streams and status as a real process, and runs in turn under different hash seeds."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from levante_tasks.schema.task_source import TASKS_DIR
from levante_tasks.testing.fork_stream import SOCKET_ENV
from levante_tasks.testing.lmms_fork import CLI_HASH_SEEDS, MODULES, _exit_status, run_cli

CLOCK = ("date", "start_time", "end_time", "total_evaluation_time_seconds")
ADDRESS = re.compile(r" at 0x[0-9a-f]+>")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from levante_tasks.testing.fixture_data import write_fixture

    root = tmp_path_factory.mktemp("levante-data")
    write_fixture(root)
    return root


def both(args: list[str], data: Path, tmp_path: Path,
         entry: str = "lmms_cli") -> dict[str, tuple[subprocess.CompletedProcess[str], Path]]:
    """Run `python -m MODULES[entry] args` as a real process and through `run_cli`, each in its own folder
    (`--output_path out`)."""
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("LEVANTE_DATA_VERSION", None)
    runs = {}
    for way in ("real", "fork"):
        (tmp_path / way).mkdir()
        full = [*args, "--output_path", "out"]
        if way == "real":
            done = subprocess.run([sys.executable, "-m", MODULES[entry], *full], cwd=tmp_path / way, env=env,
                                  capture_output=True, text=True, timeout=600, check=False)
        else:
            done = run_cli(full, cwd=tmp_path / way, env=env, entry=entry)
        runs[way] = (done, tmp_path / way / "out")
    return runs


def comparable(results: Path) -> dict[str, Any]:
    """A results file without what differs from run to run: clock readings and the addresses of the task hooks."""
    document = json.loads(ADDRESS.sub(">", results.read_text(encoding="utf-8")))
    return {key: value for key, value in document.items() if key not in CLOCK}


def test_a_good_run_gives_the_same_results_and_samples(data: Path, tmp_path: Path) -> None:
    args = ["--model", "levante_fixed", "--model_args", "letter=B", "--tasks", "levante_trog,levante_vocab_mc",
            "--include_path", str(TASKS_DIR), "--log_samples", "--seed", "0,1234,1234,1234", "--verbosity", "WARNING"]
    runs = both(args, data, tmp_path)
    found = {}
    for way, (done, out) in runs.items():
        assert done.returncode == 0, (way, done.stderr[-3000:])
        (results,) = out.rglob("*_results.json")
        samples = {path.name.split("_samples_")[1]: path.read_text(encoding="utf-8")
                   for path in out.rglob("*_samples_*.jsonl")}
        found[way] = (comparable(results), samples)
    assert found["fork"] == found["real"]
    assert found["fork"][0]["results"]["levante_trog"]["levante_acc,none"] > 0  # a real run, scored
    assert sorted(found["fork"][1]) == ["levante_trog.jsonl", "levante_vocab_mc.jsonl"]
    assert runs["fork"][0].stdout.splitlines()[-4:] == runs["real"][0].stdout.splitlines()[-4:]  # the table


@pytest.mark.parametrize(("entry", "args"), [
    ("lmms_cli", ["--model", "levante_fixed", "--tasks", "no_such_task_x"]),
    ("lmms_cli", ["--model", "levante_fixed", "--tasks", "levante_trog", "--no_such_flag"]),
    ("lmms_eval", ["--model", "dummy", "--tasks", "levante_trog", "--no_such_flag"]),
], ids=["unknown-task", "unknown-flag", "lmms_eval-unknown-flag"])
def test_a_bad_run_fails_alike(entry: str, args: list[str], data: Path, tmp_path: Path) -> None:
    runs = both(args, data, tmp_path, entry)
    (real, _), (fork, _) = runs["real"], runs["fork"]
    assert real.returncode in (1, 2) and fork.returncode == real.returncode, (real.stderr[-2000:], fork.stderr[-2000:])
    assert fork.stderr.strip().splitlines()[-1] == real.stderr.strip().splitlines()[-1]
    assert not any(out.exists() and any(out.rglob("*_results.json")) for _, out in runs.values())


# Registers, at start-up, a note of the `lmms_eval` the run imported, written when it exits (after lmms-eval's
# import both in a real process, whose sitecustomize runs first, and in a fork of the trees' server, where the run
# imports its tree's lmms_eval itself after the sitecustomize).
SITE = '''
import atexit, os, sys
atexit.register(lambda: open(os.environ["LP_SITE_LOG"], "a").write(sys.modules["lmms_eval"].__file__ + "\\n"))
'''


def _mirror(src: Path, root: Path) -> Path:
    """`src` (an installed lmms_eval package) mirrored under `root` with a symlink per file: a tree of its own."""
    for folder, _dirs, files in os.walk(src):
        mirrored = root / Path(folder).relative_to(src.parent)
        mirrored.mkdir(parents=True, exist_ok=True)
        for name in files:
            (mirrored / name).symlink_to(Path(folder) / name)
    return root


def test_a_sitecustomize_on_the_runs_path_and_its_own_lmms_eval_are_a_real_processs(data: Path,
                                                                                    tmp_path: Path) -> None:
    """A `sitecustomize` in the run's new PYTHONPATH entries runs in the fork as in a new interpreter (the compat
    suite's spy is installed so), and a run whose PYTHONPATH holds its own lmms_eval imports that one (the patch
    tests' trees), while a run without it still gets the installed one."""
    installed = importlib.util.find_spec("lmms_eval")  # not imported here: the test process stays without it
    assert installed is not None and installed.origin is not None
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE, encoding="utf-8")
    tree = _mirror(Path(installed.origin).parent, tmp_path / "tree")
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    args = ["--model", "dummy", "--tasks", "levante_trog", "--no_such_flag"]  # ends at argparse: exit 2
    seen = {}
    for way, path in (("real", [tree, site]), ("fork", [tree, site]), ("installed", [site])):
        log = tmp_path / f"{way}.log"
        run_env = {**env, "LP_SITE_LOG": str(log),
                   "PYTHONPATH": os.pathsep.join([*map(str, path), os.environ.get("PYTHONPATH", "")])}
        (tmp_path / way).mkdir()
        if way == "real":
            done = subprocess.run([sys.executable, "-m", MODULES["lmms_eval"], *args], cwd=tmp_path / way,
                                  env=run_env, capture_output=True, text=True, timeout=600, check=False)
        else:
            done = run_cli(args, cwd=tmp_path / way, env=run_env, entry="lmms_eval")
        assert done.returncode == 2, (way, done.stderr[-2000:])
        seen[way] = log.read_text(encoding="utf-8").splitlines()
    assert seen["fork"] == seen["real"] == [str(tree / "lmms_eval" / "__init__.py")]
    assert seen["installed"] == [installed.origin]


def test_runs_with_their_own_lmms_eval_share_a_tree_server_and_at_most_tree_servers_stay(tmp_path: Path) -> None:
    """Runs with different lmms_eval trees share one `tree` server (each imports its own tree's lmms_eval); a third
    import-time environment stops the least recently used tree server; one used again is kept. (The servers here get
    a hash seed the interpreter refuses: each exits at start-up, which the count does not need.)"""
    from levante_tasks.testing import lmms_fork

    for name in ("a", "b"):
        (tmp_path / name / "lmms_eval").mkdir(parents=True)

    def key(tree: str, seed: str) -> tuple[str | None, ...]:
        env = {**os.environ, "PYTHONPATH": str(tmp_path / tree), "PYTHONHASHSEED": seed}
        return lmms_fork._key(env, "lmms_eval", [])

    assert key("a", "x0") == key("b", "x0") and key("a", "x0")[0] == lmms_fork.TREE
    keys = [key("a", f"x{i}") for i in range(3)]
    try:
        lmms_fork._server(keys[0])
        lmms_fork._server(keys[1])
        lmms_fork._server(keys[0])  # a used again: b is now the least recently used
        lmms_fork._server(keys[2])
        trees = [key for key in lmms_fork._SERVERS if key[0] == lmms_fork.TREE]
        assert len(trees) == lmms_fork.TREE_SERVERS and keys[1] not in trees and {keys[0], keys[2]} <= set(trees)
    finally:
        lmms_fork._stop([key for key in keys if key in lmms_fork._SERVERS])


def cli_both(args: list[str], tmp_path: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """`python -m levante_tasks ARGS` as a real process and through `run_cli`, each in its own folder."""
    runs = {}
    for way in ("real", "fork"):
        (tmp_path / way).mkdir()
        if way == "real":
            runs[way] = subprocess.run([sys.executable, "-m", MODULES["levante_tasks"], *args], cwd=tmp_path / way,
                                       env=dict(os.environ), capture_output=True, text=True, timeout=600, check=False)
        else:
            runs[way] = run_cli(args, cwd=tmp_path / way, env=dict(os.environ), entry="levante_tasks")
    return runs


def folder_bytes(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Each file and folder under `folder`: its permission bits and bytes (b"" for a folder)."""
    return {str(path.relative_to(folder)): (path.stat().st_mode & 0o777, path.read_bytes() if path.is_file() else b"")
            for path in sorted(folder.rglob("*"))}


def test_a_levante_tasks_command_writes_the_same_files_and_streams_as_a_real_process(tmp_path: Path) -> None:
    """Under the caller's umask (027 here, both servers started under the usual one before)."""
    for _ in CLI_HASH_SEEDS:
        assert run_cli(["--version"], cwd=tmp_path, env=dict(os.environ), entry="levante_tasks").returncode == 0
    mask = os.umask(0o027)
    try:
        runs = cli_both(["synth", "--seed", "3", "--out", "release"], tmp_path)
    finally:
        os.umask(mask)
    for way, done in runs.items():
        assert done.returncode == 0, (way, done.stderr[-3000:])
    assert (runs["fork"].stdout, runs["fork"].stderr) == (runs["real"].stdout, runs["real"].stderr)
    written = {way: folder_bytes(tmp_path / way / "release") for way in runs}
    assert written["fork"] == written["real"] and len(written["real"]) > 10
    assert {mode for mode, _ in written["real"].values()} <= {0o640, 0o750}


@pytest.mark.parametrize("args", [
    ["summarize", "no-such-folder", "--out", "summary"],
    ["prepare", "--no-such-flag"],
    ["no-such-command"],
], ids=["missing-input", "unknown-flag", "unknown-command"])
def test_a_bad_levante_tasks_command_fails_alike(args: list[str], tmp_path: Path) -> None:
    runs = cli_both(args, tmp_path)
    real, fork = runs["real"], runs["fork"]
    assert real.returncode == 2 and fork.returncode == real.returncode, (real.stderr[-2000:], fork.stderr[-2000:])
    assert (fork.stdout, fork.stderr) == (real.stdout, real.stderr)
    assert not any((tmp_path / way / "summary").exists() for way in runs)


def test_levante_tasks_runs_in_turn_see_different_hash_seeds(tmp_path: Path) -> None:
    """A test that runs a command twice and compares the outputs must still see two hash seeds, as with two new
    interpreters (a rerun of a command goes to the other of two servers; a sitecustomize on the run's path notes
    `hash`), also with another command run between the two."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        'import os\nopen(os.environ["LP_HASH_LOG"], "a").write(str(hash("levante")) + "\\n")\n', encoding="utf-8")
    log = tmp_path / "hash.log"
    env = {**os.environ, "LP_HASH_LOG": str(log),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    env.pop("PYTHONHASHSEED", None)
    for args in (["--version"], ["--help"], ["--version"], ["--version"]):
        assert run_cli(args, cwd=tmp_path, env=env, entry="levante_tasks").returncode == 0
    version_1, _help, version_2, version_3 = log.read_text(encoding="utf-8").split()
    assert version_1 != version_2 and version_2 != version_3


def test_a_runs_model_classes_are_imported_by_the_server_before_the_fork(data: Path, tmp_path: Path) -> None:
    """`models=[name]`: the class modules the registry lists for it are there when the run starts (a sitecustomize
    on the run's path notes it), and the run ends as it does without them."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        'import os, sys\nopen(os.environ["LP_MODEL_LOG"], "a").write(str("lmms_eval.models.simple.openai" in '
        'sys.modules) + "\\n")\n', encoding="utf-8")
    log = tmp_path / "model.log"
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data), "LP_MODEL_LOG": str(log),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    args = ["--model", "openai", "--tasks", "levante_trog", "--no_such_flag"]  # ends at argparse: exit 2
    done = run_cli(args, cwd=tmp_path, env=env, entry="lmms_eval", models=["openai"])
    assert done.returncode == 2, done.stderr[-2000:]
    assert log.read_text(encoding="utf-8").split() == ["True"]


# Whether the objects the process holds at this point are frozen (out of the collector's generations): a fork of a
# server or zygote holds hundreds of thousands of preloaded objects, a new interpreter none frozen.
FROZEN = "import gc\nprint('frozen', gc.get_freeze_count() > 10 * len(gc.get_objects()))\n"


def test_a_run_collects_only_its_own_objects_not_the_servers(tmp_path: Path) -> None:
    """What a server or zygote imported is frozen before it forks, so a run's `gc.collect()` (lmms-eval's model
    `clean()` and accelerate's `release_memory` call it) walks only what the run made: in a new interpreter nothing
    is frozen. A zygote's fork is seen by a script that a fork_stream client runs (`forked_script`)."""
    real = subprocess.run([sys.executable, "-c", FROZEN], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          check=False)
    fork = run_cli([FROZEN], cwd=tmp_path, env=dict(os.environ), entry="-c")
    (tmp_path / "frozen.py").write_text(FROZEN, encoding="utf-8")
    assert os.environ.get(SOCKET_ENV), "no fork_stream dispatcher in the test environment"
    streamed = subprocess.run([sys.executable, "-m", "levante_tasks.testing.forked_script", "frozen.py"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    real_script = subprocess.run([sys.executable, "frozen.py"], cwd=tmp_path, capture_output=True, text=True,
                                 timeout=60, check=False)
    assert real.stdout == real_script.stdout == "frozen False\n", (real.stderr[-2000:], real_script.stderr[-2000:])
    assert fork.stdout == streamed.stdout == "frozen True\n", (fork.stderr[-2000:], streamed.stderr[-2000:])


# ---------------------------------------------------------------- fork_stream: a command the matrix runner starts

FORKED, REAL = "levante_tasks.testing.forked_doubles", MODULES["matrix_doubles"]
# Makes every fixed-letter model, when built, say so with its process id on stderr and then wait for a signal (a
# command that is surely running when a test signals it; installed at start-up: in a zygote, before it forks); a
# SIGTERM it handles itself, so that only a command the signal reached ends that way.
BLOCK = '''
import os, signal, sys
from levante_tasks.testing import models
def _built_then_wait(self, *args, **kwargs):
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(f"command stopped by signal {signum}"))
    print(f"blocked {os.getpid()}", file=sys.stderr, flush=True)
    signal.pause()
models.FixedLetterModel.__init__ = _built_then_wait
'''
CLOCK_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?")  # loguru's, on each line
TROG = ["--model", "levante_fixed", "--model_args", "letter=B", "--tasks", "levante_trog", "--limit", "2",
        "--include_path", str(TASKS_DIR), "--verbosity", "WARNING"]


def stream_env(data: Path, *path: Path) -> dict[str, str]:
    """The environment a matrix gives its cells: this one (the dispatcher's socket included), the data, offline."""
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [*map(str, path), os.environ.get("PYTHONPATH")]))}
    env.pop("LEVANTE_DATA_VERSION", None)
    return env


def zygotes() -> set[int]:
    """The fork_stream zygotes among this process's descendants."""
    parents = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        parents[int(entry)] = (int(stat.rsplit(")", 1)[1].split()[1]), b"zygote" in cmdline)
    found = set()
    for pid, (parent, is_zygote) in parents.items():
        ancestor = parent
        while is_zygote and ancestor in parents and ancestor != os.getpid():
            ancestor = parents[ancestor][0]
        if is_zygote and ancestor == os.getpid():
            found.add(pid)
    return found


def in_folder(folder: Path) -> list[int]:
    """The processes whose working folder is `folder`."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{entry}/cwd") == str(folder):
                found.append(int(entry))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("args", [[*TROG, "--log_samples"], [*TROG, "--model", "levante_crash"]],
                         ids=["good", "crash"])
def test_a_streamed_fork_ends_as_the_real_command_with_its_files_and_streams(args: list[str], data: Path,
                                                                             tmp_path: Path) -> None:
    runs = {}
    for module in (REAL, FORKED):
        folder = tmp_path / module.rsplit(".", 1)[1]
        folder.mkdir()
        done = subprocess.run([sys.executable, "-m", module, *args, "--output_path", "out"], cwd=folder,
                              env=stream_env(data), capture_output=True, text=True, timeout=600, check=False)
        results = sorted((folder / "out").rglob("*_results.json"))
        samples = {p.name.split("_samples_")[1]: p.read_text() for p in (folder / "out").rglob("*_samples_*.jsonl")}
        runs[module] = (done, [comparable(p) for p in results], samples)
    (real, real_results, real_samples), (fork, fork_results, fork_samples) = runs[REAL], runs[FORKED]
    assert fork.returncode == real.returncode, (real.stderr[-2000:], fork.stderr[-2000:])
    assert (fork_results, fork_samples) == (real_results, real_samples)
    for stream in ("stdout", "stderr"):  # the table or the error, without clock times
        tails = [CLOCK_TIME.sub("<time>", getattr(run, stream)).strip().splitlines()[-4:] for run in (real, fork)]
        assert tails[0] == tails[1], stream
    if args[-1] == "--log_samples":
        assert real.returncode == 0 and real_results and sorted(real_samples) == ["levante_trog.jsonl"]
    else:
        assert real.returncode != 0 and not real_results
    assert zygotes(), "no zygote served the forked command"


@pytest.fixture(scope="module")
def blocking_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("block-site")
    (site / "sitecustomize.py").write_text(BLOCK, encoding="utf-8")
    return site


def interruptible() -> None:
    """SIGINT at its default, as a command started from a shell has it (an xdist worker ignores it, and what it
    starts inherits that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_blocked(module: str, folder: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], int]:
    """Start `python -m module` on TROG in `folder`; return it once its model is built, and the command's pid."""
    folder.mkdir()
    process = subprocess.Popen([sys.executable, "-m", module, *TROG, "--output_path", "out"], cwd=folder, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               preexec_fn=interruptible)
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("blocked "):
            return process, int(line.split()[1])
    raise AssertionError(f"{module} ended ({process.wait()}) before its model was built")


# How a blocked command ends (BLOCK): by its own SIGTERM handler; by KeyboardInterrupt's traceback, then the
# interpreter killing itself with SIGINT, as Python does after an uncaught KeyboardInterrupt.
ENDS = {signal.SIGTERM: (1, [f"command stopped by signal {signal.SIGTERM}"]),
        signal.SIGINT: (-signal.SIGINT, ["KeyboardInterrupt"])}


def signalled(process: subprocess.Popen[str], signum: int) -> tuple[int, list[str]]:
    """Send `signum` to `process`; its exit status and the last line of its stderr."""
    process.send_signal(signum)
    _, rest = process.communicate(timeout=60)
    return process.returncode, rest.strip().splitlines()[-1:]


@pytest.mark.parametrize("signum", sorted(ENDS))
def test_a_signal_to_the_client_reaches_the_command_and_the_client_ends_as_it(
        signum: int, data: Path, tmp_path: Path, blocking_site: Path) -> None:
    process, command = start_blocked(FORKED, tmp_path / "run", stream_env(data, blocking_site))
    assert command != process.pid and command in in_folder(tmp_path / "run")  # another process, forked
    assert signalled(process, signum) == ENDS[signum]


def test_a_killed_client_takes_its_command_along(data: Path, tmp_path: Path, blocking_site: Path) -> None:
    folder = tmp_path / "run"
    process, command = start_blocked(FORKED, folder, stream_env(data, blocking_site))
    assert command != process.pid and command in in_folder(folder)
    process.kill()
    process.wait()
    for _ in range(500):
        if not in_folder(folder):
            break
        time.sleep(0.02)
    assert not in_folder(folder), "the command outlived its killed client"


def test_a_command_killed_by_sigkill_ends_its_client_so(data: Path, tmp_path: Path, blocking_site: Path) -> None:
    """What the runner sees when the command alone is killed (the out-of-memory killer): -9, as from a real one."""
    process, command = start_blocked(FORKED, tmp_path / "run", stream_env(data, blocking_site))
    assert command != process.pid
    os.kill(command, signal.SIGKILL)
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL


@pytest.mark.parametrize(("code", "status"), [(None, 0), (3, 3), (-1, 255), (256, 0), ("message", 1)])
def test_a_forked_runs_exit_status_is_the_interpreters(code: object, status: int) -> None:
    """`python -c "import sys; sys.exit(CODE)"`'s status, as the operating system keeps it."""
    real = subprocess.run([sys.executable, "-c", f"import sys; sys.exit({code!r})"], capture_output=True, check=False)
    assert real.returncode == status == _exit_status(SystemExit(code))


def test_without_a_dispatcher_the_client_is_the_real_command(data: Path, tmp_path: Path,
                                                             blocking_site: Path) -> None:
    """Exec'd: the same process, which a signal ends as it ends a forked command (ENDS)."""
    env = stream_env(data, blocking_site)
    del env[SOCKET_ENV]
    process, command = start_blocked(FORKED, tmp_path / "run", env)
    assert command == process.pid
    assert signalled(process, signal.SIGTERM) == ENDS[signal.SIGTERM]


def test_a_server_indexes_each_task_folder_once_and_a_manager_gets_a_copy_only_where_it_would_read_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`task_index`: a TaskManager gets a copy of the server's index of a kept folder (what one manager does to its copy
    no other sees), and reads the folder itself where it would not read that index or would log more: a same-size
    edit of a YAML, a file a relative include names in its working folder, a handler that prints what the server's
    reading logged (a YAML whose include is missing: DEBUG). A dangling link is a file that is not there. Another
    spelling of the folder gets the index that reading it so gives. A server keeps lmms-eval's own task folder and
    levante-tasks'."""
    from lmms_eval import tasks
    from loguru import logger

    from levante_tasks.testing import lmms_fork, task_index

    folders: list[list[str]] = []
    monkeypatch.setattr(task_index, "keep_task_index", folders.append)
    lmms_fork._index_task_folders()
    assert folders == [[os.path.dirname(os.path.abspath(tasks.__file__)) + "/", str(TASKS_DIR)]]
    monkeypatch.undo()

    folder = tmp_path / "tasks"
    shutil.copytree(TASKS_DIR, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "broken.yaml").write_text("include: _no_such_template_yaml\ntask: broken\n", encoding="utf-8")
    (folder / "dangling.yaml").symlink_to(tmp_path / "nowhere.yaml")
    read, reads = tasks.TaskManager._get_task_and_group, []

    def counted(self: tasks.TaskManager, task_dir: str) -> dict[str, dict[str, Any]]:
        reads.append(task_dir)
        return read(self, task_dir)

    def index() -> dict[str, dict[str, Any]]:
        return tasks.TaskManager("WARNING", include_defaults=False)._get_task_and_group(str(folder))

    quietest = task_index._quietest_handler
    monkeypatch.setattr(tasks.TaskManager, "_get_task_and_group", counted)  # the memo is undone after the test too
    monkeypatch.chdir(tmp_path)
    task_index.keep_task_index([str(folder)])
    assert reads == [str(folder)]
    monkeypatch.setattr(task_index, "_quietest_handler", lambda: 20)  # the runs' handlers print INFO and above
    first = index()
    assert reads == [str(folder)] and "levante_trog" in first and "broken" not in first
    kept = dict(first["levante_trog"])
    first["levante_trog"]["type"] = "changed"  # a run that changes its manager's index
    assert index()["levante_trog"] == kept and reads == [str(folder)]
    for spelling in ("tasks", "./tasks/"):  # the matrix names the folder relative to its base
        spelled = tasks.TaskManager("WARNING", include_defaults=False)._get_task_and_group(spelling)
        assert spelled == read(tasks.TaskManager(include_defaults=False), spelling) and reads == [str(folder)]
    monkeypatch.setattr(task_index, "_quietest_handler", lambda: 10)  # one prints DEBUG: the skipped YAML's line
    index()
    assert reads == [str(folder)] * 2
    monkeypatch.setattr(task_index, "_quietest_handler", lambda: 20)
    (tmp_path / "_egma_math_generate_until_template_yaml").write_text("tag: from_the_working_folder\n")
    assert "from_the_working_folder" in index() and reads == [str(folder)] * 3
    (tmp_path / "_egma_math_generate_until_template_yaml").unlink()
    trog = folder / "trog" / "levante_trog.yaml"
    trog.write_text(trog.read_text(encoding="utf-8").replace("task: levante_trog\n", "task: levante_tXog\n", 1),
                    encoding="utf-8")  # the same size
    edited = index()
    assert reads == [str(folder)] * 4 and "levante_tXog" in edited and "levante_trog" not in edited
    handler = logger.add(lambda _message: None, level="TRACE")
    try:
        assert quietest() == logger.level("TRACE").no
    finally:
        logger.remove(handler)


def test_a_run_starts_with_the_decimal_flags_of_a_new_interpreter(tmp_path: Path) -> None:
    """The server's imports leave no decimal signal flag raised for its runs (importing pytablewriter raises one)."""
    code = "import decimal\nprint(sorted(s.__name__ for s, up in decimal.getcontext().flags.items() if up))"
    real = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          check=False)
    fork = run_cli([code], cwd=tmp_path, env=dict(os.environ), entry="-c")
    assert real.stdout == fork.stdout == "[]\n", (real.stderr[-1000:], fork.stderr[-1000:])


def test_a_code_run_is_python_c(tmp_path: Path) -> None:
    """Entry `-c` (`python -c CODE ARGS`): the code sees what it sees in a new interpreter: its own `__main__`, no
    `__future__` flag of the server's modules, `-c` and ARGS in sys.argv, '' first on sys.path."""
    code = ("import sys, __main__\ndef f(x: int) -> None: pass\n"
            "print(f.__annotations__, __name__, __main__.__dict__ is globals(), sys.argv, repr(sys.path[0]))")
    real = subprocess.run([sys.executable, "-c", code, "a", "b"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False)
    fork = run_cli([code, "a", "b"], cwd=tmp_path, env=dict(os.environ), entry="-c")
    assert real.returncode == fork.returncode == 0, (real.stderr, fork.stderr)
    assert fork.stdout == real.stdout and "<class 'int'>" in real.stdout


# A script that reports what `python SCRIPT` gives it, imports a module beside its real file, reports again when the
# interpreter exits, and ends with status 3, or with status 1 and its message on stderr when its last argument is
# `fail`.
SCRIPT_PROBE = '''import atexit, sys, __main__
import beside
def f(x: int) -> None: pass
print(f.__annotations__, __name__, __file__, sys.argv, sys.path[0], beside.NAME, __main__.__dict__ is globals())
print(type(__loader__).__name__, __spec__, __package__, type(__builtins__).__name__, __cached__, __doc__)
atexit.register(lambda: print("at exit", sys.argv[0], sys.modules["__main__"] is __main__))
raise SystemExit(sys.argv[-1]) if sys.argv[-1] == "fail" else SystemExit(3)
'''


@pytest.mark.parametrize(("spelling", "last"), [("links/probe.py", "three"), ("./links/../links/probe.py", "fail")])
def test_a_script_run_is_python_script(tmp_path: Path, spelling: str, last: str) -> None:
    """Entry `script` (`python SCRIPT ARGS`): the file runs as `__main__` as in a new interpreter: `__file__` the
    working folder joined to the name (not normalised), sys.argv[0] the name as given, the folder of its real file
    (the link resolved) first on sys.path, a source loader and no spec, no `__future__` flag of the server's
    modules, the same `__main__` at exit, the same exit status and streams."""
    real_folder, link_folder = tmp_path / "real", tmp_path / "links"
    real_folder.mkdir()
    link_folder.mkdir()
    (real_folder / "probe.py").write_text(SCRIPT_PROBE, encoding="utf-8")
    (real_folder / "beside.py").write_text("NAME = 'beside the real file'\n", encoding="utf-8")
    (link_folder / "probe.py").symlink_to(real_folder / "probe.py")
    args = [spelling, "a", last]
    real = subprocess.run([sys.executable, *args], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          check=False)
    fork = run_cli(args, cwd=tmp_path, env=dict(os.environ), entry="script")
    assert (fork.returncode, fork.stdout, fork.stderr) == (real.returncode, real.stdout, real.stderr)
    assert real.returncode == (1 if last == "fail" else 3) and real.stderr == ("fail\n" if last == "fail" else "")
    assert f"{tmp_path}/{spelling} ['{spelling}', 'a', '{last}'] {real_folder} beside the real file True" in real.stdout
    assert "SourceFileLoader None None module None None" in real.stdout and f"at exit {spelling} True" in real.stdout


# What tqdm and HF's hub and datasets libraries take from the progress-bar switches, which they read when imported
BARS = ("import io, tqdm, huggingface_hub.constants as hub, datasets.config as ds\n"
        "bar = tqdm.tqdm(range(1), file=io.StringIO())\n"
        "print(bar.disable, hub.HF_HUB_DISABLE_PROGRESS_BARS, ds.HF_DATASETS_DISABLE_PROGRESS_BARS)\n")
BARS_OFF = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}


def test_a_runs_progress_bar_switches_are_its_own(tmp_path: Path) -> None:
    """The progress-bar switches the matrix gives its cells are read when tqdm and HF are imported: a forked run
    with them and one without each see what a new interpreter sees (each is served by a server of its own), and a
    zygote is shared only by commands that agree on them (and on every TQDM_<parameter>), not on TOKENIZERS_PARALLELISM,
    which HF tokenizers read when they run."""
    from levante_tasks.testing import fork_stream

    plain = {k: v for k, v in os.environ.items() if k not in BARS_OFF}
    seen = []
    for env in (plain, {**plain, **BARS_OFF}):
        real = subprocess.run([sys.executable, "-c", BARS], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        fork = run_cli([BARS], cwd=tmp_path, env=env, entry="-c")
        assert fork.stdout == real.stdout, (real.stderr[-1000:], fork.stderr[-1000:])
        seen.append(real.stdout)
    assert seen == ["False None None\n", "True True True\n"]

    def key(**extra: str) -> tuple[Any, ...]:
        return fork_stream._key({"entry": "lmms_eval", "env": {**plain, **extra}})

    assert key() != key(TQDM_DISABLE="1") != key(TQDM_MININTERVAL="5") != key()
    assert key(TOKENIZERS_PARALLELISM="false") == key()
    assert key(**BARS_OFF) == fork_stream._key({"entry": "script", "env": {**plain, **BARS_OFF}})
