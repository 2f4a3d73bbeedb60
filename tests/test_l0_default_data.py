"""The shipped default L0 programs: exactly what `configs/default.yaml` draws, read by the default tasks, and a
damaged or edited file is one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from levante_tasks.errors import LevanteError
from levante_tasks.l0 import dataset, default_data, task
from levante_tasks.l0.config_file import DEFAULT_CONFIG, load_config
from levante_tasks.l0.store import jsonl_text


def test_the_shipped_programs_are_what_the_default_config_draws() -> None:
    """Fails when the generator, the tracer or default.yaml changed without `python -m levante_tasks.l0.default_data`
    (or the file was edited): the tasks would then serve programs the code no longer draws."""
    drawn = list(dataset.generate(load_config(DEFAULT_CONFIG)).items)
    data = default_data.PROGRAMS_FILE.read_bytes()
    assert data == jsonl_text(drawn).encode("utf-8")  # bytes: a checkout that converted line ends fails here
    assert default_data.checksum_file().read_text(encoding="utf-8") == default_data.checksum_line(data)
    assert default_data.read_programs() == drawn  # the JSON round trip keeps every value and type


def copy_to(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped programs file and its sha256 copied into `folder`, and `default_data` pointed at the copy."""
    copy = folder / default_data.PROGRAMS_FILE.name
    shutil.copy(default_data.PROGRAMS_FILE, copy)
    shutil.copy(default_data.checksum_file(), folder / default_data.checksum_file().name)
    monkeypatch.setattr(default_data, "PROGRAMS_FILE", copy)
    return copy


def test_the_default_tasks_read_the_shipped_programs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The tasks' documents come from the file, not from a fresh draw: one edited program id (with the sha256
    rewritten to match) shows up in them."""
    rows = default_data.read_programs()
    copy = copy_to(tmp_path, monkeypatch)
    edited = copy.read_text(encoding="utf-8").replace(rows[0]["id"], "edited-program-id", 1).encode("utf-8")
    copy.write_bytes(edited)
    default_data.checksum_file().write_text(default_data.checksum_line(edited), encoding="utf-8")
    monkeypatch.delenv(task.DATA_ENV, raising=False)
    task._default_rows.cache_clear()
    try:
        _, items, pools = task._default_rows()
    finally:
        task._default_rows.cache_clear()
    assert items[0]["id"] == "edited-program-id" and items[1:] == rows[1:]
    assert pools[0]["id"] == "edited-program-id"


CANNOT_READ = (r"default_programs\.jsonl: cannot read the default L0 programs or their sha256 "
               r"\(No such file or directory\)")
MISMATCH = (r"default_programs\.jsonl: its sha256 is not the one in default_programs\.jsonl\.sha256 "
            r"\(edited or truncated\)")


@pytest.mark.parametrize("damage, problem", [
    ("programs missing", CANNOT_READ),
    ("sha256 missing", CANNOT_READ),
    ("cut at a line end", MISMATCH),
    ("same-size edit", MISMATCH),
    ("CRLF line ends", MISMATCH),
])
def test_a_damaged_programs_file_is_one_line(damage: str, problem: str, monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    """Every damage is refused with one line naming the file (no path above it), before any program is used: a
    file cut at a line end would otherwise serve fewer programs without a word."""
    copy = copy_to(tmp_path, monkeypatch)
    data = copy.read_bytes()
    if damage == "programs missing":
        copy.unlink()
    elif damage == "sha256 missing":
        default_data.checksum_file().unlink()
    elif damage == "cut at a line end":
        copy.write_bytes(b"".join(data.splitlines(keepends=True)[:120]))
    elif damage == "same-size edit":
        at = data.index(b'"steps":') + len(b'"steps":')
        copy.write_bytes(data[:at] + (b"1" if data[at:at + 1] != b"1" else b"2") + data[at + 1:])
    else:
        copy.write_bytes(data.replace(b"\n", b"\r\n"))
    with pytest.raises(LevanteError, match=problem) as raised:
        default_data.read_programs()
    message = str(raised.value)
    assert "\n" not in message and str(tmp_path) not in message and "LEVANTE_L0_DATA" in message
