"""The one strict reader of a text file: UTF-8 (a leading BOM dropped), every problem one line naming the file.

The wording, whoever reads: `<file>: <problem>` for a file that cannot be read (errors.problem_text), and
`<file>:<line>: not UTF-8 text (byte 0xNN at byte offset N)` or `<file>:<line>: NUL byte (a damaged file?)`
for bad bytes (offsets count from the start of the file, BOM included).
"""

from __future__ import annotations

import codecs
from pathlib import Path

from levante_tasks.errors import LevanteError, display_path, problem_text

BOM = codecs.BOM_UTF8
NEWLINE = b"\n"
NUL = b"\0"


def line_of(data: bytes, offset: int, first_line: int = 1) -> int:
    """The 1-based line number of byte `offset` of `data` (which starts on line `first_line`)."""
    return first_line + data.count(NEWLINE, 0, offset)


def not_utf8(data: bytes, offset: int, base: int = 0) -> str:
    """`not UTF-8 text (byte 0xNN at byte offset N)` for the undecodable byte `data[offset]`; `base`: the file
    offset of data[0] (a reader in chunks)."""
    return f"not UTF-8 text (byte 0x{data[offset]:02x} at byte offset {base + offset})"


def nul_byte() -> str:
    """The problem of a NUL byte in a text file."""
    return "NUL byte (a damaged file?)"


def decode_text(data: bytes, shown: str, *, nul: bool = False,
                error: type[Exception] = LevanteError) -> str:
    """`data` (the bytes of the file called `shown` in messages) as text; `nul`: refuse a NUL byte too.
    Raises `error` with one line naming the file, the line and the problem."""
    start = len(BOM) if data.startswith(BOM) else 0
    if nul:
        index = data.find(NUL, start)
        if index >= 0:
            raise error(f"{shown}:{line_of(data, index)}: {nul_byte()}")
    try:
        return data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        raise error(f"{shown}:{line_of(data, offset)}: {not_utf8(data, offset)}") from None


def read_text(path: Path, shown: str | None = None, *, nul: bool = False,
              error: type[Exception] = LevanteError) -> str:
    """The text of the file at `path`, called `shown` in messages (default: errors.display_path).

    Raises `error` (default LevanteError) with one line: `<file>: <problem>` when it cannot be read (missing
    included), else what decode_text says."""
    shown = display_path(path) if shown is None else shown
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise error(f"{shown}: {problem_text(exc)}") from None
    return decode_text(data, shown, nul=nul, error=error)


def read_optional_text(path: Path, shown: str | None = None) -> str | None:
    """read_text, or None when the file does not exist."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LevanteError(f"{display_path(path) if shown is None else shown}: {problem_text(exc)}") from None
    return decode_text(data, display_path(path) if shown is None else shown)
