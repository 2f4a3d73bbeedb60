"""Read a user's YAML file (a config) strictly: every problem is one LevanteError line that names the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from levante_tasks.errors import LevanteError, display_path, problem_text


def read_yaml(path: Path) -> Any:
    """The parsed YAML document at `path` (UTF-8, a leading BOM allowed); None for an empty file."""
    shown = display_path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LevanteError(f"{shown}: {problem_text(exc)}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LevanteError(f"{shown}: not UTF-8 text (byte {exc.start})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or exc.__class__.__name__
        raise LevanteError(f"{shown}: invalid YAML{where}: {problem}") from None
