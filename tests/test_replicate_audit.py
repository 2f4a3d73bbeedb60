"""Per-replicate records of one model and task (several option-order seeds in one results folder) survive the audit:
`summarize`, `verify` and `rescore` keep each seed's records apart and attributed to their seed, the numbers of
lmms-eval's own table, the summary and verify agree, and a swapped seed file or a damaged replicate is still refused.
On real output: one lmms-eval run of `levante_trog_seeds` (seeds 0, 1, 2 and lmms-eval's group row) and one
inspect_ai log of `-T orders=4` (egma-math: mixed option counts, text options, sub-type columns)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from summary_runs import results_file, samples
from test_rescore import _as_parser_1, _mock_answer, _tree

from levante_tasks.cli import main
from levante_tasks.schema.records import RECORD_KEY
from levante_tasks.schema.task_source import TASKS_DIR
from levante_tasks.testing.lmms_fork import run_cli

pytest_plugins = ["inspect_helpers"]  # the data_dir fixture
SEEDS = {0: "levante_trog", 1: "levante_trog_seed1", 2: "levante_trog_seed2"}
GROUP = "levante_trog_seeds"
ORDERS = 4


@pytest.fixture(scope="module")
def lmms_seeds(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`levante_fixed letter=B` on lmms-eval's `levante_trog_seeds` group: one results file, three seeds' samples."""
    out = tmp_path_factory.mktemp("lmms-seeds") / "trog"
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data_dir), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("LEVANTE_DATA_VERSION", None)
    args = ["--model", "levante_fixed", "--model_args", "letter=B", "--tasks", GROUP, "--include_path", str(TASKS_DIR),
            "--output_path", str(out), "--log_samples", "--seed", "0,1234,1234,1234", "--verbosity", "WARNING"]
    done = run_cli(args, cwd=out.parent, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return results_file(out).parent


@pytest.fixture(scope="module")
def orders_log(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One inspect_ai log of levante_egma_math with `orders=4`, answered in varied forms by inspect's mockllm."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    folder = tmp_path_factory.mktemp("inspect-orders") / "logs"
    os.environ["LEVANTE_DATA_DIR"] = str(data_dir)
    try:
        (log,) = inspect_eval("levante_tasks/levante_egma_math", model=get_model("mockllm/model",
                              custom_outputs=_mock_answer), task_args={"orders": ORDERS}, log_dir=str(folder),
                              display="none")
    finally:
        del os.environ["LEVANTE_DATA_DIR"]
    assert log.status == "success", log.error
    return folder


def _per_seed(records: list[dict]) -> dict[int, tuple[int, int, int]]:
    """(records, correct, parsed) per seed, counted here from the records themselves."""
    out: dict[int, tuple[int, int, int]] = {}
    for seed in sorted({r["seed"] for r in records}):
        mine = [r for r in records if r["seed"] == seed]
        out[seed] = (len(mine), sum(r["correct"] for r in mine), sum(r["parse_method"] != "none" for r in mine))
    return out


def _lmms_records(folder: Path) -> list[dict]:
    return [line[RECORD_KEY] for task in SEEDS.values() for line in samples(folder, task)]


def _summarized(tmp_path: Path, *run_dirs: Path) -> dict:
    out = tmp_path / f"summary-{len(list(tmp_path.glob('summary-*')))}"
    assert main(["summarize", *map(str, run_dirs), "--out", str(out), "--no-plot"]) == 0
    return json.loads((out / "matrix.json").read_text(encoding="utf-8"))


def _replicates(document: dict, task: str) -> dict[int, tuple[int, int, int]]:
    """(n, correct, parsed) per option seed of a task column's one cell, as the summary counted them."""
    (cell,) = [c for c in document["cells"] if c["task"] == task]
    assert len({r["option_seed"] for r in cell["replicates"]}) == len(cell["replicates"]) == cell["n_replicates"]
    return {r["option_seed"]: (r["n"], r["correct"], r["parsed"]) for r in cell["replicates"]}


# ------------------------------------------------------------------ lmms-eval: three seeds of one task in one run


def test_lmms_eval_summary_and_verify_agree_on_a_three_seed_run(
    lmms_seeds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each seed is its own replicate (its leaf, its records), the cell's accuracy is the mean over the seeds and
    equals lmms-eval's group row (the seeds hold the same items), summary.md states the replicate count, and verify
    recomputes every number lmms-eval reported."""
    results = json.loads(results_file(lmms_seeds).read_text(encoding="utf-8"))
    document = _summarized(tmp_path, lmms_seeds)
    (cell,) = [c for c in document["cells"] if c["task"] == "levante_trog"]
    assert {r["option_seed"]: r["task"] for r in cell["replicates"]} == SEEDS
    counted = _per_seed(_lmms_records(lmms_seeds))
    assert _replicates(document, "levante_trog") == counted
    assert len({correct for _, correct, _ in counted.values()}) > 1  # the seeds differ: a mix-up would show
    for replicate in cell["replicates"]:
        reported = results["results"][replicate["task"]]
        assert replicate["accuracy"] == pytest.approx(reported["levante_acc,none"])
        assert replicate["n"] == results["n-samples"][replicate["task"]]["effective"]
    assert cell["accuracy"] == pytest.approx(sum(r["accuracy"] for r in cell["replicates"]) / 3)
    assert cell["accuracy"] == pytest.approx(results["results"][GROUP]["levante_acc,none"])
    text = (tmp_path / "summary-0" / "summary.md").read_text(encoding="utf-8")
    assert f"n={cell['n_items']}, parsed 100%, 3 seeds sd" in text
    assert main(["verify", str(lmms_seeds), "--skip-installation"]) == 0, capsys.readouterr().err


def test_rescore_keeps_each_seeds_records_with_their_seed(
    lmms_seeds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An older parser's record in seed 1's file only: rescore changes that seed's line alone, copies the other
    seeds' files byte for byte, and the summary of the rescored run counts every seed as the genuine run did."""
    run = tmp_path / "runs" / "trog"
    shutil.copytree(lmms_seeds, run)
    (path,) = run.glob(f"*_samples_{SEEDS[1]}.jsonl")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    line = next(x for x in lines if x["target"] == "A")  # the model said B: wrong
    _as_parser_1(line, "The answer is A cat.", "A")  # parser 1 read the article as the gold letter: correct
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    tampered = _per_seed(_lmms_records(run))
    assert tampered[1][1] == _per_seed(_lmms_records(lmms_seeds))[1][1] + 1
    out = tmp_path / "rescored"
    assert main(["rescore", str(run), "--out", str(out)]) == 0
    assert "1 changed (answer_is -> none 1)" in capsys.readouterr().out
    (change,) = json.loads((out / "rescore.json").read_text(encoding="utf-8"))["changed"]
    assert (change["seed"], change["item_uid"]) == (1, line[RECORD_KEY]["item_uid"])
    assert change["source"].endswith(f"_samples_{SEEDS[1]}.jsonl")
    mine, genuine = _tree(out / "trog"), _tree(lmms_seeds)
    assert {name for name in genuine if mine[name] != genuine[name]} == {path.name, results_file(run).name}
    assert _replicates(_summarized(tmp_path, out), "levante_trog") == {
        seed: (n, correct, parsed - (seed == 1)) for seed, (n, correct, parsed) in
        _per_seed(_lmms_records(lmms_seeds)).items()}  # the rescored line is unparsed now, and wrong as before
    assert main(["verify", str(out), "--skip-installation"]) == 0, capsys.readouterr().err


def test_a_swapped_seed_file_among_legitimate_seeds_is_refused_and_the_others_are_kept(
    lmms_seeds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed 1's samples under seed 2's name (its results row copied along): every reader names that file (rescore
    refuses the whole run); the genuine seeds 0 and 1 are still summarized, each as itself."""
    run = tmp_path / "runs" / "trog"
    shutil.copytree(lmms_seeds, run)
    (seed2,) = run.glob(f"*_samples_{SEEDS[2]}.jsonl")
    (seed1,) = run.glob(f"*_samples_{SEEDS[1]}.jsonl")
    seed2.write_bytes(seed1.read_bytes())
    data = json.loads(results_file(run).read_text(encoding="utf-8"))
    data["results"][SEEDS[2]] = {**data["results"][SEEDS[1]], "alias": data["results"][SEEDS[2]]["alias"]}
    results_file(run).write_text(json.dumps(data, indent=2), encoding="utf-8")
    line = (f"runs/trog/{seed2.name}: its name ({SEEDS[2]}) says task trog, seed 2 (generate_until, original images), "
            "but line 1 holds a record of task trog, seed 1 (generate_until, original images): another task's or "
            "seed's records (a swapped or renamed file?); the file is not read")
    assert main(["verify", str(tmp_path / "runs"), "--skip-installation"]) == 1
    assert capsys.readouterr().err.splitlines() == [f"levante-tasks: mismatch: {line}"]
    assert main(["rescore", str(tmp_path / "runs"), "--out", str(tmp_path / "rescored")]) == 2  # its one run
    assert capsys.readouterr().err.splitlines()[0] == f"levante-tasks: error: {line}"
    assert not (tmp_path / "rescored").exists()
    assert main(["summarize", str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--no-plot"]) == 1
    assert capsys.readouterr().err.splitlines() == [f"levante-tasks: error: {line}"]
    document = json.loads((tmp_path / "out" / "matrix.json").read_text(encoding="utf-8"))
    genuine = _per_seed(_lmms_records(lmms_seeds))
    assert _replicates(document, "levante_trog") == {seed: genuine[seed] for seed in (0, 1)}


# ------------------------------------------------------------------ inspect_ai: one log of -T orders=4


def _log_records(folder: Path) -> list[dict]:
    from inspect_ai.log import read_eval_log

    (path,) = folder.glob("*.eval")
    return [s.scores["levante_record"].metadata[RECORD_KEY] for s in read_eval_log(str(path)).samples]


def test_an_orders_log_is_one_replicate_per_seed_through_summarize_verify_and_rescore(
    orders_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The summary splits the log by seed (the task column and each sub-type column: K replicates, each seed's
    counts as counted here; the cell's accuracy is inspect's reported levante_record accuracy); an older parser's
    record under seed 2 is rescored as seed 2's, and the rescored log summarizes to the genuine per-seed counts;
    verify passes before and after."""
    from inspect_ai.log import read_eval_log, write_eval_log

    records = _log_records(orders_log)
    counted = _per_seed(records)
    assert sorted(counted) == list(range(ORDERS)) and len({n for n, _, _ in counted.values()}) == 1
    assert main(["verify", str(orders_log), "--skip-installation"]) == 0, capsys.readouterr().err
    document = _summarized(tmp_path, orders_log)
    assert _replicates(document, "levante_egma_math") == counted
    (cell,) = [c for c in document["cells"] if c["task"] == "levante_egma_math"]
    assert [r["task"] for r in cell["replicates"]] == ["levante_egma_math", *(f"levante_egma_math_seed{k}"
                                                                             for k in range(1, ORDERS))]
    reported = next(m for m in read_eval_log(str(next(orders_log.glob("*.eval")))).results.scores
                    if m.name == "levante_record").metrics["accuracy"].value
    assert cell["accuracy"] == pytest.approx(reported)  # the seeds hold the same items: mean over seeds = pooled
    subtypes = [c for c in document["cells"] if c["parent"] == "levante_egma_math"]
    assert subtypes and all(c["n_replicates"] == ORDERS for c in subtypes)
    assert sum(r["n"] for c in subtypes for r in c["replicates"]) == len(records)

    (path,) = orders_log.glob("*.eval")
    log = read_eval_log(str(path))
    sample = next(s for s in log.samples if s.metadata["seed"] == 2 and s.output.completion == "The answer is A cat.")
    record = sample.scores["levante_record"].metadata[RECORD_KEY]
    index = record["presented_order"][0]
    record.update(choice_letter="A", choice_index=index, correct=int(index == 0), parse_method="answer_is",
                  parse_confidence=0.9, parser_version="1")
    older = tmp_path / "older"
    older.mkdir()
    write_eval_log(log, str(older / path.name))
    out = tmp_path / "rescored"
    assert main(["rescore", str(older), "--out", str(out)]) == 0
    assert "1 changed (answer_is -> none 1)" in capsys.readouterr().out
    (change,) = json.loads((out / "rescore.json").read_text(encoding="utf-8"))["changed"]
    assert (change["seed"], change["item_uid"]) == (2, record["item_uid"])
    assert _log_records(out / "older") == records
    assert _replicates(_summarized(tmp_path, out), "levante_egma_math") == counted
    assert main(["verify", str(out), "--skip-installation"]) == 0, capsys.readouterr().err


def _drop_seed3_of_first_item(log) -> str:
    """Drop one replicate of one item; the line the readers give (after the file's name)."""
    first = log.samples[0].metadata["item_uid"]
    log.samples = [s for s in log.samples if (s.metadata["item_uid"], s.metadata["seed"]) != (first, 3)]
    return "orders 4: the replicates do not hold the same items (seed 3 lacks 1 of"


def _first_record_moved_to(seed: int):
    """Give the first sample's record (item x, seed 0) another seed; the line the readers give."""
    def change(log) -> str:
        first = log.samples[0]
        first.scores["levante_record"].metadata[RECORD_KEY]["seed"] = seed
        if seed < ORDERS:  # the item's sample of that seed follows: now the item occurs twice under it
            uid = first.metadata["item_uid"]
            return f"sample {log.samples[seed].id!r}: item {uid!r} occurs twice under seed {seed}"
        return ("its metadata.levante (levante_egma_math, orders 4) says task egma-math, seeds 0-3 (generate_until, "
                f"original images), but sample {first.id!r} holds a record of task egma-math, seed {seed}")
    return change


def _blank_images(log) -> str:
    """Say (metadata and records alike) the log ran blank images: a variant with no seeds past 2 (an inspect task
    refuses `-T orders=4 -T variant=blank`; a log written before it did must be one line, not a traceback)."""
    log.eval.metadata["levante"]["variant"] = "blank"
    for sample in log.samples:
        sample.scores["levante_record"].metadata[RECORD_KEY]["variant"] = "blank"
    return "metadata.levante orders 4 of levante_egma_math_blank: option-order seed 3: seeds 3..31 (order replicates)"


DAMAGE = {"replicate dropped": _drop_seed3_of_first_item, "seed outside the orders": _first_record_moved_to(7),
          "seed of another replicate": _first_record_moved_to(1), "orders of an image control": _blank_images}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_replicate_is_one_line_from_every_reader(
    orders_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    """A replicate dropped from an item, a record moved to a seed the log did not ask, or to another of its seeds:
    summarize, verify and rescore each give the same one line naming the log, and write nothing of it."""
    from inspect_ai.log import read_eval_log, write_eval_log

    (path,) = orders_log.glob("*.eval")
    log = read_eval_log(str(path))
    expected = DAMAGE[damage](log)
    folder = tmp_path / "damaged"
    folder.mkdir()
    write_eval_log(log, str(folder / path.name))
    assert main(["verify", str(folder), "--skip-installation"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"levante-tasks: mismatch: damaged/{path.name}: {expected}"), line
    for command in ("summarize", "rescore"):
        assert main([command, str(folder), "--out", str(tmp_path / command)]) == 2
        assert capsys.readouterr().err.splitlines()[0] == line.replace("mismatch", "error"), command
        assert not (tmp_path / command).exists()
