"""`lmms_cli` without its start-up per run: lmms-eval's own CLI in a fork of a server that imported it once (and
`levante-tasks` without its libraries' imports per run, in a fork of a server that imported them).

A test that runs `python -m levante_tasks.testing.lmms_cli ARGS` (or `python -m lmms_eval ARGS`) pays about 5 s of
CPU to import lmms-eval before any item. `run_cli(ARGS, cwd=..., env=...)` returns what `subprocess.run(that
command, capture_output=True, text=True)` would (a `CompletedProcess` with the exit status and both streams), but
the command runs in a child forked from a server of the test process (one per import-time environment, below): a
clean interpreter that imported `lmms_eval.__main__` and the test models, and never runs a model itself, so forking
it is safe; it also indexed lmms-eval's own task folder and levante-tasks' once (`task_index`: a run's TaskManager
gets a copy where it would read the same index). A server starts in an empty folder, so it imports what a real run
started elsewhere imports (the installed levante-tasks, not the checkout the tests run from). The child takes the
run's working folder, environment, `sys.argv` and new `PYTHONPATH` entries, then calls what that module runs
(`lmms_cli` registers the test models, then lmms-eval's `cli_evaluate`; `lmms_eval` its dispatcher; `inspect`
inspect_ai's CLI, which imports inspect_ai in the child); its exit status is the interpreter's (SystemExit code, 1
and a traceback on an uncaught exception, -N when killed by signal N).
Variables read when lmms-eval is imported (`import_time`: the offline switches, caches and progress-bar switches of HF
and tqdm, the legacy plugin list, the hash seed) cannot change in a fork: a run whose values differ from the server's
gets its own server.
A run whose PYTHONPATH holds its own `lmms_eval` (a tree of its sources) or plugin packages goes to a `tree` server
instead, one per import-time environment whatever the tree (the last TREE_SERVERS of those are kept): it imported
only third-party libraries that lmms-eval imports (`TREE_LIBRARIES`: about 4 of the 5 s of CPU its CLI's import
takes), so each run imports lmms-eval afresh from its own path (about 0.3 s), as a new interpreter would after those
libraries, and lmms-eval's own variables (`LMMS_ENV`) are the run's: the patch tests' 18 trees share one server.
A `sitecustomize` that a new interpreter would import from the run's new PYTHONPATH entries (a spy a test installs
that way) is run in the child before the command; in a fork of an lmms server that is after lmms-eval's import
instead of before it: one that sets what lmms-eval reads at import has no effect there. Every run forked from one
server shares its hash seed (Python's `random` and numpy's global generator are drawn afresh in each child), so two
such runs cannot show a difference that comes from it: a test that looks for one uses real processes. Tests that
check the real command (console scripts, README commands, the matrix) or what a fresh interpreter does still start
real processes. Entry `-c` stands for `python -c CODE ARGS` (CODE the first argument): a probe a test runs with a
tree's lmms_eval; entry `script` for `python SCRIPT ARGS` (SCRIPT the first argument, run as `__main__` with its
folder first on the path): a benchmark's smoke run.
`levante-tasks` itself (entry `levante_tasks`: `python -m levante_tasks ARGS`) runs in a fork of another kind of
server, one that imported only the third-party libraries the commands use (`CLI_LIBRARIES`: numpy, pandas, pyarrow,
Pillow, scipy, matplotlib's Agg parts, PyYAML; about 1 s of CPU per run); the child drops the levante-tasks modules
the server holds and imports the command's own from its path, as a new process does, after the run's environment,
umask and temp folder are set. A rerun of a command (same working folder and arguments) goes to the other of two
such servers, whose hash seeds differ and are drawn per test process (`PYTHONHASHSEED` unset in the run: a new
interpreter draws one), so a test that runs a command twice and compares the outputs runs it under two hash seeds.
Run as `python -m levante_tasks.testing.lmms_fork [cli|tree]`, this module is that server: one JSON request a line on
stdin, one JSON reply a line on the descriptor it was started with as stdout.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import decimal
import gc
import importlib.machinery
import importlib.util
import json
import os
import random
import runpy
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

# Also every TQDM_<parameter> (IMPORT_TIME_PREFIX: tqdm takes each as that parameter's default when it is imported),
# and so the matrix's NO_PROGRESS_BARS all are. Not TOKENIZERS_PARALLELISM, which the matrix gives its cells too: HF
# tokenizers read it each time they would run in parallel, from the run's environment (no server tokenizes).
IMPORT_TIME_ENV = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME", "HF_HUB_CACHE",
                   "HF_DATASETS_CACHE", "HF_EVALUATE_OFFLINE", "HF_ENDPOINT", "XDG_CACHE_HOME", "HOME",
                   "OMP_NUM_THREADS", "MKL_NUM_THREADS", "LMMS_EVAL_PLUGINS", "LM_HARNESS_CACHE_PATH", "PYTHONHASHSEED",
                   "MPLCONFIGDIR", "MPLBACKEND", "MATPLOTLIBRC", "XDG_CONFIG_HOME", "OPENBLAS_NUM_THREADS",
                   "PILLOW_BLOCKS_MAX", "PILLOW_ALIGNMENT", "PILLOW_BLOCK_SIZE", "LANG", "LC_ALL", "LC_CTYPE",
                   "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONWARNINGS", "HF_HUB_DISABLE_PROGRESS_BARS",
                   "HF_DATASETS_DISABLE_PROGRESS_BARS")
IMPORT_TIME_PREFIX = "TQDM_"
TREE_SERVERS = 2  # `tree` servers (runs with their own lmms_eval or plugins) kept alive, least recent out
CLI_SERVERS = 4  # `levante_tasks` servers kept alive (two per environment), least recent out
# What a run stands for: `python -m MODULE ARGS`, by entry name. `lmms_cli` registers the test models first;
# `lmms_eval` is lmms-eval's own dispatcher (`python -m lmms_eval`, the `lmms-eval` console script's code).
# `levante_tasks` is levante-tasks' own command line (`python -m levante_tasks`, the console script's code).
# `matrix_doubles` is lmms-eval's CLI with the matrix runner's test models (run by `fork_stream`, not `run_cli`).
# `inspect` is inspect_ai's CLI (`python -m inspect_ai`, the `inspect` console script's code), served by an lmms
# server: torch and transformers, which its model APIs import, are imported there already.
MODULES = {"lmms_cli": "levante_tasks.testing.lmms_cli", "lmms_eval": "lmms_eval", "levante_tasks": "levante_tasks",
           "matrix_doubles": "levante_tasks.testing.matrix_doubles", "inspect": "inspect_ai"}
COMMAND = [sys.executable, "-m", MODULES["lmms_cli"]]
CODE = "-c"  # the entry of `python -c CODE ARGS`: the run's first argument is CODE
SCRIPT = "script"  # the entry of `python SCRIPT ARGS`: the run's first argument is SCRIPT, a file
# The kinds of server: `levante_tasks` runs, the lmms-eval entries' runs, those runs with their own lmms_eval or plugins
CLI, LMMS, TREE = "cli", "lmms", "tree"
# What a `tree` server imports before it forks: the third-party libraries that lmms-eval's CLI imports, and the
# transformers modelling and image-processing code (torchvision's) that its HF model classes and HF `evaluate` import
# (~3 s of CPU in each run that imports them), and the table writer its results table imports as each run ends; not
# lmms-eval itself, which each run imports from its own path
TREE_LIBRARIES = ("torch", "transformers", "datasets", "accelerate", "pandas", "aiohttp", "boto3", "sacrebleu",
                  "torchvision", "transformers.modeling_utils", "transformers.processing_utils",
                  "transformers.image_processing_utils", "pytablewriter")
LMMS_ENV = ("LMMS_EVAL_PLUGINS", "LM_HARNESS_CACHE_PATH")  # read by lmms-eval's import: a tree run's own, in its child
# What a `levante_tasks` server imports before it forks: third-party libraries only (~1 s of CPU per run saved)
CLI_LIBRARIES = ("numpy", "pandas", "pyarrow", "pyarrow.parquet", "PIL.Image", "yaml", "scipy.special",
                 "scipy.stats", "matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg")
# The two `levante_tasks` servers' hash seeds, drawn once per test process as a new interpreter draws its own
CLI_HASH_SEEDS = tuple(str(seed) for seed in random.SystemRandom().sample(range(1, 2**32), 2))
_SERVERS: dict[tuple[Any, ...], subprocess.Popen[str]] = {}  # by _key, least recently used first
_LAST_SEED: dict[tuple[str, ...], str] = {}  # by (cwd, *args): the seed of the last such `levante_tasks` run
_SERVER_FOLDER: list[str] = []  # the empty folder the servers start in, made on first use


def run_cli(args: Sequence[str], *, cwd: str | Path, env: Mapping[str, str], timeout: float = 600,
            entry: str = "lmms_cli", models: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """`python -m MODULES[entry] ARGS` (entry `-c`: `python -c ARGS`; `script`: `python ARGS`) run in a fork: the run's
    status and output, as `subprocess.run` gives them.

    `models`: lmms-eval model names whose class modules the server imports before it forks (and keeps for the
    later runs it serves: their import-time warnings go to the server's stderr, not a run's), as the run would when
    it builds the model: ~4 s of CPU for the first HF class (transformers' modelling code), paid once per server
    instead of once per run. A `tree` server imports no lmms-eval: its runs import their model classes themselves."""
    key = _key(env, entry, [str(cwd), *map(str, args)])
    server = _server(key)
    umask = os.umask(0)
    os.umask(umask)
    request = {"args": [str(a) for a in args], "cwd": str(cwd), "env": dict(env), "timeout": timeout,
               "entry": entry, "models": list(models), "umask": umask}
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(json.dumps(request) + "\n")
    server.stdin.flush()
    line = server.stdout.readline()
    if not line:
        _SERVERS.pop(key, None)
        raise RuntimeError(f"lmms_fork: the server stopped (exit {server.wait()}) before answering")
    reply = json.loads(line)
    command = command_line(entry, request["args"])
    if reply["timed_out"]:
        raise subprocess.TimeoutExpired(command, timeout, reply["stdout"], reply["stderr"])
    return subprocess.CompletedProcess(command, reply["returncode"], reply["stdout"], reply["stderr"])


def command_line(entry: str, args: Sequence[str]) -> list[str]:
    """The command a run of `entry` stands for: `python -m MODULE ARGS`, `python -c ARGS` or `python ARGS`."""
    return [sys.executable, *([CODE] if entry == CODE else [] if entry == SCRIPT else ["-m", MODULES[entry]]), *args]


def import_time(name: str) -> bool:
    """Whether a server's imports read the variable `name` (so a run cannot change it in a fork)."""
    return name in IMPORT_TIME_ENV or name.startswith(IMPORT_TIME_PREFIX)


def import_time_env(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The import-time variables `env` sets (`import_time`), as (name, value) in name order: what a server or zygote
    must share with the runs it serves."""
    return tuple(sorted((name, value) for name, value in env.items() if import_time(name)))


def _key(env: Mapping[str, str], entry: str, command: list[str]) -> tuple[Any, ...]:
    """What a run's server must share with it: its kind, then the import-time variables it sets (`import_time_env`).
    A run whose PYTHONPATH holds its own lmms_eval or plugins (`tree`) shares its server with every such run,
    whatever the tree, but for lmms-eval's own variables (`LMMS_ENV`: left out), which its child reads when it
    imports lmms-eval. A `levante_tasks` run that leaves PYTHONHASHSEED unset gets the seed that the last run of the
    same `command` (working folder and arguments) did not: a test that reruns a command sees two hash seeds, as
    with two new interpreters."""
    values = dict(import_time_env(env))
    if entry != "levante_tasks":
        if not _import_time_entries(env):
            return (LMMS, *values.items())
        return (TREE, *((name, value) for name, value in values.items() if name not in LMMS_ENV))
    if "PYTHONHASHSEED" not in values:
        last = _LAST_SEED.get(tuple(command), CLI_HASH_SEEDS[-1])
        values["PYTHONHASHSEED"] = _LAST_SEED[tuple(command)] = next(s for s in CLI_HASH_SEEDS if s != last)
    return (CLI, *sorted(values.items()))


def _import_time_entries(env: Mapping[str, str]) -> list[str]:
    """The run's PYTHONPATH entries that hold a package lmms-eval imports when it is imported: its own `lmms_eval`
    (a tree of its sources), the packages named in LMMS_EVAL_PLUGINS (their models are registered then)."""
    packages = ["lmms_eval", *filter(None, env.get("LMMS_EVAL_PLUGINS", "").split(","))]
    entries = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    return [p for p in entries if any((Path(p) / package).is_dir() for package in packages)]


def _server(key: tuple[Any, ...]) -> subprocess.Popen[str]:
    """The server for a run's kind and import-time variables (`_key`), started on first use and stopped when this
    process exits."""
    if key in _SERVERS:
        _SERVERS[key] = _SERVERS.pop(key)  # now the most recently used
    if key not in _SERVERS or _SERVERS[key].poll() is not None:
        kind, *values = key  # values: (name, value) pairs
        if kind != LMMS:
            same = [k for k in _SERVERS if k[0] == kind and k != key]
            _stop(same[:max(0, len(same) - (CLI_SERVERS if kind == CLI else TREE_SERVERS) + 1)])
        server_env = {k: v for k, v in os.environ.items() if not import_time(k)}
        server_env.update(values)
        if not _SERVER_FOLDER:
            _SERVER_FOLDER.append(tempfile.mkdtemp(prefix="lmms-fork-"))
        command = [sys.executable, "-m", __name__, *([] if kind == LMMS else [kind])]
        _SERVERS[key] = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=server_env,
                                         text=True, encoding="utf-8", cwd=_SERVER_FOLDER[0])
    return _SERVERS[key]


@atexit.register
def _stop_servers() -> None:
    """Close each server's requests and reap it, so its CPU time is counted with this process's children."""
    _stop([*_SERVERS])
    for folder in _SERVER_FOLDER:
        os.rmdir(folder)
    _SERVER_FOLDER.clear()


def stop_tree_servers() -> None:
    """Stop the servers of runs that brought their own lmms_eval or plugins (a test module's trees: no later test uses
    them)."""
    _stop([key for key in _SERVERS if key[0] == TREE])


def _stop(keys: list[tuple[Any, ...]]) -> None:
    for key in keys:
        server = _SERVERS.pop(key)
        if server.stdin is not None:
            server.stdin.close()
        server.wait()


# ---------------------------------------------------------------- the server side

def _exit_status(exc: BaseException | None) -> int:
    """The interpreter's exit status for a run that ended with `exc` (None: it returned; -N: it kills itself with
    signal N, as it does after an uncaught KeyboardInterrupt); prints what it prints."""
    if exc is None:
        return 0
    if isinstance(exc, KeyboardInterrupt):
        traceback.print_exception(exc)
        return -signal.SIGINT
    if isinstance(exc, SystemExit):
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code & 0xFF  # what the operating system keeps of it: sys.exit(-1) is 255
        print(exc.code, file=sys.stderr)
        return 1
    traceback.print_exception(exc)
    return 1


def _child(request: dict[str, Any], stdout: int, stderr: int, stdin: int | None = None) -> None:
    """In the fork: become the run's process, run lmms-eval's CLI, exit with its status (never returns). `stdin`:
    the run's (None: it reads nothing, as under capture_output; the server's stdin carries requests)."""
    status = 1
    try:
        os.setpgid(0, 0)  # the run's own process group: a timeout kills its helpers too
        source = os.open(os.devnull, os.O_RDONLY) if stdin is None else stdin
        os.dup2(source, 0)
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        for fd in {source, stdout, stderr} - {0, 1, 2}:
            os.close(fd)  # the run holds its streams once, as a new process does
        os.chdir(request["cwd"])
        os.umask(request["umask"])  # the caller's, as a process it starts inherits it
        importlib.invalidate_caches()  # folders listed while the server imported may have changed since
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # found again from the run's TMPDIR on first use
        _fresh_random_state()
        paths = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p and p not in sys.path]
        sys.path[0] = "" if request["entry"] == CODE else os.getcwd()  # `-c`'s first entry, `-m`'s: the working folder
        sys.path[1:1] = paths  # then PYTHONPATH, as a new interpreter puts them
        _site_customize(paths)
        if request["entry"] == "levante_tasks":  # imported again from the run's path (its working folder first)
            for name in [name for name in sys.modules if name.split(".")[0] == "levante_tasks"]:
                del sys.modules[name]
        run = _entry_point(request["entry"])  # sets sys.argv[0] as `python -m` would (argparse's prog)
        sys.argv[1:] = request["args"]
        outcome: BaseException | None = None
        try:
            run()
        except BaseException as exc:  # noqa: BLE001 - the interpreter's own handling of any ending
            outcome = exc
        status = _exit_status(outcome)
        try:
            threading._shutdown()  # type: ignore[attr-defined] - the interpreter's: joins non-daemon threads
            atexit._run_exitfuncs()
        except BaseException:  # noqa: BLE001 - an atexit error does not change the status, as in the interpreter
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed stream: nothing left to flush
                pass
        exit_as(status)


def exit_as(status: int) -> NoReturn:
    """End this process as a process with `status` ends (`returncode` as subprocess reports it): exit with it, or
    (-N) be killed by signal N."""
    if status < 0:
        with contextlib.suppress(OSError, ValueError):  # SIGKILL's action cannot be set: it is the default
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    os._exit(status if status >= 0 else 128 - status)


def _fresh_random_state() -> None:
    """numpy's global generator drawn from the OS again, as in a new interpreter (Python's `random` reseeds itself
    in a fork; numpy's does not)."""
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()


