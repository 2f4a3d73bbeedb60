"""The default L0 dataset's programs, shipped as `configs/default_programs.jsonl` instead of drawn at load time.

Drawing them from `configs/default.yaml` takes ~8-13 s of CPU (thousands of programs parsed, compiled and traced
to keep 200), which every process that loaded a default `l0_trace` task paid before its first item. The file holds
exactly the rows `dataset.generate` gives for that config (`store.jsonl_text` bytes, bins in order), and
`default_programs.jsonl.sha256` its sha256 (as `sha256sum` writes it), checked on every read: an edited or
truncated file is refused. A test draws the programs again and compares the bytes, so the file cannot drift from
the generator or the config; after changing either, rewrite both files: `python -m levante_tasks.l0.default_data`.
The demonstration pools are still drawn at load time (`dataset.augment`, ~0.5 s), from these programs and the
config.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from levante_tasks.atomic import write_text
from levante_tasks.errors import LevanteError, display_path
from levante_tasks.l0 import dataset
from levante_tasks.l0.config_file import DEFAULT_CONFIG, load_config
from levante_tasks.l0.store import jsonl_text

PROGRAMS_FILE = DEFAULT_CONFIG.with_name("default_programs.jsonl")
REMEDY = "reinstall levante-tasks, or set $LEVANTE_L0_DATA"


def checksum_file() -> Path:
    """The file holding the programs file's sha256 (beside it)."""
    return PROGRAMS_FILE.with_name(PROGRAMS_FILE.name + ".sha256")


def checksum_line(data: bytes) -> str:
    """`<sha256>  default_programs.jsonl` and a newline, as `sha256sum` prints it for the programs file."""
    return f"{hashlib.sha256(data).hexdigest()}  {PROGRAMS_FILE.name}\n"


def read_programs() -> list[dict[str, Any]]:
    """The shipped programs, in file order, once their sha256 matches the one shipped beside them; one-line
    LevanteError naming the file when either is missing, unreadable or they disagree."""
    try:
        data = PROGRAMS_FILE.read_bytes()
        recorded = checksum_file().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
        raise LevanteError(f"{display_path(PROGRAMS_FILE)}: cannot read the default L0 programs or their sha256 "
                           f"({why}); {REMEDY}") from None
    if checksum_line(data) != recorded:
        raise LevanteError(f"{display_path(PROGRAMS_FILE)}: its sha256 is not the one in {checksum_file().name} "
                           f"(edited or truncated); {REMEDY}")
    return [json.loads(line) for line in data.decode("utf-8").split("\n")[:-1]]


def main() -> int:
    """Rewrite the programs file and its sha256 from `configs/default.yaml` (after a change to the generator, the
    tracer or the config)."""
    text = jsonl_text(list(dataset.generate(load_config(DEFAULT_CONFIG)).items))  # the slow path the file stands for
    write_text(PROGRAMS_FILE, text)
    write_text(checksum_file(), checksum_line(text.encode("utf-8")))
    print(f"wrote {display_path(PROGRAMS_FILE)} and {checksum_file().name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
