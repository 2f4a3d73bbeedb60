"""Issue 9, validation: nothing bad gets through `prepare` quietly, and each bad input is one line naming it.

Unreadable folders are fatal (not "missing images"), a lenient build may not empty a task or accept a header-only
manifest, images are fully decoded, short rows / control characters / non-UTF-8 bytes are named with their row,
column or byte offset, a BOM is accepted, and the readers of the manifest and the ToM corpus never end in a
traceback. End-to-end checks run the CLI (in-process, or in a subprocess without DAC capabilities).
"""

from __future__ import annotations

import csv
import io
import random
import struct
import subprocess
import sys
import textwrap
import zlib
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from data_helpers import default_rows, math_row, vocab_row, write_release
from faults import DROP_DAC, IS_ROOT, kill9_when, one_error_line, run_cli, tree_snapshot
from PIL import Image, ImageFile

from levante_tasks.atomic import clean_stale
from levante_tasks.cli import main
from levante_tasks.data import decoding
from levante_tasks.data.build import stage_datasets
from levante_tasks.data.items import count_manifest_items
from levante_tasks.data.manifest import MANIFEST_COLUMNS
from levante_tasks.data.tom import CORPUS_COLUMNS, CORPUS_RELPATH
from levante_tasks.errors import LevanteError

VERSION = "2026-01-01"
ERROR = "levante-tasks: error: "
EMPTY_HINT = "pass --allow-empty-tasks to build the other tasks anyway"


def prepare_args(base: Path, data: Path, *extra: str, version: str = VERSION) -> list[str]:
    return ["prepare", "--release", str(base), "--version", version, "--data-dir", str(data), "--quiet", *extra]


def error_lines(capsys: pytest.CaptureFixture[str], args: list[str]) -> list[str]:
    """Run the CLI in-process; it must exit 2 with only `levante-tasks: error:` lines (returned without prefix)."""
    status = main(args)
    err = capsys.readouterr().err
    assert status == 2, err
    lines = err.splitlines()
    assert lines and all(line.startswith(ERROR) for line in lines), err
    return [line.removeprefix(ERROR) for line in lines]


def staged_error(root: Path, tmp_path: Path, strict: bool = True, allow_empty_tasks: bool = False) -> list[str]:
    """stage_datasets on `root` must raise LevanteError and write nothing; returns the message lines."""
    staging = tmp_path / "staging"
    staging.mkdir(exist_ok=True)
    with pytest.raises(LevanteError) as failure:
        stage_datasets(root, VERSION, strict, "key", staging, allow_empty_tasks=allow_empty_tasks)
    assert list(staging.iterdir()) == []
    return str(failure.value).splitlines()


def tom_row(uid: str = "tom_q1") -> dict[str, str]:
    """A theory-of-mind manifest row matching `write_corpus`'s question."""
    return {"task": "theory-of-mind", "task_id": "tom", "item_uid": uid, "trial_type": "false_belief_question",
            "prompt": "Where will Sam look for the ball?", "item": "NA", "answer": "box",
            "response_alternatives": "bag", "chance_level": "0.5", "prompt_phrase": "NA", "prompt_image": "NA",
            "full_prompt": "NA"}