def _site_customize(new_entries: list[str]) -> None:
    """Run the `sitecustomize` a new interpreter would import (the first on its path, the working folder aside) when
    it lies in one of the run's new PYTHONPATH entries; an error in it is reported and the run goes on, as there."""
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path[1:])
    if spec is None or spec.origin is None or spec.loader is None:
        return
    if str(Path(spec.origin).parent) not in {str(Path(entry)) for entry in new_entries}:
        return  # the server's own, if any: imported when the server started
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the interpreter's own handling of a failing sitecustomize
        print(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(exc).__name__}: {exc}", file=sys.stderr)


def _entry_point(entry: str) -> Callable[[], object]:
    """The function `python -m MODULES[entry]` runs, with sys.argv[0] set to that module's file (entry `-c`: the
    function that runs the code the run's first argument holds, as `python -c` does, sys.argv[0] `-c`; `script`: the
    one that runs the file the first argument names, as `python SCRIPT` does)."""
    if entry == CODE:
        def run_code() -> None:
            """What `python -c` runs: the code, compiled without this module's `__future__` flags, in the namespace
            of a new `__main__` module (the server's own is not the run's)."""
            code = sys.argv.pop(1)
            main = types.ModuleType("__main__")
            main.__builtins__ = builtins  # type: ignore[attr-defined]
            sys.modules["__main__"] = main
            exec(compile(code, "<string>", "exec", dont_inherit=True), main.__dict__)

        sys.argv = [CODE, *sys.argv[1:]]
        return run_code
    if entry == SCRIPT:
        def run_script() -> None:
            """What `python SCRIPT` runs for a file: its code in a new `__main__` module (`__file__` the working
            folder joined to the name, a source loader, no spec), sys.argv[0] the name as given, the folder that
            holds it (links resolved) first on the path."""
            script = sys.argv.pop(1)
            sys.argv[0], path = script, os.path.join(os.getcwd(), script)  # joined as python joins it, not normalised
            sys.path[0] = os.path.dirname(os.path.realpath(script))
            main = types.ModuleType("__main__")
            main.__dict__.update(__file__=path, __builtins__=builtins, __cached__=None,
                                 __loader__=importlib.machinery.SourceFileLoader("__main__", path))
            sys.modules["__main__"] = main
            with open(path, "rb") as source:  # bytes: compile reads the file's own encoding line, as python does
                code = compile(source.read(), path, "exec", dont_inherit=True)
            exec(code, main.__dict__)

        return run_script
    if entry == "lmms_cli":
        from levante_tasks.testing import lmms_cli

        lmms_cli.register_test_models()
        sys.argv = [lmms_cli.__file__ or "", *sys.argv[1:]]
        return lmms_cli.cli_evaluate
    if entry == "matrix_doubles":
        from levante_tasks.testing import matrix_doubles

        sys.argv = [matrix_doubles.__file__ or "", *sys.argv[1:]]
        return matrix_doubles.main
    if entry in ("levante_tasks", "inspect"):  # its `__main__` as `python -m` runs it (sys.argv[0]: that file)
        return lambda: runpy.run_module(MODULES[entry], run_name="__main__", alter_sys=True)
    import lmms_eval
    from lmms_eval.cli.dispatch import main

    sys.argv = [str(Path(lmms_eval.__file__ or "").with_name("__main__.py")), *sys.argv[1:]]
    return main


