"""Read a user's YAML file (a config) strictly: every problem is one LevanteError line that names the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from levante_tasks.errors import LevanteError, display_path
from levante_tasks.textfile import read_text


class _StrictLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key given twice in one mapping (PyYAML silently keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _value in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, str | int | float | bool) and key in seen:
                raise yaml.constructor.ConstructorError(problem=f"duplicate key {key!r}",
                                                        problem_mark=key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: Path) -> Any:
    """The parsed YAML document at `path` (UTF-8, a leading BOM allowed); None for an empty file."""
    shown = display_path(path)
    text = read_text(path, shown)
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or exc.__class__.__name__
        raise LevanteError(f"{shown}: invalid YAML{where}: {problem}") from None