def corpus_bytes() -> bytes:
    """A two-row ToM corpus: one story sentence and the question of `tom_row`."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(CORPUS_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerow({"block_index": "1", "task": "theory-of-mind", "trial_type": "instructions",
                     "assessment_stage": "instructions", "prompt": "Sam put the ball in the box.", "item": "story",
                     "answer": "", "response_alternatives": ""})
    writer.writerow({"block_index": "1", "task": "theory-of-mind", "trial_type": "false_belief_question",
                     "assessment_stage": "test_response", "prompt": "Where will Sam look for the ball?", "item": "",
                     "answer": "box", "response_alternatives": "bag"})
    return out.getvalue().encode("utf-8")


def write_tom_release(base: Path, corpus: bytes | None = None, version: str = VERSION) -> Path:
    """The default release plus one ToM row and its corpus file (bytes as given)."""
    root = write_release(base, version=version, rows=[*default_rows(), tom_row()])
    path = root / CORPUS_RELPATH
    path.parent.mkdir(parents=True)
    path.write_bytes(corpus_bytes() if corpus is None else corpus)
    return root


# --- root cause 6: unreadable folders, emptied tasks, header-only manifests ---------------------------------

def _stage_without_dac(root: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run stage_datasets in a subprocess that lacks CAP_DAC_OVERRIDE/READ_SEARCH (so chmod 000 bites)."""
    if not IS_ROOT:
        pytest.skip("dropping capabilities needs root (CI runs as root)")
    script = textwrap.dedent(f"""
        from pathlib import Path
        from levante_tasks.data.build import stage_datasets
        from levante_tasks.errors import LevanteError
        try:
            stage_datasets(Path({str(root)!r}), "v", False, "key", Path({str(tmp_path / "staging")!r}))
        except LevanteError as exc:
            print(exc)
            raise SystemExit(2)
    """)
    (tmp_path / "staging").mkdir()
    return subprocess.run([*DROP_DAC, sys.executable, "-c", script], capture_output=True, text=True, check=False,
                          timeout=120)


@pytest.mark.parametrize(("folder", "mode"), [("visual", 0), ("visual/vocab", 0), ("visual/vocab/more", 0),
                                           ("corpus/theory-of-mind", 0), ("visual/vocab", 0o311),
                                           ("visual/vocab", 0o644), ("corpus/theory-of-mind", 0o644)])
def test_unreadable_folder_is_fatal_and_named(tmp_path, folder, mode):
    """Not listable (0, 311) or not enterable (644): named as a folder, never reported as missing images."""
    root = write_tom_release(tmp_path / "rel")
    (root / "visual/vocab/more").mkdir()
    Image.new("RGB", (4, 4)).save(root / "visual/vocab/more/owl.png")
    (root / folder).chmod(mode)
    try:
        result = _stage_without_dac(root, tmp_path)
    finally:
        (root / folder).chmod(0o755)
    assert result.returncode == 2, result.stderr
    assert f"{folder}: folder not readable (permission denied)" in result.stdout.splitlines()
    assert "Traceback" not in result.stderr
    assert list((tmp_path / "staging").iterdir()) == []


def test_unreadable_visual_folder_fails_lenient_prepare_end_to_end(tmp_path):
    """An unlistable `visual/vocab` (mode 311) in the mirror used to look like 2 missing images: exit 0, vocab gone.

    Whichever step meets the folder first (the mirror check or the build) must stop with one line.
    """
    base, data = tmp_path / "rel", tmp_path / "data"
    write_release(base, version="2026-02-01")
    write_release(base, version=VERSION)
    assert main(prepare_args(base, data, version="2026-02-01")) == 0
    assert main(prepare_args(base, data)) == 0  # default_version is now 2026-01-01
    before = tree_snapshot(data / "2026-02-01" / "datasets")
    folder = data / "2026-02-01" / "release" / "visual" / "vocab"
    folder.chmod(0o311)  # can reach the files, cannot list them
    try:
        result = run_cli(prepare_args(base, data, "--lenient", version="2026-02-01"), drop_dac=True)
    finally:
        folder.chmod(0o755)
    assert result.returncode == 2, result.stderr
    assert one_error_line(result.stderr).endswith("permission denied"), result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert tree_snapshot(data / "2026-02-01" / "datasets") == before
    assert (data / "default_version").read_text() == f"{VERSION}\n"


def test_lenient_build_that_empties_a_task_fails(tmp_path, capsys):
    base, data = tmp_path / "rel", tmp_path / "data"
    write_release(base, version="2026-02-01")
    assert main(prepare_args(base, data, version="2026-02-01")) == 0
    write_release(base, words=())  # no vocab pictures: both vocab rows are dropped
    lines = error_lines(capsys, prepare_args(base, data, "--lenient"))
    assert lines == [f"vocab: all 2 rows dropped (dropped:image_missing=2); {EMPTY_HINT}"]
    assert not (data / VERSION / "datasets").exists()
    assert (data / "default_version").read_text() == "2026-02-01\n"


