"""`verify` re-parses saved responses and `rescore` re-scores saved runs, on real lmms-eval output and a real
inspect_ai log: a record flipped without its response is found; an unchanged parser reproduces every record byte
for byte; records of an older parser are re-read, reported and summarized; the inputs are never touched."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from summary_runs import copy_runs, real_runs, results_file, samples

from levante_tasks.cli import main
from levante_tasks.core.parsing import PARSER_VERSION
from levante_tasks.schema.items import LETTERS
from levante_tasks.schema.records import RECORD_KEY


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return real_runs(tmp_path_factory)


def _stderr(values: list[float]) -> float:
    """Sample SD / sqrt(n) (what lmms-eval reports for a mean), computed here independently."""
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))


def _edit_samples(folder: Path, task: str, change) -> Path:
    """Apply `change(lines)` to the parsed lines of a samples file and write them back as lmms-eval does."""
    (path,) = folder.glob(f"*_samples_{task}.jsonl")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    change(lines)
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


def _flip_a_wrong_item(folder: Path, task: str, how: str = "letter") -> int:
    """Make one wrong item correct in its record, its line metrics and results.json; the response stays. Returns
    the line number. `how`: "letter" records the gold letter as the choice; "order" keeps the choice and edits the
    presented order so that the chosen position holds the answer (the response then re-parses to a correct record)."""
    flipped = {}

    def flip(lines: list[dict]) -> None:
        number, line = next((i, line) for i, line in enumerate(lines) if line[RECORD_KEY]["correct"] == 0
                            and line[RECORD_KEY]["choice_letter"] is not None)
        record = line[RECORD_KEY]
        if how == "letter":
            record.update(choice_letter=line["target"], choice_index=0, correct=1)
        else:
            order = record["presented_order"]
            chosen, gold = LETTERS.index(record["choice_letter"]), order.index(0)
            order[chosen], order[gold] = order[gold], order[chosen]
            record.update(choice_index=0, correct=1)
        line["levante_acc"] = 1.0
        flipped["number"], flipped["acc"] = number + 1, [float(x[RECORD_KEY]["correct"]) for x in lines]

    _edit_samples(folder, task, flip)
    path = results_file(folder)
    data = json.loads(path.read_text(encoding="utf-8"))
    acc = flipped["acc"]
    row = data["results"][task]
    row["levante_acc,none"] = row["levante_item,none"] = sum(acc) / len(acc)
    row["levante_acc_stderr,none"] = row["levante_acc_stderr_clt,none"] = _stderr(acc)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return flipped["number"]


def test_verify_finds_a_record_flipped_to_correct_whose_response_says_otherwise(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    number = _flip_a_wrong_item(runs / "fixed", "levante_vocab")
    assert main(["verify", str(runs / "fixed"), "--skip-installation"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err
    assert f"levante_vocab: line {number}: record says " in err[0] and "re-parses to 'B' by lone_letter" in err[0]


def test_verify_finds_a_record_made_correct_by_editing_its_presented_order(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The response re-parses to the forged record (it trusts the record's order): lmms-eval's own target for the
    line still says where the answer was shown."""
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    number = _flip_a_wrong_item(runs / "fixed", "levante_vocab", how="order")
    assert main(["verify", str(runs / "fixed"), "--skip-installation"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err
    assert f"levante_vocab: line {number}: levante_item presented_order " in err[0] and "target of the line" in err[0]


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` by relative path, with its bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _records(folder: Path) -> list[bytes]:
    """The records of every samples file under `folder`, as the bytes lmms-eval wrote them (file order)."""
    out = []
    for path in sorted(folder.rglob("*_samples_*.jsonl")):
        out += [json.dumps(json.loads(line)[RECORD_KEY], ensure_ascii=False).encode()
                for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


def test_rescore_with_an_unchanged_parser_reproduces_every_record_byte_for_byte(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = root / "runs"
    before = _tree(runs)
    out = tmp_path / "rescored"
    assert main(["rescore", str(runs / "fixed"), str(runs / "oracle"), "--out", str(out)]) == 0
    assert "0 changed" in capsys.readouterr().out
    assert _tree(runs) == before  # the inputs untouched
    for name in ("fixed", "oracle"):
        assert _tree(out / name) == _tree(runs / name)
        assert _records(out / name) == _records(runs / name) and len(_records(out / name)) > 50
    report = json.loads((out / "rescore.json").read_text(encoding="utf-8"))
    assert (report["changed"], report["by_method"], report["problems"]) == ([], {}, [])
    assert report["records"] == sum(len(_records(runs / name)) for name in ("fixed", "oracle"))
    assert main(["verify", str(out), "--skip-installation"]) == 0


def _as_parser_1(line: dict, response: str, letter: str) -> None:
    """Make a line what parser version 1 wrote for `response`: it read `letter` by answer_is."""
    record = line[RECORD_KEY]
    index = record["presented_order"]["ABCDEFGH".index(letter)]
    line["filtered_resps"] = response
    record.update(choice_letter=letter, choice_index=index, correct=int(index == 0), parse_method="answer_is",
                  parse_confidence=0.9, parser_version="1")
    line["levante_acc"] = float(index == 0)


def test_rescore_rereads_an_older_parsers_records_and_verify_names_them(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Parser 1 read the article of "The answer is A cat." as option A; rescoring gives the unparsed record
    today's parser writes, counts it by form, recomputes the results file, and leaves every other line as it was."""
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    folder = runs / "fixed"
    target: dict = {}

    def older(lines: list[dict]) -> None:
        number, line = next((i, x) for i, x in enumerate(lines) if x["target"] == "A")
        _as_parser_1(line, "The answer is A cat.", "A")
        target["number"], target["uid"] = number + 1, line[RECORD_KEY]["item_uid"]
        acc = [float(x[RECORD_KEY]["correct"]) for x in lines]
        target["acc"] = sum(acc) / len(acc)

    path = _edit_samples(folder, "levante_vocab", older)
    data = json.loads(results_file(folder).read_text(encoding="utf-8"))
    row = data["results"]["levante_vocab"]
    original_acc = row["levante_acc,none"]
    row["levante_acc,none"] = row["levante_item,none"] = target["acc"]
    pooled = [x[RECORD_KEY]["correct"] for task in ("levante_vocab", "levante_egma_math")
              for x in samples(folder, task)]
    data["group_subtasks"]["pair"] = ["levante_vocab", "levante_egma_math"]  # a group row, pooled over items
    data["groups"] = {"pair": {"alias": "pair", "levante_acc,none": sum(pooled) / len(pooled)}}
    data["results"]["pair"] = dict(data["groups"]["pair"])  # lmms-eval writes a group's row in both places
    results_file(folder).write_text(json.dumps(data, indent=2), encoding="utf-8")
    assert main(["verify", str(folder), "--skip-installation"]) == 1
    err = capsys.readouterr().err
    assert f"levante_vocab: line {target['number']}: recorded by parser version 1 as 'A' by answer_is" in err
    assert f"parser version {PARSER_VERSION} reads its response as None by none" in err and "rescore" in err
    before = _tree(runs)
    out = tmp_path / "rescored"
    assert main(["rescore", str(folder), "--out", str(out)]) == 0
    assert "1 changed (answer_is -> none 1)" in capsys.readouterr().out
    assert _tree(runs) == before
    report = json.loads((out / "rescore.json").read_text(encoding="utf-8"))
    assert report["by_method"] == {"answer_is -> none": 1}
    (change,) = report["changed"]
    assert (change["item_uid"], change["before"]["answer"], change["after"]["answer"]) == (target["uid"], "A", None)
    assert change["before"]["correct"] == 1 and change["after"]["correct"] == 0
    assert target["uid"] in (out / "rescore.md").read_text(encoding="utf-8")
    old_lines = path.read_text(encoding="utf-8").splitlines()
    (new_path,) = (out / "fixed").glob(path.name)
    new_lines = new_path.read_text(encoding="utf-8").splitlines()
    assert [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b] == [target["number"] - 1]
    record = json.loads(new_lines[target["number"] - 1])[RECORD_KEY]
    assert (record["choice_letter"], record["parse_method"], record["parser_version"]) == (None, "none", PARSER_VERSION)
    rescored = json.loads(results_file(out / "fixed").read_text(encoding="utf-8"))["results"]["levante_vocab"]
    assert rescored["levante_acc,none"] == pytest.approx(original_acc)
    rescored_data = json.loads(results_file(out / "fixed").read_text(encoding="utf-8"))
    for section in ("groups", "results"):
        assert rescored_data[section]["pair"]["levante_acc,none"] == pytest.approx((sum(pooled) - 1) / len(pooled))
    assert main(["verify", str(out), "--skip-installation"]) == 0, capsys.readouterr().err
    assert main(["summarize", str(out), "--out", str(tmp_path / "summary"), "--no-plot"]) == 0


def test_keys_the_parser_does_not_decide_are_no_disagreement(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run written by an earlier tree (records without `chance_level`, an older parser_version) whose decisions
    stand: verify passes and rescore keeps every file byte for byte."""
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    dropped = []

    def earlier_tree(lines: list[dict]) -> None:
        for line in lines:
            dropped.append(line[RECORD_KEY].pop("chance_level", None))
            line[RECORD_KEY]["parser_version"] = "2"

    for task in ("levante_vocab", "levante_egma_math"):
        _edit_samples(runs / "fixed", task, earlier_tree)
    assert any(value is not None for value in dropped)  # slider records lost a key
    assert main(["verify", str(runs / "fixed"), "--skip-installation"]) == 0, capsys.readouterr().err
    assert main(["rescore", str(runs / "fixed"), "--out", str(tmp_path / "rescored")]) == 0
    assert "0 changed" in capsys.readouterr().out
    assert _tree(tmp_path / "rescored" / "fixed") == _tree(runs / "fixed")


def test_rescore_keeps_a_crlf_bom_files_bytes_and_rewrites_one_line_with_crlf(root: Path, tmp_path: Path) -> None:
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))
    target: dict = {}

    def older(lines: list[dict]) -> None:
        number, line = next((i, x) for i, x in enumerate(lines) if x["target"] == "A")
        _as_parser_1(line, "The answer is A cat.", "A")
        target["number"] = number

    path = _edit_samples(runs / "fixed", "levante_vocab", older)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    assert main(["rescore", str(runs / "fixed"), "--out", str(tmp_path / "rescored")]) == 0
    new = (tmp_path / "rescored" / "fixed" / path.name).read_bytes()
    assert new.startswith(b"\xef\xbb\xbf") and new.endswith(b"\r\n")
    old_lines, new_lines = path.read_bytes()[3:].split(b"\r\n"), new[3:].split(b"\r\n")
    assert b"\n" not in b"".join(new_lines)  # every line still ends with CRLF
    assert [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b] == [target["number"]]
    assert json.loads(new_lines[target["number"]])[RECORD_KEY]["parse_method"] == "none"


@pytest.mark.parametrize("where", ["inside", "holding"])
def test_rescore_refuses_an_out_that_overlaps_an_input(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """--out inside a run folder, or an earlier rescore output that holds the run folder given: refused, nothing
    written or replaced."""
    base = tmp_path / "earlier"
    runs = copy_runs(root, base, ("fixed",))
    (base / "rescore.json").write_text("{}\n", encoding="utf-8")
    before = _tree(base)
    out = runs / "fixed" / "rescored" if where == "inside" else base
    assert main(["rescore", str(runs / "fixed"), "--out", str(out)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "overlaps the run folder" in line and "fixed" in line and str(tmp_path) not in line, line
    assert _tree(base) == before


# ------------------------------------------------------------------ inspect_ai: a real log of an offline mock model

INSPECT_ANSWERS = ["ANSWER: {x}", "The answer is A cat.", "{X}) the one I mean", '{{"answer": "{x}", "why": '
                   '"The answer is Z"}}', "I pick ({X})", "Option {X} is correct.", "{{'answer': '{X}',"]


def _mock_answer(messages, tools, tool_choice, config):
    """An answer of one of the forms above, chosen and filled by the item (its uid in the message metadata)."""
    from inspect_ai.model import ModelOutput, ModelUsage

    from levante_tasks.inspect.samples import ITEM_KEY

    ref = next(m.metadata[ITEM_KEY] for m in messages if ITEM_KEY in (m.metadata or {}))
    k = int(hashlib.sha256(ref["item_uid"].encode()).hexdigest(), 16)
    letter = "ABCD"[k % 2]  # every egma-math choice item of the fixture has at least two options
    text = INSPECT_ANSWERS[(k // 2) % len(INSPECT_ANSWERS)].format(x=letter.lower(), X=letter)
    output = ModelOutput.from_content(model="mockllm/model", content=text)
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # no tokenizer download (offline)
    return output


@pytest.fixture(scope="module")
def inspect_log(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One inspect_ai log of levante_egma_math (text options) answered by the mock model; its folder."""
    import os

    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    folder = tmp_path_factory.mktemp("inspect") / "logs"
    old = os.environ.get("LEVANTE_DATA_DIR")
    os.environ["LEVANTE_DATA_DIR"] = str(root / "data")
    try:
        (log,) = inspect_eval("levante_tasks/levante_egma_math", model=get_model("mockllm/model",
                              custom_outputs=_mock_answer), log_dir=str(folder), display="none")
    finally:
        os.environ.pop("LEVANTE_DATA_DIR") if old is None else os.environ.__setitem__("LEVANTE_DATA_DIR", old)
    assert log.status == "success", log.error
    return folder


def _log_records(folder: Path) -> dict[str, dict]:
    from inspect_ai.log import read_eval_log

    (path,) = folder.glob("*.eval")
    return {s.id: s.scores["levante_record"].metadata[RECORD_KEY] for s in read_eval_log(str(path)).samples}


def test_inspect_log_round_trips_and_an_older_record_is_rescored(
    inspect_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log

    records = _log_records(inspect_log)
    methods = {r["parse_method"] for r in records.values()}
    assert {"answer_is", "none", "letter_first", "json", "i_choose"} <= methods, methods
    assert any(r["option_texts"] for r in records.values())
    assert main(["verify", str(inspect_log), "--skip-installation"]) == 0, capsys.readouterr().err
    out = tmp_path / "rescored"
    assert main(["rescore", str(inspect_log), "--out", str(out)]) == 0
    assert _tree(out / "logs") == _tree(inspect_log) and _log_records(out / "logs") == records

    (path,) = inspect_log.glob("*.eval")
    log = read_eval_log(str(path))
    sample = next(s for s in log.samples if s.output.completion == "The answer is A cat.")
    score = sample.scores["levante_record"]
    record = score.metadata[RECORD_KEY]
    index = record["presented_order"][0]
    record.update(choice_letter="A", choice_index=index, correct=int(index == 0), parse_method="answer_is",
                  parse_confidence=0.9, parser_version="1")
    score.value, score.answer = ("C" if index == 0 else "I"), "A"
    (metric,) = [s for s in log.results.scores if s.name == "levante_record"]
    correct = [s.scores["levante_record"].metadata[RECORD_KEY]["correct"] for s in log.samples]
    metric.metrics["accuracy"].value = sum(correct) / len(correct)
    older = tmp_path / "older"
    older.mkdir()
    write_eval_log(log, str(older / path.name))
    assert main(["verify", str(older), "--skip-installation"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert f"sample {sample.id!r}: recorded by parser version 1 as 'A' by answer_is" in line, line
    assert main(["rescore", str(older), "--out", str(tmp_path / "again")]) == 0
    assert "1 changed (answer_is -> none 1)" in capsys.readouterr().out
    assert _log_records(tmp_path / "again" / "older") == records
    assert main(["verify", str(tmp_path / "again"), "--skip-installation"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(("change", "holds"), [({"seed": 1}, "task egma-math, seed 1"),
                                               ({"task": "vocab"}, "task vocab, seed 0")])
def test_an_inspect_log_whose_records_are_another_variant_is_refused_by_every_reader(
    inspect_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict, holds: str
) -> None:
    """The same check as for a swapped samples file, against the log's metadata.levante: one line from summarize,
    verify and rescore, nothing written."""
    from inspect_ai.log import read_eval_log, write_eval_log

    (path,) = inspect_log.glob("*.eval")
    log = read_eval_log(str(path))
    for sample in log.samples:
        sample.scores["levante_record"].metadata[RECORD_KEY].update(change)
    folder = tmp_path / "swapped"
    folder.mkdir()
    write_eval_log(log, str(folder / path.name))
    line = (f"swapped/{path.name}: its metadata.levante (levante_egma_math) says task egma-math, seed 0 "
            f"(generate_until, original images), but sample {log.samples[0].id!r} holds a record of {holds} "
            "(generate_until, original images): another task's or seed's records (a swapped or renamed file?); the "
            "file is not read")
    assert main(["verify", str(folder), "--skip-installation"]) == 1
    assert capsys.readouterr().err.splitlines() == [f"levante-tasks: mismatch: {line}"]
    for command in ("summarize", "rescore"):
        assert main([command, str(folder), "--out", str(tmp_path / command)]) == 2
        assert capsys.readouterr().err.splitlines()[0] == f"levante-tasks: error: {line}", command
        assert not (tmp_path / command).exists()


def test_records_written_before_re_parsing_are_one_line_per_file(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Records without the parser's inputs (runs older than parser version 2): verify and rescore say so once per
    samples file, and rescore still writes the run (copied: nothing could be re-read)."""
    runs = copy_runs(root, tmp_path / "runs", ("fixed",))

    def older(lines: list[dict]) -> None:
        for line in lines:
            del line[RECORD_KEY]["parser_version"], line[RECORD_KEY]["option_texts"]

    path = _edit_samples(runs / "fixed", "levante_vocab", older)
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert main(["verify", str(runs / "fixed"), "--skip-installation"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert f"levante_vocab: {n} record(s) cannot be re-parsed (first: line 1): the record names no parser_version" \
        in line, line
    out = tmp_path / "rescored"
    assert main(["rescore", str(runs / "fixed"), "--out", str(out)]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert f"{path.name}: {n} record(s) cannot be re-parsed" in line, line
    assert _tree(out / "fixed") == _tree(runs / "fixed")
