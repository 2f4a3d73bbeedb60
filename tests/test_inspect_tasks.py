"""The LEVANTE tasks through inspect_ai: the entry point, the Samples (our balanced order, labelled pictures), and
real `inspect_ai.eval` runs with the offline `levante-tiny/clip` model API, checked against lmms-eval's
`levante_clip` on the same tiny CLIP, then summarized together; damaged logs are one line."""

from __future__ import annotations

import json
import math
import os
import shutil
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from inspect_ai.model import ContentImage, ContentText

from levante_tasks.core.options import gold_positions, presented_order
from levante_tasks.errors import LevanteError
from levante_tasks.schema import task_source
from levante_tasks.schema.records import RECORD_KEY
from levante_tasks.schema.tasks import TASKS
from levante_tasks.summary import summarize_runs, verify_runs
from levante_tasks.testing.fixture_data import decode_colour
from levante_tasks.testing.inspect_model import decode_image
from levante_tasks.testing.lmms_fork import run_cli

TASKS_DIR = task_source.TASKS_DIR
# Every catalogue task at option-order seed 1 (trog first: the tests below reuse its log).
COMPARED = ("levante_trog", *sorted(info.lmms_name for info in TASKS if info.lmms_name != "levante_trog"))
pytest_plugins = ["inspect_helpers"]  # the data_dir and fixture_env fixtures


def _registry():
    (entry,) = [e for e in entry_points(group="inspect_ai") if e.name == "levante_tasks"]
    return entry.load()


def test_entry_point_registers_one_task_per_catalogue_task():
    from inspect_ai._util.registry import registry_info

    module = _registry()
    assert module.__name__ == "levante_tasks._registry"
    assert sorted(module.TASK_FUNCTIONS) == sorted(info.lmms_name for info in TASKS)
    names = {registry_info(fn).name for fn in module.TASK_FUNCTIONS.values()}
    assert names == {f"levante_tasks/{info.lmms_name}" for info in TASKS}


def test_each_inspect_task_carries_its_catalogue_task_version(fixture_env):
    """inspect's own Task version and the recorded provenance are the catalogue's `TaskInfo.version`."""
    module = _registry()
    for info in TASKS:
        task = module.TASK_FUNCTIONS[info.lmms_name]()
        assert task.version == info.version, info.name
        assert task.metadata["levante"]["provenance"]["task_version"] == info.version, info.name


@pytest.mark.parametrize("seed", [0, 1])
def test_samples_show_our_balanced_order_and_labelled_pictures(fixture_env, seed):
    task = _registry().levante_matrix_reasoning(seed=seed)
    samples = list(task.dataset)
    positions = gold_positions([(s.id, len(s.choices)) for s in samples], seed)
    assert len(set(positions.values())) == 4  # the gold letter moves over the items
    for sample in samples:
        n, meta = len(sample.choices), sample.metadata
        gold = positions[sample.id]
        assert sample.target == "ABCD"[gold] and meta["presented_order"] == presented_order(n, gold, seed)
        assert sample.choices == [f"<image {k}>" for k in range(2, n + 2)]  # the context picture is <image 1>
        (message,) = sample.input
        text, *images = message.content
        assert isinstance(text, ContentText) and all(isinstance(i, ContentImage) for i in images)
        assert "Answer with" not in text.text and text.text.startswith("<image 1> ")
        names = ", ".join(f"<image {k}>" for k in range(1, n + 2))
        assert text.text.endswith(f"(Pictures attached in this order: {names}.)")
        colours = [decode_colour(decode_image(i.image)) for i in images]
        assert colours == [-1, *meta["presented_order"]]  # picture K shows canonical option presented_order[K-1]
    assert task.metadata["levante"]["seed"] == seed


