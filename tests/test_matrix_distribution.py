"""The matrix's distribution mode (`distribution:` per model, docs/matrix.md *Response distributions*): config
validation, the cells it plans (replicate orders x temperature samples, each its own hash), their lmms-eval argv,
the refusals of `orders: auto`, and existing configs planning the very same cells as before."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from data_helpers import prepared_release
from faults import one_error_line, run_cli

from levante_tasks.errors import LevanteError
from levante_tasks.matrix import run as matrix_run
from levante_tasks.matrix.config import load_config
from levante_tasks.matrix.plan import Cell, cell_argv, config_argv, dataset_key, plan, runs_list
from levante_tasks.matrix.run import MatrixRun
from levante_tasks.schema.locales import LOCALES
from levante_tasks.schema.tasks import TASKS
from levante_tasks.testing.fake_openai import serve
from levante_tasks.testing.processor_spy import read_log

ROOT = Path(__file__).resolve().parent.parent
DATA = {"dir": Path("data"), "version": "2026-03-24",
        "fingerprints": {dataset_key(t.name, lc): f"fp-{t.name}-{lc.code}" for t in TASKS for lc in LOCALES}}
SOFTWARE = {"lmms_eval": {"version": "0.7.2", "patched": True}, "levante_tasks": "0.0.0"}
# examples/matrix.yaml's cell ids under DATA and SOFTWARE, as planned before distribution mode existed
EXAMPLE_CELL_IDS = [
    "clip-b32__levante__s0__86aa19b7b063", "clip-b32__levante__s1__378d2eb44a22",
    "clip-b32__levante__s2__bbcbe2831451", "siglip-b16__levante__s0__86c0219feeee",
    "siglip-b16__levante__s1__43f92f0f4727", "siglip-b16__levante__s2__97995347844d",
    "smolvlm-256m__levante__s0__7606ebc602c0", "smolvlm-256m__levante__s1__a830405d7611",
    "smolvlm-256m__levante__s2__ba2df7b29735",
]


FORKED_LMMS_EVAL = "levante_tasks.testing.forked_lmms_eval"  # `python -m lmms_eval`, forked (fork_stream)


def write_config(folder: Path, **overrides: Any) -> Path:
    """matrix.yaml: a chat model `api` (given `distribution` through overrides) and a greedy `other` on
    levante_trog, each in its own group."""
    config = {"models": [{"name": "api", "model": "openai", "model_args": "model_version=fake"},
                         {"name": "other", "model": "levante_fixed", "model_args": "letter=B"}],
              "groups": {"chat": ["api"], "doubles": ["other"]}, "tasks": ["levante_trog"], "limit": 4, **overrides}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "matrix.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in config.items() if v is not None}), encoding="utf-8")
    return path


def with_distribution(distribution: Any, **model: Any) -> list[dict[str, Any]]:
    """The two models, `api` with `distribution` (and any other model keys)."""
    return [{"name": "api", "model": "openai", "model_args": "model_version=fake", "distribution": distribution,
             **model}, {"name": "other", "model": "levante_fixed", "model_args": "letter=B"}]


def test_an_existing_config_plans_the_same_cells_as_before() -> None:
    cells = plan(load_config(ROOT / "examples" / "matrix.yaml"), DATA, SOFTWARE)
    assert [c.cell_id for c in cells] == EXAMPLE_CELL_IDS
    assert all(c.sample is None and "generation" not in c.spec for c in cells)


def test_greedy_orders_are_the_seed_cells_of_a_plain_config(tmp_path: Path) -> None:
    """`distribution: {orders: 3}` plans seeds 0..2 of every task, the very cells (same hashes) `seeds: [0, 1, 2]`
    plans; the other model keeps the config's seeds."""
    plain = plan(load_config(write_config(tmp_path / "plain", seeds=[0, 1, 2])), DATA, SOFTWARE)
    orders = plan(load_config(write_config(tmp_path / "orders", models=with_distribution({"orders": 3}))), DATA,
                  SOFTWARE)
    assert [(c.model.name, c.seed) for c in orders] == [("api", 0), ("api", 1), ("api", 2), ("other", 0)]
    assert [c.cell_id for c in orders[:3]] == [c.cell_id for c in plain[:3]]
    assert [c.lmms_task for c in orders[:3]] == ["levante_trog", "levante_trog_seed1", "levante_trog_seed2"]


