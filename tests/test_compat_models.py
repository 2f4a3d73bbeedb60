"""The lmms-eval model classes people already run, on every LEVANTE task, proven picture by picture (issue 23).

Each case is ONE `python -m lmms_eval` run, forked from a server that imported lmms-eval once (`lmms_fork`: the
run's command, streams and exit status, without ~5 s of start-up per case): an upstream model class on a tiny
random-init checkpoint (real transformers classes and processors, built offline by `tiny_models`) or on a fake
OpenAI-compatible server, every LEVANTE task (and the `_mc` variants where the class can score options) on the
colour-coded fixture, whose first egma-math items have no picture; run at batch size 1, then 4 (lmms-eval's
`--config` list: two runs in the one process, so the second costs no second start-up). lmms-eval batches the
requests of all tasks of a run together, so the batch-4 run mixes tasks in a batch (issue 31). A spy on the
processor (or the server) logs each request's pictures; every item's requests must carry exactly its pictures in the
order its prompt numbers them (none for text-only items), at each batch size. With `$LEVANTE_COMPAT_RESULTS` set,
each case writes its outcome there (`compat_table` renders docs/compatibility.md).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from built_once import built_once
from compat_checks import calls_by_run, fixture_rows, item_records, last_write, picture_problems, placement_problems

from levante_tasks.lmms.patcher import installed_lmms_eval
from levante_tasks.testing.fake_openai import serve
from levante_tasks.testing.fixture_data import write_fixture
from levante_tasks.testing.lmms_fork import run_cli
from levante_tasks.testing.processor_spy import SPY_ENV, read_log

SPY_SITE = Path(__file__).parent / "compat_site"  # its sitecustomize.py installs the spy (in a fork too: lmms_fork)
TASKS = ["levante_vocab", "levante_trog", "levante_egma_math", "levante_theory_of_mind",
         "levante_matrix_reasoning", "levante_mental_rotation", "levante_same_different"]
MC_TASKS = [f"{task}_mc" for task in TASKS]
LIMIT = 3  # the fixture's first 3 egma-math items are text-only (Number Identification)
BATCH_SIZES = (1, 4)  # in this order, one lmms-eval run each; 4 > LIMIT, so every batch-4 batch mixes tasks
BATCH_ONE_ONLY = "Do not support batch_size_per_gpu > 1"  # upstream `llava_hf`'s assertion (chat and simple)

@dataclass(frozen=True)
class Case:
    """One model class on one checkpoint kind; `patches` are ours that it needs; `mc`: it runs the `_mc` tasks;
    `option`: a model_arg that changes how the class lays out pictures (shown in the table's layout column);
    `batch_one_only`: upstream asserts `--batch_size 1`, so its batch-4 run must stop with that assertion."""

    model: str
    checkpoint: str | None
    model_args: str = "device_map=cpu"
    simple: bool = False
    mc: bool = False
    patches: tuple[str, ...] = field(default_factory=tuple)
    versions: tuple[str, ...] = ("0.7.2", "0.7.3")
    option: str = ""
    batch_one_only: bool = False


# upstream's default min_pixels (256 x 28 x 28) blows each 32x24 picture up to 256 image tokens: keep CI cheap
QWEN_ARGS = "device_map=cpu,min_pixels=3136,max_pixels=12544"
QWEN_PICTURE = "<|vision_start|><|image_pad|><|vision_end|>"  # one picture in the Qwen processors' text
CASES = {
    "qwen2_vl": Case("qwen2_vl", "qwen2_vl", QWEN_ARGS, simple=True, patches=("0015",)),
    "qwen2_5_vl": Case("qwen2_5_vl", "qwen2_5_vl", QWEN_ARGS),
    "qwen2_5_vl-simple": Case("qwen2_5_vl", "qwen2_5_vl", QWEN_ARGS, simple=True, patches=("0015",)),
    # each picture at its `<image N>` marker (upstream's interleaving rule), not all of them first
    "qwen2_5_vl-simple-interleave": Case("qwen2_5_vl", "qwen2_5_vl", f"{QWEN_ARGS},interleave_visuals=True",
                                         simple=True, option="interleave_visuals=True", patches=("0015",)),
    "idefics2": Case("idefics2", "idefics2", model_args="", simple=True, patches=("0010",)),
    # no device_map: the class's default, as a user types it (`--device cpu` only; patch 0016)
    "llava_hf-llava-1.5": Case("llava_hf", "llava-1.5", model_args="", mc=True, patches=("0011", "0012", "0016"),
                               batch_one_only=True),
    "llava_hf-llava-1.5-simple": Case("llava_hf", "llava-1.5", simple=True, mc=True, patches=("0011",),
                                      batch_one_only=True),
    "llava_hf-llava-onevision": Case("llava_hf", "llava-onevision", mc=True, patches=("0011", "0012"),
                                     batch_one_only=True),
    "huggingface-idefics3": Case("huggingface", "idefics3", patches=("0005", "0009")),
    "huggingface-qwen2_vl": Case("huggingface", "qwen2_vl", patches=("0005", "0009")),
    "openai": Case("openai", None, model_args="model_version=fake,api_key=fake"),
}
VERSION = installed_lmms_eval()["version"]


@pytest.fixture(scope="session")
def fixture_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The colour-coded fixture, written once per test run (shared by the xdist workers)."""
    return built_once(tmp_path_factory, "compat-data", write_fixture)


def run_lmms_eval(case: Case, model_args: str, data: Path, out: Path, spy: Path, tasks: list[str] | None = None,
                  batch_sizes: tuple[int, ...] = BATCH_SIZES) -> subprocess.CompletedProcess[str]:
    """The real lmms-eval CLI (`python -m lmms_eval`, forked by `lmms_fork`) in ONE process with the processor spy
    installed (sitecustomize): one run per batch size, in order (lmms-eval's `--config` takes a list of runs), each
    writing to `out/batch-<n>`. A class that allows batch size 1 only gets just the first task at a larger size (it
    stops at its first batch anyway)."""
    tasks = tasks or TASKS + (MC_TASKS if case.mc else [])
    path = os.pathsep.join(filter(None, [str(SPY_SITE), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           SPY_ENV: str(spy), "PYTHONPATH": path}
    env.pop("LEVANTE_DATA_VERSION", None)
    runs = [{"model": case.model, "model_args": model_args, "limit": LIMIT,
             "tasks": ",".join(tasks[:1] if size > 1 and case.batch_one_only else tasks),
             "gen_kwargs": "max_new_tokens=2", "batch_size": size, "device": "cpu", "log_samples": True,
             "output_path": str(out / f"batch-{size}"), "verbosity": "WARNING", "force_simple": case.simple}
            for size in batch_sizes]
    config = out.parent / "runs.yaml"
    config.write_text(json.dumps(runs, indent=1), encoding="utf-8")  # JSON is YAML
    return run_cli(["--config", str(config)], cwd=out.parent, env=env, timeout=600, entry="lmms_eval",
                   models=[case.model])


def record_outcome(name: str, case: Case, status: str, detail: str, batches: dict[int, str] | None = None) -> None:
    """Write this case's outcome for the compatibility table when `$LEVANTE_COMPAT_RESULTS` names a folder;
    `batches`: the outcome at each batch size run."""
    folder = os.environ.get("LEVANTE_COMPAT_RESULTS")
    if folder:
        line = {"case": name, "model": case.model, "checkpoint": case.checkpoint or "fake server",
                "simple": case.simple, "mc": case.mc, "lmms_eval": VERSION, "status": status, "detail": detail,
                "patches": list(case.patches), "option": case.option,
                "batches": {str(size): outcome for size, outcome in (batches or {}).items()}}
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{VERSION}-{name}.json").write_text(json.dumps(line, indent=1) + "\n", encoding="utf-8")


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if VERSION in c.versions])
def test_model_class_sends_each_item_its_pictures_in_prompt_order(
        name: str, fixture_data: Path, tiny_checkpoint: Callable[[str], Path], tmp_path: Path) -> None:
    case = CASES[name]
    out, spy = tmp_path / "out", tmp_path / "spy.jsonl"
    if case.checkpoint is None:
        with serve(spy) as url:
            run = run_lmms_eval(case, f"{case.model_args},base_url={url}", fixture_data, out, spy)
    else:
        args = ",".join(filter(None, [f"pretrained={tiny_checkpoint(case.checkpoint)}", case.model_args]))
        run = run_lmms_eval(case, args, fixture_data, out, spy)
    record_outcome(name, case, "failed", f"exit {run.returncode}")
    folders = [out / f"batch-{size}" for size in BATCH_SIZES]
    runs = dict(zip(BATCH_SIZES, calls_by_run(read_log(spy), [last_write(f) for f in folders]), strict=True))
    batches: dict[int, str] = {}
    for size, folder in zip(BATCH_SIZES, folders, strict=True):
        record_outcome(name, case, "failed", f"batch size {size}, exit {run.returncode}", {**batches, size: "failed"})
        if size > 1 and case.batch_one_only:
            assert BATCH_ONE_ONLY in run.stderr and not item_records(folder), run.stderr[-3000:]
            batches[size] = "refused: upstream allows `--batch_size 1` only (AssertionError, exit 1)"
            continue
        assert_pictures_right(case, size, folder, runs[size], fixture_data, run.stderr)
        assert_summarize_and_compare_read(folder, item_records(folder), tmp_path / f"summary-{size}")
        batches[size] = "works"
    assert run.returncode == (1 if case.batch_one_only else 0), run.stderr[-4000:]
    record_outcome(name, case, "works", "", batches)


def assert_pictures_right(case: Case, size: int, folder: Path, calls: list[dict], data: Path, stderr: str) -> None:
    """The run at batch size `size` wrote every task's records, and every item's requests carried its pictures."""
    records = item_records(folder)
    expected = TASKS + (MC_TASKS if case.mc else [])
    assert sorted(records) == sorted(expected), f"batch {size}: " + stderr[-3000:]
    assert all(len(recs) == LIMIT for recs in records.values()), {t: len(r) for t, r in records.items()}
    rows = fixture_rows(data)
    assert any(not rows[r["item_uid"]]["stimulus_image"] for r in records["levante_egma_math"]), "no text-only item"
    problems = picture_problems(calls, records, rows)
    if case.option == "interleave_visuals=True":
        problems += placement_problems(calls, records, rows, QWEN_PICTURE)
    assert not problems, f"batch size {size}:\n" + "\n".join(problems)


def assert_summarize_and_compare_read(out: Path, records: dict[str, list[dict]], summary: Path) -> None:
    """`summarize` reads the run without a problem, one cell per task with its item count; `compare` reads
    every per-item record."""
    from levante_tasks.compare.records import read_records
    from levante_tasks.summary.cli import summarize_runs

    document = summarize_runs([out], summary, plot=False)
    assert not document["problems"], document["problems"]
    items = {cell["task"]: cell["n_items"] for cell in document["cells"] if not cell["parent"]}
    assert items == {task: len(recs) for task, recs in records.items()}
    table, _ = read_records(out)
    assert sorted(table["item_uid"]) == sorted(r["item_uid"] for recs in records.values() for r in recs)


def test_mc_variant_is_refused_before_the_first_item_naming_class_and_variant(
        fixture_data: Path, tiny_checkpoint: Callable[[str], Path], tmp_path: Path) -> None:
    """Patches 0013 and 0017: a `_mc` variant with a class that has no loglikelihood stops before any request reaches
    the model (the spy sees no processor call, although a generation task comes first), one line (no traceback)
    ending stderr that names the class and what runs instead, exit 1."""
    case = Case("qwen2_vl", "qwen2_vl", simple=True)
    out, spy = tmp_path / "out", tmp_path / "spy.jsonl"
    run = run_lmms_eval(case, f"pretrained={tiny_checkpoint('qwen2_vl')},device_map=cpu", fixture_data, out, spy,
                        tasks=["levante_vocab", "levante_vocab_mc"], batch_sizes=(1,))
    assert run.returncode == 1
    from levante_tasks.matrix.state import error_line

    refusal = ("model class Qwen2_VL cannot run the _mc variants (no loglikelihood): use --model levante_vlm_mc or "
               "levante_clip, or Qwen2_VL on the generation variants (levante_vocab); refused: levante_vocab_mc")
    last = run.stderr.strip().splitlines()[-1]
    assert last == refusal and "Traceback" not in run.stderr, run.stderr[-3000:]
    # a matrix report shows the line's first 160 characters as the cell's cause: the alternatives come first
    assert refusal.split(" (levante_vocab)")[0] in error_line(run.stderr, run.returncode)
    assert read_log(spy) == [] and not list(out.rglob("*_results.json"))


# Classes whose upstream `loglikelihood` raises NotImplementedError: they cannot answer the `_mc` variants.
MC_REFUSED = {"qwen2_vl": "lmms_eval.models.simple.qwen2_vl:Qwen2_VL",
              "qwen2_5_vl": "lmms_eval.models.simple.qwen2_5_vl:Qwen2_5_VL",
              "idefics2": "lmms_eval.models.simple.idefics2:Idefics2",
              "huggingface": "lmms_eval.models.chat.huggingface:Huggingface",
              "openai": "lmms_eval.models.simple.openai:OpenAICompatible"}


@pytest.mark.parametrize("model", sorted(MC_REFUSED))
def test_classes_without_loglikelihood_cannot_run_mc_variants(model: str) -> None:
    import importlib

    module, name = MC_REFUSED[model].split(":")
    cls = getattr(importlib.import_module(module), name)
    with pytest.raises(NotImplementedError):
        cls.loglikelihood(object.__new__(cls), [])
    # our words, not upstream's message: `huggingface`'s was copied from another class ("... for Qwen2.5_VL")
    record_outcome(f"{model}-mc", Case(model, "-", mc=True), "refused", f"no loglikelihood in `{name}`")


def test_llava_onevision_class_needs_llava_next_which_pypi_lacks(tiny_checkpoint: Callable[[str], Path]) -> None:
    """`llava_onevision` imports LLaVA-NeXT's `llava` package: not on PyPI (`llava` there is a 0.0.1 placeholder,
    `llava-torch` is LLaVA 1.2 without OneVision), so the class cannot load; `llava_hf` runs OneVision checkpoints."""
    import importlib.util

    from lmms_eval.models.simple.llava_onevision import Llava_OneVision  # its `llava` imports fail quietly

    assert importlib.util.find_spec("llava") is None
    with pytest.raises(NameError, match="get_model_name_from_path"):  # what a user meets: a helper of `llava`
        Llava_OneVision(pretrained=str(tiny_checkpoint("llava-onevision")), device="cpu", device_map="cpu")
    record_outcome("llava_onevision", Case("llava_onevision", "-"), "refused",
                   "needs the LLaVA-NeXT package (not on PyPI); use `llava_hf` for OneVision checkpoints")


def test_compat_table_is_rendered_from_case_results(tmp_path: Path) -> None:
    from levante_tasks.testing import compat_table

    results = tmp_path / "results"
    results.mkdir()
    cases = [{"case": "a", "model": "idefics2", "checkpoint": "idefics2", "simple": True, "mc": False,
              "lmms_eval": "0.7.2", "status": "works", "detail": "", "patches": ["0010"]},
             {"case": "a-mc", "model": "idefics2", "checkpoint": "-", "simple": True, "mc": True,
              "lmms_eval": "0.7.2", "status": "refused", "detail": "no loglikelihood in `Idefics2`", "patches": []},
             {"case": "b", "model": "qwen2_vl", "checkpoint": "qwen2_vl", "simple": True, "mc": False,
              "lmms_eval": "0.7.3", "status": "failed", "detail": "exit 1", "patches": []},
             {"case": "c", "model": "qwen2_vl", "checkpoint": "qwen2_vl", "simple": True, "mc": False,
              "lmms_eval": "0.7.3", "status": "works", "detail": "", "patches": ["0015"],
              "option": "interleave_visuals=True", "batches": {"1": "works", "4": "works"}},
             {"case": "d", "model": "llava_hf", "checkpoint": "llava-1.5", "simple": False, "mc": True,
              "lmms_eval": "0.7.3", "status": "works", "detail": "", "patches": ["0011"],
              "batches": {"1": "works", "4": "refused: batch size 1 only"}}]
    for case in cases:
        (results / f"{case['lmms_eval']}-{case['case']}.json").write_text(json.dumps(case), encoding="utf-8")
    doc = tmp_path / "doc.md"
    doc.write_text(f"intro\n{compat_table.BEGIN}\nold\n{compat_table.END}\nend\n", encoding="utf-8")
    assert compat_table.main([str(results), "--doc", str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    assert "old" not in text and text.startswith("intro\n") and text.endswith("end\n")
    assert ("| `idefics2` | idefics2 | simple (`--force_simple`) | 0.7.2 | 1 | works with patch 0010 | "
            "refused: no loglikelihood in `Idefics2`; instead: `levante_vlm_mc` or `levante_clip`, or this class on "
            "the generation variants |") in text
    assert ("| `qwen2_vl` | qwen2_vl | simple (`--force_simple`) | 0.7.3 | 1: failed | failed: exit 1 | "
            "not in the suite |") in text
    assert ("| `qwen2_vl` | qwen2_vl | simple (`--force_simple`), `interleave_visuals=True` | 0.7.3 | 1, 4 | "
            "works with patch 0015 | not in the suite |") in text
    assert ("| `llava_hf` | llava-1.5 | chat | 0.7.3 | 1; 4: refused: batch size 1 only | works with patch 0011 | "
            "works with patch 0011 |") in text
    short = compat_table.short_table(compat_table.load_results(results))
    assert "| `idefics2` | yes | no | not run | not run |" in short
    assert "| `qwen2_vl` | not run | not run | yes | not run |" in short  # some checkpoint and layout works