def test_orders_asks_each_item_under_a_latin_block_of_option_orders(fixture_env):
    """`-T orders=4` on matrix-reasoning (4 options): each item 4 times in a row, under the docs builder's order of
    seeds 0..3 (distinct ids, seed and presented order in the metadata, the seed in the message's item reference),
    so each option is shown at each position once."""
    from levante_tasks.core import docs
    from levante_tasks.inspect.samples import ITEM_KEY

    task = _registry().levante_matrix_reasoning(orders=4)
    samples = list(task.dataset)
    built = {seed: {d["item_uid"]: d for d in docs.task_docs("matrix-reasoning", seed=seed, variant="original",
                                                            choice_only=True)} for seed in range(4)}
    assert task.metadata["levante"]["orders"] == 4 and task.metadata["levante"]["seed"] == 0
    assert len(samples) == 4 * len(built[0]) and len({s.id for s in samples}) == len(samples)
    orders: dict[str, list[list[int]]] = {}
    for k, sample in enumerate(samples):
        meta = sample.metadata
        assert meta["seed"] == k % 4 and sample.id == f"{meta['item_uid']}@seed{meta['seed']}"
        doc = built[meta["seed"]][meta["item_uid"]]
        assert meta["presented_order"] == doc["presented_order"] and sample.target == doc["target_letter"]
        assert sample.input[0].metadata[ITEM_KEY] == {"task": "matrix-reasoning", "seed": meta["seed"],
                                                      "variant": "original", "item_uid": meta["item_uid"]}
        orders.setdefault(meta["item_uid"], []).append(meta["presented_order"])
    assert len(orders) == len(built[0]) >= 4
    for uid, shown in orders.items():
        assert len(shown) == 4 and all(sorted(o[p] for o in shown) == [0, 1, 2, 3] for p in range(4)), uid


def test_orders_records_each_replicates_order_and_parsed_choice(data_dir, tmp_path):
    """A real inspect run with `orders=4` (a model that always answers `ANSWER: B`): one record per item and seed,
    each with its replicate's seed and presented order and the choice parsed in it; the summary counts 4
    replicates of the item set, and verify passes."""
    from inspect_ai import eval as inspect_eval

    import levante_tasks._registry  # noqa: F401 (registers levante-tiny)

    os.environ["LEVANTE_DATA_DIR"] = str(data_dir)
    try:
        (log,) = inspect_eval("levante_tasks/levante_matrix_reasoning", model="levante-tiny/reply",
                              model_args={"reply": "ANSWER: B"}, task_args={"orders": 4},
                              log_dir=str(tmp_path / "logs"), display="none")
    finally:
        del os.environ["LEVANTE_DATA_DIR"]
    assert log.status == "success", log.error
    records = {s.id: s.scores["levante_record"].metadata[RECORD_KEY] for s in log.samples}
    for sample in log.samples:
        record = records[sample.id]
        assert (record["item_uid"], record["seed"]) == (sample.metadata["item_uid"], sample.metadata["seed"])
        assert record["presented_order"] == sample.metadata["presented_order"]
        assert record["choice_letter"] == "B" and record["choice_index"] == record["presented_order"][1]
        assert record["correct"] == int(record["presented_order"][1] == 0)
    per_seed = {seed: sorted(r["item_uid"] for r in records.values() if r["seed"] == seed) for seed in range(4)}
    assert len(records) == 4 * len(per_seed[0]) and all(uids == per_seed[0] for uids in per_seed.values())
    document = summarize_runs([tmp_path / "logs"], tmp_path / "summary", plot=False)
    (cell,) = document["cells"]
    assert cell["n_replicates"] == 4 and cell["provenance"]["option_seeds"] == [0, 1, 2, 3]
    assert [(r["option_seed"], r["n"], r["correct"]) for r in cell["replicates"]] == [
        (seed, len(per_seed[seed]), sum(r["correct"] for r in records.values() if r["seed"] == seed))
        for seed in range(4)]
    (run_summary,) = (tmp_path / "summary" / "runs").glob("*/summary.json")
    run = json.loads(run_summary.read_text(encoding="utf-8"))
    assert run["protocol"]["seeds"] == [0, 1, 2, 3] and [t["orders"] for t in run["tasks"].values()] == [4]
    assert verify_runs([tmp_path / "logs"], data_dir, installation=False).lines == []


def test_text_options_are_the_choices_and_slider_items_are_left_out(fixture_env, data_dir):
    samples = list(_registry().levante_egma_math().dataset)
    assert samples and all(s.metadata["response_format"] == "choice" for s in samples)
    for sample in samples:
        meta = sample.metadata
        if meta["option_kind"] == "text":
            assert sample.choices == [meta["options"][i] for i in meta["presented_order"]]


def test_every_task_builds_samples_whose_only_option_listing_is_the_solvers(fixture_env):
    module = _registry()
    for info in TASKS:
        samples = list(module.TASK_FUNCTIONS[info.lmms_name](variant="blank").dataset)
        assert samples, info.name
        for sample in samples:
            text = sample.input[0].content[0].text
            assert "Answer with" not in text and "<option" not in text, (info.name, text)
            assert sample.metadata["variant"] == "blank" and sample.target in "ABCDEFGH"


