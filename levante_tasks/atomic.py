"""Write files and folders so that readers never see half of them, and a killed run loses nothing good.

Files: write to a temp sibling `.<name>.<pid>.<random>.part`, then rename onto the target.
Folders: build in a staging sibling `.<name>.staging-<pid>.<random>`, then swap it in with renames
(`swap_dir`), so the old tree stays whole until the new one is complete. Temp names carry the writer's pid:
`clean_stale` removes the leftovers of writers that are no longer alive (kill -9), never a live writer's.
Everything created here gets the mode the umask allows (0666/0777 & ~umask), like a plain `open`/`mkdir`,
so a shared data dir or results folder stays group-readable when the umask says so.
Liveness is judged on this host: do not share one data dir between hosts (e.g. over NFS) while writers run.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from levante_tasks.errors import LevanteError, display_path, os_error
from levante_tasks.temp_names import TEMP_NAME


def current_umask() -> int:
    """The process umask: read from /proc on Linux (thread-safe), else by setting and restoring it."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (ours included), as far as this process can tell."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def name_target(exc: OSError, target: str | os.PathLike[str]) -> None:
    """Let a write error that names no file (ENOSPC from an encoder's flush, say) name the output being written, so
    its message says where (`out/summary: no space left ...`) instead of the bare problem."""
    if exc.errno is not None and exc.filename is None:
        exc.filename = os.fspath(target)


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temp path next to `target`; rename it onto `target` only if the block succeeds.

    The temp file gets mode 0666 & ~umask (mkstemp alone would leave 0600); callers may chmod it in the block.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".part", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        os.chmod(tmp_path, 0o666 & ~current_umask())
        yield tmp_path
        os.replace(tmp_path, target)
    except OSError as exc:
        name_target(exc, target)
        raise
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


_TEMP_SERIAL = itertools.count()


def temp_sibling(target: str | os.PathLike[str]) -> Path:
    """A temp name next to `target` that no other writer uses (`.<name>.<pid>.<n>.part`, n counting in this process),
    not created: for a writer of many small files that opens it itself (a plain `open`: mode 0666 & ~umask) and
    renames it onto `target`, without `atomic_path`'s mkstemp + chmod per file."""
    target = Path(target)
    return target.with_name(f".{target.name}.{os.getpid()}.{next(_TEMP_SERIAL)}.part")


@contextlib.contextmanager
def atomic_open(target: str | os.PathLike[str], mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temp file for writing; it replaces `target` only when the block exits cleanly."""
    with atomic_path(target) as tmp, open(tmp, mode, **kwargs) as handle:
        yield handle


def write_json(target: str | os.PathLike[str], data: Any) -> None:
    """Write `data` as pretty, key-sorted JSON (stable bytes for hashing and diffs), atomically."""
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)  # one write, not one per JSON chunk
    with atomic_open(target, "w", encoding="utf-8") as handle:
        handle.write(text + "\n")


def write_text(target: str | os.PathLike[str], text: str) -> None:
    """Write text atomically (UTF-8, newline translation off so bytes are identical across platforms)."""
    with atomic_open(target, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)


def make_staging_dir(target: str | os.PathLike[str]) -> Path:
    """An empty folder next to `target` (same file system, so renames are atomic), mode 0777 & ~umask."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.staging-{os.getpid()}.", dir=target.parent))
    os.chmod(staging, 0o777 & ~current_umask())
    return staging


def swap_dir(new: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Replace folder `target` by folder `new` with renames only: readers see the old tree or the new one.

    The old tree is renamed aside first and deleted only after the new one is in place; if the second
    rename fails, the old tree is renamed back.
    """
    new, target = Path(new), Path(target)
    old = None
    if target.exists() or target.is_symlink():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-{os.getpid()}.", dir=target.parent))
        old.rmdir()
        target.rename(old)
    try:
        new.rename(target)
    except OSError:
        if old is not None:
            old.rename(target)
        raise
    if old is not None:
        if old.is_symlink():
            old.unlink()
        else:
            shutil.rmtree(old, ignore_errors=True)


def replaceable_dir(out: str | os.PathLike[str], marker: str, what: str) -> Path:
    """The folder an output command may replace whole (a symlink's target): absent, empty, or an earlier output
    of that command (it holds `marker`). A file, or a non-empty folder without `marker` (a user's own folder), is
    refused with one line naming it."""
    out = Path(out)
    target = Path(os.path.realpath(out)) if out.is_symlink() else out
    if target.exists() and not target.is_dir():
        raise LevanteError(f"{display_path(out)}: exists and is not a folder; choose another --out")
    if target.is_dir():
        try:
            first = next(target.iterdir(), None)
        except OSError as exc:
            raise os_error(exc, "checking --out") from None
        if first is not None and not (target / marker).is_file():
            raise LevanteError(f"{display_path(out)}: not empty and holds no {marker} (not an earlier {what}); "
                               "it is not replaced: choose another --out")
    return target


@contextlib.contextmanager
def staged_dir(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty staging folder; when the block succeeds it replaces `target` whole, else it is deleted."""
    staging = make_staging_dir(target)
    try:
        yield staging
        swap_dir(staging, target)
    except OSError as exc:
        name_target(exc, target)
        raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def clean_stale(folder: str | os.PathLike[str], recursive: bool = False) -> list[str]:
    """Undo what writers that died (their pid is gone) left in `folder`; return the names handled.

    A tree that `swap_dir` had renamed aside (`.<name>.old-<pid>.*`) while `<name>` is missing is renamed
    back (the newest one): a kill between the two renames of a swap loses nothing. Every other leftover temp
    file or staging folder is deleted.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    handled: list[str] = []
    candidates = folder.rglob(".*") if recursive else folder.glob(".*")
    stale = []
    for path in candidates:
        match = TEMP_NAME.match(path.name)
        if match and not pid_alive(int(match.group("pid") or match.group("dpid"))):
            stale.append((path, match))
    set_aside = [(path, match) for path, match in stale if match.group("kind") == "old"]
    for path, match in sorted(set_aside, key=lambda pm: pm[0].stat().st_mtime_ns, reverse=True):
        target = path.with_name(match.group("name"))
        if path.is_dir() and not (target.exists() or target.is_symlink()):
            path.rename(target)
            handled.append(target.relative_to(folder).as_posix())
    for path, _match in sorted(stale, key=lambda pm: len(pm[0].parts), reverse=True):
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            continue
        handled.append(path.relative_to(folder).as_posix())
    return handled
