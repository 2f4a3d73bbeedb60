"""Read a generator config from a YAML file (the one place pyyaml is needed); errors name the file."""

from __future__ import annotations

from pathlib import Path

import yaml

from levante_tasks.errors import LevanteError, display_path, os_error
from levante_tasks.l0.config import ConfigError, GenConfig, from_mapping

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "default.yaml"


def load_config(path: Path = DEFAULT_CONFIG) -> GenConfig:
    """Parse and validate a YAML config (UTF-8, a leading BOM allowed); one-line LevanteError on any problem."""
    shown = display_path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise os_error(exc) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LevanteError(f"{shown}: not UTF-8 text (byte {exc.start})") from None
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or exc.__class__.__name__
        raise LevanteError(f"{shown}: invalid YAML{where}: {problem}") from None
    try:
        return from_mapping(parsed if parsed is not None else {})
    except ConfigError as exc:
        raise LevanteError(f"{shown}: {exc}") from None
