"""Read a release CSV (manifest, corpus) into rows, turning every way it can be unreadable into one line.

The file is read as bytes and decoded whole, so a non-UTF-8 byte is reported at its offset in the file (a
text-mode reader reports it relative to an 8 KiB chunk). A leading UTF-8 BOM is accepted (spreadsheet exports).
"""

from __future__ import annotations

import csv
import errno
import io
import os
from pathlib import Path, PurePosixPath

from levante_tasks.errors import LevanteError, problem_text
from levante_tasks.textfile import decode_text


def blocked_folder(path: Path, name: str) -> str | None:
    """The shallowest folder of `name` (a path relative to some root, naming `path`) that cannot be listed/entered."""
    folders = PurePosixPath(name).parts[:-1]
    for depth in range(1, len(folders) + 1):
        if not os.access(path.parents[len(folders) - depth], os.R_OK | os.X_OK):
            return "/".join(folders[:depth])
    return None


def unreadable(path: Path, name: str, exc: OSError) -> str:
    """One line for a file that could not be opened: the blocked folder on its way, else the file and why."""
    if exc.errno in (errno.EACCES, errno.EPERM):
        folder = blocked_folder(path, name)
        if folder is not None:
            return f"{folder}: folder not readable ({problem_text(exc)})"
    return f"{name}: {problem_text(exc)}"


def read_csv_rows(path: Path, name: str, missing: str) -> tuple[list[str], list[list[str]]]:
    """(header, data rows) of the CSV at `path`, called `name` in messages; blank lines are skipped.

    Raises LevanteError with one line: `missing` when the file does not exist, else naming `name` (or the folder
    that blocks it) and the problem: unreadable, not UTF-8 (with the byte offset), broken CSV, or empty.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise LevanteError(missing) from exc
    except OSError as exc:
        raise LevanteError(unreadable(path, name, exc)) from exc
    text = decode_text(data, name)
    try:
        rows = [row for row in csv.reader(io.StringIO(text, newline="")) if row]
    except csv.Error as exc:
        raise LevanteError(f"{name}: not a readable CSV ({exc})") from exc
    if not rows:
        raise LevanteError(f"{name}: empty file")
    return rows[0], rows[1:]


def shown(text: str) -> str:
    """`text` as is when printable, else its escaped repr, so a message stays on one line."""
    return text if text.isprintable() else repr(text)