def test_temperature_samples_are_cells_of_their_own(tmp_path: Path) -> None:
    """orders x samples cells, each with its own hash and folder, lmms-eval seeds shifted per sample, and the
    temperature through --gen_kwargs (also in the one process of the model's cells)."""
    config = load_config(write_config(tmp_path, models=with_distribution(
        {"orders": 2, "samples": 2, "temperature": 0.7})))
    cells = [c for c in plan(config, DATA, SOFTWARE) if c.model.name == "api"]
    assert [(c.seed, c.sample) for c in cells] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert len({c.sha256 for c in cells}) == 4 and len({c.cell_id for c in cells}) == 4
    assert [c.cell_id.split("__")[2] for c in cells] == ["s0n0", "s0n1", "s1n0", "s1n1"]
    assert [c.spec["lmms_seed"].split(",")[0] for c in cells] == ["0", "1000", "1", "1001"]
    assert [c.spec["generation"]["sample"] for c in cells] == [0, 1, 0, 1]
    argv = cell_argv(config, cells[1], 1, tmp_path / "out")
    assert argv[argv.index("--gen_kwargs") + 1] == "temperature=0.7,do_sample=True"
    assert argv[argv.index("--seed") + 1] == "1000,2234,2234,2234"
    runs = runs_list(config, cells, [tmp_path / f"out{i}" for i in range(4)])
    assert [run["seed"][0] for run in runs] == [0, 1000, 1, 1001]
    whole = config_argv(config, cells[0], 1, tmp_path / "runs.yaml")
    assert whole.count("--gen_kwargs") == 1 and "--seed" not in whole
    other = load_config(write_config(tmp_path, models=with_distribution(
        {"orders": 2, "samples": 2, "temperature": 0.9})))
    assert not {c.sha256 for c in plan(other, DATA, SOFTWARE)} & {c.sha256 for c in cells}  # temperature is hashed


@pytest.mark.parametrize(("distribution", "message"), [
    ({"orders": 1}, "models[0].distribution.orders: must be an integer from 2 to 32, not 1"),
    ({"orders": 33}, "models[0].distribution.orders: must be an integer from 2 to 32, not 33"),
    ({"orders": "many"}, "models[0].distribution.orders: must be an integer from 2 to 32 or auto, not 'many'"),
    ({"orders": True}, "models[0].distribution.orders: must be an integer from 2 to 32"),
    ({}, "models[0].distribution.orders: missing"),
    ([4], "models[0].distribution: must be a mapping"),
    ({"orders": 4, "runs": 2}, "models[0].distribution.runs: unknown key"),
    ({"orders": 4, "tolerance": 0.1}, "models[0].distribution.tolerance: only with orders: auto"),
    ({"orders": 4, "max_orders": 8}, "models[0].distribution.max_orders: only with orders: auto"),
    ({"orders": "auto", "tolerance": 0}, "models[0].distribution.tolerance: must be a number > 0 and < 1, not 0"),
    ({"orders": "auto", "tolerance": "small"}, "models[0].distribution.tolerance: must be a number > 0"),
    ({"orders": "auto", "max_orders": 64}, "models[0].distribution.max_orders: must be an integer from 2 to 32"),
    ({"orders": 4, "samples": 0}, "models[0].distribution.samples: must be an integer >= 1"),
    ({"orders": 4, "samples": 3}, "models[0].distribution.samples: 3 samples per order need a temperature > 0"),
    ({"orders": 4, "temperature": 0}, "models[0].distribution.temperature: must be a number > 0, not 0"),
    ({"orders": 4, "temperature": -1}, "models[0].distribution.temperature: must be a number > 0"),
])
def test_each_bad_value_is_one_line_naming_the_file_and_the_key(distribution: Any, message: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(tmp_path, models=with_distribution(distribution))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LevanteError) as caught:
        load_config(Path("matrix.yaml"))
    assert str(caught.value).startswith(f"matrix.yaml: {message}"), str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("overrides", "message"), [
    ({"models": with_distribution({"orders": "auto"})},
     "matrix.yaml: models[0].distribution.orders: auto needs a compare: section"),
    ({"models": with_distribution({"orders": 2, "temperature": 0.7}), "extra_args": ["--gen_kwargs", "top_p=0.9"]},
     "matrix.yaml: models[0].distribution.temperature: the runner sets --gen_kwargs for it"),
    ({"models": with_distribution({"orders": 2, "temperature": 0.7}), "groups": None},
     "matrix.yaml: models[0].distribution.temperature: group 'all' holds 'api', decoding at temperature 0.7, and "
     "'other', decoding greedily"),
])
def test_what_a_distribution_needs_from_the_rest_of_the_config(overrides: dict[str, Any], message: str,
                                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(tmp_path, **overrides)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LevanteError) as caught:
        load_config(Path("matrix.yaml"))
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value), str(caught.value)


