"""The LEVANTE inspect tasks on bad input and odd models: bad `-T` arguments and missing or damaged data are one line
that inspect's CLI prints without a traceback; prose answers are unparsed records; the summary counts our record,
not inspect's `choice()`; logs of other tasks are skipped and listed; duplicates and `--limit` follow the lmms-eval
rules; outputs hold no absolute paths; the recorded task source hash covers every inspect task module."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from inspect_ai import Task
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match

import levante_tasks
from levante_tasks import _registry
from levante_tasks.errors import LevanteError
from levante_tasks.inspect import task as task_mod
from levante_tasks.schema.records import RECORD_KEY
from levante_tasks.summary import summarize_runs, verify_runs

PACKAGE = Path(levante_tasks.__file__).resolve().parent
PREPARE = "levante-tasks prepare"
pytest_plugins = ["inspect_helpers"]  # the data_dir and fixture_env fixtures


def _one_line_error(call) -> str:
    """The message of the LevanteError that `call` raises, checked to be one line inspect prints alone."""
    with pytest.raises(LevanteError) as caught:
        call()
    assert isinstance(caught.value, PrerequisiteError)  # inspect's CLI prints .message, no traceback
    message = caught.value.message
    assert message == str(caught.value) and "\n" not in message
    return message


@pytest.mark.parametrize(("args", "expected"), [
    ({"seed": 7}, "seed=7: expected one of 0, 1, 2"),
    ({"seed": "abc"}, "seed='abc': expected one of 0, 1, 2"),
    ({"seed": True}, "seed=True: expected one of 0, 1, 2"),
    ({"variant": "xyz"}, "variant='xyz': expected one of original, blank, shuffled"),
    ({"varient": "blank"}, "unknown task argument(s) varient"),
    ({"orders": 0}, "orders=0: expected a whole number from 1 to 32"),
    ({"orders": 33}, "orders=33: expected a whole number from 1 to 32"),
    ({"orders": "auto"}, "orders='auto': expected a whole number from 1 to 32"),
    ({"orders": 2.5}, "orders=2.5: expected a whole number from 1 to 32"),
    ({"orders": 4, "seed": 1}, "seed=1 with orders=4: orders asks option-order seeds 0 .. 3; leave -T seed out"),
    ({"orders": 4, "variant": "blank"}, "orders=4 with variant='blank', locale='en': option-order seed 3: seeds "
     "3..31 (order replicates) are generate_until only, in English with original images"),
    ({"orders": 4, "locale": "de"}, "orders=4 with variant='original', locale='de': option-order seed 3"),
])
def test_bad_task_arguments_are_one_line_naming_the_task(fixture_env, args, expected):
    message = _one_line_error(lambda: _registry.levante_trog(**args))
    assert message.startswith("levante_tasks/levante_trog: ") and expected in message


def test_seed_given_as_text_on_the_command_line_is_the_same_seed(fixture_env):
    assert [s.target for s in _registry.levante_trog(seed="2").dataset] == [
        s.target for s in _registry.levante_trog(seed=2).dataset]


def _damage(root: Path, how: str) -> None:
    version = root / (root / "default_version").read_text().strip()
    if how == "missing image":
        next((version / "release" / "visual" / "trog").rglob("*.*")).unlink()
    elif how == "corrupt parquet":
        (version / "datasets" / "trog" / "test.parquet").write_bytes(b"PAR1 garbage")
    elif how == "no default_version":
        (root / "default_version").unlink()


@pytest.mark.parametrize(("how", "expected"), [
    ("nothing prepared", "no prepared LEVANTE data"),
    ("no default_version", "no prepared LEVANTE data"),
    ("missing image", "image referenced by the dataset is missing"),
    ("corrupt parquet", "datasets/trog/test.parquet: not a readable parquet file"),
])
def test_missing_or_damaged_data_is_one_line_naming_the_prepare_fix(data_dir, tmp_path, monkeypatch, how, expected):
    root = tmp_path / "data"
    if how == "nothing prepared":
        root.mkdir()
    else:
        shutil.copytree(data_dir, root)
        _damage(root, how)
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(root))
    monkeypatch.delenv("LEVANTE_DATA_VERSION", raising=False)
    message = _one_line_error(_registry.levante_trog)
    assert message.startswith("levante_tasks/levante_trog: ") and expected in message and PREPARE in message
    assert str(tmp_path) not in message


def test_an_unset_data_dir_is_named_in_the_message(tmp_path, monkeypatch):
    monkeypatch.delenv("LEVANTE_DATA_DIR", raising=False)
    monkeypatch.delenv("LEVANTE_DATA_VERSION", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # an empty user cache dir
    message = _one_line_error(_registry.levante_vocab)
    assert PREPARE in message and "LEVANTE_DATA_DIR is not set" in message


def _inspect_cli(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`inspect ...` as a user types it (with levante-tiny registered, as test models are not entry points)."""
    cli = ("import sys, levante_tasks.testing.inspect_model; from inspect_ai._cli.main import main; "
           "sys.argv[0] = 'inspect'; main()")
    return subprocess.run([sys.executable, "-c", cli, *args], cwd=cwd, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=300)


