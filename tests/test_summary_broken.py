"""`summarize` / `verify` on hand-broken copies of real lmms-eval output: every problem is one line naming its file."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from summary_runs import ABSENT, copy_runs, edit_results, group_run, real_runs, results_file, samples

from levante_tasks.cli import main
from levante_tasks.compare.records import read_records
from levante_tasks.errors import LevanteError
from levante_tasks.lmms.patcher import installed_lmms_eval
from levante_tasks.runs import lmms
from levante_tasks.runs.lmms import FileProblem, read_samples
from levante_tasks.schema.task_source import task_source_sha256
from levante_tasks.schema.tasks import task_info
from levante_tasks.summary import Verifier, summarize_runs, verify_runs


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return real_runs(tmp_path_factory)


def summarize(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, list[str]]:
    status = main(["summarize", *map(str, args)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, [line for line in err.splitlines() if line.startswith("levante-tasks: error:")]


def matrix(out: Path) -> dict:
    return json.loads((out / "matrix.json").read_text(encoding="utf-8"))


def adapters(out: Path) -> set[str]:
    return {c["adapter"] for c in matrix(out)["cells"]}


def truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


# ------------------------------------------------------------------ unreadable input: one line, the rest summarized


def test_truncated_results_file_is_one_line_and_the_rest_is_summarized(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs")
    truncate(results_file(runs / "oracle"))
    out = tmp_path / "out"
    status, errors = summarize(capsys, runs, "--out", out)
    assert status == 1
    assert len(errors) == 1 and results_file(runs / "oracle").name in errors[0] and "JSON" in errors[0], errors
    assert adapters(out) == {"levante_fixed"}
    failed = [r for r in matrix(out)["runs"] if r["status"] == "failed"]
    assert len(failed) == 1 and "oracle" in failed[0]["source"]
    status, errors = summarize(capsys, runs, "--out", out, "--allow-partial")
    assert status == 0 and len(errors) == 1


@pytest.mark.parametrize("key", ["results", "configs", "n-samples", "config"])
def test_results_file_missing_a_key_is_one_line(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    runs = copy_runs(root, tmp_path / "runs")
    path = edit_results(runs / "oracle", lambda data: data.pop(key))
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out")
    assert status == 1 and len(errors) == 1, errors
    assert path.name in errors[0] and repr(key) in errors[0]


def test_truncated_samples_file_names_file_and_line(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    (path,) = (runs / "fixed").glob("*_samples_levante_vocab_seed1.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:20])
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out")
    assert status == 1 and len(errors) == 1, errors
    assert f"{path.name}:{len(lines)}" in errors[0]
    vocab = [c for c in matrix(tmp_path / "out")["cells"]
             if c["task"] == "levante_vocab" and c["variant"] == "original"]
    assert vocab and vocab[0]["n_replicates"] == 1  # the seed-1 replicate is left out, never half-read


def test_a_value_over_two_lines_is_its_first_lines_error(tmp_path: Path) -> None:
    """Each line of a samples file must be one JSON value by itself: a value running over a line end is refused
    even where a line of two values evens the count of values and lines."""
    path = tmp_path / "lines.jsonl"
    path.write_text('{"doc_id": [1\n2]}\n{}, {}\n', encoding="utf-8")
    with pytest.raises(FileProblem, match=r"^lines.jsonl:1: invalid JSON at column 14 "):
        read_samples(path, "lines.jsonl")
    path.write_text('{"doc_id": [1, 2]}\n\n {} \n', encoding="utf-8")
    assert [(line.number, line.data) for line in read_samples(path, "lines.jsonl")] == [(1, {"doc_id": [1, 2]}),
                                                                                       (3, {})]


# JSON texts where decoders are known to part ways: what json.loads gives for each is what a samples line must give
JSON_EDGES = ['{"a": 1, "b": 2, "a": 3}', "-0", "-0.0", "1e400", "-1e400", "1E-400", "4.9e-324",
              "2.2250738585072014e-308", "1.7976931348623157e308", "0.30000000000000004",
              "123456789012345678901234567890", "18446744073709551616", "-9223372036854775809", "NaN", "Infinity",
              "-Infinity", '"\\ud800"', '"\\udc00\\ud800"', '"\\ud83d\\ude00"', '"\\u0000"', '"\u2028\u00e9"',
              '{"\u00e9": [true, false, null]}', "[" * 900 + "]" * 900, ' \t{"x": 1e22}\r', "1" * 500]


@pytest.mark.parametrize("text", JSON_EDGES)
def test_a_samples_line_reads_as_json_loads_reads_it(text: str, tmp_path: Path) -> None:
    """The fast reader (jiter, else json) gives json.loads's value, type and key order: repeated keys, NaN and
    Infinity, integers past 64 bits, overflowing floats, lone surrogate escapes, nesting past jiter's depth limit;
    the results reader (`_json`) and the samples reader's own loop alike."""
    line = f'{{"v": {text}}}'
    assert repr(lmms._json(line, "f.jsonl")) == repr(json.loads(line))
    (tmp_path / "f.jsonl").write_text(f"{line}\n", encoding="utf-8")
    assert repr(read_samples(tmp_path / "f.jsonl", "f.jsonl")[0].data) == repr(json.loads(line))


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
                    max_leaves=20))
