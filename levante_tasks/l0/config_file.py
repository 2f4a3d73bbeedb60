"""Read a generator config from a YAML file; errors name the file."""

from __future__ import annotations

from pathlib import Path

from levante_tasks.errors import LevanteError, display_path
from levante_tasks.l0.config import ConfigError, GenConfig, from_mapping
from levante_tasks.yaml_file import read_yaml

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "default.yaml"


def load_config(path: Path = DEFAULT_CONFIG) -> GenConfig:
    """Parse and validate a YAML config (UTF-8, a leading BOM allowed); one-line LevanteError on any problem."""
    parsed = read_yaml(path)
    try:
        return from_mapping(parsed if parsed is not None else {})
    except ConfigError as exc:
        raise LevanteError(f"{display_path(path)}: {exc}") from None
