"""What `verify` proves, and `verify --rerun K` for auditors who have the model (issue 34, part 6).

A forgery that edits a saved response and re-derives the record, metrics and results from it (`rescore` does exactly
that) passes `verify`: the limit docs/summary.md states. `--rerun` re-runs sampled items through the recorded model
with lmms-eval (forked by `lmms_fork`, as the CLI's own `python -m lmms_eval` would run it) and catches it: shown on
the scripted `levante_fixed` and on lmms-eval's `huggingface` class with a tiny random-init checkpoint.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from built_once import built_once
from summary_runs import results_file

from levante_tasks.cli import main
from levante_tasks.errors import LevanteError
from levante_tasks.runs.lmms import read_samples
from levante_tasks.schema import task_source
from levante_tasks.summary import rerun as rerun_mod
from levante_tasks.summary.cli import check_data_dir
from levante_tasks.summary.rescore import rescore_runs
from levante_tasks.summary.verify import verify_runs
from levante_tasks.testing.fixture_data import write_fixture
from levante_tasks.testing.lmms_fork import run_cli

SCRIPTED = functools.partial(run_cli, entry="lmms_cli", timeout=600)  # registers levante_fixed, then lmms-eval's CLI
LMMS_EVAL = functools.partial(run_cli, entry="lmms_eval", timeout=600)  # `python -m lmms_eval`


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The colour-coded task fixture (the folder test_compat_models shares)."""
    return built_once(tmp_path_factory, "compat-data", write_fixture)