CLI_PROBLEMS = {"nothing prepared": ("seed=0", PREPARE), "bad seed": ("seed=7", "seed=7: expected one of 0, 1, 2"),
                "bad orders": ("orders=40", "orders=40: expected a whole number from 1 to 32")}


@pytest.mark.parametrize("how", list(CLI_PROBLEMS))
def test_the_inspect_cli_prints_the_one_line_without_a_traceback(data_dir, tmp_path, how):
    empty = tmp_path / "empty"
    empty.mkdir()
    # inspect prints the message with rich (wrapped at COLUMNS; nothing at all under `--display none`)
    env = {"LEVANTE_DATA_DIR": str(empty if how == "nothing prepared" else data_dir), "COLUMNS": "500"}
    argument, expected = CLI_PROBLEMS[how]
    proc = _inspect_cli(["eval", "levante_tasks/levante_trog", "--model", "levante-tiny/reply", "-T", argument,
                         "--log-dir", str(tmp_path / "logs")], tmp_path, env)
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("levante_tasks/levante_trog: "), lines[:5]
    assert expected in lines[0]
    assert not list((tmp_path / "logs").rglob("*.eval"))


def _run(tasks, log_dir: Path, data_dir: Path, **kwargs) -> list:
    """inspect_ai.eval with levante-tiny on the fixture data; every log finished."""
    from inspect_ai import eval as inspect_eval

    import levante_tasks._registry  # noqa: F401 (registers levante-tiny)

    old = os.environ.get("LEVANTE_DATA_DIR")
    os.environ["LEVANTE_DATA_DIR"] = str(data_dir)
    try:
        logs = inspect_eval(tasks, log_dir=str(log_dir), display="none", **kwargs)
    finally:
        os.environ.pop("LEVANTE_DATA_DIR") if old is None else os.environ.__setitem__("LEVANTE_DATA_DIR", old)
    assert all(log.status == "success" for log in logs), [log.error for log in logs]
    return logs


def _reply(text: str, model_id: str, folder: Path) -> dict:
    return {"model": "levante-tiny/reply", "model_args": {"reply": text, "model_id": model_id,
                                                         "pretrained": str(folder / "local-checkpoint")}}


@pytest.fixture(scope="module")
def reply_logs(tmp_path_factory, data_dir):
    """trog answered in prose, and with `The answer is B.` (our parser reads it, inspect's choice() does not)."""
    tmp = tmp_path_factory.mktemp("reply")
    prose = _run("levante_tasks/levante_trog", tmp / "prose", data_dir,
                 **_reply("I like the second picture best.", "prose", tmp))
    answer_is = _run("levante_tasks/levante_trog", tmp / "answer-is", data_dir,
                     **_reply("The answer is B.", "answer-is", tmp))
    return tmp, prose[0], answer_is[0]


def _records(log) -> list[dict]:
    return [s.scores["levante_record"].metadata[RECORD_KEY] for s in log.samples]


def test_a_prose_answer_is_an_unparsed_record_and_not_correct(reply_logs):
    _, log, _ = reply_logs
    for sample, record in zip(log.samples, _records(log), strict=True):
        assert (record["choice_letter"], record["choice_index"], record["correct"]) == (None, None, 0)
        assert record["parse_method"] == "none" and record["option_scores"] is None
        assert sample.scores["choice"].value == "I"


def test_the_summary_counts_our_record_where_choice_disagrees(reply_logs, tmp_path):
    tmp, prose, answer_is = reply_logs
    records = _records(answer_is)
    assert {r["choice_letter"] for r in records} == {"B"} and {r["parse_method"] for r in records} == {"answer_is"}
    mine = sum(r["correct"] for r in records)
    choice_correct = sum(s.scores["choice"].value == "C" for s in answer_is.samples)
    assert 0 < mine < len(records) and choice_correct == 0  # choice() wants `ANSWER: B`
    document = summarize_runs([tmp / "prose", tmp / "answer-is"], tmp_path / "summary", plot=False)
    cells = {c["model"]: c for c in document["cells"] if c["task"] == "levante_trog"}
    assert cells["answer-is"]["n_correct"] == mine and cells["answer-is"]["parse_rate"] == 1
    assert cells["prose"]["n_correct"] == 0 and cells["prose"]["parse_rate"] == 0


