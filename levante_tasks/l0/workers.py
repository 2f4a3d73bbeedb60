"""Worker processes that map a function over tasks and give the results in order, like `Pool.imap`, but notice a
worker's death: `multiprocessing.Pool` replaces a killed worker (kill -9, the OOM killer) and waits forever for
the task it lost. Here a death ends the map with WorkerDied, and an exception raised in a worker reaches the
caller as itself; either way every other worker is stopped at once instead of finishing its task."""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

from levante_tasks.errors import LevanteError
from levante_tasks.parent_death import parent_death_signal

T = TypeVar("T")
R = TypeVar("R")
OrderedMap = Callable[[Callable[[T], R], Iterable[T]], Iterator[R]]

IN_FLIGHT_PER_WORKER = 2  # tasks handed out or finished but not yet yielded, per worker: bounds held results
_DIE_WITH_PARENT = parent_death_signal(signal.SIGKILL)  # a worker outlives no killed parent


class WorkerDied(LevanteError):
    """A worker process ended without giving its result (killed, e.g. by the kernel's out-of-memory killer)."""

    def __init__(self) -> None:
        super().__init__("a worker process died (killed, e.g. out of memory)")


@contextlib.contextmanager
def ordered_map(jobs: int) -> Iterator[OrderedMap[Any, Any]]:
    """`map` in order: in this process for one job, else over `jobs` worker processes, all stopped when the
    block ends (normally or not)."""
    if jobs <= 1:
        yield map
        return
    team = _Team(jobs)
    try:
        yield team.imap
    finally:
        team.stop()


class _Worker:
    """One worker process and the pipe it takes tasks from and answers on."""

    def __init__(self, context: Any) -> None:
        self.conn, child_end = context.Pipe()
        self.process: BaseProcess = context.Process(target=_serve, args=(child_end,), daemon=True)
        self.process.start()
        child_end.close()


class _Team:
    """`jobs` workers, each given one task at a time."""

    def __init__(self, jobs: int) -> None:
        context = multiprocessing.get_context()
        self.workers: list[_Worker] = []
        try:
            self.workers += [_Worker(context) for _ in range(jobs)]
        except BaseException:
            self.stop()
            raise

    def imap(self, function: Callable[[T], R], tasks: Iterable[T]) -> Iterator[R]:
        """function(task) for each task, in task order; at most IN_FLIGHT_PER_WORKER tasks per worker held."""
        pending = enumerate(tasks)
        idle = list(self.workers)
        busy: dict[_Worker, int] = {}
        done: dict[int, R] = {}
        following = 0
        exhausted = False
        while True:
            while idle and not exhausted and len(busy) + len(done) < IN_FLIGHT_PER_WORKER * len(self.workers):
                index_task = next(pending, None)
                if index_task is None:
                    exhausted = True
                    break
                worker = idle.pop()
                try:
                    worker.conn.send((function, index_task[1]))
                except OSError:  # the worker died while idle: its end of the pipe is gone (BrokenPipeError)
                    raise WorkerDied() from None
                busy[worker] = index_task[0]
            if following in done:
                yield done.pop(following)
                following += 1
            elif exhausted and not busy:
                return
            else:
                self._collect(busy, done, idle)

    def _collect(self, busy: dict[_Worker, int], done: dict[int, Any], idle: list[_Worker]) -> None:
        """Wait for an answer or a death; file answers, raise a worker's exception or WorkerDied."""
        ends = {worker.conn: worker for worker in busy}
        sentinels = [worker.process.sentinel for worker in self.workers]
        ready = wait([*ends, *sentinels])
        for conn in (ready_end for ready_end in ready if ready_end in ends):
            worker = ends[conn]
            try:
                outcome, value = conn.recv()
            except (EOFError, OSError):
                raise WorkerDied() from None
            if outcome == "error":
                raise value
            done[busy.pop(worker)] = value
            idle.append(worker)
        if any(not worker.process.is_alive() for worker in self.workers):
            raise WorkerDied()

    def stop(self) -> None:
        """End every worker now (an unfinished task is abandoned) and reap it."""
        for worker in self.workers:
            worker.conn.close()
            worker.process.kill()
        for worker in self.workers:
            worker.process.join()


def _serve(conn: Connection) -> None:
    """A worker's loop: run each (function, task) sent, answer ("ok", result) or ("error", exception)."""
    if _DIE_WITH_PARENT is not None:
        _DIE_WITH_PARENT()
    while True:
        try:
            function, task = conn.recv()
        except EOFError:
            return
        try:
            answer: tuple[str, Any] = ("ok", function(task))
        except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it there
            answer = ("error", exc)
        conn.send(answer)
