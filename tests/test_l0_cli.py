"""`levante-tasks l0 generate|augment`: the dataset folder, and one-line errors that leave good data alone."""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

import pytest
from faults import kill9_when, one_error_line, run_cli, small_tmpfs, tree_snapshot

from levante_tasks.cli import main
from levante_tasks.l0 import dataset, store

TINY = """\
seed: 3
num_programs: 40
min_code_lines: 5
max_code_lines: 14
max_while_loop: 8
max_trace_steps: 40
num_bins: 3
per_bin: 3
fewshot_pool_size: 4
num_fewshot: 2
num_voters: 2
"""


def write_config(folder: Path, text: str = TINY, name: str = "tiny.yaml") -> Path:
    path = folder / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def generate(config: Path, out: Path) -> int:
    return main(["l0", "generate", "--config", str(config), "--out", str(out)])


def test_generate_then_augment_writes_a_checked_dataset(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "data"
    assert generate(write_config(tmp_path), out) == 0
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "programs.jsonl"]
    assert main(["l0", "augment", "--data", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["fewshots.jsonl", "manifest.json", "programs.jsonl"]
    printed = capsys.readouterr().out
    assert "wrote 9 programs to" in printed and "bin 1: 3, bin 2: 3, bin 3: 3" in printed
    manifest = store.read_manifest(out)
    config = store.manifest_config(out, manifest)
    assert config.per_bin == 3 and manifest["config_sha256"] == config.sha256()
    assert "<while_block>" in manifest["grammar"] and manifest["python"].count(".") == 2
    assert manifest["augment"]["programs"] + len(manifest["augment"]["dropped"]) == 9
    items = store.read_rows(out, manifest, store.PROGRAMS)
    pools = store.read_rows(out, manifest, store.FEWSHOTS)
    assert [i["bin"] for i in items] == [1, 1, 1, 2, 2, 2, 3, 3, 3] and len(pools) == manifest["augment"]["programs"]
    for path in out.iterdir():  # no absolute paths, user or host names in what we write
        assert str(tmp_path) not in path.read_text(encoding="utf-8")
    again = tmp_path / "again"
    assert generate(write_config(tmp_path), again) == 0
    assert (again / "programs.jsonl").read_bytes() == (out / "programs.jsonl").read_bytes()


def test_generate_refuses_a_folder_that_is_not_an_l0_dataset(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me", encoding="utf-8")
    assert generate(write_config(tmp_path), out) == 2
    assert "holds no manifest.json (not an earlier L0 dataset)" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert (out / "notes.txt").read_text(encoding="utf-8") == "keep me"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (TINY + "colour: red\n", "tiny.yaml: colour: unknown setting"),
        ("seed: [\n", "tiny.yaml: invalid YAML at line 2"),
        (b"seed: 3\n\xff\xfe\n", "tiny.yaml:2: not UTF-8 text (byte 0xff at byte offset 8)"),
        (b"seed: 3\x00\n", "tiny.yaml: invalid YAML"),
        ("- 1\n- 2\n", "tiny.yaml: expected a mapping of settings, got list"),
        ("per_bin: 0\n", "tiny.yaml: per_bin: must be >= 1"),
    ],
    ids=["unknown-key", "yaml-syntax", "not-utf8", "nul-byte", "not-a-mapping", "out-of-range"],
)
def test_bad_config_is_one_line_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                   monkeypatch: pytest.MonkeyPatch, content: str | bytes,
                                                   problem: str) -> None:
    monkeypatch.chdir(tmp_path)  # messages show paths relative to the working folder
    out = tmp_path / "data"
    assert generate(write_config(tmp_path, content), out) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"levante-tasks: error: {problem}"), line
    assert not out.exists()