def _inspect_run(log_dir: Path, clip: Path, data_dir: Path) -> list:
    """`inspect_ai.eval` of the compared tasks (seed 1) with levante-tiny/clip, offline."""
    from inspect_ai import eval as inspect_eval

    import levante_tasks._registry  # noqa: F401 (registers levante-tiny)

    old = os.environ.get("LEVANTE_DATA_DIR")
    os.environ["LEVANTE_DATA_DIR"] = str(data_dir)
    try:
        logs = inspect_eval([f"levante_tasks/{t}" for t in COMPARED], model="levante-tiny/clip",
                            model_args={"pretrained": str(clip)}, task_args={"seed": 1}, log_dir=str(log_dir),
                            display="none")
    finally:
        os.environ.pop("LEVANTE_DATA_DIR") if old is None else os.environ.__setitem__("LEVANTE_DATA_DIR", old)
    assert [log.status for log in logs] == ["success"] * len(COMPARED), [log.error for log in logs]
    return logs


def _lmms_run(out: Path, clip: Path, data_dir: Path) -> Path:
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data_dir), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    args = ["--model", "levante_clip", "--model_args", f"pretrained={clip}", "--tasks",
            ",".join(f"{t}_seed1" for t in COMPARED), "--include_path", str(TASKS_DIR), "--output_path", str(out),
            "--batch_size", "8", "--log_samples", "--verbosity", "WARNING"]
    proc = run_cli(args, cwd=out.parent, env=env, timeout=600, entry="lmms_eval")
    results = sorted(out.rglob("*_results.json"))
    assert proc.returncode == 0 and results, proc.stdout[-2000:] + proc.stderr[-3000:]
    return results[-1].parent


@pytest.fixture(scope="module")
def runs(tmp_path_factory, data_dir, tiny_checkpoint):
    """One inspect run and one lmms-eval run of the same tiny CLIP on the same tasks and seed."""
    tmp = tmp_path_factory.mktemp("harnesses")
    clip = tiny_checkpoint("clip")
    logs = _inspect_run(tmp / "inspect-logs", clip, data_dir)
    lmms = _lmms_run(tmp / "lmms-out", clip, data_dir)
    return tmp, logs, lmms


def _lmms_records(folder: Path, task: str) -> dict[str, dict]:
    """lmms-eval's choice records of a task (egma-math's slider records left out, as inspect leaves them out)."""
    (path,) = folder.glob(f"*_samples_{task}.jsonl")
    records = [json.loads(line)[RECORD_KEY] for line in path.read_text().splitlines()]
    return {r["item_uid"]: r for r in records if "response_position" not in r}


def test_inspect_logs_hold_records_identical_to_lmms_eval(runs):
    _, logs, lmms = runs
    for task, log in zip(COMPARED, logs, strict=True):
        assert Path(log.location).suffix == ".eval" and log.eval.task == f"levante_tasks/{task}"
        mine = {s.id: s.scores["levante_record"].metadata[RECORD_KEY] for s in log.samples}
        theirs = _lmms_records(lmms, f"{task}_seed1")
        assert sorted(mine) == sorted(theirs) and len(mine) >= 4
        assert len({r["choice_letter"] for r in mine.values()}) > 1  # not one letter throughout
        for uid, record in mine.items():
            other = theirs[uid]
            assert record["seed"] == 1 and record["parse_method"] == "scores"
            for key in ("presented_order", "choice_letter", "choice_index", "correct", "option_scores_kind"):
                assert record[key] == other[key], (task, uid, key)
            assert record["option_scores"] == pytest.approx(other["option_scores"], abs=1e-5)  # 6 decimals, batch noise
        for sample in log.samples:  # inspect's own solver and scorer saw the same letter
            assert sample.scores["choice"].answer == mine[sample.id]["choice_letter"]


def test_summary_reads_both_harnesses_into_one_matrix(runs):
    tmp, logs, lmms = runs
    document = summarize_runs([tmp / "inspect-logs", lmms.parent], tmp / "summary", plot=False)
    assert document["problems"] == []
    cells = [c for c in document["cells"] if c["task"] in COMPARED]
    by_harness = {(c["harness"], c["task"]): c for c in cells}
    assert sorted(by_harness) == sorted((h, t) for h in ("inspect_ai", "lmms-eval") for t in COMPARED)
    for task in COMPARED:
        mine, theirs = by_harness[("inspect_ai", task)], by_harness[("lmms-eval", task)]
        assert mine["model"] == theirs["model"] == "tiny-clip"
        assert (mine["adapter"], theirs["adapter"]) == ("inspect_ai:levante-tiny/clip", "levante_clip")
        if task != "levante_egma_math":  # lmms-eval's generate_until egma-math has slider items too
            assert mine["n_items"] == theirs["n_items"] and mine["accuracy"] == theirs["accuracy"]
        assert mine["n_replicates"] == 1 and mine["provenance"]["option_seeds"] == [1]
        assert mine["provenance"]["lmms_eval_version"] == "n/a" and mine["provenance"]["inspect_ai_version"] != ""
        info = next(i for i in TASKS if i.lmms_name == task)
        assert mine["provenance"]["task_version"] == theirs["provenance"]["task_version"] == info.version
    header = (tmp / "summary" / "matrix.csv").read_text().splitlines()[0].split(",")
    assert header[:4] == ["model", "revision", "adapter", "harness"]
    assert str(tmp) not in (tmp / "summary" / "matrix.json").read_text()