def test_a_task_without_option_orders_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(tmp_path, models=with_distribution({"orders": 2}), tasks=["l0_trace"])
    monkeypatch.chdir(tmp_path)
    config = load_config(Path("matrix.yaml"))
    with pytest.raises(LevanteError, match=r"^matrix.yaml: models\[0\].distribution: l0_trace has no balanced "
                                           r"option orders"):
        plan(config, DATA, SOFTWARE)


def test_auto_is_refused_with_submit_in_one_line_before_anything_runs(tmp_path: Path) -> None:
    release = tmp_path / "children.csv"
    release.write_text("x\n", encoding="utf-8")
    compare = {"trials": str(release), "runs": str(release), "irt": [str(release)]}
    path = write_config(tmp_path / "cfg", models=with_distribution({"orders": "auto"}), compare=compare)
    assert load_config(path).models[0].distribution.auto  # the config itself is fine without --submit
    done = run_cli(["matrix", "--config", path, "--out", tmp_path / "out", "--submit", "--dry-run"], cwd=tmp_path)
    assert done.returncode == 2
    assert one_error_line(done.stderr) == (
        "levante-tasks: error: cfg/matrix.yaml: models[0].distribution.orders: auto decides after each block of "
        "orders whether to run more, which queued jobs cannot; give a number of orders to --submit, or run the "
        "matrix without --submit")
    assert not (tmp_path / "out").exists()


# --- end to end: lmms-eval's `openai` class on the local fake server ------------------------------------------

ORDERS = 4  # replicate orders of the end-to-end run: one Latin square of trog's 4 options
E2E_TASKS = ["levante_trog", "levante_vocab"]
E2E_LIMIT = 4


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The prepared synthetic release (release/ and data/), shared by the run's workers."""
    return prepared_release(tmp_path_factory)


