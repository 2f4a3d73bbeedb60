"""The lmms-eval model classes people already run, on every LEVANTE task, proven picture by picture (issue 23).

Each case is ONE real `python -m lmms_eval` process: an upstream model class on a tiny random-init checkpoint
(real transformers classes and processors, built offline by `tiny_models`) or on a fake OpenAI-compatible server,
every LEVANTE task (and the `_mc` variants where the class can score options) on the colour-coded fixture, whose
first egma-math items have no picture. A spy on the processor (or the server) logs each request's pictures; every
item's requests must carry exactly its pictures in the order its prompt numbers them (none for text-only items).
With `$LEVANTE_COMPAT_RESULTS` set, each case writes its outcome there (`compat_table` renders docs/compatibility.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from compat_checks import fixture_rows, item_records, picture_problems, placement_problems

from levante_tasks.lmms.patcher import installed_lmms_eval
from levante_tasks.testing import tiny_models
from levante_tasks.testing.fake_openai import serve
from levante_tasks.testing.fixture_data import write_fixture
from levante_tasks.testing.processor_spy import SPY_ENV, read_log

SPY_SITE = Path(__file__).parent / "compat_site"  # its sitecustomize.py installs the spy
TASKS = ["levante_vocab", "levante_trog", "levante_egma_math", "levante_theory_of_mind",
         "levante_matrix_reasoning", "levante_mental_rotation", "levante_same_different"]
MC_TASKS = [f"{task}_mc" for task in TASKS]
LIMIT = 3  # the fixture's first 3 egma-math items are text-only (Number Identification)

BUILDERS: dict[str, Callable[[Path], Path]] = {
    "qwen2_vl": lambda out: tiny_models.build_tiny_qwen_vl(out, "qwen2_vl"),
    "qwen2_5_vl": lambda out: tiny_models.build_tiny_qwen_vl(out, "qwen2_5_vl"),
    "idefics2": tiny_models.build_tiny_idefics2,
    "idefics3": tiny_models.build_tiny_vlm,
    "llava-1.5": lambda out: tiny_models.build_tiny_llava(out, "llava"),
    "llava-onevision": lambda out: tiny_models.build_tiny_llava(out, "llava_onevision"),
}


@dataclass(frozen=True)
class Case:
    """One model class on one checkpoint kind; `patches` are ours that it needs; `mc`: it runs the `_mc` tasks;
    `option`: a model_arg that changes how the class lays out pictures (shown in the table's layout column)."""

    model: str
    checkpoint: str | None
    model_args: str = "device_map=cpu"
    simple: bool = False
    mc: bool = False
    patches: tuple[str, ...] = field(default_factory=tuple)
    versions: tuple[str, ...] = ("0.7.2", "0.7.3")
    option: str = ""


# upstream's default min_pixels (256 x 28 x 28) blows each 32x24 picture up to 256 image tokens: keep CI cheap
QWEN_ARGS = "device_map=cpu,min_pixels=3136,max_pixels=12544"
QWEN_PICTURE = "<|vision_start|><|image_pad|><|vision_end|>"  # one picture in the Qwen processors' text
CASES = {
    "qwen2_vl": Case("qwen2_vl", "qwen2_vl", QWEN_ARGS, simple=True),
    "qwen2_5_vl": Case("qwen2_5_vl", "qwen2_5_vl", QWEN_ARGS),
    "qwen2_5_vl-simple": Case("qwen2_5_vl", "qwen2_5_vl", QWEN_ARGS, simple=True),
    # each picture at its `<image N>` marker (upstream's interleaving rule), not all of them first
    "qwen2_5_vl-simple-interleave": Case("qwen2_5_vl", "qwen2_5_vl", f"{QWEN_ARGS},interleave_visuals=True",
                                         simple=True, option="interleave_visuals=True"),
    "idefics2": Case("idefics2", "idefics2", model_args="", simple=True, patches=("0010",)),
    # no device_map: the class's default, as a user types it (`--device cpu` only; patch 0016)
    "llava_hf-llava-1.5": Case("llava_hf", "llava-1.5", model_args="", mc=True, patches=("0011", "0012", "0016")),
    "llava_hf-llava-1.5-simple": Case("llava_hf", "llava-1.5", simple=True, mc=True, patches=("0011",)),
    "llava_hf-llava-onevision": Case("llava_hf", "llava-onevision", mc=True, patches=("0011", "0012")),
    "huggingface-idefics3": Case("huggingface", "idefics3", patches=("0005", "0009")),
    "huggingface-qwen2_vl": Case("huggingface", "qwen2_vl", patches=("0005", "0009")),
    "openai": Case("openai", None, model_args="model_version=fake,api_key=fake"),
}
VERSION = installed_lmms_eval()["version"]


@pytest.fixture(scope="session")
def fixture_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compat-data")
    write_fixture(root)
    return root


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Each tiny checkpoint kind, built once per session on first use."""
    root, built = tmp_path_factory.mktemp("compat-models"), {}

    def get(kind: str) -> Path:
        if kind not in built:
            built[kind] = BUILDERS[kind](root / kind)
        return built[kind]

    return get


def run_lmms_eval(case: Case, model_args: str, data: Path, out: Path, spy: Path,
                  tasks: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real lmms-eval CLI, in its own process, with the processor spy installed (sitecustomize)."""
    tasks = tasks or TASKS + (MC_TASKS if case.mc else [])
    path = os.pathsep.join(filter(None, [str(SPY_SITE), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           SPY_ENV: str(spy), "PYTHONPATH": path}
    env.pop("LEVANTE_DATA_VERSION", None)
    command = [sys.executable, "-m", "lmms_eval", "--model", case.model, "--model_args", model_args,
               "--tasks", ",".join(tasks), "--limit", str(LIMIT), "--gen_kwargs", "max_new_tokens=2",
               "--batch_size", "1", "--device", "cpu", "--output_path", str(out), "--log_samples",
               "--verbosity", "WARNING", *(["--force_simple"] if case.simple else [])]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=out.parent, timeout=300, check=False)


def record_outcome(name: str, case: Case, status: str, detail: str) -> None:
    """Write this case's outcome for the compatibility table when `$LEVANTE_COMPAT_RESULTS` names a folder."""
    folder = os.environ.get("LEVANTE_COMPAT_RESULTS")
    if folder:
        line = {"case": name, "model": case.model, "checkpoint": case.checkpoint or "fake server",
                "simple": case.simple, "mc": case.mc, "lmms_eval": VERSION, "status": status, "detail": detail,
                "patches": list(case.patches), "option": case.option}
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{VERSION}-{name}.json").write_text(json.dumps(line, indent=1) + "\n", encoding="utf-8")


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if VERSION in c.versions])
def test_model_class_sends_each_item_its_pictures_in_prompt_order(
        name: str, fixture_data: Path, checkpoints: Callable[[str], Path], tmp_path: Path) -> None:
    case = CASES[name]
    out, spy = tmp_path / "out", tmp_path / "spy.jsonl"
    if case.checkpoint is None:
        with serve(spy) as url:
            run = run_lmms_eval(case, f"{case.model_args},base_url={url}", fixture_data, out, spy)
    else:
        args = ",".join(filter(None, [f"pretrained={checkpoints(case.checkpoint)}", case.model_args]))
        run = run_lmms_eval(case, args, fixture_data, out, spy)
    record_outcome(name, case, "failed", f"exit {run.returncode}")
    assert run.returncode == 0, run.stderr[-4000:]
    records = item_records(out)
    expected = TASKS + (MC_TASKS if case.mc else [])
    assert sorted(records) == sorted(expected), run.stderr[-3000:]
    assert all(len(recs) == LIMIT for recs in records.values()), {t: len(r) for t, r in records.items()}
    assert any(not row["stimulus_image"] for row in (fixture_rows(fixture_data)[r["item_uid"]]
                                                      for r in records["levante_egma_math"])), "no text-only item"
    problems = picture_problems(read_log(spy), records, fixture_rows(fixture_data))
    if case.option == "interleave_visuals=True":
        problems += placement_problems(read_log(spy), records, fixture_rows(fixture_data), QWEN_PICTURE)
    assert not problems, "\n".join(problems)
    assert_summarize_and_compare_read(out, records, tmp_path / "summary")
    record_outcome(name, case, "works", "")


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
        fixture_data: Path, checkpoints: Callable[[str], Path], tmp_path: Path) -> None:
    """Patches 0013 and 0017: a `_mc` variant with a class that has no loglikelihood stops before any request reaches
    the model (the spy sees no processor call, although a generation task comes first), one line (no traceback)
    ending stderr that names the class and what runs instead, exit 1."""
    case = Case("qwen2_vl", "qwen2_vl", simple=True)
    out, spy = tmp_path / "out", tmp_path / "spy.jsonl"
    run = run_lmms_eval(case, f"pretrained={checkpoints('qwen2_vl')},device_map=cpu", fixture_data, out, spy,
                        tasks=["levante_vocab", "levante_vocab_mc"])
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