@settings(max_examples=300, deadline=None)
def test_any_json_value_reads_as_json_loads_reads_it(value: object) -> None:
    text = json.dumps({"v": value}, ensure_ascii=False)
    assert repr(lmms._json(text, "f.jsonl")) == repr(json.loads(text))


@pytest.mark.parametrize(("text", "problem"), [('{"a": 1,}', "invalid JSON at column 9"),
                                               ('{"a": NaN1}', "invalid JSON at column 10"),
                                               ("[" * 100_000, "invalid JSON nested too deep")])
def test_damage_the_fast_reader_refuses_is_still_named(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "lines.jsonl"
    path.write_text(f'{{"doc_id": 0}}\n{text}\n', encoding="utf-8")
    with pytest.raises(FileProblem, match=f"^lines.jsonl:2: {problem}"):
        read_samples(path, "lines.jsonl")


@pytest.mark.parametrize(("damage", "needle"), [("truncated", "invalid JSON at column"), ("nul", "NUL byte")])
def test_summarize_and_compare_read_a_damaged_samples_file_with_one_reader(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str, needle: str
) -> None:
    """summary and compare read samples files through levante_tasks.runs: one damaged line is the same one line
    (file as `<run folder>/<path inside it>`, line number, problem) from `summarize` and from compare's reader."""
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    (path,) = (runs / "fixed").glob("*_samples_levante_vocab_seed1.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2][:20] + (b"\n" if damage == "truncated" else b"\x00" + lines[2][20:])
    path.write_bytes(b"".join(lines))
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out")
    with pytest.raises(LevanteError) as compared:
        read_records(runs)
    assert status == 1 and errors == [f"levante-tasks: error: {compared.value}"], (errors, str(compared.value))
    assert str(compared.value).startswith(f"runs/fixed/{path.name}:3: {needle}"), str(compared.value)


def test_samples_of_two_runs_in_one_file_are_one_line(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """lmms-eval appends to `<date>_samples_<task>.jsonl`: two runs started in the same second share the file."""
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    (path,) = (runs / "fixed").glob("*_samples_levante_trog_mc.jsonl")
    path.write_bytes(path.read_bytes() * 2)
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out")
    assert status == 1 and len(errors) == 1 and path.name in errors[0] and "doc_id" in errors[0], errors
    assert not [c for c in matrix(tmp_path / "out")["cells"] if c["task"] == "levante_trog_mc"]


@pytest.mark.parametrize(("bad", "needle"), [(b"\x00", "NUL"), (b"\xff", "UTF-8")])
def test_bad_bytes_in_results_are_one_line(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: bytes, needle: str
) -> None:
    runs = copy_runs(root, tmp_path / "runs")
    path = results_file(runs / "oracle")
    data = path.read_bytes()
    path.write_bytes(data[:100] + bad + data[101:])
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out")
    assert status == 1 and len(errors) == 1 and path.name in errors[0] and needle in errors[0], errors


def test_bom_is_accepted(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    path = results_file(runs / "fixed")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out")
    assert status == 0 and errors == []


def test_samples_without_results_file_are_a_failed_run(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """lmms-eval exits 0 on failure: a folder with samples but no results file is reported, not skipped."""
    runs = copy_runs(root, tmp_path / "runs")
    results_file(runs / "oracle").unlink()
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out")
    assert status == 1 and len(errors) == 1 and "oracle" in errors[0] and "results" in errors[0], errors


def test_run_dir_without_any_results_is_failed_not_skipped(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    empty = tmp_path / "crashed"
    empty.mkdir()
    status, errors = summarize(capsys, runs, empty, "--out", tmp_path / "out")
    assert status == 1 and len(errors) == 1 and "crashed" in errors[0], errors


def test_nothing_parseable_is_an_error_and_writes_nothing(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    truncate(results_file(runs / "fixed"))
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out", "--allow-partial")
    assert status == 2 and errors
    assert not (tmp_path / "out").exists()


def test_record_without_correct_is_one_line(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    (path,) = (runs / "fixed").glob("*_samples_levante_trog_mc.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[2])
    del first["levante_item"]["correct"]
    lines[2] = json.dumps(first)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out")
    assert status == 1 and len(errors) == 1 and f"{path.name}:3" in errors[0] and "correct" in errors[0], errors


def test_a_task_named_for_another_variant_than_its_config_is_one_line(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The column comes from the leaf's name read as a variant; a name its config contradicts is refused."""
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    edit_results(runs / "fixed", lambda data: data["configs"]["levante_vocab_seed1"].update(
        output_type="multiple_choice"))
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out")
    assert status == 1 and len(errors) == 1, errors
    assert "samples_levante_vocab_seed1.jsonl: task 'levante_vocab_seed1' is not the variant its config and records " \
           "describe (vocab, multiple_choice, seed 1, original images)" in errors[0]


# ------------------------------------------------------------------ swapped files: every reader refuses them alike

# (file name, the task whose samples and results row it is given, what its name says, what the records hold)
SWAPS = {
    "task": ("levante_trog_mc", "levante_vocab", "task trog, seed 0 (multiple_choice, original images)",
             "task vocab, seed 0 (generate_until, original images)"),
    "seed": ("levante_vocab", "levante_vocab_seed1", "task vocab, seed 0 (generate_until, original images)",
             "task vocab, seed 1 (generate_until, original images)"),
}


def swapped_run(root: Path, runs: Path, swap: str) -> tuple[Path, str]:
    """Copies of the real runs where `fixed` holds another task's (or seed's) samples under one task's name, its
    results row and n-samples copied along, so the file agrees with its results file in all but its records' variant
    (what a copied or renamed file looks like); returns the file and the line every reader must give for it."""
    copy_runs(root, runs)
    name, other, says, holds = SWAPS[swap]
    (path,) = (runs / "fixed").glob(f"*_samples_{name}.jsonl")
    (source,) = (runs / "fixed").glob(f"*_samples_{other}.jsonl")
    path.write_bytes(source.read_bytes())

    def take_others_row(data: dict) -> None:
        data["results"][name] = {**data["results"][other], "alias": data["results"][name]["alias"]}
        data["n-samples"][name] = data["n-samples"][other]

    edit_results(runs / "fixed", take_others_row)
    return path, (f"runs/fixed/{path.name}: its name ({name}) says {says}, but line 1 holds a record of {holds}: "
                  "another task's or seed's records (a swapped or renamed file?); the file is not read")


@pytest.mark.parametrize("swap", list(SWAPS))
def test_summarize_refuses_a_swapped_samples_file_and_leaves_it_out(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], swap: str
) -> None:
    path, line = swapped_run(root, tmp_path / "runs", swap)
    out = tmp_path / "out"
    status, errors = summarize(capsys, tmp_path / "runs", "--out", out)
    assert status == 1 and errors == [f"levante-tasks: error: {line}"], errors
    (fixed,) = [r for r in matrix(out)["runs"] if "fixed" in r["source"]]
    assert fixed["problems"] == [line]
    cells = [c for c in matrix(out)["cells"] if c["adapter"] == "levante_fixed"]
    if swap == "task":
        assert not [c for c in cells if c["task"] == SWAPS[swap][0]]
    else:  # the seed-1 file's own replicate only, never the copy read as seed 0
        (vocab,) = [c for c in cells if c["task"] == "levante_vocab" and c["variant"] == "original"]
        assert [r["option_seed"] for r in vocab["replicates"]] == [1]


@pytest.mark.parametrize("swap", list(SWAPS))
def test_verify_refuses_a_swapped_samples_file(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], swap: str
) -> None:
    _, line = swapped_run(root, tmp_path / "runs", swap)
    assert main(["verify", str(tmp_path / "runs"), "--skip-installation"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [f"levante-tasks: mismatch: {line}"], err


@pytest.mark.parametrize("swap", list(SWAPS))
def test_rescore_refuses_a_swapped_samples_file_and_writes_nothing_of_its_run(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], swap: str
) -> None:
    _, line = swapped_run(root, tmp_path / "runs", swap)
    out = tmp_path / "rescored"
    assert main(["rescore", str(tmp_path / "runs"), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [f"levante-tasks: error: {line}"], err
    assert json.loads((out / "rescore.json").read_text(encoding="utf-8"))["problems"] == [line]
    assert (out / "runs" / "oracle").is_dir() and not (out / "runs" / "fixed").exists()


@pytest.mark.parametrize("swap", list(SWAPS))
def test_compare_refuses_a_swapped_samples_file(root: Path, tmp_path: Path, swap: str) -> None:
    _, line = swapped_run(root, tmp_path / "runs", swap)
    with pytest.raises(LevanteError) as refused:
        read_records(tmp_path / "runs")
    assert str(refused.value) == line


# ------------------------------------------------------------------ comparisons that do not compare


def second_fixed_run(root: Path, runs: Path, change) -> Path:
    """Another `fixed` run next to the first, its provenance changed by `change(results)`."""
    copy_runs(root, runs / "again", ("fixed",))
    return edit_results(runs / "again" / "fixed", change)


def test_mismatched_budget_between_models_is_refused(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs")

    def limit_5(data: dict) -> None:
        data["config"]["limit"] = 5.0

    edit_results(runs / "oracle", limit_5)
    out = tmp_path / "out"
    status, errors = summarize(capsys, runs, "--out", out)
    assert status == 2 and errors and not out.exists()
    assert all("limit" in line for line in errors[:-1]) and "--allow-mismatch" in errors[-1], errors
    assert any("levante_vocab" in line for line in errors), errors
    status, errors = summarize(capsys, runs, "--out", out, "--allow-mismatch")
    assert status == 0, errors
    flagged = [c for c in matrix(out)["cells"] if c["flags"]]
    assert flagged and all(any("limit" in f for f in c["flags"]) for c in flagged)


def test_mismatched_generation_budget_between_seeds_is_never_averaged(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))

    def shorter(data: dict) -> None:
        data["configs"]["levante_vocab_seed1"]["generation_kwargs"]["max_new_tokens"] = 8

    edit_results(runs / "fixed", shorter)
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out")
    assert status == 2 and any("budget" in line and "levante_vocab" in line for line in errors), errors
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out", "--allow-mismatch")
    assert status == 0
    vocab = [c for c in matrix(tmp_path / "out")["cells"]
             if c["task"] == "levante_vocab" and c["variant"] == "original"]
    assert len(vocab) == 2 and all(c["n_replicates"] == 1 and c["flags"] for c in vocab)
    assert any("budget.generation_kwargs.max_new_tokens" in f for c in vocab for f in c["flags"])


def test_other_prompt_variant_between_models_is_refused(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs")

    def other_prompt(data: dict) -> None:
        data["configs"]["levante_vocab"]["lmms_eval_specific_kwargs"]["default"]["post_prompt"] = "Think first."

    edit_results(runs / "oracle", other_prompt)
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out")
    assert status == 2 and any("levante_vocab" in line and "prompt" in line for line in errors), errors


def test_identical_duplicate_run_newest_wins(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))

    def later(data: dict) -> None:
        data["date"] = "29991231_235959"

    second_fixed_run(root, runs, later)
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out")
    assert status == 0, errors
    got = matrix(tmp_path / "out")
    vocab = [c for c in got["cells"] if c["task"] == "levante_vocab" and c["variant"] == "original"]
    assert len(vocab) == 1 and vocab[0]["n_replicates"] == 2
    assert all("again" in source for source in vocab[0]["sources"])
    assert got["superseded"] and not any("again" in s["source"] for s in got["superseded"])


def test_duplicate_run_with_other_provenance_is_an_error(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))

    def other_batch(data: dict) -> None:
        data["config"]["batch_size"] = 8

    second_fixed_run(root, runs, other_batch)
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out", "--allow-mismatch", "--allow-partial")
    assert status == 2 and errors and not (tmp_path / "out").exists()
    assert any("duplicate" in line and "batch_size" in line for line in errors), errors


def test_runs_with_other_lmms_seed_are_replicates_not_duplicates(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))

    def seed_7(data: dict) -> None:
        data["config"]["random_seed"] = 7

    second_fixed_run(root, runs, seed_7)
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out")
    assert status == 0, errors
    trog = [c for c in matrix(tmp_path / "out")["cells"] if c["task"] == "levante_trog_mc"]
    assert len(trog) == 1 and trog[0]["n_replicates"] == 2


def set_task_version(data: dict, version: int | None) -> None:
    """Record task version `version` in every LEVANTE config (None: drop it, as runs written before versions)."""
    for config in data["configs"].values():
        provenance = config.get("metadata", {}).get("levante", {}).get("provenance")
        if provenance is not None:
            provenance.pop("task_version", None)
            if version is not None:
                provenance["task_version"] = version


@pytest.mark.parametrize("other", [2, None])
def test_replicates_of_different_task_versions_are_never_pooled(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], other: int | None
) -> None:
    """Another lmms-eval seed would be a second replicate of each cell; at another task version (or none recorded)
    it is refused, even with --allow-mismatch: one line naming both files and both versions, exit 2, no output."""
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))

    def seed_7_other_version(data: dict) -> None:
        data["config"]["random_seed"] = 7
        set_task_version(data, other)

    again = second_fixed_run(root, runs, seed_7_other_version)
    out = tmp_path / "out"
    status, errors = summarize(capsys, runs, "--out", out, "--allow-mismatch", "--allow-partial")
    assert status == 2 and not out.exists(), errors
    first = results_file(runs / "fixed").name
    (line,) = [e for e in errors if e.startswith("levante-tasks: error: levante_trog_mc (original,")]
    assert "task_version 1 in " in line and f"task_version {other or 'unknown'} in " in line, line
    assert first in line and f"again/fixed/{again.name}" in line and "never pooled" in line, line


def test_verify_reports_a_recorded_task_version_other_than_the_catalogues(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    status = main(["verify", str(runs / "fixed"), "--data-dir", str(root / "data")])
    assert "task_version" not in capsys.readouterr().err  # the real run records the installed catalogue's version
    edit_results(runs / "fixed", lambda d: set_task_version(d, 2))
    status = main(["verify", str(runs / "fixed"), "--data-dir", str(root / "data")])
    lines = [line for line in capsys.readouterr().err.splitlines() if "task_version" in line]
    assert status == 1
    assert any(line.endswith(f"levante_trog_mc: task_version: recorded 2, installed {task_info('trog').version}")
               for line in lines), lines


# ------------------------------------------------------------------ the writer-side provenance contract


def with_provenance(data: dict, **values: object) -> None:
    """What the task layer records (docs/summary.md): metadata.levante.provenance in every LEVANTE config."""
    for config in data["configs"].values():
        levante = config.get("metadata", {}).get("levante")
        if levante is not None:
            levante["provenance"] = dict(values)


def test_known_vs_unknown_dataset_fingerprint_is_a_mismatch(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs")
    edit_results(runs / "fixed", lambda d: with_provenance(d, dataset_fingerprint="f" * 64))
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out")
    assert status == 2 and any("dataset_fingerprint" in line for line in errors), errors
    edit_results(runs / "oracle", lambda d: with_provenance(d, dataset_fingerprint="f" * 64))
    status, errors = summarize(capsys, runs, "--out", tmp_path / "out")
    assert status == 0, errors
    assert {c["provenance"]["dataset_fingerprint"] for c in matrix(tmp_path / "out")["cells"]} == {"f" * 64}


def fingerprinted_data(root: Path, data_dir: Path) -> tuple[Path, str]:
    """A copy of the fixture's data dir whose vocab dataset records fingerprint a...a and egma-math's b...b; returns
    it and its default version."""
    shutil.copytree(root / "data", data_dir)
    version = (data_dir / "default_version").read_text(encoding="utf-8").strip()
    for family, fingerprint in (("vocab", "a" * 64), ("egma-math", "b" * 64)):
        info_path = data_dir / version / "datasets" / family / "dataset.json"
        info = json.loads(info_path.read_text(encoding="utf-8"))
        info_path.write_text(json.dumps({**info, "fingerprint": fingerprint}), encoding="utf-8")
    return data_dir, version


def test_verify_checks_recorded_provenance_against_the_installation(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    data_dir, version = fingerprinted_data(root, tmp_path / "data")
    installed = installed_lmms_eval()
    edit_results(runs / "fixed", lambda d: with_provenance(
        d, dataset_fingerprint="a" * 64, data_version=version,
        lmms_eval={**installed, "patch_set_sha256": "0" * 64}))
    status = main(["verify", str(runs / "fixed"), "--data-dir", str(data_dir)])
    lines = capsys.readouterr().err.splitlines()
    assert status == 1
    patch = [line for line in lines if "patch_set_sha256" in line]
    assert len(patch) == 1 and "0" * 64 in patch[0], lines  # one line per run for run-level provenance
    fingerprints = [line for line in lines if "dataset_fingerprint" in line]
    assert any("levante_egma_math:" in line and "b" * 64 in line for line in fingerprints), lines
    assert not any("levante_vocab" in line for line in fingerprints), lines  # vocab's matches the data dir
    assert any("levante_trog_mc:" in line and "no fingerprint" in line for line in fingerprints), lines
    assert not any("lmms_eval commit" in line or "lmms_eval version" in line for line in lines), lines


def test_verify_checks_every_runs_dataset_fingerprint_against_its_own_task(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verify reads each (data version, task, locale)'s dataset.json once for all runs: every run is still held to
    the fingerprint of its own task's dataset."""
    runs = copy_runs(root, tmp_path / "runs")
    data_dir, version = fingerprinted_data(root, tmp_path / "data")
    for name in ("fixed", "oracle"):
        edit_results(runs / name, lambda d: with_provenance(d, dataset_fingerprint="a" * 64, data_version=version))
    assert main(["verify", str(runs), "--data-dir", str(data_dir), "--skip-installation"]) == 0  # not compared
    capsys.readouterr()
    assert main(["verify", str(runs), "--data-dir", str(data_dir)]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if "dataset_fingerprint" in line]
    for name in ("fixed", "oracle"):
        mine = [line for line in lines if f"runs/{name}/" in line]
        assert any("levante_egma_math:" in line and "b" * 64 in line for line in mine), lines
        assert not any("levante_vocab:" in line for line in mine), lines  # vocab's matches the data dir


@pytest.mark.parametrize("locale", [[], {}, ["de"], 7])
def test_a_damaged_recorded_locale_is_a_mismatch_line_not_a_crash(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], locale: object
) -> None:
    """A locale recorded as a list, an object or a number cannot key verify's once-per-dataset lookup: it is looked
    up uncached (an empty one read as English, as before the lookup was cached; `["de"]` or 7 an unusable locale,
    not a crash), and the run's fingerprint is still compared."""
    runs = copy_runs(root, tmp_path / "runs")

    def damage(data: dict) -> None:
        with_provenance(data, dataset_fingerprint="f" * 64, data_version="synthetic")
        for config in data["configs"].values():
            levante = config.get("metadata", {}).get("levante")
            if levante is not None:
                levante["locale"] = locale

    edit_results(runs / "fixed", damage)
    assert main(["verify", str(runs / "fixed"), "--data-dir", str(root / "data")]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if "dataset_fingerprint: recorded " + "f" * 64
             in line]
    assert lines, "no dataset_fingerprint mismatch line"


@pytest.mark.parametrize("config", [[1], "levante", None], ids=["list", "text", "null"])
def test_a_damaged_task_config_is_a_mismatch_not_a_crash(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], config: object
) -> None:
    """A task config that is not an object (a list, a text, null) is read as no config: its metrics cannot be
    recomputed, which verify reports (exit 1), where a list or a text raised AttributeError before; summarize
    refuses the task."""
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    edit_results(runs / "fixed", lambda data: data["configs"].update(levante_vocab=config))
    assert main(["verify", str(runs / "fixed"), "--data-dir", str(root / "data")]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if "levante_vocab" in line]
    assert any("cannot recompute" in line for line in lines), lines
    assert main(["summarize", str(runs / "fixed"), "--out", str(tmp_path / "out")]) == 1  # a task it could not read
    assert "no config for task 'levante_vocab' under 'configs'" in capsys.readouterr().err


def test_runs_record_their_provenance(root: Path) -> None:
    # The task layer's side of the contract: every LEVANTE config of a real run carries what verify checks.
    data = json.loads(results_file(root / "runs" / "fixed").read_text(encoding="utf-8"))
    recorded = {name: config["metadata"]["levante"].get("provenance") for name, config in data["configs"].items()
                if "levante" in config.get("metadata", {})}
    assert recorded
    for name, provenance in recorded.items():
        assert provenance is not None, name
        assert provenance["lmms_eval"] == installed_lmms_eval()
        assert provenance["task_source_sha256"] == task_source_sha256(name)
        assert provenance["task_version"] == task_info(data["configs"][name]["metadata"]["levante"]["task"]).version
        assert data["versions"][name] == provenance["task_version"]  # lmms-eval's own, from the YAML's metadata
        assert provenance["data_version"] and provenance["levante_tasks_version"]


def test_verify_reports_a_run_without_provenance_as_unknown(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    edit_results(runs / "fixed", lambda d: [c.get("metadata", {}).get("levante", {}).pop("provenance", None)
                                            for c in d["configs"].values()])
    status = main(["verify", str(runs / "fixed"), "--data-dir", str(root / "data")])
    err = capsys.readouterr().err
    assert status == 1
    assert "unknown" in err and "patch_set_sha256" in err


def test_verify_a_truncated_samples_file(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    (path,) = (runs / "fixed").glob("*_samples_levante_vocab.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-1]), encoding="utf-8")  # whole lines lost: still valid JSON Lines
    status = main(["verify", str(runs / "fixed"), "--skip-installation"])
    err = capsys.readouterr().err
    assert status == 1 and "levante_vocab" in err and "n-samples" in err, err
    assert len(samples(runs / "fixed", "levante_vocab")) == len(lines) - 1


def test_verify_recomputes_group_values_and_names_lmms_evals_weighting(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A group's value is the pooled accuracy of its tasks; lmms-eval 0.7.x weights a task by the count of the
    metric it aggregated last. Our tasks give every metric one value per doc (that count is the task's); a run
    written before (egma-math's sub-type metrics only on their own lines, as rebuilt here) had egma-math weigh as
    one sub-type, and verify names that weighting."""
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    folder = runs / "fixed"
    (math_path,) = folder.glob("*_samples_levante_egma_math.jsonl")
    assert all(all(f"levante_acc_{sub}" in line for sub, _ in task_info("egma-math").subtypes)
               for line in samples(folder, "levante_egma_math"))  # every line carries every sub-type metric
    old_format = [{k: v for k, v in line.items() if not (k.startswith("levante_acc_") and v is None)}
                  for line in samples(folder, "levante_egma_math")]
    math_path.write_text("".join(json.dumps(line) + "\n" for line in old_format), encoding="utf-8")
    vocab, math_lines = samples(folder, "levante_vocab"), samples(folder, "levante_egma_math")
    correct = [line["levante_item"]["correct"] for line in vocab + math_lines]
    pooled = sum(correct) / len(correct)
    first_seen = {}
    for number, line in enumerate(math_lines):
        for key in line:
            if key.startswith("levante_acc_"):
                first_seen.setdefault(key, number)
    last_key = max(first_seen, key=first_seen.get)
    math_weight = sum(last_key in line for line in math_lines)
    acc = [sum(line["levante_item"]["correct"] for line in part) / len(part) for part in (vocab, math_lines)]
    lmms_value = (acc[0] * len(vocab) + acc[1] * math_weight) / (len(vocab) + math_weight)
    assert not math.isclose(lmms_value, pooled)

    def group_of(value: float):
        def change(data: dict) -> None:
            data["group_subtasks"]["pair"] = ["levante_vocab", "levante_egma_math"]
            data["groups"] = {"pair": {"alias": "pair", "levante_acc,none": value}}
        return change

    edit_results(folder, group_of(pooled))
    assert main(["verify", str(folder), "--skip-installation"]) == 0, capsys.readouterr().err
    edit_results(folder, group_of(lmms_value))
    assert main(["verify", str(folder), "--skip-installation"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert "pair: levante_acc,none" in line and f"levante_egma_math {math_weight}" in line and "last metric" in line


@pytest.fixture(scope="module")
def grouped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return group_run(tmp_path_factory)


def _group_accuracies(folder: Path, data: dict) -> tuple[float, float]:
    """(accuracy pooled over the items of the `levante` group's tasks, unweighted mean of the tasks' accuracies),
    computed here from the records."""
    correct = [[line["levante_item"]["correct"] for line in samples(folder, task)]
               for task in data["group_subtasks"]["levante"]]
    return sum(map(sum, correct)) / sum(map(len, correct)), sum(sum(c) / len(c) for c in correct) / len(correct)


@pytest.mark.parametrize("section", ["results", "groups"])
@pytest.mark.parametrize("forgery", ["made-up", "unweighted", "stderr"])
def test_verify_holds_every_group_row_to_the_pooled_records(
    grouped: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], section: str, forgery: str
) -> None:
    """lmms-eval writes a group's row twice (`results.levante` and `groups.levante`); each is the accuracy pooled
    over the items of the tasks that ran (here without the one the data version lacks, patch 0014): a made-up value,
    the unweighted mean over the tasks and a wrong stderr are one line naming the file, group and both values."""
    runs = copy_runs(grouped, tmp_path / "runs", ("group",))
    folder = runs / "group"
    data = json.loads(results_file(folder).read_text(encoding="utf-8"))
    assert not any(ABSENT in name for name in data["group_subtasks"]["levante"])
    assert main(["verify", str(folder), "--skip-installation"]) == 0, capsys.readouterr().err
    pooled, unweighted = _group_accuracies(folder, data)
    assert data[section]["levante"]["levante_acc,none"] == pytest.approx(pooled)
    assert not math.isclose(pooled, unweighted, rel_tol=1e-6)
    key = "levante_acc_stderr,none" if forgery == "stderr" else "levante_acc,none"
    honest = data[section]["levante"][key]
    forged = {"made-up": 0.2841, "unweighted": unweighted, "stderr": honest * 2}[forgery]
    edit_results(folder, lambda results: results[section]["levante"].__setitem__(key, forged))
    assert main(["verify", str(folder), "--skip-installation"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    where = f"group/{results_file(folder).name}"
    assert line.startswith(f"levante-tasks: mismatch: {where}: levante: {key} ({section} row): "), line
    assert f"reported {forged:.12g}," in line and f" {(honest if forgery == 'stderr' else pooled):.12g}" in line, line
    assert ("unweighted mean" in line) == (forgery == "unweighted"), line


def test_verify_finds_a_per_line_metric_that_disagrees_with_its_record(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    (path,) = (runs / "fixed").glob("*_samples_levante_vocab.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines) if json.loads(line)["levante_item"]["correct"] == 0)
    assert '"levante_acc": 0.0' in lines[number]
    lines[number] = lines[number].replace('"levante_acc": 0.0', '"levante_acc": 1.0')  # same size
    path.write_text("".join(lines), encoding="utf-8")
    assert main(["verify", str(runs / "fixed"), "--skip-installation"]) == 1
    err = capsys.readouterr().err
    assert f"levante_vocab: line {number + 1}: levante_acc 1.0 disagrees" in err, err
    assert "levante_vocab: levante_acc,none: reported" in err


def test_a_run_folder_that_does_not_exist_is_refused_up_front(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Next to a readable run, a mistyped RUN_DIR is one line, exit 2, and no summary is written."""
    out = tmp_path / "out"
    status, errors = summarize(capsys, root / "runs", tmp_path / "no-such-runs", "--out", out)
    assert status == 2 and len(errors) == 1 and "no-such-runs: run folder does not exist" in errors[0], errors
    assert not out.exists()


def test_summarize_verify_reads_each_file_once_and_reports_what_verify_reports(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`summarize --verify`: the outputs of `summarize` and the mismatch lines of `verify`, each file read once.
    Damage of both kinds is kept: a metric edited in place (a mismatch) and a truncated samples file (a problem)."""
    runs = copy_runs(root, tmp_path / "runs")
    edit_results(runs / "fixed", lambda data: data["results"]["levante_vocab"].update({"levante_acc,none": 0.123}))
    (broken,) = (runs / "oracle").glob("*_samples_levante_trog_mc.jsonl")
    truncate(broken)
    folders, data = [runs / "fixed", runs / "oracle"], root / "data"
    plain = verify_runs(folders, data)
    summarize_runs(folders, tmp_path / "plain", data_dir=data)
    reads: list[Path] = []
    for name in ("read_results", "read_samples"):
        real = getattr(lmms, name)
        monkeypatch.setattr(lmms, name, lambda path, label, real=real: reads.append(path) or real(path, label))
    verifier = Verifier(data)
    summarize_runs(folders, tmp_path / "once", data_dir=data, verifier=verifier)
    assert (verifier.report.lines, verifier.report.runs, verifier.report.tasks) == \
        (plain.lines, plain.runs, plain.tasks)
    assert any("levante_acc,none" in line for line in plain.lines) and any(broken.name in line for line in plain.lines)
    assert sorted(reads) == sorted(set(reads)) and broken in reads  # every file read once, the broken one too
    files = sorted(p.relative_to(tmp_path / "plain") for p in (tmp_path / "plain").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "once") for p in (tmp_path / "once").rglob("*") if p.is_file())
    for name in files:
        assert (tmp_path / "plain" / name).read_bytes() == (tmp_path / "once" / name).read_bytes(), name
    status = main(["summarize", *map(str, folders), "--out", str(tmp_path / "cli"), "--verify", "--data-dir",
                   str(data), "--no-plot"])
    printed = capsys.readouterr()
    assert status == 1
    assert [line for line in printed.err.splitlines() if line.startswith("levante-tasks: mismatch: ")] == \
        [f"levante-tasks: mismatch: {line}" for line in plain.lines]
    assert f"verified {plain.runs} run(s), {plain.tasks} task(s): {len(plain.lines)} mismatches" in printed.out


def test_summarize_refuses_a_missing_data_dir_before_writing(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["summarize", str(root / "runs" / "fixed"), "--out", str(tmp_path / "out"), "--verify",
                   "--data-dir", str(tmp_path / "nope")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status != 0 and len(err) == 1 and err[0].endswith("nope: does not exist; nothing was summarized or written")
    assert not (tmp_path / "out").exists()


def test_summarize_verify_prints_verifys_lines_when_the_summary_fails(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing to summarize (the one results file cut): the mismatch lines verify found are printed all the same,
    then summarize's error; exit 2 as summarize's."""
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    truncate(results_file(runs / "fixed"), 0.1)
    plain = verify_runs([runs / "fixed"], root / "data")
    status = main(["summarize", str(runs / "fixed"), "--out", str(tmp_path / "out"), "--verify", "--data-dir",
                   str(root / "data")])
    printed = capsys.readouterr()
    assert status == 2 and plain.lines and not (tmp_path / "out").exists()
    assert [line for line in printed.err.splitlines() if line.startswith("levante-tasks: mismatch: ")] == \
        [f"levante-tasks: mismatch: {line}" for line in plain.lines]
    assert printed.err.rstrip().endswith("nothing to summarize") and "verified 0 run(s)" in printed.out


def test_summarize_verify_refuses_a_missing_run_dir_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A RUN_DIR refused up front is its one line even where verify would have a line of its own to give (an
    lmms-eval it cannot find): nothing was verified."""
    import levante_tasks.lmms.patcher as patcher

    def missing() -> None:
        raise LevanteError("lmms-eval is not installed")

    monkeypatch.setattr(patcher, "installed_lmms_eval", missing)
    status = main(["summarize", str(tmp_path / "nope"), "--out", str(tmp_path / "out"), "--verify"])
    printed = capsys.readouterr()
    assert status == 2 and printed.out == "" and len(printed.err.strip().splitlines()) == 1, printed
    assert "nope: run folder does not exist" in printed.err


def _without_record(line: dict) -> None:
    del line["levante_item"]


@pytest.mark.parametrize("metadata", [True, False], ids=["metadata.levante", "records only"])
@pytest.mark.parametrize(("damage", "problem"), [
    (_without_record, "no 'levante_item' record"),
    (lambda line: line["levante_item"].update(item_uid=7), "record lacks 'item_uid'"),
    (lambda line: line["levante_item"].pop("parse_method"), "record lacks 'parse_method'"),
])
def test_a_levante_line_without_a_usable_record_is_a_mismatch_too(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage, problem: str, metadata: bool
) -> None:
    """A LEVANTE task writes a record per item: a line without one, or whose record summarize refuses (an item_uid
    that is not text, no parse_method), its results row re-derived to agree, is a problem to summarize and a
    mismatch to verify, in the same words, so `summarize --verify --allow-partial` does not exit 0. A task is read
    so by its config's `metadata.levante`, or, without it, by a first line that holds a record (as summarize
    reads it)."""
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    if not metadata:
        edit_results(runs / "fixed", lambda data: data["configs"]["levante_vocab"]["metadata"].pop("levante"))
    (path,) = (runs / "fixed").glob("*_samples_levante_vocab.jsonl")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    damage(lines[1])
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    rest = [line["levante_item"]["correct"] for line in lines if "levante_item" in line]
    edit_results(runs / "fixed", lambda data: data["results"]["levante_vocab"].update(
        {"levante_item,none": sum(rest) / len(rest)}))
    report = verify_runs([runs / "fixed"], installation=False)
    assert report.lines == [f"{results_file(runs / 'fixed').relative_to(runs).as_posix()}: levante_vocab: line 2: "
                            f"{problem} (a LEVANTE task writes one per item; summarize refuses the line)"], report.lines
    status = main(["summarize", str(runs / "fixed"), "--out", str(tmp_path / "out"), "--verify", "--allow-partial"])
    printed = capsys.readouterr().err
    assert status == 1 and f"{path.name}:2: {problem}" in printed, printed