def synthetic_run(prepared: Path, n_boot: int) -> dict[str, Any]:
    """The config keys of an offline run on the prepared synthetic release, compared with its children (min_n 2:
    a few items give no cell of 10 children)."""
    release = prepared / "release"
    return {"data": {"dir": str(prepared / "data"), "version": "synthetic"},
            "env": {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
            "compare": {"trials": str(release / "children" / "trials.csv"),
                        "runs": str(release / "children" / "runs.csv"),
                        "irt": [str(release / "irt" / "item_params.csv")],
                        "items": str(prepared / "data" / "synthetic" / "datasets"), "n_boot": n_boot, "min_n": 2}}


@pytest.fixture(scope="module")
def openai_matrix(prepared: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A matrix of lmms-eval's `openai` class against the fake server (it answers `A`, a pure position bias) with
    `distribution: {orders: ORDERS}` and a comparison with the synthetic release's children; its folder and the
    requests the server received."""
    folder = tmp_path_factory.mktemp("distribution-openai")
    log = folder / "server.jsonl"
    with serve(log) as url:
        path = write_config(
            folder, models=[{"name": "api", "model": "openai", "public_id": "fake-gpt",
                             "model_args": f"model_version=fake-gpt,base_url={url},api_key=fake,max_retries=1",
                             "distribution": {"orders": ORDERS}}],
            groups=None, tasks=E2E_TASKS, limit=E2E_LIMIT, lmms_eval_module=FORKED_LMMS_EVAL,
            **synthetic_run(prepared, n_boot=20))
        done = run_cli(["matrix", "--config", path, "--out", folder / "out"], cwd=folder, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return folder / "out", read_log(log)


def item_records(cell_dir: Path) -> list[dict[str, Any]]:
    """The per-item records (`levante_item`) of a cell's samples files."""
    return [json.loads(line)["levante_item"] for path in sorted(cell_dir.rglob("*_samples_*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines()]


def test_openai_run_has_a_finished_cell_and_records_for_every_replicate(
        openai_matrix: tuple[Path, list[dict[str, Any]]]) -> None:
    """Every (task, replicate) is its own finished cell; its records carry the replicate as seed with its presented
    order; each item was asked once per replicate (K requests per item), each time in another order."""
    out, requests = openai_matrix
    document = json.loads((out / "matrix.json").read_text(encoding="utf-8"))
    cells = document["cells"]
    assert sorted((c["task"], c["seed"]) for c in cells) == sorted(
        (task, seed) for task in E2E_TASKS for seed in range(ORDERS))
    assert all(c["status"] == "done" for c in cells)
    orders: dict[tuple[str, str], list[tuple[str, ...]]] = {}
    for cell in cells:
        records = item_records(out / cell["dir"])
        assert len(records) == E2E_LIMIT and {r["seed"] for r in records} == {cell["seed"]}
        for record in records:
            assert sorted(record["presented_order"]) == list(range(len(record["presented_order"])))
            orders.setdefault((cell["task"], record["item_uid"]), []).append(tuple(record["presented_order"]))
    assert len(orders) == len(E2E_TASKS) * E2E_LIMIT
    assert all(len(shown) == ORDERS == len(set(shown)) for shown in orders.values()), orders
    assert len(requests) == len(E2E_TASKS) * E2E_LIMIT * ORDERS
    readout = document["distribution"]["api"]
    assert readout["orders"] == ORDERS and readout["samples"] == 1 and readout["temperature"] is None
    assert readout["tasks"] == {task: {"orders": ORDERS, "requests_per_item": ORDERS, "why": f"orders: {ORDERS}"}
                                for task in E2E_TASKS}
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Response distributions" in report
    assert all(f"| api | {task} | orders: {ORDERS} | greedy | {ORDERS} | {ORDERS} |" in report for task in E2E_TASKS)
    assert document["groups"]["all"]["comparison"] == "comparison/all/comparison.md"


def test_openai_run_has_a_kl_row_with_interval_and_replicate_count_for_every_task(
        openai_matrix: tuple[Path, list[dict[str, Any]]]) -> None:
    """The issue's done-when: comparison.md of the openai-class matrix has, for every task, the model's orders row
    with its KL, interval and the orders counted per item (all 4: one whole block of trog's and vocab's 4
    options), on the items that have children's cells."""
    out, _ = openai_matrix
    markdown = (out / "comparison" / "all" / "comparison.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^### (\S+)\n(.*?)(?=^### |\Z)", markdown, re.MULTILINE | re.DOTALL))
    row = re.compile(r"^\| English \(en\) \| en \| fake-gpt @ unknown \(openai\)/original/gen/orders \| "
                     rf"[1-{E2E_LIMIT}] \| {ORDERS} \({ORDERS}-{ORDERS}\) \| [\d.]+ \| (\d\.\d+) \[(\d\.\d+), "
                     r"(\d\.\d+)\] \(", re.MULTILINE)
    for task in ("trog", "vocab"):
        found = row.search(sections[task])
        assert found, sections[task][:3000]
        _, low, high = map(float, found.groups())
        assert low < high  # a basic bootstrap interval: it may sit below the estimate (compare.replicates)
    summary = json.loads((out / "comparison" / "all" / "comparison.json").read_text(encoding="utf-8"))
    assert summary["settings"]["orders_tolerance"] == 0.02  # no auto model: the comparison's default


@pytest.fixture(scope="module")
def auto_matrix(prepared: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`orders: auto` (tolerance 0.99, max_orders 5) on levante_trog (4 options: a block is 4 orders) through the
    `openai` class on the fake server: its first block is enough."""
    folder = tmp_path_factory.mktemp("distribution-auto")
    with serve(folder / "server.jsonl") as url:
        path = write_config(
            folder, models=[{"name": "loose", "model": "openai",
                             "model_args": f"model_version=fake-gpt,base_url={url},api_key=fake,max_retries=1",
                             "distribution": {"orders": "auto", "tolerance": 0.99, "max_orders": 5}}],
            groups=None, tasks=["levante_trog"], limit=E2E_LIMIT, lmms_eval_module=FORKED_LMMS_EVAL,
            **synthetic_run(prepared, n_boot=50))
        done = run_cli(["matrix", "--config", path, "--out", folder / "out"], cwd=folder, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return folder / "out"


def test_auto_stops_after_the_block_whose_half_width_is_within_tolerance(auto_matrix: Path) -> None:
    """The children's comparison and the replicate estimator decide after the first block (4 orders); the fifth
    order is planned but not run, and is no failure."""
    document = json.loads((auto_matrix / "matrix.json").read_text(encoding="utf-8"))
    assert [(c["seed"], c["status"]) for c in document["cells"]] == [
        (0, "done"), (1, "done"), (2, "done"), (3, "done"), (4, "not needed")]
    readout = document["distribution"]["loose"]["tasks"]["levante_trog"]
    assert readout["orders"] == 4 and readout["requests_per_item"] == 4
    assert re.fullmatch(r"half-width 0\.\d{4} <= tolerance 0\.99 at 4 orders", readout["why"]), readout
    report = (auto_matrix / "report.md").read_text(encoding="utf-8")
    assert "| loose | levante_trog | orders: auto (tolerance 0.99, max 5) | greedy | 4 | 4 |" in report
    assert "## Failures" not in report and not (auto_matrix / ".auto").exists()
    comparison = json.loads((auto_matrix / "comparison" / "all" / "comparison.json").read_text(encoding="utf-8"))
    assert comparison["settings"]["orders_tolerance"] == 0.99  # the group's auto tolerance


def test_report_only_decides_again_from_the_finished_cells(auto_matrix: Path, tmp_path: Path) -> None:
    """The end step alone (`--report-only`, running no cell) reaches the same decision: the unrun order is `not
    needed`, not a failure, and the exit status is 0."""
    copy = tmp_path / "copy"
    shutil.copytree(auto_matrix.parent, copy)
    done = run_cli(["matrix", "--config", copy / "matrix.yaml", "--out", copy / "out", "--report-only"], cwd=copy)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    document = json.loads((copy / "out" / "matrix.json").read_text(encoding="utf-8"))
    assert [c["status"] for c in document["cells"]] == ["done"] * 4 + ["not needed"]
    assert document["distribution"] == json.loads((auto_matrix / "matrix.json").read_text(
        encoding="utf-8"))["distribution"]


def test_auto_runs_a_block_per_task_at_a_time_until_tolerance_every_order_or_max_orders(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop alone (estimator and cells stubbed): each pending task gets its next block (its largest option
    count n, cut at max_orders and at its n! distinct orders) in one call; a task stops at the first half-width <=
    tolerance, else once every distinct order was asked, else at max_orders; the orders past a stop are `not
    needed` (a 2-option task never runs a third order: it would repeat one of the two)."""
    children = tmp_path / "children.csv"
    children.write_text("x\n", encoding="utf-8")
    path = write_config(tmp_path, models=with_distribution({"orders": "auto", "tolerance": 0.05, "max_orders": 8}),
                        tasks=["levante_trog", "levante_mental_rotation", "levante_vocab"],
                        compare={"trials": str(children), "runs": str(children), "irt": [str(children)]})
    config = load_config(path)
    cells = [c for c in plan(config, DATA, SOFTWARE) if c.model.name == "api"]  # DATA: no option counts, no cap
    run = MatrixRun(config, tmp_path / "out", cells, cells)
    widths = {"levante_trog": [0.2, 0.04], "levante_mental_rotation": [0.3], "levante_vocab": [0.2, 0.1]}
    blocks = {"levante_trog": 3, "levante_mental_rotation": 2, "levante_vocab": 4}
    monkeypatch.setattr(matrix_run, "block_size", lambda task, _data: blocks[task])
    monkeypatch.setattr(matrix_run, "replicate_halfwidth", lambda _config, done, _out: widths[done[0].task].pop(0))
    batches = []

    def run_cells(batch: list[Cell]) -> None:
        batches.append(sorted((c.task.removeprefix("levante_"), c.seed) for c in batch))
        run.states.update({c.cell_id: {"status": "done"} for c in batch})

    matrix_run._run_auto(run, tmp_path, DATA, cells, run_cells, lambda _cell, _kept: None, lambda _line: None)
    assert batches == [[("mental_rotation", 0), ("mental_rotation", 1), ("trog", 0), ("trog", 1), ("trog", 2),
                        ("vocab", 0), ("vocab", 1), ("vocab", 2), ("vocab", 3)],
                       [("trog", 3), ("trog", 4), ("trog", 5), ("vocab", 4), ("vocab", 5), ("vocab", 6),
                        ("vocab", 7)]]
    assert run.stops == {("api", "levante_mental_rotation"): "every order asked (n! = 2)",
                         ("api", "levante_trog"): "half-width 0.0400 <= tolerance 0.05 at 6 orders",
                         ("api", "levante_vocab"): "max_orders 8 reached (half-width 0.1000)"}
    done = sorted((c.task.removeprefix("levante_"), c.seed) for c in cells if run.states[c.cell_id]["status"] == "done")
    assert done == sorted(seed for batch in batches for seed in batch)
    assert {run.states[c.cell_id]["status"] for c in cells if (c.task.removeprefix("levante_"), c.seed) not in done} \
        == {"not needed"}
    assert not run.failed


def prepared_data(prepared: Path) -> dict[str, Any]:
    """DATA with the prepared synthetic release's data folder (the option counts the cap reads)."""
    return {**DATA, "dir": prepared / "data", "version": "synthetic"}


@pytest.mark.parametrize(("task", "orders", "planned"), [
    ("levante_mental_rotation", 8, 2),  # 2 options: 2! orders
    ("levante_trog", 32, 24),  # 4 options: 4!
    ("levante_trog", 8, 8),  # under 4!: as configured
])
def test_fixed_orders_are_capped_at_the_tasks_distinct_orders(task: str, orders: int, planned: int,
                                                              prepared: Path, tmp_path: Path) -> None:
    """Seeds from n! on repeat earlier orders and the estimator never counts them: the plan stops at n! of the
    task's largest option count (read from the prepared data); the greedy model without `distribution` keeps its
    seed."""
    config = load_config(write_config(tmp_path, models=with_distribution({"orders": orders}), tasks=[task]))
    cells = plan(config, prepared_data(prepared), SOFTWARE)
    assert [(c.model.name, c.seed) for c in cells] == [("api", s) for s in range(planned)] + [("other", 0)]


def test_auto_plans_at_most_the_tasks_distinct_orders(prepared: Path, tmp_path: Path) -> None:
    children = tmp_path / "children.csv"
    children.write_text("x\n", encoding="utf-8")
    config = load_config(write_config(
        tmp_path, models=with_distribution({"orders": "auto", "max_orders": 32}),
        tasks=["levante_mental_rotation", "levante_trog"],
        compare={"trials": str(children), "runs": str(children), "irt": [str(children)]}))
    cells = [c for c in plan(config, prepared_data(prepared), SOFTWARE) if c.model.name == "api"]
    assert [c.seed for c in cells if c.task == "levante_mental_rotation"] == [0, 1]
    assert [c.seed for c in cells if c.task == "levante_trog"] == list(range(24))


def test_a_capped_task_says_why_in_matrix_json(tmp_path: Path) -> None:
    """orders_reached: a fixed K planned as n! (fewer cells) reads 'capped at every order asked', not 'not
    finished'."""
    from levante_tasks.matrix.report import orders_reached

    config = load_config(write_config(tmp_path, models=with_distribution({"orders": 8})))
    cells = [c for c in plan(config, DATA, SOFTWARE) if c.model.name == "api"][:2]  # as plan caps a 2-option task
    run = MatrixRun(config, tmp_path / "out", cells, cells)
    readout = orders_reached(run, {c.cell_id: {"status": "done"} for c in cells})
    assert readout["api"]["tasks"]["levante_trog"] == {
        "orders": 2, "requests_per_item": 2, "why": "orders: 8, capped at every order asked (n! = 2)"}
    one_short = orders_reached(run, {cells[0].cell_id: {"status": "done"}, cells[1].cell_id: {"status": "failed"}})
    assert one_short["api"]["tasks"]["levante_trog"]["why"] == "cells of order 1 not finished"


def auto_run(tmp_path: Path, max_orders: int, **config: Any) -> tuple[MatrixRun, list[Cell]]:
    """A run of model `api` with `orders: auto` (tolerance 0.05) and a stand-in compare section, and its cells."""
    children = tmp_path / "children.csv"
    children.write_text("x\n", encoding="utf-8")
    path = write_config(tmp_path, models=with_distribution({"orders": "auto", "tolerance": 0.05,
                                                            "max_orders": max_orders}),
                        compare={"trials": str(children), "runs": str(children), "irt": [str(children)]}, **config)
    loaded = load_config(path)
    cells = [c for c in plan(loaded, DATA, SOFTWARE) if c.model.name == "api"]
    return MatrixRun(loaded, tmp_path / "out", cells, cells), cells


def test_a_task_whose_comparison_fails_stops_with_its_reason_and_the_others_go_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A comparison that cannot run for a task (e.g. `nothing compared`: no children's cells for it) stops that
    task with the comparison's line as its reason; the matrix does not crash and the other task still decides."""
    run, cells = auto_run(tmp_path, max_orders=4, tasks=["levante_trog", "levante_mental_rotation"])

    def halfwidth(_config: Any, done: list[Cell], _out: Path) -> float:
        if done[0].task == "levante_trog":
            raise LevanteError("cells/all: nothing compared: no children's trials of levante_trog")
        return 0.01

    monkeypatch.setattr(matrix_run, "block_size", lambda task, _data: 4 if task == "levante_trog" else 2)
    monkeypatch.setattr(matrix_run, "replicate_halfwidth", halfwidth)

    def run_cells(batch: list[Cell]) -> None:
        run.states.update({c.cell_id: {"status": "done"} for c in batch})

    matrix_run._run_auto(run, tmp_path, DATA, cells, run_cells, lambda _cell, _kept: None, lambda _line: None)
    assert run.stops == {
        ("api", "levante_trog"): "no decision at 4 orders: the comparison with the children could not run "
                                 "(cells/all: nothing compared: no children's trials of levante_trog)",
        ("api", "levante_mental_rotation"): "half-width 0.0100 <= tolerance 0.05 at 2 orders"}


def test_orders_after_a_block_that_did_not_finish_are_not_run_not_not_needed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A task whose block did not all finish (a failed cell, an interrupted run read by --report-only) stops
    without a decision: its later orders are `not finished` failures naming why (a --resume runs them), never
    `not needed`, which says auto had enough."""
    run, cells = auto_run(tmp_path, max_orders=6)
    monkeypatch.setattr(matrix_run, "block_size", lambda _task, _data: 4)  # 4 options: 24 orders
    monkeypatch.setattr(matrix_run, "replicate_halfwidth", lambda _config, _done, _out: 0.5)

    def run_cells(batch: list[Cell]) -> None:
        run.states.update({c.cell_id: {"status": "failed" if c.seed == 3 else "done",
                                       "error": {"reason": "boom", "tail": []}} for c in batch})

    matrix_run._run_auto(run, tmp_path, DATA, cells, run_cells, lambda _cell, _kept: None, lambda _line: None)
    assert run.stops == {("api", "levante_trog"): "cells of its first 4 orders did not all finish"}
    assert [run.states[c.cell_id]["status"] for c in cells] == ["done", "done", "done", "failed", "not finished",
                                                               "not finished"]
    assert run.states[cells[4].cell_id]["error"]["reason"] == (
        "not run: orders: auto stopped levante_trog before it (cells of its first 4 orders did not all finish)")
    assert [c.seed for c in run.failed] == [3, 4, 5]


def test_auto_decides_on_the_comparison_the_end_step_makes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The decision's comparison takes the end step's settings (compare.across_languages too): an English run
    with only other languages' children is compared under across_languages, and the half-width it decides on is
    that of the rows the group's comparison.md shows."""
    from levante_tasks.compare import pipeline
    from levante_tasks.matrix.auto import replicate_halfwidth

    children = tmp_path / "children.csv"
    children.write_text("x\n", encoding="utf-8")
    path = write_config(tmp_path, models=with_distribution({"orders": "auto"}), compare={
        "trials": str(children), "runs": str(children), "irt": [str(children)], "across_languages": True})
    config = load_config(path)
    cells = [c for c in plan(config, DATA, SOFTWARE) if c.model.name == "api"][:2]
    seen = []
    monkeypatch.setattr(pipeline, "run_compare", lambda *_args, **_kwargs: seen.append(_args[5]) or {})
    assert replicate_halfwidth(config, cells, tmp_path / "out") is None
    assert [settings.across_languages for settings in seen] == [True]


def test_orders_past_the_stop_that_finished_earlier_are_kept_not_called_not_needed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Orders past auto's stop that finished earlier (a --shard ran the model's cells as planned, or the config
    had `orders: 8` before) are kept as done, and used, not recorded `not needed` (not run); only the orders never
    run are `not needed`."""
    run, cells = auto_run(tmp_path, max_orders=6)
    on_disk = {c.cell_id for c in cells if c.seed < 4}  # a shard ran orders 0..3
    monkeypatch.setattr(matrix_run, "block_size", lambda _task, _data: 2)
    monkeypatch.setattr(matrix_run, "replicate_halfwidth", lambda _config, _done, _out: 0.01)
    monkeypatch.setattr(matrix_run, "unfinished_reason", lambda cell_dir, _sha, _task: None
                        if cell_dir.name in on_disk else "not run yet")
    batches = []

    def run_cells(batch: list[Cell]) -> None:
        batches.append([c.seed for c in batch])
        run.states.update({c.cell_id: {"status": "done"} for c in batch})

    matrix_run._run_auto(run, tmp_path, DATA, cells, run_cells, lambda _cell, _kept: None, lambda _line: None)
    assert batches == [[0, 1], [2, 3]]  # the kept ones through the one keeping path, nothing else run
    assert [run.states[c.cell_id]["status"] for c in cells] == ["done"] * 4 + ["not needed"] * 2
