"""The default L0 dataset's programs, shipped as `configs/default_programs.jsonl` instead of drawn at load time.

Drawing them from `configs/default.yaml` takes ~8-13 s of CPU (thousands of programs parsed, compiled and traced
to keep 200), which every process that loaded a default `l0_trace` task paid before its first item. The file holds
exactly the rows `dataset.generate` gives for that config (`store.jsonl_text` bytes, bins in order); a test draws
them again and compares the bytes, so the file cannot drift from the generator or the config. After changing
either, rewrite it: `python -m levante_tasks.l0.default_data`. The demonstration pools are still drawn at load
time (`dataset.augment`, ~0.5 s), from these programs and the config.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from levante_tasks.atomic import write_text
from levante_tasks.errors import LevanteError, display_path
from levante_tasks.l0 import dataset
from levante_tasks.l0.config import GenConfig
from levante_tasks.l0.config_file import DEFAULT_CONFIG, load_config
from levante_tasks.l0.store import jsonl_text

PROGRAMS_FILE = DEFAULT_CONFIG.with_name("default_programs.jsonl")
REMEDY = "reinstall levante-tasks, or set $LEVANTE_L0_DATA"


def drawn_text(config: GenConfig) -> str:
    """The programs file's text as the generator draws it for `config` (the slow path the file stands for)."""
    return jsonl_text(list(dataset.generate(config).items))


def read_programs() -> list[dict[str, Any]]:
    """The shipped programs, in file order; one-line LevanteError naming the file if it is missing or damaged."""
    where = display_path(PROGRAMS_FILE)
    try:
        lines = PROGRAMS_FILE.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
        raise LevanteError(f"{where}: cannot read the default L0 programs ({why}); {REMEDY}") from None
    rows = []
    for number, line in enumerate(lines, 1):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise LevanteError(f"{where}:{number}: not a JSON row ({exc.msg}); {REMEDY}") from None
    return rows


def main() -> int:
    """Rewrite the programs file from `configs/default.yaml` (after a change to the generator or the config)."""
    write_text(PROGRAMS_FILE, drawn_text(load_config(DEFAULT_CONFIG)))
    print(f"wrote {display_path(PROGRAMS_FILE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