def test_verify_recomputes_inspect_logs(runs, data_dir):
    tmp, _, _ = runs
    report = verify_runs([tmp / "inspect-logs"], data_dir, installation=False)
    assert (report.runs, report.lines) == (len(COMPARED), [])
    report = verify_runs([tmp / "inspect-logs"], data_dir, installation=True)
    assert [line.split(": ", 2)[1] for line in report.lines if "inspect-logs/" in line] == [
        "dataset_fingerprint"] * len(COMPARED)  # the fixture's dataset.json records none


@pytest.mark.parametrize("damage", ["truncated", "not a zip"])
def test_a_damaged_eval_log_is_one_line_naming_it(runs, tmp_path, damage):
    _, logs, _ = runs
    bad = tmp_path / "bad"
    bad.mkdir()
    data = Path(logs[0].location).read_bytes()
    (bad / "run.eval").write_bytes(data[: len(data) // 2] if damage == "truncated" else b"hello")
    with pytest.raises(LevanteError) as caught:
        summarize_runs([bad], tmp_path / "summary", plot=False)
    first, rest = str(caught.value).split("\n", 1)
    assert first.startswith("bad/run.eval: not a readable inspect_ai .eval log (") and "\n" not in rest
    assert not (tmp_path / "summary").exists()


def test_cli_summarize_exits_non_zero_on_a_damaged_log_and_keeps_the_rest(runs, tmp_path):
    tmp, logs, _ = runs
    mixed = tmp_path / "mixed"
    shutil.copytree(tmp / "inspect-logs", mixed)
    (mixed / "broken.eval").write_bytes(b"PK\x03\x04 not really")
    proc = run_cli(["summarize", str(mixed), "--out", str(tmp_path / "out"), "--no-plot"], cwd=tmp_path,
                   env=dict(os.environ), timeout=300, entry="levante_tasks")  # `python -m levante_tasks`, forked
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("levante-tasks: error:")]
    assert len(errors) == 1 and "mixed/broken.eval: not a readable inspect_ai .eval log" in errors[0]
    cells = json.loads((tmp_path / "out" / "matrix.json").read_text())["cells"]
    assert {c["task"] for c in cells if not c["parent"]} == set(COMPARED)


def _rewritten(log_path: str, folder: Path, change) -> Path:
    """A copy of a log with `change(log)` applied, written as `.eval` into `folder`."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(log_path)
    change(log)
    folder.mkdir()
    target = folder / "changed.eval"
    write_eval_log(log, str(target))
    return target


def test_an_unfinished_run_is_one_line(runs, tmp_path):
    _, logs, _ = runs
    _rewritten(logs[0].location, tmp_path / "unfinished", lambda log: setattr(log, "status", "error"))
    with pytest.raises(LevanteError) as caught:
        summarize_runs([tmp_path / "unfinished"], tmp_path / "summary", plot=False)
    assert str(caught.value).split("\n")[0] == ("unfinished/changed.eval: the inspect_ai run did not finish "
                                                "(status error)")


def test_verify_reports_an_accuracy_that_disagrees_with_the_records(runs, tmp_path, data_dir):
    _, logs, _ = runs

    def tamper(log):
        (metric,) = [s for s in log.results.scores if s.name == "levante_record"]
        metric.metrics["accuracy"].value = 0.123

    _rewritten(logs[0].location, tmp_path / "tampered", tamper)
    report = verify_runs([tmp_path / "tampered"], data_dir, installation=False)
    assert len(report.lines) == 1
    assert report.lines[0].startswith("tampered/changed.eval: levante_record/accuracy 0.123 disagrees with its records")


def test_tiny_vlm_scores_the_letters_and_egma_math_gets_its_subtype_columns(tmp_path, data_dir, tiny_checkpoint):
    from inspect_ai import eval as inspect_eval

    import levante_tasks._registry  # noqa: F401 (registers levante-tiny)

    vlm = tiny_checkpoint("idefics3")
    os.environ["LEVANTE_DATA_DIR"] = str(data_dir)
    try:
        (log,) = inspect_eval("levante_tasks/levante_egma_math", model="levante-tiny/vlm",
                              model_args={"pretrained": str(vlm)}, log_dir=str(tmp_path / "logs"), display="none")
    finally:
        del os.environ["LEVANTE_DATA_DIR"]
    assert log.status == "success", log.error
    records = [s.scores["levante_record"].metadata[RECORD_KEY] for s in log.samples]
    for sample, record in zip(log.samples, records, strict=True):
        scores = record["option_scores"]
        assert record["parse_method"] == "scores" and sum(math.exp(s) for s in scores) == pytest.approx(1, abs=1e-4)
        assert record["choice_index"] == max(range(len(scores)), key=scores.__getitem__)
        assert json.loads(sample.output.metadata["levante_answer"])["scorer"] == "levante_vlm_mc"
    assert "Number Line Slider" not in {r["trial_type"] for r in records}  # the fixture has slider items
    document = summarize_runs([tmp_path / "logs"], tmp_path / "summary", plot=False)
    columns = {c["task"] for c in document["cells"]}
    assert "levante_egma_math" in columns and "levante_egma_math/addition" in columns
    assert {c["adapter"] for c in document["cells"]} == {"inspect_ai:levante-tiny/vlm"}


def test_the_hf_provider_rejects_pictures_as_docs_inspect_md_says():
    from inspect_ai.model import ChatMessageUser
    from inspect_ai.model._providers.hf import message_content_to_string

    text_only = [ChatMessageUser(content=[ContentText(text="Which one?")])]
    assert message_content_to_string(text_only)[0].content == "Which one?"
    with pytest.raises(NotImplementedError, match="does not support multimodal content"):
        message_content_to_string([ChatMessageUser(content=[ContentText(text="Which one?"),
                                                            ContentImage(image="data:image/png;base64,AA==")])])


def test_the_inspect_cli_runs_a_task_by_its_registry_name(runs, data_dir, tmp_path, tiny_checkpoint):
    """`inspect eval levante_tasks/levante_trog` as a user types it (`python -m inspect_ai`, the `inspect` console
    script's code, in a fork of a server that imported lmms-eval: `lmms_fork`; the README test runs the console
    script itself): the log holds our records, the same answers as the `inspect_ai.eval` run."""
    tmp, logs, _ = runs
    args = ["eval", "levante_tasks/levante_trog", "--model", "levante-tiny/clip", "-M",
            f"pretrained={tiny_checkpoint('clip')}", "-T", "seed=1", "--log-dir", str(tmp_path / "logs"),
            "--display", "none"]
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    proc = run_cli(args, cwd=tmp_path, env=env, timeout=600, entry="inspect")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    from inspect_ai.log import read_eval_log

    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success" and log.eval.task == "levante_tasks/levante_trog"
    mine = {s.id: s.scores["levante_record"].metadata[RECORD_KEY]["choice_letter"] for s in log.samples}
    before = {s.id: s.scores["levante_record"].metadata[RECORD_KEY]["choice_letter"] for s in logs[0].samples}
    assert mine == before and len(mine) >= 6


def test_inspect_tasks_decode_as_the_lmms_eval_tasks(fixture_env, tmp_path):
    """The generate_until template's generation_kwargs reach an inspect model as its GenerateConfig."""
    import yaml
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import GenerateConfig, ModelAPI, ModelOutput, modelapi

    seen: list[GenerateConfig] = []

    class ConfigProbe(ModelAPI):
        async def generate(self, input, tools, tool_choice, config):  # noqa: A002 (inspect's signature)
            seen.append(config)
            return ModelOutput.from_content(model="probe", content="ANSWER: A")

    modelapi(name="levante-config-probe")(lambda: ConfigProbe)
    template = (TASKS_DIR / "_levante_generate_until_template_yaml").read_text(encoding="utf-8")
    wanted = yaml.safe_load(next(line for line in template.splitlines() if line.startswith("generation_kwargs")))
    wanted = wanted["generation_kwargs"]
    (log,) = inspect_eval("levante_tasks/levante_trog", model="levante-config-probe/x", limit=2,
                          log_dir=str(tmp_path), display="none")
    assert log.status == "success" and len(seen) == 2, log.error
    assert wanted["do_sample"] is False
    for config in seen:
        assert config.temperature == 0.0
        assert config.max_tokens == wanted["max_new_tokens"] == 128
        assert config.stop_seqs == wanted["until"]