def test_empty_task_message_counts_rows_once_and_names_every_kind(tmp_path):
    rows = [vocab_row("owl", "cat,dog,cup"), vocab_row("bat", "bat,dog,cup"), *default_rows()[2:]]
    root = write_release(tmp_path / "rel", rows=rows, words=("cat", "dog", "cup"))
    assert staged_error(root, tmp_path, strict=False) == [
        f"vocab: all 2 rows dropped (dropped:answer_among_distractors=1, dropped:image_missing=1); {EMPTY_HINT}"]


def test_allow_empty_tasks_builds_the_other_tasks(tmp_path):
    root = write_release(tmp_path / "rel", words=())
    staging = tmp_path / "staging"
    summaries = stage_datasets(root, VERSION, False, "key", staging, allow_empty_tasks=True)
    assert {s.task: s.n_items for s in summaries} == {"egma-math": 2, "vocab": 0}
    assert len(pd.read_parquet(staging / "datasets/egma-math/test.parquet")) == 2
    assert not (staging / "datasets/vocab").exists()


def test_no_items_at_all_is_an_error_even_when_empty_tasks_are_allowed(tmp_path):
    root = write_release(tmp_path / "rel", rows=default_rows()[:2], words=())
    lines = staged_error(root, tmp_path, strict=False, allow_empty_tasks=True)
    assert lines == ["manifest.csv: no items left to build (every row was dropped or excluded)"]


@pytest.mark.parametrize("mode", ["--strict", "--lenient"])
def test_header_only_manifest_is_an_error(tmp_path, capsys, mode):
    write_release(tmp_path / "rel", rows=[])
    lines = error_lines(capsys, prepare_args(tmp_path / "rel", tmp_path / "data", mode))
    assert lines[0] == "manifest.csv: no rows below the header"
    assert not (tmp_path / "data" / VERSION / "datasets").exists()
    assert not (tmp_path / "data" / "default_version").exists()


def test_killed_build_leaves_a_staging_folder_that_clean_stale_removes(tmp_path):
    rows = [{**math_row(f"math_line_{k}", f"0,{k}", "1", "0,2,3"), "trial_type": "Number Line 4afc"}
            for k in range(4, 400)]
    write_release(tmp_path / "rel", rows=rows)
    version_root = tmp_path / "data" / VERSION
    kill9_when(prepare_args(tmp_path / "rel", tmp_path / "data"),
               lambda: any(version_root.glob(".datasets.staging-*/generated/egma-math/*.png")))
    leftovers = sorted(p.name for p in version_root.glob(".datasets.staging-*"))
    assert len(leftovers) == 1
    assert set(leftovers) <= set(clean_stale(version_root))
    assert not list(version_root.glob(".datasets.staging-*"))
    assert not (version_root / "datasets").exists()


# --- root cause 7: images are fully decoded -----------------------------------------------------------------

def _noise(size: int = 48) -> Image.Image:
    rng = random.Random(7)
    return Image.frombytes("RGB", (size, size), bytes(rng.randrange(256) for _ in range(size * size * 3)))


def _encoded(fmt: str, **options) -> bytes:
    out = io.BytesIO()
    _noise().save(out, format=fmt, **options)
    return out.getvalue()