def test_a_bom_is_accepted_and_a_missing_config_is_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert generate(write_config(tmp_path, "\ufeff" + TINY, "bom.yaml"), tmp_path / "bom") == 0
    assert generate(write_config(tmp_path), tmp_path / "plain") == 0
    assert (tmp_path / "bom/programs.jsonl").read_bytes() == (tmp_path / "plain/programs.jsonl").read_bytes()
    capsys.readouterr()
    assert generate(tmp_path / "absent.yaml", tmp_path / "x") == 2
    assert "absent.yaml: no such file or folder" in one_error_line(capsys.readouterr().err)


def test_augment_refuses_missing_or_edited_data_and_keeps_the_folder(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture) -> None:
    assert main(["l0", "augment", "--data", str(tmp_path / "none")]) == 2
    assert "none/manifest.json: no such file (run `levante-tasks l0 generate`)" in one_error_line(
        capsys.readouterr().err)
    out = tmp_path / "data"
    assert generate(write_config(tmp_path), out) == 0
    programs = out / "programs.jsonl"
    data = bytearray(programs.read_bytes())
    data[data.index(b'"steps":') + 8] ^= 1  # same size, one digit changed
    programs.write_bytes(bytes(data))
    before = tree_snapshot(out)
    capsys.readouterr()
    assert main(["l0", "augment", "--data", str(out)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "data/programs.jsonl: does not match its sha256 in manifest.json" in line
    assert tree_snapshot(out) == before
    (out / "manifest.json").write_text("{", encoding="utf-8")
    assert main(["l0", "augment", "--data", str(out)]) == 2
    assert "data/manifest.json: invalid JSON" in one_error_line(capsys.readouterr().err)


def test_read_only_output_folder_is_one_line_and_nothing_changes(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    parent = tmp_path / "ro"
    assert run_cli(["l0", "generate", "--config", config, "--out", parent / "data"]).returncode == 0
    before = tree_snapshot(parent)
    parent.chmod(0o555)
    try:
        result = run_cli(["l0", "generate", "--config", config, "--out", parent / "data"], drop_dac=True)
    finally:
        parent.chmod(0o755)
    assert result.returncode == 2
    assert "permission denied" in one_error_line(result.stderr)
    assert tree_snapshot(parent) == before


def test_unreadable_data_folder_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "data"
    assert generate(write_config(tmp_path), out) == 0
    before = tree_snapshot(tmp_path)
    out.chmod(0)
    try:
        result = run_cli(["l0", "augment", "--data", out], drop_dac=True)
    finally:
        out.chmod(0o755)
    assert result.returncode == 2
    assert "data/manifest.json: permission denied" in one_error_line(result.stderr)
    assert tree_snapshot(tmp_path) == before


def test_disk_full_keeps_the_old_dataset(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # ~70 kB of programs: does not fit next to the old ~8 kB dataset on a 40 kB file system.
    big = write_config(tmp_path, TINY.replace("per_bin: 3", "per_bin: 40").replace("num_programs: 40",
                                                                                   "num_programs: 400"), "big.yaml")
    with small_tmpfs("40k") as mount:
        out = mount / "data"
        assert generate(write_config(tmp_path), out) == 0
        before = tree_snapshot(mount)
        capsys.readouterr()
        assert generate(big, out) == 2
        error = one_error_line(capsys.readouterr().err)  # names the dataset (or its file), not a staging folder
        assert re.search(r"/data(/[\w.]+)?: no space left on the device", error), error
        assert tree_snapshot(mount) == before  # no staging folder or temp file left behind


def test_kill_9_while_generating_keeps_the_old_dataset(tmp_path: Path) -> None:
    out = tmp_path / "data"
    assert generate(write_config(tmp_path), out) == 0
    before = tree_snapshot(tmp_path)
    start = time.monotonic()
    # The shipped default config takes several seconds to draw: kill it in the middle.
    status = kill9_when(["l0", "generate", "--out", out], lambda: time.monotonic() - start > 3.0)
    assert status == -9
    assert tree_snapshot(tmp_path) == before
    assert generate(write_config(tmp_path), out) == 0
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["config"]["seed"] == 3


def test_augment_refuses_a_program_outside_the_grammar(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "data"
    assert generate(write_config(tmp_path), out) == 0
    rows = [json.loads(line) for line in (out / "programs.jsonl").read_text(encoding="utf-8").splitlines()]
    rows[1]["program"] = rows[1]["program"].replace("\n", "\n\tlst = ().__class__\n", 1)
    text = store.jsonl_text(rows)
    (out / "programs.jsonl").write_text(text, encoding="utf-8")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"]["programs.jsonl"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    before = tree_snapshot(out)
    capsys.readouterr()
    assert main(["l0", "augment", "--data", str(out)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"data/programs.jsonl: program {rows[1]['id']}: line 2: unsupported expression `Attribute`" in line
    assert tree_snapshot(out) == before


def test_bins_that_cannot_be_filled_are_refused_and_the_old_dataset_stays(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "data"
    assert generate(write_config(tmp_path), out) == 0
    before = tree_snapshot(out)
    capsys.readouterr()
    impossible = TINY.replace("num_bins: 3\n", "bin_ranges: [[1, 10], [41, 60]]\n")  # max_trace_steps is 40
    assert generate(write_config(tmp_path, impossible, "impossible.yaml"), out) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "impossible.yaml: bin_ranges[1]: starts at 41 steps, but max_trace_steps 40" in line, line
    # Possible in principle, but no drawn program lands there: refused after drawing, naming the empty bin.
    unlucky = TINY.replace("num_bins: 3\n", "bin_ranges: [[1, 10], [39, 40]]\n").replace("seed: 3", "seed: 4")
    unlucky = unlucky.replace("num_programs: 40", "num_programs: 5")
    assert generate(write_config(tmp_path, unlucky, "unlucky.yaml"), out) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "unlucky.yaml: no program fell in bin 2 after" in line and "nothing was written" in line, line
    assert tree_snapshot(out) == before
    assert main(["l0", "augment", "--data", str(out)]) == 0


def test_augment_that_would_leave_a_bin_empty_is_refused_and_the_folder_stays(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    # Numbers are all 0 and lists 5 or 6 long: the three bin-3 programs of this seed have fewer than 4 other
    # executable inputs, the bin-1 and bin-2 programs have enough.
    sparse = TINY.replace("seed: 3", "seed: 4").replace("per_bin: 3", "per_bin: 2")
    sparse += "max_num: 1\nmin_list_len: 5\nmax_list_len: 6\nmax_augment_tries: 200\n"
    out = tmp_path / "data"
    assert generate(write_config(tmp_path, sparse, "sparse.yaml"), out) == 0
    before = tree_snapshot(out)
    capsys.readouterr()
    assert main(["l0", "augment", "--data", str(out)]) == 2
    err = capsys.readouterr().err
    line = one_error_line(err)
    assert [text for text in err.splitlines() if text.strip()] == [line]
    assert line.endswith("data: no program of bin 3 has 4 executable demonstration inputs (nothing was replaced)"), line
    assert tree_snapshot(out) == before  # no fewshots.jsonl, manifest untouched

    # An augmented dataset keeps its demonstrations when a later augment would leave bins empty.
    good = tmp_path / "good"
    assert generate(write_config(tmp_path), good) == 0
    assert main(["l0", "augment", "--data", str(good)]) == 0
    augmented = tree_snapshot(good)
    assert "fewshots.jsonl" in augmented
    capsys.readouterr()
    real = dataset.augment_item
    monkeypatch.setattr(dataset, "augment_item", lambda item, config: None if item["bin"] != 2 else real(item, config))
    assert main(["l0", "augment", "--data", str(good)]) == 2
    err = capsys.readouterr().err
    line = one_error_line(err)
    assert [text for text in err.splitlines() if text.strip()] == [line]
    assert "good: no program of bin 1, 3 has 4 executable demonstration inputs (nothing was replaced)" in line, line
    assert tree_snapshot(good) == augmented