def test_llava_onevision_class_needs_llava_next_which_pypi_lacks(checkpoints: Callable[[str], Path]) -> None:
    """`llava_onevision` imports LLaVA-NeXT's `llava` package: not on PyPI (`llava` there is a 0.0.1 placeholder,
    `llava-torch` is LLaVA 1.2 without OneVision), so the class cannot load; `llava_hf` runs OneVision checkpoints."""
    import importlib.util

    from lmms_eval.models.simple.llava_onevision import Llava_OneVision  # its `llava` imports fail quietly

    assert importlib.util.find_spec("llava") is None
    with pytest.raises(NameError, match="get_model_name_from_path"):  # what a user meets: a helper of `llava`
        Llava_OneVision(pretrained=str(checkpoints("llava-onevision")), device="cpu", device_map="cpu")
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
              "lmms_eval": "0.7.3", "status": "works", "detail": "", "patches": [],
              "option": "interleave_visuals=True"}]
    for case in cases:
        (results / f"{case['lmms_eval']}-{case['case']}.json").write_text(json.dumps(case), encoding="utf-8")
    doc = tmp_path / "doc.md"
    doc.write_text(f"intro\n{compat_table.BEGIN}\nold\n{compat_table.END}\nend\n", encoding="utf-8")
    assert compat_table.main([str(results), "--doc", str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    assert "old" not in text and text.startswith("intro\n") and text.endswith("end\n")
    assert ("| `idefics2` | idefics2 | simple (`--force_simple`) | 0.7.2 | works with patch 0010 | "
            "refused: no loglikelihood in `Idefics2`; instead: `levante_vlm_mc` or `levante_clip`, or this class on "
            "the generation variants |") in text
    assert "| `qwen2_vl` | qwen2_vl | simple (`--force_simple`) | 0.7.3 | failed: exit 1 | not in the suite |" in text
    assert ("| `qwen2_vl` | qwen2_vl | simple (`--force_simple`), `interleave_visuals=True` | 0.7.3 | works | "
            "not in the suite |") in text
    short = compat_table.short_table(compat_table.load_results(results))
    assert "| `idefics2` | yes | no | not run | not run |" in short
    assert "| `qwen2_vl` | not run | not run | yes | not run |" in short  # some checkpoint and layout works
