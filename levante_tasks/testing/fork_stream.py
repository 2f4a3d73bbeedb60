"""A real command's process without its start-up: `python -m MODULE ARGS` run by a fork of a zygote that imported
MODULE's libraries once, with the command's own streams, signals and exit status (for the matrix runner's tests; and
`python SCRIPT ARGS` through `levante_tasks.testing.forked_script`, for a benchmark's process that runs lmms-eval).

The matrix runner starts each lmms-eval process itself (`python -m <lmms_eval_module>`, streaming its output) and
stops, signals and reaps it, so `lmms_fork.run_cli` (a finished run's captured output) cannot stand for it. A test
config names a client module instead (`levante_tasks.testing.forked_doubles` for `matrix_doubles`,
`levante_tasks.testing.forked_lmms_eval` for `lmms_eval`): a small process that hands its working folder,
environment, arguments, umask and standard streams (the descriptors themselves) to the dispatcher this test process
started (`start()`, socket named by $LEVANTE_FORK_STREAM), waits, and ends as the command ended: its exit status, or
killed by the same signal. The dispatcher keeps one zygote per import-time environment (`lmms_fork.import_time_env`
and PYTHONPATH; a client of another interpreter is told to exec), whatever the entry, started on first use: its own
imports, warnings and any `sitecustomize` run there, once, not in each command. A zygote forks a handler per
command, which forks the command's process (`lmms_fork._child`: the run's folder, environment, umask, path, fresh
random state, its own process group) and passes on to it the signals the client receives (SIGTERM, SIGINT, SIGHUP,
SIGQUIT, SIGUSR1, SIGUSR2; one the client ignores, as it inherited, the command ignores too); a signal that comes
before the command exists ends the client as it ends a process in start-up. A client that dies (SIGKILL of the
runner's process group) has its command killed by the handler, a moment later rather than in the same instant. Every
process here is a descendant of the test process and reaped by its parent, so the commands' CPU counts as the test
run's (when the test process exits). Without a dispatcher (no $LEVANTE_FORK_STREAM: a Slurm job under --export=NONE,
a user's shell) the client execs the real command. As with `lmms_fork`, the commands forked from one zygote share
its hash seed, and what a process does not inherit through a fork (user, capabilities, limits) is the zygote's:
tests that check what a fresh process does, or drop privileges, keep the real module.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from typing import Any

SOCKET_ENV = "LEVANTE_FORK_STREAM"  # the dispatcher's socket, in the environment of what the test process starts
# The signals a client passes on to its command
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
_MODULE = "levante_tasks.testing.fork_stream"  # not __name__: it is __main__ in the dispatcher and the zygotes
_MESSAGE = 1 << 20  # the largest request (its environment) a socket message carries
_DISPATCHER: list[subprocess.Popen[bytes]] = []


# ---------------------------------------------------------------- the test process

def start() -> None:
    """Start this process's dispatcher (once) and name its socket in os.environ, so that the commands started from
    here (and the runners they start) reach it; it stops when this process exits."""
    if _DISPATCHER:
        return
    folder = tempfile.mkdtemp(prefix="fork-stream-")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(os.path.join(folder, "dispatcher.sock"))
    listener.listen(64)
    _DISPATCHER.append(subprocess.Popen([sys.executable, "-m", _MODULE, str(listener.fileno())],
                                        stdin=subprocess.PIPE, pass_fds=[listener.fileno()], cwd=folder))
    os.environ[SOCKET_ENV] = listener.getsockname()
    listener.close()

    @atexit.register
    def stop() -> None:
        dispatcher = _DISPATCHER.pop()
        assert dispatcher.stdin is not None
        dispatcher.stdin.close()
        dispatcher.wait()
        os.environ.pop(SOCKET_ENV, None)
        shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------- the client (the command's process)

def run(entry: str, args: list[str]) -> None:
    """Be `python -m lmms_fork.MODULES[entry] ARGS` (entry `script`: `python ARGS`): run in a fork when a dispatcher is
    named, else exec'd."""
    from levante_tasks.testing.lmms_fork import command_line, exit_as

    command = command_line(entry, args)
    path = os.environ.get(SOCKET_ENV)
    if not path:
        os.execv(sys.executable, command)
    umask = os.umask(0)
    os.umask(umask)
    ignored = [signum for signum in FORWARDED if signal.getsignal(signum) == signal.SIG_IGN]  # inherited so
    request = {"entry": entry, "args": args, "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask,
               "executable": sys.executable, "ignored": ignored}
    channel = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    channel.connect(path)
    started = False  # the command has been forked: a signal goes to it from then on

    def pass_on(signum: int, _frame: object) -> None:
        if started:
            channel.send(json.dumps({"signal": signum}).encode())
        else:  # nothing runs yet (its zygote may still be importing): end as a process in start-up does
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    held = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)  # the request is the first message
    for signum in set(FORWARDED) - set(ignored):
        signal.signal(signum, pass_on)
    socket.send_fds(channel, [json.dumps(request).encode()], [0, 1, 2])
    signal.pthread_sigmask(signal.SIG_SETMASK, held)
    while True:
        message = channel.recv(_MESSAGE)
        if not message:
            sys.exit(f"fork_stream: the zygote stopped before `python {' '.join(command[1:])}` ended")
        reply = json.loads(message)
        if reply.get("exec"):
            os.execv(sys.executable, command)
        if reply.get("started"):
            started = True
            continue
        exit_as(reply["returncode"])  # as the command ended


# ---------------------------------------------------------------- the dispatcher