@pytest.fixture(scope="module")
def other_task_log(tmp_path_factory):
    """A finished log of a task that is not LEVANTE's (run by the same inspect installation)."""
    tmp = tmp_path_factory.mktemp("other")
    from inspect_ai import eval as inspect_eval

    import levante_tasks._registry  # noqa: F401 (registers levante-tiny)

    task = Task(dataset=[Sample(input="1+1?", target="2")], scorer=match(), name="arithmetic")
    (log,) = inspect_eval(task, model="levante-tiny/reply", model_args={"reply": "2"}, log_dir=str(tmp / "logs"),
                          display="none")
    assert log.status == "success", log.error
    return Path(log.location)


def test_logs_of_other_inspect_tasks_are_skipped_and_listed(reply_logs, other_task_log, tmp_path, data_dir):
    tmp, _, _ = reply_logs
    mixed = tmp_path / "mixed"
    shutil.copytree(tmp / "prose", mixed)
    shutil.copy(other_task_log, mixed / "other.eval")
    document = summarize_runs([mixed], tmp_path / "summary", plot=False)
    assert document["problems"] == [] and {c["task"] for c in document["cells"]} >= {"levante_trog"}
    (other,) = [r for r in document["runs"] if r["source"] == "mixed/other"]
    assert other["status"] == "completed"
    run_summary = json.loads((tmp_path / "summary" / "runs" / other["run_id"] / "summary.json").read_text())
    assert run_summary["tasks"] == {"arithmetic": {"status": "skipped",
                                                   "reason": "not a LEVANTE task (no metadata.levante)"}}
    assert verify_runs([mixed], data_dir, installation=False).lines == []


def test_two_identical_logs_are_one_cell_and_a_limited_log_is_refused(reply_logs, tmp_path, data_dir):
    tmp, _, _ = reply_logs
    # inspect's `created` has one-second resolution and a tie falls to the label ("again" < "prose"): the second
    # run must start at least a second after the first for "newest wins" to be decidable
    time.sleep(1.0)
    again = _run("levante_tasks/levante_trog", tmp_path / "again", data_dir,
                 **_reply("I like the second picture best.", "prose", tmp))
    document = summarize_runs([tmp / "prose", tmp_path / "again"], tmp_path / "summary", plot=False)
    (cell,) = [c for c in document["cells"] if c["task"] == "levante_trog"]
    assert cell["n_replicates"] == 1 and cell["sources"] == [f"again/{Path(again[0].location).name}"]
    assert [s["replaced_by"] for s in document["superseded"]] == cell["sources"]
    _run("levante_tasks/levante_trog", tmp_path / "limited", data_dir, limit=3,
         **_reply("I like the second picture best.", "prose", tmp))
    with pytest.raises(LevanteError, match=r"duplicate cell levante_trog .* limit.limit null vs 3"):
        summarize_runs([tmp / "prose", tmp_path / "limited"], tmp_path / "summary-2", plot=False)


def test_summary_outputs_hold_no_absolute_paths(reply_logs, tmp_path):
    tmp, log, _ = reply_logs
    assert str(tmp) in json.dumps(log.eval.model_args)  # the log itself names the local checkpoint
    summarize_runs([tmp / "prose", tmp / "answer-is"], tmp_path / "summary", plot=False)
    for path in (tmp_path / "summary").rglob("*"):
        if path.is_file() and path.suffix != ".png":
            text = path.read_text()
            assert str(tmp) not in text and str(tmp_path) not in text and os.path.expanduser("~") not in text, path


def _package_copy(tmp_path: Path) -> Path:
    root = tmp_path / "levante_tasks"
    for rel in task_mod.source_files():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PACKAGE / rel, root / rel)
    return root


@pytest.mark.parametrize("change", ["prompt template", "registry defaults", "option orders"])
def test_the_task_source_hash_covers_every_inspect_task_module(tmp_path, change):
    root = _package_copy(tmp_path)
    assert task_mod.source_sha256(root) == task_mod.source_sha256()
    if change == "prompt template":  # inspect's multiple_choice template, per locale in core.locale_text
        path = root / "core" / "locale_text.py"
        path.write_text(path.read_text().replace("Answer with one letter.", "Answer with a letter."))
    elif change == "registry defaults":
        path = root / "_registry.py"
        path.write_text(path.read_text().replace('variant: str = "original"', 'variant: str = "blank"'))
    else:  # a module the tasks reach only through imports (core.docs -> core.options)
        path = root / "core" / "options.py"
        path.write_text(path.read_text() + "\n# an edit\n")
    assert task_mod.source_sha256(root) != task_mod.source_sha256()