def truncated_jpeg() -> bytes:
    data = _encoded("JPEG")
    return data[: len(data) // 2]


def png_with_short_idat() -> bytes:
    """Half of the pixel data, every chunk CRC correct: verify() is happy, decoding is not."""
    data, out, pos = _encoded("PNG"), bytearray(_encoded("PNG")[:8]), 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IDAT":
            body = body[: len(body) // 2]
        out += struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        pos += 12 + length
    return bytes(out)


def webp_same_size_damage() -> bytes:
    """A lossless WEBP with 64 bytes overwritten in the middle (same size, headers intact)."""
    data = bytearray(_encoded("WEBP", lossless=True))
    middle = len(data) // 2
    data[middle:middle + 64] = b"\xff" * 64
    return bytes(data)


@pytest.mark.parametrize("lenient_pillow", [False, True], ids=["pillow-default", "after-lmms-eval-import"])
@pytest.mark.parametrize(("suffix", "make"), [("jpg", truncated_jpeg), ("png", png_with_short_idat),
                                              ("webp", webp_same_size_damage)])
def test_image_body_that_does_not_decode_is_unreadable(tmp_path, capsys, monkeypatch, suffix, make, lenient_pillow):
    # Importing lmms-eval sets Pillow's LOAD_TRUNCATED_IMAGES for the whole process; prepare must stay strict.
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", lenient_pillow)
    root = write_release(tmp_path / "rel", words=("cat", "dog", "cup"))
    body = make()
    with Image.open(io.BytesIO(body)) as image:
        image.verify()  # the header check alone passes: only a full decode finds the damage
    (root / f"visual/vocab/sun.{suffix}").write_bytes(body)
    lines = error_lines(capsys, prepare_args(tmp_path / "rel", tmp_path / "data"))
    assert lines[:2] == [f"manifest.csv:1: vocab__cat: option 4 image visual/vocab/sun.{suffix} is unreadable "
                         "(the image data does not decode)",
                         f"manifest.csv:2: vocab__dog: option 4 image visual/vocab/sun.{suffix} is unreadable "
                         "(the image data does not decode)"]
    assert len(lines) == 3 and not (tmp_path / "data" / VERSION / "datasets").exists()


def test_unreadable_image_file_is_fatal_even_lenient(tmp_path):
    root = write_release(tmp_path / "rel")
    (root / "visual/vocab/sun.png").chmod(0)
    try:
        result = _stage_without_dac(root, tmp_path)
    finally:
        (root / "visual/vocab/sun.png").chmod(0o644)
    assert result.returncode == 2, result.stderr
    assert "visual/vocab/sun.png: permission denied" in result.stdout.splitlines()


# --- root cause 8: short rows, control characters, BOM, non-UTF-8 bytes -------------------------------------

def test_row_with_fewer_cells_than_the_header_is_malformed(tmp_path, capsys):
    root = write_release(tmp_path / "rel")
    row = math_row("math_add_3_3", "3+3", "6", "5,7,8")
    with open(root / "manifest.csv", "a", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerow([row[c] for c in MANIFEST_COLUMNS[:-1]])  # no full_prompt cell
    lines = error_lines(capsys, prepare_args(tmp_path / "rel", tmp_path / "data"))
    assert lines[0] == "manifest.csv:5: row has 11 cells, the header has 12"
    assert len(lines) == 2


@pytest.mark.parametrize(("column", "value", "shown"), [
    ("item_uid", "math_add_3\x00_3", "U+0000"),
    ("item_uid", "math_add_3\n_3", "U+000A"),
    ("task", "egma-math\x01", "U+0001"),
    ("task_id", "ma\x7fth", "U+007F"),
    ("answer", "6\x1b", "U+001B"),
    ("response_alternatives", "5,7\x00,8", "U+0000"),
    ("prompt_image", "NA\u200b", "U+200B"),
])
def test_control_character_in_an_id_cell_names_row_and_column(tmp_path, capsys, column, value, shown):
    bad = {**math_row("math_add_3_3", "3+3", "6", "5,7,8"), column: value}
    write_release(tmp_path / "rel", rows=[*default_rows(), bad])
    lines = error_lines(capsys, prepare_args(tmp_path / "rel", tmp_path / "data"))
    assert lines[0] == f"manifest.csv:5: column {column} contains an invisible or control character ({shown})"
    assert len(lines) == 2
    assert not (tmp_path / "data" / VERSION / "datasets").exists()


def test_bom_at_the_start_of_manifest_and_corpus_is_accepted(tmp_path, capsys):
    root = write_tom_release(tmp_path / "rel", corpus=b"\xef\xbb\xbf" + corpus_bytes())
    manifest = root / "manifest.csv"
    manifest.write_bytes(b"\xef\xbb\xbf" + manifest.read_bytes())
    assert main(prepare_args(tmp_path / "rel", tmp_path / "data")) == 0, capsys.readouterr().err
    tom = pd.read_parquet(tmp_path / "data" / VERSION / "datasets/theory-of-mind/test.parquet")
    assert list(tom["story"]) == ["Sam put the ball in the box."]


def _with_byte(text: bytes, offset: int) -> bytes:
    return text[:offset] + b"\xff" + text[offset + 1:]


def test_non_utf8_byte_in_manifest_names_its_offset(tmp_path, capsys):
    rows = [*default_rows(), *(math_row(f"math_add_{k}", f"{k}+0", str(k), "a,b,c") for k in range(10, 300))]
    root = write_release(tmp_path / "rel", rows=rows)
    data = (root / "manifest.csv").read_bytes()
    offset = data.index(b"math_add_250")  # beyond the first 8 KiB decode chunk
    (root / "manifest.csv").write_bytes(_with_byte(data, offset))
    lines = error_lines(capsys, prepare_args(tmp_path / "rel", tmp_path / "data"))
    line = data.count(b"\n", 0, offset) + 1
    assert lines == [f"manifest.csv:{line}: not UTF-8 text (byte 0xff at byte offset {offset})"]


def test_non_utf8_byte_in_corpus_names_its_offset(tmp_path, capsys):
    text = corpus_bytes()
    offset = text.index(b"ball")
    write_tom_release(tmp_path / "rel", corpus=_with_byte(text, offset))
    lines = error_lines(capsys, prepare_args(tmp_path / "rel", tmp_path / "data"))
    line = text.count(b"\n", 0, offset) + 1
    assert lines == [f"{CORPUS_RELPATH}:{line}: not UTF-8 text (byte 0xff at byte offset {offset})"]


# --- root cause 5 (part): the readers of manifest.csv and the ToM corpus never end in a traceback ------------

@pytest.mark.parametrize(("corpus", "problem"), [
    (b"", "empty file"),
    (b"block_index,task\n1,theory-of-mind\n", "missing columns: trial_type, assessment_stage, prompt, item, "
                                               "answer, response_alternatives"),
    (corpus_bytes() + b'1,theory-of-mind,x,test_response,"' + b"a" * 200_000 + b'",,,\n',
     "not a readable CSV (field larger than field limit (131072))"),
    (corpus_bytes() + b'1,theory-of-mind,x,test_response,"unclosed\n', "3: row has 5 cells, the header has 8"),
])
def test_bad_tom_corpus_is_one_line(tmp_path, corpus, problem):
    root = write_tom_release(tmp_path / "rel", corpus=corpus)
    separator = "" if problem[0].isdigit() else " "
    assert staged_error(root, tmp_path) == [f"{CORPUS_RELPATH}:{separator}{problem}"]


def test_tom_corpus_that_is_a_folder_is_one_line(tmp_path):
    root = write_tom_release(tmp_path / "rel")
    (root / CORPUS_RELPATH).unlink()
    (root / CORPUS_RELPATH).mkdir()
    assert staged_error(root, tmp_path) == [f"{CORPUS_RELPATH}: is a folder, expected a file"]


@pytest.mark.parametrize(("content", "problem"), [
    (b"", "empty file"),
    (b"\xef\xbb\xbf\n\n", "empty file"),
    (",".join(MANIFEST_COLUMNS).encode() + b'\nvocab,"' + b"a" * 200_000 + b'"\n',
     "not a readable CSV (field larger than field limit (131072))"),
])
def test_bad_manifest_file_is_one_line(tmp_path, content, problem):
    root = write_release(tmp_path / "rel")
    (root / "manifest.csv").write_bytes(content)
    assert staged_error(root, tmp_path) == [f"manifest.csv: {problem}"]


def test_manifest_that_is_a_folder_is_one_line(tmp_path):
    root = write_release(tmp_path / "rel")
    (root / "manifest.csv").unlink()
    (root / "manifest.csv").mkdir()
    assert staged_error(root, tmp_path) == ["manifest.csv: is a folder, expected a file"]


@pytest.mark.parametrize("relpath", ["manifest.csv", CORPUS_RELPATH])
def test_unreadable_manifest_or_corpus_is_one_line_without_absolute_paths(tmp_path, relpath):
    base, data = tmp_path / "rel", tmp_path / "data"
    write_tom_release(base)
    assert main(prepare_args(base, data)) == 0
    before = tree_snapshot(data / VERSION / "datasets")
    target = data / VERSION / "release" / relpath
    target.chmod(0)
    try:
        result = run_cli(prepare_args(base, data, "--lenient"), drop_dac=True)
    finally:
        target.chmod(0o644)
    assert result.returncode == 2, result.stderr
    assert one_error_line(result.stderr) == f"{ERROR}{relpath}: permission denied"
    assert str(tmp_path) not in result.stderr
    assert tree_snapshot(data / VERSION / "datasets") == before


# --- number lines: a stimulus that cannot be drawn is a bad item, not a NaN chance or an off-image dot --------

@pytest.mark.parametrize(("trial_type", "item", "answer", "kind"), [
    ("Number Line 4afc", "0,10", "50", "range '0,10' / answer '50'"),
    ("Number Line 4afc", "-1e308,1e308", "1", "range '-1e308,1e308' / answer '1'"),
    ("Number Line Slider", "-1e308,1e308", "5", "range '-1e308,1e308' / target '5'"),
])
def test_number_line_outside_or_overflowing_its_range_is_a_problem(tmp_path, capsys, trial_type, item, answer,
                                                                   kind):
    bad = {**math_row("math_line_x", item, answer, "7,8,9"), "trial_type": trial_type}
    write_release(tmp_path / "rel", rows=[*default_rows(), bad])
    lines = error_lines(capsys, prepare_args(tmp_path / "rel", tmp_path / "data"))
    assert lines[0] == f"manifest.csv:5: math_line_x: {kind}"


def test_the_manifest_counter_drops_the_number_lines_prepare_drops(tmp_path):
    """The README item counts (data.items.count_manifest_items) judge number lines with prepare's own check: a
    marked value outside (or overflowing) its range is dropped under the same problem kind, a good one is kept."""
    rows = [{**math_row(uid, item, answer, "7,8,9"), "trial_type": trial_type} for uid, trial_type, item, answer in (
        ("line_out", "Number Line 4afc", "0,10", "50"), ("line_huge", "Number Line 4afc", "-1e308,1e308", "1"),
        ("line_ok", "Number Line 4afc", "0,10", "5"), ("slider_out", "Number Line Slider", "0,10", "11"),
        ("slider_ok", "Number Line Slider", "0,100", "40"))]
    root = write_release(tmp_path / "rel", rows=[*default_rows(), *rows])
    math = count_manifest_items(root / "manifest.csv")["tasks"]["egma-math"]
    assert math["problems"] == {"bad_number_line": 2, "bad_slider": 1}
    assert (math["items"], math["trial_types"]) == (4, {"Addition": 2, "Number Line 4afc": 1,
                                                        "Number Line Slider": 1})


def test_real_sample_images_are_decoded_once_each(sample_base, tmp_path, monkeypatch):
    """Every vocab picture of the real sample is decoded, each distinct file once (pictures recur as distractors)."""
    decoded: Counter = Counter()
    read_and_decode = decoding.verdict

    def counting(path):
        decoded["release/" + path.relative_to(sample_base / "2026-03-24").as_posix()] += 1
        return read_and_decode(path)

    monkeypatch.setattr(decoding, "verdict", counting)  # jobs=1: decoded in this process
    staging = tmp_path / "staging"
    summaries = stage_datasets(sample_base / "2026-03-24", "2026-03-24", False, "key", staging,
                               allow_empty_tasks=True)
    counts = {s.task: s.n_items for s in summaries}
    assert (counts["vocab"], counts["theory-of-mind"], counts["egma-math"]) == (170, 31, 224)
    vocab = pd.read_parquet(staging / "datasets/vocab/test.parquet")
    used = {rel for images in vocab["option_images"] for rel in images}
    assert used and used <= set(decoded)
    assert set(decoded.values()) == {1}, decoded.most_common(3)


def test_theory_of_mind_option_pictures_are_decoded_too(tmp_path, capsys):
    root = write_tom_release(tmp_path / "rel")
    (root / "visual/theory-of-mind").mkdir()
    (root / "visual/theory-of-mind/box.jpg").write_bytes(truncated_jpeg())
    Image.new("RGB", (4, 4)).save(root / "visual/theory-of-mind/bag.png")
    lines = error_lines(capsys, prepare_args(tmp_path / "rel", tmp_path / "data"))
    assert lines[0] == ("manifest.csv:5: tom_q1: option 1 image visual/theory-of-mind/box.jpg is unreadable "
                        "(the image data does not decode)")