def _key(request: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a zygote shares with the commands it serves: what their imports read (not the entry: every zygote
    imports what each entry's commands import, `lmms_fork.preload(LMMS)`, so one serves them all)."""
    from levante_tasks.testing.lmms_fork import import_time_env

    return (request["env"].get("PYTHONPATH"), *import_time_env(request["env"]))


def dispatch(listener_fd: int) -> None:
    """Pass each client's request, streams and connection to its zygote (started on first use; a test run needs a
    few), until stdin closes; then stop every zygote (their commands still running are killed) and reap them."""
    listener = socket.socket(fileno=listener_fd)
    zygotes: dict[tuple[Any, ...], tuple[subprocess.Popen[bytes], socket.socket]] = {}
    try:
        while True:
            ready, _, _ = select.select([listener, sys.stdin], [], [])
            if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1):
                return
            if listener not in ready:
                continue
            channel, _ = listener.accept()
            fds: list[int] = []
            try:
                message, fds, _, _ = socket.recv_fds(channel, _MESSAGE, 3)
                request = json.loads(message) if message else {}
                if request.get("executable") == sys.executable and len(fds) == 3:
                    key = _key(request)
                    if key not in zygotes or zygotes[key][0].poll() is not None:
                        if key in zygotes:
                            zygotes[key][1].close()
                        zygotes[key] = _zygote(request["env"])
                    socket.send_fds(zygotes[key][1], [message], [channel.fileno(), *fds])
                elif request:  # another interpreter: the client runs the command itself
                    channel.send(json.dumps({"exec": True}).encode())
            except Exception as exc:  # noqa: BLE001 - one client's failure (it left, its zygote died) is its own
                print(f"fork_stream: a request failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            finally:
                channel.close()
                for fd in fds:
                    os.close(fd)
    finally:
        for process, control in zygotes.values():
            control.close()
            process.terminate()
            process.wait()


def _zygote(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], socket.socket]:
    """A zygote started with a command's environment (in the dispatcher's empty working folder), and the socket that
    feeds it."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    process = subprocess.Popen([sys.executable, "-m", _MODULE, "zygote", str(theirs.fileno())], env=env,
                               stdin=subprocess.DEVNULL, stdout=sys.stderr, pass_fds=[theirs.fileno()])
    theirs.close()
    return process, ours


# ---------------------------------------------------------------- the zygote and its handlers

def zygote(control_fd: int) -> None:
    """Import what the commands of every entry import, then fork a handler per request until the dispatcher closes
    the socket, and reap the handlers as their commands end; SIGTERM (the test process is ending) kills the commands
    still running."""
    from levante_tasks.testing import lmms_fork

    lmms_fork.preload(lmms_fork.LMMS)
    control = socket.socket(fileno=control_fd)
    handlers: set[int] = set()
    stopping = False  # the test process is ending: requests still queued are not served

    def stop_handlers(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        for pid in handlers:
            with contextlib.suppress(ProcessLookupError):  # reaped meanwhile
                os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop_handlers)
    while True:
        message, fds, _, _ = socket.recv_fds(control, _MESSAGE, 4)
        handlers -= {pid for pid in handlers if os.waitpid(pid, os.WNOHANG)[0]}
        if not message:
            break
        if not stopping:
            request = json.loads(message)
            lmms_fork.preload_models(request["args"])
            sys.stdout.flush()  # nothing buffered here may reach a command's streams
            sys.stderr.flush()
            held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # a handler starts with its own
            lmms_fork.freeze_heap()
            pid = os.fork()
            if pid == 0:
                control.close()
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
                _handle(request, *fds)
            handlers.add(pid)
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        for fd in fds:
            os.close(fd)
    while handlers:
        handlers.discard(os.wait()[0])


def _handle(request: dict[str, Any], channel_fd: int, stdin: int, stdout: int, stderr: int) -> None:
    """In a handler: fork the command, forward the client's signals to it, kill it if the client dies (or this
    handler is told to stop), reap it and send its exit status (never returns)."""
    from levante_tasks.testing.lmms_fork import _child

    channel = socket.socket(fileno=channel_fd)
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # until this handler's own is set
    pid = os.fork()
    if pid == 0:
        channel.close()
        for signum in FORWARDED:  # the client's start-up state (a process that ignores SIGINT passes that on)
            signal.signal(signum, signal.SIG_IGN if signum in request["ignored"] else
                          signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        _child(request, stdout, stderr, stdin=stdin)
    for fd in (stdin, stdout, stderr):
        os.close(fd)
    signal.signal(signal.SIGTERM, lambda _signum, _frame: os.kill(pid, signal.SIGKILL))
    signal.pthread_sigmask(signal.SIG_SETMASK, held)
    with contextlib.suppress(OSError):  # a client that left: the loop below sees it
        channel.send(json.dumps({"started": True}).encode())
    done = os.pidfd_open(pid)
    while True:
        ready, _, _ = select.select([channel, done], [], [])
        if done in ready:
            break
        message = channel.recv(_MESSAGE)
        if not message:  # the client is gone: so is its command, as a child of a killed process group would be
            os.kill(pid, signal.SIGKILL)
            break
        os.kill(pid, json.loads(message)["signal"])
    _, status = os.waitpid(pid, 0)
    try:
        channel.send(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode())
    except OSError:  # the client is gone
        pass
    os._exit(0)


if __name__ == "__main__":
    if sys.argv[1] == "zygote":
        zygote(int(sys.argv[2]))
    else:
        dispatch(int(sys.argv[1]))