def test_the_inspect_task_source_hash_leaves_out_error_texts_and_other_packages(tmp_path):
    root = _package_copy(tmp_path)
    for rel in ("errors.py", "atomic.py", "__init__.py", "lmms/task.py", "lmms/patcher/engine.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PACKAGE / rel, root / rel)
    assert task_mod.source_sha256(root) == task_mod.source_sha256()
    for rel in ("errors.py", "atomic.py", "__init__.py", "lmms/task.py", "lmms/patcher/engine.py"):
        (root / rel).write_text((root / rel).read_text() + "\n# a reworded message\n")
        assert task_mod.source_sha256(root) == task_mod.source_sha256(), rel


def test_sampling_seeds_are_replicates_and_connection_settings_are_no_budget(reply_logs, tmp_path, data_dir):
    """`--seed` is a replicate key (as lmms-eval's --seed), concurrency and retries are not the generation budget,
    and request headers (API keys) never reach the outputs."""
    tmp, _, _ = reply_logs
    prose = _reply("I like the second picture best.", "prose", tmp)
    _run("levante_tasks/levante_trog", tmp_path / "seed1", data_dir, seed=1, max_connections=3, **prose)
    _run("levante_tasks/levante_trog", tmp_path / "seed2", data_dir, seed=2, max_retries=2, timeout=99,
         extra_headers={"Authorization": "Bearer sk-secret-123"}, **prose)
    document = summarize_runs([tmp_path / "seed1", tmp_path / "seed2"], tmp_path / "summary", plot=False)
    (cell,) = [c for c in document["cells"] if c["task"] == "levante_trog"]
    assert cell["n_replicates"] == 2 and cell["flags"] == [] and document["problems"] == []
    assert sorted(r["seeds"][0] for r in cell["replicates"]) == [1, 2]
    for path in (tmp_path / "summary").rglob("*"):
        assert not path.is_file() or b"sk-secret-123" not in path.read_bytes(), path


def test_a_different_generation_budget_is_still_refused(reply_logs, tmp_path, data_dir):
    tmp, _, _ = reply_logs
    _run("levante_tasks/levante_trog", tmp_path / "short", data_dir, max_tokens=5,
         **_reply("I like the second picture best.", "other-model", tmp))
    with pytest.raises(LevanteError, match=r"budget.generate_config.max_tokens"):
        summarize_runs([tmp / "prose", tmp_path / "short"], tmp_path / "summary", plot=False)


def test_credentials_in_model_args_never_reach_the_outputs(tmp_path, data_dir):
    """inspect drops `api_key` from the logged model args but keeps e.g. `hf_token`; the summary writes neither."""
    _run("levante_tasks/levante_trog", tmp_path / "logs", data_dir, model="levante-tiny/reply",
         model_args={"reply": "ANSWER: A", "hf_token": "hf_secret42", "max_new_tokens": "7"}, limit=2)
    document = summarize_runs([tmp_path / "logs"], tmp_path / "summary", plot=False)
    assert document["cells"][0]["provenance"]["model_args"] == "reply=ANSWER: A,hf_token=<redacted>,max_new_tokens=7"
    for path in (tmp_path / "summary").rglob("*"):
        assert not path.is_file() or b"hf_secret42" not in path.read_bytes(), path


def test_a_local_model_path_in_the_model_name_is_not_written_out(reply_logs, tmp_path):
    """`--model vllm//home/alice/models/qwen` (vLLM serving a local folder): rows and adapters name the folder only."""
    from inspect_ai.log import read_eval_log, write_eval_log

    tmp, log, _ = reply_logs
    changed = read_eval_log(log.location)
    changed.eval.model = "vllm//home/alice/models/qwen-vl"
    changed.eval.model_args = {}
    (tmp_path / "logs").mkdir()
    write_eval_log(changed, str(tmp_path / "logs" / "local.eval"))
    document = summarize_runs([tmp_path / "logs"], tmp_path / "summary", plot=False)
    cell = document["cells"][0]
    assert (cell["model"], cell["adapter"]) == ("qwen-vl", "inspect_ai:vllm/qwen-vl")
    for path in (tmp_path / "summary").rglob("*"):
        assert not path.is_file() or b"/home/alice" not in path.read_bytes(), path
