"""One exception type for user-facing failures, and the one-line wording of file-system errors."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from levante_tasks.temp_names import target_path

_HINTS = {
    errno.ENOSPC: "no space left on the device (nothing was replaced; free space and rerun)",
    errno.EDQUOT: "disk quota exceeded (nothing was replaced; free space and rerun)",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOTDIR: "a path component is not a folder",
    errno.EISDIR: "is a folder, expected a file",
    errno.ENOENT: "no such file or folder",
}


_ABSOLUTE_PATH = re.compile(r"(?<![\w.~:/])/[^\s:'\"(),]+")  # not inside a URL (`https://host/path`)


class LevanteError(Exception):
    """A problem with the user's input or environment, reported as one line naming the file and the problem."""


def display_path(path: str | os.PathLike[str]) -> str:
    """A path for messages that never shows an absolute path (nor, through it, a user name).

    Relative to the working folder when under it; else its last two parts behind `.../`.
    """
    text = os.fspath(path)
    if not os.path.isabs(text):
        return Path(text).as_posix()
    try:
        return Path(text).resolve().relative_to(Path.cwd().resolve()).as_posix() or "."
    except (ValueError, OSError):
        parts = Path(text).parts[1:]
        return ".../" + "/".join(parts[-2:]) if parts else "/"


def shell_path(path: str | os.PathLike[str]) -> str:
    """A path for a command printed to be pasted in the same shell: as given when relative, else relative to the
    working folder (`..` parts where it lies elsewhere; its folder resolved, so `..` means what the kernel makes of
    it): runnable from there, unlike display_path's `.../`, and no absolute path."""
    text = os.fspath(path)
    if not os.path.isabs(text):
        return Path(text).as_posix()
    here = os.path.realpath(os.getcwd())
    return Path(os.path.relpath(os.path.join(os.path.realpath(os.path.dirname(text)), os.path.basename(text)),
                                here)).as_posix()


def _shown(filename: str | bytes | int) -> str:
    """A file name from an OSError as messages show it: a writer's hidden temp or staging name becomes the target it
    stands for (the user never typed `.out.staging-<pid>.<random>`), and no absolute path."""
    return display_path(target_path(os.fsdecode(filename) if not isinstance(filename, int) else str(filename)))


def describe_os_error(exc: OSError) -> str:
    """`<file>: <problem>` for an OSError, e.g. `out/comparison.json: no space left on the device (...)`."""
    problem = _HINTS.get(exc.errno or -1) or exc.strerror or exc.__class__.__name__
    if exc.filename is None:
        return problem
    where = _shown(exc.filename)
    if exc.filename2 is not None:
        where = f"{where} -> {_shown(exc.filename2)}"
    return f"{where}: {problem}"


def shown_paths(text: str) -> str:
    """`text` with each absolute path in it shown as `display_path` shows it (for messages of other libraries)."""
    return _ABSOLUTE_PATH.sub(lambda m: display_path(m.group()), text)


def problem_text(exc: OSError) -> str:
    """The problem of an OSError in words, without its (absolute) file name, e.g. `permission denied`."""
    if exc.errno is None:  # e.g. pyarrow's IO errors: their first line is the message (paths in it shown relative)
        first = str(exc).splitlines()[0] if str(exc) else ""
        return shown_paths(first) or type(exc).__name__
    return describe_os_error(OSError(exc.errno, exc.strerror))


def os_error(exc: OSError, what: str = "") -> LevanteError:
    """A LevanteError for an OSError, optionally saying what was being done (`writing the datasets`)."""
    message = describe_os_error(exc)
    return LevanteError(f"{message} ({what})" if what else message)