def lmms_run(data: Path, out: Path, *args: str, runner=SCRIPTED) -> Path:
    """One lmms-eval run with --log_samples into `out`; its results folder."""
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("LEVANTE_DATA_VERSION", None)
    done = runner([*args, "--include_path", str(task_source.TASKS_DIR), "--output_path", str(out), "--log_samples",
                   "--verbosity", "WARNING"], cwd=out.parent, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return results_file(out).parent


@pytest.fixture(scope="module")
def fixed_run(data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """levante_fixed letter=B on 2 items of a generation and a multiple_choice task."""
    out = tmp_path_factory.mktemp("rerun-fixed") / "fixed"
    return lmms_run(data, out, "--model", "levante_fixed", "--model_args", "letter=B",
                    "--tasks", "levante_vocab,levante_trog_mc", "--limit", "2")


def sampled(run: Path, count: int, seed: int) -> list[rerun_mod.Item]:
    """The items `--rerun count --rerun-seed seed` re-runs of a run (each samples file's lines)."""
    lines = {path.name.rsplit("_samples_", 1)[1].removesuffix(".jsonl"): read_samples(path, path.name)
             for path in run.glob("*_samples_*.jsonl")}
    return rerun_mod.sample_items(lines, count, seed)[0]


def forge(run: Path, item: rerun_mod.Item, response: str, work: Path) -> Path:
    """A copy of `run` whose saved response of `item` is `response`, with its record, per-line metrics, results
    and group rows re-derived from it (by `rescore`): a forgery every file of which agrees."""
    copy = work / "edited" / "run"
    shutil.copytree(run, copy)
    (samples,) = copy.glob(f"*_samples_{item.task}.jsonl")
    lines = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    (line,) = [line for line in lines if line["doc_id"] == item.doc_id]
    line["filtered_resps"] = response
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    rescore_runs([copy], work / "forged")
    return work / "forged" / "run"


def records(run: Path, task: str) -> dict[int, dict]:
    """The records of one task of a run, by doc_id."""
    (path,) = run.glob(f"*_samples_{task}.jsonl")
    return {line.data["doc_id"]: line.record for line in read_samples(path, path.name)}


def verify_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, list[str]]:
    """`levante-tasks verify ARGS` (run from a scratch folder: the re-run's lmms-eval works there): exit status,
    stdout, our stderr lines."""
    status = main(["verify", *args])
    out, err = capsys.readouterr()
    return status, out, [line for line in err.splitlines() if line.startswith("levante-tasks:")]


def test_verify_passes_a_forgery_whose_files_agree_and_rerun_catches_it(
        fixed_run: Path, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The limit of verify (docs/summary.md): the sampled vocab item (the model said B) forged to its target, its
    record, metrics and results re-derived, passes every consistency check; the re-run names exactly that item and
    reproduces the other (a multiple_choice item: its losses)."""
    (mc, item) = sampled(fixed_run, 2, 0)
    assert (mc.task, item.task) == ("levante_trog_mc", "levante_vocab")
    assert records(fixed_run, item.task)[item.doc_id]["correct"] == 0
    forged = forge(fixed_run, item, item.line.data["target"], tmp_path)
    assert records(forged, item.task)[item.doc_id]["correct"] == 1  # the forgery raised the score...
    assert verify_runs([forged], installation=False).lines == []  # ...and verify cannot tell
    monkeypatch.setattr(rerun_mod, "lmms_eval_process", SCRIPTED)
    monkeypatch.chdir(tmp_path)
    status, out, err = verify_cli(capsys, str(forged), "--skip-installation", "--data-dir", str(data), "--rerun", "2")
    where = f"run/{results_file(forged).name}"
    assert status == 1
    assert out.splitlines()[1:3] == [
        f"rerun: {where}: {mc.label()}: same response",
        f"rerun: {where}: {item.label()}: MISMATCH: response differs: saved \"{item.line.data['target']}\", "
        "re-run \"B\""]
    assert err == [f"levante-tasks: mismatch: {where}: {item.label()}: re-run: response differs: saved "
                   f"\"{item.line.data['target']}\", re-run \"B\""]


def test_rerun_reproduces_a_genuine_run_on_seeded_items(fixed_run: Path, data: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A genuine run re-runs to the same responses (exit 0); the items are drawn by --rerun-seed and named; the
    re-run leaves nothing behind in the working folder."""
    monkeypatch.setattr(rerun_mod, "lmms_eval_process", SCRIPTED)
    monkeypatch.chdir(tmp_path)
    status, out, err = verify_cli(capsys, str(fixed_run), "--skip-installation", "--data-dir", str(data),
                                  "--rerun", "1", "--rerun-seed", "2")
    (item,) = sampled(fixed_run, 1, 2)
    where = f"fixed/{results_file(fixed_run).name}"
    assert (status, err) == (0, [])
    assert out.splitlines() == [
        f"rerun: {where}: re-running 1 of 4 items through levante_fixed (letter=B) at revision unknown (what "
        f"the checkpoint holds now): {item.label()}",
        f"rerun: {where}: {item.label()}: same response",
        "verified 1 run(s), 2 task(s); re-ran 1 item(s), 0 differ: no mismatches"]
    assert list(tmp_path.iterdir()) == []


def test_a_rerun_that_shows_another_item_is_a_mismatch(fixed_run: Path) -> None:
    """Same response, other item (another data version or data dir): named with both item uids."""
    (item,) = sampled(fixed_run, 1, 0)
    other = {**item.line.data, "levante_item": {**item.line.data["levante_item"], "item_uid": "vocab_other"}}
    assert rerun_mod.compare_item(item, item.line.data) is None
    assert rerun_mod.compare_item(item, other) == (
        f"the re-run showed item 'vocab_other', the run saved {item.line.data['levante_item']['item_uid']!r} "
        "(another data version or data dir?)")
    assert rerun_mod.compare_item(item, None) == "the re-run wrote no samples line for it"


def run_recording(fixed_run: Path, folder: Path, key: str, value: str) -> tuple[Path, Path]:
    """(a copy of the fixed run in `folder` whose results file records `key` = `value` in its config, that file)."""
    run = shutil.copytree(fixed_run, folder)
    path = results_file(run)
    results = json.loads(path.read_text(encoding="utf-8"))
    results["config"][key] = value
    path.write_text(json.dumps(results), encoding="utf-8")
    return run, path


def test_rerun_refuses_a_run_decoded_by_sampling(fixed_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Sampling cannot be reproduced: one line saying so, exit 2, nothing re-run."""
    run, path = run_recording(fixed_run, tmp_path / "sampled", "gen_kwargs", "temperature=0.7,do_sample=True")
    monkeypatch.setattr(rerun_mod, "lmms_eval_process", None)  # a re-run would fail loudly
    status, out, err = verify_cli(capsys, str(run), "--skip-installation", "--rerun", "2")
    assert (status, out) == (2, "")
    assert err == [(f"levante-tasks: error: sampled/{path.name}: levante_vocab (do_sample=True, temperature=0.7) "
                    "was decoded by sampling: a re-run cannot reproduce its responses, so --rerun needs greedy "
                    "decoding (verify without --rerun still checks the run's consistency)")]


def test_verify_refuses_a_data_dir_that_does_not_exist(fixed_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    status, out, err = verify_cli(capsys, str(fixed_run), "--data-dir", "no-such-data")
    assert (status, out) == (2, "")
    assert err == ["levante-tasks: error: --data-dir no-such-data: does not exist; nothing was verified"]


def test_rerun_runs_no_remote_code_a_results_file_asks_for_without_the_auditors_flag(
        fixed_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A submitted results file chooses the model: `trust_remote_code=True` would run its checkpoint's Python code on
    the auditor's machine. Refused in one line (exit 2, nothing run) unless --rerun-trust-remote-code."""
    run, path = run_recording(fixed_run, tmp_path / "remote", "model_args", "letter=B,trust_remote_code=True")
    monkeypatch.setattr(rerun_mod, "lmms_eval_process", None)  # a re-run would fail loudly
    status, out, err = verify_cli(capsys, str(run), "--skip-installation", "--rerun", "1")
    assert (status, out) == (2, "")
    assert err == [f"levante-tasks: error: remote/{path.name}: its model_args set trust_remote_code: a re-run would "
                   "execute the code that the checkpoint it names ships; read that code, then pass "
                   "--rerun-trust-remote-code (nothing was run)"]
    plans, _ = rerun_mod.plan_reruns([run], 1, 0, trust_remote_code=True)
    args, _ = rerun_mod.rerun_arguments(plans[0].results, [], run)
    assert len(plans) == 1 and "letter=B,trust_remote_code=True" in args


def test_numbers_within_the_tolerance_that_change_the_scored_answer_are_a_mismatch(fixed_run: Path) -> None:
    """Two near-tied losses trading places stay within 1e-5 of the saved ones, yet the model chose another option:
    the records' choice names it."""
    (item,) = sampled(fixed_run, 1, 0)
    saved = {**item.line.data, "filtered_resps": [["-3.000001", "False"], ["-3.000004", "False"]]}
    record = saved["levante_item"]
    new = {**saved, "filtered_resps": [["-3.000004", "False"], ["-3.000001", "False"]],
           "levante_item": {**record, "choice_index": 1, "correct": 0}}
    saved["levante_item"] = {**record, "choice_index": 0, "correct": 1}
    again = rerun_mod.Item(item.task, rerun_mod.SampleLine(item.line.number, saved))
    assert rerun_mod.same_response(saved["filtered_resps"], new["filtered_resps"])
    assert rerun_mod.compare_item(again, new) == ("the scored answer differs within the numeric tolerance: saved "
                                                  "(0, 1), re-run (1, 0)")
    assert rerun_mod.compare_item(again, saved) is None


def test_a_data_dir_given_with_a_tilde_is_the_folder_it_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--data-dir=~/data` reaches verify unexpanded (the shell expands no `~` after `=`); the data dir reads it as
    the home folder's `data`, so the up-front check must too."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "data").mkdir()
    check_data_dir(Path("~/data"))
    with pytest.raises(LevanteError, match="no-such-data: does not exist"):
        check_data_dir(Path("~/no-such-data"))


@pytest.mark.parametrize(("saved", "new", "same"), [
    ("B", "B", True), ("B", "B ", False), ([["-1.5", "False"]], [["-1.500001", "False"]], True),
    ([["-1.5", "False"]], [["-1.6", "False"]], False),
    ('{"scores": [0.25, 0.75]}', '{"scores": [0.25, 0.7500001]}', True),
    ('{"scores": [0.25, 0.75]}', '{"scores": [0.75, 0.25]}', False), ("1", "2", False)])
def test_same_response_holds_text_exactly_and_numbers_within_tolerance(saved, new, same: bool) -> None:
    assert rerun_mod.same_response(saved, new) is same


def test_tiny_checkpoint_greedy_reruns_reproduce_and_an_edited_response_is_caught(
        data: Path, tmp_path: Path, tiny_checkpoint: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """lmms-eval's `huggingface` class on a random-init SmolVLM, greedy, 2 new tokens: the untouched sampled item
    reproduces its (arbitrary) text exactly; the one whose saved response was edited is caught."""
    checkpoint = tiny_checkpoint("idefics3")
    run = lmms_run(data, tmp_path / "tiny", "--model", "huggingface", "--model_args",
                   f"pretrained={checkpoint},device_map=cpu", "--device", "cpu", "--gen_kwargs", "max_new_tokens=2",
                   "--tasks", "levante_vocab,levante_trog", "--limit", "2", runner=LMMS_EVAL)
    (edited, kept) = sampled(run, 2, 0)
    assert edited.line.data["filtered_resps"] != "A"
    forged = forge(run, edited, "A", tmp_path / "work")
    assert verify_runs([forged], installation=False).lines == []
    monkeypatch.setattr(rerun_mod, "lmms_eval_process", LMMS_EVAL)
    monkeypatch.chdir(tmp_path)
    status, out, err = verify_cli(capsys, str(forged), "--skip-installation", "--data-dir", str(data), "--rerun", "2")
    where = f"run/{results_file(forged).name}"
    again = json.dumps(edited.line.data["filtered_resps"], ensure_ascii=False)
    assert (status, out.splitlines()[1:3]) == (1, [
        f"rerun: {where}: {edited.label()}: MISMATCH: response differs: saved \"A\", re-run {again}",
        f"rerun: {where}: {kept.label()}: same response"])
    assert out.splitlines()[0] == (f"rerun: {where}: re-running 2 of 4 items through huggingface "
                                   f"(pretrained={checkpoint.name},device_map=cpu) at revision unknown (what the "
                                   f"checkpoint holds now): {edited.label()}, {kept.label()}")
    assert len(err) == 1


def test_a_hub_checkpoint_reruns_at_the_revision_the_run_recorded() -> None:
    """A levante adapter records its revision in its answers, not in model_args: the re-run pins it, so it loads the
    files the run used and not the hub's current ones; a path, or a revision already pinned, is left as it is."""
    commit, other = "a" * 40, "b" * 40
    assert rerun_mod.pinned_model_args("pretrained=org/vlm,dtype=bf16", commit) == (
        f"pretrained=org/vlm,dtype=bf16,revision={commit}")
    assert rerun_mod.pinned_model_args("pretrained=org/vlm,revision=main", commit) == (
        f"pretrained=org/vlm,revision={commit}")
    assert rerun_mod.pinned_model_args(f"pretrained=org/vlm,revision={other}", commit) == (
        f"pretrained=org/vlm,revision={other}")
    assert rerun_mod.pinned_model_args("pretrained=./ckpt", commit) == "pretrained=./ckpt"
    assert rerun_mod.pinned_model_args("pretrained=org/vlm", "unknown") == "pretrained=org/vlm"
    assert rerun_mod.pinned_model_args("letter=B", commit) == "letter=B"
