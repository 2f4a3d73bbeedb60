"""The shipped default L0 programs: exactly what `configs/default.yaml` draws, and a damaged file is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from levante_tasks.errors import LevanteError
from levante_tasks.l0 import dataset, default_data, task
from levante_tasks.l0.config_file import DEFAULT_CONFIG, load_config


def test_the_shipped_programs_are_what_the_default_config_draws() -> None:
    """Fails when the generator, the tracer or default.yaml changed without `python -m levante_tasks.l0.default_data`
    (or the file was edited): the tasks would then serve programs the code no longer draws."""
    config = load_config(DEFAULT_CONFIG)
    drawn = list(dataset.generate(config).items)
    assert default_data.PROGRAMS_FILE.read_text(encoding="utf-8") == default_data.drawn_text(config)
    assert default_data.read_programs() == drawn  # the JSON round trip keeps every value and type
    assert [item["bin"] for item in drawn] == sorted(item["bin"] for item in drawn)


def test_the_default_tasks_read_the_shipped_programs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The tasks' documents come from the file, not from a fresh draw: one edited program shows up in them."""
    rows = default_data.read_programs()
    first = rows[0]
    edited = tmp_path / "default_programs.jsonl"
    edited.write_text(default_data.PROGRAMS_FILE.read_text(encoding="utf-8").replace(
        first["id"], "edited-program-id", 1), encoding="utf-8")
    monkeypatch.setattr(default_data, "PROGRAMS_FILE", edited)
    monkeypatch.delenv(task.DATA_ENV, raising=False)
    task._default_rows.cache_clear()
    try:
        _, items, pools = task._default_rows()
    finally:
        task._default_rows.cache_clear()
    assert items[0]["id"] == "edited-program-id" and items[1:] == rows[1:]
    assert [pool["id"] for pool in pools][:1] == ["edited-program-id"]


@pytest.mark.parametrize("damage, problem", [
    ("missing", r"default_programs\.jsonl: cannot read the default L0 programs \(No such file or directory\)"),
    ("truncated", r"default_programs\.jsonl:2: not a JSON row \("),
    ("latin-1", r"default_programs\.jsonl: cannot read the default L0 programs \(not UTF-8\)"),
])
def test_a_damaged_programs_file_is_one_line(damage: str, problem: str, monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    damaged = tmp_path / "default_programs.jsonl"
    lines = default_data.PROGRAMS_FILE.read_text(encoding="utf-8").splitlines(keepends=True)
    if damage == "truncated":
        damaged.write_text(lines[0] + lines[1][: len(lines[1]) // 2], encoding="utf-8")
    elif damage == "latin-1":
        damaged.write_bytes(lines[0].encode() + "{\"id\":\"é\"}\n".encode("latin-1"))
    monkeypatch.setattr(default_data, "PROGRAMS_FILE", damaged)
    with pytest.raises(LevanteError, match=problem) as raised:
        default_data.read_programs()
    message = str(raised.value)
    assert "\n" not in message and str(tmp_path) not in message and "LEVANTE_L0_DATA" in message
