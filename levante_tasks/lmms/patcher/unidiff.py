"""A strict unified-diff reader and applier: hunks must match exactly where they say, or nothing is changed.

We apply our own small, hash-pinned patches in pure Python so the patcher needs neither `patch` nor `git`.
Kept over a library: no diff package (`unidiff`, `whatthepatch`) is among the installed dependencies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_NEWLINE = "\\ No newline at end of file"


class PatchError(ValueError):
    """The patch text is malformed, or a hunk does not match the file it is applied to."""


@dataclass
class Hunk:
    """One `@@` block: the old and new line runs (with line endings) and where the old run starts (0-based)."""

    old_start: int
    old_lines: list[str] = field(default_factory=list)
    new_lines: list[str] = field(default_factory=list)


@dataclass
class FilePatch:
    """All hunks for one file; `path` is the `+++` path with its first component (`b/`) stripped."""

    path: str
    hunks: list[Hunk] = field(default_factory=list)


def _strip_prefix(header: str) -> str:
    """`+++ b/lmms_eval/x.py<TAB>date` -> `lmms_eval/x.py` (like `patch -p1`)."""
    name = header[4:].split("\t", 1)[0].strip()
    return name.split("/", 1)[1] if "/" in name else name


def parse_patch(text: str) -> list[FilePatch]:
    """Parse unified-diff text; any preamble before the first `--- ` line is a free-form description."""
    lines = text.splitlines(keepends=True)
    patches: list[FilePatch] = []
    i = 0
    while i < len(lines):
        if not (lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")):
            i += 1
            continue
        current = FilePatch(_strip_prefix(lines[i + 1].rstrip("\r\n")))
        patches.append(current)
        i += 2
        while i < len(lines) and (match := _HUNK_HEADER.match(lines[i])):
            old_count = int(match.group(2) or 1)
            new_count = int(match.group(4) or 1)
            hunk = Hunk(old_start=max(int(match.group(1)) - 1, 0))
            i += 1
            while len(hunk.old_lines) < old_count or len(hunk.new_lines) < new_count:
                if i >= len(lines):
                    raise PatchError(f"{current.path}: hunk at line {hunk.old_start + 1} is truncated")
                line = lines[i]
                tag, body = line[:1], line[1:]
                if tag == " ":
                    hunk.old_lines.append(body)
                    hunk.new_lines.append(body)
                elif tag == "-":
                    hunk.old_lines.append(body)
                elif tag == "+":
                    hunk.new_lines.append(body)
                else:
                    raise PatchError(f"{current.path}: unexpected line in hunk: {line.rstrip()!r}")
                i += 1
                if i < len(lines) and lines[i].startswith(_NO_NEWLINE):
                    _drop_final_newline(hunk, tag)
                    i += 1
            current.hunks.append(hunk)
    if not patches:
        raise PatchError("no file sections (--- / +++) found")
    return patches


def _drop_final_newline(hunk: Hunk, tag: str) -> None:
    """Apply a `\\ No newline at end of file` marker to the line just read."""
    targets = {" ": (hunk.old_lines, hunk.new_lines), "-": (hunk.old_lines,), "+": (hunk.new_lines,)}[tag]
    for run in targets:
        run[-1] = run[-1].rstrip("\r\n")


def apply_hunks(text: str, file_patch: FilePatch, reverse: bool = False) -> str:
    """Apply (or undo, with `reverse`) every hunk at its stated position; refuse on the first mismatch.

    Hunks are processed in file order: going forward each one sits after the growth of the hunks already
    applied; going backward the hunks already undone restored the old text, so each sits at its old start.
    """
    lines = text.splitlines(keepends=True)
    growth = 0
    for hunk in file_patch.hunks:
        old, new = (hunk.new_lines, hunk.old_lines) if reverse else (hunk.old_lines, hunk.new_lines)
        start = hunk.old_start + (0 if reverse else growth)
        if lines[start : start + len(old)] != old:
            raise PatchError(f"{file_patch.path}: hunk at line {start + 1} does not match the file")
        lines[start : start + len(old)] = new
        growth += len(hunk.new_lines) - len(hunk.old_lines)
    return "".join(lines)