def _import_model_classes(names: Sequence[str]) -> None:
    """Import the modules of the model classes lmms-eval's registry lists for `names` (simple and chat); one that
    fails to import is left to the run, which meets the same error where lmms-eval reports it."""
    if not names:
        return
    from lmms_eval.models import MODEL_REGISTRY_V2

    for name in names:
        try:
            manifest = MODEL_REGISTRY_V2.get_manifest(name)
        except Exception:  # noqa: BLE001 - an unknown name: the run reports it
            continue
        for path in filter(None, (manifest.simple_class_path, manifest.chat_class_path)):
            try:
                importlib.import_module(path.rpartition(".")[0])
            except Exception:  # noqa: BLE001 - e.g. a class whose dependency is missing: the run reports it
                continue


def freeze_heap() -> None:
    """Move every object this server holds into the collector's permanent generation, just before a fork: a child's
    full collections (lmms-eval's model `clean()` and accelerate's `release_memory` each call `gc.collect()`) then
    walk only what the run made, not the ~500k objects of the preloaded libraries (~0.3 s of CPU each), and do not
    write to (copy) the pages those objects share with the server. What the run makes is collected as in a new
    interpreter; what it drops of the server's (a CLI child's levante_tasks modules) stays until it exits."""
    gc.freeze()


