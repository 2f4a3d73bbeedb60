"""A real `lmms-eval` run on broken prepared data ends with one line naming the file and `levante-tasks prepare`,
a non-zero exit status and no traceback: corrupt, unreadable or foreign parquet, missing or corrupt images (found
inside the model's loop), an unreadable or undecodable default_version."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from faults import DROP_DAC, IS_ROOT

from levante_tasks.schema import task_source
from levante_tasks.testing.fixture_data import write_fixture
from levante_tasks.testing.lmms_fork import COMMAND, run_cli

TASKS_DIR = task_source.TASKS_DIR
VERSION = "fixture-v1"


@pytest.fixture(scope="module")
def good_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("levante-data")
    write_fixture(root, VERSION)
    return root


@pytest.fixture
def data(good_data: Path, tmp_path: Path) -> Path:
    """A private copy of the prepared fixture, to break."""
    copy = tmp_path / "data"
    shutil.copytree(good_data, copy)
    return copy


def lmms_eval(data: Path, out: Path, model: str = "levante_fixed", task: str = "levante_trog",
              drop_dac: bool = False) -> subprocess.CompletedProcess[str]:
    """lmms-eval's CLI (with the test models registered) on one LEVANTE task, offline, `data` as LEVANTE_DATA_DIR."""
    if drop_dac and not IS_ROOT:
        pytest.skip("dropping capabilities needs root (CI runs as root)")
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("LEVANTE_DATA_VERSION", None)
    args = ["--model", model, "--tasks", task, "--include_path", str(TASKS_DIR), "--output_path", str(out),
            "--verbosity", "WARNING"]
    if drop_dac:  # a real process: capabilities are dropped for it alone
        return subprocess.run([*DROP_DAC, *COMMAND, *args], capture_output=True, text=True, env=env, cwd=out.parent,
                              timeout=600, check=False)
    return run_cli(args, cwd=out.parent, env=env, timeout=600)


def one_line(result: subprocess.CompletedProcess[str], task: str, *words: str) -> str:
    """The run failed with exactly one line naming the task, `words` and the prepare command; no traceback."""
    assert result.returncode != 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-4000:]
    lines = [line for line in result.stderr.splitlines() if "levante-tasks prepare" in line]
    assert len(lines) == 1, result.stderr[-4000:]
    line = lines[0]
    assert line.startswith(f"{task}: "), line
    for word in words:
        assert word in line, line
    assert str(Path.home()) not in line and "/tmp/" not in line, line  # no absolute paths
    return line


def test_good_data_runs(data: Path, tmp_path: Path) -> None:
    result = lmms_eval(data, tmp_path / "out", model="levante_image_oracle")
    assert result.returncode == 0, result.stderr[-3000:]
    assert list((tmp_path / "out").rglob("*_results.json"))


def test_truncated_parquet_is_one_line(data: Path, tmp_path: Path) -> None:
    parquet = data / VERSION / "datasets" / "trog" / "test.parquet"
    parquet.write_bytes(parquet.read_bytes()[:300])
    one_line(lmms_eval(data, tmp_path / "out"), "levante_trog", f"{VERSION}/datasets/trog/test.parquet")


def test_same_size_corrupt_parquet_is_one_line(data: Path, tmp_path: Path) -> None:
    parquet = data / VERSION / "datasets" / "trog" / "test.parquet"
    raw = bytearray(parquet.read_bytes())
    raw[-200:-8] = bytes(192)  # footer metadata zeroed, same size, magic bytes kept
    parquet.write_bytes(bytes(raw))
    one_line(lmms_eval(data, tmp_path / "out"), "levante_trog", f"{VERSION}/datasets/trog/test.parquet")


def test_parquet_without_the_item_columns_is_one_line(data: Path, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = data / VERSION / "datasets" / "trog" / "test.parquet"
    pq.write_table(pa.table({"item_uid": ["a"], "answer": ["b"]}), parquet)
    one_line(lmms_eval(data, tmp_path / "out"), "levante_trog", f"{VERSION}/datasets/trog/test.parquet",
             "missing columns")


def test_unreadable_parquet_is_one_line(data: Path, tmp_path: Path) -> None:
    parquet = data / VERSION / "datasets" / "trog" / "test.parquet"
    parquet.chmod(0)
    one_line(lmms_eval(data, tmp_path / "out", drop_dac=True), "levante_trog",
             f"{VERSION}/datasets/trog/test.parquet", "permission denied")


def test_missing_image_in_the_model_loop_is_one_line(data: Path, tmp_path: Path) -> None:
    image = data / VERSION / "release" / "visual" / "trog" / "trog_item3-opt1.png"
    image.unlink()
    one_line(lmms_eval(data, tmp_path / "out", model="levante_image_oracle"), "levante_trog",
             "release/visual/trog/trog_item3-opt1.png", "missing", f"{VERSION}/")


def _damage_header(raw: bytes) -> bytes:
    return raw[:20] + b"\xff" * 20 + raw[40:]  # IHDR damaged, same size: PIL cannot identify it


def _zero_idat_length(raw: bytes) -> bytes:
    at = raw.index(b"IDAT") - 4
    return raw[:at] + bytes(4) + raw[at + 4:]  # same size; PIL raises SyntaxError("broken PNG file")


def _truncate(raw: bytes) -> bytes:
    return raw[:60]


@pytest.mark.parametrize("damage", [_damage_header, _zero_idat_length, _truncate])
def test_corrupt_image_in_the_model_loop_is_one_line(data: Path, tmp_path: Path, damage) -> None:
    image = data / VERSION / "release" / "visual" / "trog" / "trog_item3-opt1.png"
    image.write_bytes(damage(image.read_bytes()))
    one_line(lmms_eval(data, tmp_path / "out", model="levante_image_oracle"), "levante_trog",
             "release/visual/trog/trog_item3-opt1.png", "unreadable image")


def test_unreadable_default_version_is_one_line(data: Path, tmp_path: Path) -> None:
    (data / "default_version").chmod(0)
    one_line(lmms_eval(data, tmp_path / "out", drop_dac=True), "levante_trog", "default_version",
             "permission denied")


def test_undecodable_default_version_is_one_line(data: Path, tmp_path: Path) -> None:
    (data / "default_version").write_bytes(b"\xff\xfe\x00v1\n")
    one_line(lmms_eval(data, tmp_path / "out"), "levante_trog", "default_version")