def _run_request(request: dict[str, Any], kind: str) -> dict[str, Any]:
    """Fork a child for one run (a server of `kind`'s), wait for it up to its timeout, return its status and
    streams."""
    if kind == LMMS:  # a `tree` server imports no lmms-eval
        _import_model_classes(request.get("models", []))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        freeze_heap()
        pid = os.fork()
        if pid == 0:
            _child(request, out.fileno(), err.fileno())
        deadline = time.monotonic() + request["timeout"]
        timed_out = False
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                timed_out = True
                os.killpg(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                break
            time.sleep(0.02)
        return {"returncode": os.waitstatus_to_exitcode(status), "timed_out": timed_out,
                "stdout": _text(out), "stderr": _text(err)}


def _text(stream: IO[bytes]) -> str:
    """A stream's bytes as `subprocess.run(text=True)` gives them: decoded strictly, universal newlines."""
    stream.seek(0)
    return stream.read().decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def preload(kind: str) -> None:
    """Import what the runs a server of `kind` (or a `fork_stream` zygote: kind LMMS) serves import, so that no
    run pays for it; then leave what a new interpreter starts with as it was: the decimal context's flags (importing
    pytablewriter raises one) and no garbage (collected once, not frozen with the rest before each fork)."""
    context = decimal.getcontext()
    flags = dict(context.flags)
    _import_for(kind)
    context.flags.update(flags)
    gc.collect()


def _import_for(kind: str) -> None:
    """The imports of `preload`."""
    if kind in (CLI, TREE):
        for library in CLI_LIBRARIES if kind == CLI else TREE_LIBRARIES:
            importlib.import_module(library)
        return
    import lmms_eval.cli.dispatch  # noqa: F401 - `python -m lmms_eval`'s dispatcher
    import pytablewriter  # noqa: F401 - lmms-eval's results table (`make_table`) imports it as every run ends

    # HF's model base (~2-3 s of CPU), else imported again by each run that builds an HF model (ours or
    # lmms-eval's) in its fork; a model type's own modules are cheap after it
    import transformers.modeling_utils  # noqa: F401

    import levante_tasks.testing.lmms_cli  # noqa: F401 - imports lmms_eval.__main__ and the test models
    import levante_tasks.testing.matrix_doubles  # noqa: F401 - and the matrix runner's (registered only by its entry)
    _index_task_folders()
    _parse_task_code()


def _parse_task_code() -> None:
    """Parse the task code's modules once, here: each task a run loads records its task source hash, which reads
    the imports of every module in the task's closure (`schema.task_source`, ~0.05 s of CPU a run). The parses are
    kept by the modules' bytes, so a run whose module differs (another checkout on its path, an edit) parses it
    again as a new interpreter would; the task YAMLs, which a run reads through a cache kept by folder, are not
    read here."""
    from levante_tasks.schema import task_source

    for path in sorted(task_source.PACKAGE_ROOT.rglob("*.py")):
        if task_source.in_scope(path, task_source.LMMS_SCOPE):
            task_source.imported_package_files(path)


def _index_task_folders() -> None:
    """Index the task folders the runs name once, here (`task_index.keep_task_index`): lmms-eval's own (each
    TaskManager a run builds, one or two per evaluation, reads its ~1,800 YAML files, about 0.7 s of CPU) and
    levante-tasks' (the `--include_path` the tests give: ~420 YAML files, about 0.3 s). Not for an lmms_eval tree on
    the server's path (a test's sources)."""
    from lmms_eval import tasks

    from levante_tasks.schema.task_source import TASKS_DIR
    from levante_tasks.testing.task_index import keep_task_index

    folder = os.path.dirname(os.path.abspath(tasks.__file__)) + "/"  # the path TaskManager indexes, as it spells it
    trees = {Path(p).resolve() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    if Path(folder).resolve().parents[1] in trees:
        return
    keep_task_index([folder, str(TASKS_DIR)])


def preload_models(args: Sequence[str]) -> None:
    """Import the class modules of the model a command line names (`--model NAME`; `_import_model_classes`)."""
    names = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--model"]
    _import_model_classes([name for name in names if "," not in name])


def serve(kind: str) -> None:
    """Import what runs of `kind` need once (lmms-eval's CLI and the test models, or `CLI_LIBRARIES`, or
    `TREE_LIBRARIES`), then answer each request line with a forked run."""
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what the imports print must not reach the replies
    preload(kind)
    for line in sys.stdin:
        replies.write(json.dumps(_run_request(json.loads(line), kind)) + "\n")
        replies.flush()


if __name__ == "__main__":
    serve(sys.argv[1] if len(sys.argv) > 1 else LMMS)
